"""How much a family's ranking owes to the scoring rule: the ranking under each alternative of
`marl.results.scoring.ALTERNATIVES` (scoring v2, final parameters, the old min-max to the
scripted policy capped and uncapped, min-max to the best run), with every rank that differs
from scoring v2's flagged. Each column is ranked as the board ranks a group (`marl.results.ranks`:
IQM with its stratified bootstrap interval, learners the data do not separate sharing a rank,
none above one whose probability of improvement over it is significant), so a flip is a change
the evidence holds under both rules, never the order of two overlapping intervals."""

from __future__ import annotations

from typing import Any

import numpy as np

from marl.results import stats
from marl.results.ranks import shared_ranks, significant
from marl.results.scoring import ALTERNATIVES, RETURN, alternative_scores
from marl.results.study import Group, Study


def ranked_iqms(
    scores: dict[str, dict[str, np.ndarray]], *, reps: int = stats.REPS, seed: int = 0
) -> dict[str, dict[str, float]]:
    """algorithm -> {iqm, low, high, rank}, listed in rank order: each algorithm's IQM over its
    tasks with its 95% stratified bootstrap interval, ranked by `shared_ranks` with the
    pairwise probabilities of improvement (as the board ranks a group)."""
    agg = stats.aggregate(scores, reps=reps, seed=seed)
    pairs = stats.pairwise_improvement(scores, reps=reps, seed=seed) if len(scores) > 1 else {}
    improvement = {
        f"{x} > {y}": {"point": p, "low": lo, "high": hi} for (x, y), (p, lo, hi) in pairs.items()
    }
    intervals = {
        a: dict(zip(("point", "low", "high"), by["iqm"], strict=True)) for a, by in agg.items()
    }
    ranks = shared_ranks(intervals, beats=significant(improvement))
    return {a: ranked_row(intervals[a], rank) for a, rank in ranks}


def ranked_row(interval: dict[str, float], rank: int) -> dict[str, float]:
    """One algorithm's row of a sensitivity column: IQM {point, low, high} and its rank."""
    return {
        "iqm": round(interval["point"], 6),
        "low": round(interval["low"], 6),
        "high": round(interval["high"], 6),
        "rank": rank,
    }


def group_sensitivity(
    study: Study,
    group: Group,
    *,
    reps: int = stats.REPS,
    seed: int = 0,
    v2: dict[str, dict[str, float]] | None = None,
) -> dict[str, Any]:
    """Per alternative: each algorithm's IQM over the group's tasks, its interval and its rank
    (`ranked_iqms`; an alternative is left out where a task of the group cannot be scored so);
    `flips`: (alternative, algorithm, v2 rank, rank). `v2`: the group's own ranking in
    `ranked_iqms`' form where the caller has it (the board's, same reps and seed), so scoring
    v2's bootstrap is not drawn twice."""
    per_alt: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for name in ALTERNATIVES:
        if name == "v2" and v2 is not None:
            continue
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
    for name in ALTERNATIVES:
        if name == "v2" and v2 is not None:
            table[name] = v2
        elif name in per_alt:
            table[name] = ranked_iqms(per_alt[name], reps=reps, seed=seed)
    flips = []
    base = table.get("v2", {})
    for name, rows in table.items():
        for a, row in rows.items():
            if name != "v2" and a in base and row["rank"] != base[a]["rank"]:
                flips.append((name, a, base[a]["rank"], row["rank"]))
    return {"name": group.name, "tasks": list(group.tasks), "table": table, "flips": flips}


def sensitivity_markdown(sections: list[dict[str, Any]]) -> list[str]:
    """One table per group: algorithms by their scoring-v2 rank, a column per alternative
    (IQM, its interval and rank; a rank that differs from scoring v2's in bold)."""
    if not sections:
        return []
    lines = [
        "## Sensitivity of the rankings to the scoring rule",
        "",
        "Each family's ranking under the alternatives (IQM over the family's tasks with its 95% "
        "stratified bootstrap interval, rank in brackets; **bold** where the rank differs from "
        "scoring v2's): "
        + "; ".join(f"`{k}`: {v}" for k, v in ALTERNATIVES.items())
        + ". Each column is ranked as the groups are (learners the data do not separate share "
        "a rank), so a flip is never two overlapping intervals trading places. A column is "
        "left out where one of the family's tasks cannot be scored that way.",
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
                cells.append(f"{row['iqm']:.2f} [{row['low']:.2f}, {row['high']:.2f}] {rank}")
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
