"""IQL (Tan 1993; as in pymarl): independent recurrent Q-learners, each on its own reward.

No mixer: everything else is the shared value-based learner (`qlearner.py`).
"""

from __future__ import annotations

from typing import Any

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train
from marl.learning.learner_config import shipped

from .qlearner import ACTION_KINDS, QConfig
from .qlearner import make_train as _make_q

__all__ = ["ACTION_KINDS", "config", "make_train", "steps_per_update"]


def config(cfg: QConfig | dict[str, Any] | None = None) -> QConfig:
    """IQL's settings: its shipped defaults (`marl/conf/algo/iql.yaml`) overridden by `cfg`; a
    QConfig is taken as it is."""
    return cfg if isinstance(cfg, QConfig) else QConfig.from_dict({**shipped("iql"), **(cfg or {})})


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """IQL on `env`; `cfg` overrides its shipped defaults (`marl/conf/algo/iql.yaml`: one-step
    targets, as pymarl's IQL; TD(lambda 0.6) collapsed on particle/spread); a QConfig is taken
    as it is."""
    return _make_q(env, config(cfg), total_updates, mixer=None)


def steps_per_update(env: MultiAgentEnv, cfg: dict[str, Any] | None = None) -> int:
    """Env steps one update takes, as `make_train`'s Train says, without building it."""
    settings = config(cfg)
    return settings.num_envs * settings.rollout_length


make_train.action_kinds = ACTION_KINDS  # checked before anything is built (`marl train`)
make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)
