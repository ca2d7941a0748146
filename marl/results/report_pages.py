"""A report's pages: its Markdown (`report_markdown`: tables of the aggregates per group and of
every task, the figures linked) and an HTML page of that Markdown with the figures inlined or
linked (`html_page`); `fmt_ci` writes an interval."""

from __future__ import annotations

import base64
import html
import urllib.parse
from pathlib import Path
from typing import Any

from marl.results.flags import names, report_notes, report_summary
from marl.results.report_figures import FIGURE_TITLES
from marl.results.study import Group


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def fmt_ci(iv: dict[str, float] | None, digits: int = 2) -> str:
    if iv is None:
        return "n/a"
    return f"{iv['point']:.{digits}f} [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]"


def report_markdown(summary: dict[str, Any], figs: dict[str, Path], out: Path, title: str) -> str:
    """The report's Markdown: the aggregates of each group, then every task's table, with the
    figures linked by their paths relative to `out`."""
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
