"""Reports: records in, normalised aggregates, plots, Markdown and HTML out.

```
records (marl.results.protocol.load)  ->  marl.results.study.collect: entries, anchors
                              ->  normalise: (score - random) / (reference - random)
                              ->  marl.results.stats: IQM, mean, median, optimality gap, profiles,
                                  P(improvement), sample efficiency, stratified bootstrap CIs
                              ->  marl.results.plots figures; report.md, self-contained report.html,
                                  report.json  (write_report)
                              ->  leaderboard.md/.json/.html (marl.results.leaderboard)
```
"""

from __future__ import annotations

import base64
import html
import json
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from marl.results import plots, stats
from marl.results.comparable import split_comparable
from marl.results.files import atomic_write, write_json
from marl.results.flags import cell_flags, names, report_notes, report_summary
from marl.results.protocol import Record
from marl.results.study import (
    METRIC,
    Group,
    Study,
    TaskFacts,
    collect,
    comparable_groups,
    subset,
)

# --- numbers ----------------------------------------------------------------------------------
MIN_SEEDS = 5  # fewer runs than this decide nothing: a comparison on them is a direction


def few_seeds(study: Study) -> dict[str, dict[str, int]]:
    """task -> {algorithm: runs} for the entries with fewer than `MIN_SEEDS` runs, on tasks
    where more than one algorithm is compared."""
    out: dict[str, dict[str, int]] = {}
    for task in study.tasks:
        algos = [a for a in study.algorithms if (task, a) in study.entries]
        if len(algos) < 2:
            continue
        for algo in algos:
            n = len(study.entries[(task, algo)].runs)
            if n < MIN_SEEDS:
                out.setdefault(task, {})[algo] = n
    return out


def few_seeds_warning(study: Study) -> str | None:
    """One line naming the comparisons that rest on fewer than `MIN_SEEDS` seeds, or None."""
    few = few_seeds(study)
    if not few:
        return None
    where = "; ".join(
        f"{task}: " + ", ".join(f"{a} ({n})" for a, n in sorted(by.items()))
        for task, by in sorted(few.items())
    )
    return (
        f"comparisons resting on fewer than {MIN_SEEDS} seeds decide nothing (read them as a "
        f"direction): {where}"
    )


def family_of(task: str) -> str:
    """A task's family: its env id's first part."""
    return task.split("/")[0]


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
            unit = study.headline_unit(task, algo, default=METRIC)
            if unit and unit != study.metric:
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
            scores = study.task_scores(task, algo)
            if scores is not None:
                final_scores = study.task_scores(task, algo, final=True)
                row["normalised_iqm"] = _interval(stats.iqm_ci(scores, reps=reps, seed=seed))
                row["final_score"] = float(np.mean(final_scores))
                row["collapse"] = float(np.mean(scores) - np.mean(final_scores))
            row["flags"] = cell_flags(study, task, algo, row)
            rows[algo] = row
        score = study.scoring.get(task)
        tasks[task] = {
            "anchors": None if anchors is None else anchors.__dict__,
            "scoring": None if score is None else {**score.to_dict(), "rule": score.describe()},
            "lower_is_better": study.lower.get(task, False),
            "algorithms": rows,
        }
    scores = study.normalised_scores()
    groups = []
    for g in comparable_groups(scores):
        sub = subset(scores, g)
        families = sorted({t.split("/")[0] for t in g.tasks})
        if len(families) > 1:  # unlike families: each weighted equally, never one pool
            agg = stats.family_aggregate(sub, family_of, reps=reps, seed=seed)
        else:
            agg = stats.aggregate(sub, reps=reps, seed=seed)
        pairs = stats.pairwise_improvement(sub, reps=reps, seed=seed) if len(sub) > 1 else {}
        groups.append(
            {
                "name": g.name,
                "tasks": list(g.tasks),
                "families": families,
                "algorithms": list(g.algorithms),
                "aggregates": {
                    a: {m: _interval(v) for m, v in by.items()} for a, by in agg.items()
                },
                "improvement": {f"{x} > {y}": _interval(v) for (x, y), v in pairs.items()},
            }
        )
    return {
        "metric": study.metric,
        "few_seeds_warning": few_seeds_warning(study),
        "reps": reps,
        "confidence": 0.95,
        "tasks": tasks,
        "normalised_tasks": sorted({t for by in scores.values() for t in by}),
        "groups": groups,
    }


