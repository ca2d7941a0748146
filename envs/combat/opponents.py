"""Policies for either side of a `Combat` battle, and the mirrored map an enemy policy is
trained on.

`heuristic_policy` is the scripted heuristic (`heuristic.py`) as a `marl.core.learner.Policy` that
acts from observations alone (a side's view: own features, teammates, foes), so it drives the
allies, the enemies of `Combat(opponent="policy")`, or either group in self-play. `mirror_env`
builds the M-vs-N map whose allies see what the enemies of an N-vs-M map see: train a
learner as the allies there, then pass its policy and parameters as `enemy_policy` and
`enemy_params`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.learner import Policy

from .env import Combat
from .heuristic import ATTACK_MODES, HeuristicMemory, heuristic_actions, initial_memory
from .observation import foe_features
from .units import FIRST_ATTACK, NUM_UNIT_TYPES, STATS, STOP, UNIT_NAMES

Array = jax.Array

__all__ = ["heuristic_policy", "mirror_env", "self_play_policy", "stop_policy"]


def heuristic_policy(
    num_units: int,
    num_foes: int,
    attack_mode: str = "closest",
    shoot: bool = True,
    map_size: float = 32.0,
    slots: tuple[int, int] | None = None,
) -> Policy:
    """The scripted heuristic acting from a side's observations [K, >= obs_size(K, F)].

    `slots`: the (teammates, foes) a unit observes in a local view (`Combat.slots`); default
    all of them, (K - 1, F).

    Each unit rebuilds what the heuristic needs from its own observation: its position (x / W,
    y / H) and type, and each visible foe's offset (times its sight range), health and type.
    The carry is the units' HeuristicMemory ([K] targets, [K, 2] waypoints), reset from the
    units' positions when `start` is True. `params` and `greedy` are ignored.
    """
    if attack_mode not in ATTACK_MODES:
        raise ValueError(f"unknown attack_mode {attack_mode!r}; valid: {', '.join(ATTACK_MODES)}")
    k = num_units
    mates, f = (k - 1, num_foes) if slots is None else slots
    sight_range = jnp.asarray(STATS.sight_range)
    max_health = jnp.asarray(STATS.health)

    def one(key: Array, memory: HeuristicMemory, obs: Array) -> tuple[Array, HeuristicMemory]:
        own_type = jnp.argmax(obs[4 : 4 + NUM_UNIT_TYPES])
        own_pos = obs[2:4] * map_size
        foes = foe_features(obs, mates, f)
        foe_type = jnp.argmax(foes[:, 6 : 6 + NUM_UNIT_TYPES], axis=1)
        foe_pos = own_pos + foes[:, 1:3] * sight_range[own_type]
        actions, memory = heuristic_actions(
            key,
            jax.tree.map(lambda x: x[None], memory),
            own_pos[None],
            own_type[None],
            (obs[0] > 0)[None],  # health fraction: a dead unit observes zeros
            foe_pos,
            foes[:, 4] * max_health[foe_type],
            foes[:, 0] > 0,  # visible (alive and in sight)
            attack_mode,
            shoot,
        )
        return actions[0], jax.tree.map(lambda x: x[0], memory)

    def initial_carry() -> HeuristicMemory:
        return initial_memory(jnp.zeros((k, 2), jnp.float32), map_size)

    def act(
        params: Any,
        obs: Array,
        avail: Array,
        carry: HeuristicMemory,
        start: Array,
        key: Array,
        greedy: Any = True,
    ) -> tuple[Array, HeuristicMemory]:
        del params, avail, greedy
        fresh = initial_memory(obs[:, 2:4] * map_size, map_size)
        carry = jax.tree.map(lambda a, b: jnp.where(start, a, b), fresh, carry)
        actions, carry = jax.vmap(one)(jax.random.split(key, k), carry, obs)
        return actions.astype(jnp.int32), carry

    return Policy(initial_carry, act)


def stop_policy(num_units: int) -> Policy:
    """Every unit stops (a harmless opponent)."""

    def act(
        params: Any,
        obs: jax.Array,
        avail: jax.Array,
        carry: Any,
        start: jax.Array,
        key: jax.Array,
        greedy: bool = True,
    ) -> tuple[jax.Array, Any]:
        return jnp.full((num_units,), STOP, jnp.int32), carry

    return Policy(lambda: jnp.zeros((), jnp.int32), act)


def self_play_policy(env: Combat, allies: Policy, enemies: Policy) -> Policy:
    """One Policy for all N + M agents of a self-play env: `allies` acts on rows [:N] and
    `enemies` on rows [N:], each on its side's unpadded obs and available actions. Params and
    carry are pairs (allies', enemies'). A mean-field side gets its block of the env's
    neighbourhood (the joint policy then takes `neighbours=` itself)."""
    n, m = env.num_allies, env.num_enemies
    sizes = tuple(
        (env.obs_width(side), FIRST_ATTACK + env.slots(side)[1]) for side in ("allies", "enemies")
    )
    rows = (slice(0, n), slice(n, n + m))

    def initial_carry() -> tuple[Any, Any]:
        return allies.initial_carry(), enemies.initial_carry()

    def act(
        params: Any,
        obs: jax.Array,
        avail: jax.Array,
        carry: Any,
        start: jax.Array,
        key: jax.Array,
        greedy: bool = True,
        neighbours: Any = None,  # [N + M, N + M], for a mean-field side
    ) -> tuple[jax.Array, Any]:
        out = []
        for side, policy in enumerate((allies, enemies)):
            (d, a), r = sizes[side], rows[side]
            extra = {"neighbours": neighbours[r, r]} if policy.neighbourhood else {}
            out.append(
                policy.act(
                    params[side],
                    obs[r, :d],
                    avail[r, :a],
                    carry[side],
                    start,
                    jax.random.fold_in(key, side),
                    greedy,
                    **extra,
                )
            )
        actions = jnp.concatenate([out[0][0], out[1][0]]).astype(jnp.int32)
        return actions, (out[0][1], out[1][1])

    return Policy(initial_carry, act, neighbourhood=allies.neighbourhood or enemies.neighbourhood)


def mirror_env(env: Combat, **overrides: Any) -> Combat:
    """The mirrored map of `env` (heuristic opponent): its M enemies as allies, its N allies as
    enemies, the same race, start positions, limit and map size. An ally there observes
    exactly what an enemy of `env` observes in self-play or policy mode (`Combat.view`)."""
    n = env.num_allies
    gen = env.generator
    allies: int | list[str]
    enemies: int | list[str]
    if gen.unit_types is None:
        allies, enemies = env.num_enemies, n
    else:
        allies = [UNIT_NAMES[t] for t in gen.unit_types[n:]]
        enemies = [UNIT_NAMES[t] for t in gen.unit_types[:n]]
    kwargs = {
        "allies": allies,
        "enemies": enemies,
        "race": gen.race,
        "start_positions": gen.start_positions,
        "attack_mode": env.attack_mode,
        "episode_limit": env.spec.episode_limit,
        "map_size": env.map_size,
        "nearest": env.nearest,
        "see_enemy_actions": env.see_enemy_actions,
        "time_in_state": env.time_in_state,
        "name": f"{env.spec.name}_mirrored",
        **overrides,
    }
    return Combat(**kwargs)
