"""A graph torso over the agents: learned messages between agents within communication range.

After "Learning to Communicate and Collaborate in a Competitive Multi-Agent Setup to Clean the
Ocean from Macroplastics" (Siedler 2023: a graph neural network over the vessels widens each
vessel's observation with what its neighbours share, a binary signal in one version): each
agent encodes its observation, then for `rounds` rounds every agent sends a message computed
from its features, hears the messages of the agents it is linked to (`adj[i, j]`: i hears j;
the diagonal never counts), aggregates them without regard to order (mean, sum or max over the
linked senders; nothing heard is zeros) and updates its features from its own and the
aggregate. With `signal=True` a message is binary (its units thresholded at 0 on the forward
pass, gradients through a sigmoid: the straight-through estimator).

`GraphActor` puts the torso in front of a policy network: each agent's actor reads its own
observation beside the torso's features for it, so what its neighbours send widens what it
sees. The PPO family builds it with `torso=graph` (links: the env's `neighbourhood`, e.g. the
vessels within communication range); a plugin learner can use it as it stands.

Ablations, for asking whether the messages carry information (`ablation`; None: none):
"zero" (nothing is heard), "shuffle" (each sender's message replaced by the next agent's: the
senders' identities broken, the messages' distribution kept).

Shapes are static: agents on an axis, links a dense boolean matrix, so the torso jits and
vmaps like the rest. It is permutation-equivariant over agents (relabel the agents and their
links, and the outputs are relabelled alike) and blind to agents it is not linked to
(tests/test_message_passing.py).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from .agent_params import _fold, _unfold
from .networks import ACTIVATIONS, ortho

Array = jax.Array
AGGREGATES = ("mean", "sum", "max")
ABLATIONS = ("zero", "shuffle")  # or None: messages as sent


def binary(x: Array) -> Array:
    """1 where `x > 0`, else 0, with the gradient of `sigmoid(x)` (straight-through)."""
    soft = jax.nn.sigmoid(x)
    return soft + jax.lax.stop_gradient((x > 0).astype(x.dtype) - soft)


def aggregate(messages: Array, adj: Array, how: str = "mean") -> Array:
    """What each agent hears: `messages` [..., N, M] from the senders linked to it by `adj`
    [..., N, N] (receiver i, sender j; the diagonal dropped), reduced over the senders ->
    [..., N, M]; zeros for an agent that hears nobody."""
    n = adj.shape[-1]
    links = (adj & ~jnp.eye(n, dtype=bool)).astype(messages.dtype)  # [..., N, N]
    if how == "max":
        heard = jnp.where(links[..., None] > 0, messages[..., None, :, :], -jnp.inf)
        out = jnp.max(heard, axis=-2)
        return jnp.where(jnp.isfinite(out), out, 0.0)
    total = jnp.einsum("...ij,...jm->...im", links, messages)
    if how == "sum":
        return total
    count = jnp.sum(links, axis=-1, keepdims=True)
    return total / jnp.maximum(count, 1.0)


class MessagePassing(nn.Module):
    """`(x [..., N, D], adj [..., N, N] bool) -> [..., N, hidden]`: encode, then `rounds` of
    send, aggregate (`mean`, `sum`, `max`) and update (module docstring)."""

    hidden: int = 64
    message_dim: int = 16
    rounds: int = 1
    how: str = "mean"
    signal: bool = False
    activation: str = "relu"
    ablation: str | None = None

    @nn.compact
    def __call__(self, x: Array, adj: Array) -> Array:
        if self.how not in AGGREGATES:
            raise ValueError(f"unknown aggregate {self.how!r}; valid: {', '.join(AGGREGATES)}")
        if self.ablation is not None and self.ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation {self.ablation!r}; valid: {', '.join(ABLATIONS)}")
        act = ACTIVATIONS[self.activation]
        dense = lambda w, name: nn.Dense(w, kernel_init=ortho(), name=name)  # noqa: E731
        h = act(dense(self.hidden, "encode")(x))
        for r in range(self.rounds):
            m = dense(self.message_dim, f"send_{r}")(h)
            m = binary(m) if self.signal else act(m)
            if self.ablation == "shuffle":
                m = jnp.roll(m, 1, axis=-2)
            heard = aggregate(m, adj, self.how)
            if self.ablation == "zero":
                heard = jnp.zeros_like(heard)
            h = act(dense(self.hidden, f"update_{r}")(jnp.concatenate([h, heard], axis=-1)))
        return h


class GraphActor(nn.Module):
    """`(carry [B, N, H], obs [T, B, N, D], adj [T, B, N, N] bool, resets [T, B, N], avail
    [T, B, N, A]) -> (carry, dist with leaves [T, B, N, ...])`: `graph` (a `MessagePassing`)
    over the agents, then `actor` (`marl.learning.networks.Actor`, one set of parameters for
    every agent) on each agent's observation beside its torso features."""

    graph: nn.Module
    actor: nn.Module

    def __call__(
        self, carry: Array, obs: Array, adj: Array, resets: Array, avail: Array
    ) -> tuple[Array, Any]:
        n = obs.shape[2]
        x = jnp.concatenate([obs, self.graph(obs, adj)], axis=-1)
        carry, dist = self.actor(_fold(carry, 1), _fold(x, 2), _fold(resets, 2), _fold(avail, 2))
        return _unfold(carry, 1, n), jax.tree.map(lambda y: _unfold(y, 2, n), dist)
