"""Array helpers for particle observations and rewards (agents on the leading axis)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def others(n: int) -> np.ndarray:
    """[n, n-1] for each agent the indices of the other agents, in order."""
    idx = np.arange(n)
    return np.stack([np.delete(idx, i) for i in range(n)]) if n > 1 else np.zeros((n, 0), int)


def relative(pos: jax.Array, viewers: np.ndarray, targets: np.ndarray) -> jax.Array:
    """Positions of `targets` relative to each viewer, flattened.

    targets: [K] (same for every viewer) or [V, K] (per viewer). Returns [V, 2K].
    """
    viewers = np.asarray(viewers)
    targets = np.asarray(targets)
    tgt = pos[targets] if targets.ndim == 2 else pos[targets][None]
    rel = tgt - pos[viewers][:, None, :]
    return rel.reshape(len(viewers), -1)


def pad_to(x: jax.Array, width: int) -> jax.Array:
    """Zero-pad the last axis of [V, k] to [V, width]."""
    return jnp.pad(x, ((0, 0), (0, width - x.shape[-1])))


def stack_groups(parts: list[tuple[np.ndarray, jax.Array]], n: int, width: int) -> jax.Array:
    """Assemble [n, width] observations from (agent indices, [len, k] obs) per group."""
    out = jnp.zeros((n, width), parts[0][1].dtype)
    for idx, obs in parts:
        out = out.at[np.asarray(idx)].set(pad_to(obs, width))
    return out


def bound_penalty(pos: jax.Array) -> jax.Array:
    """[V] mpe2's out-of-arena penalty summed over both axes (tag, world_comm)."""
    x = jnp.abs(pos)
    pen = jnp.where(
        x < 0.9, 0.0, jnp.where(x < 1.0, (x - 0.9) * 10, jnp.minimum(jnp.exp(2 * x - 2), 10))
    )
    return jnp.sum(pen, axis=-1)
