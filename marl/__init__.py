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
    "make": "marl.core.registry",
    "register": "marl.core.registry",
    "register_algorithm": "marl.core.registry",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'marl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
