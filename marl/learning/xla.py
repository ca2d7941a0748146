"""XLA's CPU thread pool, set where marl starts a job (its CLI, `python -m marl.app`, the
scripts), never on `import marl`.

XLA's CPU backend can deadlock while executing large vmapped programs when its Eigen thread
pool is multi-threaded: every thread parks on a futex while the host waits for a result (seen
here in `marl train`, in JaxMARL's vmapped IPPO, and reported by others). Running Eigen
single-threaded avoids it at a small cost in speed. The flag only concerns the CPU backend;
GPU and TPU runs are unaffected. Set `MARL_XLA_CPU_MULTI_THREAD=1` to keep XLA's default.

Second, a speed setting: on the jaxlib releases named in `YNN_RELEASES`, XLA's CPU backend
hands element-wise and reduction fusions to YNNPACK, which ran small ones (combat's pairwise
sums over units, 8 envs x 128 x 128, inside the sub-step scan) at under 0.1 GFLOP/s: 1.6 ms a
call, half of a battle64 learner's update. `configure_xla` keeps YNNPACK for what it does well,
dots, with `YNN_FLAG`, on those releases only (XLA aborts on a flag it does not know).
`scripts/xla_cpu_flags.py` measures learner updates with and without it.

A program of your own that calls `marl.learning.training.run` should call `configure_xla()`
before anything starts JAX; the runner warns once when it finds the CPU backend without it.
"""

from __future__ import annotations

import os
import warnings
from importlib import metadata

SAFE_CPU_FLAG = "--xla_cpu_multi_thread_eigen=false"
OPT_OUT = "MARL_XLA_CPU_MULTI_THREAD"
YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=dot"
YNN_RELEASES = ((0, 10),)  # jaxlib (major, minor) releases measured to have flag and slowdown


def _jaxlib_release() -> tuple[int, int] | None:
    try:
        major, minor = metadata.version("jaxlib").split(".")[:2]
        return int(major), int(minor)
    except (metadata.PackageNotFoundError, ValueError):
        return None


def configure_xla() -> bool:
    """Add the CPU-safety flag (and, on `YNN_RELEASES`, `YNN_FLAG`) to XLA_FLAGS unless
    disabled or set by the user; returns whether the safety flag is in force.

    Must run before JAX initialises its backends (XLA reads the flags once).
    """
    if os.environ.get(OPT_OUT) == "1":
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        flags = f"{flags} {SAFE_CPU_FLAG}".strip()
    if "xla_cpu_experimental_ynn_fusion_type" not in flags and _jaxlib_release() in YNN_RELEASES:
        flags = f"{flags} {YNN_FLAG}"
    os.environ["XLA_FLAGS"] = flags
    return SAFE_CPU_FLAG in flags


class CPUThreadingWarning(UserWarning):
    """The CPU backend runs with XLA's multi-threaded Eigen pool (see `configure_xla`)."""


_warned = False


def warn_if_unsafe() -> None:
    """Warn once when JAX's CPU backend runs without the flag and without the opt-out."""
    global _warned
    import jax

    if _warned or os.environ.get(OPT_OUT) == "1" or jax.default_backend() != "cpu":
        return
    if "xla_cpu_multi_thread_eigen" in os.environ.get("XLA_FLAGS", ""):
        return
    _warned = True
    warnings.warn(
        "XLA's multi-threaded CPU pool can deadlock large vmapped programs: call "
        "marl.learning.xla.configure_xla() before JAX starts (marl's CLI does), or set "
        f"{OPT_OUT}=1 to keep XLA's default",
        CPUThreadingWarning,
        stacklevel=3,
    )
