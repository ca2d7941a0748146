"""Particle family: the Multi-Agent Particle Environments (MPE) on agent-axis arrays."""

from .env import ParticleEnv, ParticleState
from .world import World, make_world

__all__ = ["ParticleEnv", "ParticleState", "World", "make_world"]
