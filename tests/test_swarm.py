"""Swarm family (`marl.envs.swarm`): the contract, the order parameters against their formulas
on hand-built states, the fields against brute force, and the reference rules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import marl
from marl.baselines import random_policy, scripted_policy
from marl.core.testing import check_env
from marl.envs.swarm import field
from marl.envs.swarm.env import SwarmState
from marl.learning.evaluation import evaluate

IDS = ["swarm/vicsek", "swarm/kuramoto", "swarm/aggregation"]


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("swarm/vicsek", {"num_agents": 12}),  # every swarm id by default, a few seconds each
        ("swarm/kuramoto", {"num_agents": 12}),
        ("swarm/aggregation", {"num_agents": 12}),
        pytest.param("swarm/kuramoto", {}, marks=pytest.mark.slow),
        pytest.param("swarm/aggregation", {}, marks=pytest.mark.slow),
        pytest.param("swarm/vicsek", {"discrete_actions": False}, marks=pytest.mark.slow),
        pytest.param(
            "swarm/aggregation",
            {"discrete_actions": False, "kernel": "box"},
            marks=pytest.mark.slow,
        ),
    ],
)
def test_check_env(env_id, kwargs):
    check_env(marl.make(env_id, **kwargs))


def _state(pos, angle, omega=None):
    pos, angle = jnp.asarray(pos, jnp.float32), jnp.asarray(angle, jnp.float32)
    omega = jnp.zeros_like(angle) if omega is None else jnp.asarray(omega, jnp.float32)
    return SwarmState(pos=pos, angle=angle, omega=omega, t=jnp.zeros((), jnp.int32))


def test_rewards_are_the_order_parameters_of_a_hand_built_state():
    pos = [[0.05, 0.05], [0.1, 0.9], [0.5, 0.5], [0.95, 0.3]]
    angle = [0.0, np.pi / 2, np.pi / 2, np.pi]
    state = _state(pos, angle)
    # polarisation |mean (cos, sin)| = |(1 + 0 + 0 - 1, 0 + 1 + 1 + 0) / 4| = |(0, 1/2)|
    vicsek = marl.make("swarm/vicsek", num_agents=4, action_cost=0.5)
    _, ts = jax.jit(vicsek.step_env)(jax.random.key(0), state, jnp.full(4, 2))  # control 0: no cost
    moved = vicsek.order(_state(pos, angle))
    assert float(moved) == pytest.approx(0.5, abs=1e-6)
    # the noise turns the agents a little: the reward is the order of the state reached
    assert float(ts.reward[0]) == pytest.approx(float(ts.metrics["polarisation"]), abs=1e-6)
    # synchrony r = |mean e^{i phase}|, minus the action cost 0.5 * mean |u|^2 (u = 1, 1/2)
    kuramoto = marl.make("swarm/kuramoto", num_agents=4, action_cost=0.5, noise=0.0)
    nxt, ts = jax.jit(kuramoto.step_env)(jax.random.key(0), state, jnp.array([4, 4, 3, 3]))
    r = abs(np.mean(np.exp(1j * np.asarray(nxt.angle, np.float64))))
    assert float(ts.reward[0]) == pytest.approx(r - 0.5 * (1 + 1 + 0.25 + 0.25) / 4, abs=1e-5)
    # cohesion: 8 x 8 cells, a 3 x 3 window; cells (0,0), (0,7), (4,4), (7,2): agents 0 and 1
    # see each other across the torus's edge, nobody else is within one cell
    agg = marl.make("swarm/aggregation", num_agents=4)
    xy = np.floor(np.asarray(pos) * 8).astype(int)
    seen = [
        sum(
            all(min(abs(a - b), 8 - abs(a - b)) <= 1 for a, b in zip(xy[i], xy[j], strict=True))
            for j in range(4)
            if j != i
        )
        for i in range(4)
    ]
    assert float(agg.order(state)) == pytest.approx(np.mean(seen) / 3, abs=1e-6)
    assert seen == [1, 1, 0, 0]


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([2, 37]), st.sampled_from([3, 8]))
def test_windows_equal_brute_force_counts_and_sums(seed, n, cells):
    rng = np.random.default_rng(seed)
    pos = jnp.asarray(rng.uniform(size=(n, 2)), jnp.float32)
    values = jnp.asarray(rng.normal(size=(n, 2)), jnp.float32)
    xy = field.cell_xy(pos, 1.0, cells)
    got = np.asarray(field.window(field.cell_sums(xy, values, cells), xy, 1, periodic=True))
    seen = np.asarray(field.in_window(xy, 1, cells, periodic=True))
    want = seen.astype(np.float32) @ np.asarray(values)  # each agent's window sum
    if cells >= 3:  # smaller grids visit a cell twice in a 3 x 3 window
        np.testing.assert_allclose(got.sum(axis=1), want, atol=1e-4)
    # the Gaussian embedding spreads each agent's weight 1 over the grid
    emb = field.embedding(pos, jnp.ones((n, 1)), 1.0, cells, "gaussian", True)
    assert float(emb.sum()) == pytest.approx(cells * cells, rel=1e-4)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(-np.pi, np.pi))
def test_turning_the_whole_swarm_leaves_what_agents_see_unchanged(seed, turn):
    env = marl.make("swarm/vicsek", num_agents=30)
    rng = np.random.default_rng(seed)
    pos, angle = rng.uniform(size=(30, 2)), rng.uniform(-np.pi, np.pi, size=30)
    a = env.observe(_state(pos, angle))
    b = env.observe(_state(pos, angle + turn))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4)


def test_observations_are_mean_field_features_at_any_n():
    """Scaled by the count of a uniform spread, a window's density is about its cell count
    whatever N, so a policy trained at one N sees the same kind of input at another."""
    for n in (100, 3_000):
        env = marl.make("swarm/aggregation", num_agents=n)
        state, ts = jax.jit(env.reset)(jax.random.key(0))
        density = np.asarray(ts.obs).sum(axis=1)  # 9 cells of density ~1 each
        assert abs(density.mean() - 9.0) < (1.5 if n == 100 else 0.5), n
        assert ts.state.shape == (64,)


def test_a_swarm_composed_of_parts_plays_as_its_keywords():
    """`Swarm.from_parts` (generator, dynamics, reward, observer) builds the env a task's flat
    keywords build: the same spec, the same rollout under the same keys, and the reference
    rule reads its parts alike."""
    from marl.envs.swarm import KuramotoDynamics, Oscillators, Swarm, SwarmObserver, Synchrony

    flat = marl.make("swarm/kuramoto", num_agents=10, coupling=0.8, diffusion=0.01, action_cost=0.1)
    composed = Swarm.from_parts(
        Oscillators(num_agents=10),
        KuramotoDynamics(coupling=0.8, diffusion=0.01),
        Synchrony(action_cost=0.1),
        SwarmObserver(angles=True, frequency_scale=1.0),
        name="swarm/kuramoto",
    )
    assert composed.spec == flat.spec
    key = jax.random.key(2)
    (reset1, step1), (reset2, step2) = (
        (jax.jit(e.reset), jax.jit(e.step)) for e in (flat, composed)
    )
    (s1, t1), (s2, t2) = reset1(key), reset2(key)
    for k in jax.random.split(key, 3):
        actions = jax.random.randint(k, (10,), 0, flat.spec.action_dim)
        (s1, t1), (s2, t2) = step1(k, s1, actions), step2(k, s2, actions)
        np.testing.assert_array_equal(t1.obs, t2.obs)
        np.testing.assert_array_equal(t1.reward, t2.reward)

    def rule(env, ts):
        policy = scripted_policy(env)
        carry = policy.initial_carry()
        return policy.act(None, ts.obs, ts.avail_actions, carry, True, key, True)[0]

    np.testing.assert_array_equal(rule(flat, t1), rule(composed, t2))
    with pytest.raises(ValueError, match="action_cost must be >= 0"):
        Synchrony(action_cost=-1.0)


@pytest.mark.slow
def test_the_reference_rules_order_the_swarm_where_random_actions_do_not():
    for env_id, floor in [("swarm/vicsek", 0.9), ("swarm/kuramoto", 0.6)]:
        env = marl.make(env_id, num_agents=40, episode_limit=60)
        metric = env.spec.headline_metric

        def final(policy, env=env, metric=metric):
            return jnp.mean(evaluate(env, policy, None, jax.random.key(1), 4)[metric])

        rule = float(jax.jit(lambda env=env: final(scripted_policy(env)))())
        rand = float(jax.jit(lambda env=env: final(random_policy(env)))())
        assert rule > floor > rand + 0.3, (env_id, rule, rand)


@pytest.mark.integration
def test_marl_render_draws_a_swarm(tmp_path):
    import contextlib
    import io

    from marl import cli

    out = tmp_path / "vicsek.gif"
    with contextlib.redirect_stdout(io.StringIO()):
        args = ["--out", str(out), "--steps", "3", "--set", "num_agents=20"]
        code = cli.main(["render", "swarm/vicsek", *args])
    assert code == 0 and out.stat().st_size > 0
    for env_id in ("swarm/kuramoto", "swarm/aggregation"):  # each task's drawing
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from marl.envs.swarm.viewer import draw_frame

        env = marl.make(env_id, num_agents=10)
        state, _ = jax.jit(env.reset)(jax.random.key(0))
        fig = Figure()
        FigureCanvasAgg(fig)
        draw_frame(fig.add_subplot(), env.render_frame(state), env_id)
        fig.canvas.draw()
