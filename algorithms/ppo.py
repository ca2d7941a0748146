"""Multi-agent PPO: IPPO (critic on each agent's observation) and MAPPO (critic on the global
state). The two differ only in the critic's input (`PPOConfig.critic`).

One update: collect `rollout_length` steps in `num_envs` auto-resetting environments, compute
GAE (bootstrapping truncated episodes from their true final observation), then `epochs` passes
of `num_minibatches` minibatches (split over environments, whole sequences, so recurrent
networks replay from their stored initial hidden state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.core.learner import (
    Train,
    seed_max,
    warn_unscheduled,
)
from marl.core.wrappers import episode_metrics, training_env
from marl.learning.acting import batch_step
from marl.learning.acting import rollout as run_steps
from marl.learning.learner_config import LearnerConfig, defaults_from
from marl.learning.message_passing import ABLATIONS, AGGREGATES
from marl.learning.networks import ACTION_STDS
from marl.learning.schedule import learning_rate

from .onpolicy import (
    ValueNorm,
    clipped_surrogate,
    gae,
    masked_mean,
    normalize_advantages,
    sgd_epochs,
    take_envs,
    value_loss,
)
from .ppo_networks import (
    Networks,
    env_actions,
    make_policy,
)

Array = jax.Array


@dataclass(frozen=True)
@defaults_from("mappo")
class PPOConfig(LearnerConfig):
    """Hyperparameters of IPPO / MAPPO / HAPPO (every one is a config value). The defaults are
    MAPPO's shipped ones, `marl/conf/algo/mappo.yaml` (where each is explained), so Python and
    `marl train` build the same learner."""

    critic: str  # "local" (IPPO: own observation) or "central" (global state)
    num_envs: int  # parallel environments per seed
    rollout_length: int  # steps per environment per update
    epochs: int  # passes over the rollout per update
    num_minibatches: int  # minibatches per epoch (split over environments)
    lr: float  # actor learning rate (Adam)
    critic_lr: float  # critic learning rate (Adam)
    anneal_lr: bool  # linear decay to 0 over the run (needs total_updates)
    gamma: float  # discount
    gae_lambda: float  # GAE lambda
    clip_eps: float  # PPO ratio clip
    value_clip_eps: float | None  # value clip around the old prediction (None: off)
    ent_coef: float  # entropy bonus
    max_grad_norm: float  # gradient-norm clip per network (per actor parameter set)
    value_norm: bool  # normalise value targets (running mean/std)
    huber_delta: float | None  # Huber value loss (None: squared error)
    hidden: tuple[int, ...]  # MLP widths (first is the GRU's input encoder)
    activation: str
    recurrent: bool  # GRU torso in actor and critic
    gru_hidden: int
    layer_norm: bool
    feature_norm: bool  # layer norm of the network inputs
    parameter_sharing: str  # "all", "group" (per agent group) or "none"
    agent_id: bool  # append a one-hot agent id to network inputs
    # agent ids in the critic's input: None follows `agent_id`, and adds them to a central
    # critic whenever the agents' rewards can differ (`critic_needs_ids`); False is refused there
    critic_agent_id: bool | None
    reward_scale: float
    advantage_norm: bool
    action_std: str  # Box actions: "exp" (std = exp(p)) or "harl" (HARL's bounded sigmoid std)
    torso: str  # actor torso: "mlp" or "graph" (marl.learning.message_passing.GraphActor)
    graph_rounds: int  # graph torso: message rounds
    graph_message_dim: int  # graph torso: units per message
    graph_aggregate: str  # graph torso: "mean", "sum" or "max" over the agents heard
    graph_signal: bool  # graph torso: binary messages
    graph_ablation: str | None  # graph torso: None, "zero" or "shuffle" (evaluation studies)

    def checks(self) -> dict[str, tuple[bool, str]]:
        """Checks of its own (the shared ones: `LearnerConfig`)."""
        return {
            "critic": (self.critic in ("central", "local"), "central or local"),
            "action_std": (self.action_std in ACTION_STDS, " or ".join(ACTION_STDS)),
            "torso": (self.torso in ("mlp", "graph"), "mlp or graph"),
            "graph_rounds": (self.graph_rounds >= 1, "a positive integer"),
            "graph_message_dim": (self.graph_message_dim >= 1, "a positive integer"),
            "graph_aggregate": (self.graph_aggregate in AGGREGATES, ", ".join(AGGREGATES)),
            "graph_ablation": (
                self.graph_ablation is None or self.graph_ablation in ABLATIONS,
                f"null, {' or '.join(ABLATIONS)}",
            ),
            "num_minibatches": (
                self.num_minibatches >= 1 and self.num_envs % self.num_minibatches == 0,
                f"a divisor of num_envs ({self.num_envs})",
            ),
        }


class Rollout(struct.PyTreeNode):
    """One update's experience, leaves [T, B, N, ...] (per agent) or [T, B] (per env)."""

    actor_in: Array  # [T, B, N, Da]
    critic_in: Array  # [T, B, N, Dc]
    avail: Array  # [T, B, N, A]
    action: Array  # [T, B, N] or [T, B, N, d] (unclipped sample)
    log_prob: Array  # [T, B, N]
    value: Array  # [T, B, N] critic output (normalised space)
    next_value: Array  # [T, B, N] critic output on the true next observation
    reward: Array  # [T, B, N]
    alive: Array  # [T, B, N]
    died: Array  # [T, B, N] alive at t, dead after the step (`agent_ends`)
    start: Array  # [T, B] obs at t begins an episode (recurrent reset)
    terminated: Array  # [T, B]
    done: Array  # [T, B]
    adj: Array | None = None  # [T, B, N, N] the env's links (graph torso only)


