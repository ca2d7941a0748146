"""Placing a run's state over devices: its seeds where they divide over the devices
(`marl.learning.training.seed_sharding`), else one seed's batch of environments.

A learner's state holds its parallel environments on the axis after the seeds
(`Train.num_envs`: leaves `[seeds, num_envs, ...]`: env states, observations, recurrent
carries). Split on that axis, the compiled update runs data-parallel under XLA's SPMD
partitioner: each device steps and acts in its share of the environments, and the reductions
over the batch (losses, gradients, statistics) become all-reduces across the devices. A
placement changes where the work runs, never what it computes: results equal the one-device
run up to the order of floating-point sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

ENV_AXIS = "envs"


def envs_divide(num_envs: int, devices: int) -> bool:
    """Whether a seed's `num_envs` environments split evenly over `devices` (2 or more)."""
    return devices >= 2 and num_envs >= devices and num_envs % devices == 0


def env_sharding(
    num_envs: int, devices: Sequence[jax.Device], log: Callable[[str], None] = print
) -> Callable[[Any], Any] | None:
    """A function placing a run's state with its `num_envs` environments split over
    `devices` (leaves `[seeds, num_envs, ...]`; the rest replicated), or None where they do
    not divide."""
    devices = list(devices)
    if not envs_divide(num_envs, len(devices)):
        return None
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), (ENV_AXIS,))
    split = NamedSharding(mesh, PartitionSpec(None, ENV_AXIS))
    whole = NamedSharding(mesh, PartitionSpec())
    log(f"{num_envs} envs of each seed split over {len(devices)} devices ({devices[0].platform})")

    def where(x: Any) -> Any:
        return split if x.ndim >= 2 and x.shape[1] == num_envs else whole

    def place(tree: Any) -> Any:
        shardings = jax.tree.map(where, tree)
        return jax.jit(lambda t: t, out_shardings=shardings)(tree)

    return place
