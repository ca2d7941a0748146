"""HAPPO (Kuba et al. 2022, "Trust Region Policy Optimisation in Multi-Agent Reinforcement
Learning"; as HARL's `happo`): heterogeneous-agent PPO with a sequential update.

What differs from MAPPO (`ppo.py`, whose config, networks, rollout, critic update, actor loss,
initial state and policy are reused):

- every agent has its own actor parameters by default (`parameter_sharing="none"`, HARL's
  tuned setting everywhere); `parameter_sharing="all"` is HARL's `share_param`: one actor, which
  each agent in the order updates in turn on its own samples (`"group"`: one per group);
- one shared advantage per environment step from a centralised team value `V(s)` (HARL's "EP"
  state type): the critic reads the global state WITHOUT an agent id (`agent_id=False`,
  forced), so its N per-agent outputs are one value; the team reward is the mean over agents
  of the rewards (the shared reward itself when all agents receive the same one, as HARL
  assumes: it stores `rewards[:, 0]`);
- each update draws a random agent order (`jax.random.permutation`) and updates the agents
  one after another (`lax.scan` over the order, dynamic indexing into the stacked `[N, ...]`
  actor parameters and per-agent optimiser states). Agent `i_m` runs `epochs x
  num_minibatches` steps of `-mean(factor * min(r A, clip(r, 1 +- eps) A)) - ent_coef * H`
  on its own log-probs, where `factor` (per sample, a constant for the gradient) is the
  product of `pi_new / pi_old` of the agents updated before it; after its epochs,
  `factor *= exp(new_log_prob_i - old_log_prob_i)` over the whole rollout with its updated
  parameters (agents not alive at a step contribute a ratio of 1 there);
- the critic is updated as in MAPPO (`ppo.critic_update`) on the team value targets, one
  sample per environment step whoever is alive (`team_samples`; HARL's EP critic);
- each agent's advantages are normalised on their own, over the steps where that agent is
  alive (`per_agent_normalized`; HARL's `happo.train`), not over all agents' samples at once.

One team advantage for every agent is HAPPO's cooperative setting: on a task whose agents do
not share one objective (`EnvSpec.cooperative` False: tag, adversary, push) it would train
each team on the mean of both teams' rewards, so `make_train` refuses such tasks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train, check_cooperative
from marl.core.wrappers import training_env
from marl.learning.learner_config import shipped

from .onpolicy import ValueNorm, gae, normalize_advantages, sgd_epochs, take_envs
from .ppo import (
    Networks,
    PPOConfig,
    PPOState,
    Rollout,
    actor_loss,
    collect,
    critic_update,
    initial_state,
    make_optimizer,
    make_policy,
)

Array = jax.Array

# HARL's happo.yaml (harl/configs/algos_cfgs/happo.yaml) and its MLP base (input LayerNorm,
# LayerNorm in each layer), where PPOConfig has the knob; `happo.config(HARL)`. Measured on
# particle/spread: without the two layer norms, relu networks at these settings collapsed the
# policy entropy to ~0.02 on 2 of 3 seeds within 150k steps (HAPPO; also MAPPO, 1 of 3 seeds),
# presumably because relu logits grow with the unbounded positions of agents that drift away;
# with them (4 seeds, 3e5 steps) no seed collapsed, but learning was slower than the shipped
# defaults (marl/conf/algo/happo.yaml).
HARL: dict[str, Any] = {
    "epochs": 5,  # HARL ppo_epoch 5 and critic_epoch 5 (one knob here)
    "num_minibatches": 1,  # HARL actor_num_mini_batch 1 and critic_num_mini_batch 1
    "lr": 5e-4,  # HARL lr (actor, Adam eps 1e-5 as opti_eps)
    "critic_lr": 5e-4,  # HARL critic_lr
    "anneal_lr": False,  # HARL use_linear_lr_decay False
    "clip_eps": 0.2,  # HARL clip_param
    "value_clip_eps": 0.2,  # HARL use_clipped_value_loss True (with clip_param)
    "ent_coef": 0.01,  # HARL entropy_coef
    "gamma": 0.99,  # HARL gamma
    "gae_lambda": 0.95,  # HARL gae_lambda
    "value_norm": True,  # HARL use_valuenorm
    "huber_delta": 10.0,  # HARL use_huber_loss True, huber_delta 10
    "max_grad_norm": 10.0,  # HARL max_grad_norm (per agent's actor, and the critic)
    "hidden": (128, 128),  # HARL hidden_sizes
    "activation": "relu",  # HARL activation_func
    "feature_norm": True,  # HARL use_feature_normalization (layer norm of the inputs)
    "layer_norm": True,  # HARL's MLP layers end in a LayerNorm
    "advantage_norm": True,  # HARL normalises the advantages over active samples
}
# values HAPPO cannot run without; a config asking for others is rejected
FORCED: dict[str, Any] = {
    "critic": "central",
    "agent_id": False,
    "critic_agent_id": False,  # one team value V(s) of the mean reward
    "torso": "mlp",  # each agent's actor updated in turn: no torso over all agents
}


def config(cfg: PPOConfig | dict[str, Any] | None) -> PPOConfig:
    """HAPPO's config: its shipped defaults (`marl/conf/algo/happo.yaml`: HARL's algorithm
    with MAPPO's MPE optimisation settings, each explained there) overridden by a mapping; a
    PPOConfig gets `FORCED` set."""
    if isinstance(cfg, PPOConfig):
        return dataclasses.replace(cfg, **FORCED)
    cfg = dict(cfg or {})
    for k, v in FORCED.items():
        if k in cfg and cfg[k] != v:
            raise ValueError(f"happo needs {k}={v!r} (got {cfg[k]!r})")
    return PPOConfig.from_dict({**shipped("happo"), **cfg})


# --- the compounded ratio ---------------------------------------------------------------------


def next_factor(factor: Array, new_log_prob: Array, old_log_prob: Array, alive: Array) -> Array:
    """`factor * pi_new / pi_old` of one agent; a ratio of 1 where the agent is not alive."""
    return factor * jnp.exp(jnp.where(alive, new_log_prob - old_log_prob, 0.0))


def agent_order(key: Array, num_agents: int) -> Array:
    """[N] int32 a random permutation of the agents (the update order)."""
    return jax.random.permutation(key, num_agents).astype(jnp.int32)


def split_keys(key: Array) -> tuple[Array, Array, Array, Array]:
    """(next state key, order key, actor key, critic key) of one update."""
    key, k_order, k_actor, k_critic = jax.random.split(key, 4)
    return key, k_order, k_actor, k_critic


# --- one agent, then all in sequence ----------------------------------------------------------

# Rollout fields with an agent axis (the others are per environment: start, terminated, done)
_PER_AGENT = (
    "actor_in",
    "critic_in",
    "avail",
    "action",
    "log_prob",
    "value",
    "next_value",
    "reward",
    "alive",
    "died",
)


def agent_rollout(ro: Rollout, agent: Array) -> Rollout:
    """The rollout of one (traced) agent, its agent axis kept with size 1: [T, B, 1, ...]."""
    return ro.replace(
        **{f: jax.lax.dynamic_slice_in_dim(getattr(ro, f), agent, 1, axis=2) for f in _PER_AGENT}
    )


def update_agent(
    nets: Networks,
    cfg: PPOConfig,
    tx: optax.GradientTransformation,
    params: Any,
    opt: Any,
    ro: Rollout,
    adv: Array,
    h0: Array,
    factor: Array,
    agent: Array,
    key: Array,
) -> tuple[Any, Any, Array, dict[str, Array]]:
    """`epochs x num_minibatches` steps of agent `agent`'s factor-weighted PPO loss.

    Args:
        params, opt: stacked actor parameters / their optimiser states, leaves [sets, ...]
            (`nets.actor_sets`: one set per agent, or shared ones each agent updates in turn).
        ro: the rollout [T, B, N, ...]; adv [T, B, N]; h0 [B, N, H] the actor carry at t=0.
        factor: [T, B] the compounded ratio of the agents updated before (no gradient).
    Returns:
        (params, opt) with only `agent`'s set changed, its new log-probs on the whole
        rollout [T, B], and metrics averaged over its gradient steps.
    """
    own = agent_rollout(ro, agent)
    own_adv = jax.lax.dynamic_slice_in_dim(adv, agent, 1, axis=2)
    own_h0 = jax.lax.dynamic_slice_in_dim(h0, agent, 1, axis=1)
    weight = jax.lax.stop_gradient(factor)[..., None]
    s = jnp.asarray(nets.actor_sets.index)[agent]  # the agent's parameter set
    p0 = jax.tree.map(lambda x: x[s], params)
    o0 = jax.tree.map(lambda x: x[s], opt)

    solo = nets.one_agent()  # the actor applied to this agent's slice with one set

    def as_set(p):  # one set's parameters as a stack of one, for `solo.actor_apply`
        return jax.tree.map(lambda x: x[None], p)

    def loss_fn(p, i):
        loss, (m, _) = actor_loss(
            solo,
            cfg,
            as_set(p),
            take_envs(own, i, axis=1),
            jnp.take(own_adv, i, axis=1),
            jnp.take(own_h0, i, axis=0),
            jnp.take(weight, i, axis=1),
        )
        return loss, m

    p, o, (_, metrics) = sgd_epochs(
        loss_fn, tx, p0, o0, key, cfg.epochs, cfg.num_envs, cfg.num_minibatches
    )
    _, dist = solo.actor_apply(as_set(p), own_h0, own.actor_in, own.start, own.avail)
    new_log_prob = dist.log_prob(own.action)[:, :, 0]
    params = jax.tree.map(lambda full, one: full.at[s].set(one), params, p)
    opt = jax.tree.map(lambda full, one: full.at[s].set(one), opt, o)
    return params, opt, new_log_prob, jax.tree.map(jnp.mean, metrics)


def sequential_update(
    nets: Networks,
    cfg: PPOConfig,
    tx: optax.GradientTransformation,
    params: Any,
    opt: Any,
    ro: Rollout,
    adv: Array,
    h0: Array,
    order: Array,
    key: Array,
) -> tuple[Any, Any, Array, dict[str, Array]]:
    """Update the agents one by one in `order` (see `update_agent` for the arguments).

    Returns (params, opt, factors [N, T, B] the weight used at each position, metrics [N]).
    """
    t, b = ro.log_prob.shape[:2]

    def stage(carry, xs):
        params, opt, factor = carry
        agent, k = xs
        params, opt, new_log_prob, metrics = update_agent(
            nets, cfg, tx, params, opt, ro, adv, h0, factor, agent, k
        )
        old = jax.lax.dynamic_index_in_dim(ro.log_prob, agent, axis=2, keepdims=False)
        alive = jax.lax.dynamic_index_in_dim(ro.alive, agent, axis=2, keepdims=False)
        return (params, opt, next_factor(factor, new_log_prob, old, alive)), (factor, metrics)

    keys = jax.random.split(key, order.shape[0])
    (params, opt, _), (factors, metrics) = jax.lax.scan(
        stage, (params, opt, jnp.ones((t, b))), (order, keys)
    )
    return params, opt, factors, metrics


# --- team value -------------------------------------------------------------------------------


def team_advantages(cfg: PPOConfig, vn: ValueNorm, ro: Rollout) -> tuple[Array, Array]:
    """GAE on the team reward (mean over agents) and the team value -> ([T, B], [T, B]).

    The critic's N outputs are equal (no agent id, shared critic, the global state for every
    agent); their mean is the team value.
    """
    denorm = vn.denormalize if cfg.value_norm else (lambda x: x)
    return gae(
        jnp.mean(ro.reward, axis=-1),
        denorm(jnp.mean(ro.value, axis=-1)),
        denorm(jnp.mean(ro.next_value, axis=-1)),
        ro.terminated,
        ro.done,
        cfg.gamma,
        cfg.gae_lambda,
    )


def per_agent_normalized(adv: Array, alive: Array) -> Array:
    """[T, B, N] advantages normalised for each agent on its own, over the samples where it is
    alive (HARL's `happo.train`: NaN where `active_masks` is 0, then nanmean / nanstd, eps
    1e-5): each agent's update sees zero-mean unit-std advantages whoever else is alive."""
    return jax.vmap(lambda a, m: normalize_advantages(a, m, eps=1e-5), in_axes=-1, out_axes=-1)(
        adv, alive
    )


