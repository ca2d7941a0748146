"""Networks shared by the learners: MLP and GRU torsos, policy and value heads. The masked
action distributions the heads return live in `marl.learning.distributions`, the per-agent
parameter sets in `marl.learning.agent_params`; both are re-exported here.

Every module maps inputs with a leading time axis `[T, B, ...]` (T = 1 when acting) and a
recurrent carry `[B, H]`; feed-forward torsos pass the carry through unchanged, so a learner is
written once for both. `resets [T, B]` marks the steps that start an episode: a GRU zeroes its
hidden state there before reading the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from marl.learning.agent_params import AgentParams, agent_ids
from marl.learning.distributions import (
    NEG_INF,
    Distribution,
    MaskedCategorical,
    MaskedDiagGaussian,
)

__all__ = [
    "ACTION_STDS",
    "ACTIVATIONS",
    "HARL_STD",
    "MLP",
    "NEG_INF",
    "Actor",
    "AgentParams",
    "Critic",
    "Distribution",
    "MaskedCategorical",
    "MaskedDiagGaussian",
    "QNetwork",
    "ResetGRU",
    "Torso",
    "agent_ids",
    "ortho",
]

Array = jax.Array

ACTIVATIONS = {"relu": nn.relu, "tanh": nn.tanh, "gelu": nn.gelu, "elu": nn.elu}


def ortho(scale: float = np.sqrt(2)) -> Any:
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

        def step(h: Array, xs: Any) -> tuple[Array, Array]:
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

    def __call__(self, carry: Array, obs: Array, resets: Array, avail: Array) -> tuple[Array, Any]:
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

    def _outputs(self, carry: Array, x: Array, resets: Array, width: int) -> tuple[Array, Array]:
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
