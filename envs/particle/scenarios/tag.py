"""particle/tag: slower adversaries chase faster good agents around obstacles (predator-prey)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Scatter
from ..observe import bound_penalty, others, relative, stack_groups
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import World, make_world, overlaps

CATCH_REWARD = 10.0  # mpe2's +10 / -10 per (good, adversary) collision


def gather_flat(x: jax.Array, idx: np.ndarray) -> jax.Array:
    """Rows `x[idx]` for a per-viewer index table idx [V, K], flattened to [V, K * x.shape[-1]]."""
    idx = np.asarray(idx)
    return x[idx].reshape(idx.shape[0], -1)


@dataclass(frozen=True)
class TagObserver(ParticleObserver):
    """Self velocity and position, obstacles' and other agents' relative positions, then the
    good agents' velocities (every one for an adversary, the others for a good agent)."""

    num_adversaries: int
    num_good: int
    num_obstacles: int

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        a, g, o = self.num_adversaries, self.num_good, self.num_obstacles
        base = 4 + 2 * o + 2 * (a + g - 1)
        return (base + 2 * g,) * a + (base + 2 * (g - 1),) * g

    def __call__(self, s: ParticleState) -> jax.Array:
        a, g, o = self.num_adversaries, self.num_good, self.num_obstacles
        n = a + g
        agents, adv, good = np.arange(n), np.arange(a), np.arange(a, n)
        common = jnp.concatenate(
            [
                s.vel[:n],
                s.pos[:n],
                relative(s.pos, agents, np.arange(n, n + o)),
                relative(s.pos, agents, others(n)),
            ],
            axis=-1,
        )
        # velocities each viewer sees: every good agent (adversaries), the other good agents
        adv_vel = np.broadcast_to(good, (a, g))
        adv_obs = jnp.concatenate([common[adv], gather_flat(s.vel, adv_vel)], axis=-1)
        good_obs = jnp.concatenate([common[good], gather_flat(s.vel, good[others(g)])], axis=-1)
        return stack_groups([(adv, adv_obs), (good, good_obs)], n, self.obs_dim)


@dataclass(frozen=True)
class TagReward(ParticleReward):
    """Adversaries: +10 per colliding (good, adversary) pair, shared; a good agent: -10 per
    adversary on it minus the out-of-arena penalty. Metric `catches`."""

    world: World
    num_adversaries: int
    metric_names = ("catches",)

    def _hits(self, s: ParticleState) -> jax.Array:
        """[G, A] good agent g and adversary a collide."""
        a, n = self.num_adversaries, self.world.num_agents
        return overlaps(self.world, s.pos, np.arange(a, n), np.arange(a))

    def __call__(self, s: ParticleState) -> jax.Array:
        a, n = self.num_adversaries, self.world.num_agents
        hit = self._hits(s).astype(s.pos.dtype)
        adv = jnp.full(a, CATCH_REWARD * jnp.sum(hit))
        good = -CATCH_REWARD * jnp.sum(hit, axis=1) - bound_penalty(s.pos[np.arange(a, n)])
        return jnp.concatenate([adv, good])

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        return {"catches": jnp.sum(self._hits(s))}


def Tag(
    num_good: int = 1,
    num_adversaries: int = 3,
    num_obstacles: int = 2,
    continuous_actions: bool = False,
    episode_limit: int = DEFAULT_EPISODE_LIMIT,
) -> ParticleEnv:
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
    if num_good < 1:
        raise ValueError(f"num_good must be >= 1, got {num_good}")
    if num_adversaries < 1:
        raise ValueError(f"num_adversaries must be >= 1, got {num_adversaries}")
    if num_obstacles < 0:
        raise ValueError(f"num_obstacles must be >= 0, got {num_obstacles}")
    a, g, o = num_adversaries, num_good, num_obstacles
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
    names = tuple(f"adversary_{i}" for i in range(a)) + tuple(f"agent_{i}" for i in range(g))
    groups = (AgentGroup("adversary", tuple(range(a))), AgentGroup("good", tuple(range(a, a + g))))
    return ParticleEnv(
        Scatter(world, names, groups, landmark_arena=0.9),
        ParticleDynamics(world, bool(continuous_actions)),
        TagReward(world, a),
        TagObserver(a, g, o),
        episode_limit=episode_limit,
        name="particle/tag",
    )
