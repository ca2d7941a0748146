"""A marl env seen as a JaxMARL `MultiAgentEnv` (dicts keyed by agent name): the adapter's
body `_MarlToJaxMARL` and its state `MarlJaxMARLState`. `marl.interop.jaxmarl.MarlToJaxMARL`
subclasses it on first access (with jaxmarl's base class where jaxmarl is importable);
importing this module never imports jaxmarl."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from marl.core.env import MultiAgentEnv, PRNGKey, TimeStep
from marl.core.spaces import Box, Discrete
from marl.core.wrappers import tree_select

Array = jax.Array


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
