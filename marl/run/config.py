"""Run configuration: compose the Hydra config tree, then resolve it, once, into a frozen
`RunConfig` that carries everything derived from it and everything built from it.

```python
cfg = compose(["env=particle/spread", "algo=mappo", "budget=2e6", "algo.lr=1e-3"])
run = resolve(cfg)   # validated: env, keywords, learner, keys, budget; nothing compiled
run.env, run.train   # the environment and the learner, ready for `runner.run`
run.task, run.parent # its task name and the folder its run directories go in
run.targets          # the transfer targets' environments and learners
```

Composition is `marl.run.compose` (the tree in `marl/conf/`). Resolving checks every value,
builds the environment and the learner (cheap: nothing is traced), so that every mistake the
registry or the learner can name surfaces as a one-line `ConfigError` before minutes of
compilation, and keeps them: nothing is built a second time. Derived values (updates per
segment, total updates, the task, the run folder) go into the frozen `RunConfig`, never back
into the config.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from marl.learning.training import RunSettings, probe_learner
from marl.results.protocol import PROTOCOL_VERSION, split_env_id, task_name
from marl.run.compose import compose, group_options, learner_settings, open_keys
from marl.run.errors import ConfigError
from marl.run.transfer import (
    BuiltTarget,
    TransferError,
    TransferTarget,
    build_targets,
    parse_targets,
)

if TYPE_CHECKING:
    from marl.core.env import EnvSpec, MultiAgentEnv
    from marl.core.learner import Train

__all__ = ["ConfigError", "RunConfig", "build", "compose", "group_options", "open_keys", "resolve"]

ACTION_KINDS = ("discrete", "continuous")
MAX_BUDGET = 10**12  # env steps per seed: weeks at millions of steps a second
MAX_UPDATES = 2**31 - 1  # updates are counted in int32 (schedules, optimiser steps)


@dataclass(frozen=True)
class RunConfig:
    """A validated run: what to build, how long to train, where to write; what `resolve`
    derived (schedule, task, folder, the algorithm's record name) and what it built (the
    environment, the learner, the transfer targets), each once."""

    env_id: str
    env_kwargs: dict[str, Any]  # constructor keywords given (unset ones: constructor defaults)
    algo: str  # learner name in the registry
    algo_cfg: dict[str, Any]  # learner hyperparameters (the algo group without `name`)
    settings: RunSettings
    out: Path  # root of run directories
    name: str | None  # run directory name (None: a timestamp)
    steps_per_update: int  # env steps per seed consumed by one update
    updates_per_segment: int  # updates between evaluations
    num_segments: int  # evaluations after the one at step 0
    task: str  # the scenario plus its non-default env keywords (`protocol.task_name`)
    parent: Path  # `<out>/<family>/<task>/<algo>`: where its run directories go (`rundir`)
    # the algorithm as records, reports and the leaderboard name it: `label`, or the name its
    # module's `label(cfg)` gives (`teams`: its sides' learners, e.g. `mfq+il`), or `algo`
    record_algo: str
    env: MultiAgentEnv = field(compare=False, repr=False)
    train: Train = field(compare=False, repr=False)  # built for `total_updates` (annealing)
    command: tuple[str, ...] = field(default=())  # the overrides it was composed from
    protocol_version: str = PROTOCOL_VERSION  # `protocol.version` of the config
    transfer: tuple[TransferTarget, ...] = ()  # other envs the trained policy is played on
    targets: tuple[BuiltTarget, ...] = field(default=(), compare=False, repr=False)  # built
    resume: bool = False  # continue an unfinished run of this config from its last checkpoint
    logger: str | None = None  # external logger (`marl.run.loggers`): None, "wandb", "tensorboard"
    checkpoint: bool = (
        True  # save every segment (`marl.learning.checkpoint`) so resume=true can continue
    )
    label: str | None = None  # the algorithm's name in the run record (None: the learner's)

    @property
    def folder(self) -> Path | None:
        """The run directory of a named run (`<parent>/<name>`); None: a timestamp, claimed."""
        return None if self.name is None else self.parent / self.name

    @property
    def total_updates(self) -> int:
        """Updates per seed over the whole run (what `make_train` anneals over)."""
        return self.updates_per_segment * self.num_segments

    @property
    def env_steps(self) -> int:
        """Env steps per seed the run will take (the budget rounded up to whole segments)."""
        return self.total_updates * self.steps_per_update

    @cached_property
    def config(self) -> dict[str, Any]:
        """The resolved config, in the shape of the Hydra tree, plus the derived values: what
        config.yaml and meta.json hold, and what claiming a run directory compares (made once
        per run; read it, never change it)."""
        s = self.settings
        return {
            "env": {"id": self.env_id, "kwargs": dict(self.env_kwargs)},
            "algo": {"name": self.algo, **self.algo_cfg},
            "protocol": {
                "version": self.protocol_version,
                "eval_interval": s.eval_interval,
                "num_evaluations": s.num_evaluations,
                "eval_episodes": s.eval_episodes,
                "absolute_episodes": s.absolute_episodes,
                "metric": s.metric,
                "transfer": [t.to_dict() for t in self.transfer],
            },
            "seeds": s.seeds_of or s.seeds,
            **({"part": f"{s.first_seed}:{s.first_seed + s.seeds}"} if s.seeds_of else {}),
            "budget": s.budget,
            "seed": s.seed,
            "out": str(self.out),
            "name": self.name,
            "label": self.label,
            "derived": {
                "steps_per_update": self.steps_per_update,
                "updates_per_segment": self.updates_per_segment,
                "eval_interval": self.updates_per_segment * self.steps_per_update,
                "evaluations": self.num_segments + 1,
                "total_updates": self.total_updates,
                "env_steps": self.env_steps,
                **learner_settings(self.algo, getattr(self.train, "config", None)),
            },
        }


# --- validation -------------------------------------------------------------------------------
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


def _int(key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """An integer >= `minimum` (and <= `maximum`); whole floats (2e6) are accepted and cast."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(f"{key} must be {kind}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{key} must be at most {maximum:.0e}, got {value:.3g}")
    return value


