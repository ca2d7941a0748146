"""The environment contract: `MultiAgentEnv`, `EnvSpec`, `TimeStep`.

Agents live on a leading array axis, never in dicts: every per-agent array has shape
`[N, ...]`, so the traced program is the same size for 3 agents or 1,000. Heterogeneous agents
are padded to a common observation size and a common action space, and masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.spaces import Box, Discrete, Space

Array = jax.Array
PRNGKey = jax.Array

STATE_BOUND = 2.0  # |state feature| limit an env with `EnvSpec.state_bounded` keeps


class TimeStep(struct.PyTreeNode):
    """What an environment returns after `reset` and `step`.

    Fields (N agents):
        obs:           [N, obs_dim] float32, zero-padded past each agent's `obs_sizes[i]`.
        state:         [state_dim] float32, global state for centralised critics and mixers.
        avail_actions: [N, A] bool: available discrete actions, or the real action dims of each
                       agent for continuous actions (padding False).
        reward:        [N] float32, reward of the transition that led here (0 after reset).
        terminated:    [] bool, the task ended (win, loss, goal): do not bootstrap.
        truncated:     [] bool, the time limit ended it: bootstrap from `final_obs`.
        alive:         [N] bool, agents still acting.
        metrics:       dict of [] float32 task metrics named in `EnvSpec.metric_names`.
        final_obs:     [N, obs_dim] the true last observation of an episode, filled by the
                       auto-reset wrapper (equal to `obs` when the episode did not end); None
                       on an unwrapped env.
        final_state:   [state_dim] likewise for `state`.
        final_avail:   [N, A] likewise for `avail_actions` (off-policy targets take the max
                       over the actions available in the true next state).
        final_alive:   [N] likewise for `alive` (an agent alive at a step and not in
                       `final_alive` died in it: its own values do not bootstrap).
    """

    obs: Array
    state: Array
    avail_actions: Array
    reward: Array
    terminated: Array
    truncated: Array
    alive: Array
    metrics: dict[str, Array] = struct.field(default_factory=dict)
    final_obs: Array | None = None
    final_state: Array | None = None
    final_avail: Array | None = None
    final_alive: Array | None = None

    @property
    def done(self) -> Array:
        """[] bool: the episode ended, by termination or truncation."""
        return jnp.logical_or(self.terminated, self.truncated)

    def died(self, alive: Array) -> Array:
        """[N] bool: agents alive before this step (`alive`) and dead after it (needs the
        auto-reset wrapper's `final_alive`)."""
        if self.final_alive is None:
            raise ValueError("died needs final_alive: step the env under the auto-reset wrapper")
        return alive & ~self.final_alive

    def agent_terminated(self, alive: Array, team_reward: Array | np.ndarray | bool) -> Array:
        """[N] bool: this step ends agent i's own return. Under per-agent rewards: the episode
        terminated, or i died in it (mfrl's per-agent `terminal = not alive`: nothing it earns
        comes after). Where i is paid its side's team reward (`team_reward`, [N] or one bool:
        `EnvSpec.team_reward`) only the episode's termination does: a dead unit still earns
        its side's later reward (MAPPO's and pymarl's masks on SMAC)."""
        term = jnp.broadcast_to(self.terminated[..., None], alive.shape)
        return term | (self.died(alive) & ~jnp.asarray(team_reward, bool))


@dataclass(frozen=True)
class AgentGroup:
    """A team of agents that share parameters by default (e.g. `adversary`, `good`)."""

    name: str
    agents: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.agents:
            raise ValueError(f"agent group {self.name!r} is empty")


@dataclass(frozen=True)
class EnvSpec:
    """Static description of an environment: everything a learner needs before acting.

    Attributes:
        name: registry id, e.g. "particle/spread".
        num_agents: N, the size of the leading agent axis.
        obs_dim: width of `TimeStep.obs` (the largest agent observation).
        state_dim: width of `TimeStep.state`.
        action_space: per-agent action space; `Discrete(A)` (actions int32 [N]) or
            `Box(low, high, (d,))` (actions float32 [N, d]). Padded to the largest agent.
        groups: agent groups (teams); every agent is in exactly one.
        agent_names: one name per agent.
        episode_limit: steps after which an episode is truncated.
        metric_names: keys of `TimeStep.metrics`.
        obs_sizes: [N] the true observation size of each agent (<= obs_dim).
        action_sizes: [N] the true action count (discrete) or dims (continuous) of each agent.
        cooperative: every agent pursues one team objective (value mixers such as VDN and QMIX
            apply). Default (None): True with one group, False with several; set it True for
            cooperative tasks with heterogeneous groups (e.g. speaker and listener).
        lower_is_better: evaluation metrics (of `metric_names`, or "length") whose lower values
            are better (flowtime, collisions, battles lost): the protocol's best parameters are
            those that score lowest on such a `protocol.metric`. The rest count as higher-better.
        state_bounded: every feature of `TimeStep.state` is scaled by construction into about
            [-1, 1] (fractions, one-hots, normalised positions; `check_env` holds it to
            |x| <= STATE_BOUND), so learners may feed the state to networks as it is. QMIX's
            mixer layer-normalises the state only when this is False.
        shared_reward: every agent receives the same reward at every step (SMAC's team reward,
            speaker_listener). False (the default, the safe assumption): rewards may differ per
            agent, so a critic shared by all agents on the global state must be told which
            agent it values (MAPPO's central critic then always takes agent ids).
        team_rewards: names of the groups each paid one reward for the whole side at every
            step (SMAC's team reward of each side in self-play), where the sides' rewards
            differ; `shared_reward` counts every group as one. The death rule follows it
            (`team_reward`): a unit of such a side that dies still earns its side's later
            reward, so its return ends with the episode, not at its death.
        time_limit_terminal: the time limit is part of the task: the state carries
            t / episode_limit and reaching the limit terminates the episode (Pardo et al.
            2018, time-aware values). False (the default): the state carries no time, the limit
            truncates and learners bootstrap from the final state (pymarl's and SMAC's rule).
        headline_metric: the evaluation metric in the task's natural unit, shown beside the
            normalised return on the leaderboard ("won" on combat, "success_rate" on
            pathfinding); "return" (the default) where the return is the natural unit.
    """

    name: str
    num_agents: int
    obs_dim: int
    state_dim: int
    action_space: Space
    groups: tuple[AgentGroup, ...]
    agent_names: tuple[str, ...]
    episode_limit: int
    metric_names: tuple[str, ...] = ()
    obs_sizes: tuple[int, ...] = field(default=())
    action_sizes: tuple[int, ...] = field(default=())
    cooperative: bool | None = None
    state_bounded: bool = False
    lower_is_better: tuple[str, ...] = ()
    shared_reward: bool = False
    team_rewards: tuple[str, ...] = ()
    time_limit_terminal: bool = False
    headline_metric: str = "return"

    def __post_init__(self) -> None:
        n = self.num_agents
        if self.cooperative is None:
            object.__setattr__(self, "cooperative", len(self.groups) == 1)
        if not self.obs_sizes:
            object.__setattr__(self, "obs_sizes", (self.obs_dim,) * n)
        if not self.action_sizes:
            object.__setattr__(self, "action_sizes", (self.action_dim,) * n)
        if len(self.agent_names) != n:
            raise ValueError(f"{len(self.agent_names)} agent names for {n} agents")
        if len(self.obs_sizes) != n or len(self.action_sizes) != n:
            raise ValueError("obs_sizes and action_sizes need one entry per agent")
        members = sorted(i for g in self.groups for i in g.agents)
        if members != list(range(n)):
            raise ValueError(f"groups must cover agents 0..{n - 1} exactly once, got {members}")
        if max(self.obs_sizes) != self.obs_dim:
            raise ValueError("obs_dim must equal the largest agent observation size")
        if self.episode_limit < 1:
            raise ValueError("episode_limit must be >= 1")
        unknown = sorted(set(self.lower_is_better) - {"length", *self.metric_names})
        if unknown:
            raise ValueError(f"lower_is_better names metrics the env does not have: {unknown}")
        if self.headline_metric not in ("return", *self.metric_names):
            raise ValueError(f"headline_metric {self.headline_metric!r} is not a metric of the env")
        names = [g.name for g in self.groups]
        unknown = sorted(set(self.team_rewards) - set(names))
        if unknown:
            raise ValueError(f"team_rewards names groups the env does not have: {unknown}")

    @property
    def discrete(self) -> bool:
        """True when actions are categorical (`Discrete`)."""
        return isinstance(self.action_space, Discrete)

    @property
    def action_dim(self) -> int:
        """Number of categories (discrete) or action dimensions (continuous)."""
        if isinstance(self.action_space, Discrete):
            return int(self.action_space.n)
        return int(np.prod(self.action_space.shape))

    @property
    def action_shape(self) -> tuple[int, ...]:
        """Shape of the joint action array: (N,) discrete or (N, d) continuous."""
        return (self.num_agents,) if self.discrete else (self.num_agents, self.action_dim)

    @property
    def observation_space(self) -> Box:
        """Per-agent observation space (unbounded, float32)."""
        return Box(-jnp.inf, jnp.inf, (self.obs_dim,), jnp.float32)

    @property
    def agent_group(self) -> np.ndarray:
        """[N] int: the index in `groups` of each agent's group."""
        out = np.zeros(self.num_agents, dtype=np.int32)
        for g, group in enumerate(self.groups):
            out[list(group.agents)] = g
        return out

    @property
    def team_reward(self) -> np.ndarray:
        """[N] bool: agent i is paid its side's team reward (`shared_reward`, or its group is
        in `team_rewards`), so its return runs on past its death to the episode's end."""
        if self.shared_reward:
            return np.ones(self.num_agents, bool)
        teams = {g for g, group in enumerate(self.groups) if group.name in self.team_rewards}
        return np.isin(self.agent_group, sorted(teams))

    def group(self, name: str) -> AgentGroup:
        """The group called `name`."""
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"no group {name!r}; groups: {[g.name for g in self.groups]}")


