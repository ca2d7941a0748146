"""What an agent sees: POGEMA's default observation, as one part.

Three (2r+1) x (2r+1) channels centred on the agent, flattened in this order: the obstacles
(the padded grid: the map, a frame of obstacles around it, free cells beyond), the agents on
the grid (the agent itself included; agents that left under `on_target="finish"` are not),
and the goal, a single 1 at its offset clipped to the window's edge. The agents' grid is
the one the collision rule leaves (`collision.Collision`: POGEMA's, quirks included). The
global state (for centralised critics and mixers) is POGEMA's `get_state`: every agent's cell
and goal normalised by the map's size, then the map's obstacles, then which agents are on
the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

Array = jax.Array


@dataclass(frozen=True)
class Window:
    """POGEMA's observation window of radius `radius` (its `obs_radius`, 1..128)."""

    radius: int = 5

    def __post_init__(self) -> None:
        if not 1 <= self.radius <= 128:
            raise ValueError(f"obs_radius must be in 1..128, got {self.radius}")

    @property
    def side(self) -> int:
        return 2 * self.radius + 1

    def size(self) -> int:
        return 3 * self.side**2

    def __call__(self, obstacles: Array, agents: Array, pos: Array, goal: Array) -> Array:
        """[N, 3 (2r+1)^2] float32 from the padded grids `obstacles` and `agents` [Hp, Wp]
        bool and the padded cells `pos`, `goal` [N, 2]."""
        r, side = self.radius, self.side
        agents = agents.astype(jnp.float32)

        def window(grid: Array, cell: Array) -> Array:
            return jax.lax.dynamic_slice(grid, (cell[0] - r, cell[1] - r), (side, side))

        walls = jax.vmap(window, (None, 0))(obstacles.astype(jnp.float32), pos)
        near = jax.vmap(window, (None, 0))(agents, pos)
        off = jnp.clip(goal - pos, -r, r) + r  # the goal's cell in the window, clipped
        target = jax.nn.one_hot(off[:, 0] * side + off[:, 1], side * side, dtype=jnp.float32)
        n = pos.shape[0]
        return jnp.concatenate([walls.reshape(n, -1), near.reshape(n, -1), target], axis=1)


def global_state(
    obstacles: Array, pos: Array, goal: Array, active: Array, r: int, size: Array | None = None
) -> Array:
    """POGEMA's `get_state` (cells normalised by the map's size, the map's obstacles) and
    the active flags: [4 N + H W + N] float32. `size` [2] is the map's (default H, W); the
    grid beyond a smaller map (its frame included) is part of the obstacles block."""
    inner = obstacles[r:-r, r:-r]
    h, w = inner.shape
    size = jnp.asarray((h, w) if size is None else size, jnp.float32)
    scale = jnp.maximum(size - 1.0, 1.0)
    norm = lambda c: ((c - r).astype(jnp.float32) / scale).reshape(-1)  # noqa: E731
    return jnp.concatenate(
        [norm(pos), norm(goal), inner.reshape(-1).astype(jnp.float32), active.astype(jnp.float32)]
    )
