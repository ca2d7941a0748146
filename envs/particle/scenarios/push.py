"""particle/push: an adversary pushes a good agent away from its goal landmark."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Draw, Scatter
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import make_world

LANDMARK_BASE = 0.1  # landmark i colour: 0.1 everywhere, +0.8 on channel i + 1 (mpe2)
AGENT_BASE = 0.25  # good agent colour: 0.25 everywhere, +0.5 on channel goal + 1


def landmark_colours() -> np.ndarray:
    """[2, 3] the two landmarks' colours (mpe2's)."""
    colours = np.full((2, 3), LANDMARK_BASE)
    colours[[0, 1], [1, 2]] += 0.8
    return colours


@dataclass(frozen=True)
class PushObserver(ParticleObserver):
    """Agent_0: velocity, goal relative position, own colour (encodes the goal), landmark
    relative positions and colours, the adversary's relative position (19). Adversary:
    velocity, landmark relative positions, agent_0's relative position (8)."""

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        return (8, 19)

    def __call__(self, s: ParticleState) -> jax.Array:
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
                jnp.asarray(landmark_colours().reshape(-1), pos.dtype),
                pos[0] - pos[1],
            ]
        )
        adversary = jnp.concatenate([vel[0], (landmarks - pos[0]).reshape(-1), pos[1] - pos[0]])
        return jnp.stack([jnp.pad(adversary, (0, 11)), agent])


@dataclass(frozen=True)
class PushReward(ParticleReward):
    """Agent_0 `-d(agent, goal)`; adversary `d(agent, goal) - d(adversary, goal)`; metrics
    `agent_distance`, `adversary_distance`."""

    metric_names = ("agent_distance", "adversary_distance")

    def _distances(self, s: ParticleState) -> tuple[jax.Array, jax.Array]:
        d = jnp.sqrt(jnp.sum((s.pos[:2] - s.pos[2 + s.task["goal"]]) ** 2, axis=-1))
        return d[1], d[0]

    def __call__(self, s: ParticleState) -> jax.Array:
        agent, adv = self._distances(s)
        return jnp.stack([agent - adv, -agent])

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        agent, adv = self._distances(s)
        return {"agent_distance": agent, "adversary_distance": adv}


def Push(
    continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
) -> ParticleEnv:
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
    world = make_world(
        agent_size=[0.05, 0.05],
        landmark_size=[0.05, 0.05],
        agent_collide=True,
        landmark_collide=False,
        silent=True,
        dim_c=2,
    )
    groups = (AgentGroup("adversary", (0,)), AgentGroup("good", (1,)))
    return ParticleEnv(
        Scatter(world, ("adversary_0", "agent_0"), groups, draws=(Draw("goal", 2),)),
        ParticleDynamics(world, bool(continuous_actions)),
        PushReward(),
        PushObserver(),
        episode_limit=episode_limit,
        name="particle/push",
    )
