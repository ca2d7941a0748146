"""Schedules, written once: the learning rate's linear annealing (every learner's `anneal_lr`)
and the linear exploration schedules (epsilon, Boltzmann temperature).

The annealed rate is `lr * linear_decay(step, total)`: 1 at step 0, 0 at `total` and after.
The PPO family counts steps with its optimiser (`learning_rate` is the optimiser's rate, as
optax's `linear_schedule`, bit for bit); the replay learners count the run's gradient steps
from the first update, warm-up updates (no gradient step while the buffer fills) included, so
that their rate too is 0 at the run's end: their optimiser's own count stands still during
warm-up, so they scale its updates by the same `linear_decay` (`scaled`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array


def linear_decay(step: Array, total: int) -> Array:
    """The share of the rate left at `step` of `total`: `1 - step / total`, clipped to [0, 1],
    and exactly 0 from `total` on (a compiler may divide by multiplying with the reciprocal,
    which leaves `1 - total / total` a rounding error off 0)."""
    step = jnp.clip(step, 0, total)
    return jnp.where(step >= total, 0.0, 1 - step / total)


def learning_rate(lr: float, anneal: bool, total_steps: int | None) -> float | Callable:
    """An optimiser's rate: `lr`, or with `anneal` (and the run's length known) `lr` decayed
    linearly to 0 over `total_steps` optimiser steps."""
    if not (anneal and total_steps):
        return lr
    return lambda count: lr * linear_decay(count, total_steps)


def scaled(updates: Any, step: Array, total_steps: int | None) -> Any:
    """`updates` (an optimiser's output) times `linear_decay(step, total_steps)`; `updates`
    unchanged when the run's length is unknown."""
    if not total_steps:
        return updates
    share = linear_decay(step, total_steps)
    return jax.tree.map(lambda u: u * share.astype(u.dtype), updates)


def linear(start: float, end: float, steps: int) -> Callable[[Array], Array]:
    """`f(count)`: linear from `start` at 0 to `end` at `steps`, constant afterwards."""

    def schedule(count: Array) -> Array:
        frac = jnp.clip(jnp.asarray(count, jnp.float32) / jnp.maximum(steps, 1), 0.0, 1.0)
        return start + frac * (end - start)

    return schedule
