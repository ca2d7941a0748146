import os
import sys

# tests import their helpers (mpe_reference) as plain modules
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# an unexpected exception in `marl.cli.main` propagates (a test sees it) instead of its line
os.environ.setdefault("MARL_TRACEBACK", "1")
# Test programs are tiny and compiled once: compile time dominates the suite. Two code
# generation flags cut it by about a third: LLVM's optimisation level 0 (its passes were most
# of it) and XLA's older elemental emitters in place of its fusion emitters (which spend longer
# per fusion). Both change generated code only, within floating point (a division may become a
# multiplication by the reciprocal): code that must read the same to the last bit states its
# compilation (`marl.core.testing.FINGERPRINT_CODEGEN`). Benchmarks and the CLI keep XLA's
# defaults; a flag already in XLA_FLAGS is left as it is.
TEST_CODEGEN = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
for flag in TEST_CODEGEN:
    if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()

from marl.learning.xla import configure_xla  # noqa: E402

configure_xla()  # before any test initialises a JAX backend


def one_by_default(ids, default):
    """Parametrize over every id, all but `default` under the slow marker: each check_env
    case compiles a few dozen programs, so the default run checks one representative per
    family and `pytest -m slow` the rest (every registered id)."""
    import pytest

    return [i if i == default else pytest.param(i, marks=pytest.mark.slow) for i in ids]


def xla_cache_dir() -> str:
    """The tests' persistent XLA compilation cache: kept between runs, one folder per jax
    version, backend flags and platform (`MARL_TEST_XLA_CACHE` overrides; `off` disables).
    JAX keys each entry by its program, flags and versions anyway: the folder name keeps
    caches of other setups apart, so that old ones can be deleted whole."""
    import hashlib
    import platform

    import jax

    chosen = os.environ.get("MARL_TEST_XLA_CACHE")
    if chosen:
        return chosen
    flags = os.environ.get("XLA_FLAGS", "")
    tag = hashlib.sha256(f"{flags}|{platform.machine()}".encode()).hexdigest()[:10]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "marl", f"xla-tests-jax{jax.__version__}-{tag}")


CACHE_CAP = 2 * 1024**3  # bytes: above it, a test run first deletes the oldest entries


def prune_cache(cache: str, cap: int = CACHE_CAP) -> int:
    """Delete the oldest entries of `cache` until it holds at most `cap` bytes (at 3/4 of it,
    so that pruning is rare); the bytes freed. JAX's own size cap (`jax_compilation_cache_
    max_size`) rescans the whole folder on every write, which made a run of the suite with
    every program cached take 22 minutes instead of 6."""
    entries = []
    for entry in os.scandir(cache):  # JAX's entries only: the folder may be one a user named
        if entry.is_file(follow_symlinks=False) and entry.name.endswith(("-cache", "-atime")):
            st = entry.stat()
            entries.append((st.st_mtime, st.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= cap:
        return 0
    freed = 0
    for _, size, path in sorted(entries):
        if total - freed <= cap * 3 // 4:
            break
        try:
            os.remove(path)
            freed += size
        except FileNotFoundError:
            pass
    return freed


def pytest_configure(config):
    """One persistent XLA compilation cache, shared by the xdist workers, the processes tests
    start (`marl` on the command line, `python -m marl.app`, which inherit it through the
    environment) and later runs: a program compiled once is not compiled again, however small
    (most of the suite's programs compile in tens of milliseconds: the eager operations of the
    tests themselves). Results do not depend on it (the same program and flags give the same
    executable). Kept under `CACHE_CAP` by the run that starts the workers."""
    import jax

    cache = xla_cache_dir()
    if cache == "off":
        return
    os.makedirs(cache, exist_ok=True)
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        prune_cache(cache)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = cache
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)


# The files that cost most, heaviest first (per-file sums of a run's test times on the 2-core
# development machine, 2026-12-07): first those of the integration tier (whose tests in the
# default tier are few and light), then those of the default tier. Under `-n 2 --dist
# loadfile` each worker takes the next whole file when it runs dry, so a heavy file left for
# the end (xdist's default order, most tests first, put test_meanfield and test_sharding
# there) kept one worker busy after the other had finished; heaviest first leaves only small
# files for the end (pyproject passes --no-loadscope-reorder so that this order stands). A
# stale list costs balance, never correctness.
HEAVIEST_FIRST = (
    "test_launch", "test_checkpoint", "test_training", "test_sharding", "test_hostile_runs",
    "test_distributed", "test_app", "test_parts",
    "test_envs", "test_pathfinding", "test_cleanup", "test_combat_modes", "test_combat",
    "test_pettingzoo", "test_happo", "test_env_versions", "test_qlearner", "test_grid_pogema",
    "test_grid", "test_report", "test_onpolicy", "test_qlearning_pieces", "test_networks",
    "test_wrappers", "test_particle_fidelity", "test_meanfield", "test_swarm",
    "test_train_cli", "test_baselines", "test_particle_tag_worldcomm", "test_benchmark",
    "test_message_passing", "test_one_name", "test_jaxmarl_smax", "test_docs", "test_cli",
    "test_decpomfc", "test_teams", "test_architecture", "test_crossplay",
)  # fmt: skip


def pytest_collection_modifyitems(config, items):
    """Run the heaviest files first (stable within a file and among the rest)."""
    rank = {name: i for i, name in enumerate(HEAVIEST_FIRST)}

    def file_rank(item):
        return rank.get(item.path.stem, len(rank))

    items.sort(key=file_rank)  # list.sort is stable: a file's tests keep their order