def _part(value: Any, seeds: int) -> tuple[int, int]:
    """(first seed, seed count) of `part="a:b"` (seeds a..b-1 of `seeds`); null: all of them."""
    if value is None:
        return 0, seeds
    from marl.run.parts import parse_span

    try:
        first, stop = parse_span(value)
    except ValueError:
        first, stop = -1, -1
    if not 0 <= first < stop <= seeds:
        raise ConfigError(
            f"part must be 'a:b' with 0 <= a < b <= seeds ({seeds}), e.g. part=0:2; got {value!r}"
        )
    return first, stop - first


def _settings(data: dict[str, Any]) -> RunSettings:
    protocol = data.get("protocol") or {}
    interval = protocol.get("eval_interval")
    metric = protocol.get("metric", "return")
    if not isinstance(metric, str) or not metric:
        raise ConfigError(f"protocol.metric must be a metric name, got {metric!r}")
    seeds = _int("seeds", data.get("seeds"), 1)
    first, count = _part(data.get("part"), seeds)
    return RunSettings(
        seeds=count,
        first_seed=first,
        seeds_of=None if count == seeds else seeds,
        budget=_int("budget", data.get("budget"), 1, MAX_BUDGET),
        eval_interval=None if interval is None else _int("protocol.eval_interval", interval, 1),
        eval_episodes=_int("protocol.eval_episodes", protocol.get("eval_episodes"), 1),
        seed=_int("seed", data.get("seed"), 0),
        num_evaluations=_int("protocol.num_evaluations", protocol.get("num_evaluations", 20), 1),
        absolute_episodes=_int(
            "protocol.absolute_episodes", protocol.get("absolute_episodes", 320), 0
        ),
        metric=metric,
    )


def evaluation_metrics(spec: EnvSpec) -> list[str]:
    """Names `marl.learning.evaluation.evaluate` returns for an env with this spec."""
    names = ["return", "length"]
    if len(spec.groups) > 1:
        names += [f"return/{g.name}" for g in spec.groups]
    return names + list(spec.metric_names)


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
        from marl.run.runtime import RESUME_SINGLE_HOST

        raise ConfigError(RESUME_SINGLE_HOST)
    if value and join:
        from marl.run.runtime import DistributedError, join_distributed

        try:
            join_distributed()
        except DistributedError as e:
            raise ConfigError(str(e)) from None
    return value and join


