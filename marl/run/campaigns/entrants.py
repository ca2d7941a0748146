"""A learner of your own on a benchmark's cells, ranked beside the benchmark's learners:

```
marl benchmark run v1 --algo my_pkg.mod:make_train --records runs/v1-mine
marl leaderboard results/benchmark/v1 runs/v1-mine --out board
```

A learner the definition names keeps its own cells (its families and overrides). Any other
learner enters every family that names no `variant` (a variant trains the same learners
otherwise), once per task, in the first family that holds the task: that family's seeds,
budget, protocol and `overrides: all`, evaluated on the grid the definition's learners of the
task train on (`benchmark.resolve_cells`), so that its records compare with theirs. Its runs
go to a records folder of the user's, never into the definition's own.

`refusal_hint` turns a leaderboard's refusal of two records into the command that trains
matching ones.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marl.run.campaigns import benchmark
from marl.run.campaigns.benchmark import BenchmarkError, Cell

if TYPE_CHECKING:
    from marl.run.train.config import RunConfig

PIN = "protocol.eval_interval="


def implied(records: Sequence[str | Path]) -> str | None:
    """The shipped benchmark whose own records folder (or one inside it) is among `records`,
    the first given where several are; None where none is."""
    homes = {}
    for name in benchmark.names():
        try:
            homes[name] = Path(benchmark.load(name)["records"]).resolve()
        except (BenchmarkError, KeyError, TypeError):
            continue
    for r in records:
        path = Path(r).resolve()
        for name, home in homes.items():
            if path == home or path.is_relative_to(home):
                return name
    return None


def check_records(definition: dict[str, Any], records: str) -> Path:
    """`records` as a folder a learner's cells may go to: not the definition's own records
    folder, nor one inside it or holding it."""
    own, path = Path(definition["records"]).resolve(), Path(records).resolve()
    if path == own or own in path.parents or path in own.parents:
        name = definition["name"]
        raise BenchmarkError(
            f"--records {records}: that is (or holds, or lies in) benchmark {name}'s own "
            f"records folder {definition['records']}; train your learner into a folder of "
            f"your own, e.g. --records runs/{name}-mine"
        )
    return Path(records)


def entered(definition: dict[str, Any], algo: str) -> list[Cell]:
    """The cells a learner the definition does not name enters: each task once, in the first
    family (over every tier, in the definition's order) that holds it and names no variant."""
    out, seen = [], set()
    for tier, families in definition["tiers"].items():
        for family, spec in families.items():
            if spec.get("variant"):
                continue
            for task in spec["tasks"]:
                if task not in seen:
                    seen.add(task)
                    out.append(benchmark.family_cell(definition, tier, family, task, algo))
    return out


def cells(
    definition: dict[str, Any],
    algos: Sequence[str],
    records: str,
    tier: str = "all",
    only: Sequence[str] = (),
) -> list[Cell]:
    """The cells of `algos` on the definition's tasks (of `tier`; matching `only`), written to
    `records`: a learner the definition names, its own cells; another, those it `entered`."""
    folder = check_records(definition, records)
    benchmark.cells(definition, tier)  # the tier's name checked
    own = benchmark.cells(definition)
    defined = {c.algo for c in own}
    out: list[Cell] = []
    for algo in dict.fromkeys(algos):
        mine = [c for c in own if c.algo == algo] if algo in defined else entered(definition, algo)
        out += [c for c in mine if tier in ("all", c.tier)]
    if not out:
        raise BenchmarkError(f"--tier {tier}: no cell of {', '.join(algos)} in it")
    return benchmark.select([dataclasses.replace(c, records=folder) for c in out], only)


def resolve(
    definition: dict[str, Any], chosen: Sequence[Cell], log: Callable[[str], None] | None = None
) -> list[tuple[Cell, RunConfig]]:
    """The chosen cells with their resolved runs (every one checked before any work). A cell
    of the definition resolves as `benchmark.resolve_cells` does; an entered one is evaluated
    every env steps the definition's cells of its family and task are, where they share one
    interval (their common grid), so it trains the same steps."""
    keys = {c.key for c in benchmark.cells(definition)}
    own = [c for c in chosen if c.key in keys]
    resolved = dict(
        zip([c.key for c in own], benchmark.resolve_cells(definition, own, log), strict=True)
    )
    new = [c for c in chosen if c.key not in keys]
    if new:
        homes = {(c.tier, c.family, c.task) for c in new}
        peers = [c for c in benchmark.cells(definition) if (c.tier, c.family, c.task) in homes]
        grid = benchmark.resolve_cells(definition, peers, log=lambda _: None)
        for cell in new:
            intervals = {
                _interval(run)
                for c, run in grid
                if (c.tier, c.family, c.task) == (cell.tier, cell.family, cell.task)
            }
            run = benchmark.resolve_cell(cell)
            pinned = any(o.startswith(PIN) for o in cell.extra)
            if len(intervals) == 1 and not pinned and _interval(run) not in intervals:
                cell = dataclasses.replace(cell, extra=(*cell.extra, f"{PIN}{intervals.pop()}"))
                run = benchmark.resolve_cell(cell)
            resolved[cell.key] = (cell, run)
    return [resolved[c.key] for c in chosen]


def _interval(run: RunConfig) -> int:
    """Env steps between a resolved run's evaluations."""
    return run.updates_per_segment * run.steps_per_update


def plan(definition: dict[str, Any], runs: Sequence[tuple[Cell, RunConfig]]) -> list[str]:
    """Per learner, where its cells go and per family their tasks, seeds x budget and
    evaluation interval: printed before any training."""
    lines = []
    for algo in dict.fromkeys(c.algo for c, _ in runs):
        mine = [(c, r) for c, r in runs if c.algo == algo]
        lines.append(
            f"benchmark {definition['name']}: {algo} on {len(mine)} cell(s) into "
            f"{mine[0][0].records}:"
        )
        families: dict[tuple[str, str], list[tuple[Cell, RunConfig]]] = {}
        for c, r in mine:
            families.setdefault((c.tier, c.family), []).append((c, r))
        for (tier, family), members in families.items():
            c = members[0][0]
            every = {_interval(r) for _, r in members}
            grid = f", evaluated every {every.pop():,} steps" if len(every) == 1 else ""
            lines.append(
                f"  {family} ({tier} tier): {len(members)} task(s), {c.seeds} seeds x "
                f"{c.budget:.0e} steps{grid}"
            )
    return lines


def refusal_hint(error: Any, given: Sequence[str], named: str | None = None) -> str:
    """`; ...` naming the command that trains records matching a benchmark's, for a refusal
    (`protocol.RecordError` with its `pair`) of a benchmark's record beside one of the user's
    on budget, seeds or evaluation grid; where one folder holds a task at two budgets, says
    so. `named`: the benchmark definition (name or yaml) the leaderboard was given, else the
    shipped one whose records folder holds one side. Empty where there is nothing to add."""
    pair, setting = getattr(error, "pair", None), getattr(error, "setting", None)
    if pair is None or setting in (None, "env version"):
        return ""
    ref, other = pair
    task = ref.env_id
    if setting == "budget":
        for folder in given:
            if all(_under(r.path, folder) for r in pair):
                return (
                    f"; {folder} holds {task} at two budgets: give the leaderboard the run "
                    "folders of one"
                )
    for name in [named] if named else benchmark.names():
        try:
            definition = benchmark.load(name)
        except Exception:  # noqa: BLE001 - a hint must never hide the refusal itself
            continue
        home = definition["records"]
        sides = [r for r in pair if _under(r.path, home)]
        if len(sides) != 1:
            continue
        mine = other if sides[0] is ref else ref
        if mine.meta is None:  # an external record: nothing of marl's trains it
            return ""
        algo = ((mine.meta.get("config") or {}).get("algo") or {}).get("name") or mine.algorithm
        folder = next((g for g in given if _under(mine.path, g)), None)
        base = (folder or str((mine.meta.get("config") or {}).get("out") or "runs")).rstrip("/")
        records = f"{base}-{definition['name']}"
        command = shlex.join(["marl", "benchmark", "run", name, "--algo", algo])
        return (
            f"; to rank {mine.algorithm} beside benchmark {definition['name']}, train its "
            f"cells (their seeds, budget and evaluation grid): {command} --records "
            f"{shlex.quote(records)}, then marl leaderboard {shlex.quote(home)} "
            f"{shlex.quote(records)} --out DIR"
        )
    return ""


def _under(path: Path | str, folder: str) -> bool:
    p, f = Path(path).resolve(), Path(folder).resolve()
    return p == f or f in p.parents
