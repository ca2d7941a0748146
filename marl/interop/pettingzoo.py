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
  sample actions without the mask). Actions of agents that have left the episode are ignored
  (TorchRL sends one for every agent of a group, dead ones included); names the env has no
  agent of are refused (KeyError).
- `observation_spaces` / `action_spaces` are PettingZoo's dicts of spaces (skrl reads them);
  `max_cycles=k` truncates an episode after k steps, as PettingZoo's own envs do.
  `keep_dead=True` also hands out every agent that has left (its observation and info, marl's
  padding and mask; reward 0, terminated), which TorchRL's `PettingZooWrapper` reads for every
  agent of a group (PettingZoo allows the extra keys; its API test warns about them).
- A step is one compiled call that returns only what a ParallelEnv hands out (observations,
  rewards, alive, masks, ends); the env state stays on device, the global state until `state()`
  asks. The compiled functions live on the env object (adapters over one env share them) and
  go with it.
  `reset(seed=s)` draws the episode from `jax.random.key(s)`; `reset()` without a seed continues
  the env's own key chain. `render()` returns an RGB array drawn by the family's viewer.
- `aec_env(...)`: the same env in PettingZoo's AEC form, through PettingZoo's own
  `parallel_to_aec`.
- `MarlVectorEnv(env, num_envs)`: many copies stepped by one jitted, vmapped step, NumPy arrays
  out with agents on an axis ([B, N, ...]), auto-reset: for learners that batch themselves.
- `parallel_env(id, **kwargs)`, `vector_env(id, num_envs, **kwargs)`: build from the registry;
  `marl.make(id, api="pettingzoo")` is `parallel_env`. `env_module(id, **kwargs)`: the task as
  a PettingZoo environment module (`parallel_env(...)`, `env(...)`), for tools that take one
  (`pettingzoo.test.max_cycles_test`).

pettingzoo and gymnasium are optional (`pip install -e ".[pettingzoo]"`); importing this module
imports them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jax
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.wrappers import env_hook
from marl.interop.pettingzoo_programs import compiled_programs, resolve_env
from marl.interop.pettingzoo_vector import MarlVectorEnv, vector_env

try:
    import gymnasium
    from pettingzoo import ParallelEnv
    from pettingzoo.utils.conversions import parallel_to_aec
except ImportError as err:  # pragma: no cover - the extra is missing
    raise ImportError(
        "marl.interop.pettingzoo needs pettingzoo and gymnasium: pip install -e '.[pettingzoo]'"
    ) from err

__all__ = [
    "MarlParallelEnv",
    "MarlVectorEnv",
    "aec_env",
    "env_module",
    "parallel_env",
    "vector_env",
]


def _action_space(spec: Any, k: int) -> gymnasium.Space:
    if spec.discrete:
        return gymnasium.spaces.Discrete(k)
    space = spec.action_space
    low = np.broadcast_to(np.asarray(space.low, np.float32), (spec.action_dim,))[:k]
    high = np.broadcast_to(np.asarray(space.high, np.float32), (spec.action_dim,))[:k]
    return gymnasium.spaces.Box(low, high, (k,), np.float32)


