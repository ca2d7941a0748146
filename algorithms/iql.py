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

__all__ = ["ACTION_KINDS", "make_train"]


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """IQL on `env`; `cfg` overrides its shipped defaults (`marl/conf/algo/iql.yaml`: one-step
    targets, as pymarl's IQL; TD(lambda 0.6) collapsed on particle/spread); a QConfig is taken
    as it is."""
    cfg = cfg if isinstance(cfg, QConfig) else QConfig.from_dict({**shipped("iql"), **(cfg or {})})
    return _make_q(env, cfg, total_updates, mixer=None)
