"""The grid family's own parts: connected components, start-goal placement, the presets and
their overrides, the lifelong goal draw and the A* reference policy. (Equality with pogema
is tests/test_grid_pogema.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import ndimage

import marl
from marl.baselines import anchor_scores
from marl.envs.grid import GridMAPF, Instances, MapPool, RandomMaps, components, place
from marl.envs.grid.targets import goal_cells, new_goals


def test_components_equal_scipys_labels():
    for seed in range(6):
        grid = np.asarray(jax.random.bernoulli(jax.random.key(seed), 0.4, (19, 13)))
        labels = np.asarray(components(jnp.asarray(~grid))).reshape(-1)
        ref, count = ndimage.label(~grid)
        for k in range(1, count + 1):
            cells = np.flatnonzero(ref.reshape(-1) == k)
            assert (labels[cells] == cells.min()).all()
        assert (labels[grid.reshape(-1)] == grid.size).all()


def test_place_puts_each_pair_in_one_component_and_no_cell_twice():
    grid = np.asarray(jax.random.bernoulli(jax.random.key(3), 0.35, (12, 12)))
    ref, _ = ndimage.label(~grid)
    for seed in range(5):
        starts, goals = place(jax.random.key(seed), jnp.asarray(~grid), 20)
        s, g = np.asarray(starts), np.asarray(goals)
        cells = [tuple(c) for c in np.concatenate([s, g])]
        assert len(set(cells)) == 40
        assert not grid[s[:, 0], s[:, 1]].any() and not grid[g[:, 0], g[:, 1]].any()
        assert (ref[s[:, 0], s[:, 1]] == ref[g[:, 0], g[:, 1]]).all()


@pytest.mark.parametrize("side", [12, 200])  # packed single-key sorts; lexsort past 2^15 cells
def test_cells_shuffle_within_their_components(side):
    from marl.envs.grid.maps import _shuffle_by_component

    labels = jnp.asarray(np.random.default_rng(side).integers(0, 7, side * side), jnp.int32)
    orders = [np.asarray(_shuffle_by_component(jax.random.key(s), labels)) for s in range(2)]
    for order in orders:
        assert sorted(order.tolist()) == list(range(side * side))  # a permutation
        assert (np.diff(np.asarray(labels)[order]) >= 0).all()  # grouped by component
    assert (orders[0] != orders[1]).any()  # and random within one


def test_a_map_too_crowded_is_drawn_again_then_left_empty():
    maps = RandomMaps(4, 4, 1.0)  # every draw is all obstacles: the empty grid after retries
    grid, starts, goals, _ = maps(jax.random.key(0), 8)
    assert not bool(grid.any()) and len({tuple(c) for c in np.asarray(starts).tolist()}) == 8
    with pytest.raises(ValueError, match="need 18 cells"):
        GridMAPF(maps=RandomMaps(3, 3, 0.0), num_agents=9)


def test_presets_and_their_overrides():
    env = marl.make("grid/random8", collision="soft", maps={"density": 0.1}, num_agents=4)
    assert env.maps == RandomMaps(8, 8, 0.1) and env.collision.rule == "soft"
    assert env.spec.name == "grid/random8" and env.spec.num_agents == 4
    life = marl.make("grid/lifelong20")
    assert life.spec.metric_names == ("avg_throughput",)
    assert life.spec.headline_metric == "avg_throughput"
    with pytest.raises(ValueError, match="RandomMaps has no field.s. nope; valid: height"):
        marl.make("grid/random8", maps={"nope": 2})
    with pytest.raises(ValueError, match="unknown collision rule 'bump'"):
        marl.make("grid/random8", collision="bump")
    pool = GridMAPF(maps=MapPool(("....\n.#..\n....",)), num_agents=3, obs_radius=2)
    state, ts = jax.jit(pool.reset)(jax.random.key(0))
    assert ts.obs.shape == (3, 3 * 25)
    assert bool(state.obstacles[2 + 1, 2 + 1])  # the map's one obstacle, padded by r = 2


def test_a_lifelong_goal_is_drawn_from_the_agents_component_never_its_cell():
    grid = np.zeros((5, 5), bool)
    grid[:, 2] = True  # two halves
    labels = components(jnp.asarray(~grid))
    pos = jnp.asarray([[0, 0], [4, 4]], jnp.int32)
    seen = set()
    for seed in range(40):
        g = np.asarray(new_goals(jax.random.key(seed), goal_cells(labels), pos, 5))
        assert g[0, 1] < 2 and g[1, 1] > 2
        assert tuple(g[0]) != (0, 0) and tuple(g[1]) != (4, 4)
        seen.add(tuple(g[0]))
    assert len(seen) >= 8  # spread over the 9 other cells of its half


def test_a_lifelong_goal_is_uniform_over_the_other_cells_and_a_lone_cell_keeps_its_own():
    """4,000 draws for an agent in a 9-cell half spread evenly over its 8 other cells; an
    agent walled into a single cell keeps it as its goal (a draw over no cell gave cell 0,
    an obstacle here, before)."""
    grid = np.zeros((5, 5), bool)
    grid[:, 2] = True
    grid[0, 1] = True  # the left half: 9 cells
    grid[4, 3] = True
    grid[3, 4] = True  # (4, 4) walled in: the corner has no free neighbour
    labels = components(jnp.asarray(~grid))
    pos = jnp.asarray([[1, 0], [0, 4], [4, 4]], jnp.int32)
    table = goal_cells(labels)
    draw = jax.jit(jax.vmap(lambda k: new_goals(k, table, pos, 5)))
    goals = np.asarray(draw(jax.random.split(jax.random.key(0), 4000)))
    cells, counts = np.unique(goals[:, 0] @ np.array([5, 1]), return_counts=True)
    half = {5 * r + c for r in range(5) for c in range(2)} - {1, 5}  # (1, 0)'s others
    assert set(cells.tolist()) == half and counts.min() > 0.8 * 4000 / len(half)
    assert (goals[:, 2] == [4, 4]).all()
    assert (goals[:, 1, 1] > 2).all() and not (goals[:, 1] == [0, 4]).all(axis=1).any()


def test_the_astar_agent_walks_a_shortest_path_and_beats_random():
    grid = np.array([[0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]], bool)
    env = GridMAPF(maps=Instances(grid[None], [[[0, 0]]], [[[2, 0]]]), num_agents=1, obs_radius=1)
    policy = marl.baselines.astar_policy(env)
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    carry = policy.initial_carry()
    act = jax.jit(lambda *args: policy.act(None, *args, True))  # one program, not eager ops
    step = jax.jit(env.step)
    for t in range(10):  # the path around the wall is 8 moves
        a, carry = act(state, ts.avail_actions, carry, t == 0, jax.random.key(t))
        state, ts = step(jax.random.key(t), state, a)
        if bool(ts.terminated):
            break
    assert bool(ts.terminated) and t == 7
    scores = anchor_scores(marl.make("grid/random8"), num_episodes=32)
    assert scores["reference"] > 2 * scores["random"]


def test_arrivals_pay_each_agent_for_ending_on_its_goal():
    grid = np.zeros((1, 4), bool)
    maps = Instances(grid[None], [[[0, 0], [0, 3]]], [[[0, 1], [0, 2]]])
    env = GridMAPF(maps=maps, num_agents=2, on_target="nothing", reward="arrivals", obs_radius=1)
    assert not env.spec.shared_reward
    pogema = GridMAPF(maps=maps, num_agents=2, on_target="nothing", obs_radius=1)
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    same, _ = jax.jit(pogema.reset)(jax.random.key(0))
    paid, paid_pogema = [], []
    step, pogema_step = jax.jit(env.step), jax.jit(pogema.step)
    for a in ([4, 0], [3, 0], [4, 3]):  # 0 arrives, 0 leaves, 0 arrives and 1 arrives: all on
        state, ts = step(jax.random.key(1), state, jnp.asarray(a))
        same, tp = pogema_step(jax.random.key(1), same, jnp.asarray(a))
        paid.append(np.asarray(ts.reward).tolist())
        paid_pogema.append(np.asarray(tp.reward).tolist())
    assert paid == [[1, 0], [-1, 0], [2, 2]]  # the last step: arrivals and POGEMA's shared 1
    assert paid_pogema == [[0, 0], [0, 0], [1, 1]]
    with pytest.raises(ValueError, match="unknown reward"):
        GridMAPF(reward="dense")


def test_the_neighbourhood_is_the_agents_on_the_grid_within_its_radius():
    grid = np.zeros((1, 7), bool)  # one row: agents at 0, 2 and 5, goals beside them
    maps = Instances(grid[None], [[[0, 0], [0, 2], [0, 5]]], [[[0, 1], [0, 3], [0, 6]]])
    near = GridMAPF(maps=maps, num_agents=3, obs_radius=1, neighbour_radius=2)
    state, _ = jax.jit(near.reset)(jax.random.key(0))
    np.testing.assert_array_equal(near.neighbourhood(state), [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    everyone = GridMAPF(maps=maps, num_agents=3, obs_radius=1)
    np.testing.assert_array_equal(everyone.neighbourhood(state), 1 - np.eye(3))
    # 0 arrives, then leaves
    state, _ = jax.jit(near.step)(jax.random.key(1), state, jnp.asarray([4, 0, 0]))
    np.testing.assert_array_equal(near.neighbourhood(state), [[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="neighbour_radius"):
        GridMAPF(neighbour_radius=0)