class MarlParallelEnv(ParallelEnv):
    """A marl env as a PettingZoo `ParallelEnv` (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "name": "marl", "is_parallelizable": True}

    def __init__(
        self,
        env: MultiAgentEnv | str,
        *,
        render_mode: str | None = None,
        action_mask: str = "info",
        max_cycles: int | None = None,
        keep_dead: bool = False,
        **kwargs: Any,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if action_mask not in ("info", "obs"):
            raise ValueError(f"action_mask must be 'info' or 'obs', got {action_mask!r}")
        if max_cycles is not None and int(max_cycles) < 1:
            raise ValueError(f"max_cycles must be at least 1 or None, got {max_cycles!r}")
        self.max_cycles = None if max_cycles is None else int(max_cycles)
        self.keep_dead = bool(keep_dead)
        self.env = resolve_env(env, kwargs)
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
        # PettingZoo's dicts of spaces, as every env it builds has them (skrl reads these)
        self.observation_spaces = dict(self._obs_spaces)
        self.action_spaces = dict(self._act_spaces)
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (spec.state_dim,), np.float32)
        self._reset, self._step = compiled_programs(self.env)
        self._key: jax.Array | None = None
        self._state: Any = None  # the env state, on device
        self._global: Any = None  # the global state vector, on device until `state()` asks
        self._host: Any = None  # (obs, reward, alive, avail, terminated, truncated), NumPy
        self._obs_rows: np.ndarray | None = None  # a writable float32 copy of the observations
        self._cycles = 0
        self._replaced: dict[str, int] = {}  # masked-out actions taken as allowed ones

    # --- spaces ------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> gymnasium.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.Space:
        return self._act_spaces[agent]

    # --- conversions -------------------------------------------------------------------------
    def _obs(self, agents: list[str]) -> dict[str, Any]:
        out = {}
        rows, sizes = self._obs_rows, self.spec.obs_sizes
        for a in agents:
            i = self._index[a]
            row = rows[i, : sizes[i]]  # a view of this step's own copy
            if self._mask_in_obs:
                out[a] = {"observation": row, "action_mask": self._mask(i)}
            else:
                out[a] = row
        return out

    def _mask(self, i: int) -> np.ndarray:
        return np.array(self._host[3][i, : self.spec.action_sizes[i]], np.int8)

    def _infos(self, agents: list[str]) -> dict[str, dict]:
        if not self.spec.discrete or self._mask_in_obs:
            return {a: {} for a in agents}
        return {a: {"action_mask": self._mask(self._index[a])} for a in agents}

    def _actions(self, actions: dict[str, Any]) -> np.ndarray:
        """The joint action, refusing what the spaces do not hold (PettingZoo's rule: one
        valid action per live agent): a discrete action is an integer of the agent's range; a
        continuous one finite, of the agent's size, within bounds. A discrete action its mask
        disallows (PettingZoo's own tests sample without the mask) is taken as the first one
        the mask allows, and the agent's info says so (`masked_action`). Actions of agents
        that have left the episode are ignored (TorchRL sends one for every agent of a group);
        names that are no agent of the env are refused."""
        unknown = [a for a in actions if a not in self._index]
        if unknown:
            raise KeyError(f"actions for agents the env does not have: {sorted(unknown)}")
        missing = sorted(set(self.agents) - set(actions))
        if missing:
            raise KeyError(f"no action for agents in the episode: {missing}")
        if len(actions) != len(self.agents):
            live = set(self.agents)
            actions = {a: v for a, v in actions.items() if a in live}
        spec = self.spec
        if spec.discrete:
            avail = self._host[3]
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
            return out
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
        return out

    def _key_now(self) -> jax.Array:
        if self._key is None:
            self._key = jax.random.key(int(np.random.SeedSequence().entropy % (2**31)))
        return self._key

    def _take(self, out: tuple[Any, ...]) -> None:
        """Keep a compiled reset's or step's results: key, state and global state on device,
        what a ParallelEnv returns on the host (one transfer)."""
        self._key, self._state, host, self._global = out
        self._host = host = jax.device_get(host)
        self._obs_rows = np.array(host[0], np.float32)

    # --- PettingZoo API ----------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, dict]]:
        if seed is not None:
            self._key = jax.random.key(int(seed))
        self._take(self._reset(self._key_now()))
        self._cycles = 0
        alive = self._host[2]
        self.agents = [a for a in self.possible_agents if alive[self._index[a]]]
        shown = self.possible_agents if self.keep_dead else self.agents
        return self._obs(shown), self._infos(shown)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("the episode has ended: call reset()")
        before = list(self.agents)
        self._replaced = {}
        joint = self._actions(actions)
        self._take(self._step(self._key_now(), self._state, joint))
        self._cycles += 1
        _, reward, alive, _, terminated, truncated = self._host
        terminated = bool(terminated)
        out_of_cycles = self.max_cycles is not None and self._cycles >= self.max_cycles
        truncated = bool(truncated) or out_of_cycles
        index = self._index
        rewards = {a: float(reward[index[a]]) for a in before}
        terms = {a: terminated or not bool(alive[index[a]]) for a in before}
        truncs = {a: truncated and not terms[a] for a in before}
        shown = self.possible_agents if self.keep_dead else before
        obs, infos = self._obs(shown), self._infos(shown)
        for a, action in self._replaced.items():
            infos[a] = {**infos[a], "masked_action": action}
        self.agents = [a for a in before if not (terms[a] or truncs[a])]
        if self.keep_dead:  # agents gone before this step: nothing earned, still ended
            gone = [a for a in shown if a not in rewards]
            rewards.update(dict.fromkeys(gone, 0.0))
            terms.update(dict.fromkeys(gone, True))
            truncs.update(dict.fromkeys(gone, False))
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        """The env's global state [state_dim] (what a centralised critic sees)."""
        return np.array(jax.device_get(self._global), np.float32)

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


def env_module(env_id: str, **kwargs: Any) -> SimpleNamespace:
    """`env_id` as a PettingZoo environment module: `parallel_env(**more)` and `env(**more)`
    (the AEC form) build it with `kwargs` and `more` (e.g. `max_cycles`), as
    `pettingzoo.mpe.simple_spread_v3` does."""
    return SimpleNamespace(
        parallel_env=lambda **more: MarlParallelEnv(env_id, **{**kwargs, **more}),
        env=lambda **more: aec_env(env_id, **{**kwargs, **more}),
    )
