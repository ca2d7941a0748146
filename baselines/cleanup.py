"""Greedy cleanup baseline: every vessel steers full ahead for the nearest floating piece
among those it is the closest vessel to (its Voronoi share; the nearest overall when its share
is empty), so vessels spread over the sea instead of all chasing one piece, and steers away
from vessels closer than six vessel radii.

Privileged (`Policy.privileged`: it reads the plastic positions from the environment state);
it never signals. The reference (upper) anchor of cleanup tasks.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array


def greedy_policy(env: MultiAgentEnv) -> Policy:
    """Go to the nearest plastic on a `marl.envs.cleanup.Cleanup` env (bare state)."""
    from marl.envs.cleanup.env import Cleanup

    if not isinstance(env, Cleanup):
        raise TypeError(f"the greedy policy needs a cleanup environment, got {type(env).__name__}")

    keep_clear = 6.0 * env.vessel_radius

    def initial_carry() -> Array:
        return jnp.zeros((), jnp.int32)

    def act(params: Any, state: Any, avail: Array, carry: Array, start, key, greedy):
        del params, avail, start, key, greedy
        d = jnp.linalg.norm(state.plastic[None, :, :] - state.pos[:, None, :], axis=-1)  # [N, P]
        d = jnp.where(state.alive[None, :], d, jnp.inf)
        mine = jnp.argmin(d, axis=0)[None, :] == jnp.arange(d.shape[0])[:, None]
        own = jnp.where(mine, d, jnp.inf)
        has_own = jnp.any(jnp.isfinite(own), axis=1)
        nearest = jnp.where(has_own, jnp.argmin(own, axis=1), jnp.argmin(d, axis=1))
        offset = state.plastic[nearest] - state.pos
        heading_to = offset / jnp.maximum(jnp.linalg.norm(offset, axis=-1, keepdims=True), 1e-6)
        # keep clear of other vessels: repelled within `keep_clear`, harder when closer
        rel = state.pos[:, None, :] - state.pos[None, :, :]
        dist = jnp.linalg.norm(rel, axis=-1) + jnp.eye(rel.shape[0]) * 1e9
        push = jnp.clip(1.0 - dist / keep_clear, 0.0, 1.0)[..., None] * rel / dist[..., None]
        steer = heading_to + 2.0 * jnp.sum(push, axis=1)
        bearing = jnp.arctan2(steer[:, 1], steer[:, 0])
        error = jnp.remainder(bearing - state.heading + jnp.pi, 2 * jnp.pi) - jnp.pi
        turn = jnp.clip(error / env.max_turn, -1.0, 1.0)
        turn = jnp.where(jnp.any(state.alive), turn, 0.0)
        if env.discrete:
            # turn index 0/1/2 = left(-1)/straight/right(+1) by the error's sign; throttle up (2)
            turn_idx = jnp.where(turn > 0.5, 2, jnp.where(turn < -0.5, 0, 1))
            return (turn_idx * 3 + 2).astype(jnp.int32), carry
        actions = jnp.stack([turn, jnp.ones_like(turn)], axis=-1)
        if env.communication:
            actions = jnp.concatenate([actions, -jnp.ones_like(turn)[:, None]], axis=-1)
        return actions, carry

    return Policy(initial_carry, act, privileged=True)
