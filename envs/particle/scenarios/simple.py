"""particle/simple: one agent, one landmark; reward -squared distance (a debugging task)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..world import make_world


class Simple(ParticleEnv):
    """One agent learns to reach one landmark.

    Observation [4]: self velocity (2), landmark relative position (2).
    Actions: Discrete(5) moves, or Box([0, 1], (5,)) continuous.
    Reward: -|p_agent - p_landmark|^2. Metric `distance`: |p_agent - p_landmark|.

    Constructor:
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """

    def __init__(
        self, continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
    ):
        world = make_world(
            agent_size=[0.05], landmark_size=[0.05], agent_collide=False, landmark_collide=False
        )
        self._setup(
            "particle/simple",
            world,
            ["agent_0"],
            {"agent": [0]},
            [4],
            continuous_actions,
            episode_limit,
            ("distance",),
        )

    def sample(self, key):
        return jax.random.uniform(key, (2, 2), minval=-1.0, maxval=1.0), {}

    def observations(self, s: ParticleState):
        return jnp.concatenate([s.vel[:1], s.pos[1:2] - s.pos[:1]], axis=-1)

    def rewards(self, s: ParticleState):
        return -jnp.sum((s.pos[:1] - s.pos[1:2]) ** 2, axis=-1)

    def metrics(self, s: ParticleState):
        return {"distance": jnp.sqrt(jnp.sum((s.pos[0] - s.pos[1]) ** 2))}
