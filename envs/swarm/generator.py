"""The start of a `Swarm` episode, each generator a frozen dataclass called with a key: agents
at uniform places on the unit torus (`Scatter`), with uniform headings (`Headings`) or with
uniform phases and natural frequencies (`Oscillators`)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .state import SIZE, SwarmState

Array = jax.Array


@dataclass(frozen=True)
class Scatter:
    """`num_agents` agents at uniform places, without angles (aggregation)."""

    num_agents: int = 100

    def __post_init__(self) -> None:
        if self.num_agents < 2:
            raise ValueError(f"num_agents must be >= 2, got {self.num_agents}")

    def __call__(self, key: Array) -> SwarmState:
        n = self.num_agents
        pos = jax.random.uniform(key, (n, 2), maxval=SIZE)
        return SwarmState(pos=pos, angle=jnp.zeros(n), omega=jnp.zeros(n), t=_zero())


@dataclass(frozen=True)
class Headings(Scatter):
    """`num_agents` agents at uniform places and headings (Vicsek)."""

    def __call__(self, key: Array) -> SwarmState:
        k_pos, k_head = jax.random.split(key)
        n = self.num_agents
        return SwarmState(
            pos=jax.random.uniform(k_pos, (n, 2), maxval=SIZE),
            angle=jax.random.uniform(k_head, (n,), minval=-jnp.pi, maxval=jnp.pi),
            omega=jnp.zeros(n),
            t=_zero(),
        )


@dataclass(frozen=True)
class Oscillators(Scatter):
    """`num_agents` oscillators at uniform places and phases, each with a natural frequency
    drawn from N(0, omega_std^2) (Kuramoto)."""

    omega_std: float = 1.0

    def __post_init__(self) -> None:
        if not self.omega_std > 0.0:
            raise ValueError(f"omega_std must be > 0, got {self.omega_std}")
        super().__post_init__()

    def __call__(self, key: Array) -> SwarmState:
        k_pos, k_phase, k_omega = jax.random.split(key, 3)
        n = self.num_agents
        return SwarmState(
            pos=jax.random.uniform(k_pos, (n, 2), maxval=SIZE),
            angle=jax.random.uniform(k_phase, (n,), minval=-jnp.pi, maxval=jnp.pi),
            omega=self.omega_std * jax.random.normal(k_omega, (n,)),
            t=_zero(),
        )


def _zero() -> Array:
    return jnp.zeros((), jnp.int32)
