"""IQL (Tan 1993; as in pymarl): independent recurrent Q-learners, each on its own reward.

No mixer: everything else is the shared value-based learner (`qlearner.py`).
"""

from __future__ import annotations

from typing import Any

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train

from .qlearner import ACTION_KINDS, QConfig
from .qlearner import make_train as _make_q

__all__ = ["ACTION_KINDS", "DEFAULTS", "make_train"]

# pymarl's IQL uses one-step targets; with TD(lambda 0.6) IQL collapsed on particle/spread
# (marl/conf/algo/iql.yaml)
DEFAULTS: dict[str, Any] = {"td_lambda": 0.0}


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """IQL on `env`; `cfg` overrides `DEFAULTS`, then `QConfig` fields (a QConfig: as it is)."""
    cfg = cfg if isinstance(cfg, QConfig) else QConfig.from_dict({**DEFAULTS, **(cfg or {})})
    return _make_q(env, cfg, total_updates, mixer=None)
