"""What a benchmark's cells cost on this machine: seconds per update measured (`measure`, kept in
the records folder's `costs.json`), and the training time a cell takes from them (`estimate_s`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import jax

from marl.learning import training
from marl.results.files import write_json
from marl.run.campaigns.benchmark import Cell
from marl.run.train.config import RunConfig

COSTS = "costs.json"  # in the records folder: measured seconds per update of each cell


def measure(run: RunConfig, updates: int = 3) -> dict[str, float]:
    """Seconds per update of a run's vmapped seeds on this machine, training only (after one
    compile of `updates` updates in a scan, the runner's program), and the compile time."""
    train = run.train
    keys = jax.random.split(jax.random.key(0), run.settings.seeds)
    start = time.perf_counter()
    state = jax.block_until_ready(training.init_seeds(train, keys))
    # the runner's own segment program, state donated: an undonated call also copies the
    # state, which for a replay learner (GBs of buffer) nearly doubled the time measured
    # (5m_vs_6m VDN, 1 seed, 20 updates: 0.119 s an update undonated, 0.063 s donated)
    program = training.segment_program(train, updates).lower(state).compile()
    compiled = time.perf_counter() - start
    state, _ = jax.block_until_ready(program(state))  # warm
    start = time.perf_counter()
    jax.block_until_ready(program(state))
    per_update = (time.perf_counter() - start) / updates
    return {"s_per_update": per_update, "compile_s": compiled}


def estimate_s(run: RunConfig, cost: dict[str, float] | None) -> float | None:
    """Training seconds a whole cell takes on the measuring machine (evaluations extra)."""
    if cost is None:
        return None
    return cost["s_per_update"] * run.total_updates + cost["compile_s"]


def read_costs(records: Path) -> dict[str, dict[str, float]]:
    path = records / COSTS
    return json.loads(path.read_text()) if path.exists() else {}


def write_costs(records: Path, costs: dict[str, dict[str, float]]) -> None:
    records.mkdir(parents=True, exist_ok=True)
    write_json(records / COSTS, dict(sorted(costs.items())))


def hours(seconds: float | None) -> str:
    return "unmeasured" if seconds is None else f"{seconds / 3600:.1f} h"


def measure_cells(
    runs: Sequence[tuple[Cell, RunConfig]], records: Path, again: bool = False
) -> None:
    """Measure each (cell, run)'s cost on this machine (`measure`) into the records folder's
    costs file, skipping measured cells unless `again`; prints each cell's estimate."""
    costs = read_costs(records)
    for k, (cell, run) in enumerate(runs, 1):
        if cell.key in costs and not again:
            continue
        costs[cell.key] = measure(run)
        write_costs(records, costs)
        est = estimate_s(run, costs[cell.key])
        print(f"[{k}/{len(runs)}] {cell.key}: {hours(est)} of training", flush=True)
