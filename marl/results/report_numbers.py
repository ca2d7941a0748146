"""The numbers of a report (`summarise`): per task and algorithm the absolute metric with its
bootstrap intervals, scores, flags and throughput; per group of comparable tasks the aggregates
and probabilities of improvement; and the warning on comparisons resting on too few seeds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from marl.results import stats
from marl.results.flags import cell_flags
from marl.results.study import METRIC, Study, comparable_groups, subset

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
            final_scores = study.task_scores(task, algo, final=True)
            if scores is not None and final_scores is not None:
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
    normalised = study.normalised_scores()
    groups = []
    for g in comparable_groups(normalised):
        sub = subset(normalised, g)
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
        "normalised_tasks": sorted({t for by in normalised.values() for t in by}),
        "groups": groups,
    }
