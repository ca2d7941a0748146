"""Geodesic distance fields on the obstacle grid (a wavefront), shared by the environment's
optional geodesic shaping and the planner baseline (`marl.baselines.pathfinding`).

`distance_field(obstacles, goal_cells)` gives, for each goal, the shortest-path length in cells
from every cell to the goal cell over 8-connected moves (1 straight, sqrt 2 diagonal, no corner
cutting: a diagonal move needs both cells beside it free). Obstacle cells and cells that cannot
reach the goal hold `UNREACHABLE`. It is a Bellman-Ford sweep (every cell relaxes from its 8
neighbours at once) repeated until nothing changes, so it costs O(path length) sweeps of the
grid, all inside one `while_loop`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

UNREACHABLE = 1e6
SQRT2 = float(np.sqrt(2.0))
# (dr, dc, cost); the diagonals last
MOVES = ((1, 0, 1.0), (-1, 0, 1.0), (0, 1, 1.0), (0, -1, 1.0)) + tuple(
    (dr, dc, SQRT2) for dr in (1, -1) for dc in (1, -1)
)


def _shift(x: Array, dr: int, dc: int, fill: float | int | bool) -> Array:
    """`out[..., r, c] = x[..., r + dr, c + dc]`, `fill` outside (the neighbour's value)."""
    h, w = x.shape[-2:]
    pad = [(0, 0)] * (x.ndim - 2) + [(1, 1), (1, 1)]
    p = jnp.pad(x, pad, constant_values=fill)
    return p[..., 1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]


def move_allowed(obstacles: Array) -> Array:
    """`[8, H, W]` bool: the move `MOVES[k]` from cell (r, c) stays on free cells (diagonals
    need both side cells free)."""
    free = jnp.logical_not(obstacles)
    out = []
    for dr, dc, _ in MOVES:
        ok = free & _shift(free, dr, dc, False)
        if dr and dc:
            ok = ok & _shift(free, dr, 0, False) & _shift(free, 0, dc, False)
        out.append(ok)
    return jnp.stack(out)


def distance_field(obstacles: Array, goal_rows: Array, goal_cols: Array) -> Array:
    """`[G, H, W]` shortest 8-connected path lengths (cells) to each of the G goal cells."""
    h, w = obstacles.shape
    g = goal_rows.shape[0]
    allowed = move_allowed(obstacles)
    big = jnp.float32(UNREACHABLE)
    start = jnp.full((g, h, w), big).at[jnp.arange(g), goal_rows, goal_cols].set(0.0)

    def sweep(d: Array) -> Array:
        best = d
        for k, (dr, dc, cost) in enumerate(MOVES):
            best = jnp.where(allowed[k], jnp.minimum(best, _shift(d, dr, dc, big) + cost), best)
        return best

    def cond(c: tuple[Array, Array]) -> Array:
        old, new = c
        return jnp.any(new < old)

    _, d = jax.lax.while_loop(cond, lambda c: (c[1], sweep(c[1])), (start, sweep(start)))
    return jnp.where(obstacles[None], big, jnp.minimum(d, big))


def field_at(field: Array, rows: Array, cols: Array) -> Array:
    """`field [N, H, W]` read at each agent's own cell `(rows[i], cols[i])` -> `[N]`."""
    return field[jnp.arange(field.shape[0]), rows, cols]
