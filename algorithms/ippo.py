"""IPPO (de Witt et al. 2020): independent PPO, each agent's critic sees its own observation.

Shares everything with MAPPO (`ppo.py`) but the critic's input.
"""

from __future__ import annotations

from typing import Any

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train
from marl.learning.learner_config import shipped

from .ppo import PPOConfig
from .ppo import make_train as _make_ppo


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """IPPO on `env`; `cfg` overrides `PPOConfig` fields (critic is "local")."""
    return _make_ppo(env, PPOConfig.from_dict({**shipped("ippo"), **(cfg or {})}), total_updates)
