"""The run loop and the PPO learners: determinism, one compile, learning a trivial task."""

from __future__ import annotations

import dataclasses
import re
import warnings

import jax
import numpy as np
import pytest

import marl
from marl.core.learner import UnscheduledWarning
from marl.learning.runner import run
from marl.learning.training import RunSettings, learner_for, segment_means

TINY = {
    "num_envs": 4,
    "rollout_length": 25,
    "epochs": 2,
    "num_minibatches": 2,
    "hidden": (32, 32),
    "lr": 3e-3,
    "critic_lr": 3e-3,
}


def tiny_run(env_id, algo, budget=2_000, seeds=2, **cfg):
    env = marl.make(env_id)
    train = marl.algorithm(algo)(env, {**TINY, **cfg})
    return run(
        env,
        train,
        RunSettings(
            seeds=seeds, budget=budget, eval_interval=1_000, eval_episodes=4, absolute_episodes=0
        ),
        log=None,
    )


# the same property, end to end, in the default suite: tests/test_train_cli.py's
# test_run_is_deterministic (every evaluation and the saved parameters, bit for bit)
@pytest.mark.integration
@pytest.mark.slow
def test_same_seed_same_curve_bitwise():
    a = tiny_run("particle/spread", "ippo")
    b = tiny_run("particle/spread", "ippo")
    assert a.steps == b.steps == [0, 1000, 2000]
    for ea, eb in zip(a.evaluations, b.evaluations, strict=True):
        assert np.array_equal(ea["return"], eb["return"])
    for pa, pb in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        assert np.array_equal(pa, pb)


@pytest.mark.integration
def test_seeds_differ_and_evaluation_shapes():
    res = tiny_run("particle/spread", "mappo", seeds=3)
    ev = res.evaluations[-1]
    assert ev["return"].shape == (3, 4)
    assert set(ev) >= {"return", "length", "collisions", "occupied", "landmark_distance"}
    assert np.all(ev["length"] == 25)
    assert not np.array_equal(ev["return"][0], ev["return"][1])
    assert res.curve().shape == (3, 3)


@pytest.mark.integration
@pytest.mark.slow
def test_recurrent_and_continuous_variants_run():
    res = tiny_run("particle/speaker_listener", "mappo", recurrent=True, gru_hidden=16)
    assert np.all(np.isfinite(res.curve()))
    env = marl.make("particle/spread", continuous_actions=True)
    train = marl.algorithm("ippo")(env, TINY)
    out = run(
        env,
        train,
        RunSettings(
            seeds=1, budget=1_000, eval_interval=1_000, eval_episodes=2, absolute_episodes=0
        ),
        log=None,
    )
    assert np.all(np.isfinite(out.curve()))


@pytest.mark.integration
@pytest.mark.slow
def test_ippo_learns_simple():
    """The trivial task: one agent, one landmark. Greedy return must rise clearly."""
    res = tiny_run("particle/simple", "ippo", budget=60_000, seeds=2, num_envs=8)
    curve = res.curve().mean(axis=1)
    # random play: about -30 per episode; a policy that reaches the landmark: about -5
    assert curve[-1] > curve[0] + 10, curve
    assert curve[-1] > -12, curve


def test_unknown_algorithm_key_is_rejected_with_valid_keys():
    env = marl.make("particle/simple")
    with pytest.raises(ValueError, match="unknown PPOConfig key.*lr"):
        marl.algorithm("mappo")(env, {"learning_rate": 1e-3})


def test_wrong_typed_learner_values_are_rejected_in_one_line():
    """Every learner's config checks each value's type before anything is built."""
    env = marl.make("particle/simple")
    bad = {
        "mappo": [("lr", "abc", "a number"), ("anneal_lr", "maybe", "true or false")],
        "ippo": [("epochs", "abc", "an integer"), ("hidden", "abc", "a list of integers")],
        "qmix": [("batch_size", 1.5, "an integer"), ("tau", "x", "a number or null")],
        "mfq": [("activation", 3, "a string")],
        "mfac": [("actor_lr", None, "a number")],
    }
    for algo, cases in bad.items():
        for key, value, kind in cases:
            with pytest.raises(
                ValueError, match=f"Config.{key}={value!r} invalid; must be {kind}$"
            ):
                marl.algorithm(algo)(env, {key: value})
    with pytest.raises(ValueError, match="QMIX.hypernet_embed='abc' invalid; must be an integer"):
        marl.algorithm("qmix")(env, {"hypernet_embed": "abc"})
    from marl.algorithms.qlearner import QConfig

    cfg = QConfig.from_dict({"epsilon_steps": 1e5, "hidden": [32], "tau": None, "lr": 1})
    assert (cfg.epsilon_steps, cfg.hidden, cfg.tau, cfg.lr) == (100_000, (32,), None, 1)
    assert type(cfg.epsilon_steps) is int


