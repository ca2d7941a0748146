"""IQL (Tan 1993; as in pymarl): independent recurrent Q-learners, each on its own reward.

No mixer: everything else is the shared value-based learner (`qlearner.py`).
"""

from __future__ import annotations

from typing import Any

from marl.env import MultiAgentEnv
from marl.learner import Train

from .qlearner import ACTION_KINDS, QConfig
from .qlearner import make_train as _make_q

__all__ = ["ACTION_KINDS", "make_train"]


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """IQL on `env`; `cfg` overrides `QConfig` fields."""
    return _make_q(env, QConfig.from_dict(cfg), total_updates, mixer=None)
