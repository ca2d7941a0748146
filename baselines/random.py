"""The uniformly random policy: the lower anchor of every task's normalised score."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.core.spaces import sample_actions

Array = jax.Array


def random_policy(env: MultiAgentEnv) -> Policy:
    """Uniformly random valid actions; `params` and `greedy` are ignored (pass None).

    Discrete: uniform over each agent's available actions. Continuous: uniform in the Box, with
    each agent's padding dimensions (False in `avail_actions`) set to the lower bound.
    """
    spec = env.spec
    space = spec.action_space

    def initial_carry() -> Array:
        return jnp.zeros((), jnp.int32)

    def act(
        params: Any, obs: Array, avail: Array, carry: Array, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Array]:
        del params, obs, start, greedy
        actions = sample_actions(key, space, avail)
        if not spec.discrete:
            low = jnp.broadcast_to(jnp.asarray(space.low, actions.dtype), actions.shape)
            actions = jnp.where(avail.astype(bool), actions, low)
        return actions, carry

    return Policy(initial_carry, act)
