"""One side of a contest as an environment of its own, the other side played by a policy.

`SideView(env, side, opponent, params)` shows a learner only its own side's agents of a
two-sided env (`env.contest`: group 0 against group 1): their observations, actions, rewards
and neighbourhood; the other side acts inside `step` by `opponent` (a `Policy` of the other
side's own view) with `params`, keeping its recurrent carry in the view's state. So any learner
trains against any other learner's current policy with no change to either
(`marl.algorithms.teams`), and `joined` puts the two sides' policies back together into a
policy of the whole env, which evaluation and cross-play take as any other.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.learner import Policy
from marl.core.wrappers import Wrapper

Array = jax.Array


def check_two_sides(env: MultiAgentEnv, who: str) -> None:
    """ValueError, in one line, unless `env` is a contest of exactly two agent groups."""
    if not env.contest or len(env.spec.groups) != 2:
        raise ValueError(
            f"{who} trains one learner per side of a contest (combat with "
            f"env.kwargs.opponent=self_play, particle/adversary or tag); {env.spec.name} has "
            f"{'no two sides' if not env.contest else f'{len(env.spec.groups)} groups'}"
        )


def side_agents(spec: EnvSpec, side: int) -> np.ndarray:
    """[n_side] int: the env's agent indices of group `side`, in order."""
    return np.asarray(sorted(spec.groups[side].agents), np.int32)


def side_spec(spec: EnvSpec, side: int) -> EnvSpec:
    """The spec of group `side` alone: its agents renumbered from 0, observations as wide as
    its largest, one (cooperative) group, `shared_reward` where the side is paid a team reward;
    the global state, action space, time limit and metrics are the env's."""
    idx = side_agents(spec, side)
    obs_sizes = tuple(spec.obs_sizes[i] for i in idx)
    return dataclasses.replace(
        spec,
        num_agents=len(idx),
        obs_dim=max(obs_sizes),
        groups=(AgentGroup(spec.groups[side].name, tuple(range(len(idx)))),),
        agent_names=tuple(spec.agent_names[i] for i in idx),
        obs_sizes=obs_sizes,
        action_sizes=tuple(spec.action_sizes[i] for i in idx),
        cooperative=True,
        # a side paid its team reward is, alone, an env whose agents share one reward
        shared_reward=bool(spec.team_reward[idx].all()),
        team_rewards=(),
    )


class SideState(struct.PyTreeNode):
    """`SideView`'s state: the env's, and what the opponent acts on next."""

    env_state: Any
    opponent_obs: Array  # [n_other, obs_dim_other]
    opponent_avail: Array  # [n_other, A]
    opponent_carry: Any
    opponent_start: Array  # [] bool: the opponent's next action is its episode's first

    @property
    def t(self) -> Array:
        """The env state's step count."""
        return self.env_state.t


