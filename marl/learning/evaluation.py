"""The evaluator: whole episodes of a policy from fixed keys, inside one compiled program.

It knows a learner only through `marl.core.learner.Policy` and returns per-episode values, so the
protocol can aggregate them however it needs.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from marl.core.env import MultiAgentEnv, TimeStep
from marl.core.learner import Policy
from marl.learning.acting import policy_actions, rollout

Array = jax.Array


class _Episode(struct.PyTreeNode):
    """One evaluation episode's rollout carry: the env, the policy's carry, the tallies."""

    env_state: Any
    timestep: TimeStep
    key: Array
    carry: Any
    start: Array  # [] the next step is the episode's first
    ret: Array  # [N] return so far, per agent
    length: Array  # [] steps until the episode ended
    done: Array  # [] the episode has ended
    metrics: dict[str, Array]  # task metrics at the episode's last step


def evaluate(
    env: MultiAgentEnv,
    policy: Policy,
    params: Any,
    key: Array,
    num_episodes: int,
    greedy: bool = True,
) -> dict[str, Array]:
    """Play `num_episodes` episodes in parallel (bare env, no auto-reset).

    Returns per-episode values, each [num_episodes] float32:
        return:          the team return, summed over agents and steps;
        return/<group>:  the same summed over one agent group's members (several groups only);
        length:          steps until the episode ended;
        <metric>:        each task metric at the episode's last step.
    """
    spec = env.spec
    groups = spec.groups

    def episode(k: Array) -> dict[str, Array]:
        k_reset, k_run = jax.random.split(k)
        state, ts = env.reset(k_reset)

        def act(c: _Episode, key: Array) -> tuple[Array, Any]:
            actions, h = policy_actions(
                env, policy, params, c.env_state, c.timestep, c.carry, c.start, key, greedy
            )
            return actions, h

        def record(
            c: _Episode, ts: TimeStep, actions: Array, h: Any, nts: TimeStep
        ) -> tuple[_Episode, None]:
            active = jnp.logical_not(c.done)
            ends = jnp.logical_and(active, nts.done)
            c = c.replace(
                carry=h,
                start=jnp.zeros((), bool),
                ret=c.ret + nts.reward * active,
                length=c.length + active.astype(jnp.int32),
                done=jnp.logical_or(c.done, nts.done),
                metrics=jax.tree.map(lambda n, o: jnp.where(ends, n, o), nts.metrics, c.metrics),
            )
            return c, None

        init = _Episode(
            env_state=state,
            timestep=ts,
            key=k_run,
            carry=policy.initial_carry(),
            start=jnp.ones((), bool),
            ret=jnp.zeros(spec.num_agents),
            length=jnp.zeros((), jnp.int32),
            done=jnp.zeros((), bool),
            metrics=jax.tree.map(jnp.zeros_like, ts.metrics),
        )
        end, _ = rollout(env.step, init, spec.episode_limit, act, record)
        ret, length, metrics = end.ret, end.length, end.metrics
        out = {"return": jnp.sum(ret), "length": length.astype(jnp.float32)}
        if len(groups) > 1:
            for g in groups:
                out[f"return/{g.name}"] = jnp.sum(ret[jnp.asarray(g.agents)])
        out.update({k: v.astype(jnp.float32) for k, v in metrics.items()})
        return out

    return jax.vmap(episode)(jax.random.split(key, num_episodes))
