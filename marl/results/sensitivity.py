"""How much a family's ranking owes to the scoring rule: the ranking under each alternative of
`marl.results.scoring.ALTERNATIVES` (scoring v2, final parameters, the old min-max to the
scripted policy capped and uncapped, min-max to the best run), with every rank that differs
from scoring v2's flagged."""

from __future__ import annotations

from typing import Any

import numpy as np

from marl.results import stats
from marl.results.scoring import ALTERNATIVES, RETURN, alternative_scores
from marl.results.study import Group, Study


def _iqm(by_task: dict[str, np.ndarray]) -> float:
    tasks = [np.asarray(by_task[t], np.float64) for t in sorted(by_task)]
    return float(stats.task_iqm(np.concatenate(tasks)[None, :], [x.size for x in tasks])[0])


def group_sensitivity(study: Study, group: Group) -> dict[str, Any]:
    """Per alternative: each algorithm's IQM over the group's tasks and its rank (equal IQMs
    share one; an alternative is left out where a task of the group cannot be scored so);
    `flips`: (alternative, algorithm, v2 rank, rank)."""
    per_alt: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for name in ALTERNATIVES:
        by_algo: dict[str, dict[str, np.ndarray]] = {a: {} for a in group.algorithms}
        for task in group.tasks:
            score = study.scoring.get(task)
            metric = score.metric if score is not None else RETURN
            entries = {a: study.entries[(task, a)] for a in group.algorithms}
            scored = alternative_scores(
                name,
                score,
                best={a: e.scores(metric) for a, e in entries.items()},
                final={
                    a: np.concatenate([r.final(metric) for r in e.records])
                    for a, e in entries.items()
                },
                best_return={a: e.scores(RETURN) for a, e in entries.items()},
                record_anchors=study.anchors.get(task),
            )
            if scored is None:
                by_algo = {}
                break
            for a, v in scored.items():
                by_algo[a][task] = v
        if by_algo:
            per_alt[name] = by_algo
    table: dict[str, dict[str, Any]] = {}
    for name, by_algo in per_alt.items():
        iqms = {a: round(_iqm(by), 6) for a, by in by_algo.items()}
        order = sorted(iqms, key=lambda a: -iqms[a])
        # equal IQMs share a rank (capped scores tie at 1): no flip is read into a tie
        table[name] = {
            a: {"iqm": iqms[a], "rank": 1 + sum(v > iqms[a] for v in iqms.values())} for a in order
        }
    flips = []
    base = table.get("v2", {})
    for name, rows in table.items():
        for a, row in rows.items():
            if name != "v2" and a in base and row["rank"] != base[a]["rank"]:
                flips.append((name, a, base[a]["rank"], row["rank"]))
    return {"name": group.name, "tasks": list(group.tasks), "table": table, "flips": flips}


def sensitivity_markdown(sections: list[dict[str, Any]]) -> list[str]:
    """One table per group: algorithms by their scoring-v2 rank, a column per alternative
    (IQM and rank; a rank that differs from scoring v2's in bold)."""
    if not sections:
        return []
    lines = [
        "## Sensitivity of the rankings to the scoring rule",
        "",
        "Each family's ranking under the alternatives (IQM over the family's tasks, rank in "
        "brackets; **bold** where the rank differs from scoring v2's): "
        + "; ".join(f"`{k}`: {v}" for k, v in ALTERNATIVES.items())
        + ". A column is left out where one of the family's tasks cannot be scored that way.",
        "",
    ]
    for sec in sections:
        table = sec["table"]
        if "v2" not in table:
            continue
        alts = [a for a in ALTERNATIVES if a in table]
        lines += [
            f"### {sec['name']}",
            "",
            "| algorithm | " + " | ".join(alts) + " |",
            "|---|" + "---|" * len(alts),
        ]
        for algo in table["v2"]:
            cells = []
            for alt in alts:
                row = table[alt][algo]
                rank = f"({row['rank']})"
                if row["rank"] != table["v2"][algo]["rank"]:
                    rank = f"**{rank}**"
                cells.append(f"{row['iqm']:.2f} {rank}")
            lines.append(f"| {algo} | " + " | ".join(cells) + " |")
        flips = sorted({alt for alt, *_ in sec["flips"]})
        lines += [
            "",
            ("Flips under: " + ", ".join(f"`{f}`" for f in flips) + ".")
            if flips
            else "No alternative changes this ranking.",
            "",
        ]
    return lines
