"""`ParticleEnv`: an MPE world composed of parts; the scenarios (`scenarios/`) build them."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import EnvSpec, MultiAgentEnv, TimeStep

from .dynamics import ParticleDynamics
from .generator import Scatter
from .parts import ParticleObserver, ParticleReward
from .state import ParticleState
from .world import World

DEFAULT_EPISODE_LIMIT = 25  # mpe2's max_cycles

__all__ = ["DEFAULT_EPISODE_LIMIT", "ParticleEnv", "ParticleState"]


class ParticleEnv(MultiAgentEnv[ParticleState]):
    """A particle (MPE) task composed of parts, each a frozen dataclass called with the state
    and its own settings: the generator (`Scatter`: the world, the roster, the start), the
    dynamics (`ParticleDynamics`: actions, forces, integration, contacts), the reward (a
    scenario's `ParticleReward`: rewards and metrics) and the observer (a scenario's
    `ParticleObserver`); the viewer is a module (`viewer_module`). A step: the dynamics move
    the world, the reward and the observer read the state reached. The scenarios' keyword
    constructors (`scenarios/`) build the parts from flat keywords.

    Time limit: `episode_limit` steps (truncation). The global state is the concatenation of
    every agent's unpadded observation, as mpe2's `state()`.
    """

    viewer_module = "marl.envs.particle.viewer"
    reference_policy = "marl.baselines.particle:scripted_policy"
    neighbour_radius: float = 1.0  # mean-field neighbourhoods: same group within this distance

    def __init__(
        self,
        generator: Scatter,
        dynamics: ParticleDynamics,
        reward: ParticleReward,
        observer: ParticleObserver,
        *,
        episode_limit: int = DEFAULT_EPISODE_LIMIT,
        viewer: str | None = None,
        name: str = "particle/custom",
    ):
        if episode_limit < 1:
            raise ValueError(f"episode_limit must be >= 1, got {episode_limit}")
        self.generator, self.dynamics = generator, dynamics
        self.reward, self.observer = reward, observer
        if viewer is not None:
            self.viewer_module = viewer
        n = self.world.num_agents
        sizes = dynamics.action_sizes
        self._avail = np.arange(int(sizes.max()))[None, :] < sizes[:, None]
        obs_sizes = [int(k) for k in observer.obs_sizes]
        obs_dim = max(obs_sizes)
        # flat indices of the real (unpadded) observation entries: the global state
        self._state_index = np.concatenate(
            [i * obs_dim + np.arange(k) for i, k in enumerate(obs_sizes)]
        )
        self._dense_obs = all(k == obs_dim for k in obs_sizes)
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=obs_dim,
            state_dim=int(sum(obs_sizes)),
            action_space=dynamics.action_space,
            groups=generator.groups,
            agent_names=generator.agent_names,
            episode_limit=int(episode_limit),
            metric_names=reward.metric_names,
            obs_sizes=tuple(obs_sizes),
            action_sizes=tuple(int(k) for k in sizes),
            cooperative=reward.cooperative,
            shared_reward=reward.shared or n == 1,
        )

    @classmethod
    def from_parts(
        cls,
        generator: Scatter,
        dynamics: ParticleDynamics,
        reward: ParticleReward,
        observer: ParticleObserver,
        *,
        episode_limit: int = DEFAULT_EPISODE_LIMIT,
        viewer: str | None = None,
        name: str = "particle/custom",
    ) -> ParticleEnv:
        """A particle task composed of parts (the same as `ParticleEnv(...)`), with a viewer
        (a viewer module's path; default `viewer_module`); the scenarios' keyword
        constructors build the same parts from their flat keywords."""
        parts = (generator, dynamics, reward, observer)
        return cls(*parts, episode_limit=episode_limit, viewer=viewer, name=name)

    @property
    def world(self) -> World:
        """The entities' static properties (the generator's)."""
        return self.generator.world

    @property
    def continuous_actions(self) -> bool:
        """Box actions in [0, 1] (else Discrete), as the dynamics decode them."""
        return self.dynamics.continuous_actions

    # --- reset and step -----------------------------------------------------------------------
    def initial_state(self, pos: jax.Array, task: dict[str, Any]) -> ParticleState:
        """A state at t=0 with entities at `pos` [E, 2], at rest, silent."""
        return self.generator.start(pos, task)

    def reset(self, key: jax.Array) -> tuple[ParticleState, TimeStep]:
        s = self.generator(key)
        return s, self.observe(s)

    def step_env(
        self, key: jax.Array, state: ParticleState, actions: jax.Array
    ) -> tuple[ParticleState, TimeStep]:
        del key  # MPE dynamics are deterministic (no motor or communication noise)
        s = self.dynamics(state, actions)
        return s, self._timestep(s, self.reward(s), self.reward.terminal(s))

    def _timestep(self, s: ParticleState, reward: jax.Array, terminated: jax.Array) -> TimeStep:
        obs = self.observer(s).astype(jnp.float32)
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
            metrics={k: v.astype(jnp.float32) for k, v in self.reward.metrics(s).items()},
        )

    # --- what the parts read off a state ------------------------------------------------------
    def observe(self, s: ParticleState) -> TimeStep:
        """The TimeStep an agent sees in state `s` (reward 0, not done)."""
        return self._timestep(s, jnp.zeros(self.world.num_agents), jnp.zeros((), bool))

    def rewards(self, s: ParticleState) -> jax.Array:
        """[N] rewards after a step into `s` (the reward part's)."""
        return self.reward(s)

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        """Task metrics of state `s` (the reward part's)."""
        return self.reward.metrics(s)

    def neighbourhood(self, state: ParticleState) -> jax.Array:
        """Agents of the same group within `neighbour_radius` of each other (not oneself)."""
        n = self.spec.num_agents
        pos = state.pos[:n]
        d = jnp.linalg.norm(pos[:, None] - pos[None], axis=-1)
        return (super().neighbourhood(state) * (d < self.neighbour_radius)).astype(jnp.float32)

    @property
    def contest(self) -> bool:
        """A two-sided task, as the reward says (particle/adversary)."""
        return self.reward.contest

    def contest_score(self, episode: dict[str, jax.Array]) -> jax.Array:
        if not self.reward.contest:
            return super().contest_score(episode)
        return self.reward.contest_score(episode)

    def render_frame(self, state: ParticleState) -> dict[str, Any]:
        """Positions, sizes and roles for the viewer."""
        return {
            "pos": np.asarray(state.pos),
            "size": self.world.size,
            "num_agents": self.world.num_agents,
            "agent_group": self.spec.agent_group,
            "comm": np.asarray(state.comm),
        }
