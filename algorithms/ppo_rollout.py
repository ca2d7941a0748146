"""PPO's experience and its returns: the learner state `PPOState`, one update's `Rollout`
collected from the parallel envs (`collect`, with each step's true next value), and the GAE
advantages and value targets with per-agent ends (`advantages_and_targets`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.core.learner import seed_max
from marl.core.wrappers import episode_metrics
from marl.learning.acting import batch_step
from marl.learning.acting import rollout as run_steps

from .onpolicy import ValueNorm, gae
from .ppo_config import PPOConfig
from .ppo_networks import Networks, env_actions

Array = jax.Array


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
