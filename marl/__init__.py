"""marl: a JAX benchmark suite for classical multi-agent reinforcement learning.

The public names load on first use (PEP 562), so `import marl` starts no JAX backend: a
multi-host run (`distributed=true`) must join `jax.distributed` before anything does.
"""

from __future__ import annotations

import importlib
from typing import Any

# Before anything initialises a JAX backend (gymnax does on import): see marl/runtime.py.
from marl.runtime import configure_xla

configure_xla()

__version__ = "0.1.0"

_EXPORTS = {
    "AgentGroup": "marl.env",
    "EnvSpec": "marl.env",
    "MultiAgentEnv": "marl.env",
    "TimeStep": "marl.env",
    "RegistryError": "marl.registry",
    "algorithm": "marl.registry",
    "list_algorithms": "marl.registry",
    "list_envs": "marl.registry",
    "make": "marl.registry",
    "register": "marl.registry",
    "register_algorithm": "marl.registry",
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
