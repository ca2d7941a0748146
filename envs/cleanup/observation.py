"""What vessels observe (their own features, the density window, the nearest vessels and the
signals in range), the global state and the metrics; the `Cleanup` env mixes it in."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from marl.core.env import TimeStep

from . import ocean
from .state import CleanupState

Array = jax.Array

OWN_FEATURES = 11  # x, y, heading cos/sin, speed, hold, current (2), port offset (2), t
NEIGHBOUR_FEATURES = 7  # dx, dy, distance, heading cos/sin, in range, signal
SIGNAL_FEATURES = 2  # mean signal of the vessels in range, their count / N


class CleanupView:
    """The observation half of `Cleanup` (a mixin: reads the env's sizes and settings)."""

    def _timestep(self, state: CleanupState, reward: Array, steps: Array) -> TimeStep:
        n = self.n
        collected = jnp.sum(state.catch)
        floating = jnp.sum(state.alive)
        catch = state.catch.astype(jnp.float32)
        metrics = {
            "collected_fraction": collected / jnp.maximum(state.spawned, 1),
            "collected": collected,
            "spawned": state.spawned,
            "floating": floating,
            "removed": state.removed,
            "catch_per_vessel": jnp.mean(catch),
            "gini": ocean.gini(catch),
            "collisions_per_vessel": jnp.mean(state.collisions.astype(jnp.float32)),
            "delivered": state.delivered,
        }
        grid = ocean.density(state.plastic, state.alive, self.size, self.grid)
        return TimeStep(
            obs=self._observe(state, grid, steps),
            state=self._global_state(state, grid, steps),
            avail_actions=jnp.ones((n, self.spec.action_dim), bool),
            reward=reward,
            terminated=jnp.zeros((), bool),
            truncated=jnp.zeros((), bool),
            alive=jnp.ones(n, bool),
            metrics={k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()},
        )

    def _observe(self, state: CleanupState, grid: Array, steps: Array) -> Array:
        n, size, w = self.n, self.size, self.window
        pos = state.pos
        hold = (state.hold / self.hold_capacity if self.hold_capacity > 0 else jnp.zeros(n)).astype(
            jnp.float32
        )
        speed_scale = max(self.current["speed"], 1e-6)
        own = jnp.concatenate(
            [
                pos / size,
                jnp.cos(state.heading)[:, None],
                jnp.sin(state.heading)[:, None],
                (state.speed / self.max_speed)[:, None],
                hold[:, None],
                self._water(pos, steps) / speed_scale,
                (self.port - pos) / size,
                jnp.broadcast_to(steps / self.spec.episode_limit, (n, 1)),
            ],
            axis=-1,
        )
        # egocentric window of the density grid (zero outside the sea)
        h = w // 2
        padded = jnp.pad(grid, h)
        cell = jnp.clip(jnp.floor(pos / size * self.grid).astype(jnp.int32), 0, self.grid - 1)
        window = jax.vmap(lambda c: jax.lax.dynamic_slice(padded, (c[1], c[0]), (w, w)))(cell)
        window = window.reshape(n, -1) / 4.0
        # nearest vessels and the signals in range
        rel = pos[None, :, :] - pos[:, None, :]  # [N, N, 2] other - self
        dist = jnp.linalg.norm(rel, axis=-1) + jnp.eye(n) * 1e9
        in_range = dist < self.comm_range
        heard = in_range & state.signal[None, :] & self.communication
        k = self.k
        blocks = [own, window]
        if k > 0:
            _, idx = jax.lax.top_k(-dist, k)
            take = jnp.arange(n)[:, None]
            nb = jnp.concatenate(
                [
                    rel[take, idx] / size,
                    (dist[take, idx] / size)[..., None],
                    jnp.cos(state.heading)[idx][..., None],
                    jnp.sin(state.heading)[idx][..., None],
                    in_range[take, idx][..., None],
                    heard[take, idx][..., None],
                ],
                axis=-1,
            )
            blocks.append(nb.reshape(n, -1))
        if self.neighbour_slots > k:  # fewer vessels than slots: the rest stay zero
            blocks.append(jnp.zeros((n, NEIGHBOUR_FEATURES * (self.neighbour_slots - k))))
        count = jnp.sum(in_range, axis=1)
        blocks.append(
            jnp.stack([jnp.sum(heard, axis=1) / jnp.maximum(count, 1), count / n], axis=-1)
        )
        return jnp.concatenate([b.astype(jnp.float32) for b in blocks], axis=-1)

    def _global_state(self, state: CleanupState, grid: Array, steps: Array) -> Array:
        hold = state.hold / self.hold_capacity if self.hold_capacity > 0 else 0.0 * state.speed
        vessels = jnp.concatenate(
            [
                state.pos / self.size,
                jnp.cos(state.heading)[:, None],
                jnp.sin(state.heading)[:, None],
                (state.speed / self.max_speed)[:, None],
                jnp.asarray(hold, jnp.float32)[:, None],
            ],
            axis=-1,
        )
        tail = jnp.stack(
            [
                steps / self.spec.episode_limit,
                jnp.sum(state.alive) / self.capacity,
                jnp.sum(state.catch) / self.capacity,
            ]
        )
        return jnp.concatenate([vessels.ravel(), grid.ravel() / 4.0, tail]).astype(jnp.float32)
