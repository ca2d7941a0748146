"""marl tasks in BenchMARL: `task("combat/3m")` is a BenchMARL `TaskClass` whose environments
are `marl.interop.torchrl.MarlTorchEnv` batches (BenchMARL's vectorised path, as VMAS).

    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models import MlpConfig
    from marl.interop.benchmarl import task

    Experiment(task=task("combat/3m"), algorithm_config=MappoConfig.get_from_yaml(),
               model_config=MlpConfig.get_from_yaml(), seed=0,
               config=ExperimentConfig.get_from_yaml()).run()

Groups, observations, masks and the global state are the TorchRL env's (its docstring). A
dead unit's actions are its policy's as TorchRL's rollouts compute them and are ignored by the
env (its `mask` is False); BenchMARL's losses read `(group, "action_mask")` for discrete
actions. `pip install -e ".[benchmarl]"`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from marl.core.registry import make

from .torchrl import MarlTorchEnv

try:
    from benchmarl.environments.common import TaskClass
    from torchrl.data import Composite
    from torchrl.envs import EnvBase
except ImportError as err:  # pragma: no cover - the extra is missing
    raise ImportError(
        "marl.interop.benchmarl needs benchmarl: pip install -e '.[benchmarl]'"
    ) from err

__all__ = ["MarlTask", "task"]


class MarlTask(TaskClass):
    """A marl env id as a BenchMARL task; `config`: `{"kwargs": env keywords}` (optional). Its
    `name` is the id with every character a folder name cannot hold replaced by `_`
    (BenchMARL names the experiment's folder after it); `env_id` is the id itself."""

    def __init__(self, env_id: str, config: dict[str, Any] | None = None):
        super().__init__(re.sub(r"[^A-Za-z0-9_.-]+", "_", env_id), dict(config or {}))
        self.env_id = env_id
        self._spec = make(env_id, **self.kwargs).spec  # checks the id and keywords now

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.config.get("kwargs") or {})

    def get_env_fun(
        self, num_envs: int, continuous_actions: bool, seed: int | None, device: Any
    ) -> Callable[[], EnvBase]:
        if continuous_actions == self._spec.discrete:
            kind = "discrete" if self._spec.discrete else "continuous"
            raise ValueError(
                f"{self.env_id} has {kind} actions (set the algorithm's prefer_continuous_actions "
                "accordingly, or the env keyword that switches them)"
            )
        seed = 0 if seed is None else int(seed)
        kwargs = self.kwargs
        return lambda: MarlTorchEnv(self.env_id, num_envs, device=device, seed=seed, **kwargs)

    def supports_continuous_actions(self) -> bool:
        return not self._spec.discrete

    def supports_discrete_actions(self) -> bool:
        return self._spec.discrete

    def max_steps(self, env: EnvBase) -> int:
        return int(self._spec.episode_limit)

    def has_render(self, env: EnvBase) -> bool:
        return False

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return env.group_map

    def _observation_entries(self, env: EnvBase, keep: str) -> Composite | None:
        spec = env.full_observation_spec_unbatched.clone()
        for group in self.group_map(env):
            for key in list(spec[group].keys()):
                if key != keep:
                    del spec[(group, key)]
            if spec[group].is_empty():
                del spec[group]
        del spec["state"]
        return None if spec.is_empty() else spec

    def observation_spec(self, env: EnvBase) -> Composite:
        return self._observation_entries(env, "observation")

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        return self._observation_entries(env, "action_mask")

    def info_spec(self, env: EnvBase) -> Composite | None:
        return None

    def state_spec(self, env: EnvBase) -> Composite | None:
        return Composite({"state": env.full_observation_spec_unbatched["state"].clone()})

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec_unbatched

    @staticmethod
    def env_name() -> str:
        return "marl"


def task(env_id: str, **kwargs: Any) -> MarlTask:
    """The BenchMARL task of a registered env id, with env keywords."""
    return MarlTask(env_id, {"kwargs": kwargs})
