"""The dynamics part of `Pathfinding`: how agents move under their commands and contacts."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

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
    `contact_margin`, `world.penalty`)."""

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

    def commands(self, actions: Array, discrete: bool, diffdrive: np.ndarray) -> Array:
        """Commands u [N, 2] in [-1, 1] from actions: a row of `HOLONOMIC_ACTIONS` or
        `DIFFDRIVE_ACTIONS` per agent (discrete, int32 [N]) or the clipped Box actions."""
        if discrete:
            table = jnp.where(
                jnp.asarray(diffdrive)[:, None, None],
                jnp.asarray(DIFFDRIVE_ACTIONS)[None],
                jnp.asarray(HOLONOMIC_ACTIONS)[None],
            )
            return table[jnp.arange(diffdrive.shape[0]), actions]
        return jnp.clip(actions, -1.0, 1.0)
