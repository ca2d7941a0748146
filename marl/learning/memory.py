"""Sizes a run cannot hold, refused before anything is allocated: the training state of every seed
(`seeds=`, `algo.num_envs`, a replay buffer's `algo.buffer_size`) measured from its shapes alone
(`jax.eval_shape`: nothing is computed) against the memory of the devices that would hold it.
A state larger than that would end in an allocation failure deep in XLA, or on a CPU host in
the kernel's out-of-memory killer, which leaves no line at all; this says it in one."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np


def tree_bytes(tree: Any) -> int:
    """Bytes of a pytree of arrays or `jax.ShapeDtypeStruct`s (typed keys count their data)."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        key = jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
        size = 8 if key else np.dtype(leaf.dtype).itemsize  # a threefry key: two uint32 words
        total += int(np.prod(leaf.shape, dtype=np.float64)) * size
    return total


def host_available() -> int | None:
    """Bytes of memory this host can still give (MemAvailable), None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def capacity(devices: Sequence[jax.Device]) -> tuple[int | None, str]:
    """(free bytes of `devices` together, what they are): accelerators report their limit,
    a CPU backend shares the host's memory; None where nothing can be read."""
    free, kinds = 0, set()
    for device in devices:
        kinds.add(device.platform)
        try:
            stats = device.memory_stats()
        except Exception:  # noqa: BLE001 - backends without statistics raise several kinds
            stats = None
        if not stats or "bytes_limit" not in stats:
            host = host_available()
            return host, "this host"
        free += int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    return free, f"{len(devices)} {'/'.join(sorted(kinds))} device(s)"


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def check_run_fits(
    env: Any, train: Any, keys: Any, seeds: int, episodes: int, devices: Sequence[jax.Device]
) -> None:
    """A run's two largest holdings, from shapes alone: every seed's training state (`keys`:
    the seeds' keys or their shapes) and the evaluation's episodes, played all at once
    (`episodes` x `seeds` env states and timesteps); MemoryError (one line) if one cannot fit."""
    state = jax.eval_shape(lambda k: jax.lax.map(train.init, k), keys)
    check_fits(f"the training state of {seeds} seed(s)", tree_bytes(state), devices)
    one = tree_bytes(jax.eval_shape(env.reset, jax.random.key(0)))
    what = f"evaluating {episodes} episodes of each of {seeds} seed(s) at once"
    check_fits(what, one * episodes * seeds, devices)


def check_fits(what: str, tree: Any, devices: Sequence[jax.Device]) -> None:
    """MemoryError (one line) when `tree` (shapes, e.g. from `jax.eval_shape`, or a number of
    bytes) is larger than the free memory of `devices` (this process's share of a multi-host
    run's)."""
    size = tree if isinstance(tree, int) else tree_bytes(tree)
    need = size / max(1, jax.process_count())
    free, where = capacity(devices)
    if free is not None and need > free:
        raise MemoryError(
            f"{what} needs {_size(need)}, more than the {_size(free)} free on {where}"
        )
