"""Value-based learners on whole episodes, as pymarl: IQL, VDN and QMIX share everything here
but the mixer (`mixer=None`: independent Q-learning on each agent's own reward).

One update:

1. Step `num_envs` auto-resetting environments `rollout_length` times with epsilon-greedy
   recurrent agents (epsilon annealed linearly over env steps, only available actions). Every
   step is written into the episode its environment is building; when an episode ends it is
   committed whole to the replay buffer. Row `t + 1` of obs/state/avail is the true state after
   step `t`, so a truncated episode bootstraps from its real final state and a terminated one
   does not bootstrap at all. Env steps are counted exactly (no padded steps are simulated).
2. `train_steps` gradient steps, once the buffer holds `batch_size` episodes: the agent network
   is unrolled over each sampled episode from a zero hidden state; targets are double-Q (or
   plain max) TD(lambda) targets from the target network, mixed by the target mixer; the loss
   is the squared TD error over the episodes' real steps (padding masked out). The unroll
   stops at the longest row rounded up to a bucket, and with `pack_episodes > 1` several
   short episodes share a row (`packing`): the same loss over fewer padded steps.
3. Target network: a hard copy every `target_update_interval` updates, or Polyak with `tau`.

Agents take `[obs, one-hot last action, one-hot agent id]` (each part switchable), share one
network per agent group (`parameter_sharing`), and act on a leading agent axis.
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
from marl.core.learner import (
    Policy,
    Train,
    check_cooperative,
    seed_max,
    warn_unscheduled,
)
from marl.core.wrappers import episode_metrics, training_env
from marl.learning.acting import batch_step, rollout
from marl.learning.learner_config import LearnerConfig, defaults_from
from marl.learning.networks import AgentParams, QNetwork, agent_ids
from marl.learning.schedule import linear, scaled

from . import packing, replay
from .offpolicy import replay_step, replay_update
from .onpolicy import ValueNorm
from .qlearning import double_q_targets, epsilon_greedy, masked_td_loss
from .replay import Episode, EpisodeBuffer, empty_episodes, finish_episodes, record_step

Array = jax.Array

# Value-based learners pick an action by argmax: they act only in discrete action spaces
# (`marl.run.config.check_compatible` refuses the rest before anything is compiled).
ACTION_KINDS = ("discrete",)


@dataclass(frozen=True)
@defaults_from("qmix")
class QConfig(LearnerConfig):
    """Hyperparameters shared by IQL, VDN and QMIX: the shipped `marl/conf/algo/{vdn,qmix}.yaml`
    defaults (pymarl2's tuned QMIX with pymarl's batch of 32; each explained there), so Python
    and `marl train` build the same learner; IQL's own default is one-step targets."""

    num_envs: int  # parallel environments per seed (pymarl2: batch_size_run 8)
    rollout_length: int  # steps per environment per update
    train_steps: int  # gradient steps per update
    buffer_size: int  # episodes kept in the replay buffer
    batch_size: int  # episodes per gradient step (pymarl: 32; pymarl2: 128)
    lr: float  # learning rate
    anneal_lr: bool  # linear decay to 0 over the run's updates (needs total_updates)
    optimizer: str  # "adam" (pymarl2), "rmsprop" (pymarl: alpha 0.99, eps 1e-5), "radam" (JaxMARL)
    max_grad_norm: float  # global gradient-norm clip
    gamma: float  # discount
    td_lambda: float  # TD(lambda) targets (0: one-step)
    double_q: bool  # argmax by the online network, value by the target network
    epsilon_start: float  # exploration at step 0
    epsilon_end: float  # exploration after `epsilon_steps` (and when not greedy)
    epsilon_steps: int  # env steps (per seed) over which epsilon is annealed
    target_update_interval: int  # updates between hard target copies (~200 episodes)
    tau: float | None  # Polyak rate per update instead of hard copies (None: hard)
    hidden: tuple[int, ...]  # MLP widths (the first feeds the GRU when recurrent)
    activation: str
    recurrent: bool  # GRU agent (pymarl's RNN agent)
    gru_hidden: int  # GRU state size
    layer_norm: bool
    feature_norm: bool  # layer norm of the network inputs
    parameter_sharing: str  # "all", "group" (one network per agent group) or "none"
    agent_id: bool  # one-hot agent id input
    last_action: bool  # one-hot previous action input (zeros at an episode's start)
    reward_scale: float  # multiply rewards before computing targets
    standardise_rewards: bool  # targets from (r - running mean) / running std
    unroll_buckets: int  # unroll lengths: the row length split evenly into this many
    pack_episodes: int  # episodes laid end to end per unrolled row (same loss, less padding)

    def checks(self) -> dict[str, tuple[bool, str]]:
        """Checks of its own (the shared ones: `LearnerConfig`)."""
        return {
            "optimizer": (self.optimizer in ("adam", "rmsprop", "radam"), "adam, rmsprop or radam"),
            "num_envs": (1 <= self.num_envs <= self.buffer_size, "in 1 .. buffer_size"),
            "td_lambda": (0.0 <= self.td_lambda <= 1.0, "in [0, 1]"),
            "target_update_interval": (self.target_update_interval >= 1, "a positive integer"),
            "tau": (self.tau is None or 0.0 < self.tau <= 1.0, "null or in (0, 1]"),
            "unroll_buckets": (self.unroll_buckets >= 1, "a positive integer"),
            "pack_episodes": (
                self.pack_episodes >= 1 and self.batch_size % self.pack_episodes == 0,
                "a positive divisor of batch_size",
            ),
        }


