"""Figures of the evaluation protocol's reports, drawn from `marl.results.stats` outputs.

Each function draws one figure on a standalone `matplotlib.figure.Figure` (Agg canvas, no
pyplot state, no display), saves it to `path` (".png" at 120 dpi or ".svg", by suffix),
closes it and returns the path. Colours come from `algorithm_colors`; pass the same
`colors` mapping (built once from every algorithm of the report) to every figure to keep an
algorithm's colour identical across figures. Without it each figure maps its own algorithms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "aggregate_intervals",
    "algorithm_colors",
    "improvement_probabilities",
    "performance_profiles",
    "sample_efficiency_curves",
    "task_curves",
]

Color = tuple[float, float, float, float]
METRIC_TITLES = {
    "median": "Median",
    "iqm": "IQM",
    "mean": "Mean",
    "optimality_gap": "Optimality gap",
}
_DPI = 120


def algorithm_colors(algos: Iterable[str]) -> dict[str, Color]:
    """Stable algorithm -> colour: the tab10 palette over the sorted names (tab20 beyond 10)."""
    names = sorted(set(algos))
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {a: cmap(i % cmap.N) for i, a in enumerate(names)}


def _colors(algos: Iterable[str], colors: Mapping[str, Color] | None) -> Mapping[str, Color]:
    algos = list(algos)
    if colors is None:
        return algorithm_colors(algos)
    missing = [a for a in algos if a not in colors]
    if missing:
        raise KeyError(f"no colour for algorithms {missing}")
    return colors


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"unsupported figure format {path.suffix!r}: use .png or .svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if suffix == ".png":
            fig.savefig(path, format="png", dpi=_DPI)
        else:
            fig.savefig(path, format="svg")
    finally:
        fig.clear()  # a bare Figure is not registered with pyplot; clearing frees it
    return path


def _band(
    ax: Axes,
    x: Any,
    point: Any,
    low: Any,
    high: Any,
    color: Color,
    label: str,
    step: bool = False,
) -> None:
    x, point, low, high = (np.asarray(v, dtype=np.float64).ravel() for v in (x, point, low, high))
    where: Literal["post"] | None = "post" if step else None
    if step:
        ax.step(x, point, where="post", color=color, label=label, lw=2)
    else:
        ax.plot(x, point, color=color, label=label, lw=2)
    ax.fill_between(x, low, high, color=color, alpha=0.2, lw=0, step=where)


def _interval(ax: Axes, row: float, point: float, low: float, high: float, color: Color) -> None:
    """One row of an interval plot: the CI as a bar, the point as a black tick (always shown,
    also for a degenerate CI or a value on the axis limit)."""
    ax.barh(row, high - low, left=low, height=0.6, color=color, alpha=0.75)
    ax.plot([point], [row], marker="|", ms=16, mew=2.5, color="black", clip_on=False)


def aggregate_intervals(
    agg: Mapping[str, Mapping[str, Sequence[float]]],
    path: str | Path,
    metrics: Sequence[str] = ("median", "iqm", "mean", "optimality_gap"),
    *,
    colors: Mapping[str, Color] | None = None,
    title: str = "Aggregate normalised scores (95% stratified bootstrap CIs)",
) -> Path:
    """rliable-style interval plot: one panel per metric, one row per algorithm (CI bar + point).

    agg: `marl.results.stats.aggregate` output, algorithm -> metric -> (point, low, high).
    """
    algos = sorted(agg)
    cmap = _colors(algos, colors)
    fig = _figure(3.0 * len(metrics) + 1.0, 0.5 * len(algos) + 1.6)
    axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    rows = np.arange(len(algos))
    for j, (ax, m) in enumerate(zip(axes, metrics, strict=True)):
        for r, a in zip(rows, algos, strict=True):
            point, low, high = agg[a][m]
            _interval(ax, float(r), point, low, high, cmap[a])
        ax.set_title(METRIC_TITLES.get(m, m))
        ax.set_xlabel("normalised score" + (" (lower is better)" if m == "optimality_gap" else ""))
        ax.grid(axis="x", alpha=0.3)
        ax.use_sticky_edges = False
        ax.margins(x=0.08)
        if j:
            ax.tick_params(labelleft=False)
    axes[0].set_yticks(rows, algos)
    axes[0].set_ylabel("algorithm")
    axes[0].set_ylim(len(algos) - 0.4, -0.6)  # first algorithm on top
    fig.suptitle(title)
    return _save(fig, path)


def performance_profiles(
    profiles: Mapping[str, Sequence[np.ndarray]],
    path: str | Path,
    *,
    colors: Mapping[str, Color] | None = None,
    title: str = "Performance profiles",
) -> Path:
    """Score distributions with shaded CI bands.

    profiles: algorithm -> (taus [T], fraction [T], low [T], high [T]), the fraction and CI as
    returned by `marl.results.stats.performance_profile` for those taus.
    """
    algos = sorted(profiles)
    cmap = _colors(algos, colors)
    fig = _figure(6.0, 4.0)
    ax = fig.add_subplot()
    for a in algos:
        taus, frac, low, high = profiles[a]
        _band(ax, taus, frac, low, high, cmap[a], a, step=True)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"normalised score $\tau$")
    ax.set_ylabel(r"fraction of runs with score > $\tau$")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    return _save(fig, path)


def improvement_probabilities(
    pairs: Mapping[tuple[str, str], Sequence[float]],
    path: str | Path,
    *,
    colors: Mapping[str, Color] | None = None,
    title: str = "Probability of improvement P(X > Y)",
) -> Path:
    """One row per pair "X vs Y": CI bar and point of P(X > Y), x in [0, 1], line at 0.5.

    pairs: `marl.results.stats.pairwise_improvement` output (or a subset of it); bars take X's
    colour.
    """
    keys = sorted(pairs)
    cmap = _colors({x for x, _ in keys}, colors)
    fig = _figure(6.0, 0.45 * len(keys) + 1.4)
    ax = fig.add_subplot()
    rows = np.arange(len(keys))
    for r, (x, y) in zip(rows, keys, strict=True):
        point, low, high = pairs[(x, y)]
        _interval(ax, float(r), point, low, high, cmap[x])
    ax.axvline(0.5, color="grey", lw=1, ls="--")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(-0.6, max(len(keys), 1) - 0.4)
    ax.set_yticks(rows, [f"{x} vs {y}" for x, y in keys])
    ax.invert_yaxis()
    ax.set_xlabel("P(X > Y)")
    ax.set_ylabel("algorithm X vs algorithm Y")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def _curves(
    curves: Mapping[str, Sequence[Any]],
    path: str | Path,
    cmap: Mapping[str, Color],
    xlabel: str,
    ylabel: str,
    title: str,
) -> Path:
    """Lines with CI bands, one per algorithm: curves[a] = (steps, point, low, high, ...)."""
    fig = _figure(6.0, 4.0)
    ax = fig.add_subplot()
    for a in sorted(curves):
        steps, point, low, high = curves[a][:4]
        _band(ax, steps, point, low, high, cmap[a], a)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    return _save(fig, path)


def sample_efficiency_curves(
    curves: Mapping[str, Sequence[Any]],
    path: str | Path,
    xlabel: str | None = None,
    ylabel: str = "IQM normalised score",
    *,
    colors: Mapping[str, Color] | None = None,
    title: str = "Sample efficiency",
) -> Path:
    """IQM curves with CI bands; curves: algorithm -> (steps, point, low, high[, xlabel]).

    `marl.results.stats.sample_efficiency` results can be passed as they are. With xlabel None the
    label is the curves' own xlabel (ValueError if they disagree, i.e. some algorithms are on
    environment steps and others on fractions of training), else "environment steps".
    """
    algos = sorted(curves)
    cmap = _colors(algos, colors)
    if xlabel is None:
        labels = {str(curves[a][4]) for a in algos if len(curves[a]) > 4}
        if len(labels) > 1:
            raise ValueError(f"curves have different x axes: {sorted(labels)}")
        xlabel = labels.pop() if labels else "environment steps"
    return _curves(curves, path, cmap, xlabel, ylabel, title)


def task_curves(
    per_algo: Mapping[str, Sequence[np.ndarray]],
    path: str | Path,
    title: str,
    ylabel: str,
    *,
    xlabel: str = "environment steps",
    colors: Mapping[str, Color] | None = None,
) -> Path:
    """Raw-metric curve of one task: per_algo: algorithm -> (steps, mean, low, high)."""
    algos = sorted(per_algo)
    cmap = _colors(algos, colors)
    return _curves(per_algo, path, cmap, xlabel, ylabel, title)


def head_to_head(
    names: Sequence[str],
    score: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    path: str | Path,
    *,
    title: str = "Head to head",
) -> Path:
    """A cross-play matrix: cell (i, j) is row i's mean score against column j (1 a win, 0.5
    a draw), coloured from red (0) through white (0.5) to blue (1), with its interval written
    in; the diagonal (a player against itself) is blank."""
    score, low, high = (np.asarray(v, dtype=np.float64) for v in (score, low, high))
    n = len(names)
    fig = _figure(1.2 * n + 2.2, 1.0 * n + 1.4)
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(score), cmap="RdBu", vmin=0.0, vmax=1.0)
    for i in range(n):
        for j in range(n):
            if np.isfinite(score[i, j]):
                text = f"{score[i, j]:.2f}\n[{low[i, j]:.2f}, {high[i, j]:.2f}]"
                dark = abs(score[i, j] - 0.5) > 0.3
                ax.text(
                    j,
                    i,
                    text,
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
    ax.set_xticks(range(n), names, rotation=30, ha="right")
    ax.set_yticks(range(n), names)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="mean score (win 1, draw 0.5)")
    return _save(fig, path)
