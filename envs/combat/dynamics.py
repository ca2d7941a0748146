"""Combat's world: SMAX's sub-steps of movement, fire and cooldowns, and the push that keeps
units apart; the `Combat` env mixes it in."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from marl.core.batching import batch_last

from .state import CombatState
from .units import FIRST_ATTACK, MOVE_VECTORS, STATS, STOP

SUBSTEPS = 8  # SMAX world_steps_per_env_step
SUBSTEP_TIME = 1.0 / 16  # SMAX time_per_step (seconds)


class CombatDynamics:
    """The simulation half of `Combat` (a mixin: reads `map_size`, `_target_offset` and
    the reward part's `per_unit`)."""

    def _separate(self, pos: jax.Array, unit_type: jax.Array, alive: jax.Array) -> jax.Array:
        """Push overlapping living units apart (SMAX): each moves half the pair's overlap.

        Under `vmap` over a single env it runs unbatched (`marl.core.batching.batch_last`): a
        leading batch axis of one made it 7-8x slower on CPU at hundreds of units.
        """
        radius = jnp.asarray(STATS.radius)[unit_type]
        return self._separate_kernel(pos, radius, alive)

    @functools.cached_property
    def _separate_kernel(self):
        map_size = self.map_size

        def kernel(pos: jax.Array, radius: jax.Array, alive: jax.Array) -> jax.Array:
            # pos [U, 2, ...], radius and alive [U, ...]: trailing batch axes
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

    def simulate(
        self, key: jax.Array, state: CombatState, actions: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
        """The world's SUBSTEPS sub-steps under `actions` [U] int32 of every unit (allies then
        enemies, each in the agents' action layout). Returns pos [U, 2], health [U], cooldown
        [U], and what each unit did: shots [U] (fired, over the sub-steps) and kills [U] (foes
        whose health a shot of its own took to 0; shooters of one sub-step share the credit).
        """
        unit_type = state.unit_type
        u = unit_type.shape[0]
        per_unit = self.reward.per_unit
        step = jnp.asarray(STATS.velocity)[unit_type][:, None] * SUBSTEP_TIME
        reach = jnp.asarray(STATS.attack_range)[unit_type]
        damage = jnp.asarray(STATS.damage)[unit_type]
        base_cooldown = jnp.asarray(STATS.cooldown)[unit_type]
        velocity = jnp.asarray(MOVE_VECTORS)[jnp.minimum(actions, STOP)] * step  # [U, 2]
        attacking = actions >= FIRST_ATTACK
        target = jnp.where(attacking, actions - FIRST_ATTACK + self._target_offset, 0)
        target = jnp.clip(target, 0, u - 1)
        jitter = jax.random.uniform(
            key, (SUBSTEPS, u), minval=-SUBSTEP_TIME, maxval=2 * SUBSTEP_TIME
        )

        def substep(carry, jitter_t):
            pos, health, cooldown, shots, kills = carry
            alive = health > 0
            to_target = pos[target] - pos
            distance = jnp.sqrt(to_target[:, 0] ** 2 + to_target[:, 1] ** 2)
            fires = attacking & alive & alive[target] & (distance < reach) & (cooldown <= 0)
            hits = jnp.zeros((u,), health.dtype).at[target].add(jnp.where(fires, damage, 0.0))
            health = jnp.maximum(health - hits, 0.0)
            if per_unit:  # only the per-unit reward reads them
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
            pos = self._separate(moved, unit_type, health > 0)
            return (pos, health, cooldown, shots, kills), None

        zeros = jnp.zeros((u,), state.health.dtype)
        carry = (state.pos, state.health, state.cooldown, zeros, zeros)
        (pos, health, cooldown, shots, kills), _ = jax.lax.scan(substep, carry, jitter)
        return pos, health, cooldown, shots, kills
