"""`ParticleEnv`: the MPE step shared by every particle scenario.

A scenario subclasses `ParticleEnv` and supplies its world (static entity properties), how an
episode starts (`sample`), and three pure functions of the state: `observations`, `rewards`,
`metrics`. Decoding actions, physics, communication, the time limit and the global state are
done here once.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete

from .world import World, decode_actions, physics_step

DEFAULT_EPISODE_LIMIT = 25  # mpe2's max_cycles


class ParticleState(struct.PyTreeNode):
    """State of a particle world (E entities = N agents then L landmarks).

    pos:  [E, 2] positions.
    vel:  [E, 2] velocities.
    comm: [N, dim_c] the words agents said on the last step (zeros after reset).
    task: dict of int32 arrays the scenario draws at reset (goal landmark indices, keys).
    t:    [] int32 steps taken in this episode.
    """

    pos: jax.Array
    vel: jax.Array
    comm: jax.Array
    task: dict[str, jax.Array]
    t: jax.Array


class ParticleEnv(MultiAgentEnv[ParticleState]):
    """Base class of the MPE scenarios. Subclasses call `_setup` from `__init__`."""

    viewer_module = "marl.envs.particle.viewer"
    reference_policy = "marl.baselines.particle:scripted_policy"

    world: World
    continuous_actions: bool

    # --- what a scenario provides -------------------------------------------------------
    def sample(self, key: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        """Initial entity positions [E, 2] and the task dict of a new episode."""
        raise NotImplementedError

    def observations(self, s: ParticleState) -> jax.Array:
        """[N, obs_dim] observations, zero-padded past each agent's size."""
        raise NotImplementedError

    def rewards(self, s: ParticleState) -> jax.Array:
        """[N] rewards after a step into `s`."""
        raise NotImplementedError

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        """Task metrics ([] float32 each) of state `s`."""
        return {}

    def terminal(self, s: ParticleState) -> jax.Array:
        """[] bool: the task has ended (no MPE scenario ends early by default)."""
        return jnp.zeros((), bool)

    # --- shared machinery ---------------------------------------------------------------
    def _setup(
        self,
        name: str,
        world: World,
        agent_names: list[str],
        groups: dict[str, list[int]],
        obs_sizes: list[int],
        continuous_actions: bool,
        episode_limit: int,
        metric_names: tuple[str, ...] = (),
        task_shapes: dict[str, tuple[int, ...]] | None = None,
        cooperative: bool | None = None,
        shared_reward: bool = False,
    ) -> None:
        if episode_limit < 1:
            raise ValueError(f"episode_limit must be >= 1, got {episode_limit}")
        self.world = world
        self.continuous_actions = bool(continuous_actions)
        n = world.num_agents
        if self.continuous_actions:
            sizes = world.num_continuous_actions()
            width = int(sizes.max())
            space = Box(0.0, 1.0, (width,), jnp.float32)
        else:
            sizes = world.num_discrete_actions()
            width = int(sizes.max())
            space = Discrete(width)
        self._avail = np.arange(width)[None, :] < sizes[:, None]
        obs_sizes = [int(k) for k in obs_sizes]
        obs_dim = max(obs_sizes)
        # flat indices of the real (unpadded) observation entries: the global state is the
        # concatenation of every agent's observation, as mpe2's `state()`.
        self._state_index = np.concatenate(
            [i * obs_dim + np.arange(k) for i, k in enumerate(obs_sizes)]
        )
        self._dense_obs = all(k == obs_dim for k in obs_sizes)
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=obs_dim,
            state_dim=int(sum(obs_sizes)),
            action_space=space,
            groups=tuple(AgentGroup(g, tuple(ix)) for g, ix in groups.items()),
            agent_names=tuple(agent_names),
            episode_limit=int(episode_limit),
            metric_names=tuple(metric_names),
            obs_sizes=tuple(obs_sizes),
            action_sizes=tuple(int(k) for k in sizes),
            cooperative=cooperative,
            shared_reward=bool(shared_reward) or n == 1,
        )

    def _timestep(self, s: ParticleState, reward: jax.Array, terminated: jax.Array) -> TimeStep:
        obs = self.observations(s).astype(jnp.float32)
        flat = obs.reshape(-1)
        state = flat if self._dense_obs else flat[self._state_index]
        n = self.world.num_agents
        return TimeStep(
            obs=obs,
            state=state,
            avail_actions=jnp.asarray(self._avail),
            reward=reward.astype(jnp.float32),
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=jnp.ones((n,), bool),
            metrics={k: v.astype(jnp.float32) for k, v in self.metrics(s).items()},
        )

    def initial_state(self, pos: jax.Array, task: dict[str, Any]) -> ParticleState:
        """A state at t=0 with entities at `pos` [E, 2], at rest, silent."""
        pos = jnp.asarray(pos)
        return ParticleState(
            pos=pos,
            vel=jnp.zeros_like(pos),
            comm=jnp.zeros((self.world.num_agents, self.world.dim_c), pos.dtype),
            task={k: jnp.asarray(v, jnp.int32) for k, v in task.items()},
            t=jnp.zeros((), jnp.int32),
        )

    def observe(self, s: ParticleState) -> TimeStep:
        """The TimeStep an agent sees in state `s` (reward 0, not done)."""
        return self._timestep(s, jnp.zeros(self.world.num_agents), jnp.zeros((), bool))

    def reset(self, key: jax.Array) -> tuple[ParticleState, TimeStep]:
        pos, task = self.sample(key)
        s = self.initial_state(pos, task)
        return s, self.observe(s)

    def step_env(
        self, key: jax.Array, state: ParticleState, actions: jax.Array
    ) -> tuple[ParticleState, TimeStep]:
        del key  # MPE dynamics are deterministic (no motor or communication noise)
        u, comm = decode_actions(self.world, actions, self.continuous_actions)
        pos, vel = physics_step(self.world, state.pos, state.vel, u)
        s = state.replace(pos=pos, vel=vel, comm=comm.astype(state.comm.dtype))
        return s, self._timestep(s, self.rewards(s), self.terminal(s))

    # mean-field neighbourhoods: agents of the same group within this distance
    neighbour_radius: float = 1.0

    def neighbourhood(self, state: ParticleState) -> jax.Array:
        """Agents of the same group within `neighbour_radius` of each other (not oneself)."""
        n = self.spec.num_agents
        pos = state.pos[:n]
        d = jnp.linalg.norm(pos[:, None] - pos[None], axis=-1)
        return (super().neighbourhood(state) * (d < self.neighbour_radius)).astype(jnp.float32)

    def render_frame(self, state: ParticleState) -> dict[str, Any]:
        """Positions, sizes and roles for the viewer."""
        return {
            "pos": np.asarray(state.pos),
            "size": self.world.size,
            "num_agents": self.world.num_agents,
            "agent_group": self.spec.agent_group,
            "comm": np.asarray(state.comm),
        }
