"""Pathfinding: maps, reachability, physics invariants, neighbour queries, the planner."""

from __future__ import annotations

import heapq
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import one_by_default
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import marl
from marl.baselines.pathfinding import planner_policy
from marl.core.testing import check_env
from marl.envs.pathfinding import maps as mapgen
from marl.envs.pathfinding.planning import UNREACHABLE, distance_field
from marl.learning.evaluation import evaluate

IDS = [
    f"pathfinding/{m}"
    for m in ("random_grid", "random_grid128", "labyrinth", "rooms", "caves", "string")
]
# check_env compiles a few dozen programs per id: one runs by default, the rest with `-m slow`
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
# each example builds its own env (a new program to compile): fewer examples
PER_ENV = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))


def bfs_reach(free: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """4-connected cells reachable from `start` over `free` (numpy reference)."""
    h, w = free.shape
    seen = np.zeros_like(free)
    seen[start] = True
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < w and free[rr, cc] and not seen[rr, cc]:
                seen[rr, cc] = True
                queue.append((rr, cc))
    return seen


def dijkstra(obstacles: np.ndarray, goal: tuple[int, int]) -> np.ndarray:
    """8-connected shortest paths without corner cutting (numpy reference)."""
    h, w = obstacles.shape
    dist = np.full((h, w), UNREACHABLE)
    dist[goal] = 0.0
    heap = [(0.0, goal)]
    while heap:
        d, (r, c) = heapq.heappop(heap)
        if d > dist[r, c]:
            continue
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                rr, cc = r + dr, c + dc
                if (dr, dc) == (0, 0) or not (0 <= rr < h and 0 <= cc < w) or obstacles[rr, cc]:
                    continue
                if dr and dc and (obstacles[r + dr, c] or obstacles[r, c + dc]):
                    continue
                nd = d + (np.sqrt(2.0) if dr and dc else 1.0)
                if nd < dist[rr, cc] - 1e-9:
                    dist[rr, cc] = nd
                    heapq.heappush(heap, (nd, (rr, cc)))
    return dist


@pytest.mark.parametrize("env_id", one_by_default(IDS, "pathfinding/random_grid"))
def test_registered_maps_keep_the_contract(env_id):
    check_env(marl.make(env_id, num_maps=64), num_episodes=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param(
            {"dynamics": "mixed", "discrete_actions": True, "agent_radius": (0.2, 0.4)},
            marks=pytest.mark.slow,
        ),
        pytest.param(
            {"dynamics": "diffdrive", "lifelong": True, "geodesic_shaping": True},
            marks=pytest.mark.slow,
        ),
        pytest.param(
            {"neighbours": "grid", "num_maps": None, "state_map": False}, marks=pytest.mark.slow
        ),
    ],
)
def test_options_keep_the_contract(kwargs):
    env = marl.make("pathfinding/random_grid", num_agents=12, episode_limit=48, **kwargs)
    check_env(env, num_episodes=1)


@FAST
@given(seed=st.integers(0, 2**30), extra=st.sampled_from([0.0, 0.3]))
def test_labyrinths_are_connected_and_perfect_without_extra_connections(seed, extra):
    grid = np.asarray(mapgen.labyrinth(15, 13, extra)(jax.random.key(seed)))
    free = ~grid
    start = tuple(np.argwhere(free)[0])
    assert (bfs_reach(free, start) == free).all()  # one component
    if extra == 0.0:  # a spanning tree: 7 x 6 rooms joined by 7 * 6 - 1 openings
        assert free.sum() == 2 * 7 * 6 - 1


LARGEST = jax.jit(mapgen.largest_component)  # one program per map shape, not one per call


