"""Pieces every on-policy learner shares: GAE, value normalisation, PPO losses, minibatches.

Shapes: `T` rollout steps, `B` parallel environments, `N` agents.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

Array = jax.Array


def gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    done: Array,
    gamma: float,
    lam: float,
) -> tuple[Array, Array]:
    """Generalised advantage estimation with termination and truncation kept apart.

    Args:
        rewards:     [T, B, ...] reward of step t.
        values:      [T, B, ...] V(s_t).
        next_values: [T, B, ...] V of the TRUE next state of step t: the next observation, or
                     the final observation when the episode ended at t (so a truncated episode
                     bootstraps from its real last state, not the next episode's first).
        terminated:  [T, B] the episode terminated at step t: no bootstrap.
        done:        [T, B] the episode ended at step t (terminated or truncated): the
                     advantage recursion stops there.
    Returns:
        (advantages, returns) each [T, B, ...], returns = advantages + values.
    """
    extra = values.ndim - terminated.ndim
    shape = terminated.shape + (1,) * extra
    not_term = 1.0 - terminated.reshape(shape).astype(values.dtype)
    not_done = 1.0 - done.reshape(shape).astype(values.dtype)
    deltas = rewards + gamma * next_values * not_term - values

    def body(next_adv, xs):
        delta, cont = xs
        adv = delta + gamma * lam * cont * next_adv
        return adv, adv

    _, adv = jax.lax.scan(body, jnp.zeros_like(deltas[0]), (deltas, not_done), reverse=True)
    return adv, adv + values


class ValueNorm(struct.PyTreeNode):
    """Running mean/std of value targets (MAPPO's ValueNorm: debiased EMA, beta 0.99999)."""

    mean: Array
    mean_sq: Array
    debias: Array

    @classmethod
    def create(cls) -> ValueNorm:
        z = jnp.zeros((), jnp.float32)
        return cls(z, z, z)

    def stats(self, eps: float = 1e-5) -> tuple[Array, Array]:
        debias = jnp.maximum(self.debias, eps)
        mean = self.mean / debias
        var = jnp.maximum(self.mean_sq / debias - mean**2, 1e-2)
        return mean, jnp.sqrt(var)

    def update(self, x: Array, weight: Array, beta: float = 0.99999) -> ValueNorm:
        w = jnp.maximum(jnp.sum(weight), 1.0)
        batch_mean = jnp.sum(x * weight) / w
        batch_sq = jnp.sum(x**2 * weight) / w
        return ValueNorm(
            beta * self.mean + (1 - beta) * batch_mean,
            beta * self.mean_sq + (1 - beta) * batch_sq,
            beta * self.debias + (1 - beta),
        )

    def normalize(self, x: Array) -> Array:
        mean, std = self.stats()
        return (x - mean) / std

    def denormalize(self, x: Array) -> Array:
        mean, std = self.stats()
        return x * std + mean


def masked_mean(x: Array, mask: Array) -> Array:
    """Mean of `x` over entries where `mask` (broadcast to x) is True."""
    mask = jnp.broadcast_to(mask, x.shape).astype(x.dtype)
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def normalize_advantages(adv: Array, mask: Array, eps: float = 1e-8) -> Array:
    """Zero-mean unit-std advantages over the valid entries."""
    mean = masked_mean(adv, mask)
    std = jnp.sqrt(masked_mean((adv - mean) ** 2, mask))
    return (adv - mean) / (std + eps)


def clipped_surrogate(
    log_prob: Array,
    old_log_prob: Array,
    advantages: Array,
    clip_eps: float,
    mask: Array,
    weight: Array | None = None,
) -> tuple[Array, dict[str, Array]]:
    """PPO's clipped objective as a loss: `-mean(w * min(r A, clip(r, 1 +- eps) A))`.

    `weight` is HAPPO's compounded ratio of the agents updated before (1 for PPO).
    """
    ratio = jnp.exp(log_prob - old_log_prob)
    w = 1.0 if weight is None else weight
    surr = jnp.minimum(ratio * advantages, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    loss = -masked_mean(w * surr, mask)
    metrics = {
        "approx_kl": masked_mean((ratio - 1) - (log_prob - old_log_prob), mask),
        "clip_frac": masked_mean((jnp.abs(ratio - 1) > clip_eps).astype(jnp.float32), mask),
    }
    return loss, metrics


def value_loss(
    values: Array,
    old_values: Array,
    targets: Array,
    mask: Array,
    clip_eps: float | None,
    huber_delta: float | None,
) -> Array:
    """Value loss with optional clipping around the old prediction and optional Huber error."""

    def err(pred):
        e = targets - pred
        if huber_delta is None:
            return 0.5 * e**2
        a = jnp.abs(e)
        return jnp.where(a <= huber_delta, 0.5 * e**2, huber_delta * (a - 0.5 * huber_delta))

    loss = err(values)
    if clip_eps is not None:
        clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
        loss = jnp.maximum(loss, err(clipped))
    return masked_mean(loss, mask)


def minibatch_indices(key: Array, num_envs: int, num_minibatches: int) -> Array:
    """[num_minibatches, num_envs // num_minibatches] a random split of the env axis."""
    if num_envs % num_minibatches:
        raise ValueError(f"num_envs {num_envs} not divisible by num_minibatches {num_minibatches}")
    perm = jax.random.permutation(key, num_envs)
    return perm.reshape(num_minibatches, -1)


def take_envs(tree: Any, idx: Array, axis: int) -> Any:
    """Select environments `idx` along `axis` of every leaf."""
    return jax.tree.map(lambda x: jnp.take(x, idx, axis=axis), tree)


def sgd_epochs(
    loss_fn, tx, params: Any, opt: Any, key: Array, epochs: int, num_envs: int, num_minibatches: int
):
    """`epochs` passes of `num_minibatches` gradient steps over a random split of the envs.

    `loss_fn(params, env_idx) -> (loss, aux)` builds its own minibatch from `env_idx`.
    Returns (params, opt, (losses, aux)) with leading axes [epochs, num_minibatches].
    """

    def epoch(carry, k):
        def minibatch(carry, idx):
            params, opt = carry
            (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, idx)
            updates, opt = tx.update(grads, opt, params)
            return (optax.apply_updates(params, updates), opt), (loss, aux)

        return jax.lax.scan(minibatch, carry, minibatch_indices(k, num_envs, num_minibatches))

    (params, opt), out = jax.lax.scan(epoch, (params, opt), jax.random.split(key, epochs))
    return params, opt, out
