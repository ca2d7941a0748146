"""Reference policies of the swarm tasks, the classic decentralised rules, each acting on the
agent's own observation (the window of cells around it):

- Vicsek: turn toward the window's mean heading (Vicsek et al. 1995's update, as far as one
  step's `max_turn` allows);
- Kuramoto: cancel the own natural frequency and close half the gap to the window's mean phase
  each step (a local phase-locking controller);
- aggregation: move toward the window's centre of mass (stay when it is within a third of a
  cell).

They are the reference (upper) anchors of the swarm tasks.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array


def reference_policy(env: MultiAgentEnv) -> Policy:
    """The classic rule of a `marl.envs.swarm` task (see the module docstring)."""
    from marl.envs.swarm import AggregationDynamics, KuramotoDynamics, Swarm, VicsekDynamics
    from marl.envs.swarm.dynamics import LEVELS, MOVES
    from marl.envs.swarm.field import offsets

    if not isinstance(env, Swarm):
        raise TypeError(f"the swarm rules need a swarm environment, got {type(env).__name__}")
    dynamics, observer = env.dynamics, env.observer
    n, own, f = env.n, observer.own_features, observer.cell_features
    offs = jnp.asarray(offsets(observer.window), jnp.float32)  # [W, 2] in cells

    def window(obs: Array) -> Array:
        return obs[:, own:].reshape(n, -1, f)

    def to_level(u: Array) -> Array:
        return jnp.argmin(jnp.abs(u[:, None] - jnp.asarray(LEVELS)[None]), axis=1)

    def act(params: Any, obs: Array, avail: Array, carry: Array, start, key, greedy):
        del params, avail, start, key, greedy
        cells = window(obs)
        if isinstance(dynamics, AggregationDynamics):
            dens = cells[..., 0]
            centre = (dens @ offs) / jnp.maximum(jnp.sum(dens, axis=1, keepdims=True), 1e-6)
            length = jnp.linalg.norm(centre, axis=-1, keepdims=True)
            if not env.discrete:
                return jnp.where(length > 1 / 3, centre / jnp.maximum(length, 1e-6), 0.0), carry
            score = centre @ jnp.asarray(MOVES).T  # [N, 5]: stay scores 0
            move = jnp.argmax(score, axis=1)
            return jnp.where(length[:, 0] > 1 / 3, move, 0).astype(jnp.int32), carry
        angle = jnp.arctan2(jnp.sum(cells[..., 2], axis=1), jnp.sum(cells[..., 1], axis=1))
        if isinstance(dynamics, VicsekDynamics):
            u = jnp.clip(angle / jnp.maximum(dynamics.max_turn, 1e-6), -1.0, 1.0)
        elif isinstance(dynamics, KuramotoDynamics):
            omega = obs[:, 0] * (observer.frequency_scale or 0.0)  # none seen: taken as 0
            rate = 0.5 * angle / dynamics.dt - omega
            u = jnp.clip(rate / jnp.maximum(dynamics.max_control, 1e-6), -1.0, 1.0)
        else:  # pragma: no cover - every swarm task is handled above
            raise TypeError(f"no rule for {type(dynamics).__name__}")
        if env.discrete:
            return to_level(u).astype(jnp.int32), carry
        return u[:, None], carry

    return Policy(lambda: jnp.zeros((), jnp.int32), act)


__all__ = ["reference_policy"]
