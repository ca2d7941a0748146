"""Collective behaviour: N permutation-invariant agents on a torus that each see only the cells
around their own, rewarded by an order parameter of the whole swarm (the tasks of Dec-POMFC,
Cui et al. 2024: aggregation, Vicsek alignment, Kuramoto synchronisation).

One step costs O(N) whatever N (`field.py`): agents are binned into a cell grid once, and
each reads its `(2 window + 1)^2` cells. Observations and the state are normalised by the
count of a uniform spread, so a policy trained with one N acts on any other.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete

from .dynamics import LEVELS, MOVES, SwarmDynamics
from .field import Grid
from .generator import Scatter
from .observation import SwarmObserver
from .reward import OrderReward
from .state import SIZE, SwarmState

Array = jax.Array

__all__ = ["LEVELS", "MOVES", "Swarm", "SwarmState"]


class Swarm(MultiAgentEnv[SwarmState]):
    """A swarm task composed of parts, each a frozen dataclass called with the state and its
    own settings: the generator (`Scatter`, `Headings`, `Oscillators`: the start), the
    dynamics (`AggregationDynamics`, `VicsekDynamics`, `KuramotoDynamics`: the controls and
    the motion), the reward (`Cohesion`, `Polarisation`, `Synchrony`: the order parameter
    minus the action cost) and the observer (`SwarmObserver`: the grid, the window and the
    embedding); the viewer is a module (`viewer_module`). A step: the dynamics read the
    controls from the actions and move the swarm, the reward pays the order parameter of the
    state reached, the observer reads it. `Aggregation`, `Vicsek` and `Kuramoto` (`tasks.py`)
    build the parts from flat keywords.

    Actions: Discrete(5) (the control at -1, -1/2, 0, 1/2, 1, or for aggregation stay and the
    four moves) or, without `discrete_actions`, a Box in [-1, 1]. Episodes last
    `episode_limit` steps (truncation: no time in the observation).

    Observation [N, own + (2 window + 1)^2 F]: the task's own features, then per window cell
    (row by row) its F features (`SwarmObserver`), each summed over the cell's agents and
    scaled by cells^2 / N. State [cells^2 F]: the swarm's embedding (`kernel`). Reward: the
    same for every agent, the task's order parameter minus the action cost. Metrics: the
    order parameter (by its name) and `neighbours`, the mean fraction of the swarm in an
    agent's window.
    """

    viewer_module = "marl.envs.swarm.viewer"
    reference_policy = "marl.baselines.swarm:reference_policy"
    size = SIZE

    def __init__(
        self,
        generator: Scatter,
        dynamics: SwarmDynamics,
        reward: OrderReward,
        observer: SwarmObserver,
        *,
        discrete_actions: bool = True,
        episode_limit: int = 100,
        viewer: str | None = None,
        name: str = "swarm/custom",
    ):
        self.generator, self.dynamics = generator, dynamics
        self.reward, self.observer = reward, observer
        self.n, self.discrete = int(generator.num_agents), bool(discrete_actions)
        if viewer is not None:
            self.viewer_module = viewer
        control = (dynamics.control_dim,)
        space = Discrete(len(LEVELS)) if self.discrete else Box(-1.0, 1.0, control, jnp.float32)
        n = self.n
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=observer.obs_dim,
            state_dim=observer.state_dim,
            action_space=space,
            groups=(AgentGroup("swarm", tuple(range(n))),),
            agent_names=tuple(f"agent_{i}" for i in range(n)),
            episode_limit=int(episode_limit),
            metric_names=(reward.name, "neighbours"),
            headline_metric=reward.name,
            shared_reward=True,
        )

    @classmethod
    def from_parts(
        cls,
        generator: Scatter,
        dynamics: SwarmDynamics,
        reward: OrderReward,
        observer: SwarmObserver,
        *,
        discrete_actions: bool = True,
        episode_limit: int = 100,
        viewer: str | None = None,
        name: str = "swarm/custom",
    ) -> Swarm:
        """A swarm composed of parts (the same as `Swarm(...)`), with a viewer (a viewer
        module's path; default `viewer_module`); the tasks' keyword constructors build the
        same parts from their flat keywords."""
        return cls(
            generator,
            dynamics,
            reward,
            observer,
            discrete_actions=discrete_actions,
            episode_limit=episode_limit,
            viewer=viewer,
            name=name,
        )

    @property
    def grid(self) -> Grid:
        """The cell grid the agents see through (the observer's)."""
        return self.observer.grid

    # --- reset and step -----------------------------------------------------------------------
    def reset(self, key: Array) -> tuple[SwarmState, TimeStep]:
        state = self.generator(key)
        return state, self._timestep(state, self.order(state), jnp.zeros(self.n))

    def step_env(
        self, key: Array, state: SwarmState, actions: Array
    ) -> tuple[SwarmState, TimeStep]:
        u = self.dynamics.controls(actions, self.discrete)
        state = self.dynamics(key, state, u, self.grid)
        order = self.order(state)
        return state, self._timestep(state, order, self.reward(order, u))

    def _timestep(self, state: SwarmState, order: Array, reward: Array) -> TimeStep:
        n = self.n
        return TimeStep(
            obs=self.observe(state),
            state=self.observer.global_state(state),
            reward=reward.astype(jnp.float32),
            terminated=jnp.zeros((), bool),
            truncated=jnp.zeros((), bool),
            avail_actions=jnp.ones((n, self.spec.action_dim), bool),
            alive=jnp.ones(n, bool),
            metrics={
                self.reward.name: order.astype(jnp.float32),
                "neighbours": self.grid.seen(state.pos).astype(jnp.float32),
            },
        )

    # --- what the parts read off a state ------------------------------------------------------
    def order(self, state: SwarmState) -> Array:
        """[] the task's order parameter (the reward before the action cost)."""
        return self.reward.order(state, self.grid)

    def observe(self, state: SwarmState) -> Array:
        """[N, obs_dim] what the agents see (`SwarmObserver.observe`)."""
        return self.observer.observe(state)

    def neighbourhood(self, state: SwarmState) -> Array:
        """The agents in each agent's window (those it sees)."""
        return self.grid.neighbourhood(state.pos)

    def render_frame(self, state: SwarmState) -> dict[str, Any]:
        """What `viewer.py` draws: the task, the torus and its cells, the agents, the order."""
        return {
            "task": self.reward.name,
            "size": self.size,
            "cells": self.observer.cells,
            "pos": np.asarray(state.pos),
            "angle": np.asarray(state.angle),
            "order": float(self.order(state)),
        }
