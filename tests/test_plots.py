"""marl.results.plots: every figure renders to PNG and SVG from small synthetic stats outputs."""

from __future__ import annotations

import numpy as np
import pytest

from marl.results import plots, stats

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(0)
    return {
        "ippo": {"t1": rng.normal(0.8, 0.1, 5), "t2": rng.normal(0.6, 0.2, 3)},
        "mappo": {"t1": rng.normal(0.7, 0.1, 4), "t2": rng.normal(0.7, 0.2, 6)},
        "iql": {"t1": np.array([0.3])},  # a single run
    }


@pytest.fixture(scope="module")
def curves():
    rng = np.random.default_rng(1)
    steps = np.arange(6) * 1000
    return {
        "ippo": {
            "t1": (steps, rng.normal(0.5, 0.2, (6, 3))),
            "t2": (steps, rng.normal(size=(6, 2))),
        },
        "iql": {"t1": (steps, rng.normal(0.5, 0.2, (6, 1)))},  # a single run
    }


def _check(path, suffix):
    assert path.suffix == suffix and path.exists() and path.stat().st_size > 0
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(PNG_MAGIC)
    else:
        assert b"<svg" in data[:2000]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_aggregate_intervals(tmp_path, scores, suffix):
    agg = stats.aggregate(scores, reps=200)
    out = plots.aggregate_intervals(agg, tmp_path / f"agg{suffix}")
    _check(out, suffix)
    out = plots.aggregate_intervals(agg, tmp_path / "sub" / f"iqm{suffix}", metrics=("iqm",))
    _check(out, suffix)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_performance_profiles(tmp_path, scores, suffix):
    taus = np.linspace(-0.2, 1.2, 30)
    profiles = {
        a: (taus, *stats.performance_profile(list(s.values()), taus, reps=200))
        for a, s in scores.items()
    }
    _check(plots.performance_profiles(profiles, tmp_path / f"prof{suffix}"), suffix)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_improvement_probabilities(tmp_path, scores, suffix):
    pairs = stats.pairwise_improvement(scores, reps=200)
    _check(plots.improvement_probabilities(pairs, tmp_path / f"poi{suffix}"), suffix)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_sample_efficiency_curves(tmp_path, curves, suffix):
    se = {a: stats.sample_efficiency(c, reps=200) for a, c in curves.items()}
    _check(plots.sample_efficiency_curves(se, tmp_path / f"se{suffix}"), suffix)
    plain = {a: tuple(v[:4]) for a, v in se.items()}
    out = plots.sample_efficiency_curves(plain, tmp_path / f"se4{suffix}", xlabel="steps")
    _check(out, suffix)


def test_sample_efficiency_curves_refuse_mixed_x_axes(tmp_path, curves):
    se = stats.sample_efficiency(curves["ippo"], reps=50)
    mixed = {"a": se, "b": se._replace(xlabel="fraction of training budget")}
    with pytest.raises(ValueError):
        plots.sample_efficiency_curves(mixed, tmp_path / "mixed.png")


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_task_curves(tmp_path, curves, suffix):
    per_algo = {a: stats.mean_curve(*c["t1"], reps=200) for a, c in curves.items()}
    out = plots.task_curves(per_algo, tmp_path / f"t1{suffix}", title="t1", ylabel="return")
    _check(out, suffix)


def test_unknown_suffix_is_rejected(tmp_path, scores):
    with pytest.raises(ValueError):
        plots.aggregate_intervals(stats.aggregate(scores, reps=20), tmp_path / "agg.pdf")


def test_algorithm_colors_are_stable():
    a = plots.algorithm_colors(["mappo", "ippo", "iql"])
    b = plots.algorithm_colors(["iql", "mappo", "ippo"])
    assert a == b and len(set(a.values())) == 3
    assert list(a) == ["ippo", "iql", "mappo"]
    assert len(set(plots.algorithm_colors([f"x{i}" for i in range(15)]).values())) == 15


def test_explicit_colors_must_cover_the_algorithms(tmp_path, scores):
    agg = stats.aggregate(scores, reps=20)
    with pytest.raises(KeyError):
        plots.aggregate_intervals(agg, tmp_path / "a.png", colors={"ippo": (0, 0, 0, 1)})
    colors = plots.algorithm_colors([*scores, "other"])
    _check(plots.aggregate_intervals(agg, tmp_path / "a.png", colors=colors), ".png")
