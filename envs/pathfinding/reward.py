"""The reward part of `Pathfinding`: CAMAR's goal and collision terms plus progress shaping."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .planning import UNREACHABLE, distance_field, field_at
from .state import PathfindingState
from .world import cell_of

Array = jax.Array


@dataclass(frozen=True)
class PathfindingReward:
    """Per agent and step: `on_goal * on goal + all_on_goal * all agents on goal - collision *
    in contact + shaping * (goal distance before - after)`, the distance measured on the map
    (a wavefront field in `state.field`, recomputed at reset and on every new goal) with
    `geodesic`, else in a straight line. CAMAR's terms are 0.5, 0.5 and 1."""

    on_goal: float = 0.5
    all_on_goal: float = 0.5
    collision: float = 1.0
    shaping: float = 1.0
    geodesic: bool = False

    def __call__(self, before: PathfindingState, after: PathfindingState, touched: Array) -> Array:
        """[N] float32 for the step from `before` to `after` (its arrivals counted), touched
        [N] bool: in contact during the step."""
        on_goal = after.on_goal
        progress = self.distance(before) - self.distance(after)
        return (
            self.on_goal * on_goal
            + self.all_on_goal * jnp.all(on_goal)
            - self.collision * touched
            + self.shaping * progress
        ).astype(jnp.float32)

    def distance(self, state: PathfindingState) -> Array:
        """[N] each agent's distance to its goal: on the map where `state.field` holds it, else
        in a straight line."""
        euclid = jnp.linalg.norm(state.goal - state.pos, axis=-1)
        if state.field is None:
            return euclid
        rows, cols = cell_of(state.pos, 1.0, *state.size)
        geo = field_at(state.field, rows, cols)
        # the wavefront is in whole cells; inside the goal's cell use the straight line
        return jnp.where(geo < 0.5, euclid, jnp.minimum(geo, UNREACHABLE))

    def field(self, state: PathfindingState) -> Array | None:
        """[N, H, W] the distance field to each agent's goal (`geodesic` only, else None)."""
        if not self.geodesic:
            return None
        rows, cols = cell_of(state.goal, 1.0, *state.size)
        return distance_field(state.grid, rows, cols)

    def follow(self, state: PathfindingState, moved: Array) -> PathfindingState:
        """`state` with the field of its goals recomputed where any goal `moved` ([] bool)."""
        if not self.geodesic:
            return state
        field = jax.lax.cond(moved, lambda: self.field(state), lambda: state.field)
        return state.replace(field=field)
