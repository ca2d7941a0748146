"""Hand-built rollouts for tests of the on-policy learners' advantage and target wiring."""

from __future__ import annotations

import jax.numpy as jnp


def hand_rollout(reward, value, next_value, terminated, done):
    """A ppo.Rollout with the given [T, B, N] / [T, B] fields and zeros everywhere else."""
    from marl.algorithms.ppo import Rollout

    reward, value, next_value = (jnp.asarray(x, jnp.float32) for x in (reward, value, next_value))
    zeros = jnp.zeros(reward.shape)
    flags = jnp.zeros(reward.shape[:2], bool)
    return Rollout(
        actor_in=zeros[..., None],
        critic_in=zeros[..., None],
        avail=jnp.ones((*reward.shape, 1), bool),
        action=zeros.astype(jnp.int32),
        log_prob=zeros,
        value=value,
        next_value=next_value,
        reward=reward,
        alive=jnp.ones(reward.shape, bool),
        start=flags,
        terminated=jnp.asarray(terminated, bool),
        done=jnp.asarray(done, bool),
    )
