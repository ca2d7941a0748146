"""particle/reference: two agents each guide the other to a landmark by talking."""

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

LANDMARK_COLOURS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]])
DIM_C = 10


@dataclass(frozen=True)
class ReferenceObserver(ParticleObserver):
    """Velocity, landmark relative positions (6), the colour of the landmark the other agent
    must reach (3), the other agent's word (10)."""

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        return (21, 21)

    def __call__(self, s: ParticleState) -> jax.Array:
        pos = s.pos
        landmark_rel = (pos[None, 2:5] - pos[:2, None]).reshape(2, -1)
        colour = jnp.asarray(LANDMARK_COLOURS, pos.dtype)[s.task["goal"]]
        return jnp.concatenate([s.vel[:2], landmark_rel, colour, s.comm[::-1]], axis=-1)


@dataclass(frozen=True)
class ReferenceReward(ParticleReward):
    """`local_ratio * r_i + (1 - local_ratio) * mean(r)`, `r_i = -d(other agent, landmark i
    names)`; metric `distance`."""

    local_ratio: float = 0.5
    metric_names = ("distance",)

    @property
    def shared(self) -> bool:
        return self.local_ratio == 0.0

    def _distances(self, s: ParticleState) -> jax.Array:
        listener = s.pos[1::-1]  # agent i's goal_a is the other agent
        target = s.pos[2 + s.task["goal"]]
        return jnp.sqrt(jnp.sum((listener - target) ** 2, axis=-1))

    def __call__(self, s: ParticleState) -> jax.Array:
        r = -self._distances(s)
        return self.local_ratio * r + (1.0 - self.local_ratio) * jnp.mean(r)

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        return {"distance": jnp.mean(self._distances(s))}


def Reference(
    local_ratio: float = 0.5,
    continuous_actions: bool = False,
    episode_limit: int = DEFAULT_EPISODE_LIMIT,
) -> ParticleEnv:
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
    if not 0.0 <= local_ratio <= 1.0:
        raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")
    world = make_world(
        agent_size=[0.05, 0.05],
        landmark_size=[0.05] * 3,
        agent_collide=False,
        landmark_collide=False,
        silent=False,
        dim_c=DIM_C,
    )
    groups = (AgentGroup("agent", (0, 1)),)
    return ParticleEnv(
        Scatter(world, ("agent_0", "agent_1"), groups, draws=(Draw("goal", 3, (2,)),)),
        ParticleDynamics(world, bool(continuous_actions)),
        ReferenceReward(float(local_ratio)),
        ReferenceObserver(),
        episode_limit=episode_limit,
        name="particle/reference",
    )
