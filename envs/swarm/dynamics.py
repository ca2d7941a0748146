"""How a `Swarm` moves, each dynamics a frozen dataclass called with a key, the state, the
controls in [-1, 1] and the cell grid: aggregating walkers (`AggregationDynamics`),
self-propelled Vicsek particles (`VicsekDynamics`) or locally coupled Kuramoto oscillators
(`KuramotoDynamics`). Each also reads its controls from the actions (`controls`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .field import Grid, turned, unit_vectors
from .state import SIZE, SwarmState, wrap_angle

Array = jax.Array

LEVELS = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32)  # discrete controls, 1-d tasks
MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float32)  # aggregation


@dataclass(frozen=True)
class SwarmDynamics:
    """The base of the dynamics: `control_dim` controls per agent, read from Discrete(5)
    actions (the levels -1, -1/2, 0, 1/2, 1) or from a Box in [-1, 1]."""

    control_dim: ClassVar[int] = 1

    def controls(self, actions: Array, discrete: bool) -> Array:
        """[N, control_dim] in [-1, 1] from the actions."""
        if not discrete:
            return jnp.clip(actions.reshape(actions.shape[0], self.control_dim), -1.0, 1.0)
        table = MOVES if self.control_dim == 2 else LEVELS[:, None]
        return jnp.asarray(table)[actions.astype(jnp.int32)]

    def __call__(self, key: Array, state: SwarmState, u: Array, grid: Grid) -> SwarmState:
        """The next state under controls `u` [N, control_dim]."""
        raise NotImplementedError


@dataclass(frozen=True)
class AggregationDynamics(SwarmDynamics):
    """Agents move by `speed` per step (stay or one of four directions; continuously, a
    velocity in the unit disc) plus Gaussian noise of std `noise`."""

    speed: float = 0.02
    noise: float = 0.002
    control_dim: ClassVar[int] = 2

    def __post_init__(self) -> None:
        if not (self.speed >= 0.0 and self.noise >= 0.0):
            raise ValueError("speed and noise must be >= 0")

    def controls(self, actions: Array, discrete: bool) -> Array:
        u = super().controls(actions, discrete)
        if discrete:
            return u
        norm = jnp.linalg.norm(u, axis=-1, keepdims=True)
        return u / jnp.maximum(norm, 1.0)  # a velocity in the unit disc

    def __call__(self, key: Array, state: SwarmState, u: Array, grid: Grid) -> SwarmState:
        step = self.speed * u + self.noise * jax.random.normal(key, u.shape)
        return state.replace(pos=jnp.remainder(state.pos + step, SIZE))


@dataclass(frozen=True)
class VicsekDynamics(SwarmDynamics):
    """Self-propelled agents move at `speed` along their heading; each turns by its control
    times `max_turn` per step, plus Gaussian noise of std `noise`."""

    speed: float = 0.02
    max_turn: float = math.pi / 8
    noise: float = 0.1

    def __post_init__(self) -> None:
        if not (self.speed >= 0.0 and self.max_turn >= 0.0 and self.noise >= 0.0):
            raise ValueError("speed, max_turn, noise >= 0")

    def __call__(self, key: Array, state: SwarmState, u: Array, grid: Grid) -> SwarmState:
        n = state.pos.shape[0]
        turn = u[:, 0] * self.max_turn + self.noise * jax.random.normal(key, (n,))
        heading = wrap_angle(state.angle + turn)
        step = self.speed * jnp.stack([jnp.cos(heading), jnp.sin(heading)], -1)
        return state.replace(pos=jnp.remainder(state.pos + step, SIZE), angle=heading)


@dataclass(frozen=True)
class KuramotoDynamics(SwarmDynamics):
    """Oscillators whose phase advances by `dt * (omega + max_control * u + coupling *
    mean_{window} sin(phase_j - phase))` plus Gaussian noise of std `noise` (the coupling is
    local: the grid window's oscillators); they stay in place, or diffuse with std
    `diffusion` per step."""

    coupling: float = 0.5
    max_control: float = 1.5
    dt: float = 0.1
    noise: float = 0.05
    diffusion: float = 0.0

    def __post_init__(self) -> None:
        if not (self.dt > 0.0 and self.noise >= 0.0 and self.diffusion >= 0.0):
            raise ValueError("dt > 0, noise and diffusion >= 0")

    def local_pull(self, state: SwarmState, grid: Grid) -> Array:
        """[N] mean over the window's other oscillators of sin(phase_j - phase_i)."""
        n, cells = state.pos.shape[0], grid.cells
        win = turned(grid.windows(state.pos, unit_vectors(state.angle)), state.angle)
        count = jnp.sum(win[..., 0], axis=1) * n / cells**2 - 1.0  # undo the mean-field scale
        pull = jnp.sum(win[..., 2], axis=1) * n / cells**2  # the own term is sin 0
        return jnp.where(count > 0, pull / jnp.maximum(count, 1.0), 0.0)

    def __call__(self, key: Array, state: SwarmState, u: Array, grid: Grid) -> SwarmState:
        k_noise, k_walk = jax.random.split(key)
        n = state.pos.shape[0]
        pull = self.local_pull(state, grid)
        rate = state.omega + self.max_control * u[:, 0] + self.coupling * pull
        noise = self.noise * jax.random.normal(k_noise, (n,))
        phase = wrap_angle(state.angle + self.dt * rate + noise)
        pos = state.pos
        if self.diffusion > 0.0:
            walk = self.diffusion * jax.random.normal(k_walk, pos.shape)
            pos = jnp.remainder(pos + walk, SIZE)
        return state.replace(pos=pos, angle=phase)
