"""particle/world_comm: predator-prey with food, hiding forests and a speaking leader."""

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
from ..world import World, distances, make_world, overlaps

CATCH_REWARD = 5.0  # mpe2's +5 / -5 per (good, adversary) collision
FOOD_REWARD = 2.0  # per food a good agent overlaps
FOOD_SHAPING = 0.05  # good agents: -0.05 * distance to the nearest food
CHASE_SHAPING = 0.1  # adversaries: -0.1 * distance to the nearest good agent
BOUND_SCALE = 2.0  # good agents pay twice mpe2's `bound` penalty


@dataclass(frozen=True)
class Roles:
    """The entities of a world_comm world by role: A adversaries (agent 0 the leader), G good
    agents, then O obstacles, Fd food and F forests."""

    num_adversaries: int
    num_good: int
    num_obstacles: int
    num_food: int
    num_forests: int

    @property
    def adv(self) -> np.ndarray:
        return np.arange(self.num_adversaries)

    @property
    def good(self) -> np.ndarray:
        return np.arange(self.num_adversaries, self.num_adversaries + self.num_good)

    @property
    def food(self) -> np.ndarray:
        start = self.num_adversaries + self.num_good + self.num_obstacles
        return np.arange(start, start + self.num_food)

    @property
    def forests(self) -> np.ndarray:
        start = self.num_adversaries + self.num_good + self.num_obstacles + self.num_food
        return np.arange(start, start + self.num_forests)


@dataclass(frozen=True)
class WorldCommObserver(ParticleObserver):
    """mpe2's views: hidden agents in forests, in-forest flags, the leader's word."""

    world: World
    roles: Roles

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        r, n = self.roles, self.world.num_agents
        base = 4 + 2 * self.world.num_landmarks + 2 * (n - 1) + r.num_forests
        g = r.num_good
        return (base + 2 * g + self.world.dim_c,) * r.num_adversaries + (base + 2 * (g - 1),) * g

    def visible(self, s: ParticleState) -> tuple[jax.Array, jax.Array]:
        """([N, F] agent in forest, [N, N] viewer i sees agent j) by mpe2's forest rule."""
        agents = np.arange(self.world.num_agents)
        inside = overlaps(self.world, s.pos, agents, self.roles.forests)
        shared = jnp.any(inside[:, None, :] & inside[None, :, :], axis=-1)
        free = ~jnp.any(inside, axis=1)
        leader = jnp.asarray(agents == 0)[:, None]
        return inside, shared | (free[:, None] & free[None, :]) | leader

    @staticmethod
    def _masked(x: jax.Array, seen: jax.Array, viewers: np.ndarray, idx: np.ndarray) -> jax.Array:
        """[V, 2K]: x[idx] (per viewer [V, K]) where the viewer sees it, else zeros."""
        mask = seen[viewers[:, None], idx]
        return jnp.where(mask[..., None], x[idx], 0.0).reshape(len(viewers), -1)

    def __call__(self, s: ParticleState) -> jax.Array:
        n, e = self.world.num_agents, self.world.num_entities
        agents, mates, adv, good = np.arange(n), others(n), self.roles.adv, self.roles.good
        inside, seen = self.visible(s)
        rel = relative(s.pos, agents, mates).reshape(n, n - 1, 2)
        rel = jnp.where(seen[agents[:, None], mates][..., None], rel, 0.0)
        common = jnp.concatenate(
            [s.vel[:n], s.pos[:n], relative(s.pos, agents, np.arange(n, e)), rel.reshape(n, -1)],
            axis=-1,
        )
        flags = jnp.where(inside, 1.0, -1.0).astype(s.pos.dtype)
        word = jnp.broadcast_to(s.comm[0], (len(adv), s.comm.shape[1])).astype(s.pos.dtype)
        # good agents whose velocities each viewer gets: all of them (adversaries), the others
        adv_vel = np.broadcast_to(good, (len(adv), len(good)))
        adv_obs = jnp.concatenate(
            [common[adv], self._masked(s.vel, seen, adv, adv_vel), flags[adv], word], axis=-1
        )
        good_vel = good[others(len(good))]
        good_obs = jnp.concatenate(
            [common[good], flags[good], self._masked(s.vel, seen, good, good_vel)], axis=-1
        )
        return stack_groups([(adv, adv_obs), (good, good_obs)], n, self.obs_dim)


@dataclass(frozen=True)
class WorldCommReward(ParticleReward):
    """Catches, chasing, food and the arena's bound (mpe2's); metrics `catches`, `food_eaten`."""

    world: World
    roles: Roles
    metric_names = ("catches", "food_eaten")

    def _hits(self, s: ParticleState) -> jax.Array:
        """[G, A] good agent g and adversary a collide."""
        return overlaps(self.world, s.pos, self.roles.good, self.roles.adv)

    def _eats(self, s: ParticleState) -> jax.Array:
        """[G, Fd] good agent g overlaps food k."""
        return overlaps(self.world, s.pos, self.roles.good, self.roles.food)

    def __call__(self, s: ParticleState) -> jax.Array:
        dtype = s.pos.dtype
        hit = self._hits(s).astype(dtype)
        good_pos = s.pos[self.roles.good]
        chase = jnp.min(distances(s.pos[self.roles.adv], good_pos), axis=1)
        adv = CATCH_REWARD * jnp.sum(hit) - CHASE_SHAPING * chase
        food = jnp.min(distances(good_pos, s.pos[self.roles.food]), axis=1)
        good = (
            -CATCH_REWARD * jnp.sum(hit, axis=1)
            - BOUND_SCALE * bound_penalty(good_pos)
            + FOOD_REWARD * jnp.sum(self._eats(s).astype(dtype), axis=1)
            - FOOD_SHAPING * food
        )
        return jnp.concatenate([adv, good])

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        return {"catches": jnp.sum(self._hits(s)), "food_eaten": jnp.sum(self._eats(s))}


