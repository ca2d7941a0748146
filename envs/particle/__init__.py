"""Particle family: the Multi-Agent Particle Environments (MPE) on agent-axis arrays."""

from .env import ParticleEnv, ParticleState
from .world import World, make_world

# The family's behaviour version: bump it in the same commit as any change to what an env of
# this family returns for given keys and actions (records name it; the leaderboard refuses to
# rank cells of one task made on different versions; tests/test_env_versions.py pins a golden
# rollout per family to it).
BEHAVIOUR_VERSION = "1"

__all__ = ["ParticleEnv", "ParticleState", "World", "make_world"]
