"""How a `Cleanup` ocean moves, each part a frozen dataclass called with the state and the
sea's side: the water (`Current`), the plastic's life (`Drift`: sources, diffusion, the
coast) and the vessels (`Fleet`: steering, pickup, the hold and the port, collisions); and
the actions' layout (`action_space`, `decode`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.spaces import Box, Discrete

from . import ocean
from .state import CleanupState

Array = jax.Array

TURNS = np.array([-1.0, 0.0, 1.0], np.float32)
THROTTLES = np.array([-1.0, 0.0, 1.0], np.float32)


def action_space(discrete: bool, communication: bool) -> Discrete | Box:
    """Discrete(9) (turn left/straight/right x slow/keep/faster), times 2 with communication
    (the bit); else Box(-1, 1, (2,)) (turn, throttle), plus the bit's dimension."""
    if discrete:
        return Discrete(len(TURNS) * len(THROTTLES) * (2 if communication else 1))
    return Box(-1.0, 1.0, (3 if communication else 2,), jnp.float32)


def decode(actions: Array, discrete: bool, communication: bool) -> tuple[Array, Array, Array]:
    """(turn [N] in [-1, 1], throttle [N] in [-1, 1], signal [N] bool) from the actions."""
    if discrete:
        a = actions.astype(jnp.int32)
        base = a % 9
        signal = (a >= 9) & communication
        return jnp.asarray(TURNS)[base // 3], jnp.asarray(THROTTLES)[base % 3], signal
    a = jnp.clip(actions, -1.0, 1.0)
    signal = (a[:, 2] > 0) if communication else jnp.zeros(a.shape[0], bool)
    return a[:, 0], a[:, 1], signal


@dataclass(frozen=True)
class Current:
    """Surface currents (`ocean.current_at`): "calm", "uniform" (`speed` toward `direction`,
    radians), "gyres" (`gyres` = (nx, ny) cells) or "double_gyre" (swaying by `epsilon` at
    angular frequency `omega` per step); the fastest water moves `speed` per step."""

    kind: str = "gyres"
    speed: float = 0.05
    direction: float = 0.0
    gyres: tuple[int, int] = (2, 2)
    epsilon: float = 0.25
    omega: float = 2 * math.pi / 100

    def __post_init__(self) -> None:
        if self.kind not in ocean.CURRENTS:
            raise ValueError(f"unknown current {self.kind!r}; valid: {', '.join(ocean.CURRENTS)}")

    def fields(self, size: float) -> dict:
        """`ocean.current_at`'s keywords on a sea of side `size`."""
        return dict(
            kind=self.kind,
            size=float(size),
            speed=float(self.speed),
            direction=float(self.direction),
            gyres=tuple(int(g) for g in self.gyres),
            epsilon=float(self.epsilon),
            omega=float(self.omega),
        )

    def velocity(self, pos: Array, t: Array, size: float) -> Array:
        """The water's velocity `[..., 2]` (distance per step) at `pos [..., 2]`, step `t`."""
        return ocean.current_at(pos=pos, t=t.astype(jnp.float32), **self.fields(size))


@dataclass(frozen=True)
class Drift:
    """The plastic's life: each source emits a piece with probability `source_rate` per step,
    `source_spread` around it; pieces drift with the current plus a random walk of std
    `diffusion`; pieces leaving the sea are removed (counted) or, without
    `remove_at_boundary`, held at the coast."""

    source_rate: float = 0.3
    source_spread: float = 0.3
    diffusion: float = 0.01
    remove_at_boundary: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.source_rate <= 1.0:
            raise ValueError("source_rate is a probability per step")

    def __call__(
        self, key: Array, state: CleanupState, current: Current, size: float
    ) -> tuple[Array, Array, Array, Array]:
        """The plastic a step later: positions [P, 2], alive [P], and the pieces spawned and
        removed in the step ([] int32 each)."""
        k_src, k_where, k_diff = jax.random.split(key, 3)
        sources = state.sources.shape[0]
        requests = jax.random.uniform(k_src, (sources,)) < self.source_rate
        where = state.sources + self.source_spread * jax.random.normal(k_where, (sources, 2))
        where = ocean.into_sea(where, size)
        alive, plastic, new = ocean.spawn(state.alive, state.plastic, requests, where)
        walk = self.diffusion * jax.random.normal(k_diff, plastic.shape)
        plastic = plastic + (current.velocity(plastic, state.t, size) + walk) * alive[:, None]
        outside = jnp.any((plastic < 0.0) | (plastic > size), axis=-1) & alive
        if self.remove_at_boundary:
            return plastic, alive & ~outside, new, jnp.sum(outside).astype(jnp.int32)
        return jnp.clip(plastic, 0.0, size), alive, new, jnp.zeros((), jnp.int32)


@dataclass(frozen=True)
class Fleet:
    """The vessels: top speed, throttle step and turn per step; carried by the current with
    `drift_vessels`; each picks up the pieces within `collect_radius` (the nearest vessel with
    room takes a piece), holds `hold_capacity` of them (0: unlimited) and unloads within
    `port_radius` of `port`; vessels closer than twice `vessel_radius` collide."""

    max_speed: float = 0.25
    accel: float = 0.05
    max_turn: float = math.pi / 8
    drift_vessels: bool = True
    collect_radius: float = 0.4
    hold_capacity: int = 0
    port: tuple[float, float] = (5.0, 0.0)
    port_radius: float = 1.0
    vessel_radius: float = 0.15

    def sail(
        self, state: CleanupState, turn: Array, throttle: Array, current: Current, size: float
    ) -> tuple[Array, Array, Array]:
        """Positions [N, 2], headings [N] and speeds [N] after a step's `turn` and `throttle`
        ([N] in [-1, 1]), kept at sea."""
        heading = jnp.remainder(state.heading + turn * self.max_turn + jnp.pi, 2 * jnp.pi) - jnp.pi
        speed = jnp.clip(state.speed + throttle * self.accel, 0.0, self.max_speed)
        move = speed[:, None] * jnp.stack([jnp.cos(heading), jnp.sin(heading)], -1)
        if self.drift_vessels:
            move = move + current.velocity(state.pos, state.t, size)
        return jnp.clip(state.pos + move, 0.0, size), heading, speed

    def collect(
        self, state: CleanupState, pos: Array, plastic: Array, alive: Array
    ) -> tuple[Array, Array, Array, Array]:
        """Vessels at `pos` pick up the pieces in reach (each goes to the nearest vessel with
        room) and unload at the port: the pieces each took [N], the plastic alive [P], the
        holds [N] and the pieces delivered ([] int32)."""
        d2 = ocean.squared_distances(plastic, pos)  # [P, N]
        unlimited = self.hold_capacity <= 0
        room = (
            jnp.full(pos.shape[0], 2**30, jnp.int32)
            if unlimited
            else self.hold_capacity - state.hold
        )
        reach = (d2 < self.collect_radius**2) & alive[:, None] & (room > 0)[None, :]
        taken = ocean.nearest_claims(jnp.where(reach, d2, jnp.inf), reach).astype(jnp.int32)
        if not unlimited:  # a hold fills up: pieces beyond its room stay afloat
            rank = jnp.cumsum(taken, axis=0) - taken  # pieces claimed before this one
            taken = taken * (rank < room[None, :])
        got = jnp.sum(taken, axis=0)
        hold = state.hold + got
        alive = alive & ~jnp.any(taken > 0, axis=1)
        if unlimited:
            return got, alive, hold, jnp.zeros((), jnp.int32)
        port = jnp.asarray(self.port, jnp.float32)
        at_port = jnp.linalg.norm(pos - port, axis=-1) < self.port_radius
        delivered = jnp.sum(jnp.where(at_port, hold, 0)).astype(jnp.int32)
        return got, alive, jnp.where(at_port, 0, hold), delivered

    def collisions(self, pos: Array) -> Array:
        """[N] bool: vessels closer than twice `vessel_radius` to another."""
        gap = jnp.linalg.norm(pos[:, None] - pos[None], axis=-1) + jnp.eye(pos.shape[0]) * 1e9
        return jnp.any(gap < 2 * self.vessel_radius, axis=1)
