"""Networks shared by the learners: MLP and GRU torsos, policy and value heads, action
distributions with masks, and per-agent parameter sets.

Every module maps inputs with a leading time axis `[T, B, ...]` (T = 1 when acting) and a
recurrent carry `[B, H]`; feed-forward torsos pass the carry through unchanged, so a learner is
written once for both. `resets [T, B]` marks the steps that start an episode: a GRU zeroes its
hidden state there before reading the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

Array = jax.Array

ACTIVATIONS = {"relu": nn.relu, "tanh": nn.tanh, "gelu": nn.gelu, "elu": nn.elu}
NEG_INF = -1e9  # logit of an unavailable action


def ortho(scale: float = np.sqrt(2)):
    return nn.initializers.orthogonal(scale)


class MLP(nn.Module):
    """Dense layers with orthogonal init; applies to the last axis."""

    hidden: Sequence[int]
    activation: str = "relu"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: Array) -> Array:
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = nn.Dense(width, kernel_init=ortho(), bias_init=nn.initializers.zeros)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = act(x)
        return x


class _Projection(nn.Module):
    """One of `nn.GRUCell`'s dense layers as parameters only (its names, shapes and
    initialisers), so that `ResetGRU` can apply the three gates in one product."""

    features: int
    bias: bool
    kernel_init: Any

    @nn.compact
    def __call__(self, in_dim: int) -> tuple[Array, Array]:
        kernel = self.param("kernel", self.kernel_init, (in_dim, self.features), jnp.float32)
        if not self.bias:
            return kernel, jnp.zeros((self.features,), jnp.float32)
        return kernel, self.param("bias", nn.initializers.zeros_init(), (self.features,))


class _GRUParams(nn.Module):
    """`nn.GRUCell`'s parameter tree (ir, iz, in with biases; hr, hz without; hn with) ->
    the input and the recurrent (kernel, bias) of each gate, in order r, z, n."""

    hidden: int

    @nn.compact
    def __call__(self, in_dim: int) -> tuple[list, list]:
        i = [_Projection(self.hidden, True, ortho(1.0), name=f"i{g}")(in_dim) for g in "rzn"]
        h = [
            _Projection(self.hidden, g == "n", ortho(1.0), name=f"h{g}")(self.hidden) for g in "rzn"
        ]
        return i, h


class ResetGRU(nn.Module):
    """A GRU (flax's `GRUCell` equations and parameters) scanned over time, zeroing the hidden
    state where `resets` is True.

    Call: `(carry [B, H], (x [T, B, D], resets [T, B])) -> (carry [B, H], y [T, B, H])`.
    The gates' input projections for all T steps are taken before the scan, which keeps
    only the recurrent products in it (the GRU's gradient ~10% faster on CPU than scanning
    `nn.GRUCell`).
    """

    hidden: int

    @nn.compact
    def __call__(self, carry: Array, inputs: tuple[Array, Array]) -> tuple[Array, Array]:
        x, resets = inputs
        proj_i, (hr, hz, hn) = _GRUParams(self.hidden, name="GRUCell_0")(x.shape[-1])
        xi = tuple(x @ k + b for k, b in proj_i)  # r, z, n: each [T, B, H]

        def step(h, xs):
            (xr, xz, xn), reset = xs
            h = jnp.where(reset[:, None], jnp.zeros_like(h), h)
            r = nn.sigmoid(xr + h @ hr[0])
            z = nn.sigmoid(xz + h @ hz[0])
            n = jnp.tanh(xn + r * (h @ hn[0] + hn[1]))
            h = (1.0 - z) * n + z * h
            return h, h

        return jax.lax.scan(step, carry, (xi, resets))


class Torso(nn.Module):
    """Encoder MLP, optionally followed by a GRU: `(carry, x [T,B,D], resets) -> (carry, h)`."""

    hidden: Sequence[int]
    activation: str = "relu"
    recurrent: bool = False
    gru_hidden: int = 128
    layer_norm: bool = False
    feature_norm: bool = False  # layer norm of the inputs (MAPPO/HARL use_feature_normalization)

    @nn.compact
    def __call__(self, carry: Array, x: Array, resets: Array) -> tuple[Array, Array]:
        if self.feature_norm:
            x = nn.LayerNorm()(x)
        h = MLP(
            self.hidden[:1] if self.recurrent else self.hidden, self.activation, self.layer_norm
        )(x)
        if self.recurrent:
            carry, h = ResetGRU(self.gru_hidden)(carry, (h, resets))
            if len(self.hidden) > 1:
                h = MLP(self.hidden[1:], self.activation, self.layer_norm)(h)
        return carry, h

    def initial_carry(self, batch: int) -> Array:
        """[B, H] zeros (H = gru_hidden, or 1 for a feed-forward torso)."""
        return jnp.zeros((batch, self.gru_hidden if self.recurrent else 1), jnp.float32)


# --- action distributions ---------------------------------------------------------------------


class MaskedCategorical(struct.PyTreeNode):
    """Categorical over `[..., A]` logits; unavailable actions already hold `NEG_INF`.

    Build with `MaskedCategorical.create(logits, avail)`. A pytree, so vmap can return it.
    """

    logits: Array

    @classmethod
    def create(cls, logits: Array, avail: Array) -> MaskedCategorical:
        return cls(jnp.where(avail, logits, NEG_INF))

    def sample(self, key: Array) -> Array:
        return jax.random.categorical(key, self.logits, axis=-1).astype(jnp.int32)

    def mode(self) -> Array:
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)

    def log_prob(self, action: Array) -> Array:
        logp = jax.nn.log_softmax(self.logits, axis=-1)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> Array:
        p = jax.nn.softmax(self.logits, axis=-1)
        logp = jax.nn.log_softmax(self.logits, axis=-1)
        return -jnp.sum(jnp.where(p > 0, p * logp, 0.0), axis=-1)


class MaskedDiagGaussian(struct.PyTreeNode):
    """Diagonal Gaussian over `[..., d]`; dims where `mask` is False are ignored (padding)."""

    mean: Array
    log_std: Array
    mask: Array

    @classmethod
    def create(cls, mean: Array, log_std: Array, mask: Array) -> MaskedDiagGaussian:
        return cls(mean, jnp.broadcast_to(log_std, mean.shape), mask)

    def _normal(self) -> distrax.Normal:
        return distrax.Normal(self.mean, jnp.exp(self.log_std))

    def sample(self, key: Array) -> Array:
        return jnp.where(self.mask, self._normal().sample(seed=key), 0.0)

    def mode(self) -> Array:
        return jnp.where(self.mask, self.mean, 0.0)

    def log_prob(self, action: Array) -> Array:
        return jnp.sum(jnp.where(self.mask, self._normal().log_prob(action), 0.0), axis=-1)

    def entropy(self) -> Array:
        return jnp.sum(jnp.where(self.mask, self._normal().entropy(), 0.0), axis=-1)


Distribution = MaskedCategorical | MaskedDiagGaussian


# --- heads ------------------------------------------------------------------------------------


ACTION_STDS = ("exp", "harl")
HARL_STD = (1.0, 0.5)  # HARL's std_x_coef and std_y_coef (its defaults and every tuned config)


class Actor(nn.Module):
    """Policy network: `(carry, obs [T,B,D], resets [T,B], avail [T,B,A]) -> (carry, dist)`.

    Discrete: masked categorical over A logits. Continuous: diagonal Gaussian with a learned
    state-independent std per action dim; `avail` masks padded action dims. `std`: "exp"
    (std = exp(p), p starting at `init_log_std`; MAPPO's and PureJaxRL's) or "harl" (HARL's
    `DiagGaussian`: std = sigmoid(p / x) * y with x = 1, y = 0.5, p starting at x: std starts
    at 0.366 and stays below 0.5).
    """

    action_dim: int
    discrete: bool
    hidden: Sequence[int] = (128, 128)
    activation: str = "relu"
    recurrent: bool = False
    gru_hidden: int = 128
    layer_norm: bool = False
    init_log_std: float = -0.5
    feature_norm: bool = False
    std: str = "exp"

    def setup(self) -> None:
        self.torso = Torso(
            self.hidden,
            self.activation,
            self.recurrent,
            self.gru_hidden,
            self.layer_norm,
            self.feature_norm,
        )
        self.head = nn.Dense(
            self.action_dim, kernel_init=ortho(0.01), bias_init=nn.initializers.zeros
        )
        if not self.discrete:
            first = self.init_log_std if self.std == "exp" else HARL_STD[0]
            self.log_std = self.param(
                "log_std", nn.initializers.constant(first), (self.action_dim,)
            )

    def __call__(self, carry: Array, obs: Array, resets: Array, avail: Array):
        carry, h = self.torso(carry, obs, resets)
        out = self.head(h)
        if self.discrete:
            return carry, MaskedCategorical.create(out, avail)
        return carry, MaskedDiagGaussian.create(out, self._log_std(), avail)

    def _log_std(self) -> Array:
        if self.std == "exp":
            return self.log_std
        x, y = HARL_STD  # log(sigmoid(p / x) * y), computed stably
        return jax.nn.log_sigmoid(self.log_std / x) + jnp.log(y)


class Critic(nn.Module):
    """Value network: `(carry, x [T,B,D], resets [T,B]) -> (carry, value [T,B])`."""

    hidden: Sequence[int] = (128, 128)
    activation: str = "relu"
    recurrent: bool = False
    gru_hidden: int = 128
    layer_norm: bool = False
    feature_norm: bool = False

    def _outputs(self, carry: Array, x: Array, resets: Array, width: int):
        """Torso, then a linear layer of `width` outputs (orthogonal init, gain 1)."""
        carry, h = Torso(
            self.hidden,
            self.activation,
            self.recurrent,
            self.gru_hidden,
            self.layer_norm,
            self.feature_norm,
        )(carry, x, resets)
        return carry, nn.Dense(width, kernel_init=ortho(1.0), bias_init=nn.initializers.zeros)(h)

    @nn.compact
    def __call__(self, carry: Array, x: Array, resets: Array) -> tuple[Array, Array]:
        carry, v = self._outputs(carry, x, resets, 1)
        return carry, v[..., 0]


class QNetwork(Critic):
    """Action values: `(carry, x [T,B,D], resets [T,B]) -> (carry, q [T,B,A])`.

    The critic's torso with `action_dim` outputs; pymarl's RNN agent is `hidden=(64,)`,
    `recurrent=True`, `gru_hidden=64` (a ReLU layer, a GRU cell, a linear head).
    """

    action_dim: int = 1

    @nn.compact
    def __call__(self, carry: Array, x: Array, resets: Array) -> tuple[Array, Array]:
        return self._outputs(carry, x, resets, self.action_dim)


# --- per-agent parameter sets -----------------------------------------------------------------


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

    def init(self, init_fn, key: Array) -> Any:
        """Stacked parameters: `init_fn(key)` for each set, on a leading axis.

        `lax.map`, not `vmap`: batched QR (the orthogonal initialiser) can deadlock on XLA's
        CPU backend; init runs once, so the sequential loop costs nothing that matters.
        """
        return jax.lax.map(init_fn, jax.random.split(key, self.num_sets))

    def apply(self, fn, params: Any, *args: Any, in_axes: tuple, out_axes: Any) -> Any:
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
