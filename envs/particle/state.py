"""`ParticleState`: what a particle world is at one step (entities on a leading axis)."""

from __future__ import annotations

import jax
from flax import struct


class ParticleState(struct.PyTreeNode):
    """State of a particle world (E entities = N agents then L landmarks).

    pos:  [E, 2] positions.
    vel:  [E, 2] velocities.
    comm: [N, dim_c] the words agents said on the last step (zeros after reset).
    task: dict of int32 arrays the scenario draws at reset (goal landmark indices, keys).
    t:    [] int32 steps taken in this episode.
    """

    pos: jax.Array
    vel: jax.Array
    comm: jax.Array
    task: dict[str, jax.Array]
    t: jax.Array
