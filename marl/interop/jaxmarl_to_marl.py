"""`JaxMARLToMarl`: a JaxMARL environment (dicts keyed by agent) seen as a marl
`MultiAgentEnv` (agents on axis 0), with its state `JaxMARLState`. Imports no jaxmarl (its
spaces are read by duck typing); re-exported by `marl.interop.jaxmarl`."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, PRNGKey, TimeStep
from marl.core.spaces import Box, Discrete

Array = jax.Array


class JaxMARLState(struct.PyTreeNode):
    """State of `JaxMARLToMarl`: the JaxMARL state, the step count `t` and `alive` [N] bool."""

    env_state: Any
    t: Array
    alive: Array


def _space_kind(space: Any) -> str:
    # duck-typed so that jaxmarl's and gymnax's spaces both qualify (no jaxmarl import)
    return type(space).__name__


def _agent_groups(env: Any, agents: tuple[str, ...]) -> tuple[AgentGroup, ...]:
    """Groups from `env.agent_classes` (a property or, in JaxMARL's MPE, a method)."""
    whole = (AgentGroup("agent", tuple(range(len(agents)))),)
    try:
        classes = env.agent_classes
        if callable(classes):
            classes = classes()
    except (NotImplementedError, AttributeError, TypeError):
        return whole
    if not isinstance(classes, dict) or not classes:
        return whole
    index = {a: i for i, a in enumerate(agents)}
    groups = []
    for name, members in classes.items():
        members = [members] if isinstance(members, str) else list(members)
        if any(m not in index for m in members):
            return whole
        if members:
            groups.append(AgentGroup(str(name), tuple(sorted(index[m] for m in members))))
    covered = sorted(i for g in groups for i in g.agents)
    return tuple(groups) if covered == list(range(len(agents))) else whole


class JaxMARLToMarl(MultiAgentEnv[JaxMARLState]):
    """A JaxMARL environment (dicts keyed by agent) as a marl `MultiAgentEnv` (agents on axis 0).

    Spec: name `jaxmarl/<ClassName>`; agents `env.agents` in order; obs_dim the largest
    (flattened) observation, others zero-padded; `state` is `obs["world_state"]` flattened when
    the env provides it (SMAX), else the concatenation of the unpadded observations. Actions:
    all `Discrete` -> `Discrete(max n)`, `avail_actions` masks each agent's padding and is
    combined with `env.get_avail_actions(state)` when the env implements it; all `Box` ->
    `Box` of width max d (the agent's first d_i entries are passed on). Groups come from
    `env.agent_classes` when it partitions the agents, else one group "agent". `reward` [N] and
    `alive` [N] follow agent order; `alive[i] = not dones[agent_i]` (SMAX marks dead units done),
    except on a time-limit end, where agents keep their previous `alive`. `metrics` is empty.

    Time limit. `step_env` calls the JaxMARL env's `step_env` (never its `step`, which resets
    internally and would lose the final observation). `episode_limit` defaults to the env's
    `max_steps` and may not exceed it; marl's `step` truncates at `t == episode_limit`. A JaxMARL
    `dones["__all__"]` at `t >= max_steps` is the env's own clock and counts as truncation;
    earlier it is `terminated`. JaxMARL's MPE fires its clock one step late (`step >= max_steps`
    is tested before the count is incremented, so its own episodes last max_steps + 1 = 26
    steps); wrapped, episodes last `max_steps` (25) steps, like mpe2 and marl's particle envs. A
    genuine termination on exactly step `max_steps` cannot be told from the clock and is
    reported as truncation. Envs without `max_steps` need `episode_limit`; all their dones are
    terminations.
    """

    def __init__(self, env: Any, episode_limit: int | None = None):
        self.env = env
        agents = tuple(env.agents)
        self.agents = agents
        n = len(agents)
        obs0, state0 = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
        obs_sizes = [int(np.prod(obs0[a].shape)) for a in agents]
        self._world_state = isinstance(obs0, dict) and "world_state" in obs0
        state_dim = int(np.prod(obs0["world_state"].shape)) if self._world_state else sum(obs_sizes)

        spaces = [env.action_space(a) for a in agents]
        kinds = {_space_kind(s) for s in spaces}
        if kinds == {"Discrete"}:
            action_sizes = [int(s.n) for s in spaces]
            space = Discrete(max(action_sizes))
        elif kinds == {"Box"}:
            action_sizes = [int(np.prod(s.shape)) for s in spaces]
            space = self._box(spaces, action_sizes)
        else:
            raise ValueError(
                f"unsupported JaxMARL action spaces {sorted(kinds)} (need all Discrete or all Box)"
            )
        self._avail_mask = np.arange(max(action_sizes))[None, :] < np.array(action_sizes)[:, None]
        self._has_avail = kinds == {"Discrete"}
        if self._has_avail:
            try:
                jax.eval_shape(env.get_avail_actions, state0)
            except (NotImplementedError, AttributeError):
                self._has_avail = False

        own = getattr(env, "max_steps", None)
        self._own_limit = None if own is None else int(own)
        limit = self._own_limit if episode_limit is None else int(episode_limit)
        if limit is None:
            raise ValueError(f"{type(env).__name__} has no max_steps: pass episode_limit")
        if self._own_limit is not None and limit > self._own_limit:
            raise ValueError(
                f"episode_limit {limit} exceeds the env's own max_steps {self._own_limit}; "
                "raise max_steps on the JaxMARL env instead"
            )
        self.spec = EnvSpec(
            name=f"jaxmarl/{type(env).__name__}",
            num_agents=n,
            obs_dim=max(obs_sizes),
            state_dim=state_dim,
            action_space=space,
            groups=_agent_groups(env, agents),
            agent_names=agents,
            episode_limit=limit,
            obs_sizes=tuple(obs_sizes),
            action_sizes=tuple(action_sizes),
        )

    @staticmethod
    def _box(spaces: list[Any], sizes: list[int]) -> Box:
        """One Box covering every agent's bounds (elementwise min low / max high), width max d."""
        d = max(sizes)
        lows, highs = np.full((len(sizes), d), np.inf), np.full((len(sizes), d), -np.inf)
        for i, s in enumerate(spaces):
            lows[i, : sizes[i]] = np.broadcast_to(np.asarray(s.low, np.float64), s.shape).ravel()
            highs[i, : sizes[i]] = np.broadcast_to(np.asarray(s.high, np.float64), s.shape).ravel()
        low, high = lows.min(0), highs.max(0)
        low = float(low[0]) if np.all(low == low[0]) else jnp.asarray(low, jnp.float32)
        high = float(high[0]) if np.all(high == high[0]) else jnp.asarray(high, jnp.float32)
        return Box(low, high, (d,), jnp.float32)

    # --- conversions ---------------------------------------------------------------------------
    def _actions(self, actions: Array) -> dict[str, Array]:
        if self.spec.discrete:
            return {a: actions[i] for i, a in enumerate(self.agents)}
        sizes = self.spec.action_sizes
        return {a: actions[i, : sizes[i]] for i, a in enumerate(self.agents)}

    def _avail(self, env_state: Any) -> Array:
        mask = jnp.asarray(self._avail_mask)  # continuous: each agent's real dimensions
        if not self._has_avail:
            return mask
        avail = self.env.get_avail_actions(env_state)
        width = mask.shape[1]
        rows = [jnp.asarray(avail[a], bool).reshape(-1) for a in self.agents]
        rows = [jnp.pad(r[:width], (0, width - min(r.shape[0], width))) for r in rows]
        return mask & jnp.stack(rows)

    def _timestep(
        self, obs: dict, env_state: Any, reward: Array, terminated: Array, alive: Array
    ) -> TimeStep:
        rows = [jnp.asarray(obs[a], jnp.float32).reshape(-1) for a in self.agents]
        width = self.spec.obs_dim
        padded = jnp.stack([jnp.pad(r, (0, width - r.shape[0])) for r in rows])
        if self._world_state:
            gstate = jnp.asarray(obs["world_state"], jnp.float32).reshape(-1)
        else:
            gstate = jnp.concatenate(rows)
        return TimeStep(
            obs=padded,
            state=gstate,
            avail_actions=self._avail(env_state),
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=alive,
        )

    # --- contract ------------------------------------------------------------------------------
    def reset(self, key: PRNGKey) -> tuple[JaxMARLState, TimeStep]:
        obs, env_state = self.env.reset(key)
        n = self.spec.num_agents
        alive = jnp.ones((n,), bool)
        state = JaxMARLState(env_state=env_state, t=jnp.zeros((), jnp.int32), alive=alive)
        ts = self._timestep(
            obs, env_state, jnp.zeros((n,), jnp.float32), jnp.zeros((), bool), alive
        )
        return state, ts

    def step_env(
        self, key: PRNGKey, state: JaxMARLState, actions: Array
    ) -> tuple[JaxMARLState, TimeStep]:
        obs, env_state, rewards, dones, _ = self.env.step_env(
            key, state.env_state, self._actions(actions)
        )
        all_done = jnp.asarray(dones["__all__"], bool)
        if self._own_limit is None:
            terminated = all_done
        else:
            terminated = all_done & (state.t + 1 < self._own_limit)
        by_clock = all_done & ~terminated
        agent_done = jnp.stack([jnp.asarray(dones[a], bool) for a in self.agents])
        alive = jnp.where(by_clock, state.alive, ~agent_done)
        reward = jnp.stack([jnp.asarray(rewards[a], jnp.float32) for a in self.agents])
        ts = self._timestep(obs, env_state, reward, terminated, alive)
        return state.replace(env_state=env_state, alive=alive), ts

    def __repr__(self) -> str:
        return f"JaxMARLToMarl({type(self.env).__name__}, agents={self.spec.num_agents})"
