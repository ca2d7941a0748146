"""A battle's world: `CombatDynamics`, the dynamics part of `Combat` (SMAX's).

Each step is 8 sub-steps of 1/16 s. In a sub-step every living unit moves `velocity / 16`
along its direction (clipped into the map) or, attacking, hits its target if both live, the
distance is below its attack range and its weapon is ready; a hit removes `damage` health and
resets the cooldown to `cooldown + U(-1/16, 2/16)`, otherwise the cooldown runs down by 1/16.
Attacks resolve simultaneously from the sub-step's start positions; then overlapping living
units are pushed apart. Dead units never act or move.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.batching import batch_last

from .state import CombatState
from .units import FIRST_ATTACK, MOVE_VECTORS, STATS, STOP

SUBSTEPS = 8  # SMAX world_steps_per_env_step
SUBSTEP_TIME = 1.0 / 16  # SMAX time_per_step (seconds)

# a sub-step's carry: positions, health, cooldowns, shots, kills
Carry = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]


@functools.cache
def _separation(map_size: float) -> Callable[[jax.Array, jax.Array, jax.Array], jax.Array]:
    """The push of `separate` on a map of side `map_size`: positions [U, 2, ...], radii and
    liveness [U, ...] with any trailing batch axes; under `vmap` over a single env it runs
    unbatched (`batch_last`: a leading batch axis of one made it 7-8x slower on CPU at
    hundreds of units)."""

    def kernel(pos: jax.Array, radius: jax.Array, alive: jax.Array) -> jax.Array:
        x, y = pos[:, 0], pos[:, 1]
        dx = x[None, :] - x[:, None]  # [U, U, ...]: from unit i to unit j
        dy = y[None, :] - y[:, None]
        eye = jnp.eye(pos.shape[0]).reshape((pos.shape[0],) * 2 + (1,) * (pos.ndim - 2))
        dist = jnp.sqrt(dx * dx + dy * dy) + eye + 1e-6
        overlap = jax.nn.relu((radius[:, None] + radius[None, :]) / dist - 1.0)
        overlap = jnp.where(alive[:, None] & alive[None, :], overlap, 0.0)

        # sum_j d_ij overlap_ij as a contraction: XLA's CPU backend (jaxlib 0.10) ran the
        # multiply-then-reduce form ~18x slower at 128 units x 8 envs, half of a battle64
        # learner's update (results/bench.md, notes)
        def pair_sum(d: jax.Array) -> jax.Array:
            return jnp.einsum("ij...,ij...->i...", d, overlap)

        push = jnp.stack([pair_sum(dx), pair_sum(dy)], 1)
        pushed = pos - 0.5 * push
        return jnp.clip(jnp.where(alive[:, None], pushed, pos), 0.0, map_size)

    return batch_last(kernel, min_batch_per_entity=None)  # only a batch of one: unbatched


@dataclass(frozen=True)
class CombatDynamics:
    """SMAX's world (the module docstring) for `num_allies` N and `num_enemies` M units on a
    map of side `map_size`; `kill_credit` also counts what each unit did (its shots and
    kills, which a per-unit reward reads)."""

    num_allies: int
    num_enemies: int
    map_size: float = 32.0
    kill_credit: bool = False

    @property
    def target_offset(self) -> np.ndarray:
        """[U] whom attack action 5 + k of each unit hits: enemy N + k for an ally, ally k
        for an enemy."""
        n, m = self.num_allies, self.num_enemies
        return np.array([n] * n + [0] * m, np.int32)

    def separate(self, pos: jax.Array, unit_type: jax.Array, alive: jax.Array) -> jax.Array:
        """Push overlapping living units apart (SMAX): each moves half the pair's overlap."""
        radius = jnp.asarray(STATS.radius)[unit_type]
        return _separation(self.map_size)(pos, radius, alive)

    def __call__(
        self, key: jax.Array, state: CombatState, actions: jax.Array
    ) -> tuple[CombatState, jax.Array, jax.Array]:
        """The world after SUBSTEPS sub-steps under `actions` [U] int32 of every unit (allies
        then enemies, each in the agents' action layout): the state with the new positions,
        health, cooldowns and last actions, and what each unit did: shots [U] (fired, over
        the sub-steps) and kills [U] (foes whose health a shot of its own took to 0; shooters
        of one sub-step share the credit), zeros without `kill_credit`."""
        unit_type = state.unit_type
        u = unit_type.shape[0]
        step = jnp.asarray(STATS.velocity)[unit_type][:, None] * SUBSTEP_TIME
        reach = jnp.asarray(STATS.attack_range)[unit_type]
        damage = jnp.asarray(STATS.damage)[unit_type]
        base_cooldown = jnp.asarray(STATS.cooldown)[unit_type]
        velocity = jnp.asarray(MOVE_VECTORS)[jnp.minimum(actions, STOP)] * step  # [U, 2]
        attacking = actions >= FIRST_ATTACK
        target = jnp.where(attacking, actions - FIRST_ATTACK + self.target_offset, 0)
        target = jnp.clip(target, 0, u - 1)
        jitter = jax.random.uniform(
            key, (SUBSTEPS, u), minval=-SUBSTEP_TIME, maxval=2 * SUBSTEP_TIME
        )

        def substep(carry: Carry, jitter_t: jax.Array) -> tuple[Carry, None]:
            pos, health, cooldown, shots, kills = carry
            alive = health > 0
            to_target = pos[target] - pos
            distance = jnp.sqrt(to_target[:, 0] ** 2 + to_target[:, 1] ** 2)
            fires = attacking & alive & alive[target] & (distance < reach) & (cooldown <= 0)
            hits = jnp.zeros((u,), health.dtype).at[target].add(jnp.where(fires, damage, 0.0))
            health = jnp.maximum(health - hits, 0.0)
            if self.kill_credit:
                killed = alive & (health <= 0)  # [U]: died in this sub-step
                fired = fires.astype(health.dtype)
                shooters = jnp.zeros((u,), health.dtype).at[target].add(fired)
                credit = jnp.where(fires & killed[target], 1 / jnp.maximum(shooters[target], 1), 0)
                shots, kills = shots + fired, kills + credit
            cooldown = jnp.where(
                fires, base_cooldown + jitter_t, jnp.maximum(cooldown - SUBSTEP_TIME, 0.0)
            )
            moved = jnp.where(alive[:, None], pos + velocity, pos)
            moved = jnp.clip(moved, 0.0, self.map_size)
            pos = self.separate(moved, unit_type, health > 0)
            return (pos, health, cooldown, shots, kills), None

        zeros = jnp.zeros((u,), state.health.dtype)
        carry = (state.pos, state.health, state.cooldown, zeros, zeros)
        (pos, health, cooldown, shots, kills), _ = jax.lax.scan(substep, carry, jitter)
        after = state.replace(pos=pos, health=health, cooldown=cooldown, last_action=actions)
        return after, shots, kills

    def attacks(self, state: CombatState) -> np.ndarray:
        """[U] int (host values, for the viewer): whom each unit attacked in the step that led
        to `state` (its last action an attack on a unit within its reach, allowing for the
        target's move), else -1."""
        unit_type = np.asarray(state.unit_type)
        pos = np.asarray(state.pos)
        last = np.asarray(state.last_action)
        u = unit_type.size
        target = np.clip(last - FIRST_ATTACK + self.target_offset, 0, u - 1)
        distance = np.linalg.norm(pos[target] - pos, axis=1)
        slack = STATS.velocity[unit_type[target]] * SUBSTEPS * SUBSTEP_TIME
        near = distance < STATS.attack_range[unit_type] + slack
        return np.where((last >= FIRST_ATTACK) & near, target, -1)
