"""marl: a JAX benchmark suite for classical multi-agent reinforcement learning."""

from marl.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.registry import (
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
