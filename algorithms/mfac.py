"""MF-AC (Yang et al. 2018): an actor `pi(a_j | o_j, abar_j)` and a critic `Q(o_j, a_j, abar_j)`
over the neighbours' mean action, trained on-policy.

One update: step `num_envs` environments `rollout_length` times, each agent sampling from its
actor given the previous step's neighbourhood mean action (zeros at an episode's start); then

- critic: squared error between `Q(o, a, abar)` and `r + gamma (1 - terminated) v(o')` (per
  agent: the episode ended or, under per-agent rewards, the agent died, mfrl's `not alive`),
  over the agents alive at `o` (under a team reward over all: `meanfield.value_samples`), with
  `v(o') = sum_a pi(a | o', abar) Q_target(o', a, abar)` (the mean-field value under the actor;
  `abar`, this step's mean action, is what the actor conditions on at `o'`);
- actor: policy gradient with the advantage `Q(o, a, abar) - sum_a' pi(a' | o, abar_prev)
  Q(o, a', abar)` (constant) plus an entropy bonus;
- target critic: Polyak averaging with `tau`.

The actor's loss is averaged over the agents alive at each step. Greedy evaluation takes the actor's
most likely available action. In a contest, `self_play: mirror` trains one side's actor and
critic against an earlier copy of its actor, as mfrl does (`selfplay`); the default `both`
trains each side's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy, Train
from marl.core.wrappers import episode_metrics, training_env
from marl.learning.acting import batch_step, rollout
from marl.learning.learner_config import LearnerConfig, defaults_from

from .meanfield import mean_action, value_samples
from .mfq import MeanFieldQ, MFQConfig, _neighbourhoods
from .qlearning import soft_update
from .selfplay import Rounds, SelfPlay, config_checks, init_rounds

Array = jax.Array

ACTION_KINDS = ("discrete",)


@dataclass(frozen=True)
@defaults_from("mfac")
class MFACConfig(LearnerConfig):
    """MF-AC hyperparameters."""

    num_envs: int  # parallel environments per seed
    rollout_length: int  # steps per environment per update
    actor_lr: float  # Adam
    critic_lr: float  # Adam
    max_grad_norm: float
    gamma: float
    ent_coef: float  # entropy bonus of the actor
    tau: float  # Polyak rate of the target critic per update
    hidden: tuple[int, ...]
    activation: str
    layer_norm: bool
    parameter_sharing: str  # "all", "group" or "none"
    agent_id: bool
    mean_action: bool  # False: independent actor-critic with the same networks
    reward_scale: float
    self_play: str  # contests: "both" sides learn, or "mirror" (side 0 against its copy)
    mirror_keep: float  # mirror: the opponent keeps this share of itself at each refresh

    def checks(self) -> dict[str, tuple[bool, str]]:
        """Checks of its own (the shared ones: `LearnerConfig`)."""
        return {
            "tau": (0.0 < self.tau <= 1.0, "in (0, 1]"),
            **config_checks(self.self_play, self.mirror_keep),
        }

    def networks_config(self) -> MFQConfig:
        """The fields `MeanFieldQ` reads, for the actor and the critic alike."""
        return MFQConfig(
            hidden=self.hidden,
            activation=self.activation,
            layer_norm=self.layer_norm,
            parameter_sharing=self.parameter_sharing,
            agent_id=self.agent_id,
            mean_action=self.mean_action,
        )


class MFACState(struct.PyTreeNode):
    actor: Any
    critic: Any
    target_critic: Any
    actor_opt: Any
    critic_opt: Any
    env_state: Any
    timestep: Any
    prev_mean: Array  # [B, N, A]
    key: Array
    rounds: Rounds  # self_play=mirror: episodes won since the opponent's last refresh


def _log_probs(logits: Array, avail: Array) -> Array:
    return jax.nn.log_softmax(jnp.where(avail.astype(bool), logits, -1e9), axis=-1)


def make_policy(actor: MeanFieldQ) -> Policy:
    """Acting in one env: the actor's argmax (greedy) or a sample; carry = last mean action."""
    n, a = actor.spec.num_agents, actor.num_actions

    def initial_carry() -> Array:
        return jnp.zeros((n, a))

    def act(params, obs, avail, carry, start, key, greedy, neighbours=None):
        prev = jnp.where(start, 0.0, carry)
        logp = _log_probs(actor.q(params, obs[None], prev[None])[0], avail)
        sampled = jax.random.categorical(key, logp, axis=-1)
        actions = jnp.where(greedy, jnp.argmax(logp, axis=-1), sampled).astype(jnp.int32)
        weights = jnp.ones((n, n)) - jnp.eye(n) if neighbours is None else neighbours
        return actions, mean_action(weights, actions, a)

    return Policy(initial_carry, act, neighbourhood=True)


