"""Versioned benchmark definitions (`marl/conf/benchmark/<name>.yaml`): the cells (task x
learner, with seeds, budget, protocol and overrides) behind the leaderboard, each resolved to
the run it trains, on one evaluation grid per task.

```
definition yaml -> cells(tier, only) -> Cell.overrides -> marl train (one run per cell)
                -> benchmark_runs.status: finished / unfinished / missing, hours left
                   (benchmark_costs: the cost measured on this machine)
```
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marl.results.files import read_yaml
from marl.run.campaigns.parts import part_name
from marl.run.campaigns.sweep import common_grid
from marl.run.errors import ConfigError
from marl.run.train.compose import compose
from marl.run.train.settings import check_literal

if TYPE_CHECKING:
    from marl.run.train.config import RunConfig

DEFINITIONS = Path(str(resources.files("marl.conf") / "benchmark"))


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
    part: tuple[int, int] | None = None  # seeds a..b-1 only (`--part a:b`, `parts`)

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
    def env_id(self) -> str:
        """The task's env id, without its keyword brackets."""
        return self.env_overrides[0].removeprefix("env=")

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


def resolve_cell(cell: Cell) -> RunConfig:
    """The cell's validated `marl.run.train.config.RunConfig` (nothing compiled; imported here:
    resolving starts a JAX backend, which reading definitions needs not)."""
    from marl.run.train.resolve import resolve

    try:
        return resolve(compose(cell.overrides()), command=cell.overrides())
    except ConfigError as e:
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
    tasks, picked = {c.task for c in chosen}, {c.key for c in chosen}
    others = [c for c in cells(definition) if c.task in tasks and c.key not in picked]
    group = [*chosen, *others]
    runs = [resolve_cell(c) for c in group]
    grid, notes = common_grid([c.overrides() for c in group], runs)
    out = []
    for cell, run, overrides in zip(group[: len(chosen)], runs, grid, strict=False):
        pinned = overrides[len(cell.overrides()) :]
        if pinned:
            cell = dataclasses.replace(cell, extra=(*cell.extra, *pinned))
            run = resolve_cell(cell)
        out.append((cell, run))
    for note in notes:
        note = note.replace("sweep: ", "benchmark: ", 1)
        if log is None:
            print(note, flush=True)
        else:
            log(note)
    return out