@pytest.mark.integration
def test_absolute_metric_rescores_each_seeds_best_evaluation():
    """Best parameters = the evaluation with the highest mean return (earliest on ties), and
    the absolute metric is those parameters played on `absolute_episodes` other episodes."""
    from marl.learning.evaluation import evaluate
    from marl.learning.training import ABSOLUTE_SALT

    env = marl.make("particle/simple")
    train = marl.algorithm("ippo")(env, TINY)
    settings = RunSettings(
        seeds=2, budget=3_000, eval_interval=1_000, eval_episodes=4, absolute_episodes=6
    )
    res = run(env, train, settings, log=None)
    curve = res.curve()  # [evaluations, seeds]
    best = np.argmax(curve, axis=0)
    np.testing.assert_array_equal(res.best_step, np.asarray(res.steps)[best])
    np.testing.assert_allclose(res.best_score, curve[best, [0, 1]], rtol=1e-6)
    assert res.absolute["return"].shape == (2, 6)
    key = jax.random.fold_in(jax.random.key(settings.seed), ABSOLUTE_SALT)
    for s in range(2):
        params = jax.tree.map(lambda x, s=s: x[s], res.best_params)
        ref = jax.jit(lambda p: evaluate(env, train.policy, p, key, 6))(params)
        np.testing.assert_allclose(res.absolute["return"][s], ref["return"], rtol=1e-5)
    if best.max() == len(res.steps) - 1 and best.min() == len(res.steps) - 1:
        return  # best at the end for both seeds: the final parameters are the best ones
    s = int(np.argmin(best))
    assert not all(
        np.array_equal(a[s], b[s])
        for a, b in zip(jax.tree.leaves(res.params), jax.tree.leaves(res.best_params), strict=True)
    )


@pytest.mark.integration
def test_a_lower_is_better_metric_selects_the_lowest_evaluation():
    """protocol metric `lost` (combat declares it lower-is-better): the best parameters are each
    seed's evaluation with the fewest battles lost (earliest on ties), not the most."""
    env = marl.make("combat/3m")
    assert "lost" in env.spec.lower_is_better and "won" not in env.spec.lower_is_better
    train = marl.algorithm("ippo")(env, {**TINY, "rollout_length": 16})
    settings = RunSettings(
        seeds=3,
        budget=4_000,
        eval_interval=1_000,
        eval_episodes=8,
        absolute_episodes=0,
        metric="lost",
    )
    res = run(env, train, settings, log=None)
    curve = res.curve("lost")
    np.testing.assert_array_equal(res.best_step, np.asarray(res.steps)[np.argmin(curve, axis=0)])
    np.testing.assert_allclose(res.best_score, curve.min(axis=0), rtol=1e-6)
    with pytest.raises(ValueError, match="lower_is_better names metrics the env does not have"):
        dataclasses.replace(env.spec, lower_is_better=("nonsense",))


def test_segment_means_weight_episode_statistics_by_episodes():
    # 4 updates x 2 seeds; seed 0 ends one 25-step episode in update 2 only, seed 1 two
    # episodes (mean length 20) in update 0 and one (length 30) in update 3
    episodes = np.array([[0, 2], [0, 0], [1, 0], [0, 1]], np.float32)
    length = np.array([[0, 20], [0, 0], [25, 0], [0, 30]], np.float32)
    loss = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = segment_means({"train/episodes": episodes, "train/length": length, "loss": loss})
    np.testing.assert_allclose(out["train/length"], [25.0, (2 * 20 + 30) / 3])
    np.testing.assert_allclose(out["train/episodes"], [0.25, 0.75])
    np.testing.assert_allclose(out["loss"], loss.mean(axis=0))
    # no episode of seed 0 ended in the segment: no statistic (NaN), not a length of 0
    episodes = np.array([[0, 1], [0, 0], [0, 0]], np.float32)
    some = segment_means({"train/episodes": episodes, "train/length": episodes * 9})
    np.testing.assert_array_equal(some["train/length"], [np.nan, 9.0])


