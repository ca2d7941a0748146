"""Versioned benchmark definitions (`marl/conf/benchmark/<name>.yaml`): the cells (task x
learner, with seeds, budget, protocol and overrides) behind the leaderboard, their state in a
records folder, their cost on this machine, and running the ones left.

```
definition yaml -> cells(tier, only) -> Cell.overrides -> marl train (one run per cell)
                                     -> status: finished / unfinished / missing, hours left
```
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marl.run.parts import merge, parse_span, part_name, parts_done

if TYPE_CHECKING:
    from marl.run.config import RunConfig

DEFINITIONS = Path(__file__).parents[1] / "conf" / "benchmark"
COSTS = "costs.json"  # in the records folder: measured seconds per update of each cell


class BenchmarkError(ValueError):
    """An unknown benchmark, tier, task or learner; one line naming the choices."""


@dataclass(frozen=True)
class Cell:
    """One `marl train` run of a benchmark: a learner on a task."""

    benchmark: str
    tier: str
    family: str  # the definition's group (a family, or e.g. many-agent)
    task: str  # env id, with `[key=value,...]` keywords where it is a variant
    algo: str
    seeds: int
    budget: float
    protocol: str
    extra: tuple[str, ...]
    records: Path
    # the family's `variant`: the same learner on the same task, trained otherwise
    variant: str | None = None
    part: tuple[int, int] | None = None  # seeds a..b-1 only (`--part a:b`, `marl.run.parts`)

    @property
    def key(self) -> str:
        """`task/algo`, and `@variant` for a family that names one."""
        return f"{self.task}/{self.algo}" + (f"@{self.variant}" if self.variant else "")

    @property
    def run_name(self) -> str:
        """The run's folder name under `<records>/<task>/<algo>/`: the benchmark's name, and
        `-variant` for a family that names one (so its runs never take another's folder)."""
        name = self.benchmark + (f"-{self.variant}" if self.variant else "")
        return name if self.part is None else part_name(name, *self.part)

    @property
    def env_overrides(self) -> list[str]:
        """`env=<id>` and `env.kwargs.K=V` for each keyword of a variant task name."""
        m = re.fullmatch(r"([^\[]+)(?:\[(.*)\])?", self.task)
        if m is None:
            raise BenchmarkError(f"task {self.task!r}: expected family/name[key=value,...]")
        out = [f"env={m.group(1)}"]
        for item in filter(None, (m.group(2) or "").split(",")):
            out.append(f"env.kwargs.{item}")
        return out

    def overrides(self) -> list[str]:
        """The `marl train` overrides of this cell."""
        return [
            *self.env_overrides,
            f"algo={self.algo}",
            f"protocol={self.protocol}",
            f"seeds={self.seeds}",
            f"budget={self.budget:g}",
            f"out={self.records}",
            f"name={self.run_name}",
            *([f"part={self.part[0]}:{self.part[1]}"] if self.part else []),
            *self.extra,
        ]


def names() -> list[str]:
    return sorted(p.stem for p in DEFINITIONS.glob("*.yaml"))


def load(name: str) -> dict[str, Any]:
    """The definition `name` (a shipped one, or a path to a yaml file); its ids resolve under
    `marl.core.registry.files_are_data` where the caller reads it as data."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else DEFINITIONS / f"{name}.yaml"
    if not path.is_file():
        raise BenchmarkError(f"benchmark {name!r} unknown; valid: {', '.join(names())}")
    from marl.results.files import read_yaml
    from marl.run.config import ConfigError, check_literal

    try:
        data = read_yaml(path)
    except (OSError, ValueError) as e:
        raise BenchmarkError(str(e)) from None
    if not isinstance(data, dict):
        raise BenchmarkError(f"{path}: expected a benchmark definition (a mapping)")
    try:
        check_literal(data)  # a file is data: no `${oc.env:...}` resolved from it
    except ConfigError as e:
        raise BenchmarkError(f"{path}: {e}") from None
    return data


def cells(definition: dict[str, Any], tier: str = "all", only: Sequence[str] = ()) -> list[Cell]:
    """The cells of `tier` (or all) whose `task/algo` is one of `only` or matches its globs."""
    tiers = definition["tiers"]
    if tier != "all" and tier not in tiers:
        raise BenchmarkError(f"tier {tier!r} unknown; valid: all, {', '.join(tiers)}")
    out = [
        family_cell(definition, tier_name, family, task, algo)
        for tier_name, families in tiers.items()
        if tier in ("all", tier_name)
        for family, spec in families.items()
        for task in spec["tasks"]
        for algo in spec["algos"]
    ]
    seen: dict[str, str] = {}
    for c in out:
        if c.key in seen:
            raise BenchmarkError(
                f"cell {c.key} is defined twice (families {seen[c.key]} and {c.family}): give "
                "one of them a `variant` name"
            )
        seen[c.key] = c.family
    return select(out, only)


def family_cell(definition: dict[str, Any], tier: str, family: str, task: str, algo: str) -> Cell:
    """The cell of `algo` on `task` in `family` of `tier`: the family's seeds, budget, protocol
    and overrides (`all`, then the learner's own)."""
    spec = definition["tiers"][tier][family]
    extra = spec.get("overrides") or {}
    return Cell(
        benchmark=definition["name"],
        tier=tier,
        family=family,
        task=task,
        algo=algo,
        seeds=int(spec["seeds"]),
        budget=float(spec["budget"]),
        protocol=spec.get("protocol", definition.get("protocol", "default")),
        extra=tuple([*extra.get("all", []), *extra.get(algo, [])]),
        records=Path(definition["records"]),
        variant=spec.get("variant"),
    )


def select(found: Sequence[Cell], only: Sequence[str] = ()) -> list[Cell]:
    """The cells whose `task/algo` is one of `only` or matches its globs (all without `only`);
    a pattern matching none fails in one line naming the tasks and learners."""
    if not only:
        return list(found)
    for pattern in only:
        if not any(_matches(c.key, pattern) for c in found):
            raise BenchmarkError(
                f"--only {pattern!r} matches no cell (task/learner globs, e.g. "
                f"'combat/*/qmix'); tasks: {', '.join(sorted({c.task for c in found}))}; "
                f"learners: {', '.join(sorted({c.algo for c in found}))}"
            )
    return [c for c in found if any(_matches(c.key, p) for p in only)]


def _matches(key: str, pattern: str) -> bool:
    """A cell's name as `status` prints it (`swarm/vicsek[num_agents=50]/mappo`), or a glob over
    names, in which a task's keyword brackets (`[...=...]`) are literal, not a character class:
    `combat/battle64[opponent=self_play]/*` matches that task's cells."""
    literal = re.sub(r"\[([^\]]*=[^\]]*)\]", lambda m: f"[[]{m.group(1)}[]]", pattern)
    return key == pattern or fnmatch.fnmatchcase(key, literal)


def resolve(cell: Cell) -> RunConfig:
    """The cell's validated `marl.run.config.RunConfig` (nothing compiled)."""
    from marl.run import config

    try:
        return config.resolve(config.compose(cell.overrides()), command=cell.overrides())
    except config.ConfigError as e:
        raise BenchmarkError(f"{cell.key}: {e}") from None


def resolve_cells(
    definition: dict[str, Any], chosen: Sequence[Cell], log: Callable[[str], None] | None = None
) -> list[tuple[Cell, RunConfig]]:
    """The chosen cells with their resolved runs, every one checked before any work, on one
    evaluation grid per task: where a task's learners update in different sizes, the
    evaluation interval is pinned to a multiple of all of them (`sweep.common_grid`), so that
    every cell of the task trains the same env steps and its records compare. The grid of a
    task is computed over all of the definition's cells of that task (every tier), so a cell
    run alone (`--only`) lands on the grid it would have with the others. The notes saying so
    go to `log` (default: printed)."""
    from marl.run.sweep import common_grid

    tasks, picked = {c.task for c in chosen}, {c.key for c in chosen}
    others = [c for c in cells(definition) if c.task in tasks and c.key not in picked]
    group = [*chosen, *others]
    runs = [resolve(c) for c in group]
    grid, notes = common_grid([c.overrides() for c in group], runs)
    out = []
    for cell, run, overrides in zip(group[: len(chosen)], runs, grid, strict=False):
        pinned = overrides[len(cell.overrides()) :]
        if pinned:
            cell = dataclasses.replace(cell, extra=(*cell.extra, *pinned))
            run = resolve(cell)
        out.append((cell, run))
    for note in notes:
        note = note.replace("sweep: ", "benchmark: ", 1)
        if log is None:
            print(note, flush=True)
        else:
            log(note)
    return out


def state(run: RunConfig) -> tuple[str, dict[str, Any]]:
    """("finished" | "unfinished" | "missing", the run's meta.json or {}); finished once the
    run's last write, record.json, is there (`protocol.has_record`)."""
    from marl.results.protocol import META, has_record, read_meta

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
    from marl.learning.checkpoint import saved_segment
    from marl.run.rundir import CHECKPOINT

    return saved_segment(run.folder / CHECKPOINT) or 0


def measure(run: RunConfig, updates: int = 3) -> dict[str, float]:
    """Seconds per update of a run's vmapped seeds on this machine, training only (after one
    compile of `updates` updates in a scan, the runner's program), and the compile time."""
    import jax

    from marl.learning import training

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
    from marl.results.files import write_json

    records.mkdir(parents=True, exist_ok=True)
    write_json(records / COSTS, dict(sorted(costs.items())))


def hours(seconds: float | None) -> str:
    return "unmeasured" if seconds is None else f"{seconds / 3600:.1f} h"


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
    import dataclasses
    import traceback

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


def coverage(definition: dict[str, Any], study: Any) -> dict[str, Any]:
    """Which cells of `definition` the records of `study` (`marl.results.study.Study`) hold at
    the cell's seed count and budget (a learner's update size may round the budget down by
    `BUDGET_RTOL` of it at most); a variant's cell only from its own run folders. A cell not
    held lists the finished parts in its records folder (`parts`: [[a, b], ...], seeds a..b-1;
    `marl benchmark run --part`), which the records themselves leave out until merged."""
    from marl.results.protocol import BUDGET_RTOL

    rows = []
    for c in cells(definition):
        entry = study.entries.get((c.task, c.algo))
        records = [] if entry is None else list(entry.records)
        if c.variant:
            records = [r for r in records if c.run_name in Path(r.path).parts]
        runs = [run for r in records for run in r.runs]
        steps = min((int(run.steps[-1]) for run in runs), default=0)
        held = len(runs) >= c.seeds and steps >= (1.0 - BUDGET_RTOL) * c.budget
        parts = []
        if not held and c.records.is_dir():
            run = resolve(c)
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
        out.append((piece, resolve(piece)))
    return out


def merge_parts(run: RunConfig, log: Callable[[str], None] = print) -> bool:
    """Join the cell's finished parts into its run once they cover every seed (the parts'
    folders are removed); True when the cell is whole now."""
    from marl.results.protocol import META
    from marl.run.errors import UsageError
    from marl.run.parts import cell_parts

    parent, name = run.parent, str(run.name)
    seeds = sum(b - a for a, b in parts_done(parent, name))
    if seeds < run.settings.seeds:
        return False
    dirs = [d for d in cell_parts(parent, name) if (d / META).is_file()]
    try:
        merge(dirs, parent / name, remove_parts=True)
    except UsageError as e:
        log(f"{parent / name}: parts cover every seed but do not merge: {e}")
        return False
    log(f"merged {', '.join(d.name for d in dirs)} into {parent / name}")
    return True


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