def _logger(value: Any) -> str | None:
    from marl.run.loggers import check_logger

    try:
        return check_logger(None if value is None else str(value))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value


def _printable(key: str, text: str) -> str:
    """`text` if it holds no control character (a newline would break config.yaml's header and
    every one-line listing that names the run)."""
    if any(not c.isprintable() for c in text):
        raise ConfigError(f"{key} must be printable (no newline or control character): {text!r}")
    return text


def _run_name(value: Any) -> str | None:
    if value is None:
        return None
    name = _printable("name", str(value))
    if not name or name in (".", "..") or "/" in name or "\\" in name or len(name) > 200:
        raise ConfigError(f"name must be one directory name (no '/'), got {name!r}")
    return name


def _label(value: Any) -> str | None:
    if value is None:
        return None
    label = _printable("label", str(value))
    if not label.strip() or "," in label or "/" in label:
        raise ConfigError(f"label must be a non-empty name without ',' or '/', got {label!r}")
    return label


# --- the registry's envs and learners, with one-line errors -----------------------------------
def make_env(env_id: str, kwargs: dict[str, Any]) -> MultiAgentEnv:
    """`marl.make` with every failure a one-line ConfigError."""
    from marl.core.registry import RegistryError, make

    try:
        return make(env_id, **kwargs)
    except RegistryError as e:
        raise ConfigError(str(e)) from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{env_id}: {e}") from None
    except ImportError as e:
        raise ConfigError(f"{env_id} is registered but cannot be imported: {e}") from None


def learner_factory(name: str) -> Callable[..., Train]:
    """The registered learner `name`'s `make_train`; ConfigError naming why it is unusable."""
    from marl.core.registry import RegistryError, algorithm

    try:
        return algorithm(name)
    except RegistryError as e:
        raise ConfigError(str(e)) from None
    except ImportError as e:
        raise ConfigError(f"algorithm {name!r} is registered but cannot be imported: {e}") from None


def action_kinds(make_train: Callable[..., Any]) -> tuple[str, ...]:
    """Action spaces a learner supports: its module's `ACTION_KINDS` (default: both).

    Value-based learners (IQL, VDN, QMIX) declare `ACTION_KINDS = ("discrete",)`.
    """
    module = sys.modules.get(getattr(make_train, "__module__", ""), None)
    return tuple(getattr(module, "ACTION_KINDS", ACTION_KINDS))


def check_compatible(algo: str, make_train: Callable[..., Any], env_id: str, spec: EnvSpec) -> None:
    """Refuse a learner on an action space it cannot act in (e.g. value-based, continuous)."""
    kind = "discrete" if spec.discrete else "continuous"
    supported = action_kinds(make_train)
    if kind not in supported:
        raise ConfigError(
            f"{algo} acts only in {' or '.join(supported)} action spaces; {env_id} has {kind} "
            f"actions (learners for {kind} actions: {', '.join(_learners_for(kind)) or 'none'})"
        )


def _learners_for(kind: str) -> list[str]:
    from marl.core.registry import algorithm, list_algorithms

    out = []
    for name in list_algorithms():
        try:
            if kind in action_kinds(algorithm(name)):
                out.append(name)
        except Exception:  # an unimportable learner is simply not suggested
            continue
    return out


