"""The state of a `Cleanup` ocean."""

from __future__ import annotations

import jax
from flax import struct

Array = jax.Array


class CleanupState(struct.PyTreeNode):
    """One ocean: N vessels, P plastic slots, S sources."""

    pos: Array  # [N, 2]
    heading: Array  # [N] radians
    speed: Array  # [N] distance per step
    hold: Array  # [N] int32 pieces aboard (emptied at the port)
    signal: Array  # [N] bool, emitted last step
    catch: Array  # [N] int32 pieces collected this episode
    collisions: Array  # [N] int32 steps in collision this episode
    plastic: Array  # [P, 2]
    alive: Array  # [P] bool
    sources: Array  # [S, 2]
    spawned: Array  # [] int32 pieces put into the sea this episode (initial patches included)
    removed: Array  # [] int32 pieces that left the sea
    delivered: Array  # [] int32 pieces unloaded at the port
    t: Array  # [] int32