class QState(struct.PyTreeNode):
    """Learner state of one seed. `B` = num_envs, `N` agents, `H` GRU size."""

    params: Any  # agent Q-network, stacked per parameter set
    mixer_params: Any  # mixer (an empty dict without one)
    target_params: Any
    target_mixer_params: Any
    opt_state: Any
    buffer: EpisodeBuffer
    building: Episode  # [B, T+1, ...] the episode each environment is in the middle of
    env_state: Any
    timestep: Any
    carry: Array  # [B, N, H] agent hidden states
    last_action: Array  # [B, N] int32, -1 at an episode's start
    t: Array  # [B] int32 step of the running episode
    key: Array
    reward_norm: ValueNorm  # running mean/std of the (scaled) rewards of every env step
    env_steps: Array  # [] int32 env steps taken by this seed (drives epsilon)
    updates: Array  # [] int32


class QNetworks:
    """The agent Q-network with its parameter sets, and how its inputs are built."""

    def __init__(self, env: MultiAgentEnv, cfg: QConfig):
        spec = env.spec
        self.spec, self.cfg = spec, cfg
        self.num_actions = spec.action_dim
        self.net = QNetwork(
            hidden=cfg.hidden,
            activation=cfg.activation,
            recurrent=cfg.recurrent,
            gru_hidden=cfg.gru_hidden,
            layer_norm=cfg.layer_norm,
            feature_norm=cfg.feature_norm,
            action_dim=spec.action_dim,
        )
        self.sets = AgentParams.sharing(cfg.parameter_sharing, spec.agent_group)
        n = spec.num_agents
        self.input_dim = (
            spec.obs_dim + (spec.action_dim if cfg.last_action else 0) + (n if cfg.agent_id else 0)
        )
        self.hidden_dim = cfg.gru_hidden if cfg.recurrent else 1

    def inputs(self, obs: Array, last_action: Array) -> Array:
        """`obs [..., N, D]`, `last_action [..., N]` (-1: none) -> agent inputs `[..., N, D']`."""
        parts = [obs]
        if self.cfg.last_action:
            parts.append(jax.nn.one_hot(last_action, self.num_actions, dtype=obs.dtype))
        if self.cfg.agent_id:
            parts.append(agent_ids(self.spec.num_agents, obs.shape[:-1], obs.ndim - 2))
        return jnp.concatenate(parts, axis=-1)

    def init(self, key: Array) -> Any:
        h = jnp.zeros((1, self.hidden_dim))
        x = jnp.zeros((1, 1, self.input_dim))
        resets = jnp.zeros((1, 1), bool)
        return self.sets.init(lambda k: self.net.init(k, h, x, resets), key)

    def apply(self, params: Any, carry: Array, x: Array, resets: Array) -> tuple[Array, Array]:
        """`carry [B, N, H]`, `x [T, B, N, D]`, `resets [T, B]` -> (carry, q [T, B, N, A])."""
        return self.sets.apply(
            self.net.apply,
            params,
            carry,
            x,
            jnp.broadcast_to(resets[..., None], x.shape[:-1]),
            in_axes=(1, 2, 2),
            out_axes=(1, 2),
        )

    def episode_q(self, params: Any, episodes: Episode, resets: Array | None = None) -> Array:
        """Q-values over stored episodes `[E, T+1, ...]` -> `[E, T+1, N, A]`.

        `resets [E, T+1]` marks the rows that start an episode (default: row 0 only; packed
        rows hold several episodes, see `packing`).
        """
        e, t1, n = episodes.obs.shape[:3]
        if resets is None:
            resets = jnp.zeros((e, t1), bool).at[:, 0].set(True)
        prev = jnp.concatenate(
            [jnp.full((e, 1, n), -1, jnp.int32), episodes.actions.astype(jnp.int32)], axis=1
        )[:, :t1]
        prev = jnp.where(resets[..., None], -1, prev)
        x = jnp.swapaxes(self.inputs(episodes.obs, prev), 0, 1)  # [T+1, E, N, D]
        _, q = self.apply(params, jnp.zeros((e, n, self.hidden_dim)), x, resets.T)
        return jnp.swapaxes(q, 0, 1)


