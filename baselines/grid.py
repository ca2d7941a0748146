"""The grid family's reference policy: POGEMA's A* agent (its `a_star_policy.AStarAgent`,
the toolbox's classical baseline), in JAX.

Each agent follows a shortest 4-connected path to its goal, ignoring the other agents, and
when a step left it where it was (a collision) and it is not on its goal, takes a random
action, as POGEMA's agent does to break deadlocks. Privileged where POGEMA's is not: it plans
on the whole map (POGEMA's agent plans on the cells it has seen, the unseen taken as free), so
its paths are never longer; shortest paths come from a breadth-first distance field to each
goal, recomputed when a goal changes (lifelong)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array
FAR = 1 << 20


def distance_to(free: Array, goals: Array) -> Array:
    """[N, Hp, Wp] int32 4-connected path lengths to each goal cell [N, 2] over `free`
    [Hp, Wp] (FAR where unreachable)."""
    n = goals.shape[0]
    start = (
        jnp.full((n, *free.shape), FAR, jnp.int32)
        .at[jnp.arange(n), goals[:, 0], goals[:, 1]]
        .set(0)
    )

    def sweep(d: Array) -> Array:
        pad = jnp.pad(d, ((0, 0), (1, 1), (1, 1)), constant_values=FAR)
        nb = jnp.minimum(
            jnp.minimum(pad[:, :-2, 1:-1], pad[:, 2:, 1:-1]),
            jnp.minimum(pad[:, 1:-1, :-2], pad[:, 1:-1, 2:]),
        )
        return jnp.where(free[None], jnp.minimum(d, nb + 1), FAR)

    def body(c: tuple[Array, Array]) -> tuple[Array, Array]:
        return c[1], sweep(c[1])

    _, d = jax.lax.while_loop(lambda c: jnp.any(c[0] != c[1]), body, (start, sweep(start)))
    return d


def astar_policy(env: MultiAgentEnv) -> Policy:
    """POGEMA's A* agent on a `marl.envs.grid.GridMAPF` env (bare state)."""
    from marl.envs.grid.collision import MOVES
    from marl.envs.grid.env import GridMAPF

    if not isinstance(env, GridMAPF):
        raise TypeError(f"the A* agent needs a grid environment, got {type(env).__name__}")
    n = env.num_agents
    moves = jnp.asarray(MOVES, jnp.int32)  # wait, up, down, left, right
    hp, wp = env.height + 2 * env.r, env.width + 2 * env.r

    def initial_carry() -> tuple[Array, Array, Array]:
        return (
            jnp.zeros((n, hp, wp), jnp.int32),
            jnp.full((n, 2), -1, jnp.int32),
            jnp.full((n, 2), -1, jnp.int32),
        )

    def act(params: Any, state: Any, avail: Array, carry, start: Array, key: Array, greedy: Any):
        del params, avail, greedy
        field, planned_for, last = carry
        replan = start | jnp.any(planned_for != state.goal)
        field = jax.lax.cond(
            replan, lambda: distance_to(~state.obstacles, state.goal), lambda: field
        )
        nxt = state.pos[:, None, :] + moves[None, 1:]  # [N, 4, 2]
        value = field[jnp.arange(n)[:, None], nxt[..., 0], nxt[..., 1]]
        here = field[jnp.arange(n), state.pos[:, 0], state.pos[:, 1]]
        best = 1 + jnp.argmin(value, axis=1)  # the first shortest move, as a fixed order
        action = jnp.where((here == 0) | (jnp.min(value, axis=1) >= FAR), 0, best)
        stuck = ~start & jnp.all(last == state.pos, axis=-1) & (here != 0)
        random = jax.random.randint(key, (n,), 0, 5)
        action = jnp.where(stuck, random, action).astype(jnp.int32)
        return action, (field, state.goal, state.pos)

    return Policy(initial_carry, act, privileged=True)
