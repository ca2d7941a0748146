"""Reports and the leaderboard: records in, normalised aggregates, plots, Markdown and HTML out.

```
records (marl.results.protocol.load)  ->  collect: one Entry per (task, algorithm), runs pooled
                                  over records; anchors per task (random, reference)
                              ->  normalise: (score - random) / (reference - random)
                              ->  marl.results.stats: IQM, mean, median, optimality gap, profiles,
                                  P(improvement), sample efficiency, stratified bootstrap CIs
                              ->  marl.results.plots figures; report.md, self-contained report.html,
                                  report.json  (write_report)
                              ->  leaderboard.md/.json/.html (write_leaderboard)
```

Scores are the absolute metric (each seed's best evaluated parameters re-evaluated; the last
evaluation for records that lack it), one per run; the number of runs is read from the data.
The anchors come from the records' sidecars (computed by `marl train` with the same episodes
for every run of a task) or, for a registered task without them, from `marl.baselines`. A task
without a reference score is shown in its own table but left out of normalised aggregates.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from marl.results import plots, stats
from marl.results.protocol import Record, RecordError, Run, check_comparable, split_comparable

METRIC = "episode_return"
ANCHOR_RTOL = 1e-4


@dataclass
class Anchors:
    """A task's normalisation: 0 at the random policy's score, 1 at the reference's."""

    random: float
    reference: float
    source: str  # "records" or "baselines"

    def normalise(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, np.float64) - self.random) / (self.reference - self.random)


@dataclass
class Entry:
    """All runs of one algorithm on one task, pooled over its records."""

    task: str
    algorithm: str
    records: list[Record] = field(default_factory=list)

    @property
    def runs(self) -> list[Run]:
        return [run for r in self.records for run in r.runs]

    @property
    def external(self) -> bool:
        return any(r.external for r in self.records)

    def scores(self, metric: str) -> np.ndarray:
        """[runs] the absolute metric of every run."""
        return np.concatenate([r.absolute_metric(metric) for r in self.records])

    def curve(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps [K], values [K, runs]) over all runs; the records must share the step grid."""
        steps, first = self.records[0].curve(metric)
        values = [first]
        for r in self.records[1:]:
            s, v = r.curve(metric)
            if not np.array_equal(s, steps):
                raise RecordError(
                    f"{r.path}: evaluation steps differ from {self.records[0].path} for "
                    f"{self.task} {self.algorithm}; pool only runs with the same schedule"
                )
            values.append(v)
        return steps, np.concatenate(values, axis=1)


@dataclass
class Study:
    """Records collected per (task, algorithm) with each task's anchors."""

    metric: str
    entries: dict[tuple[str, str], Entry]
    anchors: dict[str, Anchors | None]
    lower: dict[str, bool] = field(default_factory=dict)  # task -> metric is lower-is-better

    @property
    def tasks(self) -> list[str]:
        return sorted({t for t, _ in self.entries})

    @property
    def algorithms(self) -> list[str]:
        return sorted({a for _, a in self.entries})

    def normalised_scores(self) -> dict[str, dict[str, np.ndarray]]:
        """algorithm -> task -> [runs], tasks with anchors only."""
        out: dict[str, dict[str, np.ndarray]] = {}
        for (task, algo), entry in sorted(self.entries.items()):
            anchors = self.anchors.get(task)
            if anchors is not None:
                out.setdefault(algo, {})[task] = anchors.normalise(entry.scores(self.metric))
        return out

    def normalised_curves(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """algorithm -> task -> (steps, values [K, runs]), tasks with anchors only."""
        out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        for (task, algo), entry in sorted(self.entries.items()):
            anchors = self.anchors.get(task)
            if anchors is not None:
                steps, values = entry.curve(self.metric)
                out.setdefault(algo, {})[task] = (steps, anchors.normalise(values))
        return out


@dataclass(frozen=True)
class Group:
    """Normalised tasks that exactly the same algorithms ran: the only task sets over which
    aggregates, profiles, P(improvement) and sample-efficiency curves compare (rliable)."""

    name: str
    tasks: tuple[str, ...]
    algorithms: tuple[str, ...]

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "_", self.name).strip("_")


