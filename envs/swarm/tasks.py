"""The keyword constructors of the swarm tasks (`swarm/aggregation`, `swarm/vicsek`,
`swarm/kuramoto`): each builds a `Swarm`'s parts from flat keywords, the command line's
`env.kwargs`."""

from __future__ import annotations

import math

from .dynamics import AggregationDynamics, KuramotoDynamics, VicsekDynamics
from .env import Swarm
from .generator import Headings, Oscillators, Scatter
from .observation import SwarmObserver
from .reward import Cohesion, Polarisation, Synchrony


def Aggregation(
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
) -> Swarm:
    """Aggregation: agents on the unit torus move by `speed` per step (stay or one of four
    directions; continuously, a velocity in the unit disc) plus Gaussian noise of std `noise`,
    and should gather. An agent sees the density of the cells in its window, nothing else (no
    place on a torus is special). Reward: the cohesion, the mean fraction of the swarm within
    an agent's window (`window`), 1 when the whole swarm fits in one window, minus the action
    cost. Reference policy: move toward the window's centre of mass.

    Constructor:
        num_agents: N (any N >= 2; the step is O(N)).
        speed: distance moved per step (unit torus).
        noise: std of the Gaussian noise per step.
        cells: cells per side of the grid (the world is the unit torus).
        window: an agent sees the (2 window + 1)^2 cells around its own.
        kernel: the state's mean-field embedding, "gaussian" (kernels centred on the cells,
            Dec-POMFC's choice) or "box" (the cells' histogram).
        discrete_actions: Discrete(5) (stay and the four moves); else a Box in [-1, 1]^2.
        action_cost: the reward pays `action_cost * mean |u|^2` (u the control in [-1, 1]).
        episode_limit: steps per episode (truncation: no time in the observation).
    """
    return Swarm(
        Scatter(int(num_agents)),
        AggregationDynamics(float(speed), float(noise)),
        Cohesion(float(action_cost)),
        SwarmObserver(int(cells), int(window), kernel),
        discrete_actions=discrete_actions,
        episode_limit=episode_limit,
        name=name,
    )


def Vicsek(
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
) -> Swarm:
    """Vicsek alignment (Vicsek et al. 1995), partially observed: self-propelled agents move at
    `speed` along their heading on the unit torus; each turns by its control times `max_turn`
    per step, plus Gaussian noise of std `noise`. It sees the headings in its window, relative
    to its own. Reward: the polarisation |mean (cos h, sin h)|, the alignment order parameter
    (1: all move alike), minus the action cost. The classic Vicsek rule (turn to the window's
    mean heading) is the reference policy.

    Constructor:
        num_agents: N (any N >= 2; the step is O(N)).
        speed: distance moved per step (unit torus).
        max_turn: turn per step at control 1, radians.
        noise: std of the Gaussian noise per step.
        cells: cells per side of the grid (the world is the unit torus).
        window: an agent sees the (2 window + 1)^2 cells around its own.
        kernel: the state's mean-field embedding, "gaussian" (kernels centred on the cells,
            Dec-POMFC's choice) or "box" (the cells' histogram).
        discrete_actions: Discrete(5) (the turn's control at -1, -1/2, 0, 1/2, 1); else a Box
            in [-1, 1].
        action_cost: the reward pays `action_cost * mean |u|^2` (u the control in [-1, 1]).
        episode_limit: steps per episode (truncation: no time in the observation).
    """
    return Swarm(
        Headings(int(num_agents)),
        VicsekDynamics(float(speed), float(max_turn), float(noise)),
        Polarisation(float(action_cost)),
        SwarmObserver(int(cells), int(window), kernel, angles=True),
        discrete_actions=discrete_actions,
        episode_limit=episode_limit,
        name=name,
    )


def Kuramoto(
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
) -> Swarm:
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
        num_agents: N (any N >= 2; the step is O(N)).
        omega_std: std of the natural frequencies.
        coupling: local Kuramoto coupling.
        max_control: frequency change at control 1.
        dt: time step.
        noise: std of the Gaussian noise per step.
        diffusion: std of the oscillators' random walk.
        cells: cells per side of the grid (the world is the unit torus).
        window: an agent sees the (2 window + 1)^2 cells around its own.
        kernel: the state's mean-field embedding, "gaussian" (kernels centred on the cells,
            Dec-POMFC's choice) or "box" (the cells' histogram).
        discrete_actions: Discrete(5) (the frequency's control at -1, -1/2, 0, 1/2, 1); else a
            Box in [-1, 1].
        action_cost: the reward pays `action_cost * mean |u|^2` (u the control in [-1, 1]).
        episode_limit: steps per episode (truncation: no time in the observation).
    """
    omega_std = float(omega_std)
    return Swarm(
        Oscillators(int(num_agents), omega_std),
        KuramotoDynamics(
            float(coupling), float(max_control), float(dt), float(noise), float(diffusion)
        ),
        Synchrony(float(action_cost)),
        SwarmObserver(int(cells), int(window), kernel, angles=True, frequency_scale=omega_std),
        discrete_actions=discrete_actions,
        episode_limit=episode_limit,
        name=name,
    )
