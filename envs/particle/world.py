"""The particle world: static entity properties (agents first, then landmarks, on a leading
axis) and the geometry read off positions (distances, overlaps).

Facts carried over from PettingZoo's MPE (`mpe2` 1.1.x): dt 0.1, damping 0.25, contact force
100 with a soft margin of 1e-3, mass 1, default acceleration ("sensitivity") 5 (the physics:
`dynamics.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

NUM_MOVES = 5  # no-op, -x, +x, -y, +y


@dataclass(frozen=True, eq=False)
class World:
    """Static properties of every entity; arrays are numpy, indexed agents first.

    Attributes:
        num_agents: N.
        size: [E] radius of each entity.
        movable: [E] bool, integrated by the physics.
        collide: [E] bool, takes part in contacts.
        max_speed: [E] speed cap (inf for none).
        accel: [N] action force scale of each agent.
        silent: [N] bool, agent has no communication action.
        dim_c: width of the communication vector.
    """

    num_agents: int
    size: np.ndarray
    movable: np.ndarray
    collide: np.ndarray
    max_speed: np.ndarray
    accel: np.ndarray
    silent: np.ndarray
    dim_c: int = 0
    dt: float = 0.1
    damping: float = 0.25
    contact_force: float = 100.0
    contact_margin: float = 1e-3
    mass: float = 1.0

    @property
    def num_entities(self) -> int:
        return len(self.size)

    @property
    def num_landmarks(self) -> int:
        return self.num_entities - self.num_agents

    @property
    def agent_movable(self) -> np.ndarray:
        return self.movable[: self.num_agents]

    def num_discrete_actions(self) -> np.ndarray:
        """[N] action count per agent: moves x words (mpe2's Discrete sizes)."""
        moves = np.where(self.agent_movable, NUM_MOVES, 1)
        words = np.where(self.silent, 1, max(self.dim_c, 1))
        return (moves * words).astype(np.int32)

    def num_continuous_actions(self) -> np.ndarray:
        """[N] action dims per agent: 5 movement dims if movable + dim_c if speaking."""
        moves = np.where(self.agent_movable, NUM_MOVES, 0)
        words = np.where(self.silent, 0, self.dim_c)
        return (moves + words).astype(np.int32)


def make_world(
    *,
    agent_size: list[float] | np.ndarray,
    landmark_size: list[float] | np.ndarray,
    agent_collide: list[bool] | np.ndarray | bool,
    landmark_collide: list[bool] | np.ndarray | bool,
    agent_movable: list[bool] | np.ndarray | bool = True,
    agent_max_speed: list[float] | np.ndarray | float = np.inf,
    accel: list[float] | np.ndarray | float = 5.0,
    silent: list[bool] | np.ndarray | bool = True,
    dim_c: int = 0,
) -> World:
    """Build a `World` from per-agent and per-landmark properties (scalars broadcast)."""
    n = len(agent_size)
    m = len(landmark_size)

    def per(x: Any, k: int, dtype: type) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=dtype), (k,)).copy()

    return World(
        num_agents=n,
        size=np.concatenate([per(agent_size, n, float), per(landmark_size, m, float)]),
        movable=np.concatenate([per(agent_movable, n, bool), np.zeros(m, bool)]),
        collide=np.concatenate([per(agent_collide, n, bool), per(landmark_collide, m, bool)]),
        max_speed=np.concatenate([per(agent_max_speed, n, float), np.full(m, np.inf)]),
        accel=per(accel, n, float),
        silent=per(silent, n, bool),
        dim_c=dim_c,
    )


def distances(a: jax.Array, b: jax.Array) -> jax.Array:
    """[A, B] Euclidean distances between point sets a [A, 2] and b [B, 2] (per coordinate)."""
    dx = a[:, None, 0] - b[None, :, 0]
    dy = a[:, None, 1] - b[None, :, 1]
    return jnp.sqrt(dx**2 + dy**2)


def contiguous(idx: np.ndarray) -> bool:
    """The static indices `idx` are a run `i, i + 1, ...` (non-empty)."""
    return bool(len(idx)) and np.array_equal(idx, np.arange(idx[0], idx[0] + len(idx)))


def take_rows(x: jax.Array, idx: np.ndarray) -> jax.Array:
    """x[idx] for static indices: a slice when they are contiguous (no gather)."""
    if contiguous(idx):
        return x[int(idx[0]) : int(idx[0]) + len(idx)]
    return x[idx]


def overlaps(world: World, pos: jax.Array, rows: np.ndarray, cols: np.ndarray) -> jax.Array:
    """[len(rows), len(cols)] bool: entity rows[i] and cols[j] overlap (dist < size sum)."""
    d = distances(take_rows(pos, rows), take_rows(pos, cols))
    return d < jnp.asarray(world.size[rows][:, None] + world.size[cols][None, :], d.dtype)
