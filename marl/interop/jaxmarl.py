"""JaxMARL adapters, both ways.

- `MarlToJaxMARL(env)`: a marl env seen as a JaxMARL `MultiAgentEnv` (dicts keyed by agent);
  JaxMARL's own training scripts run on it unchanged.
- `JaxMARLToMarl(env)`: a JaxMARL env seen as a marl `MultiAgentEnv` (agents on axis 0).
- `import_jaxmarl()`: import jaxmarl without its import-time chatter; `JAXMARL_NAMES`: the
  JaxMARL registry name of each marl task that has one.

jaxmarl is optional: importing this module never imports it. `MarlToJaxMARL` is built on first
access and subclasses jaxmarl's `MultiAgentEnv` only when jaxmarl is importable.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, PRNGKey, TimeStep
from marl.core.spaces import Box, Discrete
from marl.core.wrappers import tree_select

Array = jax.Array

__all__ = [
    "JAXMARL_NAMES",
    "JaxMARLToMarl",
    "MarlToJaxMARL",  # noqa: F822 - built lazily by the module `__getattr__` below
    "import_jaxmarl",
]

# marl id -> JaxMARL registry name of the same task.
JAXMARL_NAMES = {
    "particle/simple": "MPE_simple_v3",
    "particle/spread": "MPE_simple_spread_v3",
    "particle/adversary": "MPE_simple_adversary_v3",
    "particle/tag": "MPE_simple_tag_v3",
    "particle/push": "MPE_simple_push_v3",
    "particle/reference": "MPE_simple_reference_v3",
    "particle/speaker_listener": "MPE_simple_speaker_listener_v4",
    "particle/crypto": "MPE_simple_crypto_v3",
    "particle/world_comm": "MPE_simple_world_comm_v3",
}


# --- JaxMARL env -> marl -----------------------------------------------------------------------


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


# --- marl env -> JaxMARL -----------------------------------------------------------------------


class MarlJaxMARLState(struct.PyTreeNode):
    """State of `MarlToJaxMARL`: the marl state plus the arrays of its current TimeStep.

    env_state:      the marl env's state.
    obs:            [N, obs_dim] current observations (padded).
    global_state:   [state_dim] current global state.
    avail_actions:  [N, A] bool current action mask.
    """

    env_state: Any
    obs: Array
    global_state: Array
    avail_actions: Array


def _jaxmarl_spaces() -> tuple[type, type]:
    try:
        from jaxmarl.environments.spaces import Box as JBox
        from jaxmarl.environments.spaces import Discrete as JDiscrete
    except ImportError:
        return Discrete, Box
    return JDiscrete, JBox


class _MarlToJaxMARL:
    """A marl `MultiAgentEnv` with JaxMARL's API (dicts keyed by agent name).

    Wrap a bare env (not `AutoReset`): `step` resets by itself, JaxMARL-style.

    Attributes: `num_agents`, `agents` (= `spec.agent_names`), `max_steps` (=
    `spec.episode_limit`), `observation_spaces` / `action_spaces` (jaxmarl `Box` / `Discrete`
    when jaxmarl is importable, else gymnax's), sized per agent by `spec.obs_sizes` /
    `spec.action_sizes`.

    - `reset(key) -> (obs, state)`; `obs[agent]` is `[obs_sizes[i]]`, the unpadded row.
    - `step(key, state, actions, reset_state=None) -> (obs, state, rewards, dones, infos)` with
      JaxMARL's auto-reset: when `dones["__all__"]`, obs and state are the next episode's
      (from `reset(split key)`, or `reset_state`); rewards and dones describe the transition.
    - `step_env(...)`: same, without the reset (marl's time limit still applies).
    - `actions[agent]`: int scalar (discrete) or `[action_sizes[i]]` (continuous; zero-padded
      to `spec.action_dim`).
    - `rewards[agent]` [] float32; `dones[agent] = episode done | not alive` (JaxMARL's SMAX
      convention: dead agents are done) and `dones["__all__"]` = episode done.
    - `infos = {"terminated", "truncated", *spec.metric_names}`, each [num_agents] (per agent,
      like JaxMARL's `LogWrapper` infos, so baselines can reshape info leaves to
      `[..., num_agents]`; the env's task metrics, e.g. combat's `won`, broadcast over agents).
    - `get_obs(state)`, `get_avail_actions(state) -> {agent: [action_sizes[i]] bool}`,
      `world_state(state) -> [state_dim]` (marl's global state).
    """

    def __init__(self, env: MultiAgentEnv):
        self._env = env
        spec = env.spec
        self.spec = spec
        self.num_agents = spec.num_agents
        self.agents = list(spec.agent_names)
        self.max_steps = spec.episode_limit
        jdiscrete, jbox = _jaxmarl_spaces()
        self.observation_spaces = {
            a: jbox(-jnp.inf, jnp.inf, (k,), jnp.float32)
            for a, k in zip(self.agents, spec.obs_sizes, strict=True)
        }
        if spec.discrete:
            self.action_spaces = {
                a: jdiscrete(k) for a, k in zip(self.agents, spec.action_sizes, strict=True)
            }
        else:
            space = spec.action_space

            def bound(b: Any, k: int) -> Any:
                return b[:k] if jnp.ndim(b) > 0 else b

            self.action_spaces = {
                a: jbox(bound(space.low, k), bound(space.high, k), (k,), jnp.float32)
                for a, k in zip(self.agents, spec.action_sizes, strict=True)
            }

    @property
    def env(self) -> MultiAgentEnv:
        """The wrapped marl env."""
        return self._env

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        """The spec's groups as `{group: [agent names]}`."""
        return {g.name: [self.agents[i] for i in g.agents] for g in self.spec.groups}

    def observation_space(self, agent: str) -> Any:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self.action_spaces[agent]

    # --- conversions ---------------------------------------------------------------------------
    def _obs_dict(self, obs: Array) -> dict[str, Array]:
        sizes = self.spec.obs_sizes
        return {a: obs[i, : sizes[i]] for i, a in enumerate(self.agents)}

    def _actions(self, actions: dict[str, Array]) -> Array:
        if self.spec.discrete:
            return jnp.stack([jnp.asarray(actions[a]).reshape(()) for a in self.agents]).astype(
                jnp.int32
            )
        d = self.spec.action_dim
        rows = [jnp.asarray(actions[a], jnp.float32).reshape(-1) for a in self.agents]
        return jnp.stack([jnp.pad(r, (0, d - r.shape[0])) for r in rows])

    def _wrap(self, env_state: Any, ts: TimeStep) -> MarlJaxMARLState:
        return MarlJaxMARLState(env_state, ts.obs, ts.state, ts.avail_actions)

    # --- JaxMARL API ---------------------------------------------------------------------------
    def reset(self, key: PRNGKey) -> tuple[dict[str, Array], MarlJaxMARLState]:
        env_state, ts = self._env.reset(key)
        return self._obs_dict(ts.obs), self._wrap(env_state, ts)

    def step_env(
        self, key: PRNGKey, state: MarlJaxMARLState, actions: dict[str, Array]
    ) -> tuple[dict, MarlJaxMARLState, dict, dict, dict]:
        env_state, ts = self._env.step(key, state.env_state, self._actions(actions))
        n = self.num_agents
        done = ts.done
        rewards = {a: ts.reward[i] for i, a in enumerate(self.agents)}
        agent_done = done | ~ts.alive
        dones = {a: agent_done[i] for i, a in enumerate(self.agents)}
        dones["__all__"] = done
        infos = {
            "terminated": jnp.broadcast_to(ts.terminated, (n,)),
            "truncated": jnp.broadcast_to(ts.truncated, (n,)),
            **{k: jnp.broadcast_to(v, (n,)) for k, v in ts.metrics.items()},
        }
        return self._obs_dict(ts.obs), self._wrap(env_state, ts), rewards, dones, infos

    def step(
        self,
        key: PRNGKey,
        state: MarlJaxMARLState,
        actions: dict[str, Array],
        reset_state: MarlJaxMARLState | None = None,
    ) -> tuple[dict, MarlJaxMARLState, dict, dict, dict]:
        key, key_reset = jax.random.split(key)
        obs_st, state_st, rewards, dones, infos = self.step_env(key, state, actions)
        if reset_state is None:
            obs_re, state_re = self.reset(key_reset)
        else:
            state_re, obs_re = reset_state, self.get_obs(reset_state)
        done = dones["__all__"]
        state = tree_select(done, state_re, state_st)
        obs = tree_select(done, obs_re, obs_st)
        return obs, state, rewards, dones, infos

    def get_obs(self, state: MarlJaxMARLState) -> dict[str, Array]:
        return self._obs_dict(state.obs)

    def get_avail_actions(self, state: MarlJaxMARLState) -> dict[str, Array]:
        sizes = self.spec.action_sizes
        return {a: state.avail_actions[i, : sizes[i]] for i, a in enumerate(self.agents)}

    def world_state(self, state: MarlJaxMARLState) -> Array:
        """[state_dim] the marl env's global state."""
        return state.global_state

    def __repr__(self) -> str:
        return f"MarlToJaxMARL({self._env!r})"


_LAZY: dict[str, type] = {}


def _build_marl_to_jaxmarl() -> type:
    try:
        from jaxmarl.environments.multi_agent_env import MultiAgentEnv as JaxMARLEnv
    except ImportError:
        bases: tuple[type, ...] = (_MarlToJaxMARL,)
    else:
        bases = (_MarlToJaxMARL, JaxMARLEnv)
    attrs = {"__module__": __name__, "__qualname__": "MarlToJaxMARL"}
    return type("MarlToJaxMARL", bases, {**attrs, "__doc__": _MarlToJaxMARL.__doc__})


def __getattr__(name: str) -> Any:
    # `MarlToJaxMARL` is built on first use so that importing this module never imports jaxmarl
    if name == "MarlToJaxMARL":
        if name not in _LAZY:
            _LAZY[name] = _build_marl_to_jaxmarl()
        return _LAZY[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def import_jaxmarl() -> Any:
    """Import JaxMARL without its import-time chatter.

    JaxMARL prints on import, and its MABrax module points `sys.stdout`/`sys.stderr` back at
    the process's own streams; both are silenced at the file-descriptor level and restored.
    """
    if "jaxmarl" in sys.modules:
        return sys.modules["jaxmarl"]
    out, err = sys.stdout, sys.stderr
    out.flush()
    if sys.__stdout__ is not None:
        sys.__stdout__.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        with contextlib.redirect_stdout(io.StringIO()):
            import jaxmarl
    finally:
        if sys.__stdout__ is not None:
            sys.__stdout__.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
        sys.stdout, sys.stderr = out, err
    return jaxmarl


# marl keyword -> JaxMARL MPE keyword, where the names differ