@FAST
@given(
    seed=st.integers(0, 2**30),
    kind=st.sampled_from(["random_grid", "rooms", "caves"]),
    density=st.floats(0.0, 0.4),
)
def test_largest_component_matches_a_breadth_first_search(seed, kind, density):
    gen = {
        "random_grid": mapgen.random_grid(12, 17, density),
        "rooms": mapgen.rooms(16, 16, 5, 1, density),
        "caves": mapgen.caves(14, 14, 0.3 + density),
    }[kind]
    grid = np.asarray(gen(jax.random.key(seed)))
    comp = np.asarray(LARGEST(jnp.asarray(grid)))
    free = ~grid
    if not free.any():
        assert not comp.any()
        return
    sizes = {}
    for cell in map(tuple, np.argwhere(free)):
        if not any(cell in s for s in sizes.values()):
            reach = bfs_reach(free, cell)
            sizes[cell] = {tuple(x) for x in np.argwhere(reach)}
    largest = max(len(s) for s in sizes.values())
    assert comp.sum() == largest
    assert bfs_reach(free, tuple(np.argwhere(comp)[0])).sum() == largest
    assert (comp <= free).all()


def test_pool_components_on_the_host_equal_the_traced_ones():
    """A pool's components are labelled on the host (scipy) and a fresh map's in the traced
    program: the same cells either way, over maps of every generator and a tie (a wall down
    column 5 leaves two 55-cell halves: the left one, holding the smaller largest index, wins)."""
    tie = np.zeros((1, 11, 11), bool)
    tie[0, :, 5] = True
    keys = jax.random.split(jax.random.key(3), 48)
    gens = (
        mapgen.random_grid(11, 11, 0.45),
        mapgen.rooms(11, 11, 5, 1, 0.2),
        mapgen.caves(11, 11, 0.55),
        mapgen.labyrinth(11, 11, 0.2),
    )
    pool = np.concatenate([tie, *(np.asarray(jax.jit(jax.vmap(g))(keys)) for g in gens)])
    host = mapgen.largest_components(pool)
    np.testing.assert_array_equal(host, jax.jit(jax.vmap(mapgen.largest_component))(pool))
    assert host[0, :, :5].all() and not host[0, :, 5:].any()


@FAST
@given(seed=st.integers(0, 2**30), density=st.floats(0.0, 0.35))
def test_distance_field_matches_dijkstra(seed, density):
    grid = np.asarray(mapgen.random_grid(9, 11, density)(jax.random.key(seed)))
    free = np.argwhere(~grid)
    goal = tuple(free[seed % len(free)])
    field = np.asarray(
        distance_field(jnp.asarray(grid), jnp.array([goal[0]]), jnp.array([goal[1]]))
    )
    np.testing.assert_allclose(field[0], dijkstra(grid, goal), rtol=1e-5)


@PER_ENV
@given(
    seed=st.integers(0, 2**30),
    env_id=st.sampled_from(IDS),
)
def test_every_goal_is_reachable_from_its_start(seed, env_id):
    env = marl.make(env_id, num_maps=16)
    state, _ = jax.jit(env.reset)(jax.random.key(seed))
    p = env.pad
    free = ~np.asarray(state.obstacles[p:-p, p:-p])
    cells = np.floor(np.asarray(state.pos)[:, ::-1]).astype(int)
    goals = np.floor(np.asarray(state.goal)[:, ::-1]).astype(int)
    # starts and goals are 2N distinct cells (CAMAR): no agent starts on any goal
    assert len({tuple(c) for c in (*cells, *goals)}) == 2 * env.num_agents
    assert not np.any(np.asarray(state.on_goal))
    for start, goal in zip(cells, goals, strict=True):
        assert free[tuple(start)] and free[tuple(goal)]
        assert bfs_reach(free, tuple(start))[tuple(goal)]


def rollout(env, key, steps: int, actions_fn):
    """States of `steps` steps with `actions_fn(key, state)` (bare env, no reset)."""

    @jax.jit
    def run(key):
        state, _ = env.reset(key)

        def body(s, k):
            k_act, k_env = jax.random.split(k)
            s, ts = env.step(k_env, s, actions_fn(k_act, s))
            return s, (s.pos, ts.metrics)

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    return run(key)


