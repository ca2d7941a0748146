"""What pathfinding agents observe: their own goal-relative features and the k nearest objects
(obstacle cells and agents, by the gap between surfaces, through the cell index), and the
global state; the `Pathfinding` env mixes it in."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import world
from .state import PathfindingState

Array = jax.Array

OBJECT_FEATURES = 6  # dx, dy, gap, radius, is_agent, present
OWN_FEATURES = 12


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
