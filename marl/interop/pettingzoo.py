"""marl environments under PettingZoo's API, for learners outside JAX.

- `MarlParallelEnv(env)`: a `pettingzoo.ParallelEnv` over a marl env (a registered id, a plugin's
  id or an env object). String agent ids (`spec.agent_names`), per-agent Gymnasium spaces sized
  by `spec.obs_sizes` / `spec.action_sizes` (heterogeneous agents unpadded, as `MarlToJaxMARL`
  does), `terminations` / `truncations` per agent: an agent that dies (a combat unit) terminates
  and leaves `agents`; when the episode ends every agent still in `agents` terminates (the env
  says so) or is truncated (its time limit). Action masks of discrete envs are `infos[agent]
  ["action_mask"]` (int8), or, with `action_mask="obs"`, PettingZoo's observation-dict convention
  `{"observation": ..., "action_mask": ...}`. A step leaves out agents that have left; their
  slot takes the first action their mask allows (zeros for continuous actions).
- Actions are checked as PettingZoo's spaces hold them: every live agent needs one (KeyError);
  a discrete one is an integer of the agent's range, a continuous one finite numbers of its
  size within the box (ValueError otherwise). A discrete action its mask disallows is taken as
  the first allowed one, and the agent's info carries `masked_action` (PettingZoo's own tests
  sample actions without the mask).
  `reset(seed=s)` draws the episode from `jax.random.key(s)`; `reset()` without a seed continues
  the env's own key chain. `render()` returns an RGB array drawn by the family's viewer.
- `aec_env(...)`: the same env in PettingZoo's AEC form, through PettingZoo's own
  `parallel_to_aec`.
- `MarlVectorEnv(env, num_envs)`: many copies stepped by one jitted, vmapped step, NumPy arrays
  out with agents on an axis ([B, N, ...]), auto-reset: for learners that batch themselves.
- `parallel_env(id, **kwargs)`, `vector_env(id, num_envs, **kwargs)`: build from the registry;
  `marl.make(id, api="pettingzoo")` is `parallel_env`.

pettingzoo and gymnasium are optional (`pip install -e ".[pettingzoo]"`); importing this module
imports them.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.registry import make
from marl.core.wrappers import AutoReset, env_hook

try:
    import gymnasium
    from pettingzoo import ParallelEnv
    from pettingzoo.utils.conversions import parallel_to_aec
except ImportError as err:  # pragma: no cover - the extra is missing
    raise ImportError(
        "marl.interop.pettingzoo needs pettingzoo and gymnasium: pip install -e '.[pettingzoo]'"
    ) from err

__all__ = ["MarlParallelEnv", "MarlVectorEnv", "aec_env", "parallel_env", "vector_env"]


def _build(env: MultiAgentEnv | str, kwargs: dict[str, Any]) -> MultiAgentEnv:
    if isinstance(env, str):
        return make(env, **kwargs)
    if kwargs:
        raise TypeError("keywords are for an env id, not an env object")
    return env


def _action_space(spec: Any, k: int) -> gymnasium.Space:
    if spec.discrete:
        return gymnasium.spaces.Discrete(k)
    space = spec.action_space
    low = np.broadcast_to(np.asarray(space.low, np.float32), (spec.action_dim,))[:k]
    high = np.broadcast_to(np.asarray(space.high, np.float32), (spec.action_dim,))[:k]
    return gymnasium.spaces.Box(low, high, (k,), np.float32)


_COMPILED: dict[int, tuple[MultiAgentEnv, Any, Any]] = {}


def _compiled(env: MultiAgentEnv) -> tuple[Any, Any]:
    """Jitted `reset` and `step` of `env`, shared by every adapter over the same env object (a
    PettingZoo test builds several: each compiles once)."""
    if id(env) not in _COMPILED or _COMPILED[id(env)][0] is not env:
        _COMPILED[id(env)] = (env, jax.jit(env.reset), jax.jit(env.step))
    return _COMPILED[id(env)][1:]


class MarlParallelEnv(ParallelEnv):
    """A marl env as a PettingZoo `ParallelEnv` (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "name": "marl", "is_parallelizable": True}

    def __init__(
        self,
        env: MultiAgentEnv | str,
        *,
        render_mode: str | None = None,
        action_mask: str = "info",
        **kwargs: Any,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if action_mask not in ("info", "obs"):
            raise ValueError(f"action_mask must be 'info' or 'obs', got {action_mask!r}")
        self.env = _build(env, kwargs)
        spec = self.env.spec
        self.spec = spec
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "name": spec.name}
        self._mask_in_obs = action_mask == "obs" and spec.discrete
        self.possible_agents = list(spec.agent_names)
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._obs_spaces = {}
        self._act_spaces = {}
        for i, a in enumerate(self.possible_agents):
            obs = gymnasium.spaces.Box(-np.inf, np.inf, (spec.obs_sizes[i],), np.float32)
            act = _action_space(spec, spec.action_sizes[i])
            if self._mask_in_obs:
                mask = gymnasium.spaces.Box(0, 1, (spec.action_sizes[i],), np.int8)
                obs = gymnasium.spaces.Dict({"observation": obs, "action_mask": mask})
            self._obs_spaces[a], self._act_spaces[a] = obs, act
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (spec.state_dim,), np.float32)
        self._reset, self._step = _compiled(self.env)
        self._key: jax.Array | None = None
        self._state: Any = None
        self._ts: Any = None  # the current TimeStep on the host (NumPy leaves)
        self._replaced: dict[str, int] = {}  # masked-out actions taken as allowed ones

    # --- spaces ------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> gymnasium.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.Space:
        return self._act_spaces[agent]

    # --- conversions -------------------------------------------------------------------------
    def _obs(self, agents: list[str]) -> dict[str, Any]:
        out = {}
        for a in agents:
            i = self._index[a]
            row = np.array(self._ts.obs[i, : self.spec.obs_sizes[i]], np.float32)  # writable
            if self._mask_in_obs:
                out[a] = {"observation": row, "action_mask": self._mask(i)}
            else:
                out[a] = row
        return out

    def _mask(self, i: int) -> np.ndarray:
        return np.array(self._ts.avail_actions[i, : self.spec.action_sizes[i]], np.int8)

    def _infos(self, agents: list[str]) -> dict[str, dict]:
        if not self.spec.discrete or self._mask_in_obs:
            return {a: {} for a in agents}
        return {a: {"action_mask": self._mask(self._index[a])} for a in agents}

    def _actions(self, actions: dict[str, Any]) -> jax.Array:
        """The joint action, refusing what the spaces do not hold (PettingZoo's rule: one
        valid action per live agent): a discrete action is an integer of the agent's range; a
        continuous one finite, of the agent's size, within bounds. A discrete action its mask
        disallows (PettingZoo's own tests sample without the mask) is taken as the first one
        the mask allows, and the agent's info says so (`masked_action`)."""
        missing = sorted(set(self.agents) - set(actions))
        if missing:
            raise KeyError(f"no action for agents in the episode: {missing}")
        spec = self.spec
        if spec.discrete:
            avail = np.asarray(self._ts.avail_actions)
            out = np.argmax(avail, axis=-1).astype(np.int32)  # agents gone: any allowed one
            for a, act in actions.items():
                i, n = self._index[a], spec.action_sizes[self._index[a]]
                v = np.asarray(act)
                if v.dtype.kind not in "iu" or v.size != 1 or not 0 <= int(v.reshape(())) < n:
                    raise ValueError(f"action of {a}: expected an integer 0..{n - 1}, got {act!r}")
                if avail[i, int(v.reshape(()))]:
                    out[i] = int(v.reshape(()))
                else:
                    self._replaced[a] = int(v.reshape(()))
            return jnp.asarray(out)
        out = np.zeros((spec.num_agents, spec.action_dim), np.float32)
        for a, act in actions.items():
            space = self._act_spaces[a]
            row = np.asarray(act)
            if row.dtype.kind not in "iuf" or row.shape != space.shape:
                raise ValueError(f"action of {a}: expected {space.shape} numbers, got {act!r}")
            row = row.astype(np.float32)
            if not np.all(np.isfinite(row)) or np.any(row < space.low) or np.any(row > space.high):
                raise ValueError(f"action of {a}: {row.tolist()} is outside {space}")
            out[self._index[a], : row.shape[0]] = row
        return jnp.asarray(out)

    def _next_key(self) -> jax.Array:
        if self._key is None:
            self._key = jax.random.key(int(np.random.SeedSequence().entropy % (2**31)))
        self._key, key = jax.random.split(self._key)
        return key

    # --- PettingZoo API ----------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, dict]]:
        if seed is not None:
            self._key = jax.random.key(int(seed))
        self._state, ts = self._reset(self._next_key())
        self._ts = jax.device_get(ts)
        self.agents = [a for a in self.possible_agents if self._ts.alive[self._index[a]]]
        return self._obs(self.agents), self._infos(self.agents)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("the episode has ended: call reset()")
        unknown = sorted(set(actions) - set(self.agents))
        if unknown:
            raise KeyError(f"actions for agents not in the episode: {unknown}")
        before = list(self.agents)
        self._replaced = {}
        self._state, ts = self._step(self._next_key(), self._state, self._actions(actions))
        self._ts = ts = jax.device_get(ts)
        terminated, truncated = bool(ts.terminated), bool(ts.truncated)
        rewards = {a: float(ts.reward[self._index[a]]) for a in before}
        terms = {a: terminated or not bool(ts.alive[self._index[a]]) for a in before}
        truncs = {a: truncated and not terms[a] for a in before}
        obs, infos = self._obs(before), self._infos(before)
        for a, action in self._replaced.items():
            infos[a] = {**infos[a], "masked_action": action}
        self.agents = [a for a in before if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        """The env's global state [state_dim] (what a centralised critic sees)."""
        return np.asarray(self._ts.state, np.float32)

    def render(self) -> np.ndarray | None:
        """An RGB frame [H, W, 3] uint8 of the current state, drawn by the family's viewer."""
        if self.render_mode is None:
            return None
        import importlib

        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        path = env_hook(self.env, "viewer_module")
        if not path:
            raise NotImplementedError(f"{self.spec.name} has no viewer")
        viewer = importlib.import_module(path)
        frame = jax.device_get(self.env.render_frame(self._state))
        fig = Figure(figsize=(4, 4), dpi=80)
        canvas = FigureCanvasAgg(fig)
        viewer.draw_frame(fig.add_subplot(), frame, self.spec.name)
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())[..., :3].copy()

    def close(self) -> None:
        pass


def parallel_env(env_id: str, **kwargs: Any) -> MarlParallelEnv:
    """`MarlParallelEnv` of a registered env id (keywords: the env's, `render_mode`,
    `action_mask`)."""
    return MarlParallelEnv(env_id, **kwargs)


def aec_env(env_id: MultiAgentEnv | str, **kwargs: Any) -> Any:
    """The env in PettingZoo's AEC form (agents act in turn), through `parallel_to_aec`."""
    return parallel_to_aec(MarlParallelEnv(env_id, **kwargs))


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
        self.env = AutoReset(_build(env, kwargs))
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
