"""A composed config resolved, once, into a frozen `RunConfig` that carries everything derived
from it and everything built from it.

```python
cfg = compose(["env=particle/spread", "algo=mappo", "budget=2e6", "algo.lr=1e-3"])
run = resolve(cfg)   # validated: env, keywords, learner, keys, budget; nothing compiled
run.env, run.train   # the environment and the learner, ready for `runner.run`
run.task, run.parent # its task name and the folder its run directories go in
run.targets          # the transfer targets' environments and learners
```

Composition is `marl.run.train.compose` (the tree in `marl/conf/`). Resolving checks every
value (`settings`), builds the environment and the learner (`lookup`; cheap: nothing is
traced), so that every mistake the registry or the learner can name surfaces as a one-line
`ConfigError` before minutes of compilation, and keeps them: nothing is built a second time
(the learner is built once, for the run's length, where it says the size of its update:
`lookup.build_learner`). Derived values (updates per segment, total updates, the task, the run
folder) go into the frozen `RunConfig`, never back into the config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from marl.core import registry
from marl.learning.training import RunSettings
from marl.results.protocol import PROTOCOL_VERSION, split_env_id, task_name
from marl.run.errors import ConfigError
from marl.run.train import env_parts
from marl.run.train.config import MAX_UPDATES, RunConfig
from marl.run.train.lookup import (
    LearnerInfo,
    build_learner,
    check_compatible,
    learner_factory,
    make_env,
)
from marl.run.train.settings import (
    choices,
    flag,
    logger_name,
    plain,
    record_label,
    run_name,
    settings_values,
)
from marl.run.train.transfer import TransferError, build_targets, parse_targets

if TYPE_CHECKING:
    from marl.core.env import EnvSpec


def resolve(cfg: DictConfig, command: Sequence[str] = ()) -> RunConfig:
    """Validate a composed config, derive the run's numbers, task and folder, and build its
    environment, learner and transfer targets, once; nothing is compiled.

    Every mistake the registry or the learner can name (unknown env keyword, unknown
    hyperparameter, bad value, a transfer target the trained parameters cannot drive) surfaces
    here as a `ConfigError`, before minutes of compilation.
    """
    data = plain(cfg)
    settings = RunSettings(**settings_values(data))
    env_id, env_kwargs, algo, algo_cfg = choices(data)
    out = Path(str(data.get("out") or "."))
    name, label = run_name(data.get("name")), record_label(data.get("label"))
    resume = flag("resume", data.get("resume", False))
    checkpoint = flag("checkpoint", data.get("checkpoint", True))
    logger = logger_name(data.get("logger"))
    env_kwargs = env_parts.fold(env_id, {**data["env"], "kwargs": env_kwargs})
    env = make_env(env_id, env_kwargs)
    check_metric(settings.metric, env_id, env.spec)
    make_train = learner_factory(algo)
    check_compatible(algo, make_train, env_id, env.spec)
    steps_per_update, train = build_learner(algo, make_train, env, algo_cfg, settings)
    per_segment, num_segments = settings.schedule(steps_per_update)
    if per_segment * num_segments > MAX_UPDATES:
        raise ConfigError(
            f"budget={settings.budget:.3g} takes {per_segment * num_segments:.3g} updates of "
            f"{steps_per_update} steps, past the {MAX_UPDATES:,} a run counts; a smaller budget"
        )
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
        record_algo=label or LearnerInfo.of(make_train).record_name(algo, algo_cfg),
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


def evaluation_metrics(spec: EnvSpec) -> list[str]:
    """Names `marl.learning.evaluation.evaluate` returns for an env with this spec."""
    names = ["return", "length"]
    if len(spec.groups) > 1:
        names += [f"return/{g.name}" for g in spec.groups]
    return names + list(spec.metric_names)


def check_metric(metric: str, env_id: str, spec: EnvSpec) -> None:
    """Refuse a `protocol.metric` the env does not report, naming those it does."""
    if metric not in evaluation_metrics(spec):
        valid = ", ".join(evaluation_metrics(spec))
        raise ConfigError(f"protocol.metric {metric!r} is not a metric of {env_id}; valid: {valid}")
