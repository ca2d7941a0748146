"""The update loop every replay learner shares (IQL, VDN, QMIX, IL, MF-Q): a rollout into the
buffer, then `train_steps` gradient steps from it once it holds a batch, then the target
network. pymarl's `learner.train` and mfrl's `update` in one function each; the learners give
the rollout, one gradient step and their schedules' metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .qlearning import keep_if, update_target

Array = jax.Array
Metrics = dict[str, Array]
# ((online params, optimiser state), (key, gradient step index)) -> (the same, metrics)
GradStep = Callable[[tuple[Any, Any], tuple[Array, Array]], tuple[tuple[Any, Any], Metrics]]


class Learned(NamedTuple):
    """What one `replay_update` leaves: the next key, parameters, optimiser state, target
    parameters and update count, and the update's metrics."""

    key: Array
    online: Any
    opt_state: Any
    target: Any
    updates: Array
    metrics: Metrics


def replay_update(
    key: Array,
    online: Any,
    opt_state: Any,
    target: Any,
    updates: Array,
    grad_step: GradStep,
    stored: Array,
    cfg: Any,
) -> Learned:
    """`cfg.train_steps` gradient steps (a scan of `grad_step` over its keys and indices), kept
    only once the buffer's `stored` count reaches `cfg.batch_size`; then the update count and
    the target network (a hard copy every `cfg.target_update_interval` updates, or Polyak
    averaging at rate `cfg.tau`). The metrics are the steps' means, plus `learning` (1 once
    the buffer holds a batch)."""
    train_steps = cfg.train_steps
    ready = stored >= cfg.batch_size
    key, k_learn = jax.random.split(key)
    (new_online, new_opt), m = jax.lax.scan(
        grad_step,
        (online, opt_state),
        (jax.random.split(k_learn, train_steps), jnp.arange(train_steps)),
    )
    online, opt_state = keep_if(ready, (new_online, new_opt), (online, opt_state))
    updates = updates + 1
    target = update_target(target, online, updates, cfg.tau, cfg.target_update_interval)
    metrics = {k: jnp.mean(v) for k, v in m.items()}
    metrics["learning"] = ready.astype(jnp.float32)
    return Learned(key, online, opt_state, target, updates, metrics)


def replay_step(
    collect: Callable[[Any], tuple[Any, Metrics]],
    learn: Callable[[Any], tuple[Any, Metrics]],
    train_steps: int,
    schedules: Callable[[Any], Metrics],
) -> Callable[[Any], tuple[Any, Metrics]]:
    """`train.step`: collect, learn (unless `train_steps` is 0), then the schedules' metrics."""

    def step(state: Any) -> tuple[Any, Metrics]:
        state, metrics = collect(state)
        if train_steps:
            state, learn_metrics = learn(state)
            metrics = {**metrics, **learn_metrics}
        return state, {**metrics, **schedules(state)}

    return step
