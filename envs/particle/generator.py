"""The particle start: `Scatter`, a scenario's world, its agents' roster and where and what an
episode starts with (entities drawn uniformly, task indices drawn at random)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import AgentGroup

from .state import ParticleState
from .world import World


@dataclass(frozen=True)
class Draw:
    """A task entry drawn at reset: `name` uniform in [0, high) of `shape` (int32)."""

    name: str
    high: int
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class Scatter:
    """A scenario's world and its start (mpe2's `reset_world`).

    Attributes:
        world: the entities' static properties (`World`).
        agent_names: one name per agent.
        groups: the agent groups (teams).
        arena: entities start uniform in [-arena, arena]^2.
        landmark_arena: None, or landmarks start in [-landmark_arena, landmark_arena]^2 (and
            the agents in the arena) from keys of their own.
        draws: the task entries drawn at reset (goal landmarks, keys), each from a key of its
            own, split off before the positions'.
    """

    world: World
    agent_names: tuple[str, ...]
    groups: tuple[AgentGroup, ...]
    arena: float = 1.0
    landmark_arena: float | None = None
    draws: tuple[Draw, ...] = ()

    def sample(self, key: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        """Entity positions [E, 2] and the task dict of a new episode."""
        task = {}
        if self.draws:
            *keys, key = jax.random.split(key, len(self.draws) + 1)
            for k, draw in zip(keys, self.draws, strict=True):
                task[draw.name] = jax.random.randint(k, draw.shape, 0, draw.high)
        w = self.world
        if self.landmark_arena is None:
            shape = (w.num_entities, 2)
            return jax.random.uniform(key, shape, minval=-self.arena, maxval=self.arena), task
        k_agents, k_landmarks = jax.random.split(key)
        agents = jax.random.uniform(
            k_agents, (w.num_agents, 2), minval=-self.arena, maxval=self.arena
        )
        reach = self.landmark_arena
        landmarks = jax.random.uniform(
            k_landmarks, (w.num_landmarks, 2), minval=-reach, maxval=reach
        )
        return jnp.concatenate([agents, landmarks]), task

    def start(self, pos: jax.Array, task: dict[str, Any]) -> ParticleState:
        """A state at t=0 with entities at `pos` [E, 2], at rest, silent."""
        pos = jnp.asarray(pos)
        return ParticleState(
            pos=pos,
            vel=jnp.zeros_like(pos),
            comm=jnp.zeros((self.world.num_agents, self.world.dim_c), pos.dtype),
            task={k: jnp.asarray(v, jnp.int32) for k, v in task.items()},
            t=jnp.zeros((), jnp.int32),
        )

    def __call__(self, key: jax.Array) -> ParticleState:
        """The start of a new episode."""
        return self.start(*self.sample(key))
