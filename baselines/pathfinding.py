"""Classical pathfinding baseline: a wavefront planner with a local controller, jittable.

At an episode's start (and whenever an agent's goal changes, in lifelong mode) the planner
computes each agent's geodesic distance field to its goal on the obstacle grid
(`marl.envs.pathfinding.planning.distance_field`). Each step, an agent heads for the centre of
the neighbouring cell that lies lowest on its field (no corner cutting), or straight for the
goal once in the goal's cell; other agents within a short range push its desired velocity
away from them (local collision avoidance), and a little noise breaks symmetric deadlocks.
The desired velocity becomes an action through the env's own dynamics: holonomic agents get
the acceleration that reaches it in one sub-step, differential-drive agents turn toward it
and drive in proportion to how well they face it.

It is privileged (it reads the environment state, `Policy.privileged`): the reference (upper)
anchor of pathfinding tasks, not a decentralised policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array


@dataclass(frozen=True)
class PlannerGains:
    """Controller constants (distances in cells)."""

    speed: float = 0.8  # cruise speed as a fraction of the env's max_speed
    slow_radius: float = 0.6  # approach the goal slowing down within this distance
    avoid_range: float = 0.6  # gap between surfaces below which another agent repels
    avoid_gain: float = 1.5  # repulsion (fraction of max speed at zero gap)
    noise: float = 0.1  # random velocity (fraction of max speed) against deadlocks


def planner_policy(env: MultiAgentEnv, gains: PlannerGains | None = None) -> Policy:
    """The wavefront planner on a `marl.envs.pathfinding.Pathfinding` env (bare state)."""
    from marl.envs.pathfinding.env import HOLONOMIC_ACTIONS, Pathfinding
    from marl.envs.pathfinding.planning import MOVES, UNREACHABLE, distance_field, move_allowed
    from marl.envs.pathfinding.world import cell_of

    if not isinstance(env, Pathfinding):
        raise TypeError(f"the planner needs a pathfinding environment, got {type(env).__name__}")
    g = gains or PlannerGains()
    n, h, w, p = env.num_agents, env.height, env.width, env.pad
    diffdrive = jnp.asarray(env.diffdrive)
    moves = jnp.asarray([(dr, dc) for dr, dc, _ in MOVES], jnp.int32)  # [8, 2]
    directions = jnp.asarray(HOLONOMIC_ACTIONS)  # discrete: stop, +x, -x, +y, -y
    step_time = env.dt * env.substeps

    def plan(obstacles: Array, goal: Array) -> Array:
        rows, cols = cell_of(goal, 1.0, h, w)
        return distance_field(obstacles, rows, cols)

    def initial_carry() -> tuple[Array, Array]:
        return jnp.zeros((n, h, w)), jnp.full((n, 2), -1.0)

    def waypoint(field: Array, allowed: Array, pos: Array, goal: Array) -> Array:
        rows, cols = cell_of(pos, 1.0, h, w)
        here = field[jnp.arange(n), rows, cols]
        nr = jnp.clip(rows[:, None] + moves[None, :, 0], 0, h - 1)
        nc = jnp.clip(cols[:, None] + moves[None, :, 1], 0, w - 1)
        ok = allowed[:, rows, cols].T  # [N, 8]
        values = jnp.where(ok, field[jnp.arange(n)[:, None], nr, nc], UNREACHABLE)
        best = jnp.argmin(values, axis=1)
        centre = (
            jnp.stack(
                [
                    jnp.take_along_axis(nc, best[:, None], 1)[:, 0],
                    jnp.take_along_axis(nr, best[:, None], 1)[:, 0],
                ],
                axis=-1,
            ).astype(jnp.float32)
            + 0.5
        )
        at_goal_cell = (here < 0.5) | (jnp.linalg.norm(goal - pos, axis=-1) < 1.0)
        return jnp.where(at_goal_cell[:, None], goal, centre), at_goal_cell

    def act(params: Any, state: Any, avail: Array, carry, start: Array, key: Array, greedy: Any):
        del params, avail, greedy
        field, planned_for = carry
        inner = state.obstacles[p:-p, p:-p]
        replan = start | jnp.any(planned_for != state.goal)
        field = jax.lax.cond(replan, lambda: plan(inner, state.goal), lambda: field)
        pos, vel, goal = state.pos, state.vel, state.goal
        target, at_goal_cell = waypoint(field, move_allowed(inner), pos, goal)
        offset = target - pos
        dist = jnp.linalg.norm(offset, axis=-1, keepdims=True)
        direction = offset / jnp.maximum(dist, 1e-6)
        speed = g.speed * env.max_speed
        slow = jnp.where(at_goal_cell[:, None], jnp.minimum(1.0, dist / g.slow_radius), 1.0)
        desired = direction * speed * slow
        # local avoidance: every other agent closer than avoid_range (surface gap) repels
        rel = pos[:, None, :] - pos[None, :, :]
        d = jnp.sqrt(jnp.sum(rel**2, axis=-1) + 1e-9)
        gap = d - state.radius[:, None] - state.radius[None, :]
        push = jnp.clip(1.0 - gap / g.avoid_range, 0.0, 1.0) * (1.0 - jnp.eye(n))
        desired = desired + g.avoid_gain * env.max_speed * jnp.sum(
            push[..., None] * rel / d[..., None], axis=1
        )
        done = jnp.linalg.norm(goal - pos, axis=-1) < env.goal_radius * 0.5
        noise = g.noise * env.max_speed * jax.random.normal(key, (n, 2))
        desired = desired + jnp.where(done[:, None], 0.0, noise)
        norm = jnp.linalg.norm(desired, axis=-1, keepdims=True)
        desired = desired * jnp.minimum(1.0, env.max_speed / jnp.maximum(norm, 1e-9))
        # holonomic: the acceleration reaching `desired` in one sub-step
        u_h = (desired - (1.0 - env.damping) * vel) / (env.accel * env.dt)
        # differential drive: turn toward `desired`, drive as much as it is faced
        heading = jnp.arctan2(desired[:, 1], desired[:, 0])
        error = jnp.remainder(heading - state.heading + jnp.pi, 2 * jnp.pi) - jnp.pi
        turn = error / (env.max_turn * step_time)
        drive = jnp.linalg.norm(desired, axis=-1) / env.max_speed * jnp.maximum(jnp.cos(error), 0)
        u_d = jnp.stack([drive, turn], axis=-1)
        u = jnp.clip(jnp.where(diffdrive[:, None], u_d, u_h), -1.0, 1.0)
        if env.discrete:
            # the closest of stop / four directions (for differential drive: its command table)
            scores = u @ directions.T - 0.25 * jnp.sum(directions**2, axis=1)
            actions = jnp.argmax(scores, axis=1).astype(jnp.int32)
        else:
            actions = u
        return actions, (field, goal)

    return Policy(initial_carry, act, privileged=True)
