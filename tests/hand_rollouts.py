"""Hand-built rollouts for tests of the on-policy learners' advantage and target wiring."""

from __future__ import annotations

import jax.numpy as jnp


def hand_rollout(reward, value, next_value, terminated, done, alive=None, died=None):
    """A ppo.Rollout with the given [T, B, N] / [T, B] fields and zeros everywhere else
    (`alive` all True and `died` all False unless given)."""
    from marl.algorithms.ppo import Rollout

    reward, value, next_value = (jnp.asarray(x, jnp.float32) for x in (reward, value, next_value))
    zeros = jnp.zeros(reward.shape)
    flags = jnp.zeros(reward.shape[:2], bool)
    return Rollout(
        actor_in=zeros[..., None],
        critic_in=zeros[..., None],
        avail=jnp.ones((*reward.shape, 1), bool),
        action=zeros.astype(jnp.int32),
        log_prob=zeros,
        value=value,
        next_value=next_value,
        reward=reward,
        alive=jnp.ones(reward.shape, bool) if alive is None else jnp.asarray(alive, bool),
        died=jnp.zeros(reward.shape, bool) if died is None else jnp.asarray(died, bool),
        start=flags,
        terminated=jnp.asarray(terminated, bool),
        done=jnp.asarray(done, bool),
    )


def death_env(num_agents: int = 2, die_at=0, episode_limit: int = 4, shared_reward: bool = False):
    """A tiny env in which every agent dies in step `die_at` (one step, or one per agent)
    while the episode goes on to its limit: obs [1, t / limit] while alive, zeros once dead
    (as a dead combat unit's); reward 1 to every agent alive before the step; Discrete(2)
    actions that do nothing. `shared_reward`: what the spec declares (every agent is then paid
    the team's 1 per step, dead or alive)."""
    import jax
    from flax import struct

    from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
    from marl.core.spaces import Discrete

    class DeathState(struct.PyTreeNode):
        alive: jax.Array
        t: jax.Array

    class DeathEnv(MultiAgentEnv):
        spec = EnvSpec(
            name="test/death",
            num_agents=num_agents,
            obs_dim=2,
            state_dim=2,
            action_space=Discrete(2),
            groups=(AgentGroup("agents", tuple(range(num_agents))),),
            agent_names=tuple(f"agent_{i}" for i in range(num_agents)),
            episode_limit=episode_limit,
            shared_reward=shared_reward,
        )

        def _ts(self, s, reward):
            feat = jnp.stack([jnp.ones(()), s.t / episode_limit])
            obs = s.alive[:, None] * feat[None, :]
            return TimeStep(
                obs=obs.astype(jnp.float32),
                state=feat.astype(jnp.float32),
                avail_actions=jnp.ones((num_agents, 2), bool),
                reward=reward,
                terminated=jnp.zeros((), bool),
                truncated=jnp.zeros((), bool),
                alive=s.alive,
            )

        def reset(self, key):
            s = DeathState(alive=jnp.ones((num_agents,), bool), t=jnp.zeros((), jnp.int32))
            return s, self._ts(s, jnp.zeros((num_agents,)))

        def step_env(self, key, s, actions):
            reward = jnp.ones((num_agents,)) if shared_reward else s.alive.astype(jnp.float32)
            nxt = s.replace(alive=s.alive & (s.t != jnp.asarray(die_at)))
            return nxt, self._ts(nxt.replace(t=s.t + 1), reward)

    return DeathEnv()
