"""Where episodes come from: the generator part of the grid family.

A generator draws, for a key, one instance: the obstacle grid [H, W] bool, each agent's start
[N, 2], its goals [N, G, 2] (G = 1, or the sequence an agent cycles through under
`on_target="restart"`), in map coordinates (x the row, y the column, as POGEMA), and the
map's size [2] int32 (H, W, or less where instances of several sizes share the array).

- `RandomMaps(height, width, density)`: each cell an obstacle with probability `density`
  (POGEMA's `generate_obstacles`); starts and goals drawn as POGEMA's `placing` draws them:
  each agent a free start cell and a goal cell of the same connected component, no cell used
  twice. A map whose components cannot hold N start-goal pairs is drawn again (up to
  `RETRIES` times, then the obstacle-free grid).
- `MapPool(maps)`: fixed grids (POGEMA's map strings, MovingAI `.map` text or arrays), one
  drawn per episode, starts and goals drawn on it as above.
- `Instances(maps, starts, goals, sizes)`: fixed instances (a published instance set, or a
  test's), one drawn per episode; maps of several sizes share one array (each map in its
  top-left corner, `sizes` saying how far it reaches); N may be fewer than the instances'
  agents (the first N play, as pogema takes the first `num_agents` of `agents_xy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array
RETRIES = 16


def parse_grid(text: str) -> np.ndarray:
    """A POGEMA map string ('.' free, '#' obstacle; agent letters and '@$!' marks count as
    free) or a MovingAI `.map` file's text ('.', 'G', 'S' free; '@', 'O', 'T', 'W' blocked) ->
    [H, W] bool obstacles."""
    lines = [line.strip() for line in text.strip().splitlines()]
    if lines and lines[0].startswith("type"):  # MovingAI: type, height, width, map, rows
        start = next(i for i, line in enumerate(lines) if line == "map") + 1
        rows = lines[start:]
        blocked = "@OTW"
    else:
        rows = [r for line in lines for r in line.split()]
        blocked = "#"
    if not rows or len({len(r) for r in rows}) != 1:
        raise ValueError("a grid needs rows of one length")
    return np.array([[c in blocked for c in row] for row in rows], bool)


def components(free: Array) -> Array:
    """[H, W] int32 label of each free cell's 4-connected component (the smallest flat index
    in it); obstacles get H * W. Parents point to smaller cells of the component: each sweep
    hooks a parent under the smallest label next to its children (a scatter-min, Shiloach and
    Vishkin's hooking) and then jumps pointers, so it ends in a few dozen sweeps where label
    propagation alone takes the component's diameter."""
    h, w = free.shape
    big = h * w
    ok = jnp.concatenate([free.reshape(-1), jnp.array([False])])
    start = jnp.where(ok, jnp.arange(big + 1, dtype=jnp.int32), big)

    def sweep(lab: Array) -> Array:
        grid = lab[:big].reshape(h, w)
        pad = jnp.pad(grid, 1, constant_values=big)
        nb = jnp.minimum(
            jnp.minimum(pad[:-2, 1:-1], pad[2:, 1:-1]), jnp.minimum(pad[1:-1, :-2], pad[1:-1, 2:])
        )
        low = jnp.where(ok, jnp.minimum(lab, jnp.append(nb.reshape(-1), big)), big)
        lab = lab.at[lab].min(low)  # hook: a parent takes its children's smallest neighbour
        lab = jnp.where(ok, jnp.minimum(lab, low), big)
        for _ in range(3):  # jump: point to the parent's parent
            lab = jnp.where(ok, lab[lab], big)
        return lab

    def body(c: tuple[Array, Array]) -> tuple[Array, Array]:
        return c[1], sweep(c[1])

    _, out = jax.lax.while_loop(lambda c: jnp.any(c[0] != c[1]), body, (start, sweep(start)))
    return out[:big].reshape(h, w)


def _shuffle_by_component(key: Array, flat: Array) -> Array:
    """The cell indices [HW] grouped by `flat` label, in a random order within each label.
    Two single-key sorts of packed int32 keys (a random rank, then label and rank) where the
    bits fit (maps up to 2^15 cells), as XLA sorts one int32 operand several times faster
    than a key-value pair; `lexsort` beyond."""
    big = flat.shape[0]
    bits = max(1, (big - 1).bit_length())  # a cell index or a rank
    if 2 * bits + 1 > 31:
        return jnp.lexsort((jax.random.uniform(key, (big,)), flat))
    cells = jnp.arange(big, dtype=jnp.int32)
    noise = jax.random.randint(key, (big,), 0, 1 << (31 - bits), jnp.int32)
    order = jnp.sort((noise << bits) | cells) & ((1 << bits) - 1)  # a random permutation
    ranked = jnp.sort((flat[order] << bits) | cells)  # by label, then by random rank
    return order[ranked & ((1 << bits) - 1)]


def _pairs(key: Array, labels: Array) -> tuple[Array, Array]:
    """The free cells in a random order grouped by component, and where a start-goal pair
    begins: (order [HW] cell indices, pair [HW] bool at the first cell of each pair)."""
    big = labels.size
    flat = labels.reshape(-1)
    order = _shuffle_by_component(key, flat)
    lab = flat[order]
    i = jnp.arange(big)
    first = jnp.concatenate([jnp.array([True]), lab[1:] != lab[:-1]])
    rank = i - jax.lax.cummax(jnp.where(first, i, 0))
    nxt = jnp.concatenate([lab[1:], jnp.array([big + 1], lab.dtype)])
    pair = (rank % 2 == 0) & (nxt == lab) & (lab < big)
    return order, pair


def capacity(labels: Array) -> Array:
    """How many start-goal pairs the components of `labels` hold."""
    big = labels.size
    counts = jnp.zeros(big + 1, jnp.int32).at[labels.reshape(-1)].add(1)
    return jnp.sum(counts[:big] // 2)


def place(
    key: Array, free: Array, num_agents: int, labels: Array | None = None
) -> tuple[Array, Array]:
    """Each agent a start and a goal in one connected component, no cell twice: the free
    cells are shuffled within their components and paired off, and N of the pairs drawn
    uniformly (a component is drawn in proportion to the pairs it holds, as POGEMA's
    `placing` fills components as its shuffled cells reach them). ([N, 2], [N, 2]) int32;
    needs `capacity(labels) >= N`."""
    h, w = free.shape
    labels = components(free) if labels is None else labels
    k1, k2 = jax.random.split(key)
    order, pair = _pairs(k1, labels)
    priority = jnp.where(pair, jax.random.uniform(k2, pair.shape), -1.0)
    _, at = jax.lax.top_k(priority, num_agents)
    s, g = order[at], order[at + 1]
    cell = lambda i: jnp.stack([i // w, i % w], -1).astype(jnp.int32)  # noqa: E731
    return cell(s), cell(g)


@dataclass(frozen=True)
class RandomMaps:
    """Random grids of `height` x `width` cells, each an obstacle with probability `density`."""

    height: int = 8
    width: int = 8
    density: float = 0.3

    def __post_init__(self) -> None:
        if not (1 <= self.height <= 4096 and 1 <= self.width <= 4096):
            raise ValueError("height and width must be in 1..4096")
        if not 0.0 <= self.density <= 1.0:
            raise ValueError(f"density must be in [0, 1], got {self.density}")

    def check(self, num_agents: int) -> None:
        if 2 * num_agents > self.height * self.width:
            raise ValueError(
                f"{num_agents} agents need {2 * num_agents} cells; the grid has "
                f"{self.height * self.width}"
            )

    def __call__(self, key: Array, num_agents: int) -> tuple[Array, Array, Array, Array]:
        shape = (self.height, self.width)

        def draw(c: tuple) -> tuple:
            k, _, _, tries = c
            k, sub = jax.random.split(k)
            grid = jax.random.bernoulli(sub, self.density, shape)
            return k, grid, components(~grid), tries + 1

        def short(c: tuple) -> Array:
            return (capacity(c[2]) < num_agents) & (c[3] <= RETRIES)

        key, first = jax.random.split(key)
        empty, one = jnp.zeros(shape, bool), jnp.zeros(shape, jnp.int32)  # one component: 0
        _, grid, labels, tries = jax.lax.while_loop(short, draw, draw((first, empty, one, 0)))
        labels = jnp.where(tries > RETRIES, one, labels)
        grid = jnp.where(tries > RETRIES, False, grid)
        starts, goals = place(key, ~grid, num_agents, labels)
        return grid, starts, goals[:, None], jnp.asarray(shape, jnp.int32)


@dataclass(frozen=True, eq=False)
class MapPool:
    """Fixed grids (strings or [H, W] arrays, one size), one per episode; starts and goals
    drawn on it."""

    maps: tuple[Any, ...]
    grids: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        grids = [parse_grid(m) if isinstance(m, str) else np.asarray(m, bool) for m in self.maps]
        if not grids or len({g.shape for g in grids}) != 1:
            raise ValueError("a map pool needs at least one grid, all of one size")
        object.__setattr__(self, "grids", np.stack(grids))

    @property
    def height(self) -> int:
        return int(self.grids.shape[1])

    @property
    def width(self) -> int:
        return int(self.grids.shape[2])

    def check(self, num_agents: int) -> None:
        for i, g in enumerate(self.grids):
            if int(capacity(components(jnp.asarray(~g)))) < num_agents:
                raise ValueError(f"map {i} cannot hold {num_agents} start-goal pairs")

    def __call__(self, key: Array, num_agents: int) -> tuple[Array, Array, Array, Array]:
        k1, k2 = jax.random.split(key)
        grid = jnp.asarray(self.grids)[jax.random.randint(k1, (), 0, len(self.grids))]
        starts, goals = place(k2, ~grid, num_agents)
        return grid, starts, goals[:, None], jnp.asarray(grid.shape, jnp.int32)


@dataclass(frozen=True, eq=False)
class Instances:
    """Fixed instances: grids [M, H, W], starts [M, N, 2], goals [M, N, 2] or goal sequences
    [M, N, G, 2], and optionally each map's size [M, 2] (default H, W); one drawn per
    episode."""

    maps: Any
    starts: Any
    goals: Any
    sizes: Any = None

    def __post_init__(self) -> None:
        grids = np.asarray(self.maps, bool)
        starts, goals = np.asarray(self.starts, np.int32), np.asarray(self.goals, np.int32)
        if goals.ndim == 3:
            goals = goals[:, :, None]
        if grids.ndim != 3 or starts.shape[:1] != grids.shape[:1] or starts.shape[2:] != (2,):
            raise ValueError("instances need grids [M, H, W] and starts [M, N, 2]")
        if goals.shape[:2] != starts.shape[:2] or goals.shape[3:] != (2,):
            raise ValueError("goals must be [M, N, 2] or [M, N, G, 2], beside starts [M, N, 2]")
        full = np.broadcast_to(np.asarray(grids.shape[1:], np.int32), (len(grids), 2))
        sizes = full.copy() if self.sizes is None else np.asarray(self.sizes, np.int32)
        if sizes.shape != (len(grids), 2) or (sizes < 1).any() or (sizes > full).any():
            raise ValueError(f"sizes must be [M, 2] within the grids' {grids.shape[1:]}")
        for cells in (starts, goals):
            x, y = cells[..., 0], cells[..., 1]
            h = sizes[:, 0].reshape((-1,) + (1,) * (x.ndim - 1))
            w = sizes[:, 1].reshape((-1,) + (1,) * (x.ndim - 1))
            if not ((x >= 0) & (x < h) & (y >= 0) & (y < w)).all():
                raise ValueError("a start or goal lies outside its map")
        object.__setattr__(self, "maps", grids)
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "goals", goals)
        object.__setattr__(self, "sizes", sizes)

    @property
    def height(self) -> int:
        return int(self.maps.shape[1])

    @property
    def width(self) -> int:
        return int(self.maps.shape[2])

    def check(self, num_agents: int) -> None:
        if num_agents > self.starts.shape[1]:
            raise ValueError(
                f"the instances have {self.starts.shape[1]} agents; {num_agents} asked for"
            )

    def __call__(self, key: Array, num_agents: int) -> tuple[Array, Array, Array, Array]:
        i = jax.random.randint(key, (), 0, self.maps.shape[0])
        starts = jnp.asarray(self.starts[:, :num_agents])[i]
        goals = jnp.asarray(self.goals[:, :num_agents])[i]
        return jnp.asarray(self.maps)[i], starts, goals, jnp.asarray(self.sizes)[i]
