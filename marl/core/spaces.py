"""Action and observation spaces: gymnax's `Discrete` and `Box`, plus joint-action helpers.

A marl space describes one agent; joint actions stack agents on the leading axis.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces as gymnax_spaces
from gymnax.environments.spaces import Space

__all__ = ["Box", "Discrete", "Space", "sample_actions", "actions_in_space"]


class Discrete(gymnax_spaces.Discrete):
    """gymnax's `Discrete`, with value equality (so equal specs compare equal)."""

    def _key(self) -> tuple:
        return ("Discrete", int(self.n), np.dtype(self.dtype).name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discrete) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class Box(gymnax_spaces.Box):
    """gymnax's `Box`, with value equality (so equal specs compare equal)."""

    def _key(self) -> tuple:
        def bound(x: Any) -> tuple[float, ...]:
            return tuple(np.broadcast_to(np.asarray(x, np.float64), self.shape).ravel().tolist())

        return (
            "Box",
            tuple(self.shape),
            bound(self.low),
            bound(self.high),
            np.dtype(self.dtype).name,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def sample_actions(key: jax.Array, space: Space, avail_actions: jax.Array) -> jax.Array:
    """Uniformly random valid joint action.

    Args:
        key: PRNG key.
        space: the per-agent action space.
        avail_actions: [N, A] bool mask (discrete); for continuous only its leading axis is used.

    Returns:
        int32 [N] (discrete, only available actions) or float32 [N, d] (continuous).
    """
    n = avail_actions.shape[0]
    if isinstance(space, Discrete):
        logits = jnp.where(avail_actions, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
    shape = (n, *space.shape)
    return jax.random.uniform(key, shape, minval=space.low, maxval=space.high).astype(space.dtype)


def actions_in_space(space: Space, actions: jax.Array, avail_actions: jax.Array) -> jax.Array:
    """[] bool: every agent's action lies in the space and, if discrete, is available."""
    if isinstance(space, Discrete):
        in_range = (actions >= 0) & (actions < space.n)
        idx = jnp.clip(actions, 0, space.n - 1)
        chosen = jnp.take_along_axis(avail_actions, idx[:, None], axis=1)[:, 0]
        return jnp.all(in_range & chosen)
    return jnp.all((actions >= space.low) & (actions <= space.high))
