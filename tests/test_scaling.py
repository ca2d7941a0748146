"""Agents live on an axis: the traced program does not grow with the number of agents."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import marl


def program_size(env) -> int:
    state, _ = jax.eval_shape(env.reset, jax.random.key(0))  # shapes only: nothing runs
    actions = jnp.zeros(env.spec.action_shape, env.spec.action_space.dtype)
    jaxpr = jax.make_jaxpr(env.step)(jax.random.key(1), state, actions)
    return len(jaxpr.eqns) + sum(
        len(e.params.get("jaxpr", jaxpr).eqns)
        if hasattr(e.params.get("jaxpr", None), "eqns")
        else 0
        for e in jaxpr.eqns
    )


@pytest.mark.parametrize(
    "env_id,small,large",
    [
        ("particle/spread", {"num_agents": 3}, {"num_agents": 50}),
        ("particle/tag", {"num_adversaries": 3}, {"num_adversaries": 60, "num_good": 20}),
        ("particle/adversary", {"num_good": 2}, {"num_good": 40}),
        ("particle/world_comm", {}, {"num_good": 20, "num_adversaries": 30, "num_food": 10}),
    ],
)
def test_step_program_size_is_independent_of_agent_count(env_id, small, large):
    a, b = program_size(marl.make(env_id, **small)), program_size(marl.make(env_id, **large))
    # a few equations may differ (a size-1 axis squeezed), never a block per agent
    assert abs(b - a) <= 4, f"{env_id}: {a} equations with {small}, {b} with {large}"


def test_fifty_agent_spread_runs():
    env = marl.make("particle/spread", num_agents=50)
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    state, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.zeros(50, jnp.int32))
    assert ts.obs.shape == (50, 4 + 100 + 4 * 49)
