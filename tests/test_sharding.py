"""Seeds sharded over two (forced host) devices train as on one device."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import jax
    import numpy as np

    import marl
    from marl.learning.runner import run
    from marl.learning.training import RunSettings

    assert jax.device_count() == 2, jax.devices()
    env = marl.make("particle/simple")
    # a replay learner whose gradient step agrees on an unroll length across seeds (lax.pmax
    # over the seed axis): the collective must span both devices
    # (a small feed-forward network: the collective, not the GRU, is under test)
    cfg = {"num_envs": 2, "rollout_length": 5, "buffer_size": 8, "batch_size": 4,
           "unroll_buckets": 2, "recurrent": False, "hidden": [16]}
    train = marl.algorithm("iql")(env, cfg)
    settings = RunSettings(seeds=2, budget=train.steps_per_update * 12, num_evaluations=3,
                           eval_episodes=3, absolute_episodes=0)
    one = run(env, train, settings, log=None, devices=jax.devices()[:1])
    lines = []
    two = run(env, train, settings, log=lines.append)
    assert lines[0] == "2 seeds sharded over 2 devices (cpu)", lines[0]
    leaf = max(jax.tree.leaves(two.final_state), key=lambda x: x.size)
    assert len(leaf.sharding.device_set) == 2 and leaf.sharding.spec[0] == "seeds"
    # equal up to float rounding: XLA compiles a batch of one seed per device, not two
    for a, b in zip(jax.tree.leaves((one.evaluations, one.params)),
                    jax.tree.leaves((two.evaluations, two.params)), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(one.best_step, two.best_step)
    from marl.learning.training import seed_sharding
    tree = {"x": np.zeros((3, 4))}
    assert seed_sharding(3, None, lines.append)(tree) is tree
    assert lines[-1] == "3 seeds do not divide over 2 devices: running on one"
    # a size check counts the memory of the devices the state spreads over, not the host's all
    from marl.learning.training import held_by
    assert len(held_by(None, 3)) == 1  # left on one device: one device's memory
    assert len(held_by(None, 3, num_envs=8)) == 2  # each seed's envs split over both
    assert len(held_by(None, 4)) == 2  # seeds split over both
    print("sharded ok")
    """
)


@pytest.mark.integration
def test_two_device_run_equals_the_one_device_run():
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "sharded ok" in done.stdout


ENVS_SCRIPT = textwrap.dedent(
    """
    import jax
    import numpy as np

    import sys

    import marl
    from marl.learning.runner import run
    from marl.learning.training import RunSettings

    assert jax.device_count() == 2, jax.devices()
    env = marl.make("particle/spread")
    configs = {
        "ippo": {"num_envs": 8, "rollout_length": 16, "num_minibatches": 2, "epochs": 2},
        "iql": {"num_envs": 8, "rollout_length": 5, "buffer_size": 16, "batch_size": 4,
                "recurrent": False, "hidden": [16]},
    }
    for algo in sys.argv[1:]:
        cfg = configs[algo]
        train = marl.algorithm(algo)(env, cfg)
        assert train.num_envs == 8
        settings = RunSettings(seeds=1, budget=train.steps_per_update * 6, num_evaluations=2,
                               eval_episodes=3, absolute_episodes=0)
        one = run(env, train, settings, log=None, devices=jax.devices()[:1])
        lines = []
        two = run(env, train, settings, log=lines.append)
        assert lines[0] == "8 envs of each seed split over 2 devices (cpu)", lines[0]
        split = [x for x in jax.tree.leaves(two.final_state)
                 if x.ndim >= 2 and x.shape[1] == 8]
        assert split and all(len(x.sharding.device_set) == 2 for x in split)
        assert all(x.sharding.spec[1] == "envs" for x in split)
        # equal up to float rounding: sums over the batch are all-reduced across devices
        for a, b in zip(jax.tree.leaves((one.evaluations, one.params)),
                        jax.tree.leaves((two.evaluations, two.params)), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    print("envs split ok")
    """
)


@pytest.mark.integration
@pytest.mark.parametrize(
    "algo", ["ippo", pytest.param("iql", marks=pytest.mark.slow)]
)  # a replay learner's buffer beside the split envs: under -m slow (CI's time)
def test_one_seeds_envs_split_over_two_devices_train_as_on_one(algo):
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    done = subprocess.run(
        [sys.executable, "-c", ENVS_SCRIPT, algo],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "envs split ok" in done.stdout
