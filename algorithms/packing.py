"""Packing short episodes into shared rows, so a recurrent Q-learner unrolls fewer padded steps.

A batch of `E` padded episodes `[E, T+1, ...]` becomes `E / k` rows of `k` episodes each, laid
end to end: `[E / k, k (T+1), ...]`. An episode of `L` steps takes `L + 1` state rows (its final
state included, as stored) and `L + 1` step slots, the last of which is a padded step
(`filled` False) sitting on its final state, so:

- row `t + 1` is still the state after step `t` of every real step (bootstrapping unchanged);
- a TD(lambda) recursion stops at each episode's end (the padded step after it);
- a GRU restarts from zeros where `resets` is True (each episode's first row), and the
  last-action input is "none" there.

The loss over the packed rows is therefore the loss over the episodes, term for term. Episodes
are sorted by length and dealt to rows in a snake order, which evens out the rows' lengths.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .replay import Episode

Array = jax.Array


def pack(batch: Episode, per_row: int) -> tuple[Episode, Array]:
    """`batch [E, T+1, ...]` -> (packed episodes `[E/k, k(T+1), ...]`, resets `[E/k, k(T+1)]`).

    `per_row` (`k`) must divide `E`. The packed episodes' step arrays have `k(T+1) - 1` steps.
    """
    e, t1 = batch.obs.shape[:2]
    k = per_row
    if e % k:
        raise ValueError(f"cannot pack {e} episodes {k} to a row")
    rows, t = e // k, t1 - 1
    lengths = jnp.sum(batch.filled, axis=1).astype(jnp.int32)  # [E]
    # deal the episodes, longest first, to rows in a snake order: row r of round j gets
    # sorted[j * rows + r] on even rounds and sorted[j * rows + rows - 1 - r] on odd ones
    order = jnp.argsort(-lengths)
    r = jnp.arange(rows)
    slot = jnp.stack([r if j % 2 == 0 else rows - 1 - r for j in range(k)], axis=1)
    members = order[slot + rows * jnp.arange(k)]  # [R, k] episode indices
    sizes = lengths[members] + 1  # [R, k] state rows (= step slots) each takes
    starts = jnp.cumsum(sizes, axis=1) - sizes  # [R, k]

    width = k * t1
    pos = jnp.arange(width)
    # which member covers each position: the last one starting at or before it
    member = jnp.sum(pos[None, :, None] >= starts[:, None, :], axis=-1) - 1  # [R, W]
    start = jnp.take_along_axis(starts, member, axis=1)
    src = jnp.take_along_axis(members, member, axis=1)  # [R, W] source episode
    s = pos[None] - start  # [R, W] step within the source episode
    size = jnp.take_along_axis(sizes, member, axis=1)
    in_episode = s < size  # a state row of the member (past the row's last: padding)
    s_row = jnp.minimum(s, t)
    s_step = jnp.minimum(s, t - 1)

    def rows_of(x):  # [E, T+1, ...] -> [R, W, ...]
        return x[src, s_row]

    step_src, step_s = src[:, :-1], s_step[:, :-1]
    real = (s < size - 1)[:, :-1]  # a real step (not the padded one after each episode)

    def steps_of(x):  # [E, T, ...] -> [R, W-1, ...], zero off real steps
        y = x[step_src, step_s]
        return jnp.where(real.reshape(real.shape + (1,) * (y.ndim - 2)), y, jnp.zeros_like(y))

    packed = Episode(
        obs=rows_of(batch.obs),
        state=rows_of(batch.state),
        avail=rows_of(batch.avail),
        actions=steps_of(batch.actions),
        rewards=steps_of(batch.rewards),
        terminated=steps_of(batch.terminated),
        filled=real,
    )
    resets = (s == 0) | ~in_episode
    return packed, resets
