"""Physics and proximity queries of the pathfinding world, all on a leading agent axis.

Geometry: the map is an obstacle grid of square cells of side `cell`; agents are discs. Every
proximity query goes through the cell index, never over all obstacles:

- obstacles near an agent: the cells of the `(2w + 1)^2` block around the agent's cell,
  read from the grid padded with `w` obstacle cells (outside the map is an obstacle);
- agents near an agent: either every other agent (`dense`, the fastest for a few dozen) or a
  cell list: agents sorted by cell, each agent reading at most `capacity` agents from each cell
  of its block (`searchsorted` on the sorted cell ids), so a step costs O(agents x block).

Contacts are soft (MPE's and CAMAR's penalty): a pair closer than the sum of radii pushes apart
with force `stiffness * margin * softplus(-(d - d_min) / margin)` along the line between the
centres (for an obstacle cell: from its closest point to the agent's centre).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def cell_of(pos: Array, cell: float, height: int, width: int) -> tuple[Array, Array]:
    """Row and column `[N]` int32 of the cell holding each position (clipped into the map)."""
    rc = jnp.floor(pos[:, ::-1] / cell).astype(jnp.int32)
    return jnp.clip(rc[:, 0], 0, height - 1), jnp.clip(rc[:, 1], 0, width - 1)


def block_offsets(w: int) -> np.ndarray:
    """`[(2w + 1)^2, 2]` (dr, dc) of a block, ordered by distance from the centre cell."""
    d = np.arange(-w, w + 1)
    off = np.stack(np.meshgrid(d, d, indexing="ij"), -1).reshape(-1, 2)
    return off[np.argsort(np.abs(off).max(axis=1) * 100 + np.abs(off).sum(axis=1), kind="stable")]


def nearby_cells(
    padded: Array, rows: Array, cols: Array, w: int, pad: int, cell: float
) -> tuple[Array, Array]:
    """The obstacle cells of each agent's block.

    `padded` is the obstacle grid padded with `pad >= w` obstacle cells on every side.
    Returns `lo [N, K, 2]` (the lower-left corner of each block cell, world units) and
    `occupied [N, K]` bool, `K = (2w + 1)^2`.
    """
    off = jnp.asarray(block_offsets(w))
    r = rows[:, None] + off[None, :, 0]
    c = cols[:, None] + off[None, :, 1]
    occupied = padded[r + pad, c + pad]
    lo = jnp.stack([c, r], axis=-1).astype(jnp.float32) * cell
    return lo, occupied


def closest_on_boxes(pos: Array, lo: Array, cell: float) -> tuple[Array, Array]:
    """Vector from the closest point of each box to the agent, and its length.

    `pos [N, 2]`, `lo [N, K, 2]` -> `delta [N, K, 2]`, `dist [N, K]` (0 inside a box).
    """
    p = pos[:, None, :]
    q = jnp.clip(p, lo, lo + cell)
    delta = p - q
    return delta, jnp.sqrt(jnp.sum(delta**2, axis=-1))


def penalty(dist: Array, min_dist: Array, stiffness: float, margin: float) -> Array:
    """Soft contact magnitude, zero unless `dist < min_dist` (CAMAR applies it on contact)."""
    soft = margin * jnp.logaddexp(0.0, -(dist - min_dist) / margin)
    return jnp.where(dist < min_dist, stiffness * soft, 0.0)


def obstacle_force(
    pos: Array,
    radius: Array,
    lo: Array,
    occupied: Array,
    cell: float,
    stiffness: float,
    margin: float,
) -> tuple[Array, Array]:
    """Contact force `[N, 2]` from the obstacle cells `lo/occupied [N, K]`, and `[N]` bool
    touching any. An agent whose centre is inside a cell is pushed out from the cell's centre."""
    delta, dist = closest_on_boxes(pos, lo, cell)
    inside = dist < 1e-9
    centre = pos[:, None, :] - (lo + cell / 2)
    centre_dist = jnp.sqrt(jnp.sum(centre**2, axis=-1))
    normal = jnp.where(
        inside[..., None],
        centre / jnp.maximum(centre_dist, 1e-9)[..., None],
        delta / jnp.maximum(dist, 1e-9)[..., None],
    )
    mag = penalty(dist, radius[:, None], stiffness, margin) * occupied
    touch = jnp.any(occupied & (dist < radius[:, None]), axis=1)
    return jnp.sum(mag[..., None] * normal, axis=1), touch