# --- report -----------------------------------------------------------------------------------
def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def fmt_ci(iv: dict[str, float] | None, digits: int = 2) -> str:
    if iv is None:
        return "n/a"
    return f"{iv['point']:.{digits}f} [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]"


def write_figures(study: Study, out: Path, reps: int, seed: int) -> dict[str, Path]:
    """Draw every figure of a report into `out`; name -> path."""
    fig_dir = out / "figures"
    colors = plots.algorithm_colors(study.algorithms)
    figs: dict[str, Path] = {}
    scores = study.normalised_scores()
    curves_by_algo = study.normalised_curves()
    for g in comparable_groups(scores):
        sub = subset(scores, g)
        tag = g.slug
        across = len({family_of(t) for t in g.tasks}) > 1
        if across:  # families weighted equally; profiles and curves would pool them: none
            agg = stats.family_aggregate(sub, family_of, reps=reps, seed=seed)
        else:
            agg = stats.aggregate(sub, reps=reps, seed=seed)
        figs[f"aggregates/{tag}"] = plots.aggregate_intervals(
            agg, fig_dir / f"aggregates_{tag}.png", colors=colors
        )
        if across:
            if len(sub) > 1:
                pairs = stats.pairwise_improvement(sub, reps=reps, seed=seed)
                figs[f"improvement/{tag}"] = plots.improvement_probabilities(
                    pairs, fig_dir / f"improvement_{tag}.png", colors=colors
                )
            continue
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
        for algo, by in subset(curves_by_algo, g).items():
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
        score = study.scoring.get(task)
        unit = score.metric if score is not None and score.kind == "natural" else study.metric
        per_algo = {}
        for algo in study.algorithms:
            entry = study.entries.get((task, algo))
            if entry is not None:
                steps, values = entry.curve(unit)
                per_algo[algo] = stats.mean_curve(steps, values, reps=reps, seed=seed)
        name = "task_" + task.replace("/", "_")
        figs[name] = plots.task_curves(
            per_algo,
            fig_dir / f"{name}.png",
            title=f"{task}: greedy evaluation (mean over runs, 95% CI)",
            ylabel=unit.replace("_", " "),
            colors=colors,
        )
    return figs


FIGURE_TITLES = {
    "aggregates": "Aggregate scores (absolute metric, 95% stratified bootstrap CIs)",
    "profiles": "Performance profiles",
    "improvement": "Probability of improvement",
    "sample_efficiency": "Sample efficiency (IQM of the score over runs and tasks)",
}


