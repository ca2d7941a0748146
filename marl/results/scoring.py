"""Scores with one meaning: how each task's runs become numbers that compare across tasks.

The rule (the benchmark's scoring version 2, declared in its definition's `scoring:` block):

- a task with a bounded natural unit (`EnvSpec.headline_metric`: win rate, success rate,
  collected fraction, order parameter; all fractions in [0, 1]) is scored in that unit;
- a task without one (its natural unit is the return) is scored min-max between fixed anchors
  declared with the benchmark: 0 = the random policy, 1 = a strong reference (the best of a
  planner, the scripted policy and the best published figure, whichever is highest).

So no task's score runs far past 1, and a weak scripted policy cannot decide a ranking (scoring
version 1, min-max to the scripted policy whatever its strength, reached 3.9). The alternatives
(`ALTERNATIVES`) exist for the sensitivity table, which shows each family's ranking under them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

RETURN = "episode_return"
VERSION = 2


@dataclass(frozen=True)
class TaskScore:
    """How one task is scored: its `metric` as it is (`kind` "natural", bounded in [0, 1]) or
    min-max between `random` (0) and `reference` (1) (`kind` "anchored")."""

    metric: str
    kind: str
    random: float | None = None
    reference: float | None = None
    source: str = ""  # where the reference comes from (scripted, planner, a paper)
    lower_is_better: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("natural", "anchored"):
            raise ValueError(f"scoring kind must be natural or anchored, got {self.kind!r}")
        if self.kind == "anchored" and (self.random is None or self.reference is None):
            raise ValueError(f"anchored scoring of {self.metric} needs random and reference")

    def apply(self, values: np.ndarray) -> np.ndarray:
        """Raw values of `metric` -> scores (higher is better)."""
        x = np.asarray(values, np.float64)
        if self.kind == "natural":
            return 1.0 - x if self.lower_is_better else x
        low, high = float(self.random or 0.0), float(self.reference or 0.0)  # set: anchored
        return (x - low) / (high - low)

    def describe(self) -> str:
        """The rule in words, as the page states it."""
        unit = self.metric.replace("_", " ")
        if self.kind == "natural":
            return f"{unit} (natural unit)" + (", 1 - it (lower is better)" * self.lower_is_better)
        return (
            f"{unit}, 0 = random ({self.random:.4g}), 1 = reference ({self.reference:.4g}"
            + (f", {self.source}" if self.source else "")
            + ")"
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", False)}


def declared_scoring(definition: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """task -> its declared anchors from a benchmark definition's `scoring:` block
    (`{version, anchored: {task: {metric, random, reference, source}}}`); empty without one.
    A version other than this module's is refused."""
    block = (definition or {}).get("scoring")
    if not block:
        return {}
    if int(block.get("version", 0)) != VERSION:
        raise ValueError(f"scoring version {block.get('version')!r} unknown; this is {VERSION}")
    out = {}
    for task, spec in (block.get("anchored") or {}).items():
        missing = [k for k in ("random", "reference") if spec.get(k) is None]
        if missing:
            raise ValueError(f"scoring of {task}: {', '.join(missing)} missing")
        out[task] = dict(spec)
    return out


def task_scoring(
    headline: str,
    has_headline: bool,
    lower: bool,
    record_anchors: Any | None,
    declared: dict[str, Any] | None,
    metric: str = RETURN,
) -> TaskScore | None:
    """The scoring of one task: natural where its headline metric is a bounded unit the runs
    recorded; else anchored at the declared anchors, else at the records' (random and
    scripted reference, measured by `marl train`); None where neither exists. A study of
    another `metric` than the return (`marl report --metric`) is scored on that metric
    between the records' anchors for it, as scoring version 1 did."""
    if metric != RETURN:
        if record_anchors is None:
            return None
        return TaskScore(
            metric,
            "anchored",
            float(record_anchors.random),
            float(record_anchors.reference),
            "the records' anchors",
            lower,
        )
    if headline != RETURN and has_headline:
        return TaskScore(headline, "natural")
    if declared is not None:
        return TaskScore(
            declared.get("metric", RETURN),
            "anchored",
            float(declared["random"]),
            float(declared["reference"]),
            str(declared.get("source", "")),
        )
    if record_anchors is None:
        return None
    return TaskScore(
        RETURN,
        "anchored",
        float(record_anchors.random),
        float(record_anchors.reference),
        "the records' scripted reference",
        lower,
    )


# --- alternatives for the sensitivity table ---------------------------------------------------
ALTERNATIVES = {
    "v2": "scoring v2 (natural unit or fixed anchors), best parameters",
    "final": "scoring v2 on the final parameters (last evaluation) instead of the best",
    "capped": "scoring v1 (return min-max to the scripted policy) capped at 1",
    "v1": "scoring v1 (return min-max to the scripted policy), uncapped",
    "best_run": "return min-max between random and the best run on the task",
}


def alternative_scores(
    name: str,
    score: TaskScore | None,
    best: dict[str, np.ndarray],
    final: dict[str, np.ndarray],
    best_return: dict[str, np.ndarray],
    record_anchors: Any | None,
) -> dict[str, np.ndarray] | None:
    """algorithm -> [runs] scores of one task under alternative `name` (`ALTERNATIVES`), from
    each algorithm's absolute metric (`best`, in `score.metric`), its final evaluation
    (`final`, same metric) and its absolute return (`best_return`); None where the task
    cannot be scored so."""
    if name == "v2":
        return None if score is None else {a: score.apply(v) for a, v in best.items()}
    if name == "final":
        return None if score is None else {a: score.apply(v) for a, v in final.items()}
    if record_anchors is None:
        return None
    lo, hi = record_anchors.random, record_anchors.reference
    if name in ("v1", "capped"):
        out = {a: (np.asarray(v, np.float64) - lo) / (hi - lo) for a, v in best_return.items()}
        return {a: np.minimum(v, 1.0) for a, v in out.items()} if name == "capped" else out
    if name == "best_run":
        top = max(float(np.max(v)) for v in best_return.values())
        if top <= lo:
            return None
        return {a: (np.asarray(v, np.float64) - lo) / (top - lo) for a, v in best_return.items()}
    raise ValueError(f"scoring alternative {name!r} unknown; valid: {', '.join(ALTERNATIVES)}")
