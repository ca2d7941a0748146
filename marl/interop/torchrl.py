"""marl environments as one batched TorchRL environment, for PyTorch learners (TorchRL,
BenchMARL) at marl's speed.

`MarlTorchEnv(env, num_envs)` is a TorchRL `EnvBase` of batch size `[num_envs]` whose step is
one jitted, vmapped marl step; tensors cross between JAX and PyTorch by DLPack (no copy where
both sit on one device and the layout allows). Keys follow TorchRL's multi-agent convention,
one entry per agent group (`spec.groups`; `group_map` maps a group to its agent names):

- `(group, "observation")` `[B, N_g, D_g]` float32 (the group's widest observation; narrower
  agents zero-padded), `(group, "action")` `[B, N_g]` int64 categorical (discrete) or
  `[B, N_g, d_g]` within the box (continuous), `(group, "reward")` `[B, N_g, 1]`;
- `(group, "mask")` `[B, N_g]` bool: the agent is alive (a dead combat unit is False; mask its
  losses with it), `(group, "action_mask")` `[B, N_g, A_g]` bool (discrete);
- `"state"` `[B, state_dim]`: the global state (a centralised critic's input);
- `"done"`, `"terminated"`, `"truncated"` `[B, 1]`: the episode's end, as TorchRL specifies
  (an agent's death is its mask, not a done, so collectors reset only ended episodes).

Episodes reset inside the step (marl's `AutoReset`): the step hands out the episode's true last
observation and keeps the next episode's first, which `reset` with a partial `"_reset"` (what
TorchRL's collectors send for the ended envs) returns without computing anything; a full
`reset()` draws every env afresh. An action its mask disallows is taken as the first allowed
one (as TorchRL's random actions ignore masks). `set_seed(s)` draws from `jax.random.key(s)`.

`pip install -e ".[torchrl]"`; importing this module imports torch and torchrl. The BenchMARL
task class is `marl.interop.benchmarl`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.registry import make
from marl.core.wrappers import AutoReset

try:
    import torch
    from tensordict import TensorDict
    from torchrl.data import Bounded, Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase
except ImportError as err:  # pragma: no cover - the extra is missing
    raise ImportError(
        "marl.interop.torchrl needs torch and torchrl: pip install -e '.[torchrl]'"
    ) from err

__all__ = ["MarlTorchEnv", "torchrl_env"]


def to_torch(x: jax.Array, device: torch.device) -> torch.Tensor:
    """A JAX array as a torch tensor (DLPack: shared memory where possible)."""
    t = torch.from_dlpack(x)
    return t if t.device == device else t.to(device)


def to_jax(t: torch.Tensor) -> jax.Array:
    """A torch tensor as a JAX array (DLPack)."""
    return jax.dlpack.from_dlpack(t.detach().contiguous())


class MarlTorchEnv(EnvBase):
    """A marl env batched `num_envs` times as a TorchRL environment (module docstring)."""

    batch_locked = True

    def __init__(
        self,
        env: MultiAgentEnv | str,
        num_envs: int,
        *,
        device: str | torch.device = "cpu",
        seed: int = 0,
        **kwargs: Any,
    ):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if isinstance(env, str):
            env = make(env, **kwargs)
        elif kwargs:
            raise TypeError("keywords are for an env id, not an env object")
        super().__init__(device=device, batch_size=torch.Size([int(num_envs)]))
        self.marl_env = env
        self.num_envs = int(num_envs)
        spec = self.marl_spec = env.spec
        names = spec.agent_names
        self.group_map = {g.name: [names[i] for i in g.agents] for g in spec.groups}
        self._groups = [(g.name, np.asarray(g.agents)) for g in spec.groups]
        whole = np.arange(spec.num_agents)
        self._one_group = len(self._groups) == 1 and np.array_equal(self._groups[0][1], whole)
        self._make_specs()
        wrapped = AutoReset(env)
        b = self.num_envs
        self._widths = {n: max(spec.obs_sizes[i] for i in idx) for n, idx in self._groups}
        self._sizes = {n: max(spec.action_sizes[i] for i in idx) for n, idx in self._groups}

        def split(x: jax.Array, idx: np.ndarray) -> jax.Array:  # [B, N, ...] -> [B, N_g, ...]
            return x if len(idx) == spec.num_agents else jnp.take(x, idx, axis=1)

        def pack(obs, state, alive, avail, reward=None) -> dict[tuple, jax.Array]:
            """The TorchRL tensors of one step, each in its final layout."""
            out = {("state",): state}
            for name, idx in self._groups:
                out[(name, "observation")] = split(obs, idx)[..., : self._widths[name]]
                out[(name, "mask")] = split(alive, idx)
                if spec.discrete:
                    out[(name, "action_mask")] = split(avail, idx)[..., : self._sizes[name]]
                if reward is not None:
                    out[(name, "reward")] = split(reward, idx)[..., None]
            return out

        def reset(key: jax.Array) -> tuple[Any, ...]:
            key, sub = jax.random.split(key)
            state, ts = jax.vmap(wrapped.reset)(jax.random.split(sub, b))
            return key, state, ts, pack(ts.obs, ts.state, ts.alive, ts.avail_actions)

        def step(key: jax.Array, state: Any, actions: jax.Array, ts: Any) -> tuple:
            key, sub = jax.random.split(key)
            if spec.discrete:  # a masked-out action: the first allowed one
                avail = ts.avail_actions
                allowed = jnp.take_along_axis(avail, actions[..., None], -1)[..., 0]
                first = jnp.argmax(avail, -1).astype(actions.dtype)
                actions = jnp.where(allowed, actions, first)
            state, ts = wrapped.step_batch(jax.random.split(sub, b), state, actions)
            out = pack(ts.final_obs, ts.final_state, ts.final_alive, ts.final_avail, ts.reward)
            out[("terminated",)] = ts.terminated[:, None]
            out[("truncated",)] = ts.truncated[:, None]
            out[("done",)] = (ts.terminated | ts.truncated)[:, None]
            # kept on device: what the next step and a partial reset need
            ts = ts.replace(metrics={}, final_obs=None, final_state=None, final_avail=None)
            return key, state, ts.replace(final_alive=None), out

        def first_obs(ts: Any) -> dict[tuple, jax.Array]:
            return pack(ts.obs, ts.state, ts.alive, ts.avail_actions)

        # every array committed to one device from the start, as the step's own outputs are,
        # so the step compiles once (uncommitted reset outputs would compile it twice)
        self._jax_device = jax.devices()[0]
        self._jreset = jax.jit(lambda key: jax.device_put(reset(key), self._jax_device))
        self._jstep = jax.jit(step, donate_argnums=(1,))
        self._jfirst = jax.jit(first_obs)
        self._set_seed(seed)
        self._state: Any = None
        self._ts: Any = None  # the next step's TimeStep (the next episode's first where one ended)

    # --- specs -------------------------------------------------------------------------------
    def _make_specs(self) -> None:
        spec, dev, b = self.marl_spec, self.device, self.batch_size
        obs, act, rew = {}, {}, {}
        for name, idx in self._groups:
            n = len(idx)
            width = max(spec.obs_sizes[i] for i in idx)
            group_obs = {
                "observation": Unbounded(shape=(*b, n, width), dtype=torch.float32, device=dev),
                "mask": Categorical(2, shape=(*b, n), dtype=torch.bool, device=dev),
            }
            k = max(spec.action_sizes[i] for i in idx)
            if spec.discrete:
                group_obs["action_mask"] = Categorical(
                    2, shape=(*b, n, k), dtype=torch.bool, device=dev
                )
                action = Categorical(k, shape=(*b, n), dtype=torch.int64, device=dev)
            else:
                space = spec.action_space
                low = np.broadcast_to(np.asarray(space.low, np.float32), (spec.action_dim,))[:k]
                high = np.broadcast_to(np.asarray(space.high, np.float32), (spec.action_dim,))[:k]
                action = Bounded(
                    low=torch.as_tensor(np.broadcast_to(low, (*b, n, k)).copy()),
                    high=torch.as_tensor(np.broadcast_to(high, (*b, n, k)).copy()),
                    shape=(*b, n, k),
                    dtype=torch.float32,
                    device=dev,
                )
            obs[name] = Composite(group_obs, shape=(*b, n))
            act[name] = Composite({"action": action}, shape=(*b, n))
            rew[name] = Composite(
                {"reward": Unbounded(shape=(*b, n, 1), dtype=torch.float32, device=dev)},
                shape=(*b, n),
            )
        obs["state"] = Unbounded(shape=(*b, spec.state_dim), dtype=torch.float32, device=dev)
        self.observation_spec = Composite(obs, shape=b)
        self.action_spec = Composite(act, shape=b)
        self.reward_spec = Composite(rew, shape=b)
        flag = {"shape": (*b, 1), "dtype": torch.bool, "device": dev}
        self.done_spec = Composite(
            {k: Categorical(2, **flag) for k in ("done", "terminated", "truncated")}, shape=b
        )

    # --- conversions -------------------------------------------------------------------------
    def _tensordict(self, arrays: dict[tuple, jax.Array], flags: bool = False) -> TensorDict:
        """A TensorDict of `pack`ed arrays (DLPack), the groups' nodes batched `[B, N_g]`;
        `flags`: all-False done, terminated and truncated (a reset)."""
        dev, b = self.device, self.num_envs
        groups = {name: {} for name, _ in self._groups}
        root: dict[str, Any] = {}
        for key, x in arrays.items():
            t = to_torch(x, dev)
            if len(key) == 1:
                root[key[0]] = t
            else:
                groups[key[0]][key[1]] = t
        for name, idx in self._groups:
            root[name] = TensorDict(groups[name], batch_size=(b, len(idx)), device=dev)
        if flags:
            flag = torch.zeros((b, 1), dtype=torch.bool, device=dev)
            root.update(done=flag, terminated=flag.clone(), truncated=flag.clone())
        return TensorDict(root, batch_size=self.batch_size, device=dev)

    def _joint_action(self, tensordict: TensorDict) -> jax.Array:
        spec = self.marl_spec
        b, n = self.num_envs, spec.num_agents
        if self._one_group:
            a = tensordict.get((self._groups[0][0], "action"))
            if spec.discrete:
                return to_jax(a.to(torch.int32))
            return self._pad(to_jax(a.to(torch.float32)))
        if spec.discrete:
            joint = torch.zeros((b, n), dtype=torch.int32, device=self.device)
        else:
            joint = torch.zeros((b, n, spec.action_dim), dtype=torch.float32, device=self.device)
        for name, idx in self._groups:
            a = tensordict.get((name, "action"))
            sel = torch.as_tensor(idx, device=self.device)
            if spec.discrete:
                joint[:, sel] = a.to(torch.int32)
            else:
                joint[:, sel, : a.shape[-1]] = a.to(torch.float32)
        return to_jax(joint)

    def _pad(self, a: jax.Array) -> jax.Array:
        d = self.marl_spec.action_dim
        return a if a.shape[-1] == d else jnp.pad(a, ((0, 0), (0, 0), (0, d - a.shape[-1])))

    # --- TorchRL API -------------------------------------------------------------------------
    def _reset(self, tensordict: TensorDict | None = None, **kwargs: Any) -> TensorDict:
        partial = None if tensordict is None else tensordict.get("_reset", None)
        if self._ts is None or partial is None or bool(partial.all()):
            self._key, self._state, self._ts, arrays = self._jreset(self._key)
        else:  # the ended envs were reset inside the step: hand out their first observations
            arrays = self._jfirst(self._ts)
        return self._tensordict(arrays, flags=True)

    def _step(self, tensordict: TensorDict) -> TensorDict:
        if self._ts is None:
            raise RuntimeError("call reset() before step()")
        actions = self._joint_action(tensordict)
        self._key, self._state, self._ts, arrays = self._jstep(
            self._key, self._state, actions, self._ts
        )
        return self._tensordict(arrays)

    def _set_seed(self, seed: int | None) -> None:
        key = jax.random.key(0 if seed is None else int(seed))
        self._key = jax.device_put(key, self._jax_device)


def torchrl_env(env_id: str, num_envs: int, **kwargs: Any) -> MarlTorchEnv:
    """`MarlTorchEnv` of a registered env id (keywords: the env's, `device`, `seed`)."""
    return MarlTorchEnv(env_id, num_envs, **kwargs)
