"""Vectorised hyperparameter sweeps: learner settings that keep the program's shapes (learning
rates, entropy coefficients, epsilon schedules, ...) vmapped together with the seeds.

`marl sweep ... vmap=algo.lr:1e-4,3e-4,1e-3` trains the 3 values x `seeds` seeds as ONE program
of 3 x seeds members (member `c * seeds + k`: value combination c, seed k, on seed k's key), then
writes one run directory per value combination, as if each had been its own run. The learner is
built inside the traced step with the member's values in its config (`make_train` is pure
Python, so a traced float flows through optimizers and losses like a constant would); a setting
that decides the program's structure or shapes (sizes, flags, the number of epochs) cannot be
traced and fails before compiling with its name.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train


class HyperError(ValueError):
    """A malformed `vmap=` override or a setting that cannot be vmapped."""


def parse(specs: Sequence[str]) -> dict[str, list[float]]:
    """`["algo.lr:1e-4,3e-4", ...]` -> {"lr": [1e-4, 3e-4], ...} (learner settings only)."""
    grid: dict[str, list[float]] = {}
    for spec in specs:
        key, sep, values = spec.partition(":")
        if not sep or not key.startswith("algo.") or not values:
            raise HyperError(
                f"vmap={spec}: expected vmap=algo.KEY:V1,V2,... (a learner setting and its values)"
            )
        name = key.removeprefix("algo.")
        try:
            numbers = [float(v) for v in values.split(",")]
        except ValueError:
            raise HyperError(f"vmap={spec}: values must be numbers") from None
        if name in grid:
            raise HyperError(f"vmap: algo.{name} given twice")
        grid[name] = numbers
    return grid


def combinations(grid: dict[str, list[float]]) -> list[dict[str, float]]:
    """Every combination of the grid's values, the first key varying slowest."""
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*grid.values())]


def hyper_train(
    make_train: Callable[..., Train],
    env: MultiAgentEnv,
    algo_cfg: dict[str, Any],
    total_updates: int | None,
) -> Train:
    """A Train whose state carries its member's swept values ({name: [] float32}) next to the
    learner's state; `init` takes `(key, values)`. Acting and parameters are the learner's
    (built once with `algo_cfg`)."""
    base = make_train(env, dict(algo_cfg), total_updates)

    def build(values: dict[str, jax.Array]) -> Train:
        return make_train(env, {**algo_cfg, **values}, total_updates)

    def init(inputs: tuple[jax.Array, dict[str, jax.Array]]) -> Any:
        key, values = inputs
        return values, build(values).init(key)

    def step(state: Any) -> tuple[Any, dict[str, jax.Array]]:
        values, inner = state
        inner, metrics = build(values).step(inner)
        return (values, inner), metrics

    return Train(
        init=init,
        step=step,
        params=lambda state: base.params(state[1]),
        policy=base.policy,
        steps_per_update=base.steps_per_update,
        num_envs=base.num_envs,
        config=base.config,
    )


def member_inputs(
    keys: jax.Array, combos: Sequence[dict[str, float]]
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """`(keys [C * S], {name: [C * S]})`: combination c with seed k at member c * S + k."""
    seeds = keys.shape[0]
    tiled = jnp.concatenate([keys] * len(combos))
    values = {
        name: jnp.asarray(np.repeat([c[name] for c in combos], seeds), jnp.float32)
        for name in combos[0]
    }
    return tiled, values


def check_traceable(
    make_train: Callable[..., Train],
    env: MultiAgentEnv,
    algo_cfg: dict[str, Any],
    total_updates: int | None,
    names: Sequence[str],
) -> None:
    """Trace one init and step with the `names` as traced values (nothing compiles); a
    setting the learner needs as a Python value fails here, named."""
    train = hyper_train(make_train, env, algo_cfg, total_updates)
    values = {n: jax.ShapeDtypeStruct((), jnp.float32) for n in names}
    try:
        jax.eval_shape(lambda k, v: train.step(train.init((k, v))), jax.random.key(0), values)
    except (
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerBoolConversionError,
        jax.errors.TracerIntegerConversionError,
        TypeError,
    ) as e:
        raise HyperError(
            f"vmap: {', '.join('algo.' + n for n in names)} cannot be vmapped: the learner "
            f"needs it as a Python value (it shapes the program): {type(e).__name__}"
        ) from None


def split_members(tree: Any, combo: int, seeds: int) -> Any:
    """The members of combination `combo` (leading axis sliced) of a [C * S, ...] pytree."""
    return jax.tree.map(lambda x: x[combo * seeds : (combo + 1) * seeds], tree)
