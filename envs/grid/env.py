"""`GridMAPF`: multi-agent pathfinding on a grid as POGEMA defines it, composed of parts.

```
reset: maps(key) -> grid, starts, goals, size -> pad by r (a frame of obstacles) -> observe
step:  collision(grid, cells, actions, on the grid) -> cells
       on_target: rewards, who leaves the grid (finish), new goals (restart) -> metrics
       observe (observation.Window), global state
```

The parts: `maps` (`RandomMaps`, `MapPool`, `Instances`), `collision` (`Collision`: priority,
block_both, soft), `on_target` (`OnTarget`: finish, nothing, restart) and the observer
(`Window`). Each episode equals pogema's (1.4.0) step for step on the same instance and
actions: cells, observations, rewards, terminations and metrics
(tests/test_grid_pogema.py).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Discrete

from .collision import Collision, occupancy
from .maps import Instances, MapPool, RandomMaps, components
from .observation import Window, global_state
from .targets import LOWER_IS_BETTER, GoalCells, OnTarget, episode_metrics, goal_cells, new_goals

Array = jax.Array
Maps = RandomMaps | MapPool | Instances
REWARDS = ("pogema", "arrivals")
DEFAULT_MAPS = RandomMaps()  # POGEMA's GridConfig: 8 x 8 cells, density 0.3


class GridState(struct.PyTreeNode):
    """One episode: N agents on a grid of H x W cells padded by r on every side (cells in
    padded coordinates, x the row)."""

    obstacles: Array  # [H + 2r, W + 2r] bool: the map, its frame, free cells beyond
    cells: GoalCells  # the free cells by component, for lifelong goals (size 1 if unused)
    pos: Array  # [N, 2] int32
    goal: Array  # [N, 2] int32 the current goal
    goals: Array  # [N, G, 2] int32 the goal sequence (restart with G >= 2 cycles through it)
    goal_index: Array  # [N] int32 the current goal's place in `goals`
    active: Array  # [N] bool on the grid and acting (finish: not yet arrived)
    agents: Array  # [H + 2r, W + 2r] bool the agents' grid as POGEMA keeps it (observations)
    reached: Array  # [N] int32 goals reached this episode
    solve: Array  # [N] int32 step it finished (finish) / arrived to stay (nothing); -1
    size: Array  # [2] int32 the map's height and width (at most H, W)
    t: Array  # [] int32


def fields_over(part: Any, values: dict) -> Any:
    """`part` with the fields in `values` replaced; an unknown field named in one line."""
    valid = [f.name for f in fields(part) if f.init]
    unknown = sorted(set(values) - set(valid))
    if unknown:
        raise ValueError(
            f"{type(part).__name__} has no field(s) {', '.join(unknown)}; valid: {', '.join(valid)}"
        )
    return replace(part, **values)


def _part(value: Any, kind: type, default: Any) -> Any:
    """A part from its object, its name (a string) or a mapping of fields over `default`."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        return kind(value)
    if isinstance(value, dict):
        return fields_over(default, value)
    raise ValueError(f"expected a {kind.__name__}, a name or a mapping, got {value!r}")


