"""Occupancy-grid maps for pathfinding: jittable generators, MovingAI `.map` files, reachability.

A map is a bool array `[H, W]`, True where a cell is an obstacle; row `r`, column `c` covers
`x in [c, c + 1) * cell`, `y in [r, r + 1) * cell` (row 0 at the bottom). Everything outside the
grid counts as an obstacle. Every generator is `generate(key) -> [H, W] bool`, pure and
jittable, so a pool of maps is one `jit(vmap(generate))` call and a fresh map per reset is one
more traced function.

Reachability: `largest_component` labels the free cells 4-connected to one another (max-label
propagation with pointer jumping, O(log) rounds on open maps) and keeps the largest group;
starts and goals are drawn from it, so every goal is reachable from every start.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array
Generator = Callable[[Array], Array]

MAPS_DIR = Path(__file__).parent / "maps"

__all__ = [
    "MAPS_DIR",
    "caves",
    "fixed",
    "labyrinth",
    "largest_component",
    "largest_components",
    "load_map",
    "parse_map",
    "random_grid",
    "rooms",
]


def _shift(x: Array, dr: int, dc: int, fill: float | int | bool) -> Array:
    """`out[r, c] = x[r - dr, c - dc]`, `fill` where that falls outside."""
    h, w = x.shape
    p = jnp.pad(x, 1, constant_values=fill)
    return jax.lax.dynamic_slice(p, (1 - dr, 1 - dc), (h, w))


def random_grid(height: int, width: int, density: float) -> Generator:
    """Exactly `round(density * H * W)` obstacle cells at uniformly random places (CAMAR's
    random grid)."""
    count = int(round(density * height * width))

    def generate(key: Array) -> Array:
        scores = jax.random.uniform(key, (height * width,))
        if count == 0:
            return jnp.zeros((height, width), bool)
        threshold = jax.lax.top_k(scores, count)[0][-1]
        return (scores >= threshold).reshape(height, width)

    return generate


def labyrinth(height: int, width: int, extra_connections: float = 0.0) -> Generator:
    """A maze: cells at odd (row, col) are rooms joined by a random spanning tree (randomised
    Kruskal with union-find), walls between; each remaining inner wall is then opened with
    probability `extra_connections` (0: a perfect maze, one path between any two cells).

    `height` and `width` should be odd (an even size leaves a wall row/column at the top/right).
    """
    mr, mc = (height - 1) // 2, (width - 1) // 2
    if mr < 1 or mc < 1:
        raise ValueError(f"a labyrinth needs height and width >= 3, got {height}x{width}")
    # edges between maze cells: horizontal (r, c)-(r, c+1), then vertical (r, c)-(r+1, c)
    hr, hc = np.meshgrid(np.arange(mr), np.arange(mc - 1), indexing="ij")
    vr, vc = np.meshgrid(np.arange(mr - 1), np.arange(mc), indexing="ij")
    a = np.concatenate([(hr * mc + hc).ravel(), (vr * mc + vc).ravel()]).astype(np.int32)
    b = np.concatenate([(hr * mc + hc + 1).ravel(), ((vr + 1) * mc + vc).ravel()]).astype(np.int32)
    # the grid cell of the wall between a and b
    wall_r = np.concatenate([2 * hr + 1, 2 * vr + 2], axis=None).astype(np.int32)
    wall_c = np.concatenate([2 * hc + 2, 2 * vc + 1], axis=None).astype(np.int32)
    num_edges = a.size
    ja, jb, jr, jc = (jnp.asarray(x) for x in (a, b, wall_r, wall_c))  # the edges, on device

    def find(parent: Array, x: Array) -> Array:
        return jax.lax.while_loop(lambda v: parent[v] != v, lambda v: parent[v], x)

    def generate(key: Array) -> Array:
        k_order, k_extra = jax.random.split(key)
        order = jax.random.permutation(k_order, num_edges)

        def body(i: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
            parent, opened = carry
            e = order[i]
            ra, rb = find(parent, ja[e]), find(parent, jb[e])
            join = ra != rb
            parent = parent.at[ra].set(jnp.where(join, rb, parent[ra]))
            return parent, opened.at[e].set(join)

        parent = jnp.arange(mr * mc, dtype=jnp.int32)
        _, opened = jax.lax.fori_loop(0, num_edges, body, (parent, jnp.zeros(num_edges, bool)))
        opened = opened | (jax.random.uniform(k_extra, (num_edges,)) < extra_connections)
        grid = jnp.ones((height, width), bool)
        rooms_r, rooms_c = np.meshgrid(2 * np.arange(mr) + 1, 2 * np.arange(mc) + 1)
        grid = grid.at[rooms_r.ravel(), rooms_c.ravel()].set(False)
        return grid.at[jr, jc].set(jnp.logical_not(opened) & grid[jr, jc])

    return generate


def rooms(
    height: int, width: int, room_size: int = 5, door_width: int = 1, extra_doors: float = 0.0
) -> Generator:
    """Square rooms of `room_size - 1` free cells a side, separated by one-cell walls; every
    wall between two neighbouring rooms has a door (`door_width` cells, random place along it),
    and a second door with probability `extra_doors`."""
    if room_size < door_width + 2:
        raise ValueError(f"room_size {room_size} too small for doors of width {door_width}")
    rows = np.arange(height)
    cols = np.arange(width)
    wall_rows = (rows % room_size == 0) & (rows > 0) & (rows < height - 1)
    wall_cols = (cols % room_size == 0) & (cols > 0) & (cols < width - 1)
    walls = jnp.asarray(wall_rows[:, None] | wall_cols[None, :])
    # room index of each cell along each axis, and the offset inside its room's wall segment
    room_r, room_c = rows // room_size, cols // room_size
    off_r, off_c = rows % room_size, cols % room_size
    nr, nc = int(room_r.max()) + 1, int(room_c.max()) + 1
    span = room_size - 1 - door_width  # door start offsets 1 .. span + 1 inside a segment

    def doors(key: Array, n_walls: int, n_segments: int) -> Array:
        """[walls, segments, room_size] bool: cells opened in each wall segment."""
        k1, k2, k3 = jax.random.split(key, 3)
        offsets = np.arange(room_size)

        def door(k: Array) -> Array:
            start = jax.random.randint(k, (n_walls, n_segments, 1), 1, span + 2)
            return jnp.logical_and(offsets >= start, offsets < start + door_width)

        second = jax.random.uniform(k3, (n_walls, n_segments, 1)) < extra_doors
        return door(k1) | (door(k2) & second)

    def generate(key: Array) -> Array:
        k_h, k_v = jax.random.split(key)
        # horizontal walls (rows r = k * room_size): segments along columns
        open_h = doors(k_h, nr, nc)[room_r[:, None], room_c[None, :], off_c[None, :]]
        open_h = open_h & jnp.asarray(wall_rows[:, None] & ~wall_cols[None, :])
        # vertical walls (cols c = k * room_size): segments along rows
        open_v = doors(k_v, nc, nr)[room_c[None, :], room_r[:, None], off_r[:, None]]
        open_v = open_v & jnp.asarray(wall_cols[None, :] & ~wall_rows[:, None])
        return walls & jnp.logical_not(open_h | open_v)

    return generate


def caves(height: int, width: int, fill: float = 0.45, smoothing: int = 4) -> Generator:
    """Noise-based caves: cells start as obstacles with probability `fill`, then `smoothing`
    cellular-automaton rounds make a cell an obstacle iff at least 5 of the 9 cells of its 3x3
    block are (outside counts as obstacle)."""

    def generate(key: Array) -> Array:
        grid = jax.random.uniform(key, (height, width)) < fill

        def smooth(_: Array, g: Array) -> Array:
            shifted = (_shift(g, dr, dc, True) for dr in (-1, 0, 1) for dc in (-1, 0, 1))
            count = sum((x.astype(jnp.int32) for x in shifted), jnp.zeros(g.shape, jnp.int32))
            return count >= 5

        return jax.lax.fori_loop(0, smoothing, smooth, grid)

    return generate


def fixed(grid: np.ndarray) -> Generator:
    """The same map every time (a loaded `.map` file)."""
    fixed_grid = jnp.asarray(np.asarray(grid, bool))
    return lambda key: fixed_grid


def largest_component(obstacles: Array) -> Array:
    """`[H, W]` bool: the free cells of the largest 4-connected group of free cells.

    Every free cell starts labelled with its flat index + 1; each round a cell takes the largest
    label among itself and its free neighbours, then jumps twice to the label of the cell its
    label names (that cell is in the same group and holds a label at least as large), until no
    label changes. Each group ends labelled with its largest cell index + 1.
    """
    h, w = obstacles.shape
    free = jnp.logical_not(obstacles)
    start = jnp.where(free, jnp.arange(1, h * w + 1).reshape(h, w), 0)

    def round_(lab: Array) -> Array:
        best = lab
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            best = jnp.maximum(best, _shift(lab, dr, dc, 0))
        best = jnp.where(free, best, 0)
        flat = jnp.concatenate([jnp.zeros(1, best.dtype), best.ravel()])
        for _ in range(2):
            best = flat[best]
            flat = jnp.concatenate([jnp.zeros(1, best.dtype), best.ravel()])
        return best

    def cond(c: tuple[Array, Array]) -> Array:
        old, new = c
        return jnp.any(old != new)

    _, labels = jax.lax.while_loop(cond, lambda c: (c[1], round_(c[1])), (start, round_(start)))
    sizes = jnp.zeros(h * w + 1, jnp.int32).at[labels.ravel()].add(1).at[0].set(0)
    return (labels == jnp.argmax(sizes)) & free


def largest_components(pool: np.ndarray) -> np.ndarray:
    """`largest_component` of each map of a pool `[M, H, W]`, on the host in one pass
    (`scipy.ndimage.label`, 4-connected within each map): building a pool of a thousand maps
    takes milliseconds instead of seconds of batched gathers. Ties between equal-sized groups
    go the same way: to the group whose largest flat index is smallest."""
    from scipy import ndimage

    pool = np.asarray(pool, bool)
    m, h, w = pool.shape
    free = ~pool
    structure = np.zeros((3, 3, 3), bool)
    structure[1] = [[0, 1, 0], [1, 1, 1], [0, 1, 0]]
    labels, count = ndimage.label(free, structure)
    flat = labels.reshape(m, h * w)
    sizes = np.bincount(labels.ravel(), minlength=count + 1)
    top = np.zeros(count + 1, np.int64)  # each group's largest flat index within its map
    np.maximum.at(top, flat, np.broadcast_to(np.arange(h * w), flat.shape))
    owner = np.zeros(count + 1, np.int64)  # the map each group lies in
    owner[flat] = np.arange(m)[:, None]
    # per map: the largest group, then the smallest largest index (label 0, walls, excluded)
    order = np.lexsort((top[1:], -sizes[1:], owner[1:])) + 1
    first = order[np.unique(owner[order], return_index=True)[1]]
    best = np.zeros(m, np.int64)
    best[owner[first]] = first
    return (labels == best[:, None, None]) & free


# --- MovingAI .map files --------------------------------------------------------------------

# MovingAI terrain: '.' and 'G' passable, 'S' swamp (passable), 'W' water, '@', 'O', 'T' not
_PASSABLE = set(".GS")


def parse_map(text: str) -> np.ndarray:
    """A MovingAI `.map` (header `type octile`, `height H`, `width W`, `map`, then H rows) or
    just the rows -> `[H, W]` bool obstacles, row 0 at the bottom (the file's last row).

    Passable: `.`, `G`, `S`; anything else (`@`, `O`, `T`, `W`) is an obstacle.
    """
    lines = [ln.rstrip("\r") for ln in text.strip("\n").splitlines()]
    if lines and lines[0].startswith("type"):
        head = {}
        i = 0
        while i < len(lines) and lines[i].strip() != "map":
            parts = lines[i].split()
            if len(parts) == 2:
                head[parts[0]] = parts[1]
            i += 1
        if i == len(lines):
            raise ValueError("MovingAI map: no 'map' line after the header")
        rows = lines[i + 1 :]
        h, w = int(head.get("height", len(rows))), int(head.get("width", len(rows[0])))
        if len(rows) < h:
            raise ValueError(f"MovingAI map: header says height {h}, found {len(rows)} rows")
        rows = rows[:h]
    else:
        rows = [ln.strip() for ln in lines if ln.strip()]
        h, w = len(rows), max((len(r) for r in rows), default=0)
    if h == 0 or w == 0:
        raise ValueError("empty map")
    bad = [i for i, r in enumerate(rows) if len(r) != w]
    if bad:
        raise ValueError(f"map rows must all have width {w}; row {bad[0]} has {len(rows[bad[0]])}")
    grid = np.array([[ch not in _PASSABLE for ch in r] for r in rows], bool)
    return grid[::-1].copy()


def load_map(name_or_path: str) -> np.ndarray:
    """A shipped map by name (`MAPS_DIR/<name>.map`), a `.map` file path, or map text."""
    if "\n" in name_or_path:
        return parse_map(name_or_path)
    path = Path(name_or_path)
    if not path.exists():
        path = MAPS_DIR / f"{name_or_path}.map"
    if not path.exists():
        shipped = sorted(p.stem for p in MAPS_DIR.glob("*.map"))
        raise FileNotFoundError(
            f"no map {name_or_path!r}: not a file, and shipped maps are {', '.join(shipped)}"
        )
    return parse_map(path.read_text())
