"""What pathfinding agents observe: their own goal-relative features and the k nearest objects
(obstacle cells and agents, by the gap between surfaces, through the cell index), and the
global state; the `Pathfinding` env mixes it in."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from marl.core.env import TimeStep

from . import world
from .state import PathfindingState

Array = jax.Array

OBJECT_FEATURES = 6  # dx, dy, gap, radius, is_agent, present
OWN_FEATURES = 12
NEIGHBOURS = ("auto", "dense", "grid")


@dataclass(frozen=True)
class Observer:
    """What agents observe (the observation part of `Pathfinding`): obstacles and agents
    within `window` cells (a block of `(2 window + 1)^2` cells around the agent's own), the
    `max_obs` nearest; other agents found by `neighbours` ("dense": every other agent, "grid":
    a cell list reading `cell_capacity` agents per cell, "auto": grid above 64 agents). The
    global state appends the obstacle grid with `state_map` and t / limit with
    `time_in_state` (the limit then terminates)."""

    window: int = 2
    max_obs: int = 6
    neighbours: str = "auto"
    cell_capacity: int = 4
    state_map: bool = True
    time_in_state: bool = False

    def __post_init__(self) -> None:
        if self.neighbours not in NEIGHBOURS:
            raise ValueError("neighbours must be auto, dense or grid")
        if self.window < 1 or self.max_obs < 1:
            raise ValueError("obs_window and max_obs must be >= 1")


class PathfindingView:
    """The observation half of `Pathfinding` (a mixin: reads the env's sizes and settings)."""

    def _observe(self, state: PathfindingState) -> Array:
        n, w, k = self.num_agents, self.window, self.max_obs
        pos, radius = state.pos, state.radius
        size = jnp.array([self.width, self.height], jnp.float32)
        rel = state.goal - pos
        dist = jnp.linalg.norm(rel, axis=-1, keepdims=True)
        heading = jnp.stack([jnp.cos(state.heading), jnp.sin(state.heading)], -1)
        own = jnp.concatenate(
            [
                rel / size,
                rel / jnp.maximum(dist, 1e-6),
                dist / max(self.height, self.width),
                state.on_goal[:, None],
                state.vel / self.max_speed,
                heading,
                jnp.asarray(self.diffdrive, jnp.float32)[:, None] * jnp.ones((n, 1)),
                radius[:, None],
            ],
            axis=-1,
        )
        reach = float(w)  # every point this close to the agent lies inside its block
        # candidates: the block's obstacle cells (offset to their closest point) and agents
        # (dense or from the cell list); the k nearest by gap between surfaces are kept, and
        # only their features are built
        rows, cols = world.cell_of(pos, 1.0, self.height, self.width)
        lo, occupied = world.nearby_cells(state.obstacles, rows, cols, w, self.pad, 1.0)
        delta, d_obs = world.closest_on_boxes(pos, lo, 1.0)
        idx, valid = self._neighbours(pos, w)
        d_rel = pos[idx] - pos[:, None, :]
        d_ag = jnp.sqrt(jnp.sum(d_rel**2, axis=-1) + 1e-12)
        offsets = jnp.concatenate([-delta, d_rel], axis=1)  # [N, C, 2]
        radii = jnp.concatenate([jnp.zeros_like(d_obs), radius[idx]], axis=1)
        gaps = jnp.concatenate([d_obs, d_ag], axis=1) - radius[:, None] - radii
        ok = jnp.concatenate([occupied & (d_obs < reach), valid & (d_ag < reach)], axis=1)
        kk = min(k, ok.shape[1])
        _, nearest = jax.lax.top_k(jnp.where(ok, -gaps, -jnp.inf), kk)

        def pick(x):
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

    def _global_state(self, state: PathfindingState, steps: Array) -> Array:
        size = jnp.array([self.width, self.height], jnp.float32)
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
            parts.append((steps / self.spec.episode_limit)[None])
        if self.state_map:
            p = self.pad
            parts.append(state.obstacles[p:-p, p:-p].ravel())
        return jnp.concatenate([x.astype(jnp.float32) for x in parts])

    def _timestep(
        self, state: PathfindingState, reward: Array, terminated: Array, steps: Array | None = None
    ) -> TimeStep:
        n = self.num_agents
        steps = state.t if steps is None else steps
        limit = self.spec.episode_limit
        reached = state.goals_reached > 0
        arrival = jnp.where(state.arrival >= 0, state.arrival, limit)
        contact = state.collisions.astype(jnp.float32)
        metrics = {
            "success_rate": jnp.mean(reached),
            "on_goal": jnp.mean(state.on_goal),
            "all_on_goal": jnp.all(state.on_goal),
            "flowtime": jnp.sum(arrival),
            "makespan": jnp.max(arrival),
            "collisions_per_agent": jnp.mean(contact),
            "coordination": 1.0 - jnp.mean(contact / jnp.maximum(steps, 1)),
            "goals_reached": jnp.mean(state.goals_reached),
        }
        return TimeStep(
            obs=self._observe(state),
            state=self._global_state(state, steps),
            avail_actions=jnp.ones((n, self.spec.action_dim), bool),
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=jnp.ones(n, bool),
            metrics={k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()},
        )