# --- resolve: check once, derive, build once --------------------------------------------------
def resolve(cfg: DictConfig, command: Sequence[str] = ()) -> RunConfig:
    """Validate a composed config, derive the run's numbers, task and folder, and build its
    environment, learner and transfer targets, once; nothing is compiled.

    Every mistake the registry or the learner can name (unknown env keyword, unknown
    hyperparameter, bad value, a transfer target the trained parameters cannot drive) surfaces
    here as a `ConfigError`, before minutes of compilation.
    """
    from marl.core import registry

    data = _plain(cfg)
    settings = _settings(data)
    env_id, env_kwargs, algo, algo_cfg = _choices(data)
    env = make_env(env_id, env_kwargs)
    _check_metric(settings.metric, env_id, env.spec)
    make_train = learner_factory(algo)
    check_compatible(algo, make_train, env_id, env.spec)
    steps_per_update, train = _learner(algo, make_train, env, algo_cfg, settings)
    per_segment, num_segments = settings.schedule(steps_per_update)
    if per_segment * num_segments > MAX_UPDATES:
        raise ConfigError(
            f"budget={settings.budget:.3g} takes {per_segment * num_segments:.3g} updates of "
            f"{steps_per_update} steps, past the {MAX_UPDATES:,} a run counts; a smaller budget"
        )
    out = Path(str(data.get("out") or "."))
    name, label = _run_name(data.get("name")), _label(data.get("label"))
    resume = _flag("resume", data.get("resume", False))
    checkpoint = _flag("checkpoint", data.get("checkpoint", True))
    logger = _logger(data.get("logger"))
    protocol = data.get("protocol") or {}
    try:
        transfer = parse_targets(protocol.get("transfer"))
    except TransferError as e:
        raise ConfigError(str(e)) from None
    task = task_name(env_id, env_kwargs, registry.env_kwargs(env_id))
    run = RunConfig(
        env_id=env_id,
        env_kwargs=env_kwargs,
        algo=algo,
        algo_cfg=algo_cfg,
        settings=settings,
        out=out,
        name=name,
        label=label,
        resume=resume,
        checkpoint=checkpoint,
        logger=logger,
        steps_per_update=steps_per_update,
        updates_per_segment=per_segment,
        num_segments=num_segments,
        task=task,
        parent=out / split_env_id(env_id)[0] / task / algo.replace(":", "."),  # family/task/algo
        record_algo=label or _learner_label(make_train, algo, algo_cfg),
        env=env,
        train=train,
        command=tuple(command),
        protocol_version=str(protocol.get("version", PROTOCOL_VERSION)),
        transfer=transfer,
    )
    if run.resume and not run.checkpoint:
        raise ConfigError("resume=true needs checkpoint=true (the segments to continue from)")
    if not transfer:
        return run
    try:  # every target must take the trained parameters (shapes only, no compile)
        targets = build_targets(run, make_env, make_train)
    except TransferError as e:
        raise ConfigError(str(e)) from None
    return dataclasses.replace(run, targets=targets)


def _plain(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain containers, interpolations resolved (one line if one fails)."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        data = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(str(e).strip().splitlines()[0]) from None
    assert isinstance(data, dict)
    return data


def _choices(data: dict[str, Any]) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
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


def _check_metric(metric: str, env_id: str, spec: EnvSpec) -> None:
    if metric not in evaluation_metrics(spec):
        valid = ", ".join(evaluation_metrics(spec))
        raise ConfigError(f"protocol.metric {metric!r} is not a metric of {env_id}; valid: {valid}")


def _learner(
    algo: str,
    make_train: Callable[..., Train],
    env: MultiAgentEnv,
    algo_cfg: dict[str, Any],
    settings: RunSettings,
) -> tuple[int, Train]:
    """(env steps per update, the learner built for the run's total updates): a probe reads
    the update's size, which the schedule, hence the annealing, depends on."""
    try:
        probe = probe_learner(make_train, env, dict(algo_cfg))
        fields = ("init", "step", "params", "policy", "steps_per_update")
        if not all(hasattr(probe, k) for k in fields):
            raise ConfigError(
                f"algo {algo}: its make_train returned {type(probe).__name__}, not a "
                "marl.core.learner.Train (init, step, params, policy, steps_per_update)"
            )
        steps_per_update = probe.steps_per_update
        if not str(steps_per_update).isdigit() or int(steps_per_update) < 1:
            raise ConfigError(f"algo {algo}: steps_per_update={steps_per_update!r}, not >= 1")
        steps_per_update = int(steps_per_update)
        total_updates = settings.total_updates(steps_per_update)
        return steps_per_update, make_train(env, dict(algo_cfg), total_updates)
    except (TypeError, ValueError, KeyError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"algo {algo}: {e}") from None


def _learner_label(make_train: Callable[..., Any], algo: str, algo_cfg: dict[str, Any]) -> str:
    """The learner's name in records: its module's `label(cfg)` where it has one, else `algo`."""
    module = sys.modules.get(getattr(make_train, "__module__", ""), None)
    label = getattr(module, "label", None)
    return label(algo_cfg) if callable(label) else algo


def build(run: RunConfig) -> tuple[MultiAgentEnv, Train]:
    """The environment and the learner `resolve` built (`run.env`, `run.train`); nothing is
    built again."""
    return run.env, run.train
