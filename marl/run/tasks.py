"""What the registry knows of a task, for the results layer (which reads records only): its
natural unit, its lower-is-better metrics, and anchors from `marl.baselines` for records made
without them. `marl report`, `marl leaderboard` and `marl sweep` pass `RegisteredTasks()`."""

from __future__ import annotations

import functools

from marl.core.registry import RegistryError, make
from marl.results.protocol import record_metric
from marl.results.study import METRIC, Anchors


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
