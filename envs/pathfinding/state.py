"""The state of a pathfinding environment."""

from __future__ import annotations

import jax
from flax import struct

Array = jax.Array


class PathfindingState(struct.PyTreeNode):
    """One environment (N agents, map H x W padded by `pad` obstacle cells on every side)."""

    pos: Array  # [N, 2] centre (x, y), cells
    vel: Array  # [N, 2] world-frame velocity, cells / s
    heading: Array  # [N] radians (differential drive; holonomic agents keep theirs)
    radius: Array  # [N]
    goal: Array  # [N, 2]
    obstacles: Array  # [H + 2 pad, W + 2 pad] bool
    free: Array  # [H, W] bool, the reachable free cells starts and goals are drawn from
    field: Array | None  # [N, H, W] geodesic distance to each goal (geodesic shaping only)
    on_goal: Array  # [N] bool
    arrival: Array  # [N] int32 step of the first arrival at the current goal, -1 before
    collisions: Array  # [N] int32 steps in contact during this episode
    goals_reached: Array  # [N] int32 goals reached (lifelong: each new goal counts)
    t: Array  # [] int32

    @property
    def size(self) -> tuple[int, int]:
        """(H, W), the map's cells (static: read from the arrays' shapes)."""
        height, width = self.free.shape[-2:]
        return int(height), int(width)

    @property
    def pad(self) -> int:
        """Obstacle cells padding the map on each side of `obstacles` (static)."""
        return (self.obstacles.shape[-1] - self.free.shape[-1]) // 2

    @property
    def grid(self) -> Array:
        """[H, W] bool, the obstacle grid without its padding."""
        p = self.pad
        return self.obstacles[..., p:-p, p:-p]
