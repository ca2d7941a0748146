"""What a `Swarm` is paid: an order parameter of the whole swarm (the same for every agent)
minus an action cost, each reward a frozen dataclass: `Cohesion` (aggregation),
`Polarisation` (Vicsek alignment) and `Synchrony` (Kuramoto)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp

from .field import Grid
from .state import SwarmState

Array = jax.Array


@dataclass(frozen=True)
class OrderReward:
    """The base of the rewards: the order parameter `name` of the state reached, minus
    `action_cost * mean |u|^2` (u the controls in [-1, 1])."""

    action_cost: float = 0.0
    name: ClassVar[str] = "order"

    def __post_init__(self) -> None:
        if self.action_cost < 0.0:
            raise ValueError(f"action_cost must be >= 0, got {self.action_cost}")

    def order(self, state: SwarmState, grid: Grid) -> Array:
        """[] the order parameter of `state`."""
        raise NotImplementedError

    def __call__(self, order: Array, u: Array) -> Array:
        """[N] every agent's reward for a step to a state of `order` under controls `u`."""
        cost = self.action_cost * jnp.mean(jnp.sum(u**2, axis=-1))
        return jnp.full(u.shape[0], order - cost)


@dataclass(frozen=True)
class Cohesion(OrderReward):
    """The mean over agents of the fraction of the others in its window: 1 when the whole
    swarm fits in one window."""

    name: ClassVar[str] = "cohesion"

    def order(self, state: SwarmState, grid: Grid) -> Array:
        return grid.seen(state.pos)


@dataclass(frozen=True)
class Polarisation(OrderReward):
    """|mean (cos a, sin a)| of the agents' angles: 1 aligned, about 0 disordered."""

    name: ClassVar[str] = "polarisation"

    def order(self, state: SwarmState, grid: Grid) -> Array:
        return jnp.hypot(jnp.mean(jnp.cos(state.angle)), jnp.mean(jnp.sin(state.angle)))


@dataclass(frozen=True)
class Synchrony(Polarisation):
    """Kuramoto's order parameter r = |mean e^{i phase}|: 1 in phase, about 0 disordered."""

    name: ClassVar[str] = "synchrony"