class GridMAPF(MultiAgentEnv[GridState]):
    """Grid multi-agent pathfinding (POGEMA's semantics): 5 actions (wait, up, down, left,
    right), an observation window of radius `obs_radius`, a reward of 1 on reaching a goal.

    Constructor:
        maps: the instances (`RandomMaps`, `MapPool`, `Instances`, or a mapping of
            `RandomMaps` fields).
        collision: `Collision` or its rule: "priority" (POGEMA's default), "block_both",
            "soft".
        on_target: `OnTarget` or its mode: "finish" (default), "nothing", "restart".
        obs_radius: the window's radius r (POGEMA's default 5).
        num_agents: N.
        episode_limit: steps per episode (POGEMA's `max_episode_steps`, default 64).
        reward: "pogema" (POGEMA's: 1 on reaching a goal; under `on_target="nothing"` 1 to
            every agent when all stand on their goals) or "arrivals" (under "nothing" each
            agent is also paid 1 on arriving at its goal and -1 on leaving it, so its return
            says whether it ends there: a signal to learn the set's setting from; the same
            as "pogema" in the other modes, which pay each arrival already).
        neighbour_radius: the neighbourhood (`neighbourhood`: mean-field averages, the graph
            torso's links) is the agents on the grid within this many cells (Chebyshev; equal
            to `obs_radius`: those in view); None (default): every other agent.
    """

    viewer_module = "marl.envs.grid.viewer"
    reference_policy = "marl.baselines.grid:astar_policy"

    def __init__(
        self,
        maps: Maps | dict = DEFAULT_MAPS,
        collision: Collision | str = "priority",
        on_target: OnTarget | str = "finish",
        obs_radius: int = 5,
        num_agents: int = 8,
        episode_limit: int = 64,
        reward: str = "pogema",
        neighbour_radius: int | None = None,
        name: str = "grid/custom",
    ):
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; valid: {', '.join(REWARDS)}")
        self.reward = reward
        if neighbour_radius is not None and int(neighbour_radius) < 1:
            raise ValueError(f"neighbour_radius must be >= 1 or None, got {neighbour_radius}")
        self.neighbour_radius = None if neighbour_radius is None else int(neighbour_radius)
        self.maps = _part(maps, RandomMaps, DEFAULT_MAPS) if isinstance(maps, dict) else maps
        if not isinstance(self.maps, (RandomMaps, MapPool, Instances)):
            raise ValueError(f"maps must be RandomMaps, MapPool or Instances, got {maps!r}")
        self.collision = _part(collision, Collision, Collision())
        self.on_target = _part(on_target, OnTarget, OnTarget())
        self.observer = Window(int(obs_radius))
        n = int(num_agents)
        if n < 1:
            raise ValueError(f"num_agents must be >= 1, got {n}")
        self.maps.check(n)
        self.num_agents = n
        self.r = self.observer.radius
        self.height, self.width = self.maps.height, self.maps.width
        mode = self.on_target.mode
        metrics = self.on_target.metrics
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=self.observer.size(),
            state_dim=5 * n + self.height * self.width,
            action_space=Discrete(5),
            groups=(AgentGroup("agents", tuple(range(n))),),
            agent_names=tuple(f"agent_{i}" for i in range(n)),
            episode_limit=int(episode_limit),
            metric_names=metrics,
            cooperative=True,
            state_bounded=True,
            lower_is_better=tuple(m for m in LOWER_IS_BETTER if m in metrics),
            shared_reward=mode == "nothing" and reward == "pogema",
            headline_metric=self.on_target.headline,
        )

    # --- reset -----------------------------------------------------------------------------
    def reset(self, key: Array) -> tuple[GridState, TimeStep]:
        return self.reset_to(*self.maps(key, self.num_agents))

    def reset_to(
        self, grid: Array, starts: Array, goals: Array, size: Array | None = None
    ) -> tuple[GridState, TimeStep]:
        """An episode on a given instance (map coordinates): grid [H, W] bool, starts [N, 2],
        goals [N, 2] or goal sequences [N, G, 2], and the map's size [2] (default H, W; a
        smaller map sits in the grid's top-left corner). As POGEMA, start and first-goal
        cells are made free, and a frame of obstacles surrounds the map, free cells beyond."""
        r, n = self.r, self.num_agents
        goals = jnp.asarray(goals, jnp.int32)
        goals = goals[:, None] if goals.ndim == 2 else goals
        starts = jnp.asarray(starts, jnp.int32)
        grid = jnp.asarray(grid, bool)
        grid = grid.at[starts[:, 0], starts[:, 1]].set(False)
        grid = grid.at[goals[:, 0, 0], goals[:, 0, 1]].set(False)
        h, w = grid.shape
        size = jnp.asarray((h, w) if size is None else size, jnp.int32)
        x = jnp.arange(h + 2 * r)[:, None] - r
        y = jnp.arange(w + 2 * r)[None, :] - r
        inside = (x >= 0) & (x < size[0]) & (y >= 0) & (y < size[1])
        ring = (x >= -1) & (x <= size[0]) & (y >= -1) & (y <= size[1]) & ~inside
        padded = ring | (inside & jnp.pad(grid, r))
        goals = goals + r
        one = jnp.zeros((1, 1), jnp.int32)  # no draws: a table of one cell
        state = GridState(
            obstacles=padded,
            cells=goal_cells(components(~padded) if self._draws_goals(goals) else one),
            pos=starts + r,
            goal=goals[:, 0],
            goals=goals,
            goal_index=jnp.zeros(n, jnp.int32),
            active=jnp.ones(n, bool),
            agents=occupancy(padded.shape, starts + r, jnp.ones(n, bool)),
            reached=jnp.zeros(n, jnp.int32),
            solve=jnp.full(n, -1, jnp.int32),
            size=size,
            t=jnp.zeros((), jnp.int32),
        )
        zero = {m: jnp.zeros((), jnp.float32) for m in self.spec.metric_names}
        return state, self._timestep(state, jnp.zeros(n, jnp.float32), jnp.bool_(False), zero)

    def _draws_goals(self, goals: Array) -> bool:
        """Whether steps draw new goals (restart without a goal sequence): only then do they
        need the components."""
        return self.on_target.mode == "restart" and goals.shape[1] == 1

    # --- step ------------------------------------------------------------------------------
    def step_env(self, key: Array, state: GridState, actions: Array) -> tuple[GridState, TimeStep]:
        actions = jnp.clip(jnp.asarray(actions, jnp.int32), 0, 4)
        pos, agents = self.collision(state.obstacles, state.pos, actions, state.active)
        on_goal = jnp.all(pos == state.goal, axis=-1)
        mode, s = self.on_target.mode, state.t
        if mode == "finish":
            reach = on_goal & state.active
            reward = reach.astype(jnp.float32)
            active = state.active & ~on_goal
            agents = agents.at[pos[:, 0], pos[:, 1]].min(~reach)  # who arrived leaves the grid
            solve = jnp.where(reach & (state.solve < 0), s, state.solve)
            terminated = ~jnp.any(active)
            goal, goal_index = state.goal, state.goal_index
        elif mode == "nothing":
            reach = on_goal
            done = jnp.all(on_goal)
            reward = jnp.full(self.num_agents, done, jnp.float32)
            if self.reward == "arrivals":  # +1 arriving, -1 leaving: the return is the end
                was = jnp.all(state.pos == state.goal, axis=-1)
                reward = reward + on_goal.astype(jnp.float32) - was.astype(jnp.float32)
            active = state.active
            solve = jnp.where(on_goal, jnp.where(state.solve < 0, s, state.solve), -1)
            terminated = done
            goal, goal_index = state.goal, state.goal_index
        else:
            reach = on_goal
            reward = on_goal.astype(jnp.float32)
            active, solve, terminated = state.active, state.solve, jnp.bool_(False)
            g = state.goals.shape[1]
            if g >= 2:  # the instance's sequence, cycled
                goal_index = jnp.where(on_goal, (state.goal_index + 1) % g, state.goal_index)
                goal = jnp.take_along_axis(state.goals, goal_index[:, None, None], 1)[:, 0]
            else:
                goal_index = state.goal_index
                drawn = new_goals(key, state.cells, pos, state.obstacles.shape[1])
                goal = jnp.where(on_goal[:, None], drawn, state.goal)
        reached = state.reached + reach.astype(jnp.int32)
        before = state.solve
        state = state.replace(
            pos=pos,
            goal=goal,
            goal_index=goal_index,
            active=active,
            agents=agents,
            reached=reached,
            solve=solve,
        )
        metrics = episode_metrics(mode, s, on_goal, reached, solve, before, self.spec.episode_limit)
        return state, self._timestep(state, reward, terminated, metrics)

    def _timestep(
        self, state: GridState, reward: Array, terminated: Array, metrics: dict[str, Array]
    ) -> TimeStep:
        obs = self.observer(state.obstacles, state.agents, state.pos, state.goal)
        avail = jnp.ones((self.num_agents, 5), bool).at[:, 1:].set(state.active[:, None])
        return TimeStep(
            obs=obs,
            state=global_state(
                state.obstacles, state.pos, state.goal, state.active, self.r, state.size
            ),
            avail_actions=avail,
            reward=reward,
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.bool_(False),
            alive=state.active,
            metrics=metrics,
        )

    def neighbourhood(self, state: GridState) -> Array:
        """Every other agent; with `neighbour_radius`, those on the grid within it."""
        links = super().neighbourhood(state)
        if self.neighbour_radius is None:
            return links
        d = jnp.max(jnp.abs(state.pos[:, None] - state.pos[None]), axis=-1)
        near = (d <= self.neighbour_radius) & state.active[None, :]
        return links * near.astype(links.dtype)

    def render_frame(self, state: GridState) -> dict[str, Any]:
        r = self.r
        h, w = (int(v) for v in np.asarray(state.size))
        return {
            "obstacles": np.asarray(state.obstacles[r : r + h, r : r + w]),
            "pos": np.asarray(state.pos) - r,
            "goal": np.asarray(state.goal) - r,
            "active": np.asarray(state.active),
            "finish": self.on_target.mode == "finish",
        }
