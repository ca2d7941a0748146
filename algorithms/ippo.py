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


def config(cfg: dict[str, Any] | None = None) -> PPOConfig:
    """IPPO's settings: its shipped defaults (`marl/conf/algo/ippo.yaml`) overridden by `cfg`."""
    return PPOConfig.from_dict({**shipped("ippo"), **(cfg or {})})


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """IPPO on `env`; `cfg` overrides `PPOConfig` fields (critic is "local")."""
    return _make_ppo(env, config(cfg), total_updates)


def steps_per_update(env: MultiAgentEnv, cfg: dict[str, Any] | None = None) -> int:
    """Env steps one update takes, as `make_train`'s Train says, without building it."""
    settings = config(cfg)
    return settings.num_envs * settings.rollout_length


make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)
