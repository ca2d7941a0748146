"""A benchmark's cells as runs in its records folder: the state each is in (`state`, `status`,
`coverage`), the ones left trained, unfinished ones first then cheapest first (`cheapest_first`,
`run_cells`), and cells trained as parts of their seeds (`parts_of`, `merge_parts`).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import statistics
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from marl.core.registry import RegistryError, algorithm, env_factory
from marl.learning.checkpoint import saved_segment
from marl.results.protocol import BUDGET_RTOL, META, has_record, read_meta
from marl.run.campaigns.benchmark import BenchmarkError, Cell, cells, resolve_cell
from marl.run.campaigns.benchmark_costs import estimate_s, hours
from marl.run.campaigns.parts import cell_parts, merge, parts_done
from marl.run.errors import UsageError
from marl.run.folder import CHECKPOINT
from marl.run.train.config import RunConfig
from marl.run.train.settings import parse_span


def state(run: RunConfig) -> tuple[str, dict[str, Any]]:
    """("finished" | "unfinished" | "missing", the run's meta.json or {}); finished once the
    run's last write, record.json, is there (`protocol.has_record`)."""
    path = run.folder / META
    if not path.exists():
        done = parts_done(run.parent, str(run.name))
        if done:
            seeds = ", ".join(f"{a}:{b}" for a, b in done)
            return f"missing (parts {seeds} of {run.settings.seeds})", {}
        return "missing", {}
    meta = read_meta(run.folder)
    done = meta.get("finished") and has_record(run.folder)
    return ("finished" if done else "unfinished"), meta


def segments_done(run: RunConfig) -> int:
    """Segments an unfinished cell has saved (its resume point), 0 if none."""
    return saved_segment(run.folder / CHECKPOINT) or 0


def status(
    runs: Sequence[tuple[Cell, RunConfig]], costs: dict[str, dict[str, float]]
) -> tuple[list[list[str]], list[tuple[Cell, RunConfig]], str]:
    """(table rows: tier, cell, seeds x steps, state, training time), the cells left, and a
    line saying how many are left and their measured training time, and where finished cells
    were measured too, the whole time left at the pace they ran. An unfinished cell shows the
    segments it has saved (`unfinished 7/20`) and only the training time of the rest."""
    rows, todo, left, unmeasured, paces = [], [], 0.0, 0, []
    for cell, run in runs:
        state_, meta = state(run)
        est = estimate_s(run, costs.get(cell.key))
        if state_ == "finished":
            took = meta.get("wall_time")
            cost = f"took {hours(took)}" if took else "done"
            if took and est:
                paces.append(took / est)
        else:
            done = segments_done(run) if state_ == "unfinished" else 0
            if state_.startswith("missing (parts") and est is not None:
                trained = sum(b - a for a, b in parts_done(run.parent, str(run.name)))
                est *= 1.0 - trained / run.settings.seeds
            if done:  # it resumes after its last saved segment: only the rest is left
                state_ = f"{state_} {done}/{run.num_segments}"
                if est is not None:
                    est *= 1.0 - done / run.num_segments
            cost = hours(est)
            left += est or 0.0
            unmeasured += est is None
            todo.append((cell, run))
        rows.append([cell.tier, cell.key, f"{cell.seeds} x {cell.budget:.0e}", state_, cost])
    more = f" and {unmeasured} unmeasured (marl benchmark measure)" if unmeasured else ""
    line = f"{len(todo)} of {len(runs)} cells left: {hours(left)} measured on this machine{more}"
    if paces and left:
        p = statistics.median(paces)  # wall time over measured training time
        line += (
            f"; finished cells took {p:.1f}x their measured training time (median of "
            f"{len(paces)}: evaluations, compiles, jobs beside them), so about "
            f"{hours(left * p)} of wall time summed over the cells left"
        )
    return rows, todo, line


def coverage(definition: dict[str, Any], study: Any) -> dict[str, Any]:
    """Which cells of `definition` the records of `study` (`marl.results.study.Study`) hold at
    the cell's seed count and budget (a learner's update size may round the budget down by
    `BUDGET_RTOL` of it at most); a variant's cell only from its own run folders. A cell not
    held lists the finished parts in its records folder (`parts`: [[a, b], ...], seeds a..b-1;
    `marl benchmark run --part`), which the records themselves leave out until merged."""
    rows = []
    for c in cells(definition):
        check_ids(c)
        entry = study.entries.get((c.task, c.algo))
        records = [] if entry is None else list(entry.records)
        if c.variant:
            records = [r for r in records if c.run_name in Path(r.path).parts]
        runs = [run for r in records for run in r.runs]
        steps = min((int(run.steps[-1]) for run in runs), default=0)
        held = len(runs) >= c.seeds and steps >= (1.0 - BUDGET_RTOL) * c.budget
        parts = []
        if not held and _may_have_parts(c):
            run = resolve_cell(c)
            parts = [[a, b] for a, b in parts_done(run.parent, str(run.name))]
        rows.append(
            {
                "cell": c.key,
                "tier": c.tier,
                "family": c.family,
                "seeds": c.seeds,
                "budget": c.budget,
                "runs": len(runs),
                "env_steps": steps,
                "held": held,
                "parts": parts,
            }
        )
    families = [
        {
            "tier": tier,
            "family": family,
            "tasks": list(spec["tasks"]),
            "algos": list(spec["algos"]),
            "seeds": int(spec["seeds"]),
            "budget": float(spec["budget"]),
            "papers": spec.get("papers", ""),
        }
        for tier, fams in definition["tiers"].items()
        for family, spec in fams.items()
    ]
    return {"benchmark": definition["name"], "cells": rows, "families": families}


def check_ids(cell: Cell) -> None:
    """Refuse a cell whose env or learner is unknown, or an import path not allowed
    (`marl.core.registry.files_are_data`), without composing its run."""
    try:
        env_factory(cell.env_id)
        algorithm(cell.algo)
    except RegistryError as e:
        raise BenchmarkError(f"{cell.key}: {e}") from None


def _may_have_parts(cell: Cell) -> bool:
    """Whether a part folder of the cell's run (`<name>.partA-B`) sits anywhere in its records
    (`<records>/<family>/<task>/<algo>/`): resolving the cell (a Hydra composition, a third of
    a second) to find its own folder is needed only then."""
    algo, name = glob.escape(cell.algo.replace(":", ".")), glob.escape(cell.run_name)
    return cell.records.is_dir() and any(cell.records.glob(f"*/*/{algo}/{name}.part*-*"))


def cheapest_first(
    todo: Sequence[tuple[Cell, RunConfig]], costs: dict[str, dict[str, float]]
) -> list[tuple[Cell, RunConfig]]:
    """The cells left in the order `run` trains them: unfinished ones first (each resumes after
    its last segment), then the measured ones cheapest first, then the unmeasured ones in the
    definition's order; so a run cut short leaves the fewest cells unfinished."""

    def key(item: tuple[int, tuple[Cell, RunConfig]]) -> tuple[int, float, int]:
        k, (cell, run) = item
        if state(run)[0] == "unfinished":
            return (0, 0.0, k)
        est = estimate_s(run, costs.get(cell.key))
        return (1, est, k) if est is not None else (2, 0.0, k)

    return [cell_run for _, cell_run in sorted(enumerate(todo), key=key)]


def run_cells(
    todo: Sequence[tuple[Cell, RunConfig]],
    train: Callable[[Any], Any],
    log: Callable[[str], None] = print,
) -> list[tuple[Cell, str]]:
    """Train each cell (`train(run)`: marl train's runner; an unfinished run resumes); a
    cell that raises is reported and the others go on. -> [(cell, error)] of failed cells."""
    failed = []
    for k, (cell, run) in enumerate(todo, 1):
        status, _ = state(run)
        log(f"[{k}/{len(todo)}] {cell.key} ({status}): marl train {' '.join(cell.overrides())}")
        if status == "finished":
            continue
        try:
            done = train(dataclasses.replace(run, resume=status == "unfinished"))
        except KeyboardInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 - one broken cell must not stop the others
            if os.environ.get("MARL_TRACEBACK", "") not in ("", "0"):
                traceback.print_exc()
            failed.append((cell, f"{type(e).__name__}: {_first_line(e)}"))
            log(f"{cell.key} failed: {type(e).__name__}: {_first_line(e)}; going on")
            continue
        if done is None:
            raise KeyboardInterrupt
    return failed


def _first_line(e: BaseException) -> str:
    """An exception's message on one line (the traceback under MARL_TRACEBACK=1)."""
    return " ".join(str(e).split())[:300]


def parse_part(text: str) -> tuple[int, int]:
    """`"a:b"` -> (a, b), checked against each cell's seeds when its part is resolved."""
    try:
        return parse_span(text)
    except ValueError:
        raise BenchmarkError(f"--part {text!r}: expected a:b with a < b, e.g. --part 0:2") from None


def parts_of(
    todo: Sequence[tuple[Cell, RunConfig]], part: tuple[int, int]
) -> list[tuple[Cell, RunConfig]]:
    """The part `part` of each cell left (its seeds a..b-1; `marl.run.parts`)."""
    out = []
    for cell, _ in todo:
        if part[1] > cell.seeds:
            raise BenchmarkError(f"--part {part[0]}:{part[1]}: {cell.key} has {cell.seeds} seeds")
        piece = dataclasses.replace(cell, part=part)
        out.append((piece, resolve_cell(piece)))
    return out


def merge_parts(
    run: RunConfig, log: Callable[[str], None] = print, keep_parts: bool = False
) -> bool:
    """Join the cell's finished parts into its run once they cover every seed (the parts'
    folders are removed unless `keep_parts`); True when the cell is whole now."""
    parent, name = run.parent, str(run.name)
    if has_record(parent / name):  # merged already (its parts kept with --keep-parts)
        return True
    seeds = sum(b - a for a, b in parts_done(parent, name))
    if seeds < run.settings.seeds:
        return False
    dirs = [d for d in cell_parts(parent, name) if (d / META).is_file()]
    try:
        merge(dirs, parent / name, remove_parts=not keep_parts)
    except UsageError as e:
        log(f"{parent / name}: parts cover every seed but do not merge: {e}")
        return False
    log(f"merged {', '.join(d.name for d in dirs)} into {parent / name}")
    return True