def _markdown(summary: dict[str, Any], figs: dict[str, Path], out: Path, title: str) -> str:
    lines = [f"# {title}", ""]
    lines += [
        f"Metric `{summary['metric']}`; per run the absolute metric (the parameters of the "
        "best evaluation by the run's `protocol.metric`, re-evaluated). Scores (scoring v2, "
        "`marl.results.scoring`): a task's natural unit where it has a bounded one (win rate, "
        "success rate, collected fraction, order parameter), else min-max between fixed "
        "anchors (0 = random policy, 1 = reference); across families each family weighs the "
        "same. "
        f"Intervals are 95% bootstrap CIs ({summary['reps']} replicates; stratified over tasks "
        "for aggregates).",
        "",
    ]
    if summary.get("few_seeds_warning"):
        lines += [f"**Warning:** {summary['few_seeds_warning']}.", ""]
    lines += report_summary(summary)
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
                f"| {algo} | {fmt_ci(agg['iqm'])} | {fmt_ci(agg['mean'])} "
                f"| {fmt_ci(agg['median'])} | {fmt_ci(agg['optimality_gap'])} |"
            )
        lines.append("")
        if g["improvement"]:
            lines += ["| pair | P(X > Y) |", "|---|---|"]
            lines += [f"| {pair} | {fmt_ci(iv)} |" for pair, iv in sorted(g["improvement"].items())]
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
        sc = data.get("scoring")
        anchor_text = (
            f"scored: {sc['rule']}"
            if sc
            else "not scored (no natural unit, no reference): not in the aggregates"
        ) + ("; lower is better" if data.get("lower_is_better") else "")
        lines += [
            f"### {task}",
            "",
            anchor_text,
            "",
            "| algorithm | runs | absolute metric, mean [95% CI] | IQM [95% CI] | score IQM "
            "| final score | best - final | final evaluation mean | env steps | flags |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        sign = 1.0 if data.get("lower_is_better") else -1.0  # best first
        rows = sorted(
            data["algorithms"].items(), key=lambda kv: sign * kv[1]["absolute_mean"]["point"]
        )
        for algo, row in rows:
            name = algo + (" (external)" if row["external"] else "")
            lines.append(
                f"| {name} | {row['runs']} | {fmt_ci(row['absolute_mean'])} | "
                f"{fmt_ci(row['absolute_iqm'])} | {fmt_ci(row.get('normalised_iqm'))} | "
                f"{_num(row.get('final_score'))} | {_num(row.get('collapse'))} | "
                f"{row['final_mean']:.2f} | {row['env_steps']:,} | {names(row['flags'])} |"
            )
        lines += report_notes(rows)
        key = "task_" + task.replace("/", "_")
        if key in figs:
            lines += ["", f"![{task}]({figs[key].relative_to(out)})"]
        lines.append("")
    return "\n".join(lines)


def html_page(
    markdown: str, figs: dict[str, Path], out: Path, title: str, inline: bool = True
) -> str:
    """A page of the Markdown's tables and headings; its figures inlined as data URIs (a
    self-contained page), or with `inline=False` linked by their paths relative to `out`."""

    def source(p: Path) -> str:
        if not inline:
            return urllib.parse.quote(p.relative_to(out).as_posix())
        return "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode("ascii")

    embedded = {str(p.relative_to(out)): source(p) for p in figs.values()}
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
                body.append(f'<img alt="{html.escape(alt)}" src="{data}">')
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


def prune_figures(fig_dir: Path, figs: dict[str, Path]) -> None:
    """Remove the figures an earlier writing of marl's drew in `fig_dir` and this one did not
    (tasks or groups it no longer has); a file marl did not write stays
    (`marl.results.written`)."""
    from marl.results.written import prune

    prune(fig_dir, figs.values())


def write_report(
    study: Study, out: str | Path, title: str = "marl report", reps: int = stats.REPS, seed: int = 0
) -> dict[str, Path]:
    """Write `report.md`, `report.html` (self-contained), `report.json` and `figures/` to `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(study, reps=reps, seed=seed)
    figs = write_figures(study, out, reps, seed)
    prune_figures(out / "figures", figs)
    markdown = _markdown(summary, figs, out, title)
    atomic_write(out / "report.md", markdown + "\n")
    atomic_write(out / "report.html", html_page(markdown, figs, out, title))
    write_json(out / "report.json", summary)
    return {"md": out / "report.md", "html": out / "report.html", "json": out / "report.json"}


def write_sectioned_report(
    records: Sequence[Record],
    out: str | Path,
    title: str = "marl report",
    metric: str = METRIC,
    reps: int = stats.REPS,
    seed: int = 0,
    facts: TaskFacts | None = None,
) -> tuple[dict[str, Path], list[Study]]:
    """`write_report` over records that may mix protocols or budgets on a task: one report
    where they do not; otherwise each comparable section (`comparable.split_comparable`) in its
    own folder `section-K/`, and `report.md`/`.html`/`.json` in `out` an index saying which
    records were kept apart and why. -> (index paths, the sections' studies)."""
    sections = split_comparable(records)
    if len(sections) == 1:
        study = collect(records, metric=metric, facts=facts)
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
        study = collect(section.records, metric=metric, facts=facts)
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
    atomic_write(out / "report.html", html_page(markdown, {}, out, title))
    write_json(out / "report.json", {"metric": metric, "sections": index})
    paths = {"md": out / "report.md", "html": out / "report.html", "json": out / "report.json"}
    return paths, studies


def dumps(obj: Any) -> str:
    """JSON text of a summary (NumPy scalars converted)."""
    return json.dumps(obj, default=float, indent=1)