def WorldComm(
    num_good: int = 2,
    num_adversaries: int = 4,
    num_obstacles: int = 1,
    num_food: int = 2,
    num_forests: int = 2,
    continuous_actions: bool = False,
    episode_limit: int = DEFAULT_EPISODE_LIMIT,
) -> ParticleEnv:
    """mpe2 simple_world_comm_v3: A adversaries (agent 0 the leader), G good agents, O obstacles,
    Fd food and F forests.

    Entities: `leadadversary_0`, `adversary_0..adversary_{A-2}`, `agent_0..agent_{G-1}`, then the
    landmarks: obstacles (size 0.2, collide), food (size 0.03), forests (size 0.3); food and
    forests do not collide. Adversaries: size 0.075, accel 3, max speed 1; good agents: size
    0.045, accel 4, max speed 1.3. Agents start uniform in [-1, 1]^2, landmarks in [-0.9, 0.9]^2.

    Forests: agent i is "in" forest f when they overlap. Agent i sees another agent j when
    both are in a common forest, or neither is in any forest, or i is the leader; an unseen
    agent's relative position (and velocity, for a good agent) reads (0, 0).

    Observation of agent i (N = A + G agents, L = O + Fd + F landmarks):
      adversaries and the leader: self velocity (2), self position (2), relative positions of
      all L landmarks (2L), relative positions of the other N-1 agents in agent order
      (2(N-1)), velocities of the G good agents (2G), in-forest flags (+1 in / -1 out, F),
      the leader's last word (4): 4 + 2L + 2(N-1) + 2G + F + 4 values.
      good agents: self velocity, self position, landmarks (2L), other agents (2(N-1)),
      in-forest flags (F), velocities of the other good agents (2(G-1)):
      4 + 2L + 2(N-1) + F + 2(G-1) values, zero-padded to the adversaries' width.
    Actions: good agents and adversaries Discrete(5) / Box([0, 1], (5,)); the leader moves and
    speaks: Discrete(20) with `move + 5 * word`, or Box([0, 1], (9,)) (5 move dims, then the
    4-dim word it broadcasts). Followers' action spaces are padded to the leader's and masked.
    Reward: every adversary (leader included) gets +5 per colliding (good, adversary) pair
    - 0.1 * its distance to the nearest good agent; a good agent gets -5 per adversary
    colliding with it - 2 * `bound` penalty (both axes) + 2 per food it overlaps
    - 0.05 * its distance to the nearest food.
    Metrics: `catches` (colliding (good, adversary) pairs), `food_eaten` (overlapping
    (good agent, food) pairs).
    Groups: `leader` (agent 0: its own action space and role), `adversary` (the other
    adversaries; omitted when A = 1), `good`.

    Constructor:
        num_good: good agents (prey).
        num_adversaries: adversaries (predators), the first one the leader.
        num_obstacles: obstacles.
        num_food: food landmarks.
        num_forests: forests (agents inside are hidden from those outside).
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """
    for name, value, low in [
        ("num_good", num_good, 1),
        ("num_adversaries", num_adversaries, 1),
        ("num_obstacles", num_obstacles, 0),
        ("num_food", num_food, 1),
        ("num_forests", num_forests, 0),
    ]:
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    roles = Roles(num_adversaries, num_good, num_obstacles, num_food, num_forests)
    a, g, o, nf, f = num_adversaries, num_good, num_obstacles, num_food, num_forests
    world = make_world(
        agent_size=[0.075] * a + [0.045] * g,
        landmark_size=[0.2] * o + [0.03] * nf + [0.3] * f,
        agent_collide=True,
        landmark_collide=[True] * o + [False] * (nf + f),
        agent_max_speed=[1.0] * a + [1.3] * g,
        accel=[3.0] * a + [4.0] * g,
        silent=[False] + [True] * (a + g - 1),
        dim_c=4,
    )
    names = (
        ("leadadversary_0",)
        + tuple(f"adversary_{i}" for i in range(a - 1))
        + tuple(f"agent_{i}" for i in range(g))
    )
    groups = {"leader": (0,), "adversary": tuple(range(1, a)), "good": tuple(range(a, a + g))}
    teams = tuple(AgentGroup(k, v) for k, v in groups.items() if v)
    return ParticleEnv(
        Scatter(world, names, teams, landmark_arena=0.9),
        ParticleDynamics(world, bool(continuous_actions)),
        WorldCommReward(world, roles),
        WorldCommObserver(world, roles),
        episode_limit=episode_limit,
        name="particle/world_comm",
    )
