"""`MarlVectorEnv`: many copies of a marl env stepped by one jitted, vmapped step, NumPy arrays
out, for learners outside JAX that batch themselves (no pettingzoo import). Also re-exported by
`marl.interop.pettingzoo`."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.wrappers import AutoReset
from marl.interop.pettingzoo_programs import resolve_env


class MarlVectorEnv:
    """`num_envs` copies of a marl env, stepped by one jitted, vmapped step.

    Arrays are NumPy with agents on axis 1 (marl's padded layout): `reset(seed) -> (obs
    [B, N, obs_dim], infos)`, `step(actions [B, N] or [B, N, d]) -> (obs, rewards [B, N],
    terminations [B, N], truncations [B, N], infos)`. An env whose episode ends resets inside
    the step (marl's `AutoReset`): `obs` is the next episode's first observation and
    `infos["final_obs"]` the finished episode's last. `infos` also holds `action_mask` [B, N, A]
    (discrete), `alive` [B, N] and `state` [B, state_dim]. A dead agent's row is padding: mask
    it with `alive`.
    """

    def __init__(self, env: MultiAgentEnv | str, num_envs: int, **kwargs: Any):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.env = AutoReset(resolve_env(env, kwargs))
        self.spec = self.env.spec
        self.num_envs = int(num_envs)
        self._reset = jax.jit(jax.vmap(self.env.reset))
        self._step = jax.jit(jax.vmap(self.env.step), donate_argnums=(1,))
        self._key: jax.Array | None = None
        self._state: Any = None

    def _keys(self) -> jax.Array:
        if self._key is None:
            self._key = jax.random.key(0)
        self._key, key = jax.random.split(self._key)
        return jax.random.split(key, self.num_envs)

    @staticmethod
    def _infos(ts: Any, final: bool) -> dict[str, np.ndarray]:
        out = {"action_mask": ts.avail_actions, "alive": ts.alive, "state": ts.state}
        if final:
            out["final_obs"] = ts.final_obs
        return out

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if seed is not None:
            self._key = jax.random.key(int(seed))
        self._state, ts = self._reset(self._keys())
        ts = jax.device_get(ts)
        return ts.obs, self._infos(ts, final=False)

    def step(self, actions: Any) -> tuple[np.ndarray, ...]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        dtype = jnp.int32 if self.spec.discrete else jnp.float32
        self._state, ts = self._step(self._keys(), self._state, jnp.asarray(actions, dtype))
        ts = jax.device_get(ts)
        n = self.spec.num_agents
        done_at = np.broadcast_to(np.asarray(ts.terminated)[:, None], (self.num_envs, n))
        died = ~np.asarray(ts.final_alive)
        terms = done_at | died
        truncs = np.broadcast_to(np.asarray(ts.truncated)[:, None], (self.num_envs, n)) & ~terms
        return ts.obs, ts.reward, terms, truncs, self._infos(ts, final=True)


def vector_env(env_id: str, num_envs: int, **kwargs: Any) -> MarlVectorEnv:
    """`MarlVectorEnv` of a registered env id."""
    return MarlVectorEnv(env_id, num_envs, **kwargs)