# each example compiles 200 steps of 24 agents: one fixed example with both dynamics and
# mixed radii, and one drawn
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@example(seed=7, dynamics="mixed", radius=(0.2, 0.45))
@given(
    seed=st.integers(0, 2**30),
    dynamics=st.sampled_from(["holonomic", "diffdrive", "mixed"]),
    radius=st.sampled_from([0.3, (0.2, 0.45)]),
)
def test_agents_never_enter_obstacle_cells_at_full_throttle(seed, dynamics, radius):
    """Agents pushed at full power in random (persistent) directions for 200 steps."""
    env = marl.make(
        "pathfinding/random_grid",
        num_agents=24,
        density=0.3,
        dynamics=dynamics,
        agent_radius=radius,
        episode_limit=1000,
    )
    direction = jax.random.normal(jax.random.key(seed), (24, 2))

    def push(key, s):
        flip = jax.random.bernoulli(key, 0.05, (24, 1))
        return jnp.clip(jnp.where(flip, -direction, direction) * 3.0, -1.0, 1.0)

    final, (pos, metrics) = rollout(env, jax.random.key(seed), 200, push)
    p = env.pad
    grid = np.asarray(final.obstacles)
    cells = np.floor(np.asarray(pos)).astype(int)  # [T, N, (x, y)]
    inside = grid[cells[..., 1] + p, cells[..., 0] + p]
    assert not inside.any(), "an agent's centre entered an obstacle cell"
    size = np.array([env.width, env.height])
    assert ((pos >= 0) & (pos <= size)).all()
    coordination = np.asarray(metrics["coordination"])
    assert ((coordination >= 0) & (coordination <= 1)).all()
    success = np.asarray(metrics["success_rate"])
    assert ((success >= 0) & (success <= 1)).all() and (np.diff(success) >= 0).all()


def test_cell_list_neighbours_match_dense_ones():
    kw = {"num_agents": 40, "density": 0.1, "agent_radius": (0.2, 0.45)}
    dense = marl.make("pathfinding/random_grid", neighbours="dense", **kw)
    grid = marl.make("pathfinding/random_grid", neighbours="grid", cell_capacity=8, **kw)
    actions = jax.random.uniform(jax.random.key(3), (30, 40, 2), minval=-1, maxval=1)

    def run(env):
        state, ts = jax.jit(env.reset)(jax.random.key(5))

        def body(s, a):
            s, ts = env.step(jax.random.key(0), s, a)
            return s, ts.obs

        state, obs = jax.lax.scan(body, state, actions)
        return state.pos, obs

    pos_d, obs_d = jax.jit(lambda: run(dense))()
    pos_g, obs_g = jax.jit(lambda: run(grid))()
    np.testing.assert_allclose(pos_d, pos_g, atol=1e-4)  # summation order only
    np.testing.assert_allclose(obs_d, obs_g, atol=1e-4)


def test_lifelong_agents_get_new_goals_and_never_terminate():
    env = marl.make(
        "pathfinding/random_grid", num_agents=6, density=0.1, lifelong=True, episode_limit=300
    )
    policy = planner_policy(env)
    out = jax.jit(lambda k: evaluate(env, policy, None, k, 4))(jax.random.key(0))
    assert (np.asarray(out["length"]) == 300).all()
    assert np.asarray(out["goals_reached"]).mean() > 2.0


@pytest.mark.slow
def test_planner_reaches_most_goals():
    """The classical baseline: >= 90% of agents reach their goal (8 agents, density 0.15)."""
    env = marl.make("pathfinding/random_grid", num_agents=8, density=0.15)
    out = jax.jit(lambda k: evaluate(env, planner_policy(env), None, k, 32))(jax.random.key(1))
    assert float(np.mean(out["success_rate"])) >= 0.9, out["success_rate"]


def test_movingai_maps_parse_and_refuse_bad_rows():
    grid = mapgen.parse_map("type octile\nheight 2\nwidth 3\nmap\n.@.\nT..\n")
    np.testing.assert_array_equal(grid, [[True, False, False], [False, True, False]])
    assert mapgen.load_map("warehouse").shape == (20, 24)
    with pytest.raises(ValueError, match="width 3"):
        mapgen.parse_map("...\n..\n")
    with pytest.raises(FileNotFoundError, match="shipped maps are .*two_rooms"):
        mapgen.load_map("no_such_map")
    env = marl.make("pathfinding/string", map_source="two_rooms", num_agents=4)
    assert (env.height, env.width) == (16, 16)


