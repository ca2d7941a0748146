"""Mean-field pieces and MF-Q: neighbourhood mean actions, the Boltzmann target, learning."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms.meanfield import boltzmann_probs, mean_action, mean_field_value
from marl.algorithms.mfq import MFQConfig, make_train_il
from marl.learner import SEED_AXIS
from marl.training import RunSettings, run


def test_mean_action_averages_living_neighbours_by_hand():
    """combat/3m with ally 2 dead: the neighbourhood drops it; rows are normalised."""
    env = marl.make("combat/3m")
    state, _ = env.reset(jax.random.key(0))
    state = state.replace(
        pos=state.pos.at[:3].set(jnp.array([[10.0, 10.0], [11.0, 10.0], [12.0, 10.0]])),
        health=state.health.at[2].set(0.0),
    )
    weights = env.neighbourhood(state)
    np.testing.assert_array_equal(weights, [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    actions = jnp.array([1, 3, 4])
    mean = mean_action(weights, actions, env.spec.action_dim)
    expected = np.zeros((3, 8))
    expected[0, 3] = 1.0  # agent 0 sees only agent 1, who moved west (3)
    expected[1, 1] = 1.0  # agent 1 sees only agent 0 (east, 1)
    np.testing.assert_allclose(mean, expected)  # the dead agent: no neighbours, zeros

    w = jnp.array([[0.0, 1.0, 1.0, 2.0], [1.0, 0.0, 0.0, 0.0], [0, 0, 0, 0], [1, 1, 1, 0]])
    m = mean_action(w, jnp.array([0, 1, 1, 2]), 3)
    np.testing.assert_allclose(m[0], [0.0, 0.5, 0.5])  # (1 + 1) / 4 on action 1, 2 / 4 on 2
    np.testing.assert_allclose(m[3], [1 / 3, 2 / 3, 0.0])


def test_boltzmann_target_by_hand():
    q_policy = jnp.array([[1.0, 2.0, 0.0]])
    q_value = jnp.array([[3.0, 5.0, 100.0]])
    avail = jnp.array([[True, True, False]])  # the 100 is not available
    probs = boltzmann_probs(q_policy, avail, 0.5)
    p1 = np.exp(2.0 / 0.5) / (np.exp(1.0 / 0.5) + np.exp(2.0 / 0.5))
    np.testing.assert_allclose(probs[0], [1 - p1, p1, 0.0], rtol=1e-6)
    value = mean_field_value(q_policy, q_value, avail, 0.5, "boltzmann")
    np.testing.assert_allclose(value, [(1 - p1) * 3.0 + p1 * 5.0], rtol=1e-6)
    assert float(mean_field_value(q_policy, q_value, avail, 0.5, "max")[0]) == 5.0
    with pytest.raises(ValueError, match="boltzmann, max"):
        mean_field_value(q_policy, q_value, avail, 0.5, "soft")


def test_every_family_gives_spatial_neighbourhoods():
    for env_id, far in [
        ("particle/spread", 1.0),
        ("pathfinding/random_grid", 2.0),
        ("cleanup/comm", 4.0),
    ]:
        env = marl.make(env_id)
        state, _ = env.reset(jax.random.key(1))
        pos = state.pos[: env.spec.num_agents]
        w = np.asarray(env.neighbourhood(state))
        d = np.linalg.norm(np.asarray(pos)[:, None] - np.asarray(pos)[None], axis=-1)
        expected = (d < far) & ~np.eye(len(d), dtype=bool)
        np.testing.assert_array_equal(w > 0, expected, err_msg=env_id)


def test_mfq_learns_the_single_agent_task():
    """particle/simple: no neighbours (mean action zero), so MF-Q is plain Q-learning here."""
    env = marl.make("particle/simple")
    cfg = {"temperature_steps": 10_000, "lr": 1e-3, "hidden": (32, 32), "rollout_length": 2}
    settings = RunSettings(
        seeds=2, budget=40_000, eval_interval=20_000, eval_episodes=8, absolute_episodes=0
    )
    res = run(env, marl.algorithm("mfq")(env, cfg), settings, log=None)
    curve = res.curve().mean(axis=1)
    assert curve[-1] > curve[0] + 30 and curve[-1] > -40, curve


def test_mfq_updates_are_deterministic_and_without_mean_action():
    env = marl.make("particle/spread", num_agents=4)
    train = marl.algorithm("mfq")(env, {"num_envs": 2, "batch_size": 8})
    keys = jax.random.split(jax.random.key(0), 2)
    init = jax.jit(lambda k: jax.lax.map(train.init, k))
    step = jax.jit(jax.vmap(train.step, axis_name=SEED_AXIS))

    def updates(n: int = 6):
        state = init(keys)
        for _ in range(n):
            state, metrics = step(state)
        return state, metrics

    (a, m), (b, _) = updates(), updates()
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        assert np.array_equal(x, y)
    assert float(m["learning"].min()) == 1.0  # gradient steps were taken
    kernel = a.params["params"]["MLP_0"]["Dense_0"]["kernel"]  # inputs: obs and mean action
    assert kernel.shape[-2] == env.spec.obs_dim + env.spec.action_dim
    il = marl.algorithm("mfq")(env, {"mean_action": False})
    shapes = jax.eval_shape(il.init, jax.random.key(0)).params
    assert shapes["params"]["MLP_0"]["Dense_0"]["kernel"].shape[-2] == env.spec.obs_dim


def test_mfac_learns_the_single_agent_task():
    env = marl.make("particle/simple")
    cfg = {"actor_lr": 1e-3, "hidden": (32, 32), "rollout_length": 8}
    settings = RunSettings(
        seeds=2, budget=60_000, eval_interval=30_000, eval_episodes=8, absolute_episodes=0
    )
    res = run(env, marl.algorithm("mfac")(env, cfg), settings, log=None)
    curve = res.curve().mean(axis=1)
    # from about -42 at the start to about -16 (the landmark reached, not yet held)
    assert curve[-1] > curve[0] + 15 and curve[-1] > -25, curve


def test_il_never_has_the_mean_action():
    """IL is MF-Q without the mean action, whatever the config: a config object is taken
    without it, and a dict asking for it is refused."""
    env = marl.make("particle/spread")
    shapes = jax.eval_shape(make_train_il(env, MFQConfig()).init, jax.random.key(0)).params
    assert shapes["params"]["MLP_0"]["Dense_0"]["kernel"].shape[-2] == env.spec.obs_dim
    with pytest.raises(ValueError, match="mean_action must be false"):
        make_train_il(env, {"mean_action": True})
