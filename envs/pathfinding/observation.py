"""What pathfinding agents observe: `Observer`, the observer part of `Pathfinding`.

Observation [N, 12 + 6 max_obs] float32: goal offset / (H, W) scale (2), goal direction (2),
goal distance / max(H, W) (1), on goal (1), velocity / max_speed (2), heading cos and sin (2),
differential drive (1), radius (1); then the `max_obs` nearest objects (obstacle cells and
agents, by the gap between surfaces, through the cell index) within the window, nearest first:
offset / window (2, the obstacle cell's closest point or the agent's centre), gap between
surfaces / window (1), radius (1, 0 for cells), is agent (1), present (1).
State [10 N (+ 1) (+ H W)] float32: per agent position / size (2), velocity / max_speed (2),
goal / size (2), heading cos and sin (2), radius (1), on goal (1); t / limit with
`time_in_state`; the grid with `state_map`.
Metrics ([] float32, the episode so far): success_rate (agents that have reached their goal),
on_goal (fraction on goal now), all_on_goal, flowtime (sum over agents of the step of first
arrival, the limit if none; lifelong: the current goal's), makespan (the largest such step),
collisions_per_agent (steps in contact per agent), coordination (1 - steps in contact / steps,
averaged over agents; CAMAR's), goals_reached (per agent, lifelong).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import TimeStep

from . import world
from .state import PathfindingState

Array = jax.Array

OBJECT_FEATURES = 6  # dx, dy, gap, radius, is_agent, present
OWN_FEATURES = 12
NEIGHBOURS = ("auto", "dense", "grid")
METRICS = (
    "success_rate",
    "on_goal",
    "all_on_goal",
    "flowtime",
    "makespan",
    "collisions_per_agent",
    "coordination",
    "goals_reached",
)


@dataclass(frozen=True)
class Observer:
    """What agents observe (the module docstring has the layout): obstacles and agents within
    `window` cells (a block of `(2 window + 1)^2` cells around the agent's own), the `max_obs`
    nearest; other agents found by `neighbours` ("dense": every other agent, "grid": a cell
    list reading `cell_capacity` agents per cell, "auto": grid above 64 agents). The global
    state appends the obstacle grid with `state_map` and t / limit with `time_in_state` (the
    limit then terminates).

    The last four fields are the task's, which `Pathfinding` sets from its other parts: the
    `episode_limit`, the `max_speed` velocities are scaled by, the `num_diffdrive` first agents
    that drive differentially, and `num_actions` (the width of the available actions)."""

    window: int = 2
    max_obs: int = 6
    neighbours: str = "auto"
    cell_capacity: int = 4
    state_map: bool = True
    time_in_state: bool = False
    episode_limit: int = 128
    max_speed: float = 3.0
    num_diffdrive: int = 0
    num_actions: int = 2

    def __post_init__(self) -> None:
        if self.neighbours not in NEIGHBOURS:
            raise ValueError("neighbours must be auto, dense or grid")
        if self.window < 1 or self.max_obs < 1:
            raise ValueError("obs_window and max_obs must be >= 1")

    @property
    def index(self) -> world.Neighbours:
        """How agents find one another (for the view and for the contacts)."""
        return world.Neighbours(self.neighbours, int(self.cell_capacity))

    @property
    def obs_dim(self) -> int:
        return OWN_FEATURES + OBJECT_FEATURES * self.max_obs

    def state_dim(self, num_agents: int, height: int, width: int) -> int:
        grid = height * width if self.state_map else 0
        return 10 * num_agents + int(self.time_in_state) + grid

    def pad(self, obstacles: Array) -> Array:
        """The grid padded with `window` obstacle cells on every side (what states hold)."""
        return jnp.pad(obstacles, self.window, constant_values=True)

    def __call__(
        self, state: PathfindingState, reward: Array, terminated: Array, steps: Array
    ) -> TimeStep:
        """The TimeStep of `state`, `steps` into the episode."""
        n = state.pos.shape[0]
        metrics = self.metrics(state, steps)
        return TimeStep(
            obs=self.observe(state),
            state=self.global_state(state, steps),
            avail_actions=jnp.ones((n, self.num_actions), bool),
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=jnp.ones(n, bool),
            metrics={k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()},
        )

    def observe(self, state: PathfindingState) -> Array:
        """[N, obs_dim] each agent's own features and its `max_obs` nearest objects."""
        w, k = self.window, self.max_obs
        pos, radius = state.pos, state.radius
        n, (height, width) = pos.shape[0], state.size
        size = jnp.array([width, height], jnp.float32)
        rel = state.goal - pos
        dist = jnp.linalg.norm(rel, axis=-1, keepdims=True)
        heading = jnp.stack([jnp.cos(state.heading), jnp.sin(state.heading)], -1)
        diffdrive = np.arange(n) < self.num_diffdrive
        own = jnp.concatenate(
            [
                rel / size,
                rel / jnp.maximum(dist, 1e-6),
                dist / max(height, width),
                state.on_goal[:, None],
                state.vel / self.max_speed,
                heading,
                jnp.asarray(diffdrive, jnp.float32)[:, None] * jnp.ones((n, 1)),
                radius[:, None],
            ],
            axis=-1,
        )
        reach = float(w)  # every point this close to the agent lies inside its block
        # candidates: the block's obstacle cells (offset to their closest point) and agents
        # (dense or from the cell list); the k nearest by gap between surfaces are kept, and
        # only their features are built
        rows, cols = world.cell_of(pos, 1.0, height, width)
        lo, occupied = world.nearby_cells(state.obstacles, rows, cols, w, state.pad, 1.0)
        delta, d_obs = world.closest_on_boxes(pos, lo, 1.0)
        idx, valid = self.index(pos, w, height, width)
        d_rel = pos[idx] - pos[:, None, :]
        d_ag = jnp.sqrt(jnp.sum(d_rel**2, axis=-1) + 1e-12)
        offsets = jnp.concatenate([-delta, d_rel], axis=1)  # [N, C, 2]
        radii = jnp.concatenate([jnp.zeros_like(d_obs), radius[idx]], axis=1)
        gaps = jnp.concatenate([d_obs, d_ag], axis=1) - radius[:, None] - radii
        ok = jnp.concatenate([occupied & (d_obs < reach), valid & (d_ag < reach)], axis=1)
        kk = min(k, ok.shape[1])
        _, nearest = jax.lax.top_k(jnp.where(ok, -gaps, -jnp.inf), kk)

        def pick(x: Array) -> Array:
            return jnp.take_along_axis(x, nearest, axis=1)

        present = pick(ok)
        is_agent = nearest >= d_obs.shape[1]
        objects = jnp.concatenate(
            [
                jnp.take_along_axis(offsets, nearest[..., None], axis=1) / reach,
                (pick(gaps) / reach)[..., None],
                pick(radii)[..., None],
                is_agent[..., None],
                present[..., None],
            ],
            axis=-1,
        )
        objects = jnp.where(present[..., None], objects, 0.0)
        if kk < k:
            objects = jnp.pad(objects, ((0, 0), (0, k - kk), (0, 0)))
        return jnp.concatenate([own, objects.reshape(n, -1)], axis=-1).astype(jnp.float32)

    def global_state(self, state: PathfindingState, steps: Array) -> Array:
        """[state_dim] every agent's kinematics and goal, t / limit, the grid."""
        height, width = state.size
        size = jnp.array([width, height], jnp.float32)
        per_agent = jnp.concatenate(
            [
                state.pos / size,
                state.vel / self.max_speed,
                state.goal / size,
                jnp.cos(state.heading)[:, None],
                jnp.sin(state.heading)[:, None],
                state.radius[:, None],
                state.on_goal[:, None],
            ],
            axis=-1,
        )
        parts = [per_agent.ravel()]
        if self.time_in_state:
            parts.append((steps / self.episode_limit)[None])
        if self.state_map:
            parts.append(state.grid.ravel())
        return jnp.concatenate([x.astype(jnp.float32) for x in parts])

    def metrics(self, state: PathfindingState, steps: Array) -> dict[str, Array]:
        """`METRICS` of the episode so far, `steps` long."""
        reached = state.goals_reached > 0
        arrival = jnp.where(state.arrival >= 0, state.arrival, self.episode_limit)
        contact = state.collisions.astype(jnp.float32)
        return {
            "success_rate": jnp.mean(reached),
            "on_goal": jnp.mean(state.on_goal),
            "all_on_goal": jnp.all(state.on_goal),
            "flowtime": jnp.sum(arrival),
            "makespan": jnp.max(arrival),
            "collisions_per_agent": jnp.mean(contact),
            "coordination": 1.0 - jnp.mean(contact / jnp.maximum(steps, 1)),
            "goals_reached": jnp.mean(state.goals_reached),
        }
