"""CommonReward: every agent paid the team's mean reward (EPyMARL's `common_reward`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.core.testing import check_env
from marl.core.wrappers import CommonReward


def _spread():  # each agent's own collisions count (local_ratio 0.5): rewards differ
    return marl.make("particle/spread", local_ratio=0.5)


def test_every_agent_is_paid_the_mean_of_the_inner_rewards():
    env = _spread()
    wrapped = CommonReward(env)
    assert not env.spec.shared_reward and wrapped.spec.shared_reward
    key = jax.random.key(0)
    state, _ = env.reset(key)
    # agents 0 and 1 start on top of each other: their collisions differ from agent 2's
    state = state.replace(pos=state.pos.at[1].set(state.pos[0]))
    actions = jnp.asarray([0, 0, 0])
    _, ts = jax.jit(env.step)(jax.random.key(1), state, actions)
    _, wts = jax.jit(wrapped.step)(jax.random.key(1), state, actions)
    assert float(jnp.std(ts.reward)) > 0  # the inner agents are paid differently here
    np.testing.assert_allclose(wts.reward, np.full(3, float(jnp.mean(ts.reward))), rtol=1e-6)
    np.testing.assert_array_equal(wts.obs, ts.obs)
    _, ets = wrapped.step_env(jax.random.key(1), state, actions)
    np.testing.assert_allclose(ets.reward, wts.reward)


def test_wrapped_env_keeps_the_contract():
    check_env(CommonReward(_spread()))


def test_two_teams_are_refused():
    with pytest.raises(ValueError, match="not one cooperative team"):
        CommonReward(marl.make("particle/adversary"))