def test_bad_configurations_fail_with_one_line():
    with pytest.raises(ValueError, match="unknown map 'maze'; valid: random_grid"):
        marl.make("pathfinding/custom", map="maze")
    with pytest.raises(ValueError, match="agent_radius"):
        marl.make("pathfinding/random_grid", agent_radius=0.7)
    with pytest.raises(ValueError, match="reachable free cells"):
        marl.make("pathfinding/random_grid", density=0.6, num_agents=64)
    with pytest.raises(ValueError, match="must stay below the agent radius"):
        marl.make("pathfinding/random_grid", max_speed=20.0)


def _open_field(**kwargs):
    """Two holonomic agents of radius 0.3 on an empty 6 x 6 map, discrete actions (0: stop),
    no progress shaping; `place` puts them at given positions and goals, at rest."""
    env = marl.make(
        "pathfinding/random_grid",
        height=6,
        width=6,
        density=0.0,
        num_maps=1,
        num_agents=2,
        agent_radius=0.3,
        discrete_actions=True,
        shaping=0.0,
        episode_limit=16,
        **kwargs,
    )
    state, _ = jax.jit(env.reset)(jax.random.key(0))  # one program, not op by op
    assert not np.asarray(state.obstacles[env.pad : -env.pad, env.pad : -env.pad]).any()

    def place(pos, goal):
        return state.replace(
            pos=jnp.asarray(pos, jnp.float32),
            goal=jnp.asarray(goal, jnp.float32),
            vel=jnp.zeros((2, 2)),
            on_goal=jnp.zeros(2, bool),
            arrival=jnp.full(2, -1, jnp.int32),
            goals_reached=jnp.zeros(2, jnp.int32),
        )

    return env, place


def test_touching_agents_pay_the_collision_penalty():
    """Two overlapping agents (centres 0.4 apart, radii 0.3) far from their goals, standing
    still, shaping off: reward = -collision_penalty = -1 each, one contact step each, so
    coordination 1 - 1 / 1 step = 0 (not 1 - 1 / limit)."""
    env, place = _open_field()
    state = place([[3.0, 3.0], [3.4, 3.0]], [[0.5, 0.5], [5.5, 5.5]])
    state, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.zeros(2, jnp.int32))
    np.testing.assert_allclose(ts.reward, [-1.0, -1.0])
    np.testing.assert_array_equal(state.collisions, [1, 1])
    assert float(ts.metrics["collisions_per_agent"]) == 1.0
    assert float(ts.metrics["coordination"]) == 0.0


def test_first_arrival_is_counted_once_while_an_agent_stays_on_its_goal():
    """Agent 0 stands on its goal, agent 1 far from its own: after step 1 agent 0 arrived at
    step 1 (goals_reached 1); a second step on the goal changes neither its arrival nor the
    count. flowtime = 1 + limit 16 = 17, makespan 16 (agent 1 never arrives); reward 0.5."""
    env, place = _open_field()
    state = place([[2.0, 2.0], [4.5, 4.5]], [[2.0, 2.0], [0.5, 4.5]])
    step = jax.jit(env.step)
    stop = jnp.zeros(2, jnp.int32)
    for t in (1, 2):
        state, ts = step(jax.random.key(t), state, stop)
        np.testing.assert_array_equal(state.on_goal, [True, False])
        np.testing.assert_array_equal(state.arrival, [1, -1])
        np.testing.assert_array_equal(state.goals_reached, [1, 0])
        assert float(ts.metrics["flowtime"]) == 17.0 and float(ts.metrics["makespan"]) == 16.0
        assert float(ts.metrics["goals_reached"]) == 0.5
        assert float(ts.metrics["success_rate"]) == 0.5
        np.testing.assert_allclose(ts.reward, [0.5, 0.0])
        assert not bool(ts.terminated)


