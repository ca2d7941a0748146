"""marl: a JAX benchmark suite for classical multi-agent reinforcement learning."""

# Before anything initialises a JAX backend (gymnax does on import): see marl/runtime.py.
from marl.runtime import configure_xla

configure_xla()

from marl.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep  # noqa: E402
from marl.registry import (  # noqa: E402
    RegistryError,
    algorithm,
    list_algorithms,
    list_envs,
    make,
    register,
    register_algorithm,
)

__version__ = "0.1.0"

__all__ = [
    "AgentGroup",
    "EnvSpec",
    "MultiAgentEnv",
    "RegistryError",
    "TimeStep",
    "algorithm",
    "list_algorithms",
    "register_algorithm",
    "list_envs",
    "make",
    "register",
    "__version__",
]
