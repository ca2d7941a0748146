"""Statistics for the evaluation protocol's reports (Agarwal et al. 2021, Gorsane et al. 2022).

Pure NumPy. Scores are per-task normalised by the caller (0 = random policy, 1 = reference
policy; values may fall outside [0, 1]). The number of runs may differ between tasks and
between algorithms; it is always read from the array lengths.

Shapes used throughout:
    scores: algorithm -> task -> [runs] per-run normalised scores;
    curves: algorithm -> task -> (steps [K], values [K, runs]).

Uncertainty is the rliable recipe: a stratified bootstrap (runs resampled with replacement
independently within each task, keeping each task's run count) with percentile intervals.
All bootstraps are vectorised over the replicates and deterministic given `seed`. Tasks are
always visited in sorted name order, so results do not depend on dict insertion order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

Interval = tuple[float, float, float]  # (point estimate, low, high)
REPS = 50_000  # bootstrap replicates by default: rliable's (2,000 moved CI ends by ~0.005)
Scores = Mapping[str, Mapping[str, np.ndarray]]

__all__ = [
    "AGGREGATES",
    "REPS",
    "Interval",
    "SampleEfficiency",
    "aggregate",
    "iqm",
    "iqm_ci",
    "mean",
    "mean_ci",
    "mean_curve",
    "median",
    "optimality_gap",
    "pairwise_improvement",
    "performance_profile",
    "probability_of_improvement",
    "sample_efficiency",
    "stratified_bootstrap_ci",
    "stratified_indices",
    "task_iqm",
]

STEPS_LABEL = "environment steps"
FRACTION_LABEL = "fraction of training budget"


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


def _check(reps: int, confidence: float) -> None:
    if int(reps) < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _tasks(per_task: Sequence[np.ndarray]) -> list[np.ndarray]:
    tasks = [np.asarray(x, dtype=np.float64).ravel() for x in per_task]
    if not tasks:
        raise ValueError("need at least one task")
    for i, x in enumerate(tasks):
        if x.size == 0:
            raise ValueError(f"task {i} has no runs")
    return tasks


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0 of the bootstrap replicates."""
    alpha = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(samples, [alpha, 100.0 - alpha], axis=0)
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


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
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
    _check(reps, confidence)
    tasks = _tasks(per_task)
    pooled = np.concatenate(tasks)
    rng = np.random.default_rng(seed)
    idx = stratified_indices([x.size for x in tasks], reps, rng)
    # The point goes through the same row-wise path as the replicates, so a sample with a
    # single distinct value gives exactly point == low == high.
    point = _rowwise(fn, pooled[None, :])[0]
    low, high = _percentiles(_rowwise(fn, pooled[idx]), confidence)
    return float(point), float(low), float(high)


def mean_ci(
    x: np.ndarray, *, confidence: float = 0.95, reps: int = REPS, seed: int = 0
) -> Interval:
    """(mean, low, high) of one task's runs, bootstrap percentile CI."""
    return stratified_bootstrap_ci([x], mean, reps=reps, confidence=confidence, seed=seed)


def iqm_ci(x: np.ndarray, *, confidence: float = 0.95, reps: int = REPS, seed: int = 0) -> Interval:
    """(IQM, low, high) of one task's runs, bootstrap percentile CI."""
    return stratified_bootstrap_ci([x], iqm, reps=reps, confidence=confidence, seed=seed)


