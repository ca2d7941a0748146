"""The dynamics part of `Pathfinding`: how agents move under their commands and contacts."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from . import world
from .state import PathfindingState

Array = jax.Array

GUARD = 0.5  # centres keep at least half a radius from obstacle cells (`world.keep_out`)

DYNAMICS = ("holonomic", "diffdrive", "mixed")
# discrete actions: holonomic (ux, uy) and differential drive (linear, angular) commands
HOLONOMIC_ACTIONS = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float32)
DIFFDRIVE_ACTIONS = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float32)


@dataclass(frozen=True)
class Dynamics:
    """Agents' motion (CAMAR's): "holonomic" (`v <- (1 - damping) v + (accel u + F) dt`,
    clipped to `max_speed`), "diffdrive" (commanded linear speed `max_speed * u[0]` along the
    heading, turning `max_turn * u[1]` rad / s, contacts pushing) or "mixed" (the first
    `round(diffdrive_fraction * N)` agents differential drive, the rest holonomic). Each env
    step is `substeps` physics steps of `dt` seconds; contacts are soft (`contact_stiffness`,
    `contact_margin`, `world.penalty`), and a positional guard keeps every centre `GUARD`
    radius out of obstacle cells (`world.keep_out`)."""

    kind: str = "holonomic"
    diffdrive_fraction: float = 0.5
    dt: float = 0.05
    substeps: int = 2
    accel: float = 15.0
    damping: float = 0.1
    max_speed: float = 3.0
    max_turn: float = 4.0
    contact_stiffness: float = 500.0
    contact_margin: float = 0.01

    def __post_init__(self) -> None:
        if self.kind not in DYNAMICS:
            raise ValueError(f"unknown dynamics {self.kind!r}; valid: {', '.join(DYNAMICS)}")

    def diffdrive(self, num_agents: int) -> np.ndarray:
        """[N] bool: which agents drive differentially."""
        count = {
            "holonomic": 0,
            "diffdrive": num_agents,
            "mixed": int(round(self.diffdrive_fraction * num_agents)),
        }[self.kind]
        return np.arange(num_agents) < count

    def velocity(
        self, vel: Array, heading: Array, u: Array, force: Array, diffdrive: np.ndarray
    ) -> tuple[Array, Array]:
        """(velocity [N, 2], heading [N]) after one physics step under commands u [N, 2] and
        contact forces [N, 2], every speed limited to `max_speed`."""
        dt = self.dt
        # holonomic: damped, force-driven, speed-limited (CAMAR's HolonomicDynamic)
        v_h = (1.0 - self.damping) * vel + (self.accel * u + force) * dt
        speed = jnp.linalg.norm(v_h, axis=-1, keepdims=True)
        v_h = v_h * jnp.minimum(1.0, self.max_speed / jnp.maximum(speed, 1e-9))
        # differential drive: commanded speeds along the heading, contacts push (CAMAR's)
        heading = heading + jnp.where(diffdrive, self.max_turn * u[:, 1] * dt, 0.0)
        heading = jnp.remainder(heading + jnp.pi, 2 * jnp.pi) - jnp.pi
        along = jnp.stack([jnp.cos(heading), jnp.sin(heading)], axis=-1)
        v_d = self.max_speed * u[:, :1] * along + force * dt
        vel = jnp.where(jnp.asarray(diffdrive)[:, None], v_d, v_h)
        speed = jnp.linalg.norm(vel, axis=-1, keepdims=True)
        vel = vel * jnp.minimum(1.0, self.max_speed / jnp.maximum(speed, 1e-9))
        return vel, heading

    def commands(self, actions: Array, discrete: bool) -> Array:
        """Commands u [N, 2] in [-1, 1] from actions: a row of `HOLONOMIC_ACTIONS` or
        `DIFFDRIVE_ACTIONS` per agent (discrete, int32 [N]) or the clipped Box actions."""
        if discrete:
            diffdrive = self.diffdrive(actions.shape[0])
            table = jnp.where(
                jnp.asarray(diffdrive)[:, None, None],
                jnp.asarray(DIFFDRIVE_ACTIONS)[None],
                jnp.asarray(HOLONOMIC_ACTIONS)[None],
            )
            return table[jnp.arange(diffdrive.shape[0]), actions]
        return jnp.clip(actions, -1.0, 1.0)

    def __call__(
        self, state: PathfindingState, u: Array, neighbours: world.Neighbours
    ) -> tuple[PathfindingState, Array]:
        """`state` after one env step (`substeps` physics steps) under commands u [N, 2], and
        [N] bool: each agent in contact at any sub-step. `neighbours` finds the agents that
        may touch."""
        touched = jnp.zeros(state.pos.shape[0], bool)
        for _ in range(int(self.substeps)):
            state, touch = self.substep(state, u, neighbours)
            touched = touched | touch
        return state, touched

    def substep(
        self, state: PathfindingState, u: Array, neighbours: world.Neighbours
    ) -> tuple[PathfindingState, Array]:
        """One physics step of `dt`: contact forces from the obstacle cells and agents around
        each agent, the motion, then the guard; and [N] bool, in contact."""
        pos, vel, radius = state.pos, state.vel, state.radius
        (height, width), pad = state.size, state.pad
        stiffness, margin = float(self.contact_stiffness), float(self.contact_margin)
        rows, cols = world.cell_of(pos, 1.0, height, width)
        lo, occupied = world.nearby_cells(state.obstacles, rows, cols, 1, pad, 1.0)
        f_obs, touch_obs = world.obstacle_force(pos, radius, lo, occupied, 1.0, stiffness, margin)
        idx, valid = neighbours(pos, 1, height, width)
        f_agents, touch_agents, _, _ = world.agent_force(pos, radius, idx, valid, stiffness, margin)
        diffdrive = self.diffdrive(pos.shape[0])
        vel, heading = self.velocity(vel, state.heading, u, f_obs + f_agents, diffdrive)
        pos, vel = world.keep_out(pos + vel * self.dt, vel, GUARD * radius, lo, occupied, 1.0)
        return state.replace(pos=pos, vel=vel, heading=heading), touch_obs | touch_agents
