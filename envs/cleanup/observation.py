"""What `Cleanup` vessels observe (`Observer`): their own features, the density window, the
nearest vessels and the signals in range; the global state and the metrics."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace

import jax
import jax.numpy as jnp

from marl.core.env import TimeStep

from . import ocean
from .dynamics import Current, Fleet
from .state import CleanupState

Array = jax.Array

METRICS = (
    "collected_fraction",
    "collected",
    "spawned",
    "floating",
    "removed",
    "catch_per_vessel",
    "gini",
    "collisions_per_vessel",
    "delivered",
)
OWN_FEATURES = 11  # x, y, heading cos/sin, speed, hold, current (2), port offset (2), t
NEIGHBOUR_FEATURES = 7  # dx, dy, distance, heading cos/sin, in range, signal
SIGNAL_FEATURES = 2  # mean signal of the vessels in range, their count / N


@dataclass(frozen=True)
class Observer:
    """What a vessel sees: the plastic density on a `grid` x `grid` grid, through a `window` x
    `window` egocentric window (odd), its `neighbours` nearest vessels, and the one-bit signals
    of the vessels within `comm_range` (sent only with `communication`).

    The keyword-only fields are the ocean it normalises by (the sea's `size`, the
    `episode_limit`, the actions, the vessels' `max_speed`, `hold_capacity` and `port`, the
    `current`): `Cleanup` fills them in from its other parts (`fitted`).
    """

    grid: int = 16
    window: int = 5
    neighbours: int = 3
    communication: bool = True
    comm_range: float = 4.0
    _: KW_ONLY
    size: float = 10.0
    episode_limit: int = 200
    action_dim: int = 18
    max_speed: float = 0.25
    hold_capacity: int = 0
    port: tuple[float, float] = (5.0, 0.0)
    current: Current = Current()

    def __post_init__(self) -> None:
        if not (self.window % 2 == 1 and self.window >= 1):
            raise ValueError(f"window must be odd, got {self.window}")

    def fitted(
        self, size: float, episode_limit: int, action_dim: int, fleet: Fleet, current: Current
    ) -> Observer:
        """This observer on an ocean of side `size` sailed by `fleet` in `current`."""
        return replace(
            self,
            size=float(size),
            episode_limit=int(episode_limit),
            action_dim=int(action_dim),
            max_speed=float(fleet.max_speed),
            hold_capacity=int(fleet.hold_capacity),
            port=(float(fleet.port[0]), float(fleet.port[1])),
            current=current,
        )

    @property
    def obs_dim(self) -> int:
        return (
            OWN_FEATURES + self.window**2 + NEIGHBOUR_FEATURES * self.neighbours + SIGNAL_FEATURES
        )

    def state_dim(self, num_vessels: int) -> int:
        return 6 * num_vessels + self.grid**2 + 3

    def __call__(self, state: CleanupState, reward: Array, steps: Array) -> TimeStep:
        """The TimeStep of `state` after `steps` steps, paying `reward` [N]."""
        n = state.pos.shape[0]
        grid = ocean.density(state.plastic, state.alive, self.size, self.grid)
        return TimeStep(
            obs=self.observe(state, grid, steps),
            state=self.global_state(state, grid, steps),
            avail_actions=jnp.ones((n, self.action_dim), bool),
            reward=reward,
            terminated=jnp.zeros((), bool),
            truncated=jnp.zeros((), bool),
            alive=jnp.ones(n, bool),
            metrics=self.metrics(state),
        )

    def metrics(self, state: CleanupState) -> dict[str, Array]:
        """The episode so far ([] float32 each; `Cleanup`'s docstring names them)."""
        collected = jnp.sum(state.catch)
        catch = state.catch.astype(jnp.float32)
        metrics = {
            "collected_fraction": collected / jnp.maximum(state.spawned, 1),
            "collected": collected,
            "spawned": state.spawned,
            "floating": jnp.sum(state.alive),
            "removed": state.removed,
            "catch_per_vessel": jnp.mean(catch),
            "gini": ocean.gini(catch),
            "collisions_per_vessel": jnp.mean(state.collisions.astype(jnp.float32)),
            "delivered": state.delivered,
        }
        return {k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()}

    def _hold(self, state: CleanupState) -> Array:
        """[N] each hold's fill (0 without a `hold_capacity`)."""
        if self.hold_capacity > 0:
            return state.hold / self.hold_capacity
        return jnp.zeros(state.speed.shape)

    def own(self, state: CleanupState, steps: Array) -> Array:
        """[N, OWN_FEATURES]: position, heading, speed, hold, the water, the port, the time."""
        n, pos = state.pos.shape[0], state.pos
        water = self.current.velocity(pos, steps, self.size) / max(self.current.speed, 1e-6)
        features = [
            pos / self.size,
            jnp.cos(state.heading)[:, None],
            jnp.sin(state.heading)[:, None],
            (state.speed / self.max_speed)[:, None],
            self._hold(state).astype(jnp.float32)[:, None],
            water,
            (jnp.asarray(self.port, jnp.float32) - pos) / self.size,
            jnp.broadcast_to(steps / self.episode_limit, (n, 1)),
        ]
        return jnp.concatenate(features, axis=-1)

    def window_of(self, pos: Array, grid: Array) -> Array:
        """[N, window^2]: the density cells around each vessel's (zero outside the sea)."""
        w, h = self.window, self.window // 2
        padded = jnp.pad(grid, h)
        cell = jnp.clip(jnp.floor(pos / self.size * self.grid).astype(jnp.int32), 0, self.grid - 1)
        cut = jax.vmap(lambda c: jax.lax.dynamic_slice(padded, (c[1], c[0]), (w, w)))(cell)
        return cut.reshape(pos.shape[0], -1) / 4.0

    def observe(self, state: CleanupState, grid: Array, steps: Array) -> Array:
        """[N, obs_dim]: own features, the window, the nearest vessels, the signals heard."""
        n, pos = state.pos.shape[0], state.pos
        rel = pos[None, :, :] - pos[:, None, :]  # [N, N, 2] other - self
        dist = jnp.linalg.norm(rel, axis=-1) + jnp.eye(n) * 1e9
        in_range = dist < self.comm_range
        heard = in_range & state.signal[None, :] & self.communication
        k = min(self.neighbours, n - 1)
        blocks = [self.own(state, steps), self.window_of(pos, grid)]
        if k > 0:
            _, idx = jax.lax.top_k(-dist, k)
            take = jnp.arange(n)[:, None]
            nearest = [
                rel[take, idx] / self.size,
                (dist[take, idx] / self.size)[..., None],
                jnp.cos(state.heading)[idx][..., None],
                jnp.sin(state.heading)[idx][..., None],
                in_range[take, idx][..., None],
                heard[take, idx][..., None],
            ]
            blocks.append(jnp.concatenate(nearest, axis=-1).reshape(n, -1))
        if self.neighbours > k:  # fewer vessels than slots: the rest stay zero
            blocks.append(jnp.zeros((n, NEIGHBOUR_FEATURES * (self.neighbours - k))))
        count = jnp.sum(in_range, axis=1)
        signals = [jnp.sum(heard, axis=1) / jnp.maximum(count, 1), count / n]
        blocks.append(jnp.stack(signals, axis=-1))
        return jnp.concatenate([b.astype(jnp.float32) for b in blocks], axis=-1)

    def global_state(self, state: CleanupState, grid: Array, steps: Array) -> Array:
        """[state_dim]: each vessel's position, heading, speed and hold; the density grid;
        t / limit, floating and collected / capacity."""
        capacity = state.alive.shape[0]
        vessels = [
            state.pos / self.size,
            jnp.cos(state.heading)[:, None],
            jnp.sin(state.heading)[:, None],
            (state.speed / self.max_speed)[:, None],
            jnp.asarray(self._hold(state), jnp.float32)[:, None],
        ]
        tail = [
            steps / self.episode_limit,
            jnp.sum(state.alive) / capacity,
            jnp.sum(state.catch) / capacity,
        ]
        rows = jnp.concatenate(vessels, axis=-1).ravel()
        return jnp.concatenate([rows, grid.ravel() / 4.0, jnp.stack(tail)]).astype(jnp.float32)
