"""The evaluator: what an episode's return, length and metrics are, on a hand-made env."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.learner import Policy
from marl.core.spaces import Discrete
from marl.learning.evaluation import evaluate


class TickState(struct.PyTreeNode):
    t: jax.Array


class Tick(MultiAgentEnv[TickState]):
    """Two agents in two groups, rewards 1 and 2 on every step, limit 10; terminates on step
    `end` and keeps paying (and counting) if stepped after it. Metric "step": the step number."""

    def __init__(self, end: int):
        self.end = end
        self.spec = EnvSpec(
            name="test/tick",
            num_agents=2,
            obs_dim=1,
            state_dim=1,
            action_space=Discrete(2),
            groups=(AgentGroup("a", (0,)), AgentGroup("b", (1,))),
            agent_names=("a", "b"),
            episode_limit=10,
            metric_names=("step",),
        )

    def _timestep(self, t, reward, terminated):
        return TimeStep(
            obs=jnp.zeros((2, 1)),
            state=jnp.zeros(1),
            avail_actions=jnp.ones((2, 2), bool),
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=jnp.ones(2, bool),
            metrics={"step": t.astype(jnp.float32)},
        )

    def reset(self, key):
        t = jnp.zeros((), jnp.int32)
        return TickState(t=t), self._timestep(t, jnp.zeros(2), jnp.zeros((), bool))

    def step_env(self, key, state, actions):
        t = state.t + 1  # the base `step` advances state.t itself
        return state, self._timestep(t, jnp.array([1.0, 2.0]), t >= self.end)


IDLE = Policy(
    initial_carry=lambda: jnp.zeros(()),
    act=lambda params, obs, avail, carry, start, key, greedy: (jnp.zeros(2, jnp.int32), carry),
)


@pytest.mark.parametrize(("end", "length"), [(3, 3), (99, 10)])
def test_episode_values_stop_at_the_episodes_end(end, length):
    """Terminated on step 3: return 3 * (1 + 2) = 9 (3 and 6 per group), length 3 and the
    metric of step 3, though the env would go on paying for 7 more steps; never terminating:
    truncated at the limit, 10 steps, return 30."""
    out = jax.jit(lambda k: evaluate(Tick(end), IDLE, None, k, 2))(jax.random.key(0))
    assert set(out) == {"return", "return/a", "return/b", "length", "step"}
    np.testing.assert_array_equal(out["length"], [length, length])
    np.testing.assert_array_equal(out["return"], [3.0 * length] * 2)
    np.testing.assert_array_equal(out["return/a"], [1.0 * length] * 2)
    np.testing.assert_array_equal(out["return/b"], [2.0 * length] * 2)
    np.testing.assert_array_equal(out["step"], [length, length])
