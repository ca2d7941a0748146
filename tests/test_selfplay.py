"""Mirror self-play (mfrl's battle training): only side 0 learns; side 1 plays a copy of it,
refreshed after each episode side 0 wins on reward; the saved army plays both sides."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms.selfplay import init_rounds, mirrored, refresh, tally
from marl.core.learner import SEED_AXIS


def test_tally_counts_the_episodes_side_0_wins_on_reward_by_hand():
    side = jnp.array([0, 0, 1, 1])
    rounds = init_rounds(3)
    reward = jnp.array([[1.0, 2.0, 1.0, 1.0], [0.0, 1.0, 3.0, 0.0], [5.0, 5.0, 0.0, 0.0]])
    alive = jnp.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1]], jnp.float32)
    rounds = tally(rounds, reward, alive, jnp.array([False, False, False]), side)
    np.testing.assert_allclose(rounds.returns, [[3.0, 2.0], [1.0, 3.0], [5.0, 0.0]])
    assert int(rounds.won) == 0
    # env 0 ends 3 + 1 against 2 + 1 (won), env 1 ends 1 against 3 (lost); env 2 runs on
    step = jnp.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    rounds = tally(rounds, step, jnp.ones((3, 4)), jnp.array([True, True, False]), side)
    assert int(rounds.won) == 1
    np.testing.assert_allclose(rounds.returns, [[0.0, 0.0], [0.0, 0.0], [5.0, 0.0]])
    # a draw on reward is not a win (mfrl updates on a strictly larger total)
    rounds = tally(init_rounds(1), jnp.ones((1, 4)), jnp.ones((1, 4)), jnp.array([True]), side)
    assert int(rounds.won) == 0


def test_refresh_is_one_soft_copy_per_episode_won_by_hand():
    params = {"w": jnp.array([[1.0, 2.0], [5.0, 10.0]])}  # set 0 learner, set 1 opponent
    rounds = init_rounds(2).replace(won=jnp.asarray(2, jnp.int32))
    out, rounds = refresh(params, rounds, keep=0.1)
    # twice: opponent <- 0.9 learner + 0.1 opponent
    once = 0.9 * np.array([1.0, 2.0]) + 0.1 * np.array([5.0, 10.0])
    twice = 0.9 * np.array([1.0, 2.0]) + 0.1 * once
    np.testing.assert_allclose(out["w"][1], twice, rtol=1e-6)
    np.testing.assert_array_equal(out["w"][0], [1.0, 2.0])
    assert int(rounds.won) == 0
    same, _ = refresh(params, rounds, keep=0.1)  # nothing won: nothing copied
    np.testing.assert_array_equal(same["w"], params["w"])
    np.testing.assert_array_equal(mirrored(params)["w"], [[1.0, 2.0], [1.0, 2.0]])


def _updates(algo: str, self_play: str, n: int = 3, **env_kwargs):
    env = marl.make("combat/3m", opponent="self_play", **env_kwargs)
    cfg = {"num_envs": 2, "rollout_length": 4, "self_play": self_play}
    if algo != "mfac":
        cfg["batch_size"] = 4
    train = marl.algorithm(algo)(env, cfg)
    state = jax.jit(lambda k: jax.lax.map(train.init, k))(jax.random.split(jax.random.key(0), 1))
    step = jax.jit(jax.vmap(train.step, axis_name=SEED_AXIS))
    start = jax.tree.map(np.asarray, train.params(jax.tree.map(lambda x: x[0], state)))
    metrics = []
    for _ in range(n):
        state, m = step(state)
        metrics.append(m)
    state = jax.tree.map(lambda x: x[0], state)
    live = state.actor if algo == "mfac" else state.params
    return train, state, live, start, metrics


def _pairs(a, b):
    return list(zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


# IL runs in CI's integration tier; MF-Q and MF-AC, the same loop with other learners, with -m slow
@pytest.mark.parametrize(
    "algo",
    [
        pytest.param(a, marks=pytest.mark.slow if a != "il" else pytest.mark.integration)
        for a in ("mfq", "il", "mfac")
    ],
)
def test_mirror_trains_side_0_only_and_saves_the_learner_on_both_sides(algo):
    """12 steps of 3m: no battle ends, so no refresh; the opponent's set must not move while
    the learner's does (with `both`, the default, the enemies' set trains too)."""
    train, state, live, start, metrics = _updates(algo, "mirror")
    assert all(float(m["self_play/refreshes"][0]) == 0.0 for m in metrics)
    for s0, now in _pairs(start, live):
        np.testing.assert_array_equal(s0[1], s0[0])  # the opponent starts as the learner
        np.testing.assert_array_equal(now[1], s0[1])  # ... and never trains
    assert any(not np.array_equal(s0[0], now[0]) for s0, now in _pairs(start, live))
    for x in jax.tree.leaves(train.params(state)):
        np.testing.assert_array_equal(x[1], x[0])
    if algo == "mfq":
        _, _, live, start, _ = _updates(algo, "both")
        assert any(not np.array_equal(s0[1], now[1]) for s0, now in _pairs(start, live))


@pytest.mark.integration
def test_mirror_refreshes_the_opponent_after_episodes_the_learner_wins():
    """4-step battles on a small map, in range from the start, under MAgent's reward (each
    attack costs, so the sides' sums differ): episodes end every update, some won by side 0,
    and each refresh moves the opponent towards the learner (it never trains itself)."""
    _, _, live, start, metrics = _updates(
        "mfq", "mirror", n=6, episode_limit=4, reward="magent", map_size=8.0
    )
    refreshes = sum(float(m["self_play/refreshes"][0]) for m in metrics)
    assert refreshes > 0
    assert any(not np.array_equal(s0[1], now[1]) for s0, now in _pairs(start, live))


def test_mirror_is_refused_where_the_sides_are_not_mirror_images():
    for env in (
        marl.make("combat/5m_vs_6m", opponent="self_play"),  # unequal armies
        marl.make("particle/adversary"),  # a contest of different roles
        marl.make("combat/3m"),  # no contest
    ):
        with pytest.raises(ValueError, match="self_play=mirror needs a contest between mirror"):
            marl.algorithm("mfq")(env, {"self_play": "mirror"})
    env = marl.make("combat/3m", opponent="self_play")
    with pytest.raises(ValueError, match="one parameter set per side"):
        marl.algorithm("mfac")(env, {"self_play": "mirror", "parameter_sharing": "all"})
    with pytest.raises(ValueError, match="self_play"):
        marl.algorithm("il")(env, {"self_play": "mirrored"})


@pytest.mark.integration
def test_the_runner_saves_and_evaluates_each_seeds_learner_on_both_sides():
    """The runner holds a stack of seeds; mirroring must act on each seed's parameter sets, not
    on the seed axis (it once copied seed 0's parameters over seed 1's and left every other
    seed's opponent in place, so seeds 0 and 1 evaluated alike)."""
    from marl.learning.runner import run
    from marl.learning.training import RunSettings

    env = marl.make("combat/3m", opponent="self_play")
    cfg = {"num_envs": 2, "rollout_length": 4, "batch_size": 4, "self_play": "mirror"}
    train = marl.algorithm("il")(env, cfg)
    settings = RunSettings(
        seeds=3, budget=64, eval_interval=32, eval_episodes=2, absolute_episodes=0
    )
    result = run(env, train, settings, log=None)
    for saved in (result.params, result.best_params):
        for x in jax.tree.leaves(saved):
            assert x.shape[:2] == (3, 2)  # [seeds, sets]
            np.testing.assert_array_equal(x[:, 1], x[:, 0])  # each seed's learner twice
    seeds = [jax.tree.leaves(result.params)[0][k] for k in range(3)]
    assert not np.array_equal(seeds[0], seeds[1]) and not np.array_equal(seeds[1], seeds[2])
