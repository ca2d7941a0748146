"""marl.results.stats: aggregates against scipy, stratified bootstrap, profiles, improvement."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import trim_mean

from marl.results import stats

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


def _tasks(rng: np.random.Generator, sizes, loc=0.5, scale=0.3) -> list[np.ndarray]:
    return [rng.normal(loc + 0.1 * i, scale, size=n) for i, n in enumerate(sizes)]


# ----------------------------------------------------------------------------- aggregates


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=50))
def test_iqm_matches_scipy_trim_mean(values):
    x = np.array(values)
    assert stats.iqm(x) == pytest.approx(scipy.stats.trim_mean(x, 0.25), rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=50))
def test_iqm_matches_scipy_with_ties(values):
    x = np.array(values, dtype=float)
    assert stats.iqm(x) == pytest.approx(scipy.stats.trim_mean(x, 0.25), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n", range(1, 13))
def test_iqm_trims_floor_quarter(n):
    x = np.arange(n, dtype=float)[::-1]  # unsorted input
    cut = n // 4
    assert stats.iqm(x) == pytest.approx(np.arange(cut, n - cut).mean(), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 12), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_iqm_of_runs_by_tasks_matrix_is_over_flattened_values(runs, tasks, seed):
    m = np.random.default_rng(seed).normal(size=(runs, tasks))
    expected = scipy.stats.trim_mean(m, 0.25, axis=None)
    assert stats.iqm(m) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert stats.iqm(m) == pytest.approx(scipy.stats.trim_mean(m.ravel(), 0.25), abs=1e-12)


def test_row_wise_aggregates_match_scalar_ones():
    m = np.random.default_rng(1).normal(size=(7, 13))
    for name, fn in stats.AGGREGATES.items():
        rows = fn(m, axis=-1)
        assert rows.shape == (7,), name
        np.testing.assert_allclose(rows, [fn(r) for r in m], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        stats.iqm(m, axis=-1), scipy.stats.trim_mean(m, 0.25, axis=1), rtol=1e-12
    )


def test_mean_median_and_optimality_gap_hand_example():
    x = np.array([0.5, 1.2, -0.5, 1.0])
    assert stats.mean(x) == pytest.approx(0.55)
    assert stats.median(x) == pytest.approx(0.75)
    # gaps to 1: 0.5, 0, 1.5, 0
    assert stats.optimality_gap(x) == pytest.approx(0.5)
    # gaps to 0.5: 0, 0, 1.0, 0
    assert stats.optimality_gap(x, gamma=0.5) == pytest.approx(0.25)
    assert stats.optimality_gap(np.array([1.0, 2.0, 3.0])) == 0.0
    assert set(stats.AGGREGATES) == {"iqm", "mean", "median", "optimality_gap"}
    assert isinstance(stats.iqm(x), float)


def test_aggregates_reject_empty():
    for fn in stats.AGGREGATES.values():
        with pytest.raises(ValueError):
            fn(np.array([]))


def test_point_estimates_match_rliable():
    metrics = pytest.importorskip("rliable.metrics")
    m = np.random.default_rng(3).normal(0.6, 0.4, size=(10, 5))  # [runs, tasks]
    assert stats.iqm(m) == pytest.approx(metrics.aggregate_iqm(m), abs=1e-12)
    agg = stats.aggregate({"a": {f"t{j}": m[:, j] for j in range(5)}}, reps=10)["a"]
    assert agg["iqm"][0] == pytest.approx(metrics.aggregate_iqm(m), abs=1e-12)
    assert agg["mean"][0] == pytest.approx(metrics.aggregate_mean(m), abs=1e-12)
    assert agg["median"][0] == pytest.approx(metrics.aggregate_median(m), abs=1e-12)
    gap = metrics.aggregate_optimality_gap(m, gamma=1)
    assert agg["optimality_gap"][0] == pytest.approx(gap, abs=1e-12)


def test_mean_and_median_weight_each_task_once():
    """rliable's mean and median are over per-task means: unequal run counts do not tilt them."""
    scores = {
        "a": {
            "t0": np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
            "t1": np.array([1.0]),
            "t2": np.array([0.5, 0.7]),
        }
    }
    agg = stats.aggregate(scores, reps=50)["a"]
    assert agg["mean"][0] == pytest.approx((0.0 + 1.0 + 0.6) / 3)
    assert agg["median"][0] == pytest.approx(0.6)
    assert agg["optimality_gap"][0] == pytest.approx((1.0 + 0.0 + 0.4) / 3)
    # IQM with each task weighing 1/3: the middle half of the weight holds 1/12 of t0's zeros,
    # t2's 0.5 and 0.7 (1/6 each) and 1/12 of t1's 1.0 -> (0.5/6 + 0.7/6 + 1/12) / 0.5 = 17/30.
    # Pooling the runs (trim_mean of all 9) would give 0.1: t0's six zeros would dominate.
    assert agg["iqm"][0] == pytest.approx(17 / 30)