def test_lifelong_goal_reassignment_draws_from_the_free_mask():
    """Lifelong, only cell (row 4, col 1) marked free: agent 0 stands on its goal (2, 2) and is
    given the goal (1.5, 4.5), its arrival reset (-1) and on_goal cleared after the step's
    reward 0.5; agent 1 (far from its goal) keeps goal (0.5, 4.5). goals_reached [1, 0];
    flowtime 16 + 16 = 32 (no current goal reached), makespan 16, on_goal 0, not terminated."""
    env, place = _open_field(lifelong=True)
    state = place([[2.0, 2.0], [4.5, 4.5]], [[2.0, 2.0], [0.5, 4.5]])
    state = state.replace(free=jnp.zeros((6, 6), bool).at[4, 1].set(True))
    state, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.zeros(2, jnp.int32))
    np.testing.assert_allclose(state.goal, [[1.5, 4.5], [0.5, 4.5]])
    np.testing.assert_array_equal(state.on_goal, [False, False])
    np.testing.assert_array_equal(state.arrival, [-1, -1])
    np.testing.assert_array_equal(state.goals_reached, [1, 0])
    np.testing.assert_allclose(ts.reward, [0.5, 0.0])
    assert float(ts.metrics["flowtime"]) == 32.0 and float(ts.metrics["makespan"]) == 16.0
    assert float(ts.metrics["on_goal"]) == 0.0 and float(ts.metrics["goals_reached"]) == 0.5
    assert not bool(ts.terminated)


def test_agents_see_their_neighbours_within_the_window_only():
    """Obstacle-free 6 x 6 map, window 2, radii 0.3, at rest. Agents 1 apart: each sees the
    other first, offset +-1 / 2, gap (1 - 0.3 - 0.3) / 2 = 0.2, radius 0.3, agent, present;
    then 5 empty slots. Agents 2.4 apart (beyond the window's reach 2): agent 0 sees nothing."""
    env, place = _open_field()
    step = jax.jit(env.step)
    stop = jnp.zeros(2, jnp.int32)
    _, ts = step(jax.random.key(1), place([[3.0, 3.0], [4.0, 3.0]], [[0.5, 0.5]] * 2), stop)
    obs = np.asarray(ts.obs)[:, 12:].reshape(2, 6, 6)
    np.testing.assert_allclose(obs[0, 0], [0.5, 0.0, 0.2, 0.3, 1.0, 1.0], atol=1e-5)
    np.testing.assert_allclose(obs[1, 0], [-0.5, 0.0, 0.2, 0.3, 1.0, 1.0], atol=1e-5)
    assert not obs[:, 1:].any()
    _, ts = step(jax.random.key(1), place([[3.0, 3.0], [5.4, 3.0]], [[0.5, 0.5]] * 2), stop)
    assert not np.asarray(ts.obs)[0, 12:].any()


def test_keep_out_moves_centres_out_of_walls_and_stops_motion_into_them():
    """Obstacle cell [1, 2] x [0, 1], clearance 0.15. A centre at (0.9, 0.5) (0.1 from it) goes
    to (0.85, 0.5) and its velocity (2, 1) loses the part into the wall: (0, 1); one moving away
    (-2, 1) keeps it. A centre inside at (1.1, 0.5) leaves by the nearest face (x = 1): (0.85,
    0.5). A free cell moves nothing."""
    from marl.envs.pathfinding.world import keep_out

    pos = jnp.array([[0.9, 0.5], [0.9, 0.5], [1.1, 0.5]])
    vel = jnp.array([[2.0, 1.0], [-2.0, 1.0], [0.0, 0.0]])
    lo = jnp.ones((3, 1, 2)) * jnp.array([1.0, 0.0])
    clearance = jnp.full(3, 0.15)
    new_pos, new_vel = keep_out(pos, vel, clearance, lo, jnp.ones((3, 1), bool), 1.0)
    np.testing.assert_allclose(new_pos, [[0.85, 0.5]] * 3, atol=1e-6)
    np.testing.assert_allclose(new_vel, [[0.0, 1.0], [-2.0, 1.0], [0.0, 0.0]], atol=1e-6)
    same_pos, same_vel = keep_out(pos, vel, clearance, lo, jnp.zeros((3, 1), bool), 1.0)
    np.testing.assert_allclose(same_pos, pos)
    np.testing.assert_allclose(same_vel, vel)