def team_samples(alive: Array) -> Array:
    """[..., N] mask of one sample per environment step (agent 0's column), whoever is alive.

    The team value V(s) is one regression target per step, so the critic's loss and the value
    normaliser's statistics are plain means over steps (HARL's EP critic), not weighted by how
    many agents are alive at each (the actors' advantage normalisation is per agent over its
    living samples, `per_agent_normalized`, as HARL's).
    """
    return jnp.broadcast_to(jnp.arange(alive.shape[-1]) == 0, alive.shape)


def team_critic_update(nets, cfg, critic_tx, state: PPOState, ro: Rollout, targets, c_h0, key):
    """`ppo.critic_update` on the team targets, one sample per step (`team_samples`)."""
    team = ro.replace(alive=team_samples(ro.alive))
    return critic_update(nets, cfg, critic_tx, state, team, targets, c_h0, key)


def make_train(
    env: MultiAgentEnv,
    cfg: PPOConfig | dict[str, Any] | None = None,
    total_updates: int | None = None,
) -> Train:
    """HAPPO on `env` (one cooperative team); `cfg` overrides the shipped defaults (PPOConfig
    fields; `FORCED` ones fixed)."""
    check_cooperative(
        env, "happo", "trains every agent on one team advantage (the mean reward)", "mappo or ippo"
    )
    cfg = config(cfg)
    nets = Networks(env, cfg, team_critic=True)
    wrapped = training_env(env)
    n = env.spec.num_agents
    grad_steps = None if total_updates is None else total_updates * cfg.epochs * cfg.num_minibatches
    # one optimiser state per parameter set; a shared set takes a turn for each of its agents
    turns = int(np.bincount(nets.actor_sets.index).max())
    actor_steps = None if grad_steps is None else grad_steps * turns
    actor_tx = make_optimizer(cfg, cfg.lr, actor_steps)
    critic_tx = make_optimizer(cfg, cfg.critic_lr, grad_steps)

    def init(key: Array) -> PPOState:  # PPO's, with one optimiser state per parameter set
        return initial_state(nets, wrapped, cfg, key, jax.vmap(actor_tx.init), critic_tx.init)

    def step(state: PPOState) -> tuple[PPOState, dict[str, Array]]:
        a_h0, c_h0 = state.actor_carry, state.critic_carry
        state, ro, metrics = collect(nets, wrapped, cfg, state)
        adv, targets = team_advantages(cfg, state.value_norm, ro)
        adv = jnp.broadcast_to(adv[..., None], ro.alive.shape)
        targets = jnp.broadcast_to(targets[..., None], ro.alive.shape)
        if cfg.value_norm:
            vn = state.value_norm.update(targets, team_samples(ro.alive))
            state = state.replace(value_norm=vn)
        if cfg.advantage_norm:
            adv = per_agent_normalized(adv, ro.alive)
        key, k_order, k_actor, k_critic = split_keys(state.key)
        order = agent_order(k_order, n)
        actor_params, actor_opt, factors, am = sequential_update(
            nets, cfg, actor_tx, state.actor_params, state.actor_opt, ro, adv, a_h0, order, k_actor
        )
        critic_params, critic_opt, cm = team_critic_update(
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
        last = factors[-1]  # the weight of the last agent in the order
        metrics = {
            **metrics,
            **cm,
            **{f"loss/{k}": jnp.mean(v) for k, v in am.items()},
            "loss/factor_mean": jnp.mean(last),
            "loss/factor_std": jnp.std(last),
        }
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


def steps_per_update(env: MultiAgentEnv, cfg: PPOConfig | dict[str, Any] | None = None) -> int:
    """Env steps one update takes, as `make_train`'s Train says, without building it."""
    settings = config(cfg)
    return settings.num_envs * settings.rollout_length


make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)

__all__ = [
    "HARL",
    "FORCED",
    "agent_order",
    "config",
    "make_train",
    "next_factor",
    "per_agent_normalized",
    "sequential_update",
    "steps_per_update",
    "team_advantages",
    "update_agent",
]
