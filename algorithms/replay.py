"""Episode replay buffer in pure JAX: whole fixed-length sequences in a ring buffer.

Shapes: `C` capacity (episodes), `B` episodes per add, `T` steps per episode (padded), `N`
agents. Every function is jittable with static shapes; the stored pytree is arbitrary, each leaf
is kept as `[C, *leaf_shape]`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array


class Episode(struct.PyTreeNode):
    """One episode (or, with a leading axis, a batch of episodes), padded to `T` steps.

    Following pymarl, obs/state/avail hold `T + 1` rows: row `t + 1` is the state after step
    `t`, so a truncated episode can bootstrap from its real final state.

    obs [T+1, N, D], state [T+1, S], avail [T+1, N, A] (bool), actions [T, N] (int32),
    rewards [T], terminated [T] (bool), filled [T] (bool; False for padding after the end).
    """

    obs: Array
    state: Array
    avail: Array
    actions: Array
    rewards: Array
    terminated: Array
    filled: Array


class EpisodeBuffer(struct.PyTreeNode):
    """Ring buffer of whole episodes: `data` leaves `[C, ...]`, write `pos`, number `size`."""

    data: Any
    pos: Array  # [] int32, next slot to write
    size: Array  # [] int32, number of valid slots (always slots [0, size))
    capacity: int = struct.field(pytree_node=False)


def init(example_episode: Any, capacity: int) -> EpisodeBuffer:
    """Empty buffer for `capacity` episodes shaped like `example_episode` (no batch axis)."""
    data = jax.tree.map(
        lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), example_episode
    )
    return EpisodeBuffer(data, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32), capacity)


def add(buffer: EpisodeBuffer, episodes: Any) -> EpisodeBuffer:
    """Write a batch of episodes (leaves `[B, ...]`, `B <= C`), overwriting the oldest."""
    batch = jax.tree.leaves(episodes)[0].shape[0]
    return add_masked(buffer, episodes, jnp.ones((batch,), bool))


def add_masked(buffer: EpisodeBuffer, episodes: Any, valid: Array) -> EpisodeBuffer:
    """Write the episodes of a batch (leaves `[B, ...]`) whose `valid [B]` flag is set.

    The valid ones go, in batch order, to consecutive slots after `pos` (wrapping, oldest
    overwritten); the rest are dropped. Static shapes, so it can run every step of a rollout.
    """
    batch = valid.shape[0]
    if batch > buffer.capacity:
        raise ValueError(f"adding {batch} episodes to a buffer of capacity {buffer.capacity}")
    valid = valid.astype(bool)
    order = jnp.cumsum(valid) - 1
    idx = jnp.where(valid, (buffer.pos + order) % buffer.capacity, buffer.capacity)
    count = jnp.sum(valid, dtype=jnp.int32)
    data = jax.tree.map(
        lambda d, e: d.at[idx].set(e.astype(d.dtype), mode="drop"), buffer.data, episodes
    )
    return buffer.replace(
        data=data,
        pos=(buffer.pos + count) % buffer.capacity,
        size=jnp.minimum(buffer.size + count, buffer.capacity),
    )


def sample(buffer: EpisodeBuffer, key: Array, batch_size: int) -> Any:
    """`batch_size` stored episodes drawn uniformly (with replacement) among those added.

    Returns the stored pytree with leaves `[batch_size, ...]`. The buffer must not be empty
    (an empty buffer returns slot 0, all zeros).
    """
    idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda d: d[idx], buffer.data)


# --- building episodes step by step (the value learners' rollouts) ---


def empty_episodes(spec, batch: int) -> Episode:
    """`batch` blank episodes padded to the episode limit (rewards per agent)."""
    t, n = spec.episode_limit, spec.num_agents
    return Episode(
        obs=jnp.zeros((batch, t + 1, n, spec.obs_dim)),
        state=jnp.zeros((batch, t + 1, spec.state_dim)),
        avail=jnp.zeros((batch, t + 1, n, spec.action_dim), bool),
        actions=jnp.zeros((batch, t, n), jnp.int32),
        rewards=jnp.zeros((batch, t, n)),
        terminated=jnp.zeros((batch, t), bool),
        filled=jnp.zeros((batch, t), bool),
    )


def record_step(building: Episode, t: Array, ts, actions: Array, nts, reward_scale: float):
    """Write one transition of every environment into the episodes being built.

    `t [B]` is each environment's step in its episode; row `t` gets the observation acted on,
    row `t + 1` the true next observation (`final_*` of the auto-reset TimeStep).
    """
    b = jnp.arange(t.shape[0])

    def rows(x, now, nxt):
        return x.at[b, t].set(now).at[b, t + 1].set(nxt)

    return building.replace(
        obs=rows(building.obs, ts.obs, nts.final_obs),
        state=rows(building.state, ts.state, nts.final_state),
        avail=rows(building.avail, ts.avail_actions, nts.final_avail),
        actions=building.actions.at[b, t].set(actions),
        rewards=building.rewards.at[b, t].set(nts.reward * reward_scale),
        terminated=building.terminated.at[b, t].set(nts.terminated),
        filled=building.filled.at[b, t].set(True),
    )


def finish_episodes(buffer: EpisodeBuffer, building: Episode, done: Array):
    """Commit the episodes that ended (`done [B]`) to the buffer and blank their slots."""
    buffer = add_masked(buffer, building, done)
    keep = jnp.logical_not(done)[:, None]
    building = building.replace(
        filled=building.filled & keep, terminated=building.terminated & keep
    )
    return buffer, building