def mean_curve(
    steps: np.ndarray,
    values: np.ndarray,
    *,
    confidence: float = 0.95,
    reps: int = REPS,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(steps [K], mean [K], low [K], high [K]) over the runs of one task's curve values [K, runs].

    Bootstrap percentile CI of the mean at each evaluation, resampling whole runs (one set of
    resampled runs for all evaluations); the input of `marl.results.plots.task_curves`.
    """
    _check(reps, confidence)
    steps = np.asarray(steps).ravel()
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    if v.ndim != 2 or v.shape[0] != steps.size or v.shape[1] == 0:
        raise ValueError(f"values must be [K={steps.size}, runs>0], got {v.shape}")
    idx = stratified_indices([v.shape[1]], reps, np.random.default_rng(seed))
    point = np.asarray(mean(v, axis=-1))
    low, high = np.empty(steps.size), np.empty(steps.size)
    for k in range(steps.size):  # over evaluations, each vectorised over the replicates
        low[k], high[k] = _percentiles(mean(v[k][idx], axis=-1), confidence)
    return steps, point, low, high


def aggregate(
    scores: Scores, *, reps: int = REPS, confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, Interval]]:
    """algorithm -> aggregate name ("iqm", "mean", "median", "optimality_gap") -> interval.

    Each algorithm is aggregated over the tasks it has, with one stratified bootstrap (seeded
    by `seed`, shared by the four aggregates) over those tasks.
    """
    _check(reps, confidence)
    out: dict[str, dict[str, Interval]] = {}
    for algo, by_task in scores.items():
        if not by_task:
            raise ValueError(f"algorithm {algo!r} has no tasks")
        tasks = _tasks([by_task[t] for t in sorted(by_task)])
        sizes = [x.size for x in tasks]
        pooled = np.concatenate(tasks)
        idx = stratified_indices(sizes, reps, np.random.default_rng(seed))
        samples = pooled[idx]
        out[algo] = {}
        for name, fn in TASK_AGGREGATES.items():
            point = fn(pooled[None, :], sizes)[0]
            low, high = _percentiles(fn(samples, sizes), confidence)
            out[algo][name] = (float(point), float(low), float(high))
    return out


def family_aggregate(
    scores: Scores,
    family_of: Callable[[str], str],
    *,
    reps: int = REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, dict[str, Interval]]:
    """`aggregate` with every family weighted equally: each aggregate is the mean over
    families (`family_of(task)`) of that aggregate over the family's tasks, so a family of
    many tasks does not outweigh one of few. One stratified bootstrap over every task's runs
    (seeded by `seed`), shared by the families and the four aggregates."""
    _check(reps, confidence)
    out: dict[str, dict[str, Interval]] = {}
    for algo, by_task in scores.items():
        if not by_task:
            raise ValueError(f"algorithm {algo!r} has no tasks")
        rng = np.random.default_rng(seed)
        points: dict[str, list[float]] = {name: [] for name in TASK_AGGREGATES}
        draws: dict[str, list[np.ndarray]] = {name: [] for name in TASK_AGGREGATES}
        for family in sorted({family_of(t) for t in by_task}):
            tasks = _tasks([by_task[t] for t in sorted(by_task) if family_of(t) == family])
            sizes = [x.size for x in tasks]
            pooled = np.concatenate(tasks)
            samples = pooled[stratified_indices(sizes, reps, rng)]
            for name, fn in TASK_AGGREGATES.items():
                points[name].append(float(fn(pooled[None, :], sizes)[0]))
                draws[name].append(fn(samples, sizes))
        out[algo] = {}
        for name in TASK_AGGREGATES:
            low, high = _percentiles(np.mean(draws[name], axis=0), confidence)
            out[algo][name] = (float(np.mean(points[name])), float(low), float(high))
    return out


def _task_means(x: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """[rows, tasks] the mean of each task's block of columns of x [rows, sum(sizes)]."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    return np.add.reduceat(x, starts, axis=-1) / np.asarray(sizes, np.float64)


# The aggregates over tasks as rliable defines them (rliable.metrics): the IQM pools every run
# of every task (with unequal run counts, each task weighted once: `task_iqm`); mean and
# median are of the per-task mean scores (each task weighted once, whatever its run count);
# the optimality gap is gamma minus the mean over tasks of the per-task mean of
# min(score, gamma). Each maps [rows, sum(sizes)] -> [rows].
TASK_AGGREGATES: dict[str, Callable[[np.ndarray, Sequence[int]], np.ndarray]] = {
    "iqm": task_iqm,
    "mean": lambda x, sizes: _task_means(x, sizes).mean(axis=-1),
    "median": lambda x, sizes: np.median(_task_means(x, sizes), axis=-1),
    "optimality_gap": lambda x, sizes: _task_means(np.maximum(1.0 - x, 0.0), sizes).mean(axis=-1),
}


# ----------------------------------------------------------------------------- profiles


def performance_profile(
    per_task: Sequence[np.ndarray],
    taus: np.ndarray,
    *,
    reps: int = REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Score distribution: (fraction [T], low [T], high [T]) of runs with score > tau.

    Each task weighs equally (as rliable): the fraction is the mean over tasks of the
    per-task fraction of runs scoring strictly above tau. CI by stratified bootstrap.
    """
    _check(reps, confidence)
    tasks = _tasks(per_task)
    taus = np.asarray(taus, dtype=np.float64).ravel()
    rng = np.random.default_rng(seed)
    point = np.zeros(taus.size)
    boot = np.zeros((int(reps), taus.size))
    for x in tasks:
        above = (x[:, None] > taus[None, :]).astype(np.float64)  # [n, T]
        point += above.mean(axis=0)
        counts = _counts(rng.integers(0, x.size, size=(int(reps), x.size)), x.size)
        boot += counts @ above / x.size
    point /= len(tasks)
    boot /= len(tasks)
    low, high = _percentiles(boot, confidence)
    return point, low, high


# ----------------------------------------------------------------------------- improvement


def _wins(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[n, m]: 1 where x_a > y_b, 0.5 on ties, 0 otherwise (Mann-Whitney kernel)."""
    return (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])


def probability_of_improvement(
    x_tasks: Sequence[np.ndarray],
    y_tasks: Sequence[np.ndarray],
    *,
    reps: int = REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """(P(X > Y), low, high): the rliable probability that algorithm X beats algorithm Y.

    Per task, the Mann-Whitney statistic P(x > y) + 0.5 P(x == y) over all pairs of runs;
    averaged over tasks. x_tasks[i] and y_tasks[i] are the same task and may have different
    run counts. CI by stratified bootstrap resampling each algorithm's runs within each task
    independently.
    """
    _check(reps, confidence)
    xs, ys = _tasks(x_tasks), _tasks(y_tasks)
    if len(xs) != len(ys):
        raise ValueError(f"x has {len(xs)} tasks but y has {len(ys)}; tasks must be paired")
    rng = np.random.default_rng(seed)
    point = 0.0
    boot = np.zeros(int(reps))
    for x, y in zip(xs, ys, strict=True):
        w = _wins(x, y)
        point += w.mean()
        # A replicate is a weighting of the original runs by how often each was drawn.
        cx = _counts(rng.integers(0, x.size, size=(int(reps), x.size)), x.size)
        cy = _counts(rng.integers(0, y.size, size=(int(reps), y.size)), y.size)
        boot += np.einsum("ra,ab,rb->r", cx, w, cy) / (x.size * y.size)
    point /= len(xs)
    boot /= len(xs)
    low, high = _percentiles(boot, confidence)
    return float(point), float(low), float(high)


def pairwise_improvement(
    scores: Scores, *, reps: int = REPS, confidence: float = 0.95, seed: int = 0
) -> dict[tuple[str, str], Interval]:
    """(algo_x, algo_y) -> P(X > Y) interval, for every ordered pair x != y.

    Uses the tasks both algorithms have (pairs with no common task are left out). Each
    unordered pair is bootstrapped once; (y, x) is the mirror (1 - p, 1 - high, 1 - low) of
    (x, y), so the two always sum to 1.
    """
    out: dict[tuple[str, str], Interval] = {}
    algos = sorted(scores)
    for i, a in enumerate(algos):
        for b in algos[i + 1 :]:
            common = sorted(set(scores[a]) & set(scores[b]))
            if not common:
                continue
            p, lo, hi = probability_of_improvement(
                [scores[a][t] for t in common],
                [scores[b][t] for t in common],
                reps=reps,
                confidence=confidence,
                seed=seed,
            )
            out[(a, b)] = (p, lo, hi)
            out[(b, a)] = (1.0 - p, 1.0 - hi, 1.0 - lo)
    return out


# ----------------------------------------------------------------------------- curves


class SampleEfficiency(NamedTuple):
    """IQM curve of one algorithm; `xlabel` says what `steps` measures."""

    steps: np.ndarray  # [K]
    point: np.ndarray  # [K]
    low: np.ndarray  # [K]
    high: np.ndarray  # [K]
    xlabel: str


def sample_efficiency(
    curves_for_algo: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    reps: int = REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> SampleEfficiency:
    """IQM over all runs of all tasks (`task_iqm`) at each evaluation, with bootstrap CI bands.

    curves_for_algo: task -> (steps [K], values [K, runs]). Tasks are aligned by evaluation
    INDEX, so every task must have the same number of evaluations K (ValueError naming the
    tasks otherwise). The x axis is:
      * the common steps when all tasks share the same step grid (xlabel "environment steps");
      * otherwise the fraction of training, the mean over tasks of steps / steps[-1]
        (xlabel "fraction of training budget"); exact when the grids are proportional.
    One set of resampled runs is used for all evaluations, so a replicate follows whole runs.
    """
    _check(reps, confidence)
    if not curves_for_algo:
        raise ValueError("no tasks")
    names = sorted(curves_for_algo)
    steps, values = {}, {}
    for t in names:
        s, v = curves_for_algo[t]
        s = np.asarray(s).ravel()
        v = np.asarray(v, dtype=np.float64)
        if v.ndim == 1:
            v = v[:, None]
        if v.ndim != 2 or v.shape[0] != s.size or v.shape[1] == 0:
            raise ValueError(f"task {t!r}: values must be [K={s.size}, runs>0], got {v.shape}")
        steps[t], values[t] = s, v
    lengths = {t: steps[t].size for t in names}
    if len(set(lengths.values())) != 1:
        detail = ", ".join(f"{t}: {k}" for t, k in lengths.items())
        raise ValueError(f"tasks have different numbers of evaluations ({detail})")
    first = steps[names[0]]
    if all(np.array_equal(steps[t], first) for t in names):
        x, xlabel = first.copy(), STEPS_LABEL
    else:
        fractions = []
        for t in names:
            if steps[t][-1] == 0:
                raise ValueError(f"task {t!r}: last evaluation step is 0")
            fractions.append(steps[t] / steps[t][-1])
        x, xlabel = np.mean(fractions, axis=0), FRACTION_LABEL
    pooled = np.concatenate([values[t] for t in names], axis=1)  # [K, N]
    sizes = [values[t].shape[1] for t in names]
    idx = stratified_indices(sizes, reps, np.random.default_rng(seed))
    point = task_iqm(pooled, sizes)
    low, high = np.empty(first.size), np.empty(first.size)
    for k in range(first.size):  # over evaluations, each vectorised over the replicates
        low[k], high[k] = _percentiles(task_iqm(pooled[k][idx], sizes), confidence)
    return SampleEfficiency(x, point, low, high, xlabel)
