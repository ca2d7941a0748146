"""Records collected into a study: one Entry per (task, algorithm), runs pooled over records,
and each task's anchors (0 at the random policy's score, 1 at the reference's), direction and
natural unit.

Scores are the absolute metric (each seed's best evaluated parameters re-evaluated; the last
evaluation for records that lack it), one per run; the number of runs is read from the data.
The anchors come from the records' sidecars (computed by `marl train` with the same episodes
for every run of a task) or, for a task without them, from the caller's `TaskFacts`. A task
without a reference score is shown in its own table but left out of normalised aggregates.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from marl.results.comparable import check_comparable
from marl.results.protocol import Record, RecordError, Run
from marl.results.scoring import TaskScore, task_scoring

METRIC = "episode_return"
ANCHOR_RTOL = 1e-4


@dataclass
class Anchors:
    """A task's normalisation: 0 at the random policy's score, 1 at the reference's."""

    random: float
    reference: float
    source: str  # "records" or "baselines"

    def normalise(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, np.float64) - self.random) / (self.reference - self.random)


class TaskFacts(Protocol):
    """What a task's records may not say, supplied by the caller: results read records only
    (`marl.run.saved.study.RegisteredTasks` answers from the registry and `marl.baselines`)."""

    def headline_metric(self, env_id: str) -> str | None:
        """The record metric in the task's natural unit (None: the return)."""
        ...

    def lower_is_better(self, env_id: str) -> tuple[str, ...]:
        """The record metrics of the task where lower is better."""
        ...

    def anchors(self, task: str, metric: str, episodes: int) -> Anchors | None:
        """The random and reference scores of a task whose records carry none."""
        ...


@dataclass
class Entry:
    """All runs of one algorithm on one task, pooled over its records."""

    task: str
    algorithm: str
    records: list[Record] = field(default_factory=list)

    @property
    def runs(self) -> list[Run]:
        return [run for r in self.records for run in r.runs]

    @property
    def external(self) -> bool:
        return any(r.external for r in self.records)

    def scores(self, metric: str) -> np.ndarray:
        """[runs] the absolute metric of every run."""
        return np.concatenate([r.absolute_metric(metric) for r in self.records])

    def curve(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps [K], values [K, runs]) over all runs; the records must share the step grid."""
        steps, first = self.records[0].curve(metric)
        values = [first]
        for r in self.records[1:]:
            s, v = r.curve(metric)
            if not np.array_equal(s, steps):
                raise RecordError(
                    f"{r.path}: evaluation steps differ from {self.records[0].path} for "
                    f"{self.task} {self.algorithm}; pool only runs with the same schedule"
                )
            values.append(v)
        return steps, np.concatenate(values, axis=1)


@dataclass
class Study:
    """Records collected per (task, algorithm) with each task's anchors."""

    metric: str
    entries: dict[tuple[str, str], Entry]
    anchors: dict[str, Anchors | None]
    lower: dict[str, bool] = field(default_factory=dict)  # task -> metric is lower-is-better
    headline: dict[str, str] = field(default_factory=dict)  # task -> its natural unit's metric
    scoring: dict[str, TaskScore | None] = field(default_factory=dict)  # `marl.results.scoring`

    @property
    def tasks(self) -> list[str]:
        return sorted({t for t, _ in self.entries})

    @property
    def algorithms(self) -> list[str]:
        return sorted({a for _, a in self.entries})

    def headline_unit(self, task: str, algo: str, default: str | None = None) -> str | None:
        """The task's natural unit (win rate, success rate, ...; `default` for a task without
        one) where every run of `algo` on it recorded that metric, else None."""
        unit = self.headline.get(task, default)
        runs = self.entries[(task, algo)].runs
        return unit if unit and all(unit in run.metrics for run in runs) else None

    def task_scores(self, task: str, algo: str, final: bool = False) -> np.ndarray | None:
        """[runs] the scores of `algo` on `task` under its scoring (`marl.results.scoring`):
        of each run's absolute metric, or with `final` of its last evaluation; None where the
        task is not scored."""
        score = self.scoring.get(task)
        if score is None:
            return None
        entry = self.entries[(task, algo)]
        if final:
            raw = np.concatenate([r.final(score.metric) for r in entry.records])
        else:
            raw = entry.scores(score.metric)
        return score.apply(raw)

    def normalised_scores(self) -> dict[str, dict[str, np.ndarray]]:
        """algorithm -> task -> [runs] scores, scored tasks only."""
        out: dict[str, dict[str, np.ndarray]] = {}
        for task, algo in sorted(self.entries):
            scores = self.task_scores(task, algo)
            if scores is not None:
                out.setdefault(algo, {})[task] = scores
        return out

    def normalised_curves(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """algorithm -> task -> (steps, scores [K, runs]) of the greedy evaluations, scored
        tasks only."""
        out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        for (task, algo), entry in sorted(self.entries.items()):
            score = self.scoring.get(task)
            if score is not None:
                steps, values = entry.curve(score.metric)
                out.setdefault(algo, {})[task] = (steps, score.apply(values))
        return out


@dataclass(frozen=True)
class Group:
    """Normalised tasks that exactly the same algorithms ran: the only task sets over which
    aggregates, profiles, P(improvement) and sample-efficiency curves compare (rliable)."""

    name: str
    tasks: tuple[str, ...]
    algorithms: tuple[str, ...]

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "_", self.name).strip("_")


