"""JaxMARL's SMAX (the reference package, an optional extra) under marl's contract.

`jaxmarl/smax` wraps `jaxmarl`'s `HeuristicEnemySMAX` so that marl's learners, evaluation and
reports run on the reference environment itself, e.g.

    marl train env=jaxmarl/smax env.kwargs.map=3m algo=qmix

It answers "does a result on combat/<map> carry over to SMAX?" with the same learner code on
both. The battle (dynamics, heuristic enemy, observations, rewards) is JaxMARL's, at its
defaults apart from the episode limit; marl adds what SMAX leaves out: the time limit truncates
(bootstrapped) instead of terminating, episodes are exactly `episode_limit` steps long at most,
and a win is read from the units alive (all enemies dead, an ally alive), not from the reward.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Discrete

from .combat.env import outcome_metrics
from .combat.scenarios import SMAC_MAPS

METRICS = ("won", "lost", "allies_alive", "enemies_killed")  # combat's, less damage_dealt
# marl's wrapper of SMAX (the battle itself is the installed jaxmarl's: `versions` names it)
BEHAVIOUR_VERSION = "1"


class SMAXState(struct.PyTreeNode):
    """The reference env's state (`inner`) and marl's step count `t`."""

    inner: Any
    t: jax.Array


def _import_smax() -> Any:
    try:
        from marl.interop.jaxmarl import import_jaxmarl

        import_jaxmarl()  # without its import-time print
        from jaxmarl.environments import smax
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "jaxmarl/smax needs the reference package: pip install -e '.[peers]' (jaxmarl)"
        ) from err
    return smax


class JaxMARLSMAX(MultiAgentEnv[SMAXState]):
    """JaxMARL's `HeuristicEnemySMAX` on a SMAC map, agents on the leading axis.

    Constructor:
        map: a SMAC map name SMAX knows (3m, 2s3z, 5m_vs_6m, ...).
        episode_limit: steps before truncation; None: SMAC's limit of the map (60 for 3m),
            or SMAX's default 100 for maps outside SMAC's table.
        attack_mode: the heuristic enemy's target choice ("closest" or "random").
        name: spec name.

    Observations are SMAX's unit-list observations; the state is SMAX's world state (raw
    positions, so `state_bounded` is False); rewards are SMAX's (each agent gets the team's
    damage fraction plus 1 for a win). Metrics ([] float32): won, lost, allies_alive,
    enemies_killed (fractions). SMAX's default that a unit touching a wall dies is kept
    (combat/* clip positions into the map instead); on 3m it decided no battle measured: in
    4,000 greedy battles of the committed QMIX and MAPPO runs' final parameters no living unit
    reached a wall (results/fidelity.md; the probe: `git show bd0c9fb:scripts/smax_walls.py`).
    """

    def __init__(
        self,
        map: str = "3m",  # noqa: A002 - SMAC's word for a scenario
        episode_limit: int | None = None,
        attack_mode: str = "closest",
        name: str = "jaxmarl/smax",
    ):
        smax = _import_smax()
        if episode_limit is None:
            episode_limit = SMAC_MAPS[map].episode_limit if map in SMAC_MAPS else 100
        try:
            scenario = smax.map_name_to_scenario(map)
        except KeyError as err:
            from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO

            valid = ", ".join(sorted(MAP_NAME_TO_SCENARIO))
            raise ValueError(f"SMAX has no map {map!r}; valid: {valid}") from err
        # SMAX's own limit is set past ours: marl truncates, SMAX never ends an episode on time.
        self._env = smax.HeuristicEnemySMAX(
            scenario=scenario, attack_mode=attack_mode, max_steps=int(episode_limit) + 1
        )
        self._agents = tuple(self._env.agents)
        n = len(self._agents)
        self.num_allies, self.num_enemies = n, int(self._env.num_enemies)
        obs_dim = int(self._env.observation_spaces[self._agents[0]].shape[0])
        obs, _ = jax.eval_shape(self._env.reset, jax.random.key(0))  # shapes only, no run
        state_dim = int(obs["world_state"].shape[0])
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=obs_dim,
            state_dim=state_dim,
            action_space=Discrete(int(self._env.action_spaces[self._agents[0]].n)),
            groups=(AgentGroup("allies", tuple(range(n))),),
            agent_names=self._agents,
            episode_limit=int(episode_limit),
            metric_names=METRICS,
            lower_is_better=("lost",),
            headline_metric="won",
            shared_reward=True,  # SMAX pays every ally the side's one reward
        )

    @property
    def map_size(self) -> tuple[float, float]:
        """Width and height of SMAX's map (units on its edges die)."""
        return float(self._env.map_width), float(self._env.map_height)

    def _timestep(self, inner: Any, obs: dict, reward: jax.Array) -> TimeStep:
        n = self.num_allies
        alive = inner.state.unit_alive
        avail = self._env.get_avail_actions(inner)
        return TimeStep(
            obs=jnp.stack([obs[a] for a in self._agents]).astype(jnp.float32),
            state=obs["world_state"].astype(jnp.float32),
            avail_actions=jnp.stack([avail[a] for a in self._agents]).astype(bool),
            reward=reward.astype(jnp.float32),
            terminated=~(jnp.any(alive[:n]) & jnp.any(alive[n:])),
            truncated=jnp.array(False),
            alive=alive[:n],
            metrics=outcome_metrics(alive, n),
        )

    def reset(self, key: jax.Array) -> tuple[SMAXState, TimeStep]:
        obs, inner = self._env.reset(key)
        # SMAX's heuristic memory starts weakly typed; a strong dtype keeps one trace of step.
        inner = jax.tree.map(lambda x: jnp.asarray(x, dtype=x.dtype), inner)
        state = SMAXState(inner=inner, t=jnp.zeros((), jnp.int32))
        return state, self._timestep(inner, obs, jnp.zeros((self.num_allies,)))

    def step_env(
        self, key: jax.Array, state: SMAXState, actions: jax.Array
    ) -> tuple[SMAXState, TimeStep]:
        joint = {a: actions[i] for i, a in enumerate(self._agents)}
        obs, inner, rewards, _, _ = self._env.step_env(key, state.inner, joint)
        reward = jnp.stack([rewards[a] for a in self._agents])
        return state.replace(inner=inner), self._timestep(inner, obs, reward)
