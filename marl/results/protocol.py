"""The evaluation protocol's run records: marl-eval's JSON schema plus a sidecar.

A run directory holds `record.json` in marl-eval's schema (Gorsane et al. 2022), readable by
its tools and by `marl report`:

```
{environment: {task: {algorithm: {
    "run_0": {"step_0": {"step_count": 0, "episode_return": [per episode], ...}, ...,
              "step_20": {...},
              "absolute_metrics": {"episode_return": [absolute_episodes values], ...}},
    ...,
    "run_9": {...}}}}}
```

with one `run_k` per seed, every evaluation's per-episode values, and `absolute_metrics`: each
seed's best evaluated parameters re-evaluated on fresh episodes. Metric names follow marl-eval
and Mava (`episode_return`, `episode_length`; `episode_return/<group>` per agent group; task
metrics under their own names). The sidecar `meta.json` carries what the schema has no room for:
the protocol and its version, the resolved config, the normalisation anchors, package versions,
device, wall time and steps per second.

`load(paths)` reads records back, from run directories, `record.json` files or any marl-eval
JSON (records written elsewhere are marked external), a compacted `record.json.gz` as the
record itself (`marl.run.saved.compact`). Which records compare (protocol settings, budgets, the
settings of pooled runs) is `marl.results.comparable`'s.

This module writes records; reading them is `marl.results.record_reading`'s, the types of a
record read back `marl.results.record_types`'; both are re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from marl.results.files import float_list
from marl.results.record_reading import (
    SIZES,
    checked_values,
    has_record,
    load,
    parse,
    read_meta,
    skip_reason,
)
from marl.results.record_types import (
    ABSOLUTE,
    META,
    RECORD,
    VALUE_BOUND,
    Record,
    RecordError,
    Run,
)

__all__ = [
    "ABSOLUTE",
    "BUDGET_RTOL",
    "META",
    "PROTOCOL_VERSION",
    "RECORD",
    "SIZES",
    "VALUE_BOUND",
    "Record",
    "RecordError",
    "Run",
    "checked_values",
    "has_record",
    "load",
    "parse",
    "read_meta",
    "record_metric",
    "run_record",
    "skip_reason",
    "split_env_id",
    "step_entry",
    "task_name",
]

PROTOCOL_VERSION = "1"
# marl records of one task trained to one nominal budget compare on their final scores when
# their env steps differ by at most this fraction of it: each learner rounds the budget and the
# evaluation interval up to its own update size, and where the updates share no multiple near
# the interval (Dec-POMFC's 1,600 steps, MF-AC's 128, PPO's 2,048) no common grid pins them
BUDGET_RTOL = 0.05


def record_metric(name: str) -> str:
    """The record name of an evaluation metric: `return` -> `episode_return`, `length` ->
    `episode_length`, `return/<group>` -> `episode_return/<group>`; others unchanged."""
    if name == "return" or name.startswith("return/"):
        return "episode_" + name
    if name == "length":
        return "episode_length"
    return name


def split_env_id(env_id: str) -> tuple[str, str]:
    """`"particle/spread"` -> `("particle", "spread")`; an env given by its import path,
    `"my_pkg.race:Race"` -> `("my_pkg.race", "Race")`."""
    family, _, task = env_id.partition("/" if "/" in env_id else ":")
    return family, task or family


def task_name(env_id: str, kwargs: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The record's task: the scenario, plus the keywords that differ from its defaults, e.g.
    `spread` or `spread[continuous_actions=true,num_agents=5]`, so that runs of different
    environment settings are never pooled as one task."""
    _, task = split_env_id(env_id)
    changed = {k: v for k, v in sorted(kwargs.items()) if k not in defaults or defaults[k] != v}
    if not changed:
        return task
    text = ",".join(f"{k}={_value_text(v)}" for k, v in changed.items())
    return f"{task}[{text}]"


def _value_text(value: Any) -> str:
    """A keyword value as written in task names (and run directory names): strings bare."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def step_entry(step: int, evals: dict[str, np.ndarray], seed: int) -> dict[str, Any]:
    """One `step_k` of one run: `step_count` and each metric's per-episode values of `seed`."""
    out: dict[str, Any] = {"step_count": int(step)}
    for name, values in evals.items():
        out[record_metric(name)] = float_list(np.asarray(values)[seed])
    return out


def run_record(
    env_id: str,
    algo: str,
    steps: Sequence[int],
    evaluations: Sequence[dict[str, np.ndarray]],
    absolute: dict[str, np.ndarray] | None = None,
    task: str | None = None,
) -> dict[str, Any]:
    """A marl-eval record of one run (evaluations: per metric `[seeds, episodes]`); `task`
    defaults to the scenario of `env_id` (see `task_name`)."""
    family, scenario = split_env_id(env_id)
    task = task or scenario
    seeds = int(np.asarray(evaluations[0]["return"]).shape[0]) if evaluations else 0
    runs: dict[str, Any] = {}
    for s in range(seeds):
        run = {
            f"step_{k}": step_entry(step, evals, s)
            for k, (step, evals) in enumerate(zip(steps, evaluations, strict=True))
        }
        if absolute is not None:
            run[ABSOLUTE] = {
                record_metric(m): float_list(np.asarray(v)[s]) for m, v in absolute.items()
            }
        runs[f"run_{s}"] = run
    return {family: {task: {algo: runs}}}
