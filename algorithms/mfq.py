"""MF-Q (Yang et al. 2018): Q-learning on `Q(o_j, a_j, abar_j)`, where `abar_j` is the mean
one-hot action of agent j's neighbours (`env.neighbourhood`, e.g. within a radius).

One update:

1. Step `num_envs` auto-resetting environments `rollout_length` times. Each agent samples its
   action from the Boltzmann policy `pi(a) ∝ exp(Q(o, a, abar_prev) / T)` over its available
   actions, `abar_prev` being its neighbours' mean action of the previous step (zeros at an
   episode's start) and `T` a temperature annealed linearly over env steps. The new mean action
   `abar` of the joint action is computed from the neighbourhood of the state acted in, and
   each transition `(o, a, abar, r, o', avail')` (all agents of one env step together) goes
   into a replay buffer.
2. `train_steps` gradient steps on `batch_size` sampled env steps: the squared error between
   `Q(o, a, abar)` and `y = r + gamma (1 - terminated) v(o')` per agent (`terminated`: the
   episode ended or, under per-agent rewards, the agent died, mfrl's `not alive`), over the
   agents alive at `o` (under a team reward over all of them: `meanfield.value_samples`),
   with `v(o') = sum_a pi(a | o', abar) Q_target(o', a, abar)` (the paper's mean-field value;
   `pi` the Boltzmann policy of the online network at the current temperature) or, with
   `target: max`, `Q_target(o', argmax_a Q(o', a, abar), abar)`. As in the paper, the next
   state is valued with the mean action `abar` of the transition.
3. Target network: Polyak averaging with `tau` (or hard copies every `target_update_interval`).

`mean_action: false` removes the mean action from the input: independent Q-learning with the
same network, replay and policy (the paper's IL baseline). In a contest, `self_play: mirror`
trains one side against an earlier copy of itself, as mfrl does (`selfplay`); the default
`both` trains each side's own parameters.
Greedy evaluation acts by argmax with the previous step's mean action (`Policy.neighbourhood`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
from marl.learning.learner_config import LearnerConfig, defaults_from, shipped
from marl.learning.networks import MLP, AgentParams, agent_ids
from marl.learning.schedule import linear

from . import replay
from .meanfield import boltzmann_logits, mean_action, mean_field_value, value_samples
from .offpolicy import replay_step, replay_update
from .replay import EpisodeBuffer
from .selfplay import Rounds, SelfPlay, config_checks, init_rounds

Array = jax.Array

ACTION_KINDS = ("discrete",)
TARGETS = ("boltzmann", "max")


@dataclass(frozen=True)
@defaults_from("mfq")
class MFQConfig(LearnerConfig):
    """MF-Q hyperparameters (the paper's battle settings where they apply)."""

    num_envs: int  # parallel environments per seed
    rollout_length: int  # steps per environment per update
    train_steps: int  # gradient steps per update
    buffer_size: int  # agent-steps in replay: buffer_size // N env steps (>= batch)
    batch_size: int  # env steps per gradient step (each with all its agents)
    lr: float  # Adam (the paper's 1e-4)
    max_grad_norm: float
    gamma: float  # the paper's battle discount
    temperature_start: float  # Boltzmann temperature at step 0
    temperature_end: float  # ... after `temperature_steps` env steps
    temperature_steps: int
    target: str  # "boltzmann" (mean-field value) or "max"
    tau: float | None  # Polyak rate per update (None: hard copies)
    target_update_interval: int  # updates between hard copies when tau is None
    hidden: tuple[int, ...]
    activation: str
    layer_norm: bool
    parameter_sharing: str  # "all", "group" or "none"
    agent_id: bool  # one-hot agent id input (off: the network fits any agent count)
    mean_action: bool  # False: independent Q-learning with the same network
    reward_scale: float
    self_play: str  # contests: "both" sides learn, or "mirror" (side 0 against its copy)
    mirror_keep: float  # mirror: the opponent keeps this share of itself at each refresh

    def checks(self) -> dict[str, tuple[bool, str]]:
        """Checks of its own (the shared ones: `LearnerConfig`)."""
        return {
            "target": (self.target in TARGETS, "boltzmann or max"),
            "temperature_end": (
                0.0 < self.temperature_end <= self.temperature_start,
                "in (0, temperature_start]",
            ),
            "tau": (self.tau is None or 0.0 < self.tau <= 1.0, "null or in (0, 1]"),
            "target_update_interval": (self.target_update_interval >= 1, "a positive integer"),
            **config_checks(self.self_play, self.mirror_keep),
        }


class MFQNet(nn.Module):
    """`x [..., D] -> Q [..., A]`: an MLP and a linear head."""

    hidden: tuple[int, ...]
    activation: str
    layer_norm: bool
    action_dim: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        x = MLP(self.hidden, self.activation, self.layer_norm)(x)
        return nn.Dense(self.action_dim, kernel_init=nn.initializers.orthogonal(1.0))(x)


class MeanFieldQ:
    """The Q-network over agents: inputs `[obs, mean action, agent id]`, one set per group."""

    def __init__(self, env: MultiAgentEnv, cfg: MFQConfig):
        spec = env.spec
        self.spec, self.cfg = spec, cfg
        self.num_actions = spec.action_dim
        self.net = MFQNet(cfg.hidden, cfg.activation, cfg.layer_norm, spec.action_dim)
        self.sets = AgentParams.sharing(cfg.parameter_sharing, spec.agent_group)
        n = spec.num_agents
        self.input_dim = (
            spec.obs_dim + (spec.action_dim if cfg.mean_action else 0) + (n if cfg.agent_id else 0)
        )

    def inputs(self, obs: Array, mean: Array) -> Array:
        parts = [obs]
        if self.cfg.mean_action:
            parts.append(mean)
        if self.cfg.agent_id:
            parts.append(agent_ids(self.spec.num_agents, obs.shape[:-1], obs.ndim - 2))
        return jnp.concatenate(parts, axis=-1)

    def init(self, key: Array) -> Any:
        return self.sets.init(lambda k: self.net.init(k, jnp.zeros((1, self.input_dim))), key)

    def q(self, params: Any, obs: Array, mean: Array) -> Array:
        """`obs [B, N, D]`, `mean [B, N, A]` -> `[B, N, A]`."""
        x = self.inputs(obs, mean)
        return self.sets.apply(self.net.apply, params, x, in_axes=(1,), out_axes=1)


class Transition(struct.PyTreeNode):
    """One env step of all N agents."""

    obs: Array  # [N, D]
    mean: Array  # [N, A] the neighbours' mean action of this step's joint action
    action: Array  # [N] int32
    reward: Array  # [N]
    next_obs: Array  # [N, D] the true next observation
    next_avail: Array  # [N, A]
    alive: Array  # [N] agents acting at this step
    terminated: Array  # [N] this step ends the agent's return (`TimeStep.agent_terminated`)


class MFQState(struct.PyTreeNode):
    params: Any
    target_params: Any
    opt_state: Any
    buffer: EpisodeBuffer
    env_state: Any
    timestep: Any
    prev_mean: Array  # [B, N, A] last step's mean action (zeros at an episode's start)
    key: Array
    env_steps: Array
    updates: Array
    rounds: Rounds  # self_play=mirror: episodes won since the opponent's last refresh


def _neighbourhoods(env: MultiAgentEnv, states: Any) -> Array:
    return jax.vmap(env.neighbourhood)(states)


def make_policy(nets: MeanFieldQ, temperature: float) -> Policy:
    """Acting in one env: argmax (greedy) or Boltzmann sampling at `temperature`; the carry is
    the previous mean action; `neighbours` (the env's neighbourhood) is passed by the
    evaluator (`Policy.neighbourhood`)."""
    n, a = nets.spec.num_agents, nets.num_actions

    def initial_carry() -> Array:
        return jnp.zeros((n, a))

    def act(params, obs, avail, carry, start, key, greedy, neighbours=None):
        prev = jnp.where(start, 0.0, carry)
        q = nets.q(params, obs[None], prev[None])[0]
        logits = boltzmann_logits(q, avail, temperature)
        sampled = jax.random.categorical(key, logits, axis=-1)
        best = jnp.argmax(jnp.where(avail, q, -jnp.inf), axis=-1)
        actions = jnp.where(greedy, best, sampled).astype(jnp.int32)
        weights = jnp.ones((n, n)) - jnp.eye(n) if neighbours is None else neighbours
        return actions, mean_action(weights, actions, a)

    return Policy(initial_carry, act, neighbourhood=True)


def make_train(
    env: MultiAgentEnv, cfg: MFQConfig | dict | None = None, total_updates: int | None = None
) -> Train:
    """MF-Q (or, with `mean_action: false`, independent Q-learning) on `env`."""
    del total_updates  # the temperature runs on env steps
    cfg = cfg if isinstance(cfg, MFQConfig) else MFQConfig.from_dict(cfg)
    spec = env.spec
    if not spec.discrete:
        raise ValueError(f"MF-Q needs discrete actions; {spec.name} is continuous")
    nets = MeanFieldQ(env, cfg)
    learner = "mfq" if cfg.mean_action else "il"
    self_play = SelfPlay(env, nets.sets, learner, cfg.self_play, cfg.mirror_keep)
    wrapped = training_env(env)
    tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.lr))
    temperature = linear(cfg.temperature_start, cfg.temperature_end, cfg.temperature_steps)
    n, b, a = spec.num_agents, cfg.num_envs, spec.action_dim
    # a stored env step holds every agent's transition: size the buffer in agent-steps so
    # memory does not grow with N (64 units of 1,727-float observations fill gigabytes fast)
    capacity = max(cfg.batch_size, cfg.num_envs, cfg.buffer_size // n)

    def init(key: Array) -> MFQState:
        k_net, k_env, key = jax.random.split(key, 3)
        params = self_play.start(nets.init(k_net))
        env_state, ts = jax.vmap(wrapped.reset)(jax.random.split(k_env, b))
        example = Transition(
            obs=jnp.zeros((n, spec.obs_dim)),
            mean=jnp.zeros((n, a)),
            action=jnp.zeros((n,), jnp.int32),
            reward=jnp.zeros((n,)),
            next_obs=jnp.zeros((n, spec.obs_dim)),
            next_avail=jnp.zeros((n, a), bool),
            alive=jnp.zeros((n,), bool),
            terminated=jnp.zeros((n,), bool),
        )
        return MFQState(
            params=params,
            target_params=params,
            opt_state=tx.init(params),
            buffer=replay.init(example, capacity),
            env_state=env_state,
            timestep=ts,
            prev_mean=jnp.zeros((b, n, a)),
            key=key,
            env_steps=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
            rounds=init_rounds(b),
        )

    def collect(state: MFQState) -> tuple[MFQState, dict[str, Array]]:
        def act(s: MFQState, key: Array) -> tuple[Array, Array]:
            ts = s.timestep
            q = nets.q(s.params, ts.obs, s.prev_mean)
            logits = boltzmann_logits(q, ts.avail_actions, temperature(s.env_steps))
            actions = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
            return actions, mean_action(_neighbourhoods(wrapped, s.env_state), actions, a)

        def record(s: MFQState, ts, actions, mean, nts) -> tuple[MFQState, Any]:
            batch = Transition(
                obs=ts.obs,
                mean=mean,
                action=actions,
                reward=nts.reward * cfg.reward_scale,
                next_obs=nts.final_obs,
                next_avail=nts.final_avail,
                alive=ts.alive,
                terminated=nts.agent_terminated(ts.alive, nets.spec.team_reward),
            )
            s = s.replace(
                buffer=replay.add_masked(s.buffer, batch, jnp.ones((b,), bool)),
                prev_mean=jnp.where(nts.done[:, None, None], 0.0, mean),
                env_steps=s.env_steps + b,
                rounds=self_play.record(s.rounds, batch.reward, ts.alive, nts.done),
            )
            return s, nts.metrics

        state, metrics = rollout(batch_step(wrapped, b), state, cfg.rollout_length, act, record)
        return state, episode_metrics(metrics)

    def loss_fn(params, target_params, batch: Transition, temp: Array):
        q = nets.q(params, batch.obs, batch.mean)  # [M, N, A]
        taken = jnp.take_along_axis(q, batch.action[..., None], axis=-1)[..., 0]
        q_next_online = jax.lax.stop_gradient(nets.q(params, batch.next_obs, batch.mean))
        q_next_target = nets.q(target_params, batch.next_obs, batch.mean)
        value = mean_field_value(q_next_online, q_next_target, batch.next_avail, temp, cfg.target)
        not_term = 1.0 - batch.terminated.astype(jnp.float32)
        target = jax.lax.stop_gradient(batch.reward + cfg.gamma * not_term * value)
        mask = value_samples(batch.alive, nets.spec.team_reward) * self_play.learners
        loss = jnp.sum(mask * (taken - target) ** 2) / jnp.maximum(jnp.sum(mask), 1.0)
        return loss, {
            "loss/td": loss,
            "q/taken": jnp.sum(mask * taken) / jnp.maximum(jnp.sum(mask), 1.0),
        }

    def learn(state: MFQState) -> tuple[MFQState, dict[str, Array]]:
        temp = temperature(state.env_steps)

        def grad_step(carry, xs):
            params, opt_state = carry
            batch = replay.sample(state.buffer, xs[0], cfg.batch_size)
            (_, m), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                params, state.target_params, batch, temp
            )
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), m

        done = replay_update(
            state.key,
            state.params,
            state.opt_state,
            state.target_params,
            state.updates,
            grad_step,
            state.buffer.size,
            cfg,
        )
        state = state.replace(
            params=done.online,
            target_params=done.target,
            opt_state=done.opt_state,
            key=done.key,
            updates=done.updates,
        )
        params, rounds, refreshed = self_play.update(state.params, state.rounds)
        return state.replace(params=params, rounds=rounds), {**done.metrics, **refreshed}

    def schedules(state: MFQState) -> dict[str, Array]:
        return {"temperature": temperature(state.env_steps)}

    return Train(
        init=init,
        step=replay_step(collect, learn, cfg.train_steps, schedules),
        params=lambda s: self_play.saved(s.params),
        policy=make_policy(nets, cfg.temperature_end),
        config=cfg,
        steps_per_update=cfg.num_envs * cfg.rollout_length,
        num_envs=cfg.num_envs,
    )


