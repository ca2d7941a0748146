"""The value-based learners' loss: the masked TD(lambda) loss over sampled episodes
(`td_loss`, independent or through a mixer) and the unroll lengths that cut padded episodes
short (`unroll_lengths`, `truncate`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .qlearning import double_q_targets, masked_td_loss
from .replay import Episode

Array = jax.Array


def unroll_lengths(limit: int, buckets: int) -> tuple[int, ...]:
    """Increasing distinct step counts `ceil(limit * i / buckets)`, `i = 1 .. buckets`.

    Evenly spaced, so a row is never unrolled more than `limit / buckets` steps past its end.
    """
    return tuple(sorted({-(-limit * i // buckets) for i in range(1, buckets + 1)}))


def truncate(batch: Episode, steps: int) -> Episode:
    """The first `steps` steps of padded episodes `[E, T+1, ...]` (`steps + 1` state rows)."""
    rows, cut = slice(0, steps + 1), slice(0, steps)
    return batch.replace(
        obs=batch.obs[:, rows],
        state=batch.state[:, rows],
        avail=batch.avail[:, rows],
        actions=batch.actions[:, cut],
        rewards=batch.rewards[:, cut],
        terminated=batch.terminated[:, cut],
        filled=batch.filled[:, cut],
    )


def td_loss(
    nets, mixer, cfg, online, target, batch: Episode, resets: Array | None = None
) -> tuple[Array, dict]:
    """Masked TD(lambda) loss on a batch of episodes `[E, T+1, ...]`; online = (agent, mixer).

    Rewards are taken as stored (standardise them in `batch` before, if wanted). `resets`:
    the episode starts of packed rows (`packing.pack`); None for one episode per row.
    """
    params, mixer_params = online
    target_params, target_mixer_params = target
    q = nets.episode_q(params, batch, resets)  # [E, T+1, N, A]
    q_target = jax.lax.stop_gradient(nets.episode_q(target_params, batch, resets))
    q_next_online = jax.lax.stop_gradient(q[:, 1:]) if cfg.double_q else q_target[:, 1:]
    q_taken = jnp.take_along_axis(q[:, :-1], batch.actions[..., None], axis=-1)[..., 0]

    if mixer is None:  # independent learners: each agent's own reward and value
        rewards = batch.rewards

        def targets_of(r, term, mask, qo, qt, avail, state):
            return double_q_targets(r, term, mask, qo, qt, avail, cfg.gamma, None, cfg.td_lambda)

        chosen = q_taken
    else:  # a team value: the agents' mean reward (their shared reward on cooperative tasks)
        rewards = jnp.mean(batch.rewards, axis=-1)

        def targets_of(r, term, mask, qo, qt, avail, state):
            def mix(v):
                return mixer.apply(target_mixer_params, v, state)

            return double_q_targets(r, term, mask, qo, qt, avail, cfg.gamma, mix, cfg.td_lambda)

        chosen = mixer.apply(mixer_params, q_taken, batch.state[:, :-1])

    targets = jax.vmap(targets_of)(
        rewards,
        batch.terminated,
        batch.filled,
        q_next_online,
        q_target[:, 1:],
        batch.avail[:, 1:],
        batch.state[:, 1:],
    )
    mask = jnp.broadcast_to(
        batch.filled.reshape(batch.filled.shape + (1,) * (chosen.ndim - 2)), chosen.shape
    ).astype(chosen.dtype)
    count = jnp.maximum(jnp.sum(mask), 1.0)
    loss = masked_td_loss(chosen, targets, batch.filled)
    metrics = {
        "loss/td": loss,
        "q/taken": jnp.sum(mask * chosen) / count,
        "q/target": jnp.sum(mask * targets) / count,
    }
    return loss, metrics
