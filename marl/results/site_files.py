"""The site's data, to download (`marl.results.site`): every cell in one CSV, every seed in
another, and per cell a JSON of its seeds' values and curves (what its page plots), all inside
the site's folder, so that a published copy of the folder carries its numbers."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np

from marl.results.site_data import Cell, Site

CELLS_CSV = "data/cells.csv"
SEEDS_CSV = "data/seeds.csv"


def _num(x: Any) -> float | None:
    """A value as JSON/CSV data: 6 significant digits, None where not finite or absent."""
    if x is None:
        return None
    x = float(x)
    return float(f"{x:.6g}") if np.isfinite(x) else None


def seed_rows(site: Site, cell: Cell) -> list[dict[str, Any]]:
    """One row per seed of a cell: its absolute values, score, final value and curves."""
    unit, metric = site.units[cell.task], site.study.metric
    scoring = site.study.scoring.get(cell.task)
    rows = []
    for k, record in enumerate(cell.records, 1):
        best = (record.meta or {}).get("best_step") or []
        natural, ret = record.absolute_metric(unit), record.absolute_metric(metric)
        final = record.final(unit)
        score = None if scoring is None else scoring.apply(record.absolute_metric(scoring.metric))
        for i, run in enumerate(record.runs):
            curves = {m: run.metrics[m].mean(axis=1) for m in dict.fromkeys((unit, metric))}
            rows.append(
                {
                    "record": k,
                    "run": run.name,
                    "absolute": {unit: _num(natural[i]), metric: _num(ret[i])},
                    "score": None if score is None else _num(score[i]),
                    "final": _num(final[i]),
                    "best_step": int(best[i]) if i < len(best) and best[i] is not None else None,
                    "env_steps": int(run.steps[-1]),
                    "curve": {
                        "steps": [int(s) for s in run.steps],
                        **{m: [_num(v) for v in c] for m, c in curves.items()},
                    },
                }
            )
    return rows


def cell_json(site: Site, cell: Cell) -> str:
    """The data file of one cell (`Cell.data`)."""
    stat, iv = site.ranked(cell)
    data = {
        "task": cell.task,
        "learner": cell.algo,
        "rank": cell.row["rank"],
        "statistic": stat,
        "interval": {k: _num(v) for k, v in iv.items()},
        "unit": site.units[cell.task],
        "records": [str(r.path) for r in cell.records],
        "seeds": seed_rows(site, cell),
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return out.getvalue()


def cells_csv(site: Site) -> str:
    """Every cell of the board: its rank, the statistic that ranks it, its return, flags."""
    header = [
        "task",
        "learner",
        "rank",
        "statistic",
        "point",
        "low",
        "high",
        "runs",
        "env_steps",
        "return_mean",
        "return_low",
        "return_high",
        "flags",
        "verified",
    ]
    rows = []
    for (task, algo), cell in sorted(site.cells.items()):
        stat, iv = site.ranked(cell)
        ret, row = cell.row["absolute_mean"], cell.row
        rows.append(
            [
                task,
                algo,
                row["rank"],
                stat,
                _num(iv["point"]),
                _num(iv["low"]),
                _num(iv["high"]),
                row["runs"],
                row["env_steps"],
                _num(ret["point"]),
                _num(ret["low"]),
                _num(ret["high"]),
                " ".join(f["flag"].replace(" ", "_") for f in row.get("flags", [])),
                (row.get("verified") or {}).get("verdict", ""),
            ]
        )
    return _csv(header, rows)


def seeds_csv(site: Site) -> str:
    """Every seed of every cell: its absolute values (natural unit and return), its score, its
    last evaluation in the natural unit, the step of its best parameters."""
    header = [
        "task",
        "learner",
        "record",
        "run",
        "unit",
        "absolute_unit",
        "absolute_return",
        "score",
        "final_unit",
        "best_step",
        "env_steps",
    ]
    rows = []
    for (task, algo), cell in sorted(site.cells.items()):
        unit = site.units[task]
        for r in seed_rows(site, cell):
            rows.append(
                [
                    task,
                    algo,
                    r["record"],
                    r["run"],
                    unit,
                    r["absolute"][unit],
                    r["absolute"][site.study.metric],
                    r["score"],
                    r["final"],
                    r["best_step"],
                    r["env_steps"],
                ]
            )
    return _csv(header, rows)


__all__ = ["CELLS_CSV", "SEEDS_CSV", "cell_json", "cells_csv", "seed_rows", "seeds_csv"]
