"""What `Swarm` agents observe (`SwarmObserver`): the cells of their window on the grid, in
their own frame, and the swarm's mean-field embedding (the global state)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from . import field
from .field import Grid
from .state import SIZE, SwarmState

Array = jax.Array


@dataclass(frozen=True)
class SwarmObserver:
    """An agent sees the `(2 window + 1)^2` cells around its own on a `cells` x `cells` grid:
    per cell (row by row) its density and, with `angles`, the summed unit vectors of its
    agents' angles turned into the agent's frame (so the view does not change when the whole
    swarm turns), each summed over the cell's agents and scaled by cells^2 / N. With a
    `frequency_scale` it also sees its own natural frequency divided by it (Kuramoto). The
    state is the swarm's embedding on the grid by `kernel`: "gaussian" (kernels centred on the
    cells, Dec-POMFC's choice) or "box" (the cells' histogram), of the same features (in the
    world's frame)."""

    cells: int = 8
    window: int = 1
    kernel: str = "gaussian"
    angles: bool = False
    frequency_scale: float | None = None

    def __post_init__(self) -> None:
        Grid(self.cells, self.window, SIZE)  # checks cells and window
        if self.kernel not in field.KERNELS:
            raise ValueError(f"unknown kernel {self.kernel!r}; valid: {field.KERNELS}")

    @property
    def grid(self) -> Grid:
        return Grid(self.cells, self.window, SIZE)

    @property
    def own_features(self) -> int:
        return 0 if self.frequency_scale is None else 1

    @property
    def cell_features(self) -> int:
        """F: what a window cell tells (density first); the state's cells tell the same."""
        return 3 if self.angles else 1

    @property
    def obs_dim(self) -> int:
        return self.own_features + (2 * self.window + 1) ** 2 * self.cell_features

    @property
    def state_dim(self) -> int:
        return self.cells**2 * self.cell_features

    def values(self, state: SwarmState) -> Array:
        """[N, F] what each agent adds to its cell (density 1 first)."""
        if self.angles:
            return field.unit_vectors(state.angle)
        return jnp.ones((state.pos.shape[0], 1))

    def observe(self, state: SwarmState) -> Array:
        """[N, obs_dim]: the own features, then the window's cells."""
        n = state.pos.shape[0]
        seen = self.grid.windows(state.pos, self.values(state))
        if self.angles:
            seen = field.turned(seen, state.angle)
        own = jnp.zeros((n, 0))
        if self.frequency_scale is not None:
            own = (state.omega / self.frequency_scale)[:, None]
        return jnp.concatenate([own, seen.reshape(n, -1)], axis=-1)

    def global_state(self, state: SwarmState) -> Array:
        """[state_dim]: the swarm's embedding on the grid."""
        values = self.values(state)
        emb = field.embedding(state.pos, values, SIZE, self.cells, self.kernel, True)
        return emb.reshape(-1)