class EnvState(Protocol):
    """What `MultiAgentEnv.step` needs of a state: its step count `t` and `replace` (a flax
    `struct` dataclass with a `t` field has both)."""

    @property
    def t(self) -> Array: ...

    def replace(self, **changes: Any) -> Any: ...


StateT = TypeVar("StateT", bound=EnvState)


class MultiAgentEnv(Generic[StateT]):
    """Base class of every marl environment.

    Subclasses set `self.spec` and implement `reset` and `step_env`; `step` adds the time limit
    once for all: it counts steps in `state.t` (every env state carries an int32 `t`) and sets
    `truncated` when the count reaches `spec.episode_limit` and the episode did not terminate
    (or, with `spec.time_limit_terminal`, sets `terminated`: the limit is then part of the task).
    Episodes are then exactly `episode_limit` steps long unless they terminate earlier.

    Both methods are pure and jittable; `self` is static (hashable by identity).
    Wrappers (`marl.core.wrappers`) keep this interface; a wrapper's state exposes the inner `t`,
    and a wrapper may extend the spec (e.g. `EpisodeStatistics` adds `episode/*` metrics).

    Two optional hooks, import paths so that an env imports nothing above it:
    `viewer_module` ("package.module" with `draw_frame(ax, frame, title)`, for `marl render`)
    and `reference_policy` ("module:attr", a function `f(env) -> Policy`: the scripted policy
    whose score anchors normalised results, `marl.baselines.anchor_scores`).
    """

    spec: EnvSpec
    viewer_module: str | None = None  # per class; `from_parts` may set one per env
    reference_policy: ClassVar[str | None] = None

    def reset(self, key: PRNGKey) -> tuple[StateT, TimeStep]:
        """Start an episode. Returns the state and the first TimeStep (reward 0)."""
        raise NotImplementedError

    def step_env(self, key: PRNGKey, state: StateT, actions: Array) -> tuple[StateT, TimeStep]:
        """One transition without the time limit; `truncated` is left False."""
        raise NotImplementedError

    def step(self, key: PRNGKey, state: StateT, actions: Array) -> tuple[StateT, TimeStep]:
        """One transition. `actions`: int32 [N] (discrete) or float32 [N, d] (continuous)."""
        state, ts = self.step_env(key, state, actions)
        t = state.t + 1
        state = state.replace(t=t)
        at_limit = t >= self.spec.episode_limit
        if self.spec.time_limit_terminal:
            return state, ts.replace(terminated=jnp.logical_or(ts.terminated, at_limit))
        truncated = jnp.logical_and(at_limit, jnp.logical_not(ts.terminated))
        return state, ts.replace(truncated=truncated)

    def step_batch(self, keys: PRNGKey, states: StateT, actions: Array) -> tuple[StateT, TimeStep]:
        """`step` over a batch of environments on a leading axis: `jax.vmap(self.step)`.

        Wrappers may override it to share work across the batch (`AutoReset` computes resets
        only on steps where some episode ended); the result must equal `vmap(step)`'s.
        """
        return jax.vmap(self.step)(keys, states, actions)

    def neighbourhood(self, state: StateT) -> Array:
        """`[N, N]` float32 weights: row i weighs the agents whose actions agent i's mean-field
        learner averages (zero on the diagonal, and in the columns of agents that cannot act,
        e.g. dead units; learners normalise each row).

        Default: every other agent of the same group, weight 1. Spatial families override it
        (within a radius or the k nearest).
        """
        group = jnp.asarray(self.spec.agent_group)
        same = group[:, None] == group[None, :]
        return (same & ~jnp.eye(self.spec.num_agents, dtype=bool)).astype(jnp.float32)

    @property
    def contest(self) -> bool:
        """A two-sided task (two agent groups, each a side) whose episodes `contest_score`
        scores, so that policies can meet in cross-play (`marl.learning.contest`). Default
        False."""
        return False

    @property
    def mirrored_sides(self) -> bool:
        """A contest whose two sides are mirror images (the same units, each side seeing and
        acting in its own mirrored frame), so that a policy of either side can play the other:
        what self-play against a copy of oneself needs (`self_play: mirror`). Default False."""
        return False

    def contest_score(self, episode: dict[str, Array]) -> Array:
        """Contests only: group 0's score in each finished episode (1 a win, 0.5 a draw, 0 a
        loss), from the evaluator's per-episode values (returns per group, last-step metrics).
        """
        raise NotImplementedError(f"{self.spec.name} is not a contest")

    def render_frame(self, state: StateT) -> dict[str, Any]:  # pragma: no cover - optional
        """Optional: what a viewer draws for `state` (see the family's viewer)."""
        raise NotImplementedError(f"{type(self).__name__} has no renderer")

    @property
    def name(self) -> str:
        return self.spec.name

    def __repr__(self) -> str:
        s = self.spec
        return f"{type(self).__name__}({s.name!r}, agents={s.num_agents}, actions={s.action_space})"