def _iqm_by_repetition(tasks: list[np.ndarray]) -> float:
    """Task-weighted IQM computed independently: repeat each task's runs until every task has
    the same number of copies, a multiple of 4 in all, then scipy's trim_mean cuts whole runs."""
    lcm = int(np.lcm.reduce([x.size for x in tasks]))
    k = 4 // int(np.gcd(4, len(tasks) * lcm))
    return float(trim_mean(np.concatenate([np.repeat(x, k * lcm // x.size) for x in tasks]), 0.25))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=7),
        min_size=1,
        max_size=4,
    )
)
def test_task_iqm_weights_each_task_once(runs):
    tasks = [np.asarray(r) for r in runs]
    sizes = [x.size for x in tasks]
    got = stats.task_iqm(np.concatenate(tasks)[None, :], sizes)[0]
    if len(set(sizes)) == 1:  # equal counts: rliable's IQM of the pooled runs, exactly
        assert got == pytest.approx(trim_mean(np.concatenate(tasks), 0.25), abs=1e-9)
    else:
        assert got == pytest.approx(_iqm_by_repetition(tasks), abs=1e-9)
    # adding a task's runs again (doubling its count) does not change its weight
    doubled = [np.r_[tasks[0], tasks[0]], *tasks[1:]]
    if len({x.size for x in doubled}) > 1:
        again = stats.task_iqm(np.concatenate(doubled)[None, :], [x.size for x in doubled])[0]
        assert again == pytest.approx(_iqm_by_repetition(tasks), abs=1e-9)


# ----------------------------------------------------------------------------- bootstrap


def test_stratified_indices_keep_each_task_in_its_block():
    sizes = [3, 1, 5, 2]
    reps = 400
    idx = stats.stratified_indices(sizes, reps, np.random.default_rng(0))
    assert idx.shape == (reps, sum(sizes))
    starts = np.cumsum([0, *sizes])
    for i, n in enumerate(sizes):
        block = idx[:, starts[i] : starts[i + 1]]
        assert block.shape == (reps, n)  # each task keeps its run count in every replicate
        assert block.min() >= starts[i] and block.max() < starts[i + 1]
        assert set(np.unique(block)) == set(range(starts[i], starts[i + 1]))
    # with replacement: some replicate of a 5-run task repeats a run
    block = np.sort(idx[:, 4:9], axis=1)
    assert (np.diff(block, axis=1) == 0).any()
    with pytest.raises(ValueError):
        stats.stratified_indices([2, 0], 10, np.random.default_rng(0))


def test_bootstrap_is_stratified_across_very_different_tasks():
    # Two tasks far apart: a pooled (unstratified) bootstrap of the mean would vary wildly
    # with the mix of tasks drawn; a stratified one keeps 5 runs of each and barely moves.
    rng = np.random.default_rng(0)
    tasks = [rng.normal(0.0, 1e-3, 5), rng.normal(10.0, 1e-3, 5)]
    point, low, high = stats.stratified_bootstrap_ci(tasks, stats.mean, reps=500)
    assert point == pytest.approx(5.0, abs=1e-2)
    assert high - low < 0.01


def test_bootstrap_replicates_have_the_pooled_run_count():
    seen = []

    def record(x):  # no `axis` argument: called once per replicate
        seen.append(len(x))
        return float(np.mean(x))

    tasks = _tasks(np.random.default_rng(0), [4, 1, 6])
    slow = stats.stratified_bootstrap_ci(tasks, record, reps=50, seed=3)
    assert seen == [11] * 51  # the point estimate, then 50 replicates
    fast = stats.stratified_bootstrap_ci(tasks, stats.mean, reps=50, seed=3)
    assert slow == pytest.approx(fast, abs=1e-12)


@pytest.mark.parametrize("name", sorted(stats.AGGREGATES))
@pytest.mark.parametrize("seed", range(4))
def test_bootstrap_ci_contains_point_and_is_deterministic(name, seed):
    fn = stats.AGGREGATES[name]
    tasks = _tasks(np.random.default_rng(100 + seed), [5, 8, 3, 10])
    point, low, high = stats.stratified_bootstrap_ci(tasks, fn, reps=1000, seed=seed)
    assert point == pytest.approx(fn(np.concatenate(tasks)), abs=1e-12)
    assert low <= point <= high
    assert low < high
    again = stats.stratified_bootstrap_ci(tasks, fn, reps=1000, seed=seed)
    assert again == (point, low, high)
    other = stats.stratified_bootstrap_ci(tasks, fn, reps=1000, seed=seed + 1)
    assert other[0] == point
    if name != "median":  # a median's percentiles are data values and may coincide
        assert other[1:] != (low, high)


@pytest.mark.parametrize("name", sorted(stats.AGGREGATES))
def test_bootstrap_ci_shrinks_with_more_runs(name):
    fn = stats.AGGREGATES[name]
    rng = np.random.default_rng(7)
    few = stats.stratified_bootstrap_ci(_tasks(rng, [5, 5, 5]), fn, reps=1000)
    many = stats.stratified_bootstrap_ci(_tasks(rng, [200, 200, 200]), fn, reps=1000)
    assert many[2] - many[1] < 0.5 * (few[2] - few[1])


def test_bootstrap_ci_widens_with_confidence_and_matches_normal_theory():
    x = np.random.default_rng(2).normal(0.0, 1.0, 400)
    _, lo90, hi90 = stats.stratified_bootstrap_ci([x], stats.mean, confidence=0.9)
    p, lo99, hi99 = stats.stratified_bootstrap_ci([x], stats.mean, confidence=0.99)
    assert hi99 - lo99 > hi90 - lo90
    half = 2.5758 * x.std() / np.sqrt(x.size)  # normal 99% half-width
    assert (hi99 - lo99) / 2 == pytest.approx(half, rel=0.15)
    assert (lo99 + hi99) / 2 == pytest.approx(p, abs=0.2 * half)


@pytest.mark.parametrize("value", [0.3, 0.1, -2.7, 1.0])
def test_bootstrap_ci_is_degenerate_for_a_single_distinct_value(value):
    tasks = [np.full(n, value) for n in (3, 1, 7)]
    for fn in stats.AGGREGATES.values():
        point, low, high = stats.stratified_bootstrap_ci(tasks, fn, reps=200)
        assert point == low == high
    assert stats.mean_ci(np.full(5, value)) == (pytest.approx(value),) * 3
    m, lo, hi = stats.iqm_ci(np.array([value]))
    assert m == lo == hi == pytest.approx(value)


def test_mean_ci_and_iqm_ci():
    x = np.random.default_rng(4).normal(0.5, 0.2, 20)
    m, lo, hi = stats.mean_ci(x, seed=1)
    assert m == pytest.approx(x.mean()) and lo < m < hi
    q, lo, hi = stats.iqm_ci(x, seed=1)
    assert q == pytest.approx(scipy.stats.trim_mean(x, 0.25)) and lo < q < hi
    assert stats.mean_ci(x, seed=1) == stats.mean_ci(x, seed=1)


def test_bootstrap_rejects_bad_arguments():
    with pytest.raises(ValueError):
        stats.stratified_bootstrap_ci([], stats.mean)
    with pytest.raises(ValueError):
        stats.stratified_bootstrap_ci([np.ones(3), np.array([])], stats.mean)
    with pytest.raises(ValueError):
        stats.stratified_bootstrap_ci([np.ones(3)], stats.mean, confidence=1.0)
    with pytest.raises(ValueError):
        stats.stratified_bootstrap_ci([np.ones(3)], stats.mean, reps=0)


def test_aggregate_over_each_algorithms_own_tasks():
    rng = np.random.default_rng(5)
    scores = {
        "a": {"t1": rng.normal(0.8, 0.1, 5), "t2": rng.normal(0.4, 0.1, 3)},
        "b": {"t2": rng.normal(0.2, 0.1, 7)},
        "c": {"t1": np.array([0.9])},  # a single run
    }
    agg = stats.aggregate(scores, reps=500)
    assert set(agg) == {"a", "b", "c"}
    for algo, by_metric in agg.items():
        tasks = [scores[algo][t] for t in sorted(scores[algo])]
        pooled = np.concatenate(tasks)
        task_means = [np.mean(x) for x in tasks]
        equal = len({x.size for x in tasks}) == 1
        expected = {
            "iqm": trim_mean(pooled, 0.25) if equal else _iqm_by_repetition(tasks),
            "mean": np.mean(task_means),
            "median": np.median(task_means),
            "optimality_gap": np.mean([np.mean(np.maximum(1 - x, 0)) for x in tasks]),
        }
        assert set(by_metric) == set(stats.AGGREGATES)
        for name, (point, low, high) in by_metric.items():
            assert point == pytest.approx(expected[name], abs=1e-12)
            assert low <= point <= high
        if equal:
            direct = stats.stratified_bootstrap_ci(tasks, stats.iqm, reps=500)
            assert by_metric["iqm"] == pytest.approx(direct, abs=1e-12)
    assert agg["c"]["mean"] == pytest.approx((0.9, 0.9, 0.9))
    # independent of dict insertion order
    reordered = {"c": scores["c"], "a": {"t2": scores["a"]["t2"], "t1": scores["a"]["t1"]}}
    again = stats.aggregate(reordered, reps=500)
    assert again["a"] == agg["a"] and again["c"] == agg["c"]


# ----------------------------------------------------------------------------- profiles


def test_performance_profile_matches_brute_force():
    rng = np.random.default_rng(6)
    tasks = [rng.normal(0.5, 0.3, n) for n in (4, 9, 2)]
    tasks.append(np.array([0.3, 0.7, 0.3, 1.0, 0.7]))  # ties, some on a tau
    taus = np.linspace(-0.5, 1.5, 21)
    reps = 300
    frac, low, high = stats.performance_profile(tasks, taus, reps=reps, seed=11)

    def profile(ts):
        return np.array([np.mean([np.mean([v > tau for v in t]) for t in ts]) for tau in taus])

    np.testing.assert_allclose(frac, profile(tasks), atol=1e-12)
    # the same draws, one replicate at a time: tasks in order, runs with replacement
    draws = np.random.default_rng(11)
    idx = [draws.integers(0, t.size, size=(reps, t.size)) for t in tasks]
    boot = np.array(
        [profile([t[i[r]] for t, i in zip(tasks, idx, strict=True)]) for r in range(reps)]
    )
    np.testing.assert_allclose(low, np.percentile(boot, 2.5, axis=0), atol=1e-12)
    np.testing.assert_allclose(high, np.percentile(boot, 97.5, axis=0), atol=1e-12)
    assert np.all(low <= frac + 1e-12) and np.all(frac <= high + 1e-12)
    assert np.all(np.diff(frac) <= 0) and frac[0] == 1.0 and frac[-1] == 0.0


def test_performance_profile_weighs_tasks_equally():
    tasks = [np.array([1.0]), np.array([0.0, 0.0, 0.0, 0.0])]
    frac, low, high = stats.performance_profile(tasks, np.array([0.5]), reps=50)
    assert frac[0] == pytest.approx(0.5)  # not 1/5 of the runs
    assert low[0] == high[0] == pytest.approx(0.5)


def test_performance_profile_counts_scores_strictly_above_tau():
    """Scores [0, 0.5, 1] at tau 0.5: only 1.0 is above, fraction 1/3 (not 2/3 with ties);
    at tau 0: 2/3; at tau 1: 0."""
    frac, _, _ = stats.performance_profile([np.array([0.0, 0.5, 1.0])], [0.0, 0.5, 1.0], reps=20)
    np.testing.assert_allclose(frac, [2 / 3, 1 / 3, 0.0])


# ----------------------------------------------------------------------------- improvement


def _brute_poi(xs, ys):
    per_task = []
    for x, y in zip(xs, ys, strict=True):
        total = 0.0
        for a in x:
            for b in y:
                total += 1.0 if a > b else 0.5 if a == b else 0.0
        per_task.append(total / (len(x) * len(y)))
    return float(np.mean(per_task))


def test_probability_of_improvement_matches_brute_force():
    rng = np.random.default_rng(8)
    xs = [rng.integers(0, 5, n).astype(float) for n in (3, 6, 2)]  # ties on purpose
    ys = [rng.integers(0, 5, n).astype(float) for n in (5, 1, 4)]
    reps = 200
    p, low, high = stats.probability_of_improvement(xs, ys, reps=reps, seed=2)
    assert p == pytest.approx(_brute_poi(xs, ys), abs=1e-12)
    u = [
        scipy.stats.mannwhitneyu(x, y).statistic / (x.size * y.size)
        for x, y in zip(xs, ys, strict=True)
    ]
    assert p == pytest.approx(np.mean(u), abs=1e-12)
    # the same draws, one replicate at a time: per task, x's runs then y's runs
    draws = np.random.default_rng(2)
    idx = []
    for x, y in zip(xs, ys, strict=True):
        idx.append(
            (draws.integers(0, x.size, (reps, x.size)), draws.integers(0, y.size, (reps, y.size)))
        )
    boot = [
        _brute_poi(
            [x[i[r]] for x, (i, _) in zip(xs, idx, strict=True)],
            [y[j[r]] for y, (_, j) in zip(ys, idx, strict=True)],
        )
        for r in range(reps)
    ]
    assert low == pytest.approx(np.percentile(boot, 2.5), abs=1e-12)
    assert high == pytest.approx(np.percentile(boot, 97.5), abs=1e-12)
    assert low <= p <= high


def test_probability_of_improvement_is_complementary_and_half_for_identical():
    rng = np.random.default_rng(9)
    xs = [rng.normal(0.5, 0.2, n) for n in (4, 7)]
    ys = [rng.normal(0.4, 0.2, n) for n in (6, 3)]
    pxy = stats.probability_of_improvement(xs, ys)[0]
    pyx = stats.probability_of_improvement(ys, xs)[0]
    assert pxy + pyx == pytest.approx(1.0, abs=1e-12)
    p, low, high = stats.probability_of_improvement(xs, xs)
    assert p == pytest.approx(0.5, abs=1e-12)
    assert low < 0.5 < high
    assert stats.probability_of_improvement(
        [np.array([2.0, 3.0])], [np.array([0.0, 1.0, -1.0])]
    ) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        stats.probability_of_improvement(xs, ys[:1])


def test_pairwise_improvement_uses_common_tasks_and_is_mirrored():
    rng = np.random.default_rng(10)
    scores = {
        "a": {"t1": rng.normal(0.6, 0.2, 5), "t2": rng.normal(0.6, 0.2, 4)},
        "b": {"t1": rng.normal(0.4, 0.2, 3), "t3": rng.normal(0.4, 0.2, 4)},
        "c": {"t1": rng.normal(0.5, 0.2, 6), "t2": rng.normal(0.5, 0.2, 2)},
        "d": {"t9": np.array([0.1])},  # no task in common with anyone
    }
    pairs = stats.pairwise_improvement(scores, reps=300)
    expected = {p for p in itertools.permutations("abc", 2)}
    assert set(pairs) == expected
    for x, y in expected:
        p, low, high = pairs[(x, y)]
        q, qlow, qhigh = pairs[(y, x)]
        assert p + q == pytest.approx(1.0, abs=1e-12)
        assert low == pytest.approx(1.0 - qhigh, abs=1e-12)
        assert low <= p <= high
        common = sorted(set(scores[x]) & set(scores[y]))
        brute = _brute_poi([scores[x][t] for t in common], [scores[y][t] for t in common])
        assert p == pytest.approx(brute, abs=1e-12)
    direct = stats.probability_of_improvement(
        [scores["a"]["t1"], scores["a"]["t2"]], [scores["c"]["t1"], scores["c"]["t2"]], reps=300
    )
    assert pairs[("a", "c")] == pytest.approx(direct, abs=1e-12)


# ----------------------------------------------------------------------------- curves


def test_sample_efficiency_on_a_shared_grid():
    rng = np.random.default_rng(12)
    steps = np.array([0, 100, 200, 300])
    curves = {
        "t2": (steps, rng.normal(0.5, 0.2, size=(4, 3))),
        "t1": (steps, rng.normal(0.5, 0.2, size=(4, 6))),
        "t3": (steps, rng.normal(0.5, 0.2, size=(4, 1))),
    }
    out = stats.sample_efficiency(curves, reps=400)
    assert out.xlabel == "environment steps"
    np.testing.assert_array_equal(out.steps, steps)
    for k in range(4):  # unequal run counts (6, 3, 1): each task weighs a third
        tasks = [curves[t][1][k] for t in ("t1", "t2", "t3")]
        assert out.point[k] == pytest.approx(_iqm_by_repetition(tasks), abs=1e-12)
        assert out.low[k] <= out.point[k] <= out.high[k]
    steps_, point, low, high, xlabel = out  # unpacks like a tuple
    assert point.shape == low.shape == high.shape == (4,)
    assert stats.sample_efficiency(curves, reps=400).low.tolist() == low.tolist()


def test_sample_efficiency_on_different_grids_uses_fraction_of_training():
    v = np.ones((3, 2))
    out = stats.sample_efficiency(
        {"a": (np.array([10, 20, 30]), v), "b": (np.array([100, 200, 300]), 2 * v)}, reps=50
    )
    assert out.xlabel == "fraction of training budget"
    np.testing.assert_allclose(out.steps, [1 / 3, 2 / 3, 1.0])
    np.testing.assert_allclose(out.point, 1.5)


def test_sample_efficiency_fraction_of_training_for_non_proportional_grids():
    """Grids a [0, 50, 200] and b [0, 75, 100] (a's budget the larger): fractions [0, .25, 1]
    and [0, .75, 1], mean [0, .5, 1]. Grids [0, 50, 100] and [0, 20, 100] share only their
    last step: still fractions, [0, .35, 1]."""
    v = np.ones((3, 2))
    out = stats.sample_efficiency(
        {"a": (np.array([0, 50, 200]), v), "b": (np.array([0, 75, 100]), v)}, reps=20
    )
    assert out.xlabel == "fraction of training budget"
    np.testing.assert_allclose(out.steps, [0.0, 0.5, 1.0])
    out = stats.sample_efficiency(
        {"a": (np.array([0, 50, 100]), v), "b": (np.array([0, 20, 100]), v)}, reps=20
    )
    assert out.xlabel == "fraction of training budget"
    np.testing.assert_allclose(out.steps, [0.0, 0.35, 1.0])


def test_sample_efficiency_rejects_different_numbers_of_evaluations():
    curves = {
        "alpha": (np.arange(3), np.zeros((3, 2))),
        "beta": (np.arange(4), np.zeros((4, 2))),
    }
    with pytest.raises(ValueError, match="alpha.*beta"):
        stats.sample_efficiency(curves)
    with pytest.raises(ValueError):
        stats.sample_efficiency({"a": (np.arange(3), np.zeros((4, 2)))})


def test_mean_curve():
    rng = np.random.default_rng(13)
    steps = np.arange(5) * 10
    values = rng.normal(size=(5, 4))
    s, m, low, high = stats.mean_curve(steps, values, reps=300)
    np.testing.assert_array_equal(s, steps)
    np.testing.assert_allclose(m, values.mean(axis=1), atol=1e-12)
    assert np.all(low <= m) and np.all(m <= high) and np.all(low < high)
    _, m1, low1, high1 = stats.mean_curve(steps, values[:, :1], reps=300)
    np.testing.assert_array_equal(low1, m1)
    np.testing.assert_array_equal(high1, m1)
