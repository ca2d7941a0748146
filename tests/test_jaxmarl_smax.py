"""`jaxmarl/smax`: JaxMARL's SMAX under marl's contract (the reference package, test extra)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.core.testing import check_env

pytest.importorskip("jaxmarl.environments.smax")


@pytest.fixture(scope="module")
def env():
    return marl.make("jaxmarl/smax")


def test_check_env(env):
    assert env.spec.episode_limit == 60  # SMAC's 3m limit, not SMAX's 100
    assert check_env(env, num_episodes=1)["steps"] >= 1


def test_observations_rewards_and_masks_are_smax_own(env):
    """The same keys give the reference's observations, world state, rewards and masks."""
    reference = env._env
    key = jax.random.key(3)
    obs, inner = reference.reset(key)
    state, ts = env.reset(key)
    actions = jnp.array([0, 1, 4], jnp.int32)  # two moves and a stop
    for t in range(4):
        k = jax.random.key(100 + t)
        obs, inner, rewards, _, _ = reference.step_env(
            k, inner, {a: actions[i] for i, a in enumerate(env.spec.agent_names)}
        )
        state, ts = env.step(k, state, actions)
        for i, agent in enumerate(env.spec.agent_names):
            np.testing.assert_array_equal(ts.obs[i], obs[agent])
            assert float(ts.reward[i]) == float(rewards[agent])
            avail = reference.get_avail_actions(inner)[agent]
            np.testing.assert_array_equal(ts.avail_actions[i], avail.astype(bool))
        np.testing.assert_array_equal(ts.state, obs["world_state"])
        assert int(state.t) == t + 1


def test_time_limit_truncates_and_bootstraps():
    env = marl.make("jaxmarl/smax", episode_limit=2)
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    stop = jnp.full((3,), 4, jnp.int32)
    for t in range(2):
        state, ts = env.step(jax.random.key(t), state, stop)
    # far apart at the start, so nobody has died after two steps: the limit truncates
    assert bool(ts.truncated) and not bool(ts.terminated)
    assert float(ts.metrics["won"]) == 0.0


def test_win_is_read_from_the_units_alive(env):
    """All enemies dead and an ally alive: terminated and won (SMAX infers wins from reward)."""
    state, _ = jax.jit(env.reset)(jax.random.key(1))
    smax_state = state.inner.state
    n = env.spec.num_agents
    health = smax_state.unit_health.at[n:].set(0.0)
    inner = state.inner.replace(state=smax_state.replace(unit_health=health, unit_alive=health > 0))
    stop = jnp.full((n,), 4, jnp.int32)
    _, ts = jax.jit(env.step)(jax.random.key(2), state.replace(inner=inner), stop)
    assert bool(ts.terminated) and not bool(ts.truncated)
    assert float(ts.metrics["won"]) == 1.0 and float(ts.metrics["enemies_killed"]) == 1.0


def test_unknown_map_is_a_clear_error():
    with pytest.raises(ValueError, match="SMAX has no map 'nope'"):
        marl.make("jaxmarl/smax", map="nope")
