"""The evaluator: whole episodes of a policy from fixed keys, inside one compiled program.

It knows a learner only through `marl.core.learner.Policy` and returns per-episode values, so the
protocol can aggregate them however it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array


def evaluate(
    env: MultiAgentEnv,
    policy: Policy,
    params: Any,
    key: Array,
    num_episodes: int,
    greedy: bool = True,
    trace: Callable[[Any, Array], Any] | None = None,
) -> dict[str, Array]:
    """Play `num_episodes` episodes in parallel (bare env, no auto-reset).

    Returns per-episode values, each [num_episodes] float32:
        return:          the team return, summed over agents and steps;
        return/<group>:  the same summed over one agent group's members (several groups only);
        length:          steps until the episode ended;
        <metric>:        each task metric at the episode's last step.
    With `trace`, a function `trace(state, actions) -> pytree` of the state acted in and the
    actions taken, also "trace": its value at every step, each leaf [num_episodes,
    episode_limit, ...] (steps after an episode ended included: mask them with `length`).
    """
    spec = env.spec
    groups = spec.groups

    def episode(k: Array) -> dict[str, Array]:
        k_reset, k_run = jax.random.split(k)
        state, ts = env.reset(k_reset)

        def body(carry, _):
            state, ts, h, ret, length, done, metrics, start, key = carry
            key, k_act, k_env = jax.random.split(key, 3)
            seen = state if policy.privileged else ts.obs
            extra = {"neighbours": env.neighbourhood(state)} if policy.neighbourhood else {}
            actions, h = policy.act(
                params, seen, ts.avail_actions, h, start, k_act, greedy, **extra
            )
            recorded = None if trace is None else trace(state, actions)
            state, nts = env.step(k_env, state, actions)
            active = jnp.logical_not(done)
            ret = ret + nts.reward * active
            length = length + active.astype(jnp.int32)
            ends = jnp.logical_and(active, nts.done)
            metrics = jax.tree.map(lambda new, old: jnp.where(ends, new, old), nts.metrics, metrics)
            done = jnp.logical_or(done, nts.done)
            return (state, nts, h, ret, length, done, metrics, jnp.zeros((), bool), key), recorded

        zeros = jax.tree.map(jnp.zeros_like, ts.metrics)
        init = (
            state,
            ts,
            policy.initial_carry(),
            jnp.zeros(spec.num_agents),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), bool),
            zeros,
            jnp.ones((), bool),
            k_run,
        )
        (_, _, _, ret, length, _, metrics, _, _), steps = jax.lax.scan(
            body, init, None, length=spec.episode_limit
        )
        out = {"return": jnp.sum(ret), "length": length.astype(jnp.float32)}
        if len(groups) > 1:
            for g in groups:
                out[f"return/{g.name}"] = jnp.sum(ret[jnp.asarray(g.agents)])
        out.update({k: v.astype(jnp.float32) for k, v in metrics.items()})
        if trace is not None:
            out["trace"] = steps
        return out

    return jax.vmap(episode)(jax.random.split(key, num_episodes))
