"""Pieces shared by value-based learners (IQL, VDN, QMIX): exploration, double-Q and TD(lambda)
targets over padded episodes, masked TD loss, target-network updates.

Shapes: `T` steps of one padded episode (vmap over episodes), `N` agents, `A` actions. Step
`t`'s "next" quantities refer to the state after step `t` (the real final state at the last
step of a truncated episode).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array


def epsilon_greedy(key: Array, q: Array, avail: Array, epsilon: float | Array) -> Array:
    """Per agent: a uniformly random AVAILABLE action with prob. `epsilon`, else the greedy one.

    Args:
        q: [..., A] action values (e.g. [N, A]); avail: [..., A] bool, at least one True per row.
    Returns:
        [...] int32 actions, always available.
    """
    avail = avail.astype(bool)
    k_explore, k_random = jax.random.split(key)
    greedy = jnp.argmax(jnp.where(avail, q, -jnp.inf), axis=-1)
    random = jax.random.categorical(k_random, jnp.where(avail, 0.0, -jnp.inf), axis=-1)
    explore = jax.random.uniform(k_explore, greedy.shape) < epsilon
    return jnp.where(explore, random, greedy).astype(jnp.int32)


def double_q_values(q_online_next: Array, q_target_next: Array, avail_next: Array) -> Array:
    """Double Q: `Q_target(s', argmax_{a available} Q_online(s', a))`.

    Args: all [..., A] (avail bool). Returns [...].
    """
    a_star = jnp.argmax(jnp.where(avail_next.astype(bool), q_online_next, -jnp.inf), axis=-1)
    return jnp.take_along_axis(q_target_next, a_star[..., None], axis=-1)[..., 0]


def _expand(x: Array, like: Array) -> Array:
    return x.reshape(x.shape + (1,) * (like.ndim - x.ndim))


def td_lambda_targets(
    rewards: Array,
    terminated: Array,
    mask: Array,
    next_values: Array,
    gamma: float,
    lam: float,
) -> Array:
    """Lambda returns over one padded episode (pymarl's `build_td_lambda_targets`).

    `G_t = r_t + gamma (1 - term_t) [(1 - lam) V_{t+1} + lam G_{t+1}]`, where the recursion uses
    `V_{t+1}` alone (one-step) at the episode's last valid step; `lam = 0` gives one-step
    targets. A truncated last step (terminated False) bootstraps from `V_{t+1}`.

    Args:
        rewards:     [T] or [T, ...] (e.g. [T, N] for independent learners).
        terminated:  [T] bool, the episode terminated at step t (no bootstrap).
        mask:        [T] bool, step t is a real step (False for padding after the end).
        next_values: [T, ...] value of the state after step t (e.g. double-Q, mixed or not).
    Returns:
        [T, ...] targets, zero on padded steps (exclude them with `masked_td_loss`).
    """
    next_values = jnp.where(_expand(mask, next_values), next_values, 0.0)
    rewards = jnp.broadcast_to(_expand(rewards, next_values), next_values.shape)
    not_term = 1.0 - _expand(terminated, next_values).astype(next_values.dtype)
    valid = _expand(mask, next_values).astype(next_values.dtype)
    # the recursion continues to t + 1 only when step t + 1 is a real step
    cont = jnp.concatenate([valid[1:], jnp.zeros_like(valid[:1])], axis=0)

    def body(g_next, xs):
        r, nt, v, c, m = xs
        boot = (1.0 - lam * c) * v + lam * c * g_next
        g = m * (r + gamma * nt * boot)
        return g, g

    xs = (rewards, not_term, next_values, cont, valid)
    _, targets = jax.lax.scan(body, jnp.zeros_like(next_values[0]), xs, reverse=True)
    return targets


def double_q_targets(
    rewards: Array,
    terminated: Array,
    mask: Array,
    q_online_next: Array,
    q_target_next: Array,
    avail_next: Array,
    gamma: float,
    mix: Callable[[Array], Array] | None = None,
    lam: float = 0.0,
) -> Array:
    """Double-Q targets `r_t + gamma (1 - term_t) Q_target(s_{t+1}, argmax_avail Q_online)`.

    Args:
        rewards, terminated, mask: [T] (see `td_lambda_targets`).
        q_online_next, q_target_next: [T, N, A] (or [T, A]) Q of the state after step t.
        avail_next:  [T, N, A] actions available in the state after step t.
        mix:         optional `[T, N] -> [T]` (target mixer on the next states); without it
                     the targets are per agent, [T, N].
        lam:         TD(lambda) (0 = one-step).
    Returns:
        [T] (mixed) or [T, N] targets; zero on padded steps. Treat as constants (stop_gradient).
    """
    next_values = double_q_values(q_online_next, q_target_next, avail_next)
    if mix is not None:
        next_values = mix(next_values)
    return td_lambda_targets(rewards, terminated, mask, next_values, gamma, lam)


def masked_td_loss(q_taken: Array, targets: Array, mask: Array) -> Array:
    """Mean squared TD error over real steps: `sum(mask * (q - stop_grad(y))^2) / sum(mask)`.

    Args: q_taken, targets [T, ...] or [B, T, ...]; mask broadcastable from the left ([T] or
    [B, T]). Returns a scalar.
    """
    mask = jnp.broadcast_to(_expand(mask, q_taken), q_taken.shape).astype(q_taken.dtype)
    err = q_taken - jax.lax.stop_gradient(targets)
    return jnp.sum(mask * err**2) / jnp.maximum(jnp.sum(mask), 1.0)


def soft_update(target: Any, online: Any, tau: float) -> Any:
    """Polyak averaging: `tau * online + (1 - tau) * target`."""
    return jax.tree.map(lambda t, o: tau * o + (1.0 - tau) * t, target, online)


def update_target(target: Any, online: Any, updates: Array, tau: float | None, interval: int):
    """The target network after update number `updates`: Polyak with `tau`, or (tau None) a
    hard copy every `interval` updates."""
    if tau is not None:
        return soft_update(target, online, tau)
    copy = updates % interval == 0
    return jax.tree.map(lambda o, t: jnp.where(copy, o, t), online, target)


def keep_if(ready: Array, new: Any, old: Any) -> Any:
    """`new` where `ready` ([] bool), else `old` (pytrees): gate updates on a warm buffer."""
    return jax.tree.map(lambda n, o: jnp.where(ready, n, o), new, old)