def make_policy(nets: QNetworks, epsilon: float) -> Policy:
    """Acting in one environment: greedy, or epsilon-greedy with `epsilon` when not greedy."""
    n = nets.spec.num_agents

    def initial_carry():
        return jnp.zeros((n, nets.hidden_dim)), jnp.full((n,), -1, jnp.int32)

    def act(params, obs, avail, carry, start, key, greedy):
        h, last = carry
        last = jnp.where(start, -1, last)
        x = nets.inputs(obs, last)[None, None]
        h, q = nets.apply(params, h[None], x, jnp.reshape(start, (1, 1)))
        eps = jnp.where(greedy, 0.0, epsilon)
        actions = epsilon_greedy(key, q[0, 0], avail, eps)
        return actions, (h[0], actions)

    return Policy(initial_carry, act)


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


def make_optimizer(cfg: QConfig) -> optax.GradientTransformation:
    """Gradient clip then Adam, RMSprop or RAdam at the constant rate `cfg.lr` (`anneal_lr`
    scales its updates: `marl.learning.schedule`)."""
    if cfg.optimizer == "rmsprop":  # pymarl's torch RMSprop: g / (sqrt(v) + eps), v from 0
        opt = optax.rmsprop(cfg.lr, decay=0.99, eps=1e-5, eps_in_sqrt=False)
    elif cfg.optimizer == "radam":  # JaxMARL's QLearning baselines
        opt = optax.radam(cfg.lr)
    else:
        opt = optax.adam(cfg.lr)
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), opt)


def check_team(env: MultiAgentEnv, learner: str) -> None:
    """A mixer combines one team's values: refuse environments that are not cooperative."""
    check_cooperative(env, learner, "mixes the values of one cooperative team", "iql")


