"""Scripted combat policy: focus fire, from each agent's own observation (decentralised).

Every ally attacks the attackable enemy with the lowest health fraction (ties: the lowest
index, so allies that see the same enemies pick the same one), else moves toward the closest
visible enemy, else advances toward the map's centre, where the enemies start or meet.
It is the reference (upper) anchor of combat tasks' normalised scores.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array


def focus_fire_policy(env: MultiAgentEnv) -> Policy:
    """Focus fire on a `marl.envs.combat.Combat` env (heuristic-enemy mode)."""
    from marl.envs.combat.env import Combat
    from marl.envs.combat.observation import foe_features
    from marl.envs.combat.units import FIRST_ATTACK, MOVE_VECTORS, STOP

    if not isinstance(env, Combat):
        raise TypeError(f"focus fire needs a combat environment, got {type(env).__name__}")
    mates, m = env.slots("allies")  # every unit, or the nearest few (a local view)
    moves = jnp.asarray(MOVE_VECTORS[:STOP], jnp.float32)  # [4, 2]

    def one(obs: Array, avail: Array) -> Array:
        enemies = foe_features(obs, mates, m)
        visible, offset, distance = enemies[:, 0] > 0, enemies[:, 1:3], enemies[:, 3]
        health = enemies[:, 4]
        can_attack = avail[FIRST_ATTACK : FIRST_ATTACK + m]
        target = jnp.argmin(jnp.where(can_attack, health, jnp.inf))
        closest = jnp.argmin(jnp.where(visible, distance, jnp.inf))
        centre = jnp.array([0.5, 0.5]) - obs[2:4]  # own x / W, y / H
        bearing = jnp.where(visible.any(), offset[closest], centre)
        move = jnp.argmax(moves @ bearing)
        action = jnp.where(can_attack.any(), FIRST_ATTACK + target, move)
        alive = avail[:STOP].any()  # dead agents may only stop
        return jnp.where(alive, action, STOP).astype(jnp.int32)

    def initial_carry() -> Array:
        return jnp.zeros((), jnp.int32)

    def act(
        params: Any, obs: Array, avail: Array, carry: Array, start_: Array, key: Array, greedy: Any
    ) -> tuple[Array, Array]:
        del params, start_, key, greedy
        return jax.vmap(one)(obs, avail), carry

    return Policy(initial_carry, act)
