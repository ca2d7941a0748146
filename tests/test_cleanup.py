"""Ocean cleanup: currents, the plastic pool, conservation, rewards, signals, baselines."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import one_by_default
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import marl
from marl.baselines import greedy_policy, random_policy
from marl.core.spaces import sample_actions
from marl.core.testing import check_env
from marl.envs.cleanup import ocean
from marl.envs.cleanup.env import OWN_FEATURES
from marl.learning.evaluation import evaluate

FAST = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("env_id", one_by_default(marl.list_envs("cleanup"), "cleanup/comm"))
def test_scenarios_keep_the_contract(env_id):
    check_env(marl.make(env_id), num_episodes=1)


def test_continuous_vessels_keep_the_contract():
    check_env(
        marl.make("cleanup/comm", discrete_actions=False, hold_capacity=5, current="double_gyre")
    )


def test_spawn_fills_free_slots_in_order_and_drops_the_rest():
    alive = jnp.array([True, False, True, False, False])
    pos = jnp.zeros((5, 2))
    where = jnp.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    requests = jnp.array([True, False, True, True])
    alive2, pos2, n = ocean.spawn(alive, pos, requests, where)
    assert int(n) == 3
    np.testing.assert_array_equal(alive2, [True, True, True, True, True])
    np.testing.assert_array_equal(pos2[[1, 3, 4], 0], [1.0, 3.0, 4.0])
    alive3, _, n = ocean.spawn(alive2, pos2, requests, where)
    assert int(n) == 0 and alive3.all()  # no room: nothing spawned, nothing counted


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-2.0, 12.0), min_size=2, max_size=2))
def test_into_sea_keeps_the_sea_and_folds_the_rest_back(xy):
    size, p = 10.0, np.asarray(xy, np.float32)
    folded = np.asarray(ocean.into_sea(jnp.asarray(p), size))
    assert np.all((folded >= 0.0) & (folded <= size))
    inside = (p >= 0.0) & (p <= size)
    np.testing.assert_allclose(folded[inside], p[inside], atol=1e-5)  # the sea is unchanged
    mirror = np.where(p < 0.0, -p, 2 * size - p)  # reflected at the coast line it crossed
    np.testing.assert_allclose(folded[~inside], mirror[~inside], atol=1e-5)


def test_fresh_plastic_starts_at_sea():
    """A river mouth's pieces start in the water: in still water, next to none leave the sea on
    the step they are emitted (clipped onto the coast line, about a quarter did)."""
    env = marl.make("cleanup/custom", current="calm", initial_plastic=0, source_rate=1.0)
    actions = jnp.zeros(env.spec.num_agents, jnp.int32)

    def one_step(key):
        k0, k1 = jax.random.split(key)
        state, _ = env.reset(k0)
        state, ts = env.step(k1, state, actions)
        return ts.metrics["spawned"], ts.metrics["removed"]

    spawned, removed = jax.jit(jax.vmap(one_step))(jax.random.split(jax.random.key(0), 512))
    assert float(spawned.sum()) == 512 * env.num_sources
    assert float(removed.sum()) / float(spawned.sum()) < 0.03


def test_gini_of_hand_computed_catches():
    assert float(ocean.gini(jnp.array([1.0, 1.0, 1.0]))) == pytest.approx(0.0)
    assert float(ocean.gini(jnp.array([0.0, 0.0, 0.0]))) == 0.0
    # one vessel has everything: sum |xi - xj| = 2 * 2 * 3, / (2 * 3 * 3) = 2 / 3
    assert float(ocean.gini(jnp.array([3.0, 0.0, 0.0]))) == pytest.approx(2 / 3)


@pytest.mark.parametrize("kind", ["uniform", "gyres", "double_gyre"])
def test_currents_are_divergence_free_and_capped(kind):
    size, speed, h = 10.0, 0.05, 1e-3
    xy = jax.random.uniform(jax.random.key(0), (200, 2), minval=0.5, maxval=9.5)

    def field(p):
        return ocean.current_at(kind, p, jnp.float32(17.0), size, speed)

    ex, ey = jnp.array([h, 0.0]), jnp.array([0.0, h])
    div = (field(xy + ex)[:, 0] - field(xy - ex)[:, 0]) / (2 * h) + (
        field(xy + ey)[:, 1] - field(xy - ey)[:, 1]
    ) / (2 * h)
    assert float(jnp.max(jnp.abs(div))) < 1e-3
    grid = jnp.stack(jnp.meshgrid(jnp.linspace(0, size, 101), jnp.linspace(0, size, 101)), -1)
    top = float(jnp.max(jnp.linalg.norm(field(grid.reshape(-1, 2)), axis=-1)))
    assert speed * 0.6 <= top <= speed * 1.01


@FAST
@given(
    seed=st.integers(0, 2**30),
    current=st.sampled_from(["calm", "uniform", "gyres", "double_gyre"]),
    remove=st.booleans(),
    hold=st.sampled_from([0, 3]),
    capacity=st.sampled_from([64, 256]),
)
def test_plastic_mass_is_conserved_and_vessels_stay_at_sea(seed, current, remove, hold, capacity):
    env = marl.make(
        "cleanup/comm",
        current=current,
        remove_at_boundary=remove,
        hold_capacity=hold,
        capacity=capacity,
        initial_plastic=min(96, capacity),
        source_rate=0.8,
        episode_limit=150,
    )

    @jax.jit
    def run(key):
        state, ts = env.reset(key)

        def body(carry, k):
            s, ts = carry
            k_act, k_env = jax.random.split(k)
            a = sample_actions(k_act, env.spec.action_space, ts.avail_actions)
            s, ts = env.step(k_env, s, a)
            return (s, ts), (s.pos, ts.metrics)

        (_, _), out = jax.lax.scan(body, (state, ts), jax.random.split(key, 150))
        return out

    pos, metrics = run(jax.random.key(seed))
    m = {k: np.asarray(v) for k, v in metrics.items()}
    np.testing.assert_array_equal(m["spawned"], m["floating"] + m["collected"] + m["removed"])
    assert (m["floating"] <= capacity).all()
    if not remove:
        assert (m["removed"] == 0).all()
    assert ((np.asarray(pos) >= 0) & (np.asarray(pos) <= env.size)).all()
    assert ((m["collected_fraction"] >= 0) & (m["collected_fraction"] <= 1)).all()
    assert ((m["gini"] >= 0) & (m["gini"] <= 1)).all()


def test_reward_dial_shares_the_catch():
    def rewards(alpha):
        env = marl.make("cleanup/comm", alpha=alpha, collision_penalty=0.0, collect_radius=2.0)
        state, ts = jax.jit(env.reset)(jax.random.key(3))
        step = jax.jit(env.step)  # one program for the 20 steps
        total = np.zeros(env.n)
        for k in range(20):
            state, ts = step(jax.random.key(k), state, jnp.full(env.n, 4, jnp.int32))
            total += np.asarray(ts.reward)
        catch = np.asarray(state.catch, float)
        return total, catch

    own, catch = rewards(0.0)
    np.testing.assert_allclose(own, catch)
    shared, catch = rewards(1.0)
    np.testing.assert_allclose(shared, np.full(4, catch.sum() / 4), rtol=1e-6)
    assert catch.sum() > 0


def test_signals_reach_vessels_in_range_only_with_communication():
    def heard(comm: bool):
        env = marl.make("cleanup/comm" if comm else "cleanup/nocomm", comm_range=100.0)
        state, _ = jax.jit(env.reset)(jax.random.key(0))
        action = jnp.array([4 + 9, 4, 4, 4]) if comm else jnp.array([4, 4, 4, 4])
        _, ts = jax.jit(env.step)(jax.random.key(1), state, action)
        signals = np.asarray(ts.obs)[:, -2]  # the mean signal heard
        return signals

    with_comm = heard(True)
    assert with_comm[0] == 0.0 and np.allclose(with_comm[1:], 1 / 3)  # only vessel 0 signalled
    assert (heard(False) == 0.0).all()
    env = marl.make("cleanup/nocomm")
    assert env.spec.obs_dim == marl.make("cleanup/comm").spec.obs_dim  # same layout
    assert env.spec.obs_dim > OWN_FEATURES


@pytest.mark.slow
def test_greedy_collects_more_than_random():
    env = marl.make("cleanup/comm")

    def collected(policy):
        out = jax.jit(lambda k: evaluate(env, policy, None, k, 8))(jax.random.key(0))
        return float(np.mean(out["collected"]))

    assert collected(greedy_policy(env)) > 2 * collected(random_policy(env))


def test_bad_settings_fail_with_one_line():
    with pytest.raises(ValueError, match="unknown current 'storm'; valid: calm"):
        marl.make("cleanup/comm", current="storm")
    with pytest.raises(ValueError, match="alpha must be in"):
        marl.make("cleanup/comm", alpha=2.0)
    with pytest.raises(ValueError, match="window must be odd"):
        marl.make("cleanup/comm", window=4)


def test_nearest_claims_equal_one_hot_argmin_including_ties():
    from marl.envs.cleanup.ocean import nearest_claims, squared_distances

    for seed in range(5):
        k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
        pieces = jax.random.uniform(k1, (300, 2)) * 10
        vessels = jax.random.uniform(k2, (16, 2)) * 10
        vessels = vessels.at[3].set(vessels[7])  # two vessels on one spot: an exact tie
        d2 = squared_distances(pieces, vessels)
        reach = (d2 < 4.0) & jax.random.bernoulli(k3, 0.9, d2.shape)
        got = nearest_claims(jnp.where(reach, d2, jnp.inf), reach)
        d = jnp.linalg.norm(pieces[:, None] - vessels[None], axis=-1)
        nearest = jnp.argmin(jnp.where(reach, d, jnp.inf), axis=1)
        want = jax.nn.one_hot(nearest, 16, dtype=bool) & reach.any(axis=1)[:, None]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _still_sea(positions, pieces=(), current="calm", **kwargs):
    """A sea (calm unless `current` says otherwise) without sources or diffusion, vessels at
    `positions` at rest and the given plastic `pieces` afloat (8 slots), and the no-op action
    (straight, keep speed, no bit)."""
    n = len(positions)
    env = marl.make(
        "cleanup/custom",
        num_vessels=n,
        current=current,
        capacity=8,
        initial_plastic=0,
        num_sources=1,
        source_rate=0.0,
        diffusion=0.0,
        **kwargs,
    )
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    plastic = np.zeros((8, 2), np.float32)
    if pieces:
        plastic[: len(pieces)] = pieces
    state = state.replace(
        pos=jnp.asarray(positions, jnp.float32),
        speed=jnp.zeros(n),
        plastic=jnp.asarray(plastic),
        alive=jnp.arange(8) < len(pieces),
        spawned=jnp.asarray(len(pieces), jnp.int32),
    )
    return env, state, jnp.full(n, 4, jnp.int32)


def test_colliding_vessels_pay_the_penalty():
    """Vessels 0 and 1 are 0.1 apart (< 2 x radius 0.15), vessel 2 far off, no plastic: the
    colliding pair loses collision_penalty = 1 each, vessel 2 nothing."""
    env, state, noop = _still_sea([[3.0, 3.0], [3.1, 3.0], [8.0, 8.0]], collision_penalty=1.0)
    state, ts = jax.jit(env.step)(jax.random.key(1), state, noop)
    np.testing.assert_allclose(ts.reward, [-1.0, -1.0, 0.0])
    np.testing.assert_array_equal(state.collisions, [1, 1, 0])
    assert float(ts.metrics["collisions_per_vessel"]) == pytest.approx(2 / 3)


def test_a_full_hold_leaves_the_rest_afloat():
    """hold_capacity 1 and two pieces within reach of vessel 0 (away from the port): it takes
    one (hold 1, reward 1), the other stays afloat. Catches [1, 0]: catch_per_vessel 0.5,
    gini |1 - 0| * 2 / (2 * 2 * 1) = 0.5."""
    pieces = [[3.1, 3.0], [3.0, 3.2]]
    env, state, noop = _still_sea(
        [[3.0, 3.0], [8.0, 8.0]], pieces, hold_capacity=1, collision_penalty=0.0
    )
    state, ts = jax.jit(env.step)(jax.random.key(1), state, noop)
    np.testing.assert_array_equal(state.hold, [1, 0])
    np.testing.assert_array_equal(state.catch, [1, 0])
    assert float(ts.metrics["floating"]) == 1.0 and float(ts.metrics["collected"]) == 1.0
    np.testing.assert_allclose(ts.reward, [1.0, 0.0])
    assert float(ts.metrics["catch_per_vessel"]) == 0.5 and float(ts.metrics["gini"]) == 0.5


def test_uniform_current_carries_plastic_toward_its_direction():
    """Uniform current 0.05 per step toward pi / 2 (+y), no diffusion: a piece at (5, 5) is at
    (5, 5.05) after one step."""
    env, state, noop = _still_sea(
        [[1.0, 1.0]], [[5.0, 5.0]], current="uniform", current_direction=np.pi / 2
    )
    state, _ = jax.jit(env.step)(jax.random.key(1), state, noop)
    np.testing.assert_allclose(state.plastic[0], [5.0, 5.05], atol=1e-6)


@pytest.mark.parametrize("remove", [True, False])
def test_plastic_crossing_the_coast_is_removed_or_held(remove):
    """Current 0.05 toward -x (direction pi), piece at (0.02, 5): it crosses x = 0. Removed:
    removed 1, floating 0 (spawned 1). Held: it stays afloat at the coast, (0, 5), removed 0."""
    env, state, noop = _still_sea(
        [[8.0, 8.0]],
        [[0.02, 5.0]],
        current="uniform",
        current_direction=np.pi,
        remove_at_boundary=remove,
    )
    state, ts = jax.jit(env.step)(jax.random.key(1), state, noop)
    assert float(ts.metrics["spawned"]) == 1.0
    assert float(ts.metrics["removed"]) == float(remove)
    assert float(ts.metrics["floating"]) == float(not remove)
    if not remove:
        np.testing.assert_allclose(state.plastic[0], [0.0, 5.0], atol=1e-6)


def test_vessels_unload_their_hold_at_the_port():
    """Port (5, 0), radius 1, hold_capacity 3: vessel 0 at (5, 0.5) with 2 pieces aboard unloads
    them (hold 0, delivered 2); vessel 1 far off keeps its 1. Loaded with 1 again, the next
    step adds it: delivered 3. Unloading is not a catch: reward 0, catch 0."""
    env, state, noop = _still_sea([[5.0, 0.5], [8.0, 8.0]], hold_capacity=3)
    state = state.replace(hold=jnp.array([2, 1], jnp.int32))
    step = jax.jit(env.step)
    state, ts = step(jax.random.key(1), state, noop)
    np.testing.assert_array_equal(state.hold, [0, 1])
    assert float(ts.metrics["delivered"]) == 2.0
    np.testing.assert_allclose(ts.reward, [0.0, 0.0])
    state, ts = step(jax.random.key(2), state.replace(hold=jnp.array([1, 1], jnp.int32)), noop)
    assert float(ts.metrics["delivered"]) == 3.0
    np.testing.assert_array_equal(state.catch, [0, 0])


def test_a_vessel_hears_only_the_signals_of_others():
    """Vessels at (3, 3) and (5, 3), comm range 4; vessel 0 signals, vessel 1 does not. The
    neighbour slot (after 11 own + 25 window features): vessel 0 sees vessel 1 at dx 2 / 10
    = 0.2, distance 0.2, in range, silent (0); vessel 1 hears vessel 0 (1). Mean signal heard
    [0, 1], vessels in range / N [0.5, 0.5]."""
    env, state, _ = _still_sea([[3.0, 3.0], [5.0, 3.0]], collision_penalty=0.0)
    state = state.replace(heading=jnp.zeros(2))
    _, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.array([4 + 9, 4]))
    obs = np.asarray(ts.obs)
    slot = obs[:, 36:43]
    np.testing.assert_allclose(slot[0], [0.2, 0.0, 0.2, 1.0, 0.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(slot[1], [-0.2, 0.0, 0.2, 1.0, 0.0, 1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(obs[:, -2:], [[0.0, 0.5], [1.0, 0.5]])


def test_the_time_limit_terminates_cleanup_whose_inputs_carry_the_time():
    """Observations and state carry t / limit, so the limit ends the episode as a
    termination (the one time-limit rule): no learner bootstraps past the last step."""
    env = marl.make("cleanup/nocomm", episode_limit=3)
    assert env.spec.time_limit_terminal
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    step = jax.jit(env.step)
    for t in range(3):
        state, ts = step(jax.random.key(t), state, jnp.zeros((4,), jnp.int32))
    assert bool(ts.terminated) and not bool(ts.truncated)


def test_an_ocean_composed_of_parts_plays_as_its_keywords():
    """`Cleanup.from_parts` (generator, current, drift, fleet, reward, observer) builds the
    env the flat keywords build: the same spec and the same rollout under the same keys."""
    from marl.envs.cleanup import (
        Cleanup,
        CleanupReward,
        Current,
        Fleet,
        Observer,
        OceanGenerator,
    )

    sea = {"current": "double_gyre", "capacity": 64, "initial_plastic": 16, "hold_capacity": 4}
    flat = Cleanup(num_vessels=3, alpha=0.5, window=3, neighbours=2, **sea)
    composed = Cleanup.from_parts(
        OceanGenerator(capacity=64, initial_plastic=16),
        Current("double_gyre"),
        fleet=Fleet(hold_capacity=4),
        reward=CleanupReward(alpha=0.5),
        observer=Observer(window=3, neighbours=2),
        num_vessels=3,
    )
    assert composed.spec == flat.spec
    key = jax.random.key(2)
    # each env's reset and step as one program (op by op, they compiled every primitive)
    (reset1, step1), (reset2, step2) = (
        (jax.jit(e.reset), jax.jit(e.step)) for e in (flat, composed)
    )
    (s1, t1), (s2, t2) = reset1(key), reset2(key)
    for k in jax.random.split(key, 4):
        actions = jax.random.randint(k, (3,), 0, flat.spec.action_dim)
        (s1, t1), (s2, t2) = step1(k, s1, actions), step2(k, s2, actions)
        np.testing.assert_array_equal(t1.obs, t2.obs)
        np.testing.assert_array_equal(t1.reward, t2.reward)
    with pytest.raises(ValueError, match="alpha must be in"):
        CleanupReward(alpha=2.0)
