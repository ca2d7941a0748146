"""What the PettingZoo adapters share: building an env from an id or an env object, and an
env's compiled reset and step, kept on the env object (`compiled_programs`). No pettingzoo
import: `MarlVectorEnv` works without it."""

from __future__ import annotations

from typing import Any

import jax

from marl.core.env import MultiAgentEnv
from marl.core.registry import make


def resolve_env(env: MultiAgentEnv | str, kwargs: dict[str, Any]) -> MultiAgentEnv:
    """The registry's env of an id, built with `kwargs`; an env object as given (no keywords)."""
    if isinstance(env, str):
        return make(env, **kwargs)
    if kwargs:
        raise TypeError("keywords are for an env id, not an env object")
    return env


_OWNED = "_pettingzoo_programs"  # the attribute of an env that holds its adapters' programs


def _host(ts: Any, discrete: bool) -> tuple[Any, ...]:
    """What a `ParallelEnv` returns of a TimeStep: obs, reward, alive, the action masks
    (discrete; None otherwise), terminated, truncated. The state and the rest stay on device."""
    avail = ts.avail_actions if discrete else None
    return ts.obs, ts.reward, ts.alive, avail, ts.terminated, ts.truncated


def compiled_programs(env: MultiAgentEnv) -> tuple[Any, Any]:
    """Jitted reset and step of `env` for its adapters, kept on the env object itself: every
    adapter over one env shares them (a PettingZoo test builds several, each compiling once),
    and they go when the env goes (no module-level cache keeps envs alive). Each takes the
    adapter's key and returns the next one with its results, so a step is one call."""
    owned = env.__dict__.get(_OWNED)
    if owned is not None:
        return owned
    discrete = env.spec.discrete

    def reset(key: jax.Array) -> tuple[Any, ...]:
        key, sub = jax.random.split(key)
        state, ts = env.reset(sub)
        return key, state, _host(ts, discrete), ts.state

    def step(key: jax.Array, state: Any, actions: jax.Array) -> tuple[Any, ...]:
        key, sub = jax.random.split(key)
        state, ts = env.step(sub, state, actions)
        return key, state, _host(ts, discrete), ts.state

    owned = (jax.jit(reset), jax.jit(step))
    env.__dict__[_OWNED] = owned
    return owned
