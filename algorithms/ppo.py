"""Multi-agent PPO: IPPO (critic on each agent's observation) and MAPPO (critic on the global
state). The two differ only in the critic's input (`PPOConfig.critic`).

One update: collect `rollout_length` steps in `num_envs` auto-resetting environments, compute
GAE (bootstrapping truncated episodes from their true final observation), then `epochs` passes
of `num_minibatches` minibatches (split over environments, whole sequences, so recurrent
networks replay from their stored initial hidden state).

The config is `ppo_config`'s, the rollout and its advantages `ppo_rollout`'s, the networks
`ppo_networks`'; this module holds the losses, the optimisers and the learner (`make_train`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train, warn_unscheduled
from marl.core.wrappers import training_env
from marl.learning.schedule import learning_rate

from .onpolicy import (
    ValueNorm,
    clipped_surrogate,
    masked_mean,
    normalize_advantages,
    sgd_epochs,
    take_envs,
    value_loss,
)
from .ppo_config import PPOConfig
from .ppo_networks import Networks, make_policy
from .ppo_rollout import PPOState, Rollout, advantages_and_targets, collect

Array = jax.Array


def make_optimizer(cfg: PPOConfig, lr: float, total_steps: int | None, per_set: bool = False):
    """Adam after gradient-norm clipping; `per_set`: each parameter set (the leading axis of
    `AgentParams`-stacked parameters) clipped by its own norm, as separate networks are."""
    rate = learning_rate(lr, cfg.anneal_lr, total_steps)
    clip = clip_by_set_norm if per_set else optax.clip_by_global_norm
    return optax.chain(clip(cfg.max_grad_norm), optax.adam(rate, eps=1e-5))


def clip_by_set_norm(max_norm: float) -> optax.GradientTransformation:
    """`optax.clip_by_global_norm` for each parameter set on its own: every leaf has the sets
    on its leading axis, and one set's large gradient does not shrink another's step (one
    set: the same as the global clip)."""

    def update(updates, state, params=None):  # noqa: ANN001
        leaves = jax.tree.leaves(updates)
        sq = sum(jnp.sum(jnp.square(x).reshape(x.shape[0], -1), axis=1) for x in leaves)
        norm = jnp.sqrt(sq)  # [sets]

        def clip(x: Array) -> Array:
            n = norm.reshape(-1, *([1] * (x.ndim - 1))).astype(x.dtype)
            return jnp.where(n < max_norm, x, (x / n) * max_norm)

        return jax.tree.map(clip, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def critic_update(nets, cfg, critic_opt_tx, state: PPOState, ro: Rollout, targets, c_h0, key):
    """`epochs x num_minibatches` critic steps; returns (params, opt_state, metrics)."""
    vn = state.value_norm
    norm_targets = vn.normalize(targets) if cfg.value_norm else targets

    def loss_fn(params, idx):
        mb = take_envs(ro, idx, axis=1)
        h0 = jnp.take(c_h0, idx, axis=0)
        _, v = nets.critic_apply(params, h0, mb.critic_in, mb.start)
        mb_targets = jnp.take(norm_targets, idx, axis=1)
        loss = value_loss(v, mb.value, mb_targets, mb.alive, cfg.value_clip_eps, cfg.huber_delta)
        return loss, None

    params, opt, (losses, _) = sgd_epochs(
        loss_fn,
        critic_opt_tx,
        state.critic_params,
        state.critic_opt,
        key,
        cfg.epochs,
        cfg.num_envs,
        cfg.num_minibatches,
    )
    return params, opt, {"loss/value": jnp.mean(losses)}


def actor_loss(nets, cfg, params, mb: Rollout, adv, h0, weight=None):
    """PPO actor loss on a minibatch; returns (loss, (metrics, new log-probs))."""
    _, dist = nets.actor_apply(params, h0, mb.actor_in, mb.start, mb.avail, mb.adj)
    log_prob = dist.log_prob(mb.action)
    loss, metrics = clipped_surrogate(log_prob, mb.log_prob, adv, cfg.clip_eps, mb.alive, weight)
    entropy = masked_mean(dist.entropy(), mb.alive)
    metrics = {**metrics, "entropy": entropy}
    return loss - cfg.ent_coef * entropy, (metrics, log_prob)


def initial_state(
    nets: Networks,
    wrapped: MultiAgentEnv,
    cfg: PPOConfig,
    key: Array,
    init_actor_opt: Callable[[Any], Any],
    init_critic_opt: Callable[[Any], Any],
) -> PPOState:
    """One seed's first state: parameters, optimiser states (`init_*_opt(params)`), the
    `cfg.num_envs` reset training envs (`wrapped`), zero carries; PPO's and HAPPO's."""
    k_net, k_env, key = jax.random.split(key, 3)
    actor_params, critic_params = nets.init(k_net)
    env_state, ts = jax.vmap(wrapped.reset)(jax.random.split(k_env, cfg.num_envs))
    h = jnp.zeros((cfg.num_envs, wrapped.spec.num_agents, nets.hidden_dim))
    return PPOState(
        actor_params=actor_params,
        critic_params=critic_params,
        actor_opt=init_actor_opt(actor_params),
        critic_opt=init_critic_opt(critic_params),
        value_norm=ValueNorm.create(),
        env_state=env_state,
        timestep=ts,
        start=jnp.ones((cfg.num_envs,), bool),
        actor_carry=h,
        critic_carry=h,
        key=key,
        updates=jnp.zeros((), jnp.int32),
    )


def make_train(
    env: MultiAgentEnv,
    cfg: PPOConfig | dict | None = None,
    total_updates: int | None = None,
) -> Train:
    """IPPO / MAPPO learner on `env` (see module docstring)."""
    cfg = cfg if isinstance(cfg, PPOConfig) else PPOConfig.from_dict(cfg)
    warn_unscheduled(cfg.anneal_lr, total_updates, "PPO learner")
    nets = Networks(env, cfg)
    wrapped = training_env(env)
    grad_steps = None if total_updates is None else total_updates * cfg.epochs * cfg.num_minibatches
    actor_tx = make_optimizer(cfg, cfg.lr, grad_steps, per_set=True)
    critic_tx = make_optimizer(cfg, cfg.critic_lr, grad_steps)

    def init(key: Array) -> PPOState:
        return initial_state(nets, wrapped, cfg, key, actor_tx.init, critic_tx.init)

    def step(state: PPOState) -> tuple[PPOState, dict[str, Array]]:
        a_h0, c_h0 = state.actor_carry, state.critic_carry
        state, ro, metrics = collect(nets, wrapped, cfg, state)
        adv, targets = advantages_and_targets(nets.spec.team_reward, cfg, state.value_norm, ro)
        if cfg.value_norm:
            state = state.replace(value_norm=state.value_norm.update(targets, ro.alive))
        if cfg.advantage_norm:
            adv = normalize_advantages(adv, ro.alive)
        key, k_actor, k_critic = jax.random.split(state.key, 3)

        def loss_fn(params, idx):
            mb = take_envs(ro, idx, axis=1)
            h0 = jnp.take(a_h0, idx, axis=0)
            loss, (m, _) = actor_loss(nets, cfg, params, mb, jnp.take(adv, idx, axis=1), h0)
            return loss, m

        actor_params, actor_opt, (_, am) = sgd_epochs(
            loss_fn,
            actor_tx,
            state.actor_params,
            state.actor_opt,
            k_actor,
            cfg.epochs,
            cfg.num_envs,
            cfg.num_minibatches,
        )
        critic_params, critic_opt, cm = critic_update(
            nets, cfg, critic_tx, state, ro, targets, c_h0, k_critic
        )
        state = state.replace(
            actor_params=actor_params,
            actor_opt=actor_opt,
            critic_params=critic_params,
            critic_opt=critic_opt,
            key=key,
            updates=state.updates + 1,
        )
        metrics = {**metrics, **cm, **{f"loss/{k}": jnp.mean(v) for k, v in am.items()}}
        return state, metrics

    return Train(
        init=init,
        step=step,
        params=lambda s: s.actor_params,
        policy=make_policy(nets),
        config=cfg,
        steps_per_update=cfg.num_envs * cfg.rollout_length,
        num_envs=cfg.num_envs,
    )


__all__ = ["PPOConfig", "make_train", "initial_state", "Networks", "Rollout", "PPOState", "np"]
