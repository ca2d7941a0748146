"""Dec-POMFC (Cui, Hauck, Fabian, Koeppl; ICLR 2024, arXiv 2307.06175): decentralised,
partially observable mean-field control, trained by Dec-POMFPPO.

In the limit of many permutation-invariant agents, the swarm is one system whose state is the
mean field mu_t (the distribution of the agents' states) and whose action is a decision rule
xi_t, a map from an agent's own observation y to a distribution over its actions, that every
agent applies; the reward r(mu_t) is a function of the mean field (an order parameter). That
upper-level system is a single-agent MDP, and Dec-POMFPPO solves it with PPO under
centralised training:

- the upper-level action is the decision rule's parameters: xi_t = (W_t, b_t), with
  `pi(u | y) = softmax(W_t y + b_t)` over the available actions, drawn from a Gaussian
  `N(m_theta(t / T), diag sigma^2)` (the upper-level policy; `sigma` learned, state-free);
- the critic V_phi(mu_t, t / T) reads the mean field through its kernel representation, the
  environment's global state (`marl.envs.swarm`: Gaussian kernels on a cell grid, the same
  size at any N, where histograms would grow with the resolution);
- PPO's ratio is the upper-level policy's, of the one xi_t drawn per environment and step
  (every agent then samples its own action from the decision rule, part of the upper level's
  environment); the team reward is the agents' mean; advantages by GAE.

Execution is decentralised and open loop in the mean field: the upper-level policy reads the
time only (the limit's mean field evolves deterministically from mu_0, so a sequence of
decision rules is enough), so each agent computes xi_t = m_theta(t / T) itself and acts on its
own observation (greedy: the decision rule's most likely action). Because the policy and the
critic read the time, the episode limit ends the upper-level episode (marl's one time-limit
rule: inputs that carry the time make the limit terminal).

Read from the paper's abstract and its description of Dec-POMFPPO (open-loop upper-level
policies, kernel mean-field representations, PPO on the upper level); its exact network
sizes and decision-rule parametrisation could not be checked here (see results/fidelity.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy, Train
from marl.core.wrappers import episode_metrics, training_env
from marl.learning.acting import batch_step, rollout
from marl.learning.learner_config import LearnerConfig, defaults_from
from marl.learning.networks import MLP, ortho

from .onpolicy import clipped_surrogate, gae, normalize_advantages, sgd_epochs, value_loss

Array = jax.Array


@dataclass(frozen=True)
@defaults_from("decpomfc")
class DecPOMFCConfig(LearnerConfig):
    """Dec-POMFPPO hyperparameters."""

    num_envs: int  # parallel environments per seed (each one upper-level trajectory)
    rollout_length: int  # steps per environment per update
    lr: float  # Adam, upper-level policy and critic
    epochs: int
    num_minibatches: int  # split over the environments
    clip_eps: float
    gamma: float
    gae_lambda: float
    ent_coef: float  # bonus on the upper-level Gaussian's entropy
    vf_coef: float
    max_grad_norm: float
    hidden: tuple[int, ...]  # the upper-level policy's and the critic's MLPs
    activation: str
    init_log_std: float  # the upper-level Gaussian's initial log std, per parameter
    rule_scale: float  # the decision rule's logits are rule_scale * (W y + b)

    def checks(self) -> dict[str, tuple[bool, str]]:
        return {
            "epochs": (self.epochs >= 1, "a positive integer"),
            "num_minibatches": (
                self.num_minibatches >= 1 and self.num_envs % self.num_minibatches == 0,
                "a divisor of num_envs",
            ),
            "clip_eps": (self.clip_eps > 0.0, "> 0"),
            "rule_scale": (self.rule_scale > 0.0, "> 0"),
        }


class Upper(nn.Module):
    """The upper-level policy's mean m_theta(t / T) and its log std (state-free)."""

    dim: int
    hidden: tuple[int, ...]
    activation: str
    init_log_std: float

    @nn.compact
    def __call__(self, tau: Array) -> tuple[Array, Array]:
        h = MLP(self.hidden, self.activation)(time_features(tau))
        mean = nn.Dense(self.dim, kernel_init=ortho(0.01), bias_init=nn.initializers.zeros)(h)
        log_std = self.param("log_std", nn.initializers.constant(self.init_log_std), (self.dim,))
        return mean, jnp.broadcast_to(log_std, mean.shape)