def make_train_il(
    env: MultiAgentEnv, cfg: MFQConfig | dict | None = None, total_updates: int | None = None
) -> Train:
    """IL (Yang et al. 2018's baseline): MF-Q without the mean-action input, i.e. independent
    Q-learning with the same network, replay, Boltzmann policy and targets. A config object
    is taken without its mean action; `mean_action=True` in a dict is refused."""
    if isinstance(cfg, MFQConfig):
        return make_train(env, replace(cfg, mean_action=False), total_updates)
    if (cfg or {}).get("mean_action", False) is True:
        raise ValueError("il is MF-Q without the mean action: mean_action must be false (use mfq)")
    return make_train(env, {**shipped("il"), **(cfg or {})}, total_updates)


def steps_per_update(env: MultiAgentEnv, cfg: MFQConfig | dict | None = None) -> int:
    """Env steps one MF-Q update takes, as `make_train`'s Train says, without building it."""
    settings = cfg if isinstance(cfg, MFQConfig) else MFQConfig.from_dict(cfg)
    return settings.num_envs * settings.rollout_length


def steps_per_update_il(env: MultiAgentEnv, cfg: MFQConfig | dict | None = None) -> int:
    """Env steps one IL update takes, as `make_train_il`'s Train says, without building it."""
    return steps_per_update(
        env, cfg if isinstance(cfg, MFQConfig) else {**shipped("il"), **(cfg or {})}
    )


make_train.action_kinds = make_train_il.action_kinds = ACTION_KINDS  # checked before building
make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)
make_train_il.steps_per_update = steps_per_update_il
