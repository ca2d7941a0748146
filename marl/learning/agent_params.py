"""Per-agent parameter sets: `AgentParams` says which set each agent uses and applies a
module's stacked parameters to every agent (agents of a shared set folded into the batch), and
`agent_ids` builds one-hot agent ids."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


@dataclass(frozen=True, eq=False)
class AgentParams:
    """Which parameter set each agent uses: `index[i]` in `0 .. num_sets - 1`.

    Parameters of a module are stacked on a leading axis of size `num_sets`. Agents that share
    a set are batched together; with one set the agents are simply folded into the batch.
    """

    index: np.ndarray  # [N] int

    @property
    def num_sets(self) -> int:
        return int(self.index.max()) + 1

    @property
    def num_agents(self) -> int:
        return len(self.index)

    @classmethod
    def sharing(cls, mode: str, groups: np.ndarray) -> AgentParams:
        """`mode`: "all" (one set), "group" (one per agent group, `groups` [N]), "none"."""
        n = len(groups)
        if mode == "all":
            return cls(np.zeros(n, np.int32))
        if mode == "group":
            _, idx = np.unique(np.asarray(groups), return_inverse=True)
            return cls(idx.astype(np.int32))
        if mode == "none":
            return cls(np.arange(n, dtype=np.int32))
        raise ValueError(f"parameter sharing {mode!r} unknown; valid: all, group, none")

    def init(self, init_fn: Callable[[Array], Any], key: Array) -> Any:
        """Stacked parameters: `init_fn(key)` for each set, on a leading axis.

        `lax.map`, not `vmap`: batched QR (the orthogonal initialiser) can deadlock on XLA's
        CPU backend; init runs once, so the sequential loop costs nothing that matters.
        """
        return jax.lax.map(init_fn, jax.random.split(key, self.num_sets))

    def apply(
        self, fn: Callable[..., Any], params: Any, *args: Any, in_axes: tuple, out_axes: Any
    ) -> Any:
        """`fn(params_i, *args_i)` for every agent i, as `jax.vmap` over the agent axis.

        `in_axes` gives the agent axis of each arg (None: the same for all agents, passed
        whole), `out_axes` of the outputs (an int, or one per output). Shared parameters:
        the agents of each set are folded into the batch axis just before their agent axis
        (`[..., B, N_s, ...] -> [..., B * N_s, ...]`, so an agent axis is never 0), one call
        per set with no vmap, then the outputs put back in agent order. (XLA's CPU backend
        runs a vmapped recurrent scan about 30% slower, and a vmap over agents copies a set's
        weights to each of its agents and multiplies agent by agent: MF-Q's update on the
        128-agent battle, two sets, took 1.5x as long.) One set per agent: a vmap over agents.
        """
        n = self.num_agents
        if 1 < self.num_sets == n and np.array_equal(self.index, np.arange(n)):
            return jax.vmap(fn, in_axes=(0, *in_axes), out_axes=out_axes)(params, *args)
        single = isinstance(out_axes, int)
        axes = (out_axes,) if single else tuple(out_axes)
        outs = []  # per set: its outputs, each with the set's agents at its agent axis
        for s in range(self.num_sets):
            agents = np.flatnonzero(self.index == s)
            if len(agents) == 0:
                continue
            one = jax.tree.map(lambda p, s=s: p[s], params)
            folded = [
                a
                if ax is None
                else jax.tree.map(lambda x, ax=ax, ag=agents: _fold(_take(x, ag, ax), ax), a)
                for a, ax in zip(args, in_axes, strict=True)
            ]
            out, k = fn(one, *folded), len(agents)
            outs.append(
                tuple(
                    jax.tree.map(lambda y, ax=ax, k=k: _unfold(y, ax, k), o)
                    for o, ax in zip((out,) if single else out, axes, strict=True)
                )
            )
        merged = outs[0]
        if len(outs) > 1:  # set-major -> agent order
            order = np.argsort(np.argsort(self.index, kind="stable"))
            merged = tuple(
                jax.tree.map(
                    lambda *ys, ax=ax: _take(jnp.concatenate(ys, axis=ax), order, ax),
                    *(o[i] for o in outs),
                )
                for i, ax in enumerate(axes)
            )
        return merged[0] if single else merged


def _take(x: Array, idx: np.ndarray, axis: int) -> Array:
    """`x`'s entries `idx` (static) along `axis`: a slice where they are a range, else a gather."""
    if len(idx) == x.shape[axis] and np.array_equal(idx, np.arange(len(idx))):
        return x
    if np.array_equal(idx, np.arange(idx[0], idx[0] + len(idx))):
        return jax.lax.slice_in_dim(x, int(idx[0]), int(idx[0]) + len(idx), axis=axis)
    return jnp.take(x, idx, axis=axis)


def _fold(x: Array, axis: int) -> Array:
    """Merge the agent axis `axis` into the batch axis before it: [.., B, N, ..] -> [.., BN, ..]."""
    if axis < 1:
        raise ValueError(f"agent axis {axis} has no batch axis before it to fold into")
    return x.reshape(*x.shape[: axis - 1], x.shape[axis - 1] * x.shape[axis], *x.shape[axis + 1 :])


def _unfold(y: Array, axis: int, n: int) -> Array:
    """Split the folded batch axis back into (B, N), N at `axis`."""
    return y.reshape(*y.shape[: axis - 1], y.shape[axis - 1] // n, n, *y.shape[axis:])


def agent_ids(num_agents: int, shape: tuple[int, ...], agent_axis: int) -> Array:
    """One-hot agent ids broadcast to `shape` (with `[..., N, ...]` at `agent_axis`) + [N]."""
    eye = jnp.eye(num_agents, dtype=jnp.float32)
    lead = [1] * len(shape)
    lead[agent_axis] = num_agents
    eye = eye.reshape(*lead, num_agents)
    return jnp.broadcast_to(eye, (*shape, num_agents))
