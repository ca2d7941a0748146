"""What a `Cleanup` vessel is paid (`CleanupReward`)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

Array = jax.Array


@dataclass(frozen=True)
class CleanupReward:
    """Each vessel's reward: `(1 - alpha) * own catch + alpha * team catch / N` (0: each for
    itself, the paper's; 1: fully shared), minus `collision_penalty` in a step it collides."""

    alpha: float = 0.0
    collision_penalty: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")

    @property
    def shared(self) -> bool:
        """Every vessel is paid the same (`alpha` 1)."""
        return self.alpha == 1.0

    def __call__(self, got: Array, collided: Array) -> Array:
        """[N] float32 from the pieces each vessel collected this step [N] and its collisions
        [N]."""
        own = got.astype(jnp.float32)
        reward = (1.0 - self.alpha) * own + self.alpha * jnp.sum(own) / got.shape[0]
        return (reward - self.collision_penalty * collided).astype(jnp.float32)