class MeanFieldCritic(nn.Module):
    """V_phi(mu, t / T) on the kernel representation of the mean field."""

    hidden: tuple[int, ...]
    activation: str

    @nn.compact
    def __call__(self, mean_field: Array, tau: Array) -> Array:
        x = jnp.concatenate([mean_field, time_features(tau)], axis=-1)
        h = MLP(self.hidden, self.activation)(x)
        return nn.Dense(1, kernel_init=ortho(1.0))(h)[..., 0]


def time_features(tau: Array) -> Array:
    """[..., 5]: t / T and two harmonics of it."""
    tau = tau[..., None]
    k = jnp.array([1.0, 2.0])
    return jnp.concatenate([tau, jnp.sin(jnp.pi * k * tau), jnp.cos(jnp.pi * k * tau)], -1)


def gaussian_log_prob(x: Array, mean: Array, log_std: Array) -> Array:
    z = (x - mean) / jnp.exp(log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


class DecisionRule:
    """`pi(u | y) = softmax(scale (W y + b))` over the available actions; xi = (W, b) flat."""

    def __init__(self, obs_dim: int, num_actions: int, scale: float):
        self.obs_dim, self.num_actions, self.scale = obs_dim, num_actions, scale
        self.dim = num_actions * (obs_dim + 1)

    def log_probs(self, xi: Array, obs: Array, avail: Array) -> Array:
        """[N, A] from xi [dim], obs [N, obs_dim], avail [N, A]."""
        w = xi[: -self.num_actions].reshape(self.obs_dim, self.num_actions)
        b = xi[-self.num_actions :]
        logits = self.scale * (obs @ w + b)
        return jax.nn.log_softmax(jnp.where(avail.astype(bool), logits, -1e9), axis=-1)


class DecPOMFCState(struct.PyTreeNode):
    upper: Any
    critic: Any
    opt: Any
    env_state: Any
    timestep: Any
    t: Array  # [B] int32 steps into the current episode
    key: Array


def make_policy(upper: Upper, rule: DecisionRule, limit: int) -> Policy:
    """Decentralised execution: each agent computes xi_t = m_theta(t / T) from the time it
    counts itself (the carry) and samples (or, greedy, takes the mode of) the decision rule on
    its own observation."""

    def initial_carry() -> Array:
        return jnp.zeros((), jnp.int32)

    def act(params, obs, avail, carry, start, key, greedy):
        t = jnp.where(start, 0, carry)
        mean, _ = upper.apply(params, t / limit)
        logp = rule.log_probs(mean, obs, avail)
        sampled = jax.random.categorical(key, logp, axis=-1)
        return jnp.where(greedy, jnp.argmax(logp, -1), sampled).astype(jnp.int32), t + 1

    return Policy(initial_carry, act)


def make_train(
    env: MultiAgentEnv, cfg: DecPOMFCConfig | dict | None = None, total_updates: int | None = None
) -> Train:
    """Dec-POMFPPO on `env` (discrete actions; the env's global state is the mean field's
    representation, as the swarm family's is)."""
    del total_updates
    cfg = cfg if isinstance(cfg, DecPOMFCConfig) else DecPOMFCConfig.from_dict(cfg)
    spec = env.spec
    if not spec.discrete:
        raise ValueError(f"decpomfc needs discrete actions; {spec.name} is continuous")
    if len(spec.groups) != 1:
        raise ValueError(
            f"decpomfc controls one swarm of interchangeable agents; {spec.name} has "
            f"{len(spec.groups)} groups"
        )
    limit, b = spec.episode_limit, cfg.num_envs
    rule = DecisionRule(spec.obs_dim, spec.action_dim, cfg.rule_scale)
    upper = Upper(rule.dim, tuple(cfg.hidden), cfg.activation, cfg.init_log_std)
    critic = MeanFieldCritic(tuple(cfg.hidden), cfg.activation)
    wrapped = training_env(env)
    tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.lr))

    def init(key: Array) -> DecPOMFCState:
        k_upper, k_critic, k_env, key = jax.random.split(key, 4)
        upper_params = upper.init(k_upper, jnp.zeros(()))
        critic_params = critic.init(k_critic, jnp.zeros(spec.state_dim), jnp.zeros(()))
        env_state, ts = jax.vmap(wrapped.reset)(jax.random.split(k_env, b))
        return DecPOMFCState(
            upper=upper_params,
            critic=critic_params,
            opt=tx.init((upper_params, critic_params)),
            env_state=env_state,
            timestep=ts,
            t=jnp.zeros(b, jnp.int32),
            key=key,
        )

    def step(state: DecPOMFCState) -> tuple[DecPOMFCState, dict[str, Array]]:
        def act(s: DecPOMFCState, key: Array) -> tuple[Array, Any]:
            k_xi, k_u = jax.random.split(key)
            tau = s.t / limit
            mean, log_std = upper.apply(s.upper, tau)  # [B, D]
            xi = mean + jnp.exp(log_std) * jax.random.normal(k_xi, mean.shape)
            logp = jax.vmap(rule.log_probs)(xi, s.timestep.obs, s.timestep.avail_actions)
            actions = jax.random.categorical(k_u, logp, axis=-1).astype(jnp.int32)
            return actions, (xi, gaussian_log_prob(xi, mean, log_std))

        def record(s: DecPOMFCState, ts, actions, aux, nts) -> tuple[DecPOMFCState, Any]:
            xi, logp = aux
            t_next = s.t + 1
            at_limit = t_next >= limit  # the inputs carry the time: the limit is terminal
            data = {
                "tau": s.t / limit,
                "mean_field": ts.state,
                "xi": xi,
                "logp": logp,
                "reward": jnp.mean(nts.reward, axis=-1),
                "next_mean_field": nts.final_state,
                "next_tau": t_next / limit,
                "terminated": nts.terminated | at_limit,
                "done": nts.done,
            }
            s = s.replace(t=jnp.where(nts.done, 0, t_next))
            return s, (data, nts.metrics)

        state, (data, env_metrics) = rollout(
            batch_step(wrapped, b), state, cfg.rollout_length, act, record
        )
        values = critic.apply(state.critic, data["mean_field"], data["tau"])
        next_values = critic.apply(state.critic, data["next_mean_field"], data["next_tau"])
        adv, targets = gae(
            data["reward"],
            values,
            next_values,
            data["terminated"],
            data["done"],
            cfg.gamma,
            cfg.gae_lambda,
        )
        old_values = values

        def loss_fn(params, idx):
            up, cr = params
            mb = jax.tree.map(lambda x: jnp.take(x, idx, axis=1), data)
            mb_adv = normalize_advantages(jnp.take(adv, idx, axis=1), jnp.ones(()))
            mean, log_std = upper.apply(up, mb["tau"])
            logp = gaussian_log_prob(mb["xi"], mean, log_std)
            pg, info = clipped_surrogate(logp, mb["logp"], mb_adv, cfg.clip_eps, jnp.ones(()))
            entropy = jnp.mean(jnp.sum(log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e), axis=-1))
            v = critic.apply(cr, mb["mean_field"], mb["tau"])
            vl = value_loss(
                v,
                jnp.take(old_values, idx, axis=1),
                jnp.take(targets, idx, axis=1),
                jnp.ones(()),
                cfg.clip_eps,
                None,
            )
            loss = pg - cfg.ent_coef * entropy + cfg.vf_coef * vl
            return loss, {"loss/actor": pg, "loss/critic": vl, "entropy": entropy, **info}

        key, k_sgd = jax.random.split(state.key)
        (up, cr), opt, (_, aux) = sgd_epochs(
            loss_fn,
            tx,
            (state.upper, state.critic),
            state.opt,
            k_sgd,
            cfg.epochs,
            b,
            cfg.num_minibatches,
        )
        state = state.replace(upper=up, critic=cr, opt=opt, key=key)
        metrics = {**episode_metrics(env_metrics), **jax.tree.map(jnp.mean, aux)}
        return state, metrics

    return Train(
        init=init,
        step=step,
        params=lambda s: s.upper,
        policy=make_policy(upper, rule, limit),
        config=cfg,
        steps_per_update=cfg.num_envs * cfg.rollout_length,
        num_envs=cfg.num_envs,
    )


def steps_per_update(env: MultiAgentEnv, cfg: DecPOMFCConfig | dict | None = None) -> int:
    """Env steps one update takes, as `make_train`'s Train says, without building it."""
    settings = cfg if isinstance(cfg, DecPOMFCConfig) else DecPOMFCConfig.from_dict(cfg)
    return settings.num_envs * settings.rollout_length


make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)

__all__ = ["DecPOMFCConfig", "make_train", "steps_per_update"]
