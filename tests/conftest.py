import os
import sys

# tests import their helpers (mpe_reference) as plain modules
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# Test programs are tiny and compiled once: compile time dominates the suite, and LLVM's
# optimisation passes are most of it. Level 0 changes code generation only (XLA's own graph
# passes still run), so results agree; benchmarks and the CLI keep XLA's default.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
    ).strip()

from marl.learning.xla import configure_xla  # noqa: E402

configure_xla()  # before any test initialises a JAX backend


def pytest_configure(config):
    """One persistent XLA compilation cache per test process: tests that train the same tiny
    program twice (determinism, resume, sweeps) compile it once. Results do not depend on it."""
    import tempfile

    import jax

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    cache = tempfile.mkdtemp(prefix=f"marl-xla-cache-{worker}-")
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
