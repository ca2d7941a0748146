"""A run's plain values, each checked, each mistake a one-line `ConfigError`: the composed config
as plain data (`plain`), the env and the learner it chooses (`choices`), the numbers, names
and flags it sets, and values read back from files (`check_literal`). Nothing here builds an
environment or starts JAX (`marl.run.campaigns.parts` reads `part=a:b` with `parse_span`).
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from marl.run.errors import ConfigError
from marl.run.processes.runtime import RESUME_SINGLE_HOST, DistributedError, join_distributed
from marl.run.train.loggers import check_logger

MAX_BUDGET = 10**12  # env steps per seed: weeks at millions of steps a second


def plain(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain containers, interpolations resolved (one line if one fails)."""
    try:
        data = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(str(e).strip().splitlines()[0]) from None
    assert isinstance(data, dict)
    return data


def choices(data: dict[str, Any]) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    """(env id, env keywords, learner name, learner hyperparameters), checked."""
    env_cfg, algo_cfg = dict(data.get("env") or {}), dict(data.get("algo") or {})
    env_id = env_cfg.get("id")
    if not isinstance(env_id, str):
        raise ConfigError(f"env.id must be an environment id, got {env_id!r}")
    algo = algo_cfg.pop("name", None)
    if not isinstance(algo, str):
        raise ConfigError(f"algo.name must be a learner name, got {algo!r}")
    check_finite("algo", algo_cfg)
    return env_id, dict(env_cfg.get("kwargs") or {}), algo, algo_cfg


def settings_values(data: dict[str, Any]) -> dict[str, Any]:
    """The run's seeds, budget, evaluation protocol and metric, each checked: the keywords of
    its `marl.learning.training.RunSettings` (whether the env reports the metric is checked
    once the env is built)."""
    protocol = data.get("protocol") or {}
    metric = protocol.get("metric", "return")
    if not isinstance(metric, str) or not metric:
        raise ConfigError(f"protocol.metric must be a metric name, got {metric!r}")
    seeds = integer("seeds", data.get("seeds"), 1)
    first, count = seed_part(data.get("part"), seeds)
    budget = integer("budget", data.get("budget"), 1, MAX_BUDGET)
    interval = protocol.get("eval_interval")  # None: the number of evaluations sets it
    if interval is not None:
        interval = integer("protocol.eval_interval", interval, 1)
    return {
        "seeds": count,
        "first_seed": first,
        "seeds_of": None if count == seeds else seeds,
        "budget": budget,
        "eval_interval": interval,
        "eval_episodes": integer("protocol.eval_episodes", protocol.get("eval_episodes"), 1),
        "seed": integer("seed", data.get("seed"), 0),
        "num_evaluations": integer(
            "protocol.num_evaluations", protocol.get("num_evaluations", 20), 1
        ),
        "absolute_episodes": integer(
            "protocol.absolute_episodes", protocol.get("absolute_episodes", 320), 0
        ),
        "metric": metric,
    }


def integer(key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """An integer >= `minimum` (and <= `maximum`); whole floats (2e6) are accepted and cast."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(f"{key} must be {kind}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{key} must be at most {maximum:.0e}, got {value:.3g}")
    return value


def seed_part(value: Any, seeds: int) -> tuple[int, int]:
    """(first seed, seed count) of `part="a:b"` (seeds a..b-1 of `seeds`); null: all of them."""
    if value is None:
        return 0, seeds
    try:
        first, stop = parse_span(value)
    except ValueError:
        first, stop = -1, -1
    if not 0 <= first < stop <= seeds:
        raise ConfigError(
            f"part must be 'a:b' with 0 <= a < b <= seeds ({seeds}), e.g. part=0:2; got {value!r}"
        )
    return first, stop - first


def parse_span(text: Any) -> tuple[int, int]:
    """`"a:b"` -> (a, b) with 0 <= a < b; ValueError otherwise."""
    a, colon, b = str(text).strip().partition(":")
    if not colon or not (a.isdigit() and b.isdigit()) or int(a) >= int(b):
        raise ValueError(f"expected 'a:b' with 0 <= a < b, got {text!r}")
    return int(a), int(b)


def run_name(value: Any) -> str | None:
    """`name=`: one directory name, or None (a timestamp)."""
    if value is None:
        return None
    name = printable("name", str(value))
    if not name or name in (".", "..") or "/" in name or "\\" in name or len(name) > 200:
        raise ConfigError(f"name must be one directory name (no '/'), got {name!r}")
    return name


def record_label(value: Any) -> str | None:
    """`label=`: the algorithm's name in the record, or None (the learner's)."""
    if value is None:
        return None
    text = printable("label", str(value))
    if not text.strip() or "," in text or "/" in text:
        raise ConfigError(f"label must be a non-empty name without ',' or '/', got {text!r}")
    return text


def printable(key: str, text: str) -> str:
    """`text` if it holds no control character (a newline would break config.yaml's header and
    every one-line listing that names the run)."""
    if any(not c.isprintable() for c in text):
        raise ConfigError(f"{key} must be printable (no newline or control character): {text!r}")
    return text


def flag(key: str, value: Any) -> bool:
    """`resume=`, `checkpoint=`: true or false."""
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value


def logger_name(value: Any) -> str | None:
    """`logger=`: a known external logger whose package is installed, or None."""
    try:
        return check_logger(None if value is None else str(value))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_finite(key: str, value: Any) -> None:
    """Refuse a NaN or infinite number anywhere in a hyperparameter (`algo.lr=inf`); a finite
    one that makes the run diverge (`1e300`) stops it (`marl.learning.training.Diverged`)."""
    if isinstance(value, dict):
        for k, v in value.items():
            check_finite(f"{key}.{k}", v)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_finite(f"{key}[{i}]", v)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{key} must be a finite number, got {value!r}")


def check_literal(data: Any, where: str = "") -> None:
    """Refuse an OmegaConf interpolation (`${...}`) anywhere in `data` read from a file: files
    read back are data, never resolved against the reader's environment or config."""
    if isinstance(data, dict):
        for k, v in data.items():
            check_literal(v, f"{where}.{k}" if where else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            check_literal(v, f"{where}[{i}]")
    elif isinstance(data, str) and "${" in data:
        raise ConfigError(
            f"{where or 'a value'} holds an interpolation ({data!r}); files read back are data "
            "and are never resolved"
        )


def start_distributed(cfg: DictConfig, join: bool = True) -> bool:
    """`distributed=true`: join the multi-host run (`jax.distributed.initialize()`, which reads
    the coordinator from the cluster's environment: Slurm, Open MPI, Cloud TPU, or the
    JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID variables). Must run before
    JAX computes anything, so before `resolve`; returns whether it did (`join=False`: only
    check the settings)."""
    value = cfg.get("distributed", False)
    if not isinstance(value, bool):
        raise ConfigError(f"distributed must be true or false, got {value!r}")
    if value and cfg.get("resume", False) is True:
        raise ConfigError(RESUME_SINGLE_HOST)
    if value and join:
        try:
            join_distributed()
        except DistributedError as e:
            raise ConfigError(str(e)) from None
    return value and join
