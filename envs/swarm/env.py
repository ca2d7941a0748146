"""Collective behaviour: N permutation-invariant agents on a torus that each see only the cells
around their own, rewarded by an order parameter of the whole swarm (the tasks of Dec-POMFC,
Cui et al. 2024: aggregation, Vicsek alignment, Kuramoto synchronisation).

One step costs O(N) whatever N (`field.py`): agents are binned into a cell grid once, and
each reads its `(2 window + 1)^2` cells. Observations and the state are normalised by the
count of a uniform spread, so a policy trained with one N acts on any other.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete

from . import field

Array = jax.Array
LEVELS = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32)  # discrete controls, 1-d tasks
MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float32)  # aggregation


class SwarmState(struct.PyTreeNode):
    pos: Array  # [N, 2] in [0, size)^2
    angle: Array  # [N] heading (Vicsek) or phase (Kuramoto), radians; zeros (aggregation)
    omega: Array  # [N] natural frequency (Kuramoto); zeros otherwise
    t: Array  # [] int32


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _wrap_angle(a: Array) -> Array:
    return jnp.remainder(a + jnp.pi, 2 * jnp.pi) - jnp.pi


class Swarm(MultiAgentEnv[SwarmState]):
    """Base of the swarm tasks (subclasses set the dynamics, the features and the order).

    Constructor (shared):
        num_agents: N (any N >= 2; the step is O(N)).
        cells: cells per side of the grid (the world is the unit torus).
        window: an agent sees the (2 window + 1)^2 cells around its own.
        kernel: the state's mean-field embedding, "gaussian" (kernels centred on the cells,
            Dec-POMFC's choice) or "box" (the cells' histogram).
        discrete_actions: Discrete(5) (the task's control at -1, -1/2, 0, 1/2, 1, or for
            aggregation stay and the four moves); else a Box in [-1, 1].
        action_cost: the reward pays `action_cost * mean |u|^2` (u the control in [-1, 1]).
        episode_limit: steps per episode (truncation: no time in the observation).

    Observation [N, own + (2 window + 1)^2 F]: the task's own features, then per window cell
    (row by row) its F features (`cell features`), each summed over the cell's agents and
    scaled by cells^2 / N. State [cells^2 F']: the swarm's embedding (`kernel`). Reward: the
    same for every agent, the task's order parameter minus the action cost.
    """

    viewer_module = "marl.envs.swarm.viewer"
    reference_policy = "marl.baselines.swarm:reference_policy"
    size = 1.0
    own_features = 0
    cell_features = 1  # F: what a window cell tells (density first)
    state_features = 1  # F': per cell of the embedding
    control_dim = 1
    order_name = "order"
    lower_is_better: tuple[str, ...] = ()

    def __init__(
        self,
        num_agents: int,
        cells: int,
        window: int,
        kernel: str,
        discrete_actions: bool,
        action_cost: float,
        episode_limit: int,
        name: str,
    ):
        _check(num_agents >= 2, f"num_agents must be >= 2, got {num_agents}")
        _check(cells >= 1, f"cells must be >= 1, got {cells}")
        _check(0 <= 2 * window + 1 <= cells, f"window must fit the grid: 2 window + 1 <= {cells}")
        _check(kernel in field.KERNELS, f"unknown kernel {kernel!r}; valid: {field.KERNELS}")
        _check(action_cost >= 0.0, f"action_cost must be >= 0, got {action_cost}")
        self.n, self.cells, self.w = int(num_agents), int(cells), int(window)
        self.kernel, self.discrete = kernel, bool(discrete_actions)
        self.action_cost = float(action_cost)
        n = self.n
        space = (
            Discrete(len(LEVELS))
            if self.discrete
            else Box(-1.0, 1.0, (self.control_dim,), jnp.float32)
        )
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=self.own_features + (2 * self.w + 1) ** 2 * self.cell_features,
            state_dim=self.cells**2 * self.state_features,
            action_space=space,
            groups=(AgentGroup("swarm", tuple(range(n))),),
            agent_names=tuple(f"agent_{i}" for i in range(n)),
            episode_limit=int(episode_limit),
            metric_names=(self.order_name, "neighbours"),
            lower_is_better=self.lower_is_better,
            headline_metric=self.order_name,
            shared_reward=True,
        )

    # --- what a task provides ------------------------------------------------------------------

    def init_state(self, key: Array) -> SwarmState:
        raise NotImplementedError

    def move(self, key: Array, state: SwarmState, u: Array) -> SwarmState:
        """The next state under controls `u` [N, control_dim] in [-1, 1]."""
        raise NotImplementedError

    def order(self, state: SwarmState) -> Array:
        """[] the task's order parameter (the reward before the action cost)."""
        raise NotImplementedError

    def values(self, state: SwarmState) -> Array:
        """[N, F] what each agent adds to its cell (density 1 first)."""
        return jnp.ones((self.n, 1))

    def relative(self, sums: Array, state: SwarmState) -> Array:
        """[N, W, F] an agent's window of cell sums in its own frame (default: as summed)."""
        return sums

    def own(self, state: SwarmState) -> Array:
        return jnp.zeros((self.n, 0))

    # --- the contract --------------------------------------------------------------------------

    def controls(self, actions: Array) -> Array:
        """[N, control_dim] in [-1, 1] from the actions."""
        if not self.discrete:
            return jnp.clip(actions.reshape(self.n, self.control_dim), -1.0, 1.0)
        table = MOVES if self.control_dim == 2 else LEVELS[:, None]
        return jnp.asarray(table)[actions.astype(jnp.int32)]

    def reset(self, key: Array) -> tuple[SwarmState, TimeStep]:
        state = self.init_state(key)
        return state, self._timestep(state, None)

    def step_env(
        self, key: Array, state: SwarmState, actions: Array
    ) -> tuple[SwarmState, TimeStep]:
        u = self.controls(actions)
        nxt = self.move(key, state, u)
        return nxt, self._timestep(nxt, self.action_cost * jnp.mean(jnp.sum(u**2, axis=-1)))

    def _windows(self, state: SwarmState) -> Array:
        """[N, W, F] every agent's window of cell sums, scaled to the mean field."""
        xy = field.cell_xy(state.pos, self.size, self.cells)
        sums = field.cell_sums(xy, self.values(state), self.cells)
        got = field.window(sums, xy, self.w, periodic=True)
        return got * (self.cells**2 / self.n)

    def observe(self, state: SwarmState) -> Array:
        seen = self.relative(self._windows(state), state)
        return jnp.concatenate([self.own(state), seen.reshape(self.n, -1)], axis=-1)

    def global_state(self, state: SwarmState) -> Array:
        emb = field.embedding(
            state.pos, self.state_values(state), self.size, self.cells, self.kernel, True
        )
        return emb.reshape(-1)

    def state_values(self, state: SwarmState) -> Array:
        """[N, F'] what the state's embedding sums (default: density only)."""
        return jnp.ones((self.n, 1))

    def neighbours_seen(self, state: SwarmState) -> Array:
        """[] the mean fraction of the swarm in an agent's window (itself excluded)."""
        xy = field.cell_xy(state.pos, self.size, self.cells)
        counts = field.window(field.cell_sums(xy, jnp.ones((self.n, 1)), self.cells), xy,
                              self.w, periodic=True)  # fmt: skip
        return jnp.mean(jnp.sum(counts[..., 0], axis=1) - 1.0) / (self.n - 1)

    def _timestep(self, state: SwarmState, cost: Array | None) -> TimeStep:
        """The TimeStep of `state`; the reward is its order minus `cost` (0 at a reset)."""
        n = self.n
        order = self.order(state)
        reward = jnp.zeros(n) if cost is None else jnp.full(n, order - cost)
        return TimeStep(
            obs=self.observe(state),
            state=self.global_state(state),
            reward=reward.astype(jnp.float32),
            terminated=jnp.zeros((), bool),
            truncated=jnp.zeros((), bool),
            avail_actions=jnp.ones((n, self.spec.action_dim), bool),
            alive=jnp.ones(n, bool),
            metrics={
                self.order_name: order.astype(jnp.float32),
                "neighbours": self.neighbours_seen(state).astype(jnp.float32),
            },
        )

    def neighbourhood(self, state: SwarmState) -> Array:
        """The agents in each agent's window (those it sees)."""
        xy = field.cell_xy(state.pos, self.size, self.cells)
        seen = field.in_window(xy, self.w, self.cells, periodic=True)
        return (seen & ~jnp.eye(self.n, dtype=bool)).astype(jnp.float32)

    def render_frame(self, state: SwarmState) -> dict[str, Any]:
        return {
            "task": self.order_name,
            "size": self.size,
            "cells": self.cells,
            "pos": np.asarray(state.pos),
            "angle": np.asarray(state.angle),
            "order": float(self.order(state)),
        }


class _Angles(Swarm):
    """Shared by Vicsek and Kuramoto: each agent carries an angle; a cell tells its density and
    the summed unit vectors of its agents' angles, turned into the observer's frame (so the
    observation does not change when the whole swarm turns)."""

    cell_features = 3  # density, sum cos(a_j - a_i), sum sin(a_j - a_i)
    state_features = 3  # density, sum cos(a_j), sum sin(a_j)

    def values(self, state: SwarmState) -> Array:
        a = state.angle
        return jnp.stack([jnp.ones_like(a), jnp.cos(a), jnp.sin(a)], -1)

    state_values = values

    def relative(self, sums: Array, state: SwarmState) -> Array:
        c, s = jnp.cos(state.angle)[:, None], jnp.sin(state.angle)[:, None]
        sc, ss = sums[..., 1], sums[..., 2]
        return jnp.stack([sums[..., 0], sc * c + ss * s, ss * c - sc * s], -1)

    def order(self, state: SwarmState) -> Array:
        """|mean unit vector of the angles|: 1 aligned (in phase), about 0 disordered."""
        return jnp.hypot(jnp.mean(jnp.cos(state.angle)), jnp.mean(jnp.sin(state.angle)))


class Vicsek(_Angles):
    """Vicsek alignment (Vicsek et al. 1995), partially observed: self-propelled agents move at
    `speed` along their heading on the unit torus; each turns by its control times `max_turn`
    per step, plus Gaussian noise of std `noise`. It sees the headings in its window, relative
    to its own. Reward: the polarisation |mean (cos h, sin h)|, the alignment order parameter
    (1: all move alike), minus the action cost. The classic Vicsek rule (turn to the window's
    mean heading) is the reference policy.

    Constructor:
        speed: distance moved per step (unit torus).
        max_turn: turn per step at control 1, radians.
        noise: std of the Gaussian noise per step.
    """

    order_name = "polarisation"

    def __init__(
        self,
        num_agents: int = 100,
        speed: float = 0.02,
        max_turn: float = math.pi / 8,
        noise: float = 0.1,
        cells: int = 8,
        window: int = 1,
        kernel: str = "gaussian",
        discrete_actions: bool = True,
        action_cost: float = 0.0,
        episode_limit: int = 100,
        name: str = "swarm/vicsek",
    ):
        _check(speed >= 0.0 and max_turn >= 0.0 and noise >= 0.0, "speed, max_turn, noise >= 0")
        self.speed, self.max_turn, self.noise = float(speed), float(max_turn), float(noise)
        super().__init__(
            num_agents, cells, window, kernel, discrete_actions, action_cost, episode_limit, name
        )

    def init_state(self, key: Array) -> SwarmState:
        k_pos, k_head = jax.random.split(key)
        n = self.n
        return SwarmState(
            pos=jax.random.uniform(k_pos, (n, 2), maxval=self.size),
            angle=jax.random.uniform(k_head, (n,), minval=-jnp.pi, maxval=jnp.pi),
            omega=jnp.zeros(n),
            t=jnp.zeros((), jnp.int32),
        )

    def move(self, key: Array, state: SwarmState, u: Array) -> SwarmState:
        turn = u[:, 0] * self.max_turn + self.noise * jax.random.normal(key, (self.n,))
        heading = _wrap_angle(state.angle + turn)
        step = self.speed * jnp.stack([jnp.cos(heading), jnp.sin(heading)], -1)
        return state.replace(pos=jnp.remainder(state.pos + step, self.size), angle=heading)


class Kuramoto(_Angles):
    """Kuramoto synchronisation (Kuramoto 1975), partially observed and controlled: oscillators
    at random places on the unit torus (fixed for the episode, or diffusing with std
    `diffusion` per step), each with a natural frequency drawn from N(0, omega_std^2). A phase
    advances by `dt * (omega + max_control * u + coupling * mean_{window} sin(phase_j -
    phase))` plus Gaussian noise of std `noise` (the coupling is local: the window's
    oscillators). It sees its own natural frequency / omega_std and the phases in its window,
    relative to its own. Reward: the synchrony r = |mean e^{i phase}|, Kuramoto's order
    parameter, minus the action cost. Uncontrolled, coupling 0.5 stays below the critical
    coupling (about 1.6 for omega_std 1), so the swarm does not synchronise by itself.

    Constructor:
        omega_std: std of the natural frequencies.
        coupling: local Kuramoto coupling.
        max_control: frequency change at control 1.
        dt: time step.
        noise: std of the Gaussian noise per step.
        diffusion: std of the oscillators' random walk.
    """

    order_name = "synchrony"
    own_features = 1

    def __init__(
        self,
        num_agents: int = 100,
        omega_std: float = 1.0,
        coupling: float = 0.5,
        max_control: float = 1.5,
        dt: float = 0.1,
        noise: float = 0.05,
        diffusion: float = 0.0,
        cells: int = 8,
        window: int = 1,
        kernel: str = "gaussian",
        discrete_actions: bool = True,
        action_cost: float = 0.0,
        episode_limit: int = 100,
        name: str = "swarm/kuramoto",
    ):
        _check(omega_std > 0.0, f"omega_std must be > 0, got {omega_std}")
        _check(dt > 0.0 and noise >= 0.0 and diffusion >= 0.0, "dt > 0, noise and diffusion >= 0")
        self.omega_std, self.coupling = float(omega_std), float(coupling)
        self.max_control, self.dt = float(max_control), float(dt)
        self.noise, self.diffusion = float(noise), float(diffusion)
        super().__init__(
            num_agents, cells, window, kernel, discrete_actions, action_cost, episode_limit, name
        )

    def init_state(self, key: Array) -> SwarmState:
        k_pos, k_phase, k_omega = jax.random.split(key, 3)
        n = self.n
        return SwarmState(
            pos=jax.random.uniform(k_pos, (n, 2), maxval=self.size),
            angle=jax.random.uniform(k_phase, (n,), minval=-jnp.pi, maxval=jnp.pi),
            omega=self.omega_std * jax.random.normal(k_omega, (n,)),
            t=jnp.zeros((), jnp.int32),
        )

    def own(self, state: SwarmState) -> Array:
        return (state.omega / self.omega_std)[:, None]

    def local_pull(self, state: SwarmState) -> Array:
        """[N] mean over the window's other oscillators of sin(phase_j - phase_i)."""
        win = self.relative(self._windows(state), state)  # scaled by cells^2 / N
        count = jnp.sum(win[..., 0], axis=1) * self.n / self.cells**2 - 1.0
        pull = jnp.sum(win[..., 2], axis=1) * self.n / self.cells**2  # own term is sin 0
        return jnp.where(count > 0, pull / jnp.maximum(count, 1.0), 0.0)

    def move(self, key: Array, state: SwarmState, u: Array) -> SwarmState:
        k_noise, k_walk = jax.random.split(key)
        rate = state.omega + self.max_control * u[:, 0] + self.coupling * self.local_pull(state)
        phase = _wrap_angle(
            state.angle + self.dt * rate + self.noise * jax.random.normal(k_noise, (self.n,))
        )
        pos = state.pos
        if self.diffusion > 0.0:
            walk = self.diffusion * jax.random.normal(k_walk, pos.shape)
            pos = jnp.remainder(pos + walk, self.size)
        return state.replace(pos=pos, angle=phase)


class Aggregation(Swarm):
    """Aggregation: agents on the unit torus move by `speed` per step (stay or one of four
    directions; continuously, a velocity in the unit disc) plus Gaussian noise of std `noise`,
    and should gather. An agent sees the density of the cells in its window, nothing else (no
    place on a torus is special). Reward: the cohesion, the mean fraction of the swarm within
    an agent's window (`window`), 1 when the whole swarm fits in one window, minus the action
    cost. Reference policy: move toward the window's centre of mass.

    Constructor:
        speed: distance moved per step (unit torus).
        noise: std of the Gaussian noise per step.
    """

    order_name = "cohesion"
    control_dim = 2

    def __init__(
        self,
        num_agents: int = 100,
        speed: float = 0.02,
        noise: float = 0.002,
        cells: int = 8,
        window: int = 1,
        kernel: str = "gaussian",
        discrete_actions: bool = True,
        action_cost: float = 0.0,
        episode_limit: int = 100,
        name: str = "swarm/aggregation",
    ):
        _check(speed >= 0.0 and noise >= 0.0, "speed and noise must be >= 0")
        self.speed, self.noise = float(speed), float(noise)
        super().__init__(
            num_agents, cells, window, kernel, discrete_actions, action_cost, episode_limit, name
        )

    def controls(self, actions: Array) -> Array:
        u = super().controls(actions)
        if self.discrete:
            return u
        norm = jnp.linalg.norm(u, axis=-1, keepdims=True)
        return u / jnp.maximum(norm, 1.0)  # a velocity in the unit disc

    def init_state(self, key: Array) -> SwarmState:
        n = self.n
        return SwarmState(
            pos=jax.random.uniform(key, (n, 2), maxval=self.size),
            angle=jnp.zeros(n),
            omega=jnp.zeros(n),
            t=jnp.zeros((), jnp.int32),
        )

    def move(self, key: Array, state: SwarmState, u: Array) -> SwarmState:
        step = self.speed * u + self.noise * jax.random.normal(key, u.shape)
        return state.replace(pos=jnp.remainder(state.pos + step, self.size))

    def order(self, state: SwarmState) -> Array:
        """The cohesion: the mean over agents of the fraction of the others in its window."""
        return self.neighbours_seen(state)
