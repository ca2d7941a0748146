"""The features a battle's units observe: the layout's sizes (`obs_size`, `foe_features`), each
unit's own features and last action, what it sees of the others, and the outcome metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .state import CombatState
from .units import FIRST_ATTACK, MOVE_VECTORS, NUM_UNIT_TYPES, STATS, STOP, pairwise_offsets

ACTION_FEATURES = 4  # last action: move x, move y, attacking, (target + 1) / foes
OWN_FEATURES = 4 + NUM_UNIT_TYPES + ACTION_FEATURES
ALLY_FEATURES = 5 + NUM_UNIT_TYPES + ACTION_FEATURES
ENEMY_FEATURES = 6 + NUM_UNIT_TYPES
UNIT_STATE_FEATURES = 4 + NUM_UNIT_TYPES
SEEN_ALLY_FEATURES = 1  # see_enemy_actions: a teammate's cooldown fraction
SEEN_ENEMY_FEATURES = ACTION_FEATURES + 1  # see_enemy_actions: a foe's last action, cooldown
METRICS = ("won", "lost", "allies_alive", "enemies_killed", "damage_dealt")
SIDES = ("allies", "enemies")


def obs_size(num_own: int, num_foes: int) -> int:
    """Observation width of a unit with `num_own - 1` teammates and `num_foes` foes."""
    return OWN_FEATURES + ALLY_FEATURES * (num_own - 1) + ENEMY_FEATURES * num_foes


def foe_features(obs: jax.Array, mates: int, foes: int) -> jax.Array:
    """The foe blocks `[..., foes, ENEMY_FEATURES]` of observations `[..., obs_size]` of units
    with `mates` teammate and `foes` foe slots (`CombatObserver.slots`): per foe visible,
    dx / sight, dy / sight, distance / sight, health fraction, attackable, type one-hot."""
    start = OWN_FEATURES + ALLY_FEATURES * mates
    block = obs[..., start : start + ENEMY_FEATURES * foes]
    return block.reshape(*obs.shape[:-1], foes, ENEMY_FEATURES)


def outcome_metrics(alive: jax.Array, num_allies: int) -> dict[str, jax.Array]:
    """A battle's outcome from the allies' side, [] float32 each, from `alive` ([U] bool, allies
    first): won (all enemies dead and an ally alive; mutual destruction is no win), lost,
    allies_alive and enemies_killed (fractions)."""
    allies, enemies = jnp.any(alive[:num_allies]), jnp.any(alive[num_allies:])
    values = {
        "won": ~enemies & allies,
        "lost": ~allies & enemies,
        "allies_alive": jnp.mean(alive[:num_allies]),
        "enemies_killed": jnp.mean(~alive[num_allies:]),
    }
    return {k: v.astype(jnp.float32) for k, v in values.items()}


def in_sight(state: CombatState, units: slice) -> jax.Array:
    """`[K, K]` float32 over the `units`: 1 where both live and the column's unit is within
    the row's sight range."""
    pos, alive = state.pos[units], state.health[units] > 0
    sight = jnp.asarray(STATS.sight_range)[state.unit_type[units]][:, None]
    _, _, d = pairwise_offsets(pos, pos)  # not norm(axis=-1): ~25x slower on CPU at 128 units
    return ((d < sight) & alive[:, None] & alive[None, :]).astype(jnp.float32)


def others(k: int) -> np.ndarray:
    """[k, k - 1] the teammates of each of k units, in index order."""
    return np.array([[j for j in range(k) if j != i] for i in range(k)], int).reshape(k, k - 1)


def visibility(
    pos: jax.Array, alive: jax.Array, unit_type: jax.Array, k: int
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """What the first k units see of all U: dx, dy, distance, sight [K, 1], visible [K, U]."""
    dx, dy, distance = pairwise_offsets(pos[:k], pos)
    sight = jnp.asarray(STATS.sight_range)[unit_type[:k]][:, None]
    visible = alive[:k, None] & alive[None, :] & (distance < sight)
    return dx, dy, distance, sight, visible


def action_features(last_action: jax.Array, num_foes: int, mirror: bool = False) -> jax.Array:
    """[K, 4] compact last actions: move direction, attacking flag, (target + 1) / foes."""
    attacking = last_action >= FIRST_ATTACK
    target = jnp.where(attacking, (last_action - STOP) / num_foes, 0.0)
    move = jnp.asarray(MOVE_VECTORS)[jnp.minimum(last_action, STOP)]
    if mirror:
        move = move * jnp.array([-1.0, 1.0])
    return jnp.concatenate([move, attacking[:, None], target[:, None]], axis=1)


def unit_features(
    pos: jax.Array, health: jax.Array, cooldown: jax.Array, unit_type: jax.Array, size: float
) -> jax.Array:
    """[U, 4 + T] health, cooldown, position / `size`, type of every unit (zeros when dead)."""
    max_health = jnp.asarray(STATS.health)[unit_type]
    cool = jnp.clip(cooldown / jnp.asarray(STATS.cooldown)[unit_type], 0.0, 1.0)
    unit = jnp.concatenate(
        [
            jnp.stack([health / max_health, cool], axis=1),
            pos / size,
            jax.nn.one_hot(unit_type, NUM_UNIT_TYPES, dtype=jnp.float32),
        ],
        axis=1,
    )
    return unit * (health > 0)[:, None]


def pad_to(x: jax.Array, width: int) -> jax.Array:
    """`x` [K, D] padded with zero columns to [K, width]."""
    return jnp.pad(x, ((0, 0), (0, width - x.shape[1])))
