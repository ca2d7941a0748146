"""particle/adversary: good agents hide which landmark is the goal from an adversary."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Draw, Scatter
from ..observe import others, relative, stack_groups
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import make_world


def goal_position(s: ParticleState, num_good: int) -> jax.Array:
    """[2] the goal landmark's position (landmarks follow the 1 + G agents)."""
    return s.pos[num_good + 1 + s.task["goal"]]


@dataclass(frozen=True)
class AdversaryObserver(ParticleObserver):
    """Landmark and other agents' relative positions; good agents see the goal's first."""

    num_good: int

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        base = 2 * self.num_good + 2 * self.num_good  # L = G landmarks, N - 1 = G others
        return (base,) + (base + 2,) * self.num_good

    def __call__(self, s: ParticleState) -> jax.Array:
        n = self.num_good + 1
        good = np.arange(1, n)
        views = jnp.concatenate(
            [
                relative(s.pos, np.arange(n), np.arange(n, n + self.num_good)),
                relative(s.pos, np.arange(n), others(n)),
            ],
            axis=-1,
        )
        goal_rel = goal_position(s, self.num_good)[None] - s.pos[good]
        good_obs = jnp.concatenate([goal_rel, views[good]], axis=-1)
        return stack_groups([(np.array([0]), views[:1]), (good, good_obs)], n, self.obs_dim)


@dataclass(frozen=True)
class AdversaryReward(ParticleReward):
    """Adversary `-d(adversary, goal)`; good agents (shared) `-min_good d(good, goal) +
    d(adversary, goal)`; metrics `good_distance`, `adversary_distance`. A contest."""

    num_good: int
    metric_names = ("good_distance", "adversary_distance")
    contest = True

    def _distances(self, s: ParticleState) -> tuple[jax.Array, jax.Array]:
        goal = goal_position(s, self.num_good)
        d = jnp.sqrt(jnp.sum((s.pos[: self.num_good + 1] - goal) ** 2, axis=-1))
        return jnp.min(d[1:]), d[0]

    def __call__(self, s: ParticleState) -> jax.Array:
        good, adv = self._distances(s)
        return jnp.concatenate([-adv[None], jnp.full(self.num_good, adv - good)])

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        good, adv = self._distances(s)
        return {"good_distance": good, "adversary_distance": adv}

    def contest_score(self, episode: dict[str, jax.Array]) -> jax.Array:
        """The adversary's score: it wins when, over the episode, it was nearer the goal than
        the nearest good agent (the good team's return, a sum of `adversary distance - good
        distance`, is negative); a tie draws."""
        return 0.5 - 0.5 * jnp.sign(episode["return/good"])


def Adversary(
    num_good: int = 2,
    continuous_actions: bool = False,
    episode_limit: int = DEFAULT_EPISODE_LIMIT,
) -> ParticleEnv:
    """Physical deception (mpe2 simple_adversary_v3): 1 adversary, `num_good` good agents and
    as many landmarks; one landmark is the goal, known to the good agents only.

    Agents: adversary_0, agent_0 .. agent_{G-1} (groups "adversary", "good").
    Observation, good [2 + 2L + 2(N-1)]: goal relative position, landmark relative positions,
    other agents' relative positions. Adversary [2L + 2(N-1)]: the same without the goal.
    Actions: Discrete(5) or Box([0, 1], (5,)).
    Reward: adversary `-d(adversary, goal)`; good agents (shared)
    `-min_good d(good, goal) + d(adversary, goal)`.
    Metrics: `good_distance` (nearest good agent to the goal), `adversary_distance`.

    Constructor:
        num_good: good agents (and landmarks); one adversary.
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """
    if num_good < 1:
        raise ValueError(f"num_good must be >= 1, got {num_good}")
    n = num_good + 1
    world = make_world(
        agent_size=[0.15] * n,
        landmark_size=[0.08] * num_good,
        agent_collide=False,
        landmark_collide=False,
        silent=True,
        dim_c=2,
    )
    names = ("adversary_0",) + tuple(f"agent_{i}" for i in range(num_good))
    groups = (AgentGroup("adversary", (0,)), AgentGroup("good", tuple(range(1, n))))
    return ParticleEnv(
        Scatter(world, names, groups, draws=(Draw("goal", num_good),)),
        ParticleDynamics(world, bool(continuous_actions)),
        AdversaryReward(num_good),
        AdversaryObserver(num_good),
        episode_limit=episode_limit,
        name="particle/adversary",
    )
