"""marl: a JAX benchmark suite for classical multi-agent reinforcement learning."""

from marl.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.registry import RegistryError, list_envs, make, register

__version__ = "0.1.0"

__all__ = [
    "AgentGroup",
    "EnvSpec",
    "MultiAgentEnv",
    "RegistryError",
    "TimeStep",
    "list_envs",
    "make",
    "register",
    "__version__",
]
