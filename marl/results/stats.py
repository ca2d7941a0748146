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

The point estimates of one set of scores and the bootstrap itself are
`marl.results.bootstrap`'s (its public names are importable from here too); this module builds
on them: aggregates over tasks, performance profiles, the probability of improvement and
sample-efficiency curves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from marl.results.bootstrap import (
    AGGREGATES,
    REPS,
    Interval,
    check_settings,
    draw_counts,
    iqm,
    iqm_ci,
    mean,
    mean_ci,
    median,
    optimality_gap,
    percentile_interval,
    stratified_bootstrap_ci,
    stratified_indices,
    task_arrays,
    task_iqm,
)

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


# ------------------------------------------------------------------ aggregates over tasks


def aggregate(
    scores: Scores, *, reps: int = REPS, confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, Interval]]:
    """algorithm -> aggregate name ("iqm", "mean", "median", "optimality_gap") -> interval.

    Each algorithm is aggregated over the tasks it has, with one stratified bootstrap (seeded
    by `seed`, shared by the four aggregates) over those tasks.
    """
    check_settings(reps, confidence)
    out: dict[str, dict[str, Interval]] = {}
    for algo, by_task in scores.items():
        if not by_task:
            raise ValueError(f"algorithm {algo!r} has no tasks")
        tasks = task_arrays([by_task[t] for t in sorted(by_task)])
        sizes = [x.size for x in tasks]
        pooled = np.concatenate(tasks)
        idx = stratified_indices(sizes, reps, np.random.default_rng(seed))
        samples = pooled[idx]
        out[algo] = {}
        for name, fn in TASK_AGGREGATES.items():
            point = fn(pooled[None, :], sizes)[0]
            low, high = percentile_interval(fn(samples, sizes), confidence)
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
    check_settings(reps, confidence)
    out: dict[str, dict[str, Interval]] = {}
    for algo, by_task in scores.items():
        if not by_task:
            raise ValueError(f"algorithm {algo!r} has no tasks")
        rng = np.random.default_rng(seed)
        points: dict[str, list[float]] = {name: [] for name in TASK_AGGREGATES}
        draws: dict[str, list[np.ndarray]] = {name: [] for name in TASK_AGGREGATES}
        for family in sorted({family_of(t) for t in by_task}):
            tasks = task_arrays([by_task[t] for t in sorted(by_task) if family_of(t) == family])
            sizes = [x.size for x in tasks]
            pooled = np.concatenate(tasks)
            samples = pooled[stratified_indices(sizes, reps, rng)]
            for name, fn in TASK_AGGREGATES.items():
                points[name].append(float(fn(pooled[None, :], sizes)[0]))
                draws[name].append(fn(samples, sizes))
        out[algo] = {}
        for name in TASK_AGGREGATES:
            low, high = percentile_interval(np.mean(draws[name], axis=0), confidence)
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
    check_settings(reps, confidence)
    tasks = task_arrays(per_task)
    taus = np.asarray(taus, dtype=np.float64).ravel()
    rng = np.random.default_rng(seed)
    point = np.zeros(taus.size)
    boot = np.zeros((int(reps), taus.size))
    for x in tasks:
        order = np.argsort(-x, kind="stable")  # runs from the highest score down
        above = (x[None, :] > taus[:, None]).sum(axis=1)  # [T]: runs above each tau
        point += above / x.size
        counts = draw_counts(rng.integers(0, x.size, size=(int(reps), x.size)), x.size)
        drawn = np.zeros((int(reps), x.size + 1))  # draws of the k highest runs, k = 0..n
        np.cumsum(counts[:, order], axis=1, out=drawn[:, 1:])
        boot += drawn[:, above] / x.size
    point /= len(tasks)
    boot /= len(tasks)
    low, high = percentile_interval(boot, confidence)
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
    check_settings(reps, confidence)
    xs, ys = task_arrays(x_tasks), task_arrays(y_tasks)
    if len(xs) != len(ys):
        raise ValueError(f"x has {len(xs)} tasks but y has {len(ys)}; tasks must be paired")
    rng = np.random.default_rng(seed)
    point = 0.0
    boot = np.zeros(int(reps))
    for x, y in zip(xs, ys, strict=True):
        w = _wins(x, y)
        point += w.mean()
        # A replicate is a weighting of the original runs by how often each was drawn.
        cx = draw_counts(rng.integers(0, x.size, size=(int(reps), x.size)), x.size)
        cy = draw_counts(rng.integers(0, y.size, size=(int(reps), y.size)), y.size)
        boot += np.einsum("ra,ab,rb->r", cx, w, cy) / (x.size * y.size)
    point /= len(xs)
    boot /= len(xs)
    low, high = percentile_interval(boot, confidence)
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
    check_settings(reps, confidence)
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
        low[k], high[k] = percentile_interval(np.asarray(mean(v[k][idx], axis=-1)), confidence)
    return steps, point, low, high


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
    check_settings(reps, confidence)
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
        low[k], high[k] = percentile_interval(task_iqm(pooled[k][idx], sizes), confidence)
    return SampleEfficiency(x, point, low, high, xlabel)