def comparable_groups(scores: dict[str, dict[str, np.ndarray]]) -> list[Group]:
    """Per family (the env id's first part), its tasks grouped by the exact set of algorithms
    that ran them (most tasks first); then each such group of tasks across families, where it
    spans more than one. `scores`: algorithm -> task -> [runs]."""
    ran: dict[str, tuple[str, ...]] = {}
    for algo, by in scores.items():
        for task in by:
            ran[task] = tuple(sorted({*ran.get(task, ()), algo}))

    def split(tasks: list[str]) -> list[tuple[tuple[str, ...], list[str]]]:
        sets: dict[tuple[str, ...], list[str]] = {}
        for task in sorted(tasks):
            sets.setdefault(ran[task], []).append(task)
        return sorted(sets.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    groups: list[Group] = []
    families = sorted({t.split("/")[0] for t in ran})
    for family in families:
        parts = split([t for t in ran if t.split("/")[0] == family])
        for i, (algos, tasks) in enumerate(parts):
            name = family if len(parts) == 1 else f"{family} (task set {i + 1})"
            groups.append(Group(name, tuple(tasks), algos))
    for algos, tasks in split(list(ran)):
        spanned = sorted({t.split("/")[0] for t in tasks})
        if len(spanned) > 1:
            groups.append(Group("across " + " + ".join(spanned), tuple(tasks), algos))
    return groups


def subset(scores: dict[str, dict[str, Any]], group: Group) -> dict[str, dict[str, Any]]:
    return {a: {t: scores[a][t] for t in group.tasks} for a in group.algorithms}


def _record_anchors(task: str, records: Sequence[Record], metric: str) -> Anchors | None:
    found: list[tuple[Record, dict[str, Any]]] = []
    for r in records:
        a = (r.meta or {}).get("anchors")
        if a and a.get("metric", METRIC) == metric and a.get("reference") is not None:
            found.append((r, a))
    if not found:
        return None
    (ref_record, ref), others = found[0], found[1:]
    for r, a in others:
        for key in ("random", "reference"):
            if not math.isclose(a[key], ref[key], rel_tol=ANCHOR_RTOL, abs_tol=1e-6):
                raise RecordError(
                    f"records of {task} disagree on the {key} anchor: {ref[key]!r} in "
                    f"{ref_record.path} but {a[key]!r} in {r.path} (different environment "
                    "settings or package versions?)"
                )
    return Anchors(float(ref["random"]), float(ref["reference"]), "records")


def lower_is_better(
    task: str, metric: str, records: Sequence[Record] = (), facts: TaskFacts | None = None
) -> bool:
    """Whether a lower `metric` (record name, e.g. `lost`, `episode_length`) is better on
    `task` (`family/name`, keywords in brackets ignored): as the task's `records` say (their
    sidecars name the env's `EnvSpec.lower_is_better`), else as `facts` say; False for returns
    and for tasks neither knows."""
    if metric == METRIC or metric.startswith(METRIC + "/"):
        return False
    metas = [r.meta or {} for r in records]
    said = [m["lower_is_better"] for m in metas if "lower_is_better" in m]
    if said:
        return any(metric in names for names in said)
    if facts is None:
        return False
    return metric in facts.lower_is_better(task.split("[", 1)[0])


def headline_metric(
    task: str, records: Sequence[Record] = (), facts: TaskFacts | None = None
) -> str:
    """The record metric in `task`'s natural unit (`EnvSpec.headline_metric`: `won` on combat,
    `success_rate` on pathfinding): as its records' sidecars say, else as `facts` say, else the
    return."""
    metas = [r.meta or {} for r in records]
    said = {m["headline_metric"] for m in metas if "headline_metric" in m}
    if len(said) == 1:
        return said.pop()
    found = facts.headline_metric(task.split("[", 1)[0]) if facts is not None else None
    return found or METRIC


def _usable(task: str, anchors: Anchors | None, lower: bool) -> Anchors | None:
    """`anchors` if the reference beats the random policy in the metric's direction; else None
    with a warning (normalising by them would rank the algorithms backwards or divide by 0)."""
    if anchors is None:
        return None
    gap = anchors.random - anchors.reference if lower else anchors.reference - anchors.random
    if gap > 1e-9 * max(1.0, abs(anchors.random), abs(anchors.reference)):
        return anchors
    warnings.warn(
        f"{task}: the reference ({anchors.reference:.4g}) does not beat the random policy "
        f"({anchors.random:.4g}); the task is left unnormalised",
        stacklevel=3,
    )
    return None


def collect(
    records: Sequence[Record],
    metric: str = METRIC,
    *,
    facts: TaskFacts | None = None,
    declared: dict[str, dict[str, Any]] | None = None,
) -> Study:
    """Group records per (task, algorithm), check they are comparable, find the anchors (from
    the records; else from `facts`, where given) and each task's scoring (`declared`: task ->
    its fixed anchors from the benchmark definition, `scoring.declared_scoring`)."""
    if not records:
        raise RecordError("no finished run records found")
    check_comparable(records)
    entries: dict[tuple[str, str], Entry] = {}
    for r in records:
        missing = [run.name for run in r.runs if metric not in run.metrics]
        if missing:
            have = ", ".join(sorted(r.runs[0].metrics))
            raise RecordError(
                f"{r.path}: {r.env_id}/{r.algorithm}: no metric {metric!r}; has {have}"
            )
        entries.setdefault((r.env_id, r.algorithm), Entry(r.env_id, r.algorithm)).records.append(r)
    anchors: dict[str, Anchors | None] = {}
    lower, headline = {}, {}
    for task in sorted({t for t, _ in entries}):
        task_records = [r for (t, _), e in entries.items() if t == task for r in e.records]
        lower[task] = lower_is_better(task, metric, task_records, facts)
        headline[task] = headline_metric(task, task_records, facts)
        found = _record_anchors(task, task_records, metric)
        if found is None and facts is not None:
            episodes = max(
                (int((r.meta or {}).get("protocol", {}).get("absolute_episodes") or 0))
                for r in task_records
            )
            found = facts.anchors(task, metric, episodes or 320)
        anchors[task] = _usable(task, found, lower[task])
    scoring = {}
    for task in sorted(anchors):
        unit = headline[task]
        has = all(
            unit in run.metrics for (t, _), e in entries.items() if t == task for run in e.runs
        )
        scoring[task] = task_scoring(
            unit, has, lower[task], anchors[task], (declared or {}).get(task), metric
        )
    return Study(metric, entries, anchors, lower, headline, scoring)


def load_study(
    paths: Sequence[str | Path],
    metric: str = METRIC,
    *,
    facts: TaskFacts | None = None,
    skipped: list[Path] | None = None,
    declared: dict[str, dict[str, Any]] | None = None,
    dropped: list[str] | None = None,
) -> Study:
    """`marl.results.protocol.load` (unfinished runs appended to `skipped`; with `dropped`,
    unreadable records left out and their errors appended there) then `collect`."""
    from marl.results.protocol import load

    found: list[Path] = [] if skipped is None else skipped
    records = load(paths, found, dropped)
    if not records and found:
        raise RecordError(
            f"no finished run records found; unfinished: {', '.join(map(str, found))}"
        )
    return collect(records, metric=metric, facts=facts, declared=declared)
