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

The config is `qlearner_config`'s, the agent network `qlearner_networks`', the loss
`qlearner_loss`'; this module holds the learner state, the optimiser and `make_train`.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.core.learner import (
    Train,
    check_cooperative,
    seed_max,
    warn_unscheduled,
)
from marl.core.wrappers import episode_metrics, training_env
from marl.learning.acting import batch_step, rollout
from marl.learning.schedule import linear, scaled

from . import packing, replay
from .offpolicy import replay_step, replay_update
from .onpolicy import ValueNorm
from .qlearner_config import QConfig
from .qlearner_loss import td_loss, truncate, unroll_lengths
from .qlearner_networks import QNetworks, make_policy
from .qlearning import epsilon_greedy
from .replay import Episode, EpisodeBuffer, empty_episodes, finish_episodes, record_step

Array = jax.Array

# Value-based learners pick an action by argmax: they act only in discrete action spaces
# (`marl.run.train.lookup.check_compatible` refuses the rest before anything is compiled).
ACTION_KINDS = ("discrete",)


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
