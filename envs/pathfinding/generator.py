"""Map generators: the scenario part of `Pathfinding`.

A generator says which maps a task is played on: `generator.maps()` is a jittable
`key -> obstacles [H, W] bool` (`maps.py`), drawn per reset (`generator.draw`) from a pool of
`num_maps` maps generated once from `seed` (None: a fresh map every reset). `RandomGrid`,
`Labyrinth`, `Rooms` and `Caves` generate; `StringMap` plays one fixed map (a shipped name, a
MovingAI `.map` path or map text). `map_generator` builds one from `Pathfinding`'s flat
keywords.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import maps as mapgen

MAPS = ("random_grid", "labyrinth", "rooms", "caves", "string")


class MapPool(NamedTuple):
    """`K` maps generated at once: obstacles [K, H, W] bool, their largest free component
    [K, H, W] bool (where starts and goals are drawn) and its cell counts [K]."""

    obstacles: jax.Array
    free: jax.Array
    counts: np.ndarray


_POOLS: dict[tuple, MapPool] = {}


def map_pool(
    generate: Callable[[jax.Array], jax.Array], recipe: tuple, num_maps: int, seed: int
) -> MapPool:
    """The pool of `num_maps` maps from `seed` (obstacles, largest free component, free-cell
    counts) for `recipe` (map kind and its parameters), generated once per process: building
    the same env again (a sweep, an evaluation env, a transfer target) neither retraces nor
    recompiles."""
    key = (*recipe, num_maps, seed)
    if key not in _POOLS:
        if len(_POOLS) >= 16:
            _POOLS.pop(next(iter(_POOLS)))
        keys = jax.random.split(jax.random.key(seed), num_maps)
        pool = np.asarray(jax.jit(jax.vmap(generate))(keys))
        free = mapgen.largest_components(pool)
        _POOLS[key] = MapPool(jnp.asarray(pool), jnp.asarray(free), free.sum(axis=(1, 2)))
    return _POOLS[key]


@dataclass(frozen=True)
class MapGenerator:
    """What every generator holds: the grid's size and the pool's (`num_maps` maps from
    `seed`; None: a fresh map every reset)."""

    height: int = 20
    width: int = 20
    num_maps: int | None = 1024
    seed: int = 0
    name: ClassVar[str] = ""

    def maps(self) -> Callable[[jax.Array], jax.Array]:
        """`key -> obstacles [height, width] bool`, jittable."""
        raise NotImplementedError

    def recipe(self) -> tuple:
        """What identifies the maps it generates (the pool's cache key, with the pool's size
        and seed)."""
        raise NotImplementedError

    def pool(self) -> MapPool:
        """The pool of `num_maps` maps from `seed`, generated once per process (`map_pool`)."""
        assert self.num_maps is not None, "num_maps=None draws a fresh map every reset"
        return map_pool(self.maps(), self.recipe(), int(self.num_maps), int(self.seed))

    def draw(self, key: jax.Array, pool: MapPool | None) -> tuple[jax.Array, jax.Array]:
        """An episode's map: obstacles [H, W] and the largest free component [H, W], one of
        `pool` (`self.pool()`) drawn with `key`, or with no pool a fresh map."""
        if pool is None:
            obstacles = self.maps()(key)
            return obstacles, mapgen.largest_component(obstacles)
        i = jax.random.randint(key, (), 0, pool.obstacles.shape[0])  # num_maps
        return pool.obstacles[i], pool.free[i]


@dataclass(frozen=True)
class RandomGrid(MapGenerator):
    """Each cell an obstacle with probability `density` (CAMAR's random grid)."""

    density: float = 0.2
    name: ClassVar[str] = "random_grid"

    def maps(self) -> Callable[[jax.Array], jax.Array]:
        return mapgen.random_grid(self.height, self.width, self.density)

    def recipe(self) -> tuple:
        return (self.name, self.height, self.width, self.density)


@dataclass(frozen=True)
class Labyrinth(MapGenerator):
    """A perfect maze with a share `extra_connections` of its other walls opened."""

    extra_connections: float = 0.1
    name: ClassVar[str] = "labyrinth"

    def maps(self) -> Callable[[jax.Array], jax.Array]:
        return mapgen.labyrinth(self.height, self.width, self.extra_connections)

    def recipe(self) -> tuple:
        return (self.name, self.height, self.width, self.extra_connections)


@dataclass(frozen=True)
class Rooms(MapGenerator):
    """Rooms `room_size` cells apart, one door per wall and a second with `extra_doors`."""

    room_size: int = 5
    extra_doors: float = 0.0
    name: ClassVar[str] = "rooms"

    def maps(self) -> Callable[[jax.Array], jax.Array]:
        return mapgen.rooms(self.height, self.width, self.room_size, 1, self.extra_doors)

    def recipe(self) -> tuple:
        return (self.name, self.height, self.width, self.room_size, self.extra_doors)


@dataclass(frozen=True)
class Caves(MapGenerator):
    """Cellular-automaton caves: obstacles with chance `fill`, `smoothing` rounds."""

    fill: float = 0.45
    smoothing: int = 4
    name: ClassVar[str] = "caves"

    def maps(self) -> Callable[[jax.Array], jax.Array]:
        return mapgen.caves(self.height, self.width, self.fill, self.smoothing)

    def recipe(self) -> tuple:
        return (self.name, self.height, self.width, self.fill, self.smoothing)


@dataclass(frozen=True)
class StringMap(MapGenerator):
    """One fixed map, `source`: a shipped map name, a MovingAI `.map` path or map text (its
    size is the map's, its pool the one map)."""

    source: str = "warehouse"
    name: ClassVar[str] = "string"

    def __post_init__(self) -> None:
        object.__setattr__(self, "height", int(self._grid.shape[0]))
        object.__setattr__(self, "width", int(self._grid.shape[1]))
        object.__setattr__(self, "num_maps", 1)

    @functools.cached_property
    def _grid(self) -> np.ndarray:
        """The map, loaded once (not a field: equality and hashing stay the source's)."""
        return mapgen.load_map(self.source)

    def maps(self) -> Callable[[jax.Array], jax.Array]:
        return mapgen.fixed(self._grid)

    def recipe(self) -> tuple:
        grid: np.ndarray = self._grid
        return (self.name, grid.shape, grid.tobytes())


def map_generator(
    map: str = "random_grid",
    height: int = 20,
    width: int = 20,
    density: float = 0.2,
    extra_connections: float = 0.1,
    room_size: int = 5,
    extra_doors: float = 0.0,
    fill: float = 0.45,
    smoothing: int = 4,
    map_source: str | None = None,
    num_maps: int | None = 1024,
    seed: int = 0,
) -> MapGenerator:
    """The generator `Pathfinding`'s flat map keywords name (each kind reads its own)."""
    if map not in MAPS:
        raise ValueError(f"unknown map {map!r}; valid: {', '.join(MAPS)}")
    if map == "string":
        if map_source is None:
            raise ValueError("map 'string' needs map_source (name, file or text)")
        return StringMap(num_maps=1, seed=seed, source=map_source)
    size: dict[str, Any] = {"height": height, "width": width, "num_maps": num_maps, "seed": seed}
    if map == "random_grid":
        return RandomGrid(**size, density=density)
    if map == "labyrinth":
        return Labyrinth(**size, extra_connections=extra_connections)
    if map == "rooms":
        return Rooms(**size, room_size=room_size, extra_doors=extra_doors)
    return Caves(**size, fill=fill, smoothing=smoothing)
