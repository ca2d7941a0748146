"""A resolved run: `RunConfig`, frozen, which `marl.run.train.resolve.resolve` makes once from
the composed config, with everything derived from it (schedule, task, folder, record name) and
everything built from it (the environment, the learner, the transfer targets); and the transfer
targets it names (`TransferTarget`) and builds (`BuiltTarget`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from marl.learning.training import RunSettings
from marl.results.protocol import PROTOCOL_VERSION
from marl.run.train.compose import learner_settings

if TYPE_CHECKING:
    from marl.core.env import MultiAgentEnv
    from marl.core.learner import Train

MAX_UPDATES = 2**31 - 1  # updates are counted in int32 (schedules, optimiser steps)


@dataclass(frozen=True)
class TransferTarget:
    """An environment a trained policy is evaluated on (`protocol.transfer`): `name`, registry
    id and keywords (`marl.run.train.transfer`)."""

    name: str
    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "id": self.env_id, "kwargs": dict(self.env_kwargs)}


class BuiltTarget(NamedTuple):
    """A transfer target with its environment and the run's learner rebuilt on it."""

    target: TransferTarget
    env: MultiAgentEnv
    train: Train


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
    parent: Path  # `<out>/<family>/<task>/<algo>`: where its run directories go
    # the algorithm as records, reports and the leaderboard name it: `label`, or the name its
    # learner's `make_train.label(cfg)` gives (`teams`: its sides' learners, e.g. `mfq+il`),
    # or `algo`
    record_algo: str
    env: MultiAgentEnv = field(compare=False, repr=False)
    train: Train = field(compare=False, repr=False)  # built for `total_updates` (annealing)
    command: tuple[str, ...] = field(default=())  # the overrides it was composed from
    protocol_version: str = PROTOCOL_VERSION  # `protocol.version` of the config
    transfer: tuple[TransferTarget, ...] = ()  # other envs the trained policy is played on
    targets: tuple[BuiltTarget, ...] = field(default=(), compare=False, repr=False)  # built
    resume: bool = False  # continue an unfinished run of this config from its last checkpoint
    logger: str | None = None  # external logger (`loggers`): None, "wandb", "tensorboard"
    # save every segment (`marl.learning.checkpoint`) so resume=true can continue
    checkpoint: bool = True
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
