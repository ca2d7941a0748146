"""What a finished run folder sums up: `final.json` (`final_record`) and the anchors its sidecar
keeps (`record_anchors`); JSON numbers of arrays (`floats`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from marl.learning.training import RunResult
from marl.results.files import float_list
from marl.run.train.config import RunConfig


def floats(x: Any) -> Any:
    """JSON numbers nested as `x` is (NaN, a statistic with nothing to average, as null;
    float32 at its shortest decimal, `float_list`)."""
    x = np.asarray(x)
    values = [None if math.isnan(v) else v for v in float_list(x)]
    return np.array(values, dtype=object).reshape(x.shape).tolist()


def record_anchors(run: RunConfig) -> dict[str, Any] | None:
    """The random and scripted policies' scores a record keeps (return metric only)."""
    if run.settings.metric != "return":
        return None
    from marl.baselines import anchor_scores

    episodes = max(run.settings.absolute_episodes, run.settings.eval_episodes)
    return {**anchor_scores(run.env, num_episodes=episodes), "episodes": episodes}


def final_record(
    run: RunConfig, result: RunResult, made_with: dict[str, Any], created: str
) -> dict[str, Any]:
    """Scores of the last evaluation and the absolute metric per seed and over seeds, timings,
    what it was made with (`provenance`: code, versions, device) and when the run was created.

    `return` is the team return (summed over agents and steps), averaged over the evaluation
    episodes of each seed; `std` is the sample standard deviation over seeds (ddof=1).
    """
    last = result.evaluations[-1]
    per_seed = {k: np.asarray(v).mean(axis=-1) for k, v in last.items()}
    returns = per_seed["return"]
    ddof = 1 if len(returns) > 1 else 0
    extra: dict[str, Any] = {}
    if result.absolute is not None:
        absolute = {k: np.asarray(v).mean(axis=-1) for k, v in result.absolute.items()}
        extra["absolute"] = {k: floats(v) for k, v in absolute.items()}
        extra["absolute_mean"] = float(np.mean(absolute[run.settings.metric]))
        extra["absolute_std"] = float(np.std(absolute[run.settings.metric], ddof=ddof))
    if result.best_step is not None:
        extra["best_step"] = [int(s) for s in result.best_step]
    return {
        "env": run.env_id,
        "algo": run.algo,
        "seeds": run.settings.seeds,
        "budget": run.settings.budget,
        "env_steps": int(result.steps[-1]),
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns, ddof=ddof)),
        "final": {k: floats(v) for k, v in per_seed.items()},
        **extra,
        "wall_time": float(result.wall_time),
        "compile_time": float(result.compile_time),
        "steps_per_second": float(result.steps_per_second),
        **made_with,
        "created": created,
    }
