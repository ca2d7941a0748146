"""Continuous multi-agent pathfinding on grid maps (after CAMAR and POGEMA), on a leading agent
axis, with every proximity query going through the cell index (`world.py`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete

from .agents import Agents
from .dynamics import DYNAMICS, HOLONOMIC_ACTIONS, Dynamics
from .generator import MAPS, MapGenerator, map_generator
from .observation import METRICS, Observer
from .reward import PathfindingReward
from .state import PathfindingState

__all__ = ["DYNAMICS", "HOLONOMIC_ACTIONS", "MAPS", "METRICS", "Parts", "Pathfinding"]

Array = jax.Array


class Parts(NamedTuple):
    """What a pathfinding task is made of (`Pathfinding.from_parts`)."""

    generator: MapGenerator
    dynamics: Dynamics
    reward: PathfindingReward
    observer: Observer
    agents: Agents


class Pathfinding(MultiAgentEnv[PathfindingState]):
    """Agents (discs) drive to their goals across a grid map without hitting obstacles or
    each other. Lengths are in cells (the map is `[0, W] x [0, H]`), times in seconds.

    Constructor:
        map: "random_grid" (`density` obstacles), "labyrinth" (`extra_connections`),
            "rooms" (`room_size`, `extra_doors`), "caves" (`fill`, `smoothing`) or "string"
            (`map_source`: a shipped map name, a MovingAI `.map` path, or map text).
        height, width: the generated grid (ignored by "string").
        num_maps: generated maps are drawn per reset from a pool of this many, generated once
            at construction with the jitted generator; None generates a fresh map every reset
            (slower: auto-reset computes a reset every step).
        num_agents: N.
        dynamics: "holonomic" (acceleration, damping, max speed), "diffdrive" (commanded linear
            and angular speeds, CAMAR's) or "mixed" (the first `round(diffdrive_fraction * N)`
            agents differential drive, the rest holonomic).
        agent_radius: a radius, or a (low, high) range drawn per agent per episode (<= 0.5).
        goal_radius: an agent is on its goal within this distance of its centre.
        discrete_actions: 5 actions (stop, +x, -x, +y, -y for holonomic; stop, forward,
            backward, turn left, turn right for differential drive) instead of `Box(-1, 1, (2,))`.
        dt, substeps: physics step and sub-steps per env step (a step lasts `dt * substeps`).
        accel, damping, max_speed: holonomic `v <- (1 - damping) v + (accel u + F) dt`,
            clipped to `max_speed`.
        max_turn: differential drive angular speed at |u| = 1 (rad / s); linear speed
            `max_speed * u`.
        contact_stiffness, contact_margin: soft contacts (`world.penalty`); behind them a
            positional guard keeps every centre half a radius out of obstacle cells, so a
            crowd cannot squeeze an agent through a wall (`world.keep_out`). Speeds, pushes
            included, never exceed `max_speed`.
        obs_window: obstacles and agents are observed within this many cells (a block of
            `(2 obs_window + 1)^2` cells around the agent's own).
        max_obs: the k nearest objects (agents and obstacle cells) in the observation.
        neighbours: "dense" (every other agent), "grid" (cell list, `cell_capacity` agents per
            cell) or "auto" (grid above 64 agents).
        on_goal_reward, all_on_goal_reward, collision_penalty: per step (CAMAR's 0.5, 0.5, 1).
        shaping: potential-based progress reward per cell of distance gained.
        geodesic_shaping: measure that distance on the map (wavefront field, computed at every
            reset and on every new goal) instead of in a straight line.
        lifelong: an agent that reaches its goal is given a new one (no termination).
        state_map: append the flattened obstacle grid to the global state.
        time_in_state: append t / episode_limit to the state and end episodes at the limit as
            terminated (`EnvSpec.time_limit_terminal`); default: no time in the state, and the
            limit truncates (learners bootstrap).
        episode_limit: steps before truncation.
        density: random_grid: fraction of obstacle cells.
        extra_connections: labyrinth: chance to open each extra wall.
        room_size: rooms: wall spacing in cells.
        extra_doors: rooms: chance of a second door per wall.
        fill: caves: initial obstacle chance.
        smoothing: caves: cellular-automaton rounds.
        map_source: string: shipped map name, .map path or text.
        diffdrive_fraction: mixed: share of differential-drive agents.
        cell_capacity: grid: agents read per cell.
        seed: seed of the map pool.

    The keywords build the task's parts (`from_parts` takes them built), each a frozen
    dataclass called with the state and its own settings: the map generator (`RandomGrid`,
    `Labyrinth`, `Rooms`, `Caves`, `StringMap`), the `Agents` (starts, goals, radii,
    arrivals), the `Dynamics` (sub-steps of motion and contact), the `PathfindingReward` and
    the `Observer` (observations, state and metrics; `observation.py` lays out every feature);
    the viewer is a module (`viewer_module`). `reset` draws a map from the generator and places
    the agents on it; `step` has the dynamics move them, the agents count arrivals, the reward
    read the step and, lifelong, the agents take new goals; the observer reads the result.

    Reward [N]: `on_goal_reward * on_goal + all_on_goal_reward * all agents on goal -
    collision_penalty * in contact + shaping * (distance before - distance after)`.
    Terminated when all agents are on their goals at once (never in lifelong mode).
    """

    viewer_module = "marl.envs.pathfinding.viewer"
    reference_policy = "marl.baselines.pathfinding:planner_policy"

    def __init__(
        self,
        map: str = "random_grid",
        height: int = 20,
        width: int = 20,
        density: float = 0.2,
        extra_connections: float = 0.1,
        room_size: int = 5,
        extra_doors: float = 0.0,
        fill: float = 0.45,
        smoothing: int = 4,
        map_source: str | None = None,
        num_maps: int | None = 1024,
        num_agents: int = 32,
        dynamics: str = "holonomic",
        diffdrive_fraction: float = 0.5,
        agent_radius: float | tuple[float, float] = 0.3,
        goal_radius: float = 0.25,
        discrete_actions: bool = False,
        dt: float = 0.05,
        substeps: int = 2,
        accel: float = 15.0,
        damping: float = 0.1,
        max_speed: float = 3.0,
        max_turn: float = 4.0,
        contact_stiffness: float = 500.0,
        contact_margin: float = 0.01,
        obs_window: int = 2,
        max_obs: int = 6,
        neighbours: str = "auto",
        cell_capacity: int = 4,
        on_goal_reward: float = 0.5,
        all_on_goal_reward: float = 0.5,
        collision_penalty: float = 1.0,
        shaping: float = 1.0,
        geodesic_shaping: bool = False,
        lifelong: bool = False,
        state_map: bool = True,
        time_in_state: bool = False,
        episode_limit: int = 128,
        seed: int = 0,
        name: str = "pathfinding/custom",
    ):
        parts = Parts(
            generator=map_generator(
                map=map,
                height=height,
                width=width,
                density=density,
                extra_connections=extra_connections,
                room_size=room_size,
                extra_doors=extra_doors,
                fill=fill,
                smoothing=smoothing,
                map_source=map_source,
                num_maps=num_maps,
                seed=seed,
            ),
            dynamics=Dynamics(
                kind=dynamics,
                diffdrive_fraction=float(diffdrive_fraction),
                dt=float(dt),
                substeps=int(substeps),
                accel=float(accel),
                damping=float(damping),
                max_speed=float(max_speed),
                max_turn=float(max_turn),
                contact_stiffness=float(contact_stiffness),
                contact_margin=float(contact_margin),
            ),
            reward=PathfindingReward(
                on_goal=float(on_goal_reward),
                all_on_goal=float(all_on_goal_reward),
                collision=float(collision_penalty),
                shaping=float(shaping),
                geodesic=bool(geodesic_shaping),
            ),
            observer=Observer(
                window=int(obs_window),
                max_obs=int(max_obs),
                neighbours=neighbours,
                cell_capacity=int(cell_capacity),
                state_map=bool(state_map),
                time_in_state=bool(time_in_state),
            ),
            agents=Agents.of(num_agents, agent_radius, goal_radius, lifelong),
        )
        self._assemble(parts, discrete=discrete_actions, episode_limit=episode_limit, name=name)

    @classmethod
    def from_parts(
        cls,
        generator: MapGenerator,
        dynamics: Dynamics | None = None,
        reward: PathfindingReward | None = None,
        observer: Observer | None = None,
        *,
        num_agents: int = 32,
        agent_radius: float | tuple[float, float] = 0.3,
        goal_radius: float = 0.25,
        discrete_actions: bool = False,
        lifelong: bool = False,
        episode_limit: int = 128,
        viewer: str | None = None,
        name: str = "pathfinding/custom",
    ) -> Pathfinding:
        """Routing composed of parts: `generator` (the maps: `RandomGrid`, `Labyrinth`,
        `Rooms`, `Caves`, `StringMap`), `dynamics` (`Dynamics`), `reward`
        (`PathfindingReward`), `observer` (`Observer`) and `viewer` (a viewer module's path;
        default `viewer_module`), defaults for the parts left out; the agents (`Agents`) and
        the limit as in the keyword constructor, which builds the same parts from its flat
        keywords."""
        parts = Parts(
            generator=generator,
            dynamics=Dynamics() if dynamics is None else dynamics,
            reward=PathfindingReward() if reward is None else reward,
            observer=Observer() if observer is None else observer,
            agents=Agents.of(num_agents, agent_radius, goal_radius, lifelong),
        )
        env = cls.__new__(cls)
        env._assemble(parts, discrete=discrete_actions, episode_limit=episode_limit, name=name)
        if viewer is not None:
            env.viewer_module = viewer
        return env

    def _assemble(self, parts: Parts, *, discrete: bool, episode_limit: int, name: str) -> None:
        """Hold the parts (the observer given the task's limit, speeds and actions) and the map
        pool, checking that they fit together."""
        self.generator = parts.generator
        self.dynamics = parts.dynamics
        self.reward = parts.reward
        self.agents = parts.agents
        n, lowest = self.num_agents, self.agents.radius_range[0]
        step = self.dynamics.max_speed * self.dynamics.dt
        _check(
            step < lowest,
            f"max_speed * dt = {step:.3f} must stay below the agent radius {lowest} "
            "(otherwise agents could pass through one another within a sub-step)",
        )
        self.discrete = bool(discrete)
        actions = len(HOLONOMIC_ACTIONS) if self.discrete else 2
        self.observer = replace(
            parts.observer,
            episode_limit=int(episode_limit),
            max_speed=float(self.dynamics.max_speed),
            num_diffdrive=int(self.diffdrive.sum()),
            num_actions=actions,
        )
        self.pool = None if self.generator.num_maps is None else self.generator.pool()
        if self.pool is not None:
            fewest = self.pool.counts.min()
            _check(
                fewest >= 2 * n,
                f"{name}: a generated map has only {fewest} reachable free cells for {n} "
                "agents' starts and goals (lower the density or the agent count)",
            )
        self.spec = self._make_spec(name)

    def _make_spec(self, name: str) -> EnvSpec:
        n, observer = self.num_agents, self.observer
        space = (
            Discrete(observer.num_actions) if self.discrete else Box(-1.0, 1.0, (2,), jnp.float32)
        )
        return EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=observer.obs_dim,
            state_dim=observer.state_dim(n, self.height, self.width),
            action_space=space,
            groups=(AgentGroup("agents", tuple(range(n))),),
            agent_names=tuple(f"agent_{i}" for i in range(n)),
            episode_limit=observer.episode_limit,
            metric_names=METRICS,
            # episodes end when every agent is on its goal: shorter is better too
            lower_is_better=("length", "flowtime", "makespan", "collisions_per_agent"),
            headline_metric="success_rate",
            state_bounded=True,  # positions and goals / map size, velocity / max, unit heading
            time_limit_terminal=observer.time_in_state,
        )

    # --- the task's sizes, read from its parts (what the planner baseline reads) ------------
    @property
    def num_agents(self) -> int:
        """N."""
        return int(self.agents.num_agents)

    @property
    def goal_radius(self) -> float:
        return float(self.agents.goal_radius)

    @property
    def height(self) -> int:
        """The map's rows."""
        return int(self.generator.height)

    @property
    def width(self) -> int:
        """The map's columns."""
        return int(self.generator.width)

    @property
    def pad(self) -> int:
        """Obstacle cells padding the map in the state."""
        return int(self.observer.window)

    @property
    def dt(self) -> float:
        return float(self.dynamics.dt)

    @property
    def substeps(self) -> int:
        return int(self.dynamics.substeps)

    @property
    def accel(self) -> float:
        return float(self.dynamics.accel)

    @property
    def damping(self) -> float:
        return float(self.dynamics.damping)

    @property
    def max_speed(self) -> float:
        return float(self.dynamics.max_speed)

    @property
    def max_turn(self) -> float:
        return float(self.dynamics.max_turn)

    @property
    def diffdrive(self) -> np.ndarray:
        """[N] bool: which agents drive differentially."""
        return self.dynamics.diffdrive(self.num_agents)

    # --- reset and step ------------------------------------------------------------------------
    def reset(self, key: Array) -> tuple[PathfindingState, TimeStep]:
        k_map, k_cells, k_radius = jax.random.split(key, 3)
        obstacles, free = self.generator.draw(k_map, self.pool)
        state = self.agents.place(k_cells, k_radius, self.observer.pad(obstacles), free)
        state = state.replace(field=self.reward.field(state))
        zeros = jnp.zeros(self.num_agents)
        return state, self.observer(state, zeros, jnp.zeros((), bool), state.t)

    def step_env(
        self, key: Array, state: PathfindingState, actions: Array
    ) -> tuple[PathfindingState, TimeStep]:
        u = self.dynamics.commands(actions, self.discrete)
        after, touched = self.dynamics(state, u, self.observer.index)
        after = self.agents.arrive(after, touched)
        reward = self.reward(state, after, touched)
        terminated = jnp.all(after.on_goal)
        if self.agents.lifelong:
            reached = jnp.any(after.on_goal)
            after = self.reward.follow(self.agents.new_goals(key, after), reached)
            terminated = jnp.zeros((), bool)
        # `t` is advanced by `MultiAgentEnv.step`; metrics count this step
        return after, self.observer(after, reward, terminated, state.t + 1)

    def neighbourhood(self, state: PathfindingState) -> Array:
        """Agents within the observation window (`obs_window` cells) of each other."""
        d = jnp.linalg.norm(state.pos[:, None] - state.pos[None], axis=-1)
        return (super().neighbourhood(state) * (d < self.observer.window)).astype(jnp.float32)

    def render_frame(self, state: PathfindingState) -> dict[str, Any]:
        return {
            "obstacles": np.asarray(state.grid),
            "pos": np.asarray(state.pos),
            "radius": np.asarray(state.radius),
            "goal": np.asarray(state.goal),
            "goal_radius": self.goal_radius,
            "heading": np.asarray(state.heading),
            "diffdrive": self.diffdrive,
            "on_goal": np.asarray(state.on_goal),
        }


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
