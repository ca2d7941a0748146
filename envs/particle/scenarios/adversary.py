"""particle/adversary: good agents hide which landmark is the goal from an adversary."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..observe import others, relative, stack_groups
from ..world import make_world


class Adversary(ParticleEnv):
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

    def __init__(
        self,
        num_good: int = 2,
        continuous_actions: bool = False,
        episode_limit: int = DEFAULT_EPISODE_LIMIT,
    ):
        if num_good < 1:
            raise ValueError(f"num_good must be >= 1, got {num_good}")
        n = num_good + 1
        m = num_good
        world = make_world(
            agent_size=[0.15] * n,
            landmark_size=[0.08] * m,
            agent_collide=False,
            landmark_collide=False,
            silent=True,
            dim_c=2,
        )
        self._good = np.arange(1, n)
        self._landmarks = np.arange(n, n + m)
        self._others = others(n)
        base = 2 * m + 2 * (n - 1)
        self._setup(
            "particle/adversary",
            world,
            ["adversary_0"] + [f"agent_{i}" for i in range(num_good)],
            {"adversary": [0], "good": list(self._good)},
            [base] + [base + 2] * num_good,
            continuous_actions,
            episode_limit,
            ("good_distance", "adversary_distance"),
        )

    def sample(self, key):
        k_goal, k_pos = jax.random.split(key)
        goal = jax.random.randint(k_goal, (), 0, len(self._landmarks))
        pos = jax.random.uniform(k_pos, (self.world.num_entities, 2), minval=-1.0, maxval=1.0)
        return pos, {"goal": goal}

    def _goal_pos(self, s: ParticleState):
        return s.pos[self._landmarks[0] + s.task["goal"]]

    def observations(self, s: ParticleState):
        n = self.world.num_agents
        views = jnp.concatenate(
            [
                relative(s.pos, np.arange(n), self._landmarks),
                relative(s.pos, np.arange(n), self._others),
            ],
            axis=-1,
        )
        goal_rel = self._goal_pos(s)[None] - s.pos[self._good]
        good = jnp.concatenate([goal_rel, views[self._good]], axis=-1)
        return stack_groups([(np.array([0]), views[:1]), (self._good, good)], n, self.spec.obs_dim)

    def _distances(self, s: ParticleState):
        d = jnp.sqrt(jnp.sum((s.pos[: self.world.num_agents] - self._goal_pos(s)) ** 2, axis=-1))
        return jnp.min(d[1:]), d[0]

    def rewards(self, s: ParticleState):
        good, adv = self._distances(s)
        return jnp.concatenate([-adv[None], jnp.full(len(self._good), adv - good)])

    @property
    def contest(self) -> bool:
        return True

    def contest_score(self, episode):
        """The adversary's score: it wins when, over the episode, it was nearer the goal than
        the nearest good agent (the good team's return, a sum of `adversary distance - good
        distance`, is negative); a tie draws."""
        return 0.5 - 0.5 * jnp.sign(episode["return/good"])

    def metrics(self, s: ParticleState):
        good, adv = self._distances(s)
        return {"good_distance": good, "adversary_distance": adv}