class SideView(Wrapper):
    """Group `side` of a two-sided `env` as an env of its own (`side_spec`); the other group
    acts by `opponent.act(params, ...)`, not greedily (as the opponent's learner acts while it
    trains), with a key split off each step's key.

    `opponent` is a policy of the other side's view (`side_spec(spec, 1 - side)`); `params` may
    be traced (a learner built inside a jitted step), and may be None for a view that is only
    reset (building a learner, its `init`).
    """

    def __init__(self, env: MultiAgentEnv, side: int, opponent: Policy | None, params: Any):
        check_two_sides(env, "SideView")
        if side not in (0, 1):
            raise ValueError(f"side must be 0 or 1, got {side!r}")
        super().__init__(env)
        full = env.spec
        self.side, self.opponent, self.params = side, opponent, params
        self.spec = side_spec(full, side)
        self.mine, self.theirs = side_agents(full, side), side_agents(full, 1 - side)
        self.their_dim = side_spec(full, 1 - side).obs_dim
        order = np.concatenate([self.mine, self.theirs])
        self.unorder = np.argsort(order)  # [mine..., theirs...] -> env agent order

    @property
    def contest(self) -> bool:
        return False

    def inner_state(self, state: SideState) -> Any:
        return state.env_state

    def neighbourhood(self, state: SideState) -> Array:
        m = self.env.neighbourhood(state.env_state)
        return m[self.mine][:, self.mine]

    def _mine(self, ts: TimeStep) -> TimeStep:
        m = self.mine
        return TimeStep(
            obs=ts.obs[m, : self.spec.obs_dim],
            state=ts.state,
            avail_actions=ts.avail_actions[m],
            reward=ts.reward[m],
            terminated=ts.terminated,
            truncated=ts.truncated,
            alive=ts.alive[m],
            metrics=ts.metrics,
        )

    def _state(self, env_state: Any, ts: TimeStep, carry: Any, start: Array) -> SideState:
        t = self.theirs
        return SideState(
            env_state=env_state,
            opponent_obs=ts.obs[t, : self.their_dim],
            opponent_avail=ts.avail_actions[t],
            opponent_carry=carry,
            opponent_start=jnp.asarray(start, bool),
        )

    def reset(self, key: Array) -> tuple[SideState, TimeStep]:
        if self.opponent is None:
            raise ValueError("SideView: no opponent policy to reset with")
        env_state, ts = self.env.reset(key)
        start = jnp.asarray(True)
        return self._state(env_state, ts, self.opponent.initial_carry(), start), self._mine(ts)

    def step(self, key: Array, state: SideState, actions: Array) -> tuple[SideState, TimeStep]:
        if self.opponent is None or self.params is None:
            raise ValueError("SideView: no opponent parameters to step with")
        k_opp, k_env = jax.random.split(key)
        extra = {}
        if self.opponent.neighbourhood:
            m = self.env.neighbourhood(state.env_state)
            extra["neighbours"] = m[self.theirs][:, self.theirs]
        theirs, carry = self.opponent.act(
            self.params,
            state.opponent_obs,
            state.opponent_avail,
            state.opponent_carry,
            state.opponent_start,
            k_opp,
            False,
            **extra,
        )
        joint = jnp.concatenate([actions, theirs.astype(actions.dtype)])[self.unorder]
        env_state, ts = self.env.step(k_env, state.env_state, joint)
        return self._state(env_state, ts, carry, jnp.asarray(False)), self._mine(ts)

    def step_env(self, key: Array, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        raise NotImplementedError("SideView steps the env with its time limit; call `step`")

    def __repr__(self) -> str:
        return f"SideView({self.env!r}, side={self.side})"


def joined(spec: EnvSpec, first: Policy, second: Policy) -> Policy:
    """The policy of the whole env in which `first` (a policy of `side_spec(spec, 0)`) acts for
    group 0 and `second` for group 1, each on its own agents' observations, available actions
    and neighbourhood; parameters and carry `(first's, second's)`."""
    sides = (side_agents(spec, 0), side_agents(spec, 1))
    dims = (side_spec(spec, 0).obs_dim, side_spec(spec, 1).obs_dim)
    unorder = np.argsort(np.concatenate(sides))
    if first.privileged or second.privileged:
        raise ValueError("a privileged policy reads the whole state: it cannot take a side")

    def initial_carry() -> Any:
        return first.initial_carry(), second.initial_carry()

    def act(
        params: Any,
        obs: Array,
        avail: Array,
        carry: Any,
        start: Array,
        key: Array,
        greedy: Any,
        neighbours: Array | None = None,
    ) -> tuple[Array, Any]:
        keys = jax.random.split(key)
        out = []
        for g, policy in enumerate((first, second)):
            idx = sides[g]
            extra = {}
            if policy.neighbourhood:  # then so is the joined policy: it is given them
                assert neighbours is not None
                extra["neighbours"] = neighbours[idx][:, idx]
            out.append(
                policy.act(
                    params[g],
                    obs[idx, : dims[g]],
                    avail[idx],
                    carry[g],
                    start,
                    keys[g],
                    greedy,
                    **extra,
                )
            )
        (a, ca), (b, cb) = out
        return jnp.concatenate([a, b.astype(a.dtype)])[unorder], (ca, cb)

    return Policy(initial_carry, act, neighbourhood=first.neighbourhood or second.neighbourhood)