def keep_out(
    pos: Array, vel: Array, clearance: Array, lo: Array, occupied: Array, cell: float
) -> tuple[Array, Array]:
    """Positional guard behind the soft contacts: move each agent out of the obstacle cells of
    its block (`lo/occupied [N, K]`, one cell after another) until its centre is at least
    `clearance [N]` from each, and drop the velocity component into that cell.

    Soft contacts alone let a crowd squeeze an agent through a wall; with the guard a centre
    never enters an obstacle cell (each sub-step moves less than a radius).
    """
    for k in range(lo.shape[1]):
        box = lo[:, k]
        q = jnp.clip(pos, box, box + cell)
        delta = pos - q
        dist = jnp.sqrt(jnp.sum(delta**2, axis=-1))
        # a centre inside the cell leaves through the nearest face
        faces = jnp.stack([pos - box, box + cell - pos], axis=1).reshape(-1, 4)  # -x,-y,+x,+y
        face = jnp.argmin(faces, axis=1)
        out_normal = jnp.asarray([[-1.0, 0.0], [0.0, -1.0], [1.0, 0.0], [0.0, 1.0]])[face]
        exit_point = pos + out_normal * jnp.take_along_axis(faces, face[:, None], 1)
        inside = dist < 1e-9
        normal = jnp.where(inside[:, None], out_normal, delta / jnp.maximum(dist, 1e-9)[:, None])
        anchor = jnp.where(inside[:, None], exit_point, q)
        fix = occupied[:, k] & (dist < clearance)
        pos = jnp.where(fix[:, None], anchor + normal * clearance[:, None], pos)
        into = jnp.minimum(jnp.sum(vel * normal, axis=-1), 0.0)
        vel = jnp.where(fix[:, None], vel - into[:, None] * normal, vel)
    return pos, vel


def agent_candidates(
    rows: Array, cols: Array, width: int, w: int, capacity: int
) -> tuple[Array, Array]:
    """Cell list: for each agent, the agents in the `(2w + 1)^2` cells around its own, at most
    `capacity` per cell. Returns `idx [N, K]` int32 and `valid [N, K]` bool (never itself)."""
    n = rows.shape[0]
    ids = rows * width + cols
    order = jnp.argsort(ids)
    sorted_ids = ids[order]
    off = jnp.asarray(block_offsets(w))
    r = rows[:, None] + off[None, :, 0]
    c = cols[:, None] + off[None, :, 1]
    target = r * width + c  # [N, B]; out-of-map cells never match an agent's cell
    inside = (r >= 0) & (c >= 0) & (c < width)
    start = jnp.searchsorted(sorted_ids, target.ravel(), side="left").reshape(target.shape)
    slot = start[..., None] + jnp.arange(capacity)  # [N, B, C]
    slot_c = jnp.minimum(slot, n - 1)
    valid = (slot < n) & (sorted_ids[slot_c] == target[..., None]) & inside[..., None]
    idx = order[slot_c].reshape(n, -1)
    valid = valid.reshape(n, -1) & (idx != jnp.arange(n)[:, None])
    return idx.astype(jnp.int32), valid


def all_candidates(n: int) -> tuple[Array, Array]:
    """Every other agent: `idx [N, N]`, `valid [N, N]` (False on the diagonal)."""
    idx = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (n, n))
    return idx, jnp.logical_not(jnp.eye(n, dtype=bool))


@dataclass(frozen=True)
class Neighbours:
    """How agents find the agents near them: "dense" (every other agent), "grid" (the cell
    list, reading `capacity` agents per cell) or "auto" (the cell list above 64 agents)."""

    mode: str = "auto"
    capacity: int = 4

    def dense(self, num_agents: int) -> bool:
        return self.mode == "dense" or (self.mode == "auto" and num_agents <= 64)

    def __call__(self, pos: Array, w: int, height: int, width: int) -> tuple[Array, Array]:
        """Candidates `idx, valid [N, K]` within `w` cells of each agent at `pos [N, 2]` on an
        H x W map (dense: every other agent)."""
        n = pos.shape[0]
        if self.dense(n):
            return all_candidates(n)
        rows, cols = cell_of(pos, 1.0, height, width)
        return agent_candidates(rows, cols, width, w, int(self.capacity))


def agent_force(
    pos: Array, radius: Array, idx: Array, valid: Array, stiffness: float, margin: float
) -> tuple[Array, Array, Array, Array]:
    """Contact force `[N, 2]` on each agent from its candidate neighbours `idx/valid [N, K]`.

    Also returns `touch [N]` bool, and the candidates' offsets `delta [N, K, 2]` (other - self)
    and centre distances `dist [N, K]` for the observation.
    """
    delta = pos[idx] - pos[:, None, :]
    dist = jnp.sqrt(jnp.sum(delta**2, axis=-1) + 1e-12)
    min_dist = radius[:, None] + radius[idx]
    mag = penalty(dist, min_dist, stiffness, margin) * valid
    force = -jnp.sum(mag[..., None] * delta / dist[..., None], axis=1)
    touch = jnp.any(valid & (dist < min_dist), axis=1)
    return force, touch, delta, dist
