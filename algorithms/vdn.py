"""VDN (Sunehag et al. 2018): the team value is the sum of the agents' values.

Owns only its mixer; everything else is the shared value-based learner (`qlearner.py`).
"""

from __future__ import annotations

from typing import Any

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train
from marl.learning.learner_config import shipped

from .mixers import VDNMixer
from .qlearner import ACTION_KINDS, QConfig, check_team
from .qlearner import make_train as _make_q

__all__ = ["ACTION_KINDS", "config", "make_train", "steps_per_update"]


def config(cfg: dict[str, Any] | None = None) -> QConfig:
    """VDN's settings: its shipped defaults (`marl/conf/algo/vdn.yaml`) overridden by `cfg`."""
    return QConfig.from_dict({**shipped("vdn"), **(cfg or {})})


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """VDN on `env` (one cooperative team); `cfg` overrides `QConfig` fields."""
    check_team(env, "vdn")
    return _make_q(env, config(cfg), total_updates, mixer=VDNMixer())


def steps_per_update(env: MultiAgentEnv, cfg: dict[str, Any] | None = None) -> int:
    """Env steps one update takes, as `make_train`'s Train says, without building it."""
    settings = config(cfg)
    return settings.num_envs * settings.rollout_length


make_train.action_kinds = ACTION_KINDS  # checked before anything is built (`marl train`)
make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)