def make_train(
    env: MultiAgentEnv,
    cfg: QConfig | dict | None = None,
    total_updates: int | None = None,
    mixer: nn.Module | None = None,
) -> Train:
    """A value-based learner on `env`: independent (`mixer=None`) or mixed (VDN, QMIX)."""
    cfg = cfg if isinstance(cfg, QConfig) else QConfig.from_dict(cfg)
    warn_unscheduled(cfg.anneal_lr, total_updates, "value-based learner")
    spec = env.spec
    if not spec.discrete:
        raise ValueError(f"value-based learners need discrete actions; {spec.name} is continuous")
    nets = QNetworks(env, cfg)
    wrapped = training_env(env)
    tx = make_optimizer(cfg)
    # a row holds `pack_episodes` episodes, each with its final state row
    row_steps = cfg.pack_episodes * (spec.episode_limit + 1) - 1
    lengths = unroll_lengths(row_steps, cfg.unroll_buckets)
    grad_steps = total_updates * cfg.train_steps if total_updates else None
    epsilon = linear(cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_steps)
    n, b = spec.num_agents, cfg.num_envs

    def init(key: Array) -> QState:
        k_net, k_mix, k_env, key = jax.random.split(key, 4)
        params = nets.init(k_net)
        if mixer is None:
            mixer_params = {}
        else:
            mixer_params = mixer.init(k_mix, jnp.zeros((1, n)), jnp.zeros((1, spec.state_dim)))
        env_state, ts = jax.vmap(wrapped.reset)(jax.random.split(k_env, b))
        online = (params, mixer_params)
        return QState(
            params=params,
            mixer_params=mixer_params,
            target_params=params,
            target_mixer_params=mixer_params,
            opt_state=tx.init(online),
            buffer=replay.init(
                jax.tree.map(lambda x: x[0], empty_episodes(spec, 1)), cfg.buffer_size
            ),
            building=empty_episodes(spec, b),
            env_state=env_state,
            timestep=ts,
            carry=jnp.zeros((b, n, nets.hidden_dim)),
            last_action=jnp.full((b, n), -1, jnp.int32),
            t=jnp.zeros((b,), jnp.int32),
            key=key,
            reward_norm=ValueNorm.create(),
            env_steps=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
        )

    def collect(state: QState) -> tuple[QState, dict[str, Array]]:
        def act(s: QState, key: Array) -> tuple[Array, Array]:
            ts = s.timestep
            x = nets.inputs(ts.obs, s.last_action)[None]
            carry, q = nets.apply(s.params, s.carry, x, (s.t == 0)[None])
            return epsilon_greedy(key, q[0], ts.avail_actions, epsilon(s.env_steps)), carry

        def record(s: QState, ts, actions, carry, nts) -> tuple[QState, Any]:
            building = record_step(s.building, s.t, ts, actions, nts, cfg.reward_scale)
            done = nts.done
            buffer, building = finish_episodes(s.buffer, building, done)
            s = s.replace(
                buffer=buffer,
                building=building,
                carry=carry,
                last_action=jnp.where(done[:, None], -1, actions),
                t=jnp.where(done, 0, s.t + 1),
                env_steps=s.env_steps + b,
            )
            return s, (nts.metrics, nts.reward * cfg.reward_scale)

        state, (metrics, rewards) = rollout(
            batch_step(wrapped, b), state, cfg.rollout_length, act, record
        )
        if cfg.standardise_rewards:
            state = state.replace(
                reward_norm=state.reward_norm.update(rewards, jnp.ones_like(rewards), beta=0.999)
            )
        return state, episode_metrics(metrics)

    def learn(state: QState) -> tuple[QState, dict[str, Array]]:
        target = (state.target_params, state.target_mixer_params)

        def grad_step(carry, xs):
            online, opt_state = carry
            key, i = xs
            batch = replay.sample(state.buffer, key, cfg.batch_size)
            if cfg.standardise_rewards:
                batch = batch.replace(rewards=state.reward_norm.normalize(batch.rewards))
            resets = None
            if cfg.pack_episodes > 1:
                batch, resets = packing.pack(batch, cfg.pack_episodes)
            # Unroll only as far as the longest row's last real step (of any seed: one branch
            # for all), rounded up to a bucket: padding after it is masked anyway, and the GRU
            # is causal, so the loss is the same as over the whole row.
            ends = jnp.arange(1, batch.filled.shape[1] + 1)  # steps needed to cover step t
            longest = seed_max(jnp.max(batch.filled * ends))
            bucket = jnp.searchsorted(jnp.asarray(lengths), longest)

            def loss_and_grad(steps):
                def fn(o):
                    part = truncate(batch, steps)
                    cut = None if resets is None else resets[:, : steps + 1]
                    return jax.value_and_grad(
                        lambda p: td_loss(nets, mixer, cfg, p, target, part, cut), has_aux=True
                    )(o)

                return fn

            (_, m), grads = jax.lax.switch(bucket, [loss_and_grad(n) for n in lengths], online)
            updates, opt_state = tx.update(grads, opt_state, online)
            if cfg.anneal_lr:  # on the run's gradient steps, warm-up included
                updates = scaled(updates, state.updates * cfg.train_steps + i, grad_steps)
            m["grad_norm"] = optax.tree.norm(grads)
            m["unroll_steps"] = jnp.asarray(lengths, jnp.float32)[bucket]
            return (optax.apply_updates(online, updates), opt_state), m

        done = replay_update(
            state.key,
            (state.params, state.mixer_params),
            state.opt_state,
            target,
            state.updates,
            grad_step,
            state.buffer.size,
            cfg,
        )
        state = state.replace(
            params=done.online[0],
            mixer_params=done.online[1],
            opt_state=done.opt_state,
            target_params=done.target[0],
            target_mixer_params=done.target[1],
            key=done.key,
            updates=done.updates,
        )
        return state, done.metrics

    def schedules(state: QState) -> dict[str, Array]:
        return {
            "epsilon": epsilon(state.env_steps),
            "buffer/episodes": state.buffer.size.astype(jnp.float32),
        }

    return Train(
        init=init,
        step=replay_step(collect, learn, cfg.train_steps, schedules),
        params=lambda s: s.params,
        policy=make_policy(nets, cfg.epsilon_end),
        config=cfg,
        steps_per_update=cfg.num_envs * cfg.rollout_length,
        num_envs=cfg.num_envs,
    )
