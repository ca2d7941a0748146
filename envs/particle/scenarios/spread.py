"""particle/spread: N agents cover N landmarks without colliding (cooperative navigation)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..observe import others, relative
from ..world import distances, make_world, overlaps

OCCUPY_RADIUS = 0.1  # mpe2's capture radius for "landmark occupied"


class Spread(ParticleEnv):
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

    def __init__(
        self,
        num_agents: int = 3,
        num_landmarks: int | None = None,
        local_ratio: float = 0.5,
        continuous_actions: bool = False,
        episode_limit: int = DEFAULT_EPISODE_LIMIT,
        arena: float = 1.0,
        name: str = "particle/spread",
    ):
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
        self.local_ratio = float(local_ratio)
        self.arena = float(arena)
        world = make_world(
            agent_size=[0.15] * n,
            landmark_size=[0.05] * m,
            agent_collide=True,
            landmark_collide=False,
            silent=True,
            dim_c=2,
        )
        self._agents = np.arange(n)
        self._landmarks = np.arange(n, n + m)
        self._others = others(n)
        self._setup(
            name,
            world,
            [f"agent_{i}" for i in range(n)],
            {"agent": list(range(n))},
            [4 + 2 * m + 4 * (n - 1)] * n,
            continuous_actions,
            episode_limit,
            ("collisions", "occupied", "landmark_distance"),
            shared_reward=self.local_ratio == 0.0,  # else each agent's own collisions count
        )

    def sample(self, key):
        e = self.world.num_entities
        return jax.random.uniform(key, (e, 2), minval=-self.arena, maxval=self.arena), {}

    def observations(self, s: ParticleState):
        n = self.world.num_agents
        a = self._agents
        return jnp.concatenate(
            [
                s.vel[:n],
                s.pos[:n],
                relative(s.pos, a, self._landmarks),
                relative(s.pos, a, self._others),
                s.comm[self._others].reshape(n, -1),
            ],
            axis=-1,
        )

    def _collisions(self, s: ParticleState):
        hit = overlaps(self.world, s.pos, self._agents, self._agents)
        return hit & ~jnp.eye(len(self._agents), dtype=bool)

    def _landmark_distance(self, s: ParticleState):
        return jnp.min(distances(s.pos[self._agents], s.pos[self._landmarks]), axis=0)

    def rewards(self, s: ParticleState):
        local = -jnp.sum(self._collisions(s), axis=1).astype(s.pos.dtype)
        shared = -jnp.sum(self._landmark_distance(s))
        return self.local_ratio * local + (1.0 - self.local_ratio) * shared

    def metrics(self, s: ParticleState):
        d = self._landmark_distance(s)
        return {
            "collisions": jnp.sum(self._collisions(s)) / 2,
            "occupied": jnp.mean(d < OCCUPY_RADIUS),
            "landmark_distance": jnp.sum(d),
        }


# `particle/spread50`: 50 agents and landmarks on an arena 4x as wide, the mean-field scale
# (as many entities per unit area as mpe2's 3 on [-1, 1]^2, within 4%)
make_spread50 = partial(Spread, num_agents=50, arena=4.0, name="particle/spread50")
