"""What a particle scenario's reward and observer parts provide (their shared defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp

from .state import ParticleState


@dataclass(frozen=True)
class ParticleReward:
    """A scenario's rewards and task metrics, read off the state a step reached.

    Attributes (of the class): `metric_names` (the keys of `metrics`), `cooperative` (None:
    `EnvSpec`'s default rule), `contest` (a two-sided task `contest_score` scores).
    """

    metric_names: ClassVar[tuple[str, ...]] = ()
    cooperative: ClassVar[bool | None] = None
    contest: ClassVar[bool] = False

    @property
    def shared(self) -> bool:
        """Every agent gets the same reward."""
        return False

    def __call__(self, s: ParticleState) -> jax.Array:
        """[N] rewards after a step into `s`."""
        raise NotImplementedError

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        """Task metrics ([] each) of state `s`."""
        return {}

    def terminal(self, s: ParticleState) -> jax.Array:
        """[] bool: the task has ended (no MPE scenario ends early)."""
        return jnp.zeros((), bool)

    def contest_score(self, episode: dict[str, jax.Array]) -> jax.Array:
        """Contests only: group 0's score in each finished episode."""
        raise NotImplementedError


@dataclass(frozen=True)
class ParticleObserver:
    """A scenario's observations: `obs_sizes` per agent, zero-padded to the widest."""

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        """Each agent's observation width (unpadded)."""
        raise NotImplementedError

    @property
    def obs_dim(self) -> int:
        """The padded observation width."""
        return max(self.obs_sizes)

    def __call__(self, s: ParticleState) -> jax.Array:
        """[N, obs_dim] observations, zero-padded past each agent's size."""
        raise NotImplementedError
