"""The site's content (`marl.results.site`): the scores, each task's unit and figure, each cell's
records; read from the `Study`, the numbers from one call, `site_scores`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from marl.results import plots, stats
from marl.results.leaderboard import leaderboard
from marl.results.protocol import Record
from marl.results.published import Published
from marl.results.study import METRIC, Study, lower_is_better


def site_scores(
    study: Study,
    reps: int = stats.REPS,
    seed: int = 0,
    published: Sequence[Published] = (),
    notes: dict[str, str] | None = None,
    verified: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The numbers the site shows, with each cell's flags, explanation and verification:
    `marl.results.leaderboard.leaderboard`'s (swap this one call for another scoring rule)."""
    return leaderboard(
        study, reps=reps, seed=seed, published=published, notes=notes, verified=verified
    )


def slug(name: str) -> str:
    """A task or learner name as a file name: `combat/3m` -> `combat_3m`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "_"


def href(target: Path, page_dir: Path) -> str:
    """The URL of `target` relative to a page in `page_dir` (both absolute, not resolved)."""
    return quote(Path(os.path.relpath(target, page_dir)).as_posix(), safe="/")


@dataclass
class Cell:
    """One learner on one task: the board's row and its records."""

    task: str
    algo: str
    row: dict[str, Any]
    records: list[Record]
    tier: str
    key: str = ""  # the benchmark's cell key (`task/algo[@variant]`); "" outside a benchmark

    @property
    def page(self) -> str:
        return f"cells/{slug(self.task)}/{slug(self.algo)}.html"

    @property
    def data(self) -> str:
        """The cell's data file: per-seed values and curves (`marl.results.site_files`)."""
        return f"data/cells/{slug(self.task)}/{slug(self.algo)}.json"


@dataclass
class Site:
    """What the pages show: the board, each task's unit and cells, the figures."""

    study: Study
    board: dict[str, Any]
    out: Path
    command: str
    cells: dict[tuple[str, str], Cell]
    units: dict[str, str]  # task -> the metric its curves and matrix show
    lower: dict[str, bool]  # task -> lower of that metric is better
    tiers: dict[str, list[str]]
    figures: dict[str, Path]  # task -> figure
    coverage: dict[str, Any] | None

    def task_page(self, task: str) -> str:
        return f"tasks/{slug(task)}.html"

    def ranked(self, cell: Cell) -> tuple[str, dict[str, float]]:
        """(name, interval) of the statistic that ranks a cell's task: what every page shows,
        shades and sorts (`marl.results.leaderboard.statistic`)."""
        data = self.board["tasks"][cell.task]
        return data["statistic"], cell.row[data["ranked_by"]]


def _tiers(coverage: dict[str, Any] | None) -> dict[tuple[str, str], tuple[str, str]]:
    """(task, algo) -> (tier, cell key) of its benchmark cell
    (`marl.run.campaigns.benchmark_runs.coverage`)."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for row in (coverage or {}).get("cells", []):
        task, _, algo = row["cell"].split("@")[0].rpartition("/")
        out.setdefault((task, algo), (row["tier"], row["cell"]))
    return out


def _unit(study: Study, task: str) -> str:
    """The metric a task's pages show: its natural unit where every learner recorded it."""
    unit = study.headline.get(task, METRIC)
    algos = [a for t, a in study.entries if t == task]
    return unit if all(study.headline_unit(task, a) == unit for a in algos) else study.metric


def _figure(study: Study, task: str, unit: str, path: Path, reps: int, seed: int) -> Path:
    """A task's curves in `unit` against env steps: every learner, mean over seeds with its
    95% bootstrap band."""
    per_algo = {}
    for (t, algo), entry in sorted(study.entries.items()):
        if t == task:
            steps, values = entry.curve(unit)
            per_algo[algo] = stats.mean_curve(steps, values, reps=reps, seed=seed)
    return plots.task_curves(
        per_algo,
        path,
        title=task,
        ylabel=unit.replace("_", " "),
        colors=plots.algorithm_colors(study.algorithms),
    )


def build_site(
    study: Study,
    out: str | Path,
    *,
    reps: int = stats.REPS,
    seed: int = 0,
    published: Sequence[Published] = (),
    coverage: dict[str, Any] | None = None,
    command: str = "",
    notes: dict[str, str] | None = None,
    verified: dict[str, dict[str, Any]] | None = None,
) -> Site:
    """The site's content (figures drawn into `out/figures`); `write_site` writes the pages.
    `notes`: explanations of flagged cells (cell id -> paragraph, `marl.results.flags`)."""
    out = Path(os.path.abspath(out))
    board = site_scores(
        study, reps=reps, seed=seed, published=list(published), notes=notes, verified=verified
    )
    slugs: dict[str, str] = {}
    for task in study.tasks:
        other = slugs.setdefault(slug(task), task)
        if other != task:
            raise ValueError(f"tasks {other!r} and {task!r} share the file name {slug(task)!r}")
    tiers_of = _tiers(coverage)
    cells: dict[tuple[str, str], Cell] = {}
    tiers: dict[str, list[str]] = {}
    for task, data in board["tasks"].items():
        for row in data["rows"]:
            algo = row["algorithm"]
            entry = study.entries[(task, algo)]
            tier, key = tiers_of.get((task, algo), ("", ""))
            cell = Cell(task, algo, row, list(entry.records), tier, key=key)
            cells[(task, algo)] = cell
        tiers[task] = sorted({c.tier for (t, _), c in cells.items() if t == task and c.tier})
    units = {task: _unit(study, task) for task in study.tasks}
    lower = {}
    for task, unit in units.items():
        records = [r for (t, _), e in study.entries.items() if t == task for r in e.records]
        lower[task] = lower_is_better(task, unit, records)
    figures = {
        task: _figure(study, task, units[task], out / "figures" / f"{slug(task)}.png", reps, seed)
        for task in study.tasks
    }
    return Site(study, board, out, command, cells, units, lower, tiers, figures, coverage)


def shade(site: Site, task: str) -> dict[str, float]:
    """algo -> where its ranked statistic lies among the task's learners, 0 (worst) to 1
    (best), in the statistic's direction (0.5 where all are equal)."""
    points = {a: site.ranked(c)[1]["point"] for (t, a), c in site.cells.items() if t == task}
    low, high = min(points.values()), max(points.values())
    if not np.isfinite(high - low) or high - low <= 1e-12 * max(1.0, abs(high)):
        return dict.fromkeys(points, 0.5)
    pos = {a: (p - low) / (high - low) for a, p in points.items()}
    data = site.board["tasks"][task]
    lower = data["ranked_by"] == "absolute_mean" and data["lower_is_better"]
    return {a: 1.0 - v for a, v in pos.items()} if lower else pos
