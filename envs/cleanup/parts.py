"""The parts a `Cleanup` ocean is composed of (`Cleanup.from_parts`):

- `OceanGenerator`: the start of an episode (vessels, the initial plastic patches, the river
  mouths on the coast);
- `Current`: the water's motion (`ocean.current_at`);
- `Drift`: the plastic's life: sources emitting, diffusion, the sea's edge removing;
- `Fleet`: the vessels' motion, pickup, hold and port, and collisions;
- `CleanupReward`: each vessel's catch blended with the team's, minus collisions;
- `Observer`: the density grid, the egocentric window, the neighbours and the one-bit signal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from . import ocean
from .state import CleanupState

Array = jax.Array


@dataclass(frozen=True)
class OceanGenerator:
    """The start of an episode on a square sea `[0, size]^2`: vessels at random places (away
    from the coast) and headings, `initial_plastic` pieces of `capacity` slots in `patches`
    Gaussian patches of std `patch_std`, `num_sources` river mouths at random places on the
    coast."""

    size: float = 10.0
    capacity: int = 256
    initial_plastic: int = 96
    patches: int = 3
    patch_std: float = 0.8
    num_sources: int = 2

    def __post_init__(self) -> None:
        if not (self.capacity >= 1 and self.initial_plastic <= self.capacity):
            raise ValueError("initial_plastic must fit capacity")

    def coast_points(self, key: Array, count: int) -> Array:
        """`count` random points on the coast (the sea's boundary)."""
        k_side, k_along = jax.random.split(key)
        side = jax.random.randint(k_side, (count,), 0, 4)
        along = jax.random.uniform(k_along, (count,)) * self.size
        edge = jnp.where(side % 2 == 0, 0.0, self.size)
        return jnp.where(
            (side < 2)[:, None],
            jnp.stack([along, edge], -1),  # bottom (0) / top (1)
            jnp.stack([edge, along], -1),  # left (2) / right (3)
        )

    def __call__(self, key: Array, num_vessels: int) -> CleanupState:
        k_pos, k_head, k_src, k_patch, k_pieces, k_which = jax.random.split(key, 6)
        n, p = num_vessels, self.capacity
        margin = 0.1 * self.size
        pos = jax.random.uniform(k_pos, (n, 2), minval=margin, maxval=self.size - margin)
        centres = jax.random.uniform(k_patch, (max(self.patches, 1), 2), minval=margin,
                                     maxval=self.size - margin)  # fmt: skip
        which = jax.random.randint(k_which, (p,), 0, max(self.patches, 1))
        pieces = centres[which] + self.patch_std * jax.random.normal(k_pieces, (p, 2))
        pieces = ocean.into_sea(pieces, self.size)
        alive = jnp.arange(p) < self.initial_plastic
        return CleanupState(
            pos=pos,
            heading=jax.random.uniform(k_head, (n,), minval=-jnp.pi, maxval=jnp.pi),
            speed=jnp.zeros(n),
            hold=jnp.zeros(n, jnp.int32),
            signal=jnp.zeros(n, bool),
            catch=jnp.zeros(n, jnp.int32),
            collisions=jnp.zeros(n, jnp.int32),
            plastic=jnp.where(alive[:, None], pieces, 0.0),
            alive=alive,
            sources=self.coast_points(k_src, self.num_sources),
            spawned=jnp.asarray(self.initial_plastic, jnp.int32),
            removed=jnp.zeros((), jnp.int32),
            delivered=jnp.zeros((), jnp.int32),
            t=jnp.zeros((), jnp.int32),
        )


@dataclass(frozen=True)
class Current:
    """Surface currents (`ocean.current_at`): "calm", "uniform" (`speed` toward `direction`,
    radians), "gyres" (`gyres` = (nx, ny) cells) or "double_gyre" (swaying by `epsilon` at
    angular frequency `omega` per step); the fastest water moves `speed` per step."""

    kind: str = "gyres"
    speed: float = 0.05
    direction: float = 0.0
    gyres: tuple[int, int] = (2, 2)
    epsilon: float = 0.25
    omega: float = 2 * math.pi / 100

    def __post_init__(self) -> None:
        if self.kind not in ocean.CURRENTS:
            raise ValueError(f"unknown current {self.kind!r}; valid: {', '.join(ocean.CURRENTS)}")

    def fields(self, size: float) -> dict:
        """`ocean.current_at`'s keywords on a sea of side `size`."""
        return dict(
            kind=self.kind,
            size=float(size),
            speed=float(self.speed),
            direction=float(self.direction),
            gyres=tuple(int(g) for g in self.gyres),
            epsilon=float(self.epsilon),
            omega=float(self.omega),
        )


@dataclass(frozen=True)
class Drift:
    """The plastic's life: each source emits a piece with probability `source_rate` per step,
    `source_spread` around it; pieces drift with the current plus a random walk of std
    `diffusion`; pieces leaving the sea are removed (counted) or, without
    `remove_at_boundary`, held at the coast."""

    source_rate: float = 0.3
    source_spread: float = 0.3
    diffusion: float = 0.01
    remove_at_boundary: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.source_rate <= 1.0:
            raise ValueError("source_rate is a probability per step")


@dataclass(frozen=True)
class Fleet:
    """The vessels: top speed, throttle step and turn per step; carried by the current with
    `drift_vessels`; each picks up the pieces within `collect_radius` (the nearest vessel with
    room takes a piece), holds `hold_capacity` of them (0: unlimited) and unloads within
    `port_radius` of `port`; vessels closer than twice `vessel_radius` collide."""

    max_speed: float = 0.25
    accel: float = 0.05
    max_turn: float = math.pi / 8
    drift_vessels: bool = True
    collect_radius: float = 0.4
    hold_capacity: int = 0
    port: tuple[float, float] = (5.0, 0.0)
    port_radius: float = 1.0
    vessel_radius: float = 0.15


@dataclass(frozen=True)
class CleanupReward:
    """Each vessel's reward: `(1 - alpha) * own catch + alpha * team catch / N` (0: each for
    itself, the paper's; 1: fully shared), minus `collision_penalty` in a step it collides."""

    alpha: float = 0.0
    collision_penalty: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")

    def __call__(self, got: Array, collided: Array) -> Array:
        """[N] from the pieces each vessel collected this step [N] and its collisions [N]."""
        own = got.astype(jnp.float32)
        reward = (1.0 - self.alpha) * own + self.alpha * jnp.sum(own) / got.shape[0]
        return reward - self.collision_penalty * collided


@dataclass(frozen=True)
class Observer:
    """What a vessel sees: the plastic density on a `grid` x `grid` grid, through a `window` x
    `window` egocentric window (odd), its `neighbours` nearest vessels, and the one-bit signals
    of the vessels within `comm_range` (sent only with `communication`)."""

    grid: int = 16
    window: int = 5
    neighbours: int = 3
    communication: bool = True
    comm_range: float = 4.0

    def __post_init__(self) -> None:
        if not (self.window % 2 == 1 and self.window >= 1):
            raise ValueError(f"window must be odd, got {self.window}")
