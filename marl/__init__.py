"""marl: a JAX benchmark suite for classical multi-agent reinforcement learning.

The public names load on first use (PEP 562), so `import marl` starts no JAX backend: a
multi-host run (`distributed=true`) must join `jax.distributed` before anything does.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "AgentGroup": "marl.core.env",
    "EnvSpec": "marl.core.env",
    "MultiAgentEnv": "marl.core.env",
    "TimeStep": "marl.core.env",
    "check_env": "marl.core.testing",
    "RegistryError": "marl.core.registry",
    "algorithm": "marl.core.registry",
    "list_algorithms": "marl.core.registry",
    "list_envs": "marl.core.registry",
    "register": "marl.core.registry",
    "register_algorithm": "marl.core.registry",
}

__all__ = [*_EXPORTS, "__version__", "make"]


def make(env_id: str, *, api: str = "marl", **kwargs: Any) -> Any:
    """Build the environment `env_id` with constructor keywords (`marl.core.registry.make`).

    `api="marl"` returns the bare marl env (agents on an axis); `api="pettingzoo"` the same env
    as a PettingZoo `ParallelEnv` (`marl.interop.pettingzoo.MarlParallelEnv`; its `render_mode`
    and `action_mask` keywords pass through).
    """
    if api == "marl":
        from marl.core.registry import make as make_env

        return make_env(env_id, **kwargs)
    if api == "pettingzoo":
        from marl.interop.pettingzoo import parallel_env

        return parallel_env(env_id, **kwargs)
    raise ValueError(f"api must be 'marl' or 'pettingzoo', got {api!r}")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'marl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
