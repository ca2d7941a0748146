"""particle/spread: N agents cover N landmarks without colliding (cooperative navigation)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Scatter
from ..observe import others, relative
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import World, distances, make_world, overlaps

OCCUPY_RADIUS = 0.1  # mpe2's capture radius for "landmark occupied"


@dataclass(frozen=True)
class SpreadObserver(ParticleObserver):
    """Self velocity, self position, landmark and other agents' relative positions, the other
    agents' words: [4 + 2L + 4(N-1)]."""

    num_agents: int
    num_landmarks: int

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        n, m = self.num_agents, self.num_landmarks
        return (4 + 2 * m + 4 * (n - 1),) * n

    def __call__(self, s: ParticleState) -> jax.Array:
        n, m = self.num_agents, self.num_landmarks
        a, mates = np.arange(n), others(n)
        return jnp.concatenate(
            [
                s.vel[:n],
                s.pos[:n],
                relative(s.pos, a, np.arange(n, n + m)),
                relative(s.pos, a, mates),
                s.comm[mates].reshape(n, -1),
            ],
            axis=-1,
        )


@dataclass(frozen=True)
class SpreadReward(ParticleReward):
    """Each agent: `local_ratio * -(its collisions) + (1 - local_ratio) * -(sum over landmarks
    of the nearest agent's distance)`; metrics `collisions`, `occupied`, `landmark_distance`."""

    world: World
    local_ratio: float = 0.5
    metric_names = ("collisions", "occupied", "landmark_distance")

    @property
    def shared(self) -> bool:
        return self.local_ratio == 0.0  # else each agent's own collisions count

    def _collisions(self, s: ParticleState) -> jax.Array:
        agents = np.arange(self.world.num_agents)
        hit = overlaps(self.world, s.pos, agents, agents)
        return hit & ~jnp.eye(len(agents), dtype=bool)

    def _landmark_distance(self, s: ParticleState) -> jax.Array:
        n, e = self.world.num_agents, self.world.num_entities
        return jnp.min(distances(s.pos[np.arange(n)], s.pos[np.arange(n, e)]), axis=0)

    def __call__(self, s: ParticleState) -> jax.Array:
        local = -jnp.sum(self._collisions(s), axis=1).astype(s.pos.dtype)
        shared = -jnp.sum(self._landmark_distance(s))
        return self.local_ratio * local + (1.0 - self.local_ratio) * shared

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        d = self._landmark_distance(s)
        return {
            "collisions": jnp.sum(self._collisions(s)) / 2,
            "occupied": jnp.mean(d < OCCUPY_RADIUS),
            "landmark_distance": jnp.sum(d),
        }


def Spread(
    num_agents: int = 3,
    num_landmarks: int | None = None,
    local_ratio: float = 0.5,
    continuous_actions: bool = False,
    episode_limit: int = DEFAULT_EPISODE_LIMIT,
    arena: float = 1.0,
    name: str = "particle/spread",
) -> ParticleEnv:
    """Cooperative navigation (mpe2 simple_spread_v3).

    Observation [4 + 2L + 4(N-1)]: self velocity, self position, landmark relative positions,
    other agents' relative positions, other agents' words (dim_c 2; agents are silent, so 0).
    Actions: Discrete(5) or Box([0, 1], (5,)).
    Reward (each agent): `local_ratio * -(collisions with other agents)
    + (1 - local_ratio) * -(sum over landmarks of the nearest agent's distance)`.
    Metrics: `collisions` (colliding pairs), `occupied` (fraction of landmarks with an agent
    within 0.1), `landmark_distance` (the global distance sum).

    `arena` is the half-width of the square where entities start (mpe2: 1). `particle/spread50`
    grows it with sqrt(N) so 50 agents start as sparse as mpe2's 3 do.

    Constructor:
        num_agents: agents.
        num_landmarks: landmarks (null: as many as agents).
        local_ratio: weight of the own collision penalty (1 - it: shared cover).
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
        arena: entities start in [-arena, arena]^2.
    """
    if num_agents < 1:
        raise ValueError(f"num_agents must be >= 1, got {num_agents}")
    if not 0.0 <= local_ratio <= 1.0:
        raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")
    n = num_agents
    m = num_agents if num_landmarks is None else num_landmarks
    if m < 1:
        raise ValueError(f"num_landmarks must be >= 1, got {m}")
    if arena <= 0:
        raise ValueError(f"arena must be > 0, got {arena}")
    world = make_world(
        agent_size=[0.15] * n,
        landmark_size=[0.05] * m,
        agent_collide=True,
        landmark_collide=False,
        silent=True,
        dim_c=2,
    )
    names = tuple(f"agent_{i}" for i in range(n))
    generator = Scatter(world, names, (AgentGroup("agent", tuple(range(n))),), float(arena))
    return ParticleEnv(
        generator,
        ParticleDynamics(world, bool(continuous_actions)),
        SpreadReward(world, float(local_ratio)),
        SpreadObserver(n, m),
        episode_limit=episode_limit,
        name=name,
    )


# `particle/spread50`: 50 agents and landmarks on an arena 4x as wide, the mean-field scale
# (as many entities per unit area as mpe2's 3 on [-1, 1]^2, within 4%)
make_spread50 = partial(Spread, num_agents=50, arena=4.0, name="particle/spread50")
