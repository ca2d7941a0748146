"""The state of a combat battle."""

from __future__ import annotations

from typing import Any

import jax
from flax import struct

from .heuristic import HeuristicMemory


class CombatState(struct.PyTreeNode):
    """State of a battle (U = N allies + M enemies, allies first).

    pos:          [U, 2] float32 positions in [0, map_size]^2.
    health:       [U] float32 remaining health (shields included); a unit is alive while > 0.
    cooldown:     [U] float32 seconds until the unit's weapon can fire again (0: ready).
    unit_type:    [U] int32 type ids (`units.UNIT_NAMES`).
    last_action:  [U] int32 each unit's last action in world frame (STOP after reset).
    enemy_memory: the scripted enemies' HeuristicMemory ([M] targets, [M, 2] waypoints).
    t:            [] int32 steps taken in this episode.
    enemy_carry:  the enemy policy's recurrent carry (opponent "policy"), else None.
    """

    pos: jax.Array
    health: jax.Array
    cooldown: jax.Array
    unit_type: jax.Array
    last_action: jax.Array
    enemy_memory: HeuristicMemory
    t: jax.Array
    enemy_carry: Any = None

    @property
    def alive(self) -> jax.Array:
        """[U] bool: units with health left."""
        return self.health > 0