class PPOState(struct.PyTreeNode):
    actor_params: Any
    critic_params: Any
    actor_opt: Any
    critic_opt: Any
    value_norm: ValueNorm
    env_state: Any
    timestep: Any
    start: Array  # [B]
    actor_carry: Array  # [B, N, H]
    critic_carry: Array  # [B, N, H]
    key: Array
    updates: Array


def collect(nets: Networks, env: MultiAgentEnv, cfg: PPOConfig, state: PPOState):
    """Run `rollout_length` steps of every parallel (wrapped) env -> (state, Rollout, metrics).

    `next_value[t]` is the critic on the true next observation: `value[t + 1]` within an
    episode, and where an episode ended at `t` a critic pass on its final observation, computed
    only on steps where some episode ended (one branch for all seeds, `seed_max`); the last
    step's comes from one pass after the scan.
    """
    spec = nets.spec

    def act(s: PPOState, key: Array) -> tuple[Array, Any]:
        ts = s.timestep
        actor_in = nets.actor_input(ts.obs)
        critic_in = nets.critic_input(ts.obs, ts.state, ts.alive)
        resets = s.start[None]
        adj = nets.links(env, s.env_state)
        a_h, dist = nets.actor_apply(
            s.actor_params,
            s.actor_carry,
            actor_in[None],
            resets,
            ts.avail_actions[None],
            None if adj is None else adj[None],
        )
        c_h, value = nets.critic_apply(s.critic_params, s.critic_carry, critic_in[None], resets)
        action = dist.sample(key)[0]
        log_prob = dist.log_prob(action[None])[0]
        aux = (actor_in, critic_in, action, log_prob, value, a_h, c_h, adj)
        return env_actions(spec, action), aux

    def record(s: PPOState, ts, _, aux, nts) -> tuple[PPOState, Any]:
        actor_in, critic_in, action, log_prob, value, a_h, c_h, adj = aux

        def final_value():
            final_in = nets.critic_input(nts.final_obs, nts.final_state, nts.final_alive)
            return nets.critic_apply(
                s.critic_params, c_h, final_in[None], jnp.zeros_like(s.start[None])
            )[1][0]

        any_done = seed_max(jnp.any(nts.done).astype(jnp.int32)) > 0
        ended = jax.lax.cond(any_done, final_value, lambda: jnp.zeros_like(value[0]))
        step = Rollout(
            actor_in=actor_in,
            critic_in=critic_in,
            avail=ts.avail_actions,
            action=action,
            log_prob=log_prob,
            value=value[0],
            next_value=ended,  # the final observation's value where done (set below)
            reward=nts.reward * cfg.reward_scale,
            alive=ts.alive,
            died=nts.died(ts.alive),
            start=s.start,
            terminated=nts.terminated,
            done=nts.done,
            adj=adj,
        )
        s = s.replace(start=nts.done, actor_carry=a_h, critic_carry=c_h)
        return s, (step, nts.metrics)

    state, (rollout, metrics) = run_steps(
        batch_step(env, cfg.num_envs), state, cfg.rollout_length, act, record
    )
    ts, c_h = state.timestep, state.critic_carry
    # the last step's true next observation (its final one where it ended)
    last_in = nets.critic_input(ts.final_obs, ts.final_state, ts.final_alive)
    _, last = nets.critic_apply(
        state.critic_params, c_h, last_in[None], jnp.zeros((1, cfg.num_envs), bool)
    )
    following = jnp.concatenate([rollout.value[1:], last], axis=0)
    done = rollout.done.reshape(rollout.done.shape + (1,) * (following.ndim - 2))
    rollout = rollout.replace(next_value=jnp.where(done, rollout.next_value, following))
    return state, rollout, episode_metrics(metrics)


def agent_ends(ro: Rollout, team_reward: np.ndarray | bool) -> tuple[Array, Array]:
    """Per-agent (terminated, done) [T, B, N].

    Where an agent is paid its side's team reward (`team_reward` [N], `EnvSpec.team_reward`,
    or one bool for all) only the episode's end ends its return, as in MAPPO's SMAC runner
    (`masks` zero only when the whole episode ends): a unit that dies still earns its side's
    later reward, which reaches its last living step through GAE; its dead steps stay out of
    the losses (`alive`). Under per-agent rewards an agent's death ends its own return (mfrl's
    `terminal = not alive`): nothing it earns comes after."""
    shape = ro.died.shape
    own = ro.died & ~jnp.asarray(team_reward, bool)
    term = jnp.broadcast_to(ro.terminated[..., None], shape)
    done = jnp.broadcast_to(ro.done[..., None], shape)
    return term | own, done | own


def advantages_and_targets(
    team_reward: np.ndarray | bool, cfg: PPOConfig, vn: ValueNorm, ro: Rollout
) -> tuple[Array, Array]:
    """Denormalised values -> GAE with per-agent ends (`agent_ends`) -> (advantages, value
    targets) [T, B, N]."""
    denorm = vn.denormalize if cfg.value_norm else (lambda x: x)
    terminated, done = agent_ends(ro, team_reward)
    adv, targets = gae(
        ro.reward,
        denorm(ro.value),
        denorm(ro.next_value),
        terminated,
        done,
        cfg.gamma,
        cfg.gae_lambda,
    )
    return adv, targets


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
