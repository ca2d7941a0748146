"""The start of a `Cleanup` episode (`OceanGenerator`): the vessels, the initial plastic
patches and the river mouths on the coast."""

from __future__ import annotations

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
        n, p, patches = num_vessels, self.capacity, max(self.patches, 1)
        low, high = 0.1 * self.size, self.size - 0.1 * self.size  # away from the coast
        pos = jax.random.uniform(k_pos, (n, 2), minval=low, maxval=high)
        centres = jax.random.uniform(k_patch, (patches, 2), minval=low, maxval=high)
        which = jax.random.randint(k_which, (p,), 0, patches)
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
