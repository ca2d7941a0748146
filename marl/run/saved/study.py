"""Saved runs' records loaded into a study for reports (`load_study`), with what the registry
knows of their tasks (`RegisteredTasks`: the results layer reads records only): a task's natural
unit, its lower-is-better metrics, and anchors from `marl.baselines` for records made without
them. `marl report`, `marl leaderboard`, `marl benchmark` and `marl sweep` read through it."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from marl.core.registry import RegistryError, make
from marl.results import study
from marl.results.protocol import RecordError, record_metric, skip_reason
from marl.results.study import METRIC, Anchors, Study
from marl.run.errors import UsageError


@functools.cache
def _spec(env_id: str):
    try:
        return make(env_id).spec
    except (RegistryError, TypeError, ValueError):
        return None


class RegisteredTasks:
    """`marl.results.study.TaskFacts` from the registered envs; `anchors=False` leaves a task
    without anchors in its records unnormalised instead of running the baselines."""

    def __init__(self, anchors: bool = True):
        self.compute_anchors = anchors

    def headline_metric(self, env_id: str) -> str | None:
        spec = _spec(env_id)
        return None if spec is None else record_metric(spec.headline_metric)

    def lower_is_better(self, env_id: str) -> tuple[str, ...]:
        spec = _spec(env_id)
        return () if spec is None else tuple(record_metric(m) for m in spec.lower_is_better)

    def anchors(self, task: str, metric: str, episodes: int) -> Anchors | None:
        """The random and scripted policies' scores on a registered task with default
        keywords (return metric only)."""
        if not self.compute_anchors or metric != METRIC:
            return None
        from marl.baselines import anchor_scores

        try:
            env = make(task)
        except (RegistryError, TypeError, ValueError):
            return None
        a = anchor_scores(env, num_episodes=episodes)
        if a["reference"] is None:
            return None
        return Anchors(float(a["random"]), float(a["reference"]), "baselines")


def say_dropped(dropped: list[str] | None) -> None:
    """`--drop-bad`: a warning on stderr naming each record left out, and why."""
    for error in dropped or ():
        print(f"warning: dropped a bad record: {error}", file=sys.stderr, flush=True)


def load_study(
    paths: Sequence[str],
    metric: str,
    compute_anchors: bool = True,
    hint: Callable[[Exception], str] | None = None,
    declared: Any = None,
    drop_bad: bool = False,
) -> Study:
    """`marl.results.study.load_study` with the registry's facts (anchors computed for records
    without them, unless `compute_anchors` is False) and a benchmark's declared scoring
    anchors (`declared`); unfinished and diverged runs are named and skipped, and with
    `drop_bad` a record with bad numbers is left out with a warning naming it. `hint(error)`
    adds to a refusal (the leaderboard's: `entrants.refusal_hint`, the command that trains
    matching records)."""
    skipped: list[Path] = []
    dropped: list[str] | None = [] if drop_bad else None
    facts = RegisteredTasks(anchors=compute_anchors)
    try:
        loaded = study.load_study(
            paths, metric=metric, facts=facts, skipped=skipped, declared=declared, dropped=dropped
        )
    except RecordError as e:
        say_dropped(dropped)
        raise UsageError(str(e) + (hint(e) if hint else "")) from None
    say_dropped(dropped)
    for path in skipped:
        print(f"skipped {skip_reason(path)}: {path}", flush=True)
    return loaded
