"""Continuous multi-agent pathfinding on grid maps (after CAMAR and POGEMA), on a leading agent
axis, with every proximity query going through the cell index (`world.py`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete

from . import maps as mapgen
from . import world
from .dynamics import DYNAMICS, HOLONOMIC_ACTIONS, Dynamics
from .generator import MAPS, MapGenerator, map_generator
from .observation import NEIGHBOURS, OBJECT_FEATURES, OWN_FEATURES, Observer, PathfindingView
from .planning import UNREACHABLE, distance_field, field_at
from .reward import PathfindingReward
from .state import PathfindingState

Array = jax.Array

METRICS = (
    "success_rate",
    "on_goal",
    "all_on_goal",
    "flowtime",
    "makespan",
    "collisions_per_agent",
    "coordination",
    "goals_reached",
)


class Pathfinding(PathfindingView, MultiAgentEnv[PathfindingState]):
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

    Observation [N, 12 + 6 max_obs]: goal offset / (H, W) scale (2), goal direction (2), goal
    distance / max(H, W) (1), on goal (1), velocity / max_speed (2), heading cos and sin (2),
    differential drive (1), radius (1); then the `max_obs` nearest objects within the window,
    nearest first: offset / window (2, the obstacle cell's closest point or the agent's centre),
    gap between surfaces / window (1), radius (1, 0 for cells), is agent (1), present (1).
    State [10 N (+ 1) (+ H W)]: per agent position / size (2), velocity / max_speed (2), goal /
    size (2), heading cos and sin (2), radius (1), on goal (1); t / limit with `time_in_state`;
    the grid with `state_map`.

    Reward [N]: `on_goal_reward * on_goal + all_on_goal_reward * all agents on goal -
    collision_penalty * in contact + shaping * (distance before - distance after)`.
    Terminated when all agents are on their goals at once (never in lifelong mode).
    Metrics ([] float32, the episode so far): success_rate (agents that have reached their
    goal), on_goal (fraction on goal now), all_on_goal, flowtime (sum over agents of the step
    of first arrival, the limit if none; lifelong: the current goal's), makespan (the largest
    such step), collisions_per_agent (steps in contact per agent), coordination (1 - steps in
    contact / steps, averaged over agents; CAMAR's), goals_reached (per agent, lifelong).
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
        _check(map in MAPS, f"unknown map {map!r}; valid: {', '.join(MAPS)}")
        _check(dynamics in DYNAMICS, f"unknown dynamics {dynamics!r}; valid: {', '.join(DYNAMICS)}")
        _check(neighbours in NEIGHBOURS, "neighbours must be auto, dense or grid")
        _check_agents(agent_radius, num_agents, obs_window, max_obs, max_speed * dt)
        generator = map_generator(
            map, height, width, density, extra_connections, room_size, extra_doors, fill,
            smoothing, map_source, num_maps, seed,
        )  # fmt: skip
        motion = Dynamics(
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
        )
        reward = PathfindingReward(
            on_goal=float(on_goal_reward),
            all_on_goal=float(all_on_goal_reward),
            collision=float(collision_penalty),
            shaping=float(shaping),
            geodesic=bool(geodesic_shaping),
        )
        observer = Observer(
            window=int(obs_window),
            max_obs=int(max_obs),
            neighbours=neighbours,
            cell_capacity=int(cell_capacity),
            state_map=bool(state_map),
            time_in_state=bool(time_in_state),
        )
        self._setup(
            generator, motion, reward, observer, num_agents, agent_radius, goal_radius,
            discrete_actions, lifelong, episode_limit, name,
        )  # fmt: skip

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
        default `viewer_module`), defaults for the parts left out; the agents and the limit as
        in the keyword constructor, which builds the same parts from its flat keywords."""
        dynamics = Dynamics() if dynamics is None else dynamics
        observer = Observer() if observer is None else observer
        window = observer.window
        _check_agents(
            agent_radius, num_agents, window, observer.max_obs, dynamics.max_speed * dynamics.dt
        )
        env = cls.__new__(cls)
        env._setup(
            generator, dynamics, PathfindingReward() if reward is None else reward, observer,
            num_agents, agent_radius, goal_radius, discrete_actions, lifelong, episode_limit, name,
        )  # fmt: skip
        if viewer is not None:
            env.viewer_module = viewer
        return env

    def _setup(
        self,
        generator: MapGenerator,
        dynamics: Dynamics,
        reward: PathfindingReward,
        observer: Observer,
        num_agents: int,
        agent_radius: float | tuple[float, float],
        goal_radius: float,
        discrete_actions: bool,
        lifelong: bool,
        episode_limit: int,
        name: str,
    ) -> None:
        """Every attribute of the env, from its parts."""
        self.generator, self.motion, self.reward, self.observer = (
            generator, dynamics, reward, observer,
        )  # fmt: skip
        lo, hi = (agent_radius, agent_radius) if np.isscalar(agent_radius) else agent_radius
        self.map_name = generator.name
        self.height, self.width = int(generator.height), int(generator.width)
        self.generate = generator.maps()
        self.num_maps = generator.num_maps
        self.pad = observer.window
        n = int(num_agents)
        self.num_agents = n
        self.radius_range = (float(lo), float(hi))
        self.goal_radius = float(goal_radius)
        self.discrete = bool(discrete_actions)
        self.dt, self.substeps = float(dynamics.dt), int(dynamics.substeps)
        self.accel, self.damping = float(dynamics.accel), float(dynamics.damping)
        self.max_speed, self.max_turn = float(dynamics.max_speed), float(dynamics.max_turn)
        self.stiffness = float(dynamics.contact_stiffness)
        self.margin = float(dynamics.contact_margin)
        self.guard = 0.5  # centres keep at least half a radius from obstacle cells
        self.window, self.max_obs = int(observer.window), int(observer.max_obs)
        self.dense = observer.neighbours == "dense" or (observer.neighbours == "auto" and n <= 64)
        self.capacity = int(observer.cell_capacity)
        self.rewards = (float(reward.on_goal), float(reward.all_on_goal), float(reward.collision))
        self.shaping = float(reward.shaping)
        self.geodesic = bool(reward.geodesic)
        self.lifelong = bool(lifelong)
        self.state_map = bool(observer.state_map)
        self.time_in_state = bool(observer.time_in_state)
        self.diffdrive = dynamics.diffdrive(n)
        self.dynamics = dynamics.kind

        if self.num_maps is not None:
            pool, free, counts = generator.pool()
            _check(
                counts.min() >= 2 * n,
                f"{name}: a generated map has only {counts.min()} reachable free cells for {n} "
                "agents' starts and goals (lower the density or the agent count)",
            )
            self.pool = (pool, free)
        else:
            self.pool = None
        self.spec = self._make_spec(name, int(episode_limit))

    def _make_spec(self, name: str, episode_limit: int) -> EnvSpec:
        n = self.num_agents
        space = (
            Discrete(len(HOLONOMIC_ACTIONS)) if self.discrete else Box(-1.0, 1.0, (2,), jnp.float32)
        )
        grid = self.height * self.width if self.state_map else 0
        state_dim = 10 * n + int(self.time_in_state) + grid
        return EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=OWN_FEATURES + OBJECT_FEATURES * self.max_obs,
            state_dim=state_dim,
            action_space=space,
            groups=(AgentGroup("agents", tuple(range(n))),),
            agent_names=tuple(f"agent_{i}" for i in range(n)),
            episode_limit=episode_limit,
            metric_names=METRICS,
            # episodes end when every agent is on its goal: shorter is better too
            lower_is_better=("length", "flowtime", "makespan", "collisions_per_agent"),
            headline_metric="success_rate",
            state_bounded=True,  # positions and goals / map size, velocity / max, unit heading
            time_limit_terminal=self.time_in_state,
        )

    # --- reset ---------------------------------------------------------------------------------

    def _map(self, key: Array) -> tuple[Array, Array]:
        if self.pool is None:
            obstacles = self.generate(key)
            return obstacles, mapgen.largest_component(obstacles)
        i = jax.random.randint(key, (), 0, self.num_maps)
        return self.pool[0][i], self.pool[1][i]

    def _draw_cells(self, key: Array, free: Array, count: int) -> Array:
        """`count` distinct cells of `free` (flat indices), uniformly at random."""
        scores = jax.random.uniform(key, (self.height * self.width,))
        scores = jnp.where(free.ravel(), scores, -1.0)
        return jax.lax.top_k(scores, count)[1]

    def _centres(self, flat: Array) -> Array:
        r, c = flat // self.width, flat % self.width
        return jnp.stack([c, r], axis=-1).astype(jnp.float32) + 0.5

    def _field(self, obstacles: Array, goal: Array) -> Array | None:
        if not self.geodesic:
            return None
        rows, cols = world.cell_of(goal, 1.0, self.height, self.width)
        return distance_field(obstacles, rows, cols)

    def reset(self, key: Array) -> tuple[PathfindingState, TimeStep]:
        k_map, k_cells, k_rad = jax.random.split(key, 3)
        obstacles, free = self._map(k_map)
        n = self.num_agents
        cells = self._centres(self._draw_cells(k_cells, free, 2 * n))  # one draw, as CAMAR:
        pos, goal = cells[:n], cells[n:]  # no agent starts on a goal (its own or another's)
        lo, hi = self.radius_range
        radius = jax.random.uniform(k_rad, (n,), minval=lo, maxval=hi)
        rel = goal - pos
        heading = jnp.arctan2(rel[:, 1], rel[:, 0])  # facing the goal (CAMAR)
        on_goal = jnp.linalg.norm(rel, axis=-1) < self.goal_radius
        state = PathfindingState(
            pos=pos,
            vel=jnp.zeros((n, 2)),
            heading=heading,
            radius=radius,
            goal=goal,
            obstacles=jnp.pad(obstacles, self.pad, constant_values=True),
            free=free,
            field=self._field(obstacles, goal),
            on_goal=on_goal,
            arrival=jnp.where(on_goal, 0, -1).astype(jnp.int32),
            collisions=jnp.zeros(n, jnp.int32),
            goals_reached=on_goal.astype(jnp.int32),
            t=jnp.zeros((), jnp.int32),
        )
        return state, self._timestep(state, jnp.zeros(n), jnp.zeros((), bool))

    # --- step ----------------------------------------------------------------------------------

    def _neighbours(self, pos: Array, w: int) -> tuple[Array, Array]:
        if self.dense:
            return world.all_candidates(self.num_agents)
        rows, cols = world.cell_of(pos, 1.0, self.height, self.width)
        return world.agent_candidates(rows, cols, self.width, w, self.capacity)

    def _substep(self, state: PathfindingState, u: Array) -> tuple[PathfindingState, Array]:
        pos, vel, radius = state.pos, state.vel, state.radius
        rows, cols = world.cell_of(pos, 1.0, self.height, self.width)
        lo, occupied = world.nearby_cells(state.obstacles, rows, cols, 1, self.pad, 1.0)
        f_obs, touch_obs = world.obstacle_force(
            pos, radius, lo, occupied, 1.0, self.stiffness, self.margin
        )
        idx, valid = self._neighbours(pos, 1)
        f_agents, touch_agents, _, _ = world.agent_force(
            pos, radius, idx, valid, self.stiffness, self.margin
        )
        force = f_obs + f_agents
        vel, heading = self.motion.velocity(vel, state.heading, u, force, self.diffdrive)
        dt = self.dt
        pos, vel = world.keep_out(pos + vel * dt, vel, self.guard * radius, lo, occupied, 1.0)
        state = state.replace(pos=pos, vel=vel, heading=heading)
        return state, touch_obs | touch_agents

    def step_env(
        self, key: Array, state: PathfindingState, actions: Array
    ) -> tuple[PathfindingState, TimeStep]:
        u = self.motion.commands(actions, self.discrete, self.diffdrive)
        before = self._goal_distance(state)
        touched = jnp.zeros(self.num_agents, bool)
        for _ in range(self.substeps):
            state, touch = self._substep(state, u)
            touched = touched | touch
        t = state.t + 1
        dist = jnp.linalg.norm(state.goal - state.pos, axis=-1)
        on_goal = dist < self.goal_radius
        first = on_goal & (state.arrival < 0)
        arrival = jnp.where(first, t, state.arrival)
        state = state.replace(
            on_goal=on_goal,
            arrival=arrival,
            collisions=state.collisions + touched.astype(jnp.int32),
            goals_reached=state.goals_reached + first.astype(jnp.int32),
        )
        progress = before - self._goal_distance(state)
        all_on = jnp.all(on_goal)
        reward = self.reward(on_goal, all_on, touched, progress)
        if self.lifelong:
            state = self._new_goals(key, state, on_goal)
            terminated = jnp.zeros((), bool)
        else:
            terminated = all_on
        # `t` is advanced by `MultiAgentEnv.step`; metrics count this step
        return state, self._timestep(state, reward, terminated, steps=t)

    def _goal_distance(self, state: PathfindingState) -> Array:
        euclid = jnp.linalg.norm(state.goal - state.pos, axis=-1)
        if state.field is None:
            return euclid
        rows, cols = world.cell_of(state.pos, 1.0, self.height, self.width)
        geo = field_at(state.field, rows, cols)
        # the wavefront is in whole cells; inside the goal's cell use the straight line
        return jnp.where(geo < 0.5, euclid, jnp.minimum(geo, UNREACHABLE))

    def _new_goals(self, key: Array, state: PathfindingState, reached: Array) -> PathfindingState:
        n = self.num_agents
        scores = jax.random.uniform(key, (n, self.height * self.width))
        scores = jnp.where(state.free.ravel()[None], scores, -1.0)
        goal = jnp.where(reached[:, None], self._centres(jnp.argmax(scores, axis=1)), state.goal)
        state = state.replace(
            goal=goal,
            on_goal=state.on_goal & ~reached,
            arrival=jnp.where(reached, -1, state.arrival),
        )
        if self.geodesic:
            inner = state.obstacles[self.pad : -self.pad, self.pad : -self.pad]
            state = state.replace(
                field=jax.lax.cond(
                    jnp.any(reached), lambda: self._field(inner, goal), lambda: state.field
                )
            )
        return state

    def neighbourhood(self, state: PathfindingState) -> Array:
        """Agents within the observation window (`obs_window` cells) of each other."""
        d = jnp.linalg.norm(state.pos[:, None] - state.pos[None], axis=-1)
        return (super().neighbourhood(state) * (d < self.window)).astype(jnp.float32)

    # --- rendering -----------------------------------------------------------------------------

    def render_frame(self, state: PathfindingState) -> dict[str, Any]:
        p = self.pad
        return {
            "obstacles": np.asarray(state.obstacles[p:-p, p:-p]),
            "pos": np.asarray(state.pos),
            "radius": np.asarray(state.radius),
            "goal": np.asarray(state.goal),
            "goal_radius": self.goal_radius,
            "heading": np.asarray(state.heading),
            "diffdrive": self.diffdrive,
            "on_goal": np.asarray(state.on_goal),
        }


def _check_agents(
    agent_radius: float | tuple[float, float],
    num_agents: int,
    obs_window: int,
    max_obs: int,
    substep_distance: float,
) -> None:
    """The agents' keywords in one line each: radii in (0, 0.5], at least one agent and one
    observed object, a sub-step's move (`max_speed * dt`) shorter than the smallest radius."""
    lo, hi = (agent_radius, agent_radius) if np.isscalar(agent_radius) else agent_radius
    _check(0 < lo <= hi <= 0.5, f"agent_radius must be in (0, 0.5], got {agent_radius}")
    _check(num_agents >= 1, "num_agents must be >= 1")
    _check(obs_window >= 1 and max_obs >= 1, "obs_window and max_obs must be >= 1")
    _check(
        substep_distance < lo,
        f"max_speed * dt = {substep_distance:.3f} must stay below the agent radius {lo} "
        "(otherwise agents could pass through one another within a sub-step)",
    )


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