def comparable_groups(scores: dict[str, dict[str, np.ndarray]]) -> list[Group]:
    """Per family (the env id's first part), its tasks grouped by the exact set of algorithms
    that ran them (most tasks first); then each such group of tasks across families, where it
    spans more than one. `scores`: algorithm -> task -> [runs]."""
    ran: dict[str, tuple[str, ...]] = {}
    for algo, by in scores.items():
        for task in by:
            ran[task] = tuple(sorted({*ran.get(task, ()), algo}))

    def split(tasks: list[str]) -> list[tuple[tuple[str, ...], list[str]]]:
        sets: dict[tuple[str, ...], list[str]] = {}
        for task in sorted(tasks):
            sets.setdefault(ran[task], []).append(task)
        return sorted(sets.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    groups: list[Group] = []
    families = sorted({t.split("/")[0] for t in ran})
    for family in families:
        parts = split([t for t in ran if t.split("/")[0] == family])
        for i, (algos, tasks) in enumerate(parts):
            name = family if len(parts) == 1 else f"{family} (task set {i + 1})"
            groups.append(Group(name, tuple(tasks), algos))
    for algos, tasks in split(list(ran)):
        spanned = sorted({t.split("/")[0] for t in tasks})
        if len(spanned) > 1:
            groups.append(Group("across " + " + ".join(spanned), tuple(tasks), algos))
    return groups


def _subset(scores: dict[str, dict[str, Any]], group: Group) -> dict[str, dict[str, Any]]:
    return {a: {t: scores[a][t] for t in group.tasks} for a in group.algorithms}


def _record_anchors(task: str, records: Sequence[Record], metric: str) -> Anchors | None:
    found: list[tuple[Record, dict[str, Any]]] = []
    for r in records:
        a = (r.meta or {}).get("anchors")
        if a and a.get("metric", METRIC) == metric and a.get("reference") is not None:
            found.append((r, a))
    if not found:
        return None
    (ref_record, ref), others = found[0], found[1:]
    for r, a in others:
        for key in ("random", "reference"):
            if not math.isclose(a[key], ref[key], rel_tol=ANCHOR_RTOL, abs_tol=1e-6):
                raise RecordError(
                    f"records of {task} disagree on the {key} anchor: {ref[key]!r} in "
                    f"{ref_record.path} but {a[key]!r} in {r.path} (different environment "
                    "settings or package versions?)"
                )
    return Anchors(float(ref["random"]), float(ref["reference"]), "records")


def lower_is_better(task: str, metric: str, records: Sequence[Record] = ()) -> bool:
    """Whether a lower `metric` (record name, e.g. `lost`, `episode_length`) is better on
    `task` (`family/name`, keywords in brackets ignored): as the task's `records` say (their
    sidecars name the env's `EnvSpec.lower_is_better`), else as the registered env's spec;
    False for returns and for tasks neither knows."""
    if metric == METRIC or metric.startswith(METRIC + "/"):
        return False
    said = [r.meta["lower_is_better"] for r in records if "lower_is_better" in (r.meta or {})]
    if said:
        return any(metric in names for names in said)
    return _registered_lower_is_better(task.split("[", 1)[0], metric)


def headline_metric(task: str, records: Sequence[Record] = ()) -> str:
    """The record metric in `task`'s natural unit (`EnvSpec.headline_metric`: `won` on combat,
    `success_rate` on pathfinding): as its records' sidecars say, else the registered env's,
    else the return."""
    said = {r.meta["headline_metric"] for r in records if "headline_metric" in (r.meta or {})}
    if len(said) == 1:
        return said.pop()
    return _registered_headline(task.split("[", 1)[0])


@functools.cache
def _registered_headline(env_id: str) -> str:
    from marl.core.registry import RegistryError, make
    from marl.results.protocol import record_metric

    try:
        return record_metric(make(env_id).spec.headline_metric)
    except (RegistryError, TypeError, ValueError):
        return METRIC


@functools.cache
def _registered_lower_is_better(env_id: str, metric: str) -> bool:
    from marl.core.registry import RegistryError, make
    from marl.results.protocol import record_metric

    try:
        spec = make(env_id).spec
    except (RegistryError, TypeError, ValueError):
        return False
    return metric in {record_metric(m) for m in spec.lower_is_better}


def _usable(task: str, anchors: Anchors | None, lower: bool) -> Anchors | None:
    """`anchors` if the reference beats the random policy in the metric's direction; else None
    with a warning (normalising by them would rank the algorithms backwards or divide by 0)."""
    if anchors is None:
        return None
    gap = anchors.random - anchors.reference if lower else anchors.reference - anchors.random
    if gap > 1e-9 * max(1.0, abs(anchors.random), abs(anchors.reference)):
        return anchors
    warnings.warn(
        f"{task}: the reference ({anchors.reference:.4g}) does not beat the random policy "
        f"({anchors.random:.4g}); the task is left unnormalised",
        stacklevel=3,
    )
    return None


def _baseline_anchors(task: str, metric: str, episodes: int) -> Anchors | None:
    """Anchors computed by `marl.baselines` for a registered task with default keywords."""
    if metric != METRIC:
        return None
    from marl.baselines import anchor_scores
    from marl.core.registry import RegistryError, make

    try:
        env = make(task)
    except (RegistryError, TypeError, ValueError):
        return None
    a = anchor_scores(env, num_episodes=episodes)
    if a["scripted"] is None:
        return None
    return Anchors(float(a["random"]), float(a["scripted"]), "baselines")


def collect(records: Sequence[Record], metric: str = METRIC, compute_anchors: bool = True) -> Study:
    """Group records per (task, algorithm), check they are comparable, find the anchors."""
    if not records:
        raise RecordError("no finished run records found")
    check_comparable(records)
    entries: dict[tuple[str, str], Entry] = {}
    for r in records:
        missing = [run.name for run in r.runs if metric not in run.metrics]
        if missing:
            have = ", ".join(sorted(r.runs[0].metrics))
            raise RecordError(
                f"{r.path}: {r.env_id}/{r.algorithm}: no metric {metric!r}; has {have}"
            )
        entries.setdefault((r.env_id, r.algorithm), Entry(r.env_id, r.algorithm)).records.append(r)
    anchors: dict[str, Anchors | None] = {}
    lower = {}
    for task in sorted({t for t, _ in entries}):
        task_records = [r for (t, _), e in entries.items() if t == task for r in e.records]
        lower[task] = lower_is_better(task, metric, task_records)
        found = _record_anchors(task, task_records, metric)
        if found is None and compute_anchors:
            episodes = max(
                (int((r.meta or {}).get("protocol", {}).get("absolute_episodes") or 0))
                for r in task_records
            )
            found = _baseline_anchors(task, metric, episodes or 320)
        anchors[task] = _usable(task, found, lower[task])
    return Study(metric, entries, anchors, lower)


# --- numbers ----------------------------------------------------------------------------------
def _interval(x: Sequence[float]) -> dict[str, float]:
    point, low, high = (float(v) for v in x)
    return {"point": point, "low": low, "high": high}


def summarise(study: Study, reps: int = stats.REPS, seed: int = 0) -> dict[str, Any]:
    """Every number of a report (JSON-able): per task and algorithm, aggregates, pairs."""
    tasks: dict[str, Any] = {}
    for task in study.tasks:
        anchors = study.anchors.get(task)
        rows = {}
        for algo in study.algorithms:
            entry = study.entries.get((task, algo))
            if entry is None:
                continue
            raw = entry.scores(study.metric)
            final = np.concatenate([r.final(study.metric) for r in entry.records])
            row: dict[str, Any] = {
                "runs": int(raw.size),
                "external": entry.external,
                "absolute_mean": _interval(stats.mean_ci(raw, reps=reps, seed=seed)),
                "absolute_iqm": _interval(stats.iqm_ci(raw, reps=reps, seed=seed)),
                "final_mean": float(np.mean(final)),
                "env_steps": int(entry.runs[0].steps[-1]),
                "sources": sorted({str(r.path) for r in entry.records}),
            }
            unit = headline_metric(task, entry.records)
            if unit != study.metric and all(unit in run.metrics for run in entry.runs):
                row["headline"] = {
                    "metric": unit,
                    "mean": _interval(stats.mean_ci(entry.scores(unit), reps=reps, seed=seed)),
                }
            metas = [r.meta for r in entry.records if r.meta and "wall_time" in r.meta]
            if metas and len(metas) == len(entry.records):
                row["wall_time_s"] = float(sum(m["wall_time"] for m in metas))
                row["steps_per_second"] = float(
                    sum(m["env_steps"] * m["seeds"] for m in metas) / row["wall_time_s"]
                )
            if anchors is not None:
                row["normalised_iqm"] = _interval(
                    stats.iqm_ci(anchors.normalise(raw), reps=reps, seed=seed)
                )
            rows[algo] = row
        tasks[task] = {
            "anchors": None if anchors is None else anchors.__dict__,
            "lower_is_better": study.lower.get(task, False),
            "algorithms": rows,
        }
    scores = study.normalised_scores()
    groups = []
    for g in comparable_groups(scores):
        sub = _subset(scores, g)
        agg = stats.aggregate(sub, reps=reps, seed=seed)
        pairs = stats.pairwise_improvement(sub, reps=reps, seed=seed) if len(sub) > 1 else {}
        groups.append(
            {
                "name": g.name,
                "tasks": list(g.tasks),
                "algorithms": list(g.algorithms),
                "aggregates": {
                    a: {m: _interval(v) for m, v in by.items()} for a, by in agg.items()
                },
                "improvement": {f"{x} > {y}": _interval(v) for (x, y), v in pairs.items()},
            }
        )
    return {
        "metric": study.metric,
        "reps": reps,
        "confidence": 0.95,
        "tasks": tasks,
        "normalised_tasks": sorted({t for by in scores.values() for t in by}),
        "groups": groups,
    }


# --- report -----------------------------------------------------------------------------------
def _fmt(iv: dict[str, float] | None, digits: int = 2) -> str:
    if iv is None:
        return "n/a"
    return f"{iv['point']:.{digits}f} [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]"


def _figures(study: Study, out: Path, reps: int, seed: int) -> dict[str, Path]:
    """Draw every figure of a report into `out`; name -> path."""
    fig_dir = out / "figures"
    colors = plots.algorithm_colors(study.algorithms)
    figs: dict[str, Path] = {}
    scores = study.normalised_scores()
    curves_by_algo = study.normalised_curves()
    for g in comparable_groups(scores):
        sub = _subset(scores, g)
        tag = g.slug
        agg = stats.aggregate(sub, reps=reps, seed=seed)
        figs[f"aggregates/{tag}"] = plots.aggregate_intervals(
            agg, fig_dir / f"aggregates_{tag}.png", colors=colors
        )
        everything = np.concatenate([v for by in sub.values() for v in by.values()])
        taus = np.linspace(min(0.0, everything.min()), max(1.0, everything.max()), 101)
        profiles = {}
        for algo, by in sub.items():
            frac, low, high = stats.performance_profile(
                [by[t] for t in sorted(by)], taus, reps=reps, seed=seed
            )
            profiles[algo] = (taus, frac, low, high)
        figs[f"profiles/{tag}"] = plots.performance_profiles(
            profiles, fig_dir / f"performance_profiles_{tag}.png", colors=colors
        )
        if len(sub) > 1:
            pairs = stats.pairwise_improvement(sub, reps=reps, seed=seed)
            figs[f"improvement/{tag}"] = plots.improvement_probabilities(
                pairs, fig_dir / f"improvement_{tag}.png", colors=colors
            )
        curves = {}
        for algo, by in _subset(curves_by_algo, g).items():
            try:
                curves[algo] = stats.sample_efficiency(by, reps=reps, seed=seed)
            except ValueError:  # tasks with different evaluation counts: no pooled curve
                continue
        labels = {c.xlabel for c in curves.values()}
        if curves and len(labels) == 1:
            figs[f"sample_efficiency/{tag}"] = plots.sample_efficiency_curves(
                curves, fig_dir / f"sample_efficiency_{tag}.png", colors=colors
            )
    for task in study.tasks:
        per_algo = {}
        for algo in study.algorithms:
            entry = study.entries.get((task, algo))
            if entry is not None:
                steps, values = entry.curve(study.metric)
                per_algo[algo] = stats.mean_curve(steps, values, reps=reps, seed=seed)
        name = "task_" + task.replace("/", "_")
        figs[name] = plots.task_curves(
            per_algo,
            fig_dir / f"{name}.png",
            title=f"{task}: greedy evaluation (mean over runs, 95% CI)",
            ylabel=study.metric.replace("_", " "),
            colors=colors,
        )
    return figs


FIGURE_TITLES = {
    "aggregates": "Aggregate normalised scores (absolute metric, 95% stratified bootstrap CIs)",
    "profiles": "Performance profiles",
    "improvement": "Probability of improvement",
    "sample_efficiency": "Sample efficiency (IQM of normalised score over runs and tasks)",
}


def _markdown(summary: dict[str, Any], figs: dict[str, Path], out: Path, title: str) -> str:
    lines = [f"# {title}", ""]
    lines += [
        f"Metric `{summary['metric']}`; per run the absolute metric (the parameters of the "
        "best evaluation by the run's `protocol.metric`, re-evaluated). Normalised: 0 = random "
        "policy, 1 = reference (scripted) policy. "
        f"Intervals are 95% bootstrap CIs ({summary['reps']} replicates; stratified over tasks "
        "for aggregates).",
        "",
    ]
    if len(summary["groups"]) > 1:
        lines += [
            "Aggregates over different task sets do not compare, so each section below ranks "
            "the algorithms that ran exactly the same tasks, over those tasks: per family, "
            "then across families where the same algorithms ran tasks of several.",
            "",
        ]
    for g in summary["groups"]:
        lines += [
            f"## {g['name']}: {len(g['tasks'])} task(s)",
            "",
            "Tasks: " + ", ".join(g["tasks"]),
            "",
            "| algorithm | IQM | mean | median | optimality gap |",
            "|---|---|---|---|---|",
        ]
        for algo, agg in sorted(g["aggregates"].items(), key=lambda kv: -kv[1]["iqm"]["point"]):
            lines.append(
                f"| {algo} | {_fmt(agg['iqm'])} | {_fmt(agg['mean'])} | {_fmt(agg['median'])} "
                f"| {_fmt(agg['optimality_gap'])} |"
            )
        lines.append("")
        if g["improvement"]:
            lines += ["| pair | P(X > Y) |", "|---|---|"]
            lines += [f"| {pair} | {_fmt(iv)} |" for pair, iv in sorted(g["improvement"].items())]
            lines.append("")
        slug = Group(g["name"], (), ()).slug
        for name in ("aggregates", "profiles", "improvement", "sample_efficiency"):
            key = f"{name}/{slug}"
            if key in figs:
                lines += [
                    f"### {FIGURE_TITLES[name]}: {g['name']}",
                    "",
                    f"![{key}]({figs[key].relative_to(out)})",
                    "",
                ]
    lines += ["## Tasks", ""]
    for task, data in summary["tasks"].items():
        a = data["anchors"]
        anchor_text = (
            f"anchors: random {a['random']:.3f}, reference {a['reference']:.3f} ({a['source']})"
            if a
            else "no reference score: not normalised, not in the aggregates"
        ) + ("; lower is better" if data.get("lower_is_better") else "")
        lines += [
            f"### {task}",
            "",
            anchor_text,
            "",
            "| algorithm | runs | absolute metric, mean [95% CI] | IQM [95% CI] | normalised IQM "
            "| final evaluation mean | env steps |",
            "|---|---|---|---|---|---|---|",
        ]
        sign = 1.0 if data.get("lower_is_better") else -1.0  # best first
        rows = sorted(
            data["algorithms"].items(), key=lambda kv: sign * kv[1]["absolute_mean"]["point"]
        )
        for algo, row in rows:
            name = algo + (" (external)" if row["external"] else "")
            lines.append(
                f"| {name} | {row['runs']} | {_fmt(row['absolute_mean'])} | "
                f"{_fmt(row['absolute_iqm'])} | {_fmt(row.get('normalised_iqm'))} | "
                f"{row['final_mean']:.2f} | {row['env_steps']:,} |"
            )
        key = "task_" + task.replace("/", "_")
        if key in figs:
            lines += ["", f"![{task}]({figs[key].relative_to(out)})"]
        lines.append("")
    return "\n".join(lines)


def _html(markdown: str, figs: dict[str, Path], out: Path, title: str) -> str:
    """A self-contained page: the Markdown's tables and headings, figures inlined as data URIs."""
    embedded = {
        str(p.relative_to(out)): base64.b64encode(p.read_bytes()).decode("ascii")
        for p in figs.values()
    }
    body: list[str] = []
    table: list[str] = []

    def flush_table() -> None:
        if not table:
            return
        rows = [r.strip().strip("|").split("|") for r in table if not set(r) <= set("|- ")]
        head, *rest = rows
        body.append("<table><thead><tr>")
        body.extend(f"<th>{html.escape(c.strip())}</th>" for c in head)
        body.append("</tr></thead><tbody>")
        for r in rest:
            body.append("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>")
        body.append("</tbody></table>")
        table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush_table()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("!["):
            alt, src = line[2:].split("](", 1)
            src = src.rstrip(")")
            data = embedded.get(src)
            if data is not None:
                body.append(f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">')
        elif line.strip():
            text = html.escape(line).replace("`", "")
            body.append(f"<p>{text}</p>")
    flush_table()
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        "img{max-width:100%;margin:1em 0}h1,h2,h3{margin-top:1.5em}"
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(
    study: Study, out: str | Path, title: str = "marl report", reps: int = stats.REPS, seed: int = 0
) -> dict[str, Path]:
    """Write `report.md`, `report.html` (self-contained), `report.json` and `figures/` to `out`."""
    from marl.run.rundir import atomic_write, write_json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(study, reps=reps, seed=seed)
    summary["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    figs = _figures(study, out, reps, seed)
    markdown = _markdown(summary, figs, out, title)
    atomic_write(out / "report.md", markdown + "\n")
    atomic_write(out / "report.html", _html(markdown, figs, out, title))
    write_json(out / "report.json", summary)
    return {"md": out / "report.md", "html": out / "report.html", "json": out / "report.json"}


def write_sectioned_report(
    records: Sequence[Record],
    out: str | Path,
    title: str = "marl report",
    metric: str = METRIC,
    reps: int = stats.REPS,
    seed: int = 0,
    compute_anchors: bool = True,
) -> tuple[dict[str, Path], list[Study]]:
    """`write_report` over records that may mix protocols or budgets on a task: one report
    where they do not; otherwise each comparable section (`protocol.split_comparable`) in its
    own folder `section-K/`, and `report.md`/`.html`/`.json` in `out` an index saying which
    records were kept apart and why. -> (index paths, the sections' studies)."""
    from marl.run.rundir import atomic_write, write_json

    sections = split_comparable(records)
    if len(sections) == 1:
        study = collect(records, metric=metric, compute_anchors=compute_anchors)
        return write_report(study, out, title=title, reps=reps, seed=seed), [study]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# {title}",
        "",
        f"Records of a task made under different protocols or budgets do not compare, so "
        f"this report has {len(sections)} sections, each a report of its own: section 1 holds "
        "each task's largest set of records that share their settings, the later sections "
        "the records kept apart from it.",
        "",
    ]
    studies, index = [], []
    for k, section in enumerate(sections, 1):
        study = collect(section.records, metric=metric, compute_anchors=compute_anchors)
        folder = f"section-{k}"
        write_report(study, out / folder, title=f"{title}: section {k}", reps=reps, seed=seed)
        studies.append(study)
        lines += [
            f"## Section {k}: [{folder}/report.md]({folder}/report.md)",
            "",
            f"{len(study.tasks)} task(s) ({', '.join(study.tasks)}), "
            f"{len(study.algorithms)} algorithm(s) ({', '.join(study.algorithms)}).",
            "",
        ]
        if section.kept_apart:
            lines += ["| task | setting | here | in section 1 |", "|---|---|---|---|"]
            lines += [f"| {t} | {key} | {a!r} | {b!r} |" for t, key, a, b in section.kept_apart]
            lines.append("")
        index.append(
            {
                "folder": folder,
                "tasks": study.tasks,
                "algorithms": study.algorithms,
                "kept_apart": [
                    {"task": t, "setting": key, "value": a, "first_section": b}
                    for t, key, a, b in section.kept_apart
                ],
            }
        )
    markdown = "\n".join(lines)
    atomic_write(out / "report.md", markdown + "\n")
    atomic_write(out / "report.html", _html(markdown, {}, out, title))
    write_json(out / "report.json", {"metric": metric, "sections": index})
    paths = {"md": out / "report.md", "html": out / "report.html", "json": out / "report.json"}
    return paths, studies


# --- leaderboard ------------------------------------------------------------------------------
def leaderboard(study: Study, reps: int = stats.REPS, seed: int = 0) -> dict[str, Any]:
    """Rankings per task (normalised IQM of the absolute metric; raw mean where a task has no
    reference) and overall: per group of normalised tasks that the same algorithms ran, the
    IQM over the group's tasks (stratified bootstrap CI)."""
    summary = summarise(study, reps=reps, seed=seed)
    tasks = {}
    for task, data in summary["tasks"].items():
        key = "normalised_iqm" if data["anchors"] else "absolute_mean"
        # normalised scores rise towards the reference whatever the metric's direction
        sign = 1.0 if key == "absolute_mean" and data.get("lower_is_better") else -1.0
        ranked = sorted(data["algorithms"].items(), key=lambda kv: sign * kv[1][key]["point"])
        tasks[task] = {
            "ranked_by": key,
            "lower_is_better": data["lower_is_better"],
            "anchors": data["anchors"],
            "rows": [{"rank": i + 1, "algorithm": a, **row} for i, (a, row) in enumerate(ranked)],
        }
    overall = []
    for g in summary["groups"]:
        ranked = sorted(g["aggregates"], key=lambda a: -g["aggregates"][a]["iqm"]["point"])
        overall.append(
            {
                "name": g["name"],
                "tasks": g["tasks"],
                "improvement": g["improvement"],
                "rows": [
                    {
                        "rank": i + 1,
                        "algorithm": algo,
                        "external": any(
                            e.external for (t, a), e in study.entries.items() if a == algo
                        ),
                        **g["aggregates"][algo],
                    }
                    for i, algo in enumerate(ranked)
                ],
            }
        )
    return {
        "metric": summary["metric"],
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tasks": tasks,
        "overall": overall,
    }


def leaderboard_markdown(
    board: dict[str, Any], command: str = "", figs: dict[str, str] | None = None
) -> str:
    """The leaderboard as Markdown; `figs`: figure name -> path relative to the file, shown
    under each group (aggregates, sample efficiency) and task (evaluation curves)."""
    figs = figs or {}

    def figure(key: str, title: str) -> list[str]:
        return [f"![{title}]({figs[key]})", ""] if key in figs else []

    lines = [
        "# Leaderboard",
        "",
        "Ranked by the IQM of min-max normalised scores (0 = random policy, 1 = reference "
        "policy) of the absolute metric (each seed's best evaluated parameters re-evaluated), "
        "with 95% stratified bootstrap CIs. External records (not produced by marl) are "
        "marked.",
        "",
    ]
    if command:
        lines += [f"Generated by `{command}`.", ""]
    if len(board["overall"]) > 1:
        lines += [
            "Aggregates over different task sets do not compare, so each table ranks the "
            "algorithms that ran exactly the same tasks, over those tasks: per family, then "
            "across families where the same algorithms ran tasks of several.",
            "",
        ]
    for group in board["overall"]:
        lines += [
            f"## {group['name']}: {', '.join(group['tasks'])}",
            "",
            "| rank | algorithm | IQM | mean | optimality gap |",
            "|---|---|---|---|---|",
        ]
        for row in group["rows"]:
            name = row["algorithm"] + (" (external)" if row["external"] else "")
            lines.append(
                f"| {row['rank']} | {name} | {_fmt(row['iqm'])} | {_fmt(row['mean'])} | "
                f"{_fmt(row['optimality_gap'])} |"
            )
        lines.append("")
        slug = Group(group["name"], (), ()).slug
        for kind in ("aggregates", "profiles", "improvement", "sample_efficiency"):
            lines += figure(f"{kind}/{slug}", f"{kind.replace('_', ' ')}: {group['name']}")
    for task, data in board["tasks"].items():
        norm = data["ranked_by"] == "normalised_iqm"
        lines += [
            f"## {task}",
            "",
            "ranked by normalised IQM"
            if norm
            else "no reference score: ranked by raw mean"
            + (" (lower is better)" if data.get("lower_is_better") else ""),
            "",
            "| rank | algorithm | runs | normalised IQM | absolute metric mean [95% CI] "
            "| natural unit, mean [95% CI] | env steps per run | wall time | env steps/s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in data["rows"]:
            name = row["algorithm"] + (" (external)" if row["external"] else "")
            unit = row.get("headline")
            wall = row.get("wall_time_s")
            speed = (
                "n/a | n/a"
                if wall is None
                else (f"{wall / 3600:.2f} h | {row['steps_per_second']:,.0f}")
            )
            lines.append(
                f"| {row['rank']} | {name} | {row['runs']} | {_fmt(row.get('normalised_iqm'))} | "
                f"{_fmt(row['absolute_mean'])} | "
                f"{unit['metric'] + ' ' + _fmt(unit['mean']) if unit else '(the return)'} | "
                f"{row['env_steps']:,} | {speed} |"
            )
        lines.append("")
        lines += figure("task_" + task.replace("/", "_"), f"{task}: evaluation curves")
    return "\n".join(lines)


def write_leaderboard(
    study: Study, out: str | Path, reps: int = stats.REPS, seed: int = 0, command: str = ""
) -> dict[str, Path]:
    """Write `leaderboard.md`, `.json` and `.html` (figures inlined) into the directory `out`,
    and the figures into `out/leaderboard_files/figures/`."""
    from marl.run.rundir import atomic_write, write_json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    board = leaderboard(study, reps=reps, seed=seed)
    figs = _figures(study, out / "leaderboard_files", reps, seed)
    rel = {name: str(path.relative_to(out)) for name, path in figs.items()}
    markdown = leaderboard_markdown(board, command, rel)
    atomic_write(out / "leaderboard.md", markdown + "\n")
    write_json(out / "leaderboard.json", board)
    atomic_write(out / "leaderboard.html", _html(markdown, figs, out, "marl leaderboard"))
    return {
        "md": out / "leaderboard.md",
        "json": out / "leaderboard.json",
        "html": out / "leaderboard.html",
    }


def load_study(
    paths: Sequence[str | Path],
    metric: str = METRIC,
    compute_anchors: bool = True,
    skipped: list[Path] | None = None,
) -> Study:
    """`marl.results.protocol.load` (unfinished runs appended to `skipped`) then `collect`."""
    from marl.results.protocol import load

    found: list[Path] = [] if skipped is None else skipped
    records = load(paths, found)
    if not records and found:
        raise RecordError(
            f"no finished run records found; unfinished: {', '.join(map(str, found))}"
        )
    return collect(records, metric=metric, compute_anchors=compute_anchors)


def dumps(obj: Any) -> str:
    """JSON text of a summary (NumPy scalars converted)."""
    return json.dumps(obj, default=float, indent=1)
