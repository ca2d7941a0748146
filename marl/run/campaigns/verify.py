"""`marl benchmark verify`: re-run a committed cell (or its first k seeds) at the current code
and say whether it lands inside the committed interval.

A cell's re-run trains into a scratch folder of the user's (`runs/verify-<benchmark>/<commit>`,
never the benchmark's own records), on the grid the cell was trained on, resuming where an
earlier verify at the same commit stopped. The outcome compares the statistic that ranks the
task on the board (`marl.results.leaderboard.statistic`: the score IQM, the metric's mean where
the task is not scored) of the re-run's seeds with the committed cell's 95% interval, and the
re-run's seeds one by one with the committed seeds of the same index (the same seeds: equal to
the last digit only where code, libraries and machine are the same). Outcomes are kept, one
per cell, in the benchmark's verification log (its definition's `verifications:` file), which
the leaderboard shows on each verified cell's page.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.verified import describe
from marl.run.campaigns import benchmark, benchmark_runs

EXACT = 1e-6  # relative difference under which two seeds' values count as the same


def log_path(definition: dict[str, Any]) -> Path | None:
    """The benchmark's verification log (`verifications:` in its definition), if it names one."""
    path = definition.get("verifications")
    return Path(path) if path else None


def read_log(path: Path | None) -> dict[str, dict[str, Any]]:
    """cell key -> its latest verification; {} where there is none yet."""
    from marl.results.files import read_json

    if path is None or not path.is_file():
        return {}
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), dict):
        raise ValueError(f"{path}: not a verification log (expected {{'cells': {{...}}}})")
    return data["cells"]


def write_log(path: Path, outcomes: Sequence[dict[str, Any]]) -> None:
    """Record `outcomes` in the log at `path`, replacing each cell's earlier one."""
    from marl.results.files import write_json

    cells = read_log(path)
    for o in outcomes:
        cells[o["cell"]] = o
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"cells": dict(sorted(cells.items()))})


def _study(folder: Path, declared: dict[str, Any]) -> Any:
    """The records of one run folder, a finished part included, scored as declared."""
    from marl.results.protocol import RecordError, load
    from marl.results.study import collect

    records = load([folder], parts=True)
    if not records:
        raise RecordError(f"{folder}: no finished record to compare")
    return collect(records, declared=declared)


def _seed_range(study: Any, task: str, algo: str) -> list[float]:
    """[lowest, highest] of the cell's seeds on the ranked statistic's scale (score, or the
    metric where the task is not scored)."""
    scores = study.task_scores(task, algo)
    if scores is None:
        scores = study.entries[(task, algo)].scores(study.metric)
    return [float(np.min(scores)), float(np.max(scores))]


def _statistic(study: Any, task: str, algo: str) -> tuple[str, dict[str, float], Any]:
    """(name, interval, entry) of the ranked statistic of one cell's records."""
    from marl.results.leaderboard import ranked_key, statistic
    from marl.results.report import summarise

    summary = summarise(study)
    data = summary["tasks"][task]
    key = ranked_key(data)
    name = statistic({"ranked_by": key, **data}, study.metric)
    return name, data["algorithms"][algo][key], study.entries[(task, algo)]


def compare(
    committed: Path, rerun: Path, task: str, algo: str, declared: dict[str, Any]
) -> dict[str, Any]:
    """The outcome of a re-run against the committed cell (see the module's docstring)."""
    study_old, study_new = _study(committed, declared), _study(rerun, declared)
    name, interval, old = _statistic(study_old, task, algo)
    _, again, new = _statistic(study_new, task, algo)
    metric = "episode_return"
    old_runs = {r.name: r for rec in old.records for r in rec.runs}
    pairs = []
    for record in new.records:
        values = record.absolute_metric(metric)
        for run, value in zip(record.runs, values, strict=True):
            before = old_runs.get(run.name)
            if before is None:
                continue
            old_value = float(np.mean(before.absolute.get(metric, before.metrics[metric][-1])))
            pairs.append(
                {
                    "seed": run.name,
                    "committed": old_value,
                    "rerun": float(value),
                    "first_eval_committed": float(before.metrics[metric][0].mean()),
                    "first_eval_rerun": float(run.metrics[metric][0].mean()),
                }
            )
    same = bool(pairs) and all(
        abs(p[a] - p[b]) <= EXACT * max(1.0, abs(p[a]))
        for p in pairs
        for a, b in (("committed", "rerun"), ("first_eval_committed", "first_eval_rerun"))
    )
    inside = interval["low"] <= again["point"] <= interval["high"]
    return {
        "statistic": name,
        "committed": interval,
        "rerun": again,
        "inside": bool(inside),
        "committed_seeds": _seed_range(study_old, task, algo),
        "rerun_seeds": _seed_range(study_new, task, algo),
        "identical_seeds": same,
        "per_seed": pairs,
        "verdict": (
            "reproduces exactly"
            if same
            else "inside the committed interval"
            if inside
            else "outside the committed interval"
        ),
    }


def verify_cells(
    definition: dict[str, Any],
    chosen: Sequence[benchmark.Cell],
    scratch: Path,
    seeds: int | None,
    train: Callable[[Any], Any],
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Re-run each chosen cell (its first `seeds` seeds; all where None) into `scratch` and
    compare it with the committed one. -> one outcome per cell (failed cells say so)."""
    from marl.results.scoring import declared_scoring
    from marl.run.train.provenance import code

    declared = declared_scoring(definition)
    held = benchmark.resolve_cells(definition, chosen, log=log)
    missing = [c.key for c, run in held if benchmark_runs.state(run)[0] != "finished"]
    if missing:
        raise benchmark.BenchmarkError(
            f"not finished in {definition['records']}, nothing to verify: {', '.join(missing)}"
        )
    version = code()
    tag = (version.get("commit") or "uncommitted")[:12] + ("-dirty" * bool(version.get("dirty")))
    folder = scratch / tag
    mine = [dataclasses.replace(c, records=folder) for c in chosen]
    todo = benchmark.resolve_cells(definition, mine, log=lambda _: None)
    if seeds is not None:
        for cell, _ in todo:
            if not 0 < seeds <= cell.seeds:
                raise benchmark.BenchmarkError(
                    f"--seeds {seeds}: {cell.key} has {cell.seeds} seeds"
                )
        if any(seeds < c.seeds for c, _ in todo):
            todo = [
                (c, r) if seeds == c.seeds else benchmark_runs.parts_of([(c, r)], (0, seeds))[0]
                for c, r in todo
            ]
    failed = dict(benchmark_runs.run_cells(todo, train, log=log))
    outcomes = []
    for (cell, run), (mine_cell, rerun) in zip(held, todo, strict=True):
        base = {
            "cell": cell.key,
            "benchmark": definition["name"],
            "code": version,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seeds_rerun": seeds or cell.seeds,
            "seeds": cell.seeds,
            "command": f"marl benchmark verify {definition['name']} --only {cell.key}"
            + (f" --seeds {seeds}" if seeds else ""),
        }
        if mine_cell in failed:
            outcomes.append({**base, "verdict": f"failed: {failed[mine_cell]}"})
            continue
        found = compare(run.folder, rerun.folder, cell.task, cell.algo, declared)
        outcomes.append({**base, **found})
        log(describe(outcomes[-1]))
    return outcomes


__all__ = ["compare", "log_path", "read_log", "verify_cells", "write_log"]
