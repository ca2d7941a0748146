"""particle/reference: two agents each guide the other to a landmark by talking."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..world import make_world

LANDMARK_COLOURS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]])
DIM_C = 10


class Reference(ParticleEnv):
    """Cooperative communication both ways (mpe2 simple_reference_v3): agent i knows the
    landmark agent (1 - i) must reach, and says so.

    Observation [21]: velocity, landmark relative positions (6), colour of the landmark the
    other agent must reach (3), the other agent's word (10).
    Actions: Discrete(50) = move + 5 * word, or Box([0, 1], (15,)) = 5 move dims + 10 word dims.
    Reward: `local_ratio * r_i + (1 - local_ratio) * mean(r)` with `r_i = -d(other agent,
    landmark i names)`. Metric `distance`: mean over agents of that distance.

    Constructor:
        local_ratio: weight of the own reward (1 - it: the mean reward).
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """

    def __init__(
        self,
        local_ratio: float = 0.5,
        continuous_actions: bool = False,
        episode_limit: int = DEFAULT_EPISODE_LIMIT,
    ):
        if not 0.0 <= local_ratio <= 1.0:
            raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")
        self.local_ratio = float(local_ratio)
        world = make_world(
            agent_size=[0.05, 0.05],
            landmark_size=[0.05] * 3,
            agent_collide=False,
            landmark_collide=False,
            silent=False,
            dim_c=DIM_C,
        )
        self._setup(
            "particle/reference",
            world,
            ["agent_0", "agent_1"],
            {"agent": [0, 1]},
            [21, 21],
            continuous_actions,
            episode_limit,
            ("distance",),
            shared_reward=self.local_ratio == 0.0,
        )

    def sample(self, key):
        k_goal, k_pos = jax.random.split(key)
        goal = jax.random.randint(k_goal, (2,), 0, 3)
        pos = jax.random.uniform(k_pos, (5, 2), minval=-1.0, maxval=1.0)
        return pos, {"goal": goal}

    def observations(self, s: ParticleState):
        pos = s.pos
        landmark_rel = (pos[None, 2:5] - pos[:2, None]).reshape(2, -1)
        colour = jnp.asarray(LANDMARK_COLOURS, pos.dtype)[s.task["goal"]]
        return jnp.concatenate([s.vel[:2], landmark_rel, colour, s.comm[::-1]], axis=-1)

    def _distances(self, s: ParticleState):
        listener = s.pos[1::-1]  # agent i's goal_a is the other agent
        target = s.pos[2 + s.task["goal"]]
        return jnp.sqrt(jnp.sum((listener - target) ** 2, axis=-1))

    def rewards(self, s: ParticleState):
        r = -self._distances(s)
        return self.local_ratio * r + (1.0 - self.local_ratio) * jnp.mean(r)

    def metrics(self, s: ParticleState):
        return {"distance": jnp.mean(self._distances(s))}
