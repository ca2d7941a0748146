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

__all__ = ["ACTION_KINDS", "make_train"]


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """VDN on `env` (one cooperative team); `cfg` overrides `QConfig` fields."""
    check_team(env, "vdn")
    return _make_q(
        env, QConfig.from_dict({**shipped("vdn"), **(cfg or {})}), total_updates, mixer=VDNMixer()
    )
