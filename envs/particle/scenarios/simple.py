"""particle/simple: one agent, one landmark; reward -squared distance (a debugging task)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Scatter
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import make_world


@dataclass(frozen=True)
class SimpleObserver(ParticleObserver):
    """Self velocity (2), the landmark's relative position (2)."""

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        return (4,)

    def __call__(self, s: ParticleState) -> jax.Array:
        return jnp.concatenate([s.vel[:1], s.pos[1:2] - s.pos[:1]], axis=-1)


@dataclass(frozen=True)
class SimpleReward(ParticleReward):
    """-|p_agent - p_landmark|^2; metric `distance`."""

    metric_names = ("distance",)

    def __call__(self, s: ParticleState) -> jax.Array:
        return -jnp.sum((s.pos[:1] - s.pos[1:2]) ** 2, axis=-1)

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        return {"distance": jnp.sqrt(jnp.sum((s.pos[0] - s.pos[1]) ** 2))}


def Simple(
    continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
) -> ParticleEnv:
    """One agent learns to reach one landmark.

    Observation [4]: self velocity (2), landmark relative position (2).
    Actions: Discrete(5) moves, or Box([0, 1], (5,)) continuous.
    Reward: -|p_agent - p_landmark|^2. Metric `distance`: |p_agent - p_landmark|.

    Constructor:
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """
    world = make_world(
        agent_size=[0.05], landmark_size=[0.05], agent_collide=False, landmark_collide=False
    )
    return ParticleEnv(
        Scatter(world, ("agent_0",), (AgentGroup("agent", (0,)),)),
        ParticleDynamics(world, bool(continuous_actions)),
        SimpleReward(),
        SimpleObserver(),
        episode_limit=episode_limit,
        name="particle/simple",
    )