def make_train(
    env: MultiAgentEnv, cfg: MFACConfig | dict | None = None, total_updates: int | None = None
) -> Train:
    """MF-AC on `env`."""
    del total_updates
    cfg = cfg if isinstance(cfg, MFACConfig) else MFACConfig.from_dict(cfg)
    spec = env.spec
    if not spec.discrete:
        raise ValueError(f"MF-AC needs discrete actions; {spec.name} is continuous")
    actor = MeanFieldQ(env, cfg.networks_config())  # outputs logits over actions
    critic = MeanFieldQ(env, cfg.networks_config())  # outputs Q over actions
    self_play = SelfPlay(env, actor.sets, "mfac", cfg.self_play, cfg.mirror_keep)
    wrapped = training_env(env)
    actor_tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.actor_lr))
    critic_tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.critic_lr))
    n, b, a = spec.num_agents, cfg.num_envs, spec.action_dim

    def init(key: Array) -> MFACState:
        k_actor, k_critic, k_env, key = jax.random.split(key, 4)
        actor_params, critic_params = self_play.start(actor.init(k_actor)), critic.init(k_critic)
        env_state, ts = jax.vmap(wrapped.reset)(jax.random.split(k_env, b))
        return MFACState(
            actor=actor_params,
            critic=critic_params,
            target_critic=critic_params,
            actor_opt=actor_tx.init(actor_params),
            critic_opt=critic_tx.init(critic_params),
            env_state=env_state,
            timestep=ts,
            prev_mean=jnp.zeros((b, n, a)),
            key=key,
            rounds=init_rounds(b),
        )

    def step(state: MFACState) -> tuple[MFACState, dict[str, Array]]:
        def act(s: MFACState, key: Array) -> tuple[Array, Array]:
            ts = s.timestep
            logp = _log_probs(actor.q(s.actor, ts.obs, s.prev_mean), ts.avail_actions)
            actions = jax.random.categorical(key, logp, axis=-1).astype(jnp.int32)
            return actions, mean_action(_neighbourhoods(wrapped, s.env_state), actions, a)

        def record(s: MFACState, ts, actions, mean, nts) -> tuple[MFACState, Any]:
            step_data = {
                "obs": ts.obs,
                "avail": ts.avail_actions,
                "prev_mean": s.prev_mean,
                "mean": mean,
                "action": actions,
                "reward": nts.reward * cfg.reward_scale,
                "next_obs": nts.final_obs,
                "next_avail": nts.final_avail,
                "alive": ts.alive,
                "terminated": nts.agent_terminated(ts.alive, spec.team_reward),
            }
            s = s.replace(
                prev_mean=jnp.where(nts.done[:, None, None], 0.0, mean),
                rounds=self_play.record(s.rounds, step_data["reward"], ts.alive, nts.done),
            )
            return s, (step_data, nts.metrics)

        state, (data, env_metrics) = rollout(
            batch_step(wrapped, b), state, cfg.rollout_length, act, record
        )
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), data)  # [T B, ...]
        mask = flat["alive"].astype(jnp.float32) * self_play.learners
        count = jnp.maximum(jnp.sum(mask), 1.0)
        v_mask = value_samples(flat["alive"], spec.team_reward) * self_play.learners
        v_count = jnp.maximum(jnp.sum(v_mask), 1.0)

        # critic: TD towards the mean-field value under the current actor
        next_logp = _log_probs(
            actor.q(state.actor, flat["next_obs"], flat["mean"]), flat["next_avail"]
        )
        q_next = critic.q(state.target_critic, flat["next_obs"], flat["mean"])
        value = jnp.sum(jnp.exp(next_logp) * jnp.where(flat["next_avail"], q_next, 0.0), axis=-1)
        not_term = 1.0 - flat["terminated"].astype(jnp.float32)
        target = jax.lax.stop_gradient(flat["reward"] + cfg.gamma * not_term * value)

        def critic_loss(params):
            q = critic.q(params, flat["obs"], flat["mean"])
            taken = jnp.take_along_axis(q, flat["action"][..., None], axis=-1)[..., 0]
            return jnp.sum(v_mask * (taken - target) ** 2) / v_count, q

        (c_loss, q_all), c_grads = jax.value_and_grad(critic_loss, has_aux=True)(state.critic)
        c_updates, critic_opt = critic_tx.update(c_grads, state.critic_opt, state.critic)
        critic_params = optax.apply_updates(state.critic, c_updates)

        # actor: policy gradient with the critic's advantage
        q_all = jax.lax.stop_gradient(q_all)

        def actor_loss(params):
            logp = _log_probs(actor.q(params, flat["obs"], flat["prev_mean"]), flat["avail"])
            probs = jnp.exp(logp)
            baseline = jnp.sum(probs * jnp.where(flat["avail"], q_all, 0.0), axis=-1)
            taken_q = jnp.take_along_axis(q_all, flat["action"][..., None], axis=-1)[..., 0]
            adv = jax.lax.stop_gradient(taken_q - baseline)
            taken_logp = jnp.take_along_axis(logp, flat["action"][..., None], axis=-1)[..., 0]
            entropy = -jnp.sum(jnp.where(flat["avail"], probs * logp, 0.0), axis=-1)
            pg = jnp.sum(mask * adv * taken_logp) / count
            ent = jnp.sum(mask * entropy) / count
            return -(pg + cfg.ent_coef * ent), ent

        (a_loss, entropy), a_grads = jax.value_and_grad(actor_loss, has_aux=True)(state.actor)
        a_updates, actor_opt = actor_tx.update(a_grads, state.actor_opt, state.actor)
        state = state.replace(
            actor=optax.apply_updates(state.actor, a_updates),
            critic=critic_params,
            target_critic=soft_update(state.target_critic, critic_params, cfg.tau),
            actor_opt=actor_opt,
            critic_opt=critic_opt,
        )
        metrics = {
            **episode_metrics(env_metrics),
            "loss/critic": c_loss,
            "loss/actor": a_loss,
            "entropy": entropy,
        }
        actor_params, rounds, refreshed = self_play.update(state.actor, state.rounds)
        return state.replace(actor=actor_params, rounds=rounds), {**metrics, **refreshed}

    return Train(
        init=init,
        step=step,
        params=lambda s: self_play.saved(s.actor),
        policy=make_policy(actor),
        config=cfg,
        steps_per_update=cfg.num_envs * cfg.rollout_length,
        num_envs=cfg.num_envs,
    )


def steps_per_update(env: MultiAgentEnv, cfg: MFACConfig | dict | None = None) -> int:
    """Env steps one update takes, as `make_train`'s Train says, without building it."""
    settings = cfg if isinstance(cfg, MFACConfig) else MFACConfig.from_dict(cfg)
    return settings.num_envs * settings.rollout_length


make_train.action_kinds = ACTION_KINDS  # checked before anything is built (`marl train`)
make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)
