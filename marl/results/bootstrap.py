"""Point estimates and the stratified bootstrap (Agarwal et al. 2021): the aggregates of one
set of scores (IQM, mean, median, optimality gap) and their percentile confidence intervals.

Pure NumPy. A stratified bootstrap resamples runs with replacement independently within each
task, keeping each task's run count; every bootstrap here is vectorised over the replicates and
deterministic given `seed`. `marl.results.stats` builds the report's statistics on these.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np

Interval = tuple[float, float, float]  # (point estimate, low, high)
REPS = 50_000  # bootstrap replicates by default: rliable's (2,000 moved CI ends by ~0.005)


# ----------------------------------------------------------------------------- aggregates
# Each aggregate reduces over all values (axis=None -> float) or along one axis (-> array);
# the bootstrap calls them with axis=-1 on a [reps, runs] matrix.


def _values(x: np.ndarray, axis: int | None) -> tuple[np.ndarray, int]:
    x = np.asarray(x, dtype=np.float64)
    if axis is None:
        x, axis = x.ravel(), 0
    if x.shape[axis] == 0:
        raise ValueError("cannot aggregate an empty array of scores")
    return x, axis


def _out(v: np.ndarray | np.floating, axis: int | None) -> float | np.ndarray:
    return float(v) if axis is None else np.asarray(v)


def iqm(x: np.ndarray, axis: int | None = None) -> float | np.ndarray:
    """Interquartile mean: the 25% trimmed mean, as `scipy.stats.trim_mean(x, 0.25)`.

    Sorts, drops floor(0.25 n) values from each end and averages the rest. `axis=None`
    (default) reduces over the flattened values and returns a float.
    """
    x, ax = _values(x, axis)
    n = x.shape[ax]
    cut = int(0.25 * n)
    kept = np.take(np.sort(x, axis=ax), np.arange(cut, n - cut), axis=ax)
    return _out(np.mean(kept, axis=ax), axis)


def task_iqm(x: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """IQM over tasks of rows x [rows, sum(sizes)] (task i's runs in a block of sizes[i]) -> [rows].

    Equal run counts: rliable's IQM, the 25% trimmed mean of all runs pooled. Unequal counts:
    the same trimmed mean with each task given equal total weight (a run of task i weighs
    1 / (T sizes[i])): the lowest and highest quarter of the weight are cut, a run straddling
    a cut counting for its part inside, so a task's share does not grow with its run count
    (as rliable's mean and median, which are of per-task means).
    """
    x = np.asarray(x, dtype=np.float64)
    sizes = [int(n) for n in sizes]
    if x.shape[-1] != sum(sizes) or not sizes or min(sizes) < 1:
        raise ValueError(f"x has {x.shape[-1]} columns, sizes {sizes}")
    if len(set(sizes)) == 1:
        return np.asarray(iqm(x, axis=-1))
    w = np.concatenate([np.full(n, 1.0 / (len(sizes) * n)) for n in sizes])
    order = np.argsort(x, axis=-1, kind="stable")
    xs = np.take_along_axis(x, order, axis=-1)
    ws = w[order]
    upper = np.cumsum(ws, axis=-1)
    kept = np.clip(np.minimum(upper, 0.75) - np.maximum(upper - ws, 0.25), 0.0, None)
    return np.sum(xs * kept, axis=-1) / 0.5


def mean(x: np.ndarray, axis: int | None = None) -> float | np.ndarray:
    """Arithmetic mean (over the flattened values when `axis` is None)."""
    x, ax = _values(x, axis)
    return _out(np.mean(x, axis=ax), axis)


def median(x: np.ndarray, axis: int | None = None) -> float | np.ndarray:
    """Median (over the flattened values when `axis` is None)."""
    x, ax = _values(x, axis)
    return _out(np.median(x, axis=ax), axis)


def optimality_gap(
    x: np.ndarray, gamma: float = 1.0, axis: int | None = None
) -> float | np.ndarray:
    """Optimality gap: mean(max(gamma - x, 0)); lower is better, scores above gamma count 0."""
    x, ax = _values(x, axis)
    return _out(np.mean(np.maximum(gamma - x, 0.0), axis=ax), axis)


AGGREGATES: dict[str, Callable[..., float | np.ndarray]] = {
    "iqm": iqm,
    "mean": mean,
    "median": median,
    "optimality_gap": optimality_gap,
}


# ----------------------------------------------------------------------------- bootstrap


def check_settings(reps: int, confidence: float) -> None:
    if int(reps) < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def task_arrays(per_task: Sequence[np.ndarray]) -> list[np.ndarray]:
    tasks = [np.asarray(x, dtype=np.float64).ravel() for x in per_task]
    if not tasks:
        raise ValueError("need at least one task")
    for i, x in enumerate(tasks):
        if x.size == 0:
            raise ValueError(f"task {i} has no runs")
    return tasks


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0 of the bootstrap replicates."""
    alpha = 100.0 * (1.0 - confidence) / 2.0
    samples = np.asarray(samples)
    if samples.ndim > 1:  # each statistic's replicates contiguous: the same values, 2x faster
        samples = np.ascontiguousarray(np.moveaxis(samples, 0, -1))
    low, high = np.percentile(samples, [alpha, 100.0 - alpha], axis=-1)
    return low, high


def stratified_indices(sizes: Sequence[int], reps: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap indices [reps, sum(sizes)] into the concatenation of the tasks' runs.

    The columns of task i (a block of sizes[i] columns, in task order) hold indices drawn
    uniformly with replacement from task i's own block, so every replicate keeps each task's
    run count and never mixes runs across tasks.
    """
    blocks, offset = [], 0
    for n in sizes:
        n = int(n)
        if n < 1:
            raise ValueError(f"every task needs at least one run, got sizes {list(sizes)}")
        blocks.append(offset + rng.integers(0, n, size=(int(reps), n)))
        offset += n
    return np.concatenate(blocks, axis=1)


def draw_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each of n items is drawn in each row of idx [reps, k] -> [reps, n]."""
    reps = idx.shape[0]
    flat = (idx + n * np.arange(reps)[:, None]).ravel()
    return np.bincount(flat, minlength=reps * n).reshape(reps, n).astype(np.float64)


def _accepts_axis(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "axis" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _rowwise(fn: Callable, samples: np.ndarray) -> np.ndarray:
    """fn applied to each row of samples [reps, n] -> [reps]."""
    if _accepts_axis(fn):
        out = np.asarray(fn(samples, axis=-1), dtype=np.float64)
    else:  # slow path for reducers without an `axis` argument
        out = np.array([fn(row) for row in samples], dtype=np.float64)
    if out.shape != samples.shape[:1]:
        raise ValueError(f"fn must reduce each row to a scalar, got shape {out.shape}")
    return out


def stratified_bootstrap_ci(
    per_task: Sequence[np.ndarray],
    fn: Callable[..., float | np.ndarray],
    *,
    reps: int = REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """(point, low, high) of fn over all tasks' runs with a stratified-bootstrap percentile CI.

    The point estimate is fn on the concatenation of every task's runs. Each replicate
    resamples runs with replacement independently within each task (keeping each task's run
    count), concatenates them and applies fn. `fn(x, axis=-1)` must reduce the rows of a
    [reps, runs] matrix (the aggregates here, np.mean and np.median do); a fn without an
    `axis` argument is called once per replicate instead (slow).
    """
    check_settings(reps, confidence)
    tasks = task_arrays(per_task)
    pooled = np.concatenate(tasks)
    rng = np.random.default_rng(seed)
    idx = stratified_indices([x.size for x in tasks], reps, rng)
    # The point goes through the same row-wise path as the replicates, so a sample with a
    # single distinct value gives exactly point == low == high.
    point = _rowwise(fn, pooled[None, :])[0]
    low, high = percentile_interval(_rowwise(fn, pooled[idx]), confidence)
    return float(point), float(low), float(high)


def mean_ci(
    x: np.ndarray, *, confidence: float = 0.95, reps: int = REPS, seed: int = 0
) -> Interval:
    """(mean, low, high) of one task's runs, bootstrap percentile CI."""
    return stratified_bootstrap_ci([x], mean, reps=reps, confidence=confidence, seed=seed)


def iqm_ci(x: np.ndarray, *, confidence: float = 0.95, reps: int = REPS, seed: int = 0) -> Interval:
    """(IQM, low, high) of one task's runs, bootstrap percentile CI."""
    return stratified_bootstrap_ci([x], iqm, reps=reps, confidence=confidence, seed=seed)
