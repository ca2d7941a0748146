"""particle/tag: slower adversaries chase faster good agents around obstacles (predator-prey)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..observe import bound_penalty, others, relative, stack_groups
from ..world import make_world, overlaps

CATCH_REWARD = 10.0  # mpe2's +10 / -10 per (good, adversary) collision


def gather_flat(x: jax.Array, idx: np.ndarray) -> jax.Array:
    """Rows `x[idx]` for a per-viewer index table idx [V, K], flattened to [V, K * x.shape[-1]]."""
    idx = np.asarray(idx)
    return x[idx].reshape(idx.shape[0], -1)


class Tag(ParticleEnv):
    """Predator-prey (mpe2 simple_tag_v3) with A adversaries, G good agents, O obstacles.

    Entities: adversaries `adversary_0..`, then good agents `agent_0..`, then the obstacles.
    Adversaries: size 0.075, accel 3, max speed 1; good agents: size 0.05, accel 4, max speed
    1.3; obstacles: size 0.2, collide. Agents start uniform in [-1, 1]^2, obstacles in
    [-0.9, 0.9]^2.

    Observation of agent i (N = A + G agents):
      self velocity (2), self position (2), obstacle relative positions (2O), relative positions
      of the other N-1 agents in agent order (2(N-1)), velocities of the good agents other than
      i in agent order (2G for an adversary, 2(G-1) for a good agent). Adversaries see
      4 + 2O + 2(N-1) + 2G values, good agents 2 fewer; good agents' observations are
      zero-padded to the adversaries' width.
    Actions: Discrete(5) or Box([0, 1], (5,)) for every agent.
    Reward: every adversary gets +10 per colliding (good, adversary) pair (a shared team
    reward); a good agent gets -10 per adversary colliding with it minus mpe2's out-of-arena
    `bound` penalty summed over both axes.
    Metrics: `catches` (number of colliding (good, adversary) pairs).
    Groups: `adversary`, `good`.

    Constructor:
        num_good: good agents (prey).
        num_adversaries: adversaries (predators).
        num_obstacles: obstacles.
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """

    def __init__(
        self,
        num_good: int = 1,
        num_adversaries: int = 3,
        num_obstacles: int = 2,
        continuous_actions: bool = False,
        episode_limit: int = DEFAULT_EPISODE_LIMIT,
    ):
        if num_good < 1:
            raise ValueError(f"num_good must be >= 1, got {num_good}")
        if num_adversaries < 1:
            raise ValueError(f"num_adversaries must be >= 1, got {num_adversaries}")
        if num_obstacles < 0:
            raise ValueError(f"num_obstacles must be >= 0, got {num_obstacles}")
        a, g, o = num_adversaries, num_good, num_obstacles
        n = a + g
        world = make_world(
            agent_size=[0.075] * a + [0.05] * g,
            landmark_size=[0.2] * o,
            agent_collide=True,
            landmark_collide=True,
            agent_max_speed=[1.0] * a + [1.3] * g,
            accel=[3.0] * a + [4.0] * g,
            silent=True,
            dim_c=2,
        )
        self._agents = np.arange(n)
        self._adv = np.arange(a)
        self._good = np.arange(a, n)
        self._obstacles = np.arange(n, n + o)
        self._others = others(n)
        # velocities each viewer sees: every good agent (adversaries), the other good agents
        self._adv_vel = np.broadcast_to(self._good, (a, g))
        self._good_vel = self._good[others(g)]
        base = 4 + 2 * o + 2 * (n - 1)
        obs_sizes = [base + 2 * g] * a + [base + 2 * (g - 1)] * g
        names = [f"adversary_{i}" for i in range(a)] + [f"agent_{i}" for i in range(g)]
        self._setup(
            "particle/tag",
            world,
            names,
            {"adversary": self._adv.tolist(), "good": self._good.tolist()},
            obs_sizes,
            continuous_actions,
            episode_limit,
            ("catches",),
        )

    def sample(self, key):
        k_agents, k_obstacles = jax.random.split(key)
        n, m = self.world.num_agents, self.world.num_landmarks
        agents = jax.random.uniform(k_agents, (n, 2), minval=-1.0, maxval=1.0)
        obstacles = jax.random.uniform(k_obstacles, (m, 2), minval=-0.9, maxval=0.9)
        return jnp.concatenate([agents, obstacles]), {}

    def observations(self, s: ParticleState):
        n = self.world.num_agents
        common = jnp.concatenate(
            [
                s.vel[:n],
                s.pos[:n],
                relative(s.pos, self._agents, self._obstacles),
                relative(s.pos, self._agents, self._others),
            ],
            axis=-1,
        )
        adv = jnp.concatenate([common[self._adv], gather_flat(s.vel, self._adv_vel)], axis=-1)
        good = jnp.concatenate([common[self._good], gather_flat(s.vel, self._good_vel)], axis=-1)
        return stack_groups([(self._adv, adv), (self._good, good)], n, self.spec.obs_dim)

    def _hits(self, s: ParticleState):
        """[G, A] good agent g and adversary a collide."""
        return overlaps(self.world, s.pos, self._good, self._adv)

    def rewards(self, s: ParticleState):
        hit = self._hits(s).astype(s.pos.dtype)
        adv = jnp.full(len(self._adv), CATCH_REWARD * jnp.sum(hit))
        good = -CATCH_REWARD * jnp.sum(hit, axis=1) - bound_penalty(s.pos[self._good])
        return jnp.concatenate([adv, good])

    def metrics(self, s: ParticleState):
        return {"catches": jnp.sum(self._hits(s))}
