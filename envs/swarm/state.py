"""The state of a `Swarm`: agents on the unit torus."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array

SIZE = 1.0  # the side of the torus


class SwarmState(struct.PyTreeNode):
    pos: Array  # [N, 2] in [0, size)^2
    angle: Array  # [N] heading (Vicsek) or phase (Kuramoto), radians; zeros (aggregation)
    omega: Array  # [N] natural frequency (Kuramoto); zeros otherwise
    t: Array  # [] int32


def wrap_angle(a: Array) -> Array:
    """`a` in [-pi, pi)."""
    return jnp.remainder(a + jnp.pi, 2 * jnp.pi) - jnp.pi
