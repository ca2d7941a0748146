"""The reward part of `Pathfinding`: CAMAR's goal and collision terms plus progress shaping."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class PathfindingReward:
    """Per agent and step: `on_goal * on goal + all_on_goal * all agents on goal - collision *
    in contact + shaping * (goal distance before - after)`, the distance measured on the map
    (a wavefront field, recomputed at reset and on every new goal) with `geodesic`, else in a
    straight line. CAMAR's terms are 0.5, 0.5 and 1."""

    on_goal: float = 0.5
    all_on_goal: float = 0.5
    collision: float = 1.0
    shaping: float = 1.0
    geodesic: bool = False

    def __call__(
        self, on_goal: jax.Array, all_on: jax.Array, touched: jax.Array, progress: jax.Array
    ) -> jax.Array:
        """[N] float32 from on_goal [N] bool, all_on [] bool, touched [N] bool (in contact
        during the step) and progress [N] (goal distance gained)."""
        return (
            self.on_goal * on_goal
            + self.all_on_goal * all_on
            - self.collision * touched
            + self.shaping * progress
        ).astype(jnp.float32)