def test_learner_for_anneals_over_the_run_and_bare_make_train_warns():
    """`learner_for` passes the run's total updates (the annealed rate reaches 0 at the end);
    `make_train` without them warns that anneal_lr cannot act."""
    env = marl.make("particle/spread")
    make_train = marl.algorithm("mappo")
    cfg = {"num_envs": 4, "rollout_length": 25}
    settings = RunSettings(seeds=1, budget=1_000, eval_interval=500)
    assert settings.total_updates(100) == 10
    passed = []

    def spy(env, cfg, total_updates=None):
        passed.append(total_updates)
        return make_train(env, cfg, total_updates)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train = learner_for(spy, env, cfg, settings)
    assert passed == [None, 10] and train.steps_per_update == 100  # said nothing: built twice
    spy.steps_per_update = make_train.steps_per_update  # says its update size: built once
    passed.clear()
    assert learner_for(spy, env, cfg, settings).steps_per_update == 100 and passed == [10]
    with pytest.warns(UnscheduledWarning, match="anneal_lr=True needs"):
        make_train(env, cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_train(env, {**cfg, "anneal_lr": False})
        marl.algorithm("qmix")(env, {"anneal_lr": False})
    with pytest.warns(UnscheduledWarning, match="anneal_lr=True needs"):
        marl.algorithm("qmix")(env, {"anneal_lr": True})


def test_schedule_rounds_to_whole_updates_and_the_budget_up_to_whole_segments():
    """Interval 1070 env steps at 100 per update: 11 updates (nearest; 1100 steps); budget 2500:
    ceil(2500 / 1100) = 3 segments, 33 updates; no eval_interval: 1000 / 4 evaluations = 250."""
    settings = RunSettings(budget=2_500, eval_interval=1_070)
    assert settings.schedule(100) == (11, 3)
    assert settings.total_updates(100) == 33
    assert RunSettings(budget=2_000, eval_interval=1_000).schedule(100) == (10, 2)
    assert RunSettings(budget=1_000, num_evaluations=4).interval() == 250
    assert RunSettings(budget=1_000, num_evaluations=4).schedule(100) == (2, 5)  # 2.5 -> 2


@pytest.mark.integration
def test_ties_keep_the_earliest_parameters_and_keys_follow_the_root_seed():
    """Metric `length` (25 on every particle/simple episode) ties at every evaluation: the best
    are the initial parameters (best step 0). Seed k starts from init(split(key(7), 2)[k]);
    evaluations use fold_in(key(7), EVAL_SALT), the absolute metric fold_in(key(7),
    ABSOLUTE_SALT)."""
    from marl.learning.evaluation import evaluate
    from marl.learning.training import ABSOLUTE_SALT, EVAL_SALT

    env = marl.make("particle/simple")
    train = marl.algorithm("ippo")(env, TINY)
    settings = RunSettings(
        seeds=2,
        budget=200,
        eval_interval=100,
        eval_episodes=3,
        absolute_episodes=3,
        seed=7,
        metric="length",
    )
    res = run(env, train, settings, log=None)
    assert res.steps == [0, 100, 200]
    np.testing.assert_array_equal(res.best_step, [0, 0])
    np.testing.assert_array_equal(res.best_score, [25.0, 25.0])
    root = jax.random.key(7)
    play = jax.jit(
        lambda p, salt, n: evaluate(env, train.policy, p, jax.random.fold_in(root, salt), n),
        static_argnums=(1, 2),
    )
    for k, key in enumerate(jax.random.split(root, 2)):
        params = train.params(train.init(key))
        first = play(params, EVAL_SALT, 3)
        np.testing.assert_allclose(res.evaluations[0]["return"][k], first["return"], rtol=1e-5)
        absolute = play(params, ABSOLUTE_SALT, 3)
        np.testing.assert_allclose(res.absolute["return"][k], absolute["return"], rtol=1e-5)
        assert not np.allclose(first["return"], absolute["return"])  # other episodes


@pytest.mark.parametrize(
    "key, bad, fine, valid",
    [
        ("gamma", 1.5, 1.0, "in [0, 1]"),
        ("epsilon_start", 1.1, 0.0, "in [0, 1]"),
        ("epsilon_end", 1.5, 1.0, "in [0, 1]"),
        ("gae_lambda", -0.1, 0.0, "in [0, 1]"),
        ("value_clip_eps", 0.0, None, "null or > 0"),
        ("temperature_start", 0.0, 1e-3, "> 0"),
        ("epochs", 0, 1, "a positive integer"),
        ("hidden", (32, 0), (1,), "positive widths"),
    ],
)
def test_shared_ranges_refuse_values_outside_them(key, bad, fine, valid):
    """`check_config` applies SHARED_RANGES to any config holding the key: e.g. gamma 1.5 is
    refused, 1.0 (the edge) accepted; value_clip_eps 0 refused, null accepted."""
    from marl.core.learner import check_config

    class Cfg:
        pass

    cfg = Cfg()
    setattr(cfg, key, fine)
    check_config(cfg, {})
    setattr(cfg, key, bad)
    message = f"Cfg.{key}={bad!r} invalid; must be {valid}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_config(cfg, {})
