"""particle/push: an adversary pushes a good agent away from its goal landmark."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..world import make_world

LANDMARK_BASE = 0.1  # landmark i colour: 0.1 everywhere, +0.8 on channel i + 1 (mpe2)
AGENT_BASE = 0.25  # good agent colour: 0.25 everywhere, +0.5 on channel goal + 1


class Push(ParticleEnv):
    """Keep-away (mpe2 simple_push_v3): adversary_0 and agent_0, two landmarks, one the goal.

    Observation, agent_0 [19]: velocity, goal relative position, own colour (3, encodes the
    goal), landmark relative positions (4), landmark colours (6), adversary relative position.
    Adversary [8]: velocity, landmark relative positions, agent_0 relative position.
    Actions: Discrete(5) or Box([0, 1], (5,)). Agents collide (size 0.05).
    Reward: agent_0 `-d(agent, goal)`; adversary `d(agent, goal) - d(adversary, goal)`.
    Metrics: `agent_distance`, `adversary_distance` (to the goal).

    Constructor:
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """

    def __init__(
        self, continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
    ):
        world = make_world(
            agent_size=[0.05, 0.05],
            landmark_size=[0.05, 0.05],
            agent_collide=True,
            landmark_collide=False,
            silent=True,
            dim_c=2,
        )
        colours = np.full((2, 3), LANDMARK_BASE)
        colours[[0, 1], [1, 2]] += 0.8
        self._landmark_colours = colours
        self._setup(
            "particle/push",
            world,
            ["adversary_0", "agent_0"],
            {"adversary": [0], "good": [1]},
            [8, 19],
            continuous_actions,
            episode_limit,
            ("agent_distance", "adversary_distance"),
        )

    def sample(self, key):
        k_goal, k_pos = jax.random.split(key)
        goal = jax.random.randint(k_goal, (), 0, 2)
        pos = jax.random.uniform(k_pos, (4, 2), minval=-1.0, maxval=1.0)
        return pos, {"goal": goal}

    def observations(self, s: ParticleState):
        goal = s.task["goal"]
        pos, vel = s.pos, s.vel
        landmarks = pos[2:4]
        colour = jnp.full(3, AGENT_BASE, pos.dtype).at[goal + 1].add(0.5)
        agent = jnp.concatenate(
            [
                vel[1],
                landmarks[goal] - pos[1],
                colour,
                (landmarks - pos[1]).reshape(-1),
                jnp.asarray(self._landmark_colours.reshape(-1), pos.dtype),
                pos[0] - pos[1],
            ]
        )
        adversary = jnp.concatenate([vel[0], (landmarks - pos[0]).reshape(-1), pos[1] - pos[0]])
        return jnp.stack([jnp.pad(adversary, (0, 11)), agent])

    def _distances(self, s: ParticleState):
        d = jnp.sqrt(jnp.sum((s.pos[:2] - s.pos[2 + s.task["goal"]]) ** 2, axis=-1))
        return d[1], d[0]

    def rewards(self, s: ParticleState):
        agent, adv = self._distances(s)
        return jnp.stack([agent - adv, -agent])

    def metrics(self, s: ParticleState):
        agent, adv = self._distances(s)
        return {"agent_distance": agent, "adversary_distance": adv}