# --- parts ------------------------------------------------------------------------------------
def test_a_task_composed_of_parts_plays_as_its_keywords():
    """`Pathfinding.from_parts` (map generator, dynamics, reward, observer) builds the env the
    flat keywords build: the same spec and the same rollout under the same keys."""
    from marl.envs.pathfinding import (
        Dynamics,
        Labyrinth,
        Observer,
        Pathfinding,
        PathfindingReward,
    )

    flat = Pathfinding(
        map="labyrinth",
        height=11,
        width=11,
        extra_connections=0.3,
        num_maps=4,
        num_agents=4,
        dynamics="mixed",
        discrete_actions=True,
        shaping=0.5,
        max_obs=3,
        episode_limit=16,
    )
    composed = Pathfinding.from_parts(
        Labyrinth(height=11, width=11, num_maps=4, extra_connections=0.3),
        Dynamics(kind="mixed"),
        PathfindingReward(shaping=0.5),
        Observer(max_obs=3),
        num_agents=4,
        discrete_actions=True,
        episode_limit=16,
    )
    assert composed.spec == flat.spec and composed.generator == flat.generator
    assert composed.observer == flat.observer and composed.agents == flat.agents
    key = jax.random.key(1)
    # each env's reset and step as one program (op by op, they compiled every primitive)
    (reset1, step1), (reset2, step2) = (
        (jax.jit(e.reset), jax.jit(e.step)) for e in (flat, composed)
    )
    (s1, t1), (s2, t2) = reset1(key), reset2(key)
    for k in jax.random.split(key, 4):
        actions = jax.random.randint(k, (4,), 0, 5)
        (s1, t1), (s2, t2) = step1(k, s1, actions), step2(k, s2, actions)
        np.testing.assert_array_equal(t1.obs, t2.obs)
        np.testing.assert_array_equal(t1.reward, t2.reward)
    with pytest.raises(ValueError, match="unknown dynamics 'wheels'"):
        Dynamics(kind="wheels")


def test_a_step_is_the_parts_called_in_turn_on_the_state():
    """Lifelong, geodesic, mixed: `step_env` is the dynamics, the agents' arrivals, the reward,
    the new goals and the observer, each called with the state (never the env)."""
    env = marl.make(
        "pathfinding/random_grid",
        height=8,
        width=8,
        density=0.1,
        num_maps=2,
        num_agents=3,
        dynamics="mixed",
        lifelong=True,
        geodesic_shaping=True,
        goal_radius=0.45,
        episode_limit=8,
    )
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    state = state.replace(pos=state.goal.at[0].add(0.1))  # each agent on (or near) its goal
    actions = jnp.array([[0.5, 0.0], [0.0, 0.0], [-1.0, 1.0]])
    key = jax.random.key(1)

    def by_parts(key, state, actions):
        u = env.dynamics.commands(actions, discrete=False)
        after, touched = env.dynamics(state, u, env.observer.index)
        after = env.agents.arrive(after, touched)
        reward = env.reward(state, after, touched)
        moved = jnp.any(after.on_goal)
        after = env.reward.follow(env.agents.new_goals(key, after), moved)
        return after, env.observer(after, reward, jnp.zeros((), bool), state.t + 1)

    (s1, t1), (s2, t2) = (
        jax.jit(env.step_env)(key, state, actions),
        jax.jit(by_parts)(key, state, actions),
    )
    assert float(t1.metrics["goals_reached"]) == 1.0  # all arrived: new goals
    for x, y in zip(jax.tree.leaves((s1, t1)), jax.tree.leaves((s2, t2)), strict=True):
        np.testing.assert_array_equal(x, y)
    assert s1.field.shape == (3, 8, 8) and env.observer.num_diffdrive == 2


def test_the_agents_part_refuses_bad_radii_in_one_line():
    from marl.envs.pathfinding import Agents

    with pytest.raises(ValueError, match=r"agent_radius must be in \(0, 0.5\], got \(0.2, 0.6\)"):
        Agents(num_agents=2, radius=(0.2, 0.6))
    with pytest.raises(ValueError, match="num_agents must be >= 1"):
        Agents(num_agents=0)
    assert Agents(radius=0.25).radius_range == (0.25, 0.25)
