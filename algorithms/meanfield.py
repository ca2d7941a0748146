"""Pieces of the mean-field learners (Yang et al. 2018, "Mean Field Multi-Agent Reinforcement
Learning"): the neighbourhood mean action, the Boltzmann policy and the mean-field value.

Shapes: `N` agents, `A` actions; leading batch axes are allowed everywhere.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def mean_action(weights: Array, actions: Array, num_actions: int) -> Array:
    """`abar_i = sum_k w_ik onehot(a_k) / sum_k w_ik`: `weights [..., N, N]`, `actions [..., N]`
    -> `[..., N, A]` (zeros for an agent without neighbours)."""
    onehot = jax.nn.one_hot(actions, num_actions, dtype=weights.dtype)
    total = jnp.sum(weights, axis=-1, keepdims=True)
    return (weights @ onehot) / jnp.maximum(total, 1e-9)


def boltzmann_logits(q: Array, avail: Array, temperature: Array | float) -> Array:
    """`Q / temperature` over the available actions, -inf elsewhere: `[..., A]`."""
    return jnp.where(avail.astype(bool), q / temperature, -jnp.inf)


def boltzmann_probs(q: Array, avail: Array, temperature: Array | float) -> Array:
    """`pi(a) ∝ exp(Q(a) / temperature)` over the available actions: `[..., A]`."""
    return jax.nn.softmax(boltzmann_logits(q, avail, temperature), axis=-1)


def mean_field_value(
    q_policy: Array, q_value: Array, avail: Array, temperature: Array | float, kind: str
) -> Array:
    """The value of the next state under the mean-field policy: `[..., A]` -> `[...]`.

    "boltzmann" (the paper's): `sum_a pi(a) q_value(a)` with `pi` the Boltzmann policy of
    `q_policy`; "max": `q_value` at the available argmax of `q_policy` (double-Q style).
    """
    if kind == "boltzmann":
        probs = boltzmann_probs(q_policy, avail, temperature)
        return jnp.sum(probs * jnp.where(avail.astype(bool), q_value, 0.0), axis=-1)
    if kind == "max":
        best = jnp.argmax(jnp.where(avail.astype(bool), q_policy, -jnp.inf), axis=-1)
        return jnp.take_along_axis(q_value, best[..., None], axis=-1)[..., 0]
    raise ValueError(f"unknown mean-field target {kind!r}; valid: boltzmann, max")


def value_samples(alive: Array, team_reward: Array | bool) -> Array:
    """[..., N] float32: the agents whose TD error trains a value at a step. Under per-agent
    rewards those alive at it (a dead agent's return ended at its death). Where an agent is
    paid its side's team reward (`team_reward` [N], `EnvSpec.team_reward`, or one bool) it
    counts dead too (acting no-op on its zero observation): its return runs on to the
    episode's end, and a one-step target bootstraps from the value of being dead, so that
    value must learn the side's remaining return (pymarl's per-episode mask on SMAC)."""
    return (alive | jnp.asarray(team_reward, bool)).astype(jnp.float32)
