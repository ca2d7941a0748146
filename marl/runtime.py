"""Process-level settings for XLA, applied before the first computation.

XLA's CPU backend can deadlock while executing large vmapped programs when its Eigen thread
pool is multi-threaded: every thread parks on a futex while the host waits for a result (seen
here in `marl train`, in JaxMARL's vmapped IPPO, and reported by others). Running Eigen
single-threaded avoids it at a small cost in speed. The flag only concerns the CPU backend;
GPU and TPU runs are unaffected. Set `MARL_XLA_CPU_MULTI_THREAD=1` to keep XLA's default.
"""

from __future__ import annotations

import os

SAFE_CPU_FLAG = "--xla_cpu_multi_thread_eigen=false"


def configure_xla() -> bool:
    """Add the CPU-safety flag to XLA_FLAGS unless disabled; returns whether it is in force.

    Must run before JAX initialises its backends (the CLI and the test suite call it first).
    """
    if os.environ.get("MARL_XLA_CPU_MULTI_THREAD") == "1":
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {SAFE_CPU_FLAG}".strip()
    return SAFE_CPU_FLAG in os.environ["XLA_FLAGS"]
