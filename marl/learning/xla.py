"""XLA's CPU thread pool, set where marl starts a job (its CLI, `python -m marl.app`, the
scripts), never on `import marl`.

XLA's CPU backend can deadlock while executing large vmapped programs when its Eigen thread
pool is multi-threaded: every thread parks on a futex while the host waits for a result (seen
here in `marl train`, in JaxMARL's vmapped IPPO, and reported by others). Running Eigen
single-threaded avoids it at a small cost in speed. The flag only concerns the CPU backend;
GPU and TPU runs are unaffected. Set `MARL_XLA_CPU_MULTI_THREAD=1` to keep XLA's default.

A program of your own that calls `marl.learning.runner.run` should call `configure_xla()`
before anything starts JAX; the runner warns once when it finds the CPU backend without it.
"""

from __future__ import annotations

import os
import warnings

SAFE_CPU_FLAG = "--xla_cpu_multi_thread_eigen=false"
OPT_OUT = "MARL_XLA_CPU_MULTI_THREAD"


def configure_xla() -> bool:
    """Add the CPU-safety flag to XLA_FLAGS unless disabled; returns whether it is in force.

    Must run before JAX initialises its backends (XLA reads the flags once).
    """
    if os.environ.get(OPT_OUT) == "1":
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {SAFE_CPU_FLAG}".strip()
    return SAFE_CPU_FLAG in os.environ["XLA_FLAGS"]


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
