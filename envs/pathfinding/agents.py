"""The agents part of `Pathfinding`: who drives, from where to which goal, and their arrivals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .state import PathfindingState

Array = jax.Array


@dataclass(frozen=True)
class Agents:
    """`num_agents` discs of `radius` (one, or a (low, high) range drawn per agent per episode;
    in (0, 0.5]) starting and aiming at 2N distinct cells of the map's largest free component
    (one draw, as CAMAR: no agent starts on a goal), each facing its goal. An agent is on its
    goal within `goal_radius` of its centre; with `lifelong` one that arrives is given a new
    goal, any reachable free cell."""

    num_agents: int = 32
    radius: float | tuple[float, float] = 0.3
    goal_radius: float = 0.25
    lifelong: bool = False

    def __post_init__(self) -> None:
        lo, hi = self.radius_range
        if not 0 < lo <= hi <= 0.5:
            raise ValueError(f"agent_radius must be in (0, 0.5], got {self.radius}")
        if self.num_agents < 1:
            raise ValueError("num_agents must be >= 1")

    @classmethod
    def of(
        cls,
        num_agents: int,
        agent_radius: float | tuple[float, float],
        goal_radius: float,
        lifelong: bool,
    ) -> Agents:
        """The part `Pathfinding`'s keywords of the same names describe."""
        return cls(
            num_agents=int(num_agents),
            radius=agent_radius,
            goal_radius=float(goal_radius),
            lifelong=bool(lifelong),
        )

    @property
    def radius_range(self) -> tuple[float, float]:
        """(low, high) of the radii drawn."""
        radius: Any = self.radius  # a number, or any pair (a list from the command line)
        if np.ndim(radius) == 0:
            return float(radius), float(radius)
        lo, hi = radius
        return float(lo), float(hi)

    def place(
        self, key_cells: Array, key_radius: Array, obstacles: Array, free: Array
    ) -> PathfindingState:
        """An episode's first state on a map (`obstacles` padded, `free [H, W]` the reachable
        cells): starts and goals drawn with `key_cells`, radii with `key_radius`; no field."""
        n = self.num_agents
        cells = _centres(_draw_cells(key_cells, free, 2 * n), free.shape[1])
        pos, goal = cells[:n], cells[n:]
        lo, hi = self.radius_range
        radius = jax.random.uniform(key_radius, (n,), minval=lo, maxval=hi)
        rel = goal - pos
        heading = jnp.arctan2(rel[:, 1], rel[:, 0])  # facing the goal (CAMAR)
        on_goal = jnp.linalg.norm(rel, axis=-1) < self.goal_radius
        return PathfindingState(
            pos=pos,
            vel=jnp.zeros((n, 2)),
            heading=heading,
            radius=radius,
            goal=goal,
            obstacles=obstacles,
            free=free,
            field=None,
            on_goal=on_goal,
            arrival=jnp.where(on_goal, 0, -1).astype(jnp.int32),
            collisions=jnp.zeros(n, jnp.int32),
            goals_reached=on_goal.astype(jnp.int32),
            t=jnp.zeros((), jnp.int32),
        )

    def arrive(self, state: PathfindingState, touched: Array) -> PathfindingState:
        """`state` after a step's motion with its arrivals (`on_goal`, the step of a first
        arrival, goals reached) and contacts (touched [N] bool) counted."""
        t = state.t + 1
        on_goal = jnp.linalg.norm(state.goal - state.pos, axis=-1) < self.goal_radius
        first = on_goal & (state.arrival < 0)
        return state.replace(
            on_goal=on_goal,
            arrival=jnp.where(first, t, state.arrival),
            collisions=state.collisions + touched.astype(jnp.int32),
            goals_reached=state.goals_reached + first.astype(jnp.int32),
        )

    def new_goals(self, key: Array, state: PathfindingState) -> PathfindingState:
        """Lifelong: each agent on its goal is given a new one, a free cell drawn with `key`."""
        reached = state.on_goal
        height, width = state.size
        scores = jax.random.uniform(key, (self.num_agents, height * width))
        scores = jnp.where(state.free.ravel()[None], scores, -1.0)
        drawn = _centres(jnp.argmax(scores, axis=1), width)
        return state.replace(
            goal=jnp.where(reached[:, None], drawn, state.goal),
            on_goal=state.on_goal & ~reached,
            arrival=jnp.where(reached, -1, state.arrival),
        )


def _draw_cells(key: Array, free: Array, count: int) -> Array:
    """`count` distinct cells of `free` (flat indices), uniformly at random."""
    scores = jax.random.uniform(key, (free.size,))
    scores = jnp.where(free.ravel(), scores, -1.0)
    return jax.lax.top_k(scores, count)[1]


def _centres(flat: Array, width: int) -> Array:
    """[K, 2] the centres (x, y) of the cells of flat indices `flat` on a map `width` wide."""
    r, c = flat // width, flat % width
    return jnp.stack([c, r], axis=-1).astype(jnp.float32) + 0.5
