"""The swarm's fields on a cell grid: what each agent sees of its neighbourhood and the mean-field
embedding the centralised critics read, both in O(N) per step.

The square world `[0, size)^2` is cut into `cells x cells` cells. One `segment_sum` over the
agents gives every cell's sums (its count and the sums of the task's features); an agent's
neighbourhood is the `(2w+1)^2` cells around its own (wrapped on a torus, cut at a box's
walls), so a step costs O(N (2w+1)^2), whatever the number of agents. Sums are scaled by
`cells^2 / N`, the count a cell holds when the agents are spread uniformly: the features are
then those of the empirical distribution (the mean field), the same at any N.

The embedding of the whole swarm (the env's global state) is either those cell sums (a
histogram, `kernel="box"`) or Gaussian kernels centred on the cells (`kernel="gaussian"`, each
agent spread over nearby centres with the cell side as bandwidth), the smooth representation
that Dec-POMFC (Cui et al. 2024) prefers to histograms.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array
KERNELS = ("gaussian", "box")


def cell_xy(pos: Array, size: float, cells: int) -> Array:
    """[N, 2] int32: the cell of each position."""
    return jnp.clip(jnp.floor(pos / size * cells).astype(jnp.int32), 0, cells - 1)


def cell_sums(xy: Array, values: Array, cells: int) -> Array:
    """[cells, cells, F]: the sum of `values` ([N, F]) over the agents in each cell."""
    flat = xy[:, 0] * cells + xy[:, 1]
    sums = jax.ops.segment_sum(values, flat, num_segments=cells * cells)
    return sums.reshape(cells, cells, values.shape[-1])


def offsets(w: int) -> np.ndarray:
    """[(2w+1)^2, 2] the window's cell offsets, row by row (dx, then dy)."""
    r = np.arange(-w, w + 1)
    return np.stack(np.meshgrid(r, r, indexing="ij"), -1).reshape(-1, 2)


def window(sums: Array, xy: Array, w: int, periodic: bool) -> Array:
    """[N, (2w+1)^2, F]: each agent's window of cell sums around its cell (wrapped on a
    torus; zero beyond a box's walls)."""
    cells = sums.shape[0]
    at = xy[:, None, :] + jnp.asarray(offsets(w))[None]
    if periodic:
        return sums[at[..., 0] % cells, at[..., 1] % cells]
    inside = jnp.all((at >= 0) & (at < cells), axis=-1)
    got = sums[jnp.clip(at[..., 0], 0, cells - 1), jnp.clip(at[..., 1], 0, cells - 1)]
    return got * inside[..., None]


def in_window(xy: Array, w: int, cells: int, periodic: bool) -> Array:
    """[N, N] bool: agent j's cell is within agent i's window (i itself included)."""
    d = jnp.abs(xy[:, None, :] - xy[None, :, :])
    if periodic:
        d = jnp.minimum(d, cells - d)
    return jnp.all(d <= w, axis=-1)


def embedding(
    pos: Array, values: Array, size: float, cells: int, kernel: str, periodic: bool
) -> Array:
    """[cells, cells, F]: the swarm's mean-field embedding, each cell's `values` ([N, F])
    weighted by `kernel` and scaled by cells^2 / N (1 for a feature equal to 1 everywhere
    under a uniform spread)."""
    n = pos.shape[0]
    scale = cells * cells / n
    if kernel == "box":
        return cell_sums(cell_xy(pos, size, cells), values, cells) * scale
    side = size / cells
    centres = (jnp.arange(cells) + 0.5) * side
    d = pos[:, None, :] - centres[None, :, None]  # [N, cells, 2]: per axis
    if periodic:
        d = d - size * jnp.round(d / size)
    k = jnp.exp(-0.5 * (d / side) ** 2)  # [N, cells, 2], bandwidth one cell
    k = k / jnp.sum(k, axis=1, keepdims=True)  # each agent's weight sums to 1 over the grid
    return jnp.einsum("nx,ny,nf->xyf", k[..., 0], k[..., 1], values) * scale


def unit_vectors(angle: Array) -> Array:
    """[N, 3] what an agent with an angle adds to its cell: 1 (its count), cos and sin."""
    return jnp.stack([jnp.ones_like(angle), jnp.cos(angle), jnp.sin(angle)], -1)


def turned(sums: Array, angle: Array) -> Array:
    """[N, W, 3] each agent's window of `unit_vectors` sums turned into its own frame: count,
    sum cos(a_j - a_i), sum sin(a_j - a_i)."""
    c, s = jnp.cos(angle)[:, None], jnp.sin(angle)[:, None]
    sc, ss = sums[..., 1], sums[..., 2]
    return jnp.stack([sums[..., 0], sc * c + ss * s, ss * c - sc * s], -1)


@dataclass(frozen=True)
class Grid:
    """The torus `[0, size)^2` cut into `cells` x `cells` cells; an agent sees the
    `(2 window + 1)^2` cells around its own."""

    cells: int = 8
    window: int = 1
    size: float = 1.0

    def __post_init__(self) -> None:
        if self.cells < 1:
            raise ValueError(f"cells must be >= 1, got {self.cells}")
        if not 0 <= 2 * self.window + 1 <= self.cells:
            raise ValueError(f"window must fit the grid: 2 window + 1 <= {self.cells}")

    def windows(self, pos: Array, values: Array) -> Array:
        """[N, (2 window + 1)^2, F]: every agent's window of the sums of `values` ([N, F]),
        scaled to the mean field (by cells^2 / N)."""
        xy = cell_xy(pos, self.size, self.cells)
        got = window(cell_sums(xy, values, self.cells), xy, self.window, periodic=True)
        return got * (self.cells**2 / pos.shape[0])

    def seen(self, pos: Array) -> Array:
        """[] the mean fraction of the swarm in an agent's window (itself excluded)."""
        n = pos.shape[0]
        xy = cell_xy(pos, self.size, self.cells)
        sums = cell_sums(xy, jnp.ones((n, 1)), self.cells)
        counts = window(sums, xy, self.window, periodic=True)
        return jnp.mean(jnp.sum(counts[..., 0], axis=1) - 1.0) / (n - 1)

    def neighbourhood(self, pos: Array) -> Array:
        """[N, N] float32: the agents in each agent's window, itself excluded."""
        xy = cell_xy(pos, self.size, self.cells)
        seen = in_window(xy, self.window, self.cells, periodic=True)
        return (seen & ~jnp.eye(pos.shape[0], dtype=bool)).astype(jnp.float32)
