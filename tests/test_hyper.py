"""Vectorised hyperparameter sweeps (`marl sweep ... vmap=algo.KEY:V1,V2`): one program for
the value combinations x seeds, one run directory per combination, each as its own run."""

from __future__ import annotations

import contextlib
import io
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marl import cli
from marl.learning import hyper

TINY = [
    "env=particle/simple",
    "algo=ippo",
    "seeds=2",
    "budget=1024",
    "algo.num_envs=4",
    "algo.rollout_length=16",
    "protocol.eval_episodes=4",
    "protocol.num_evaluations=4",
    "protocol.absolute_episodes=4",
]


def test_parse_and_combinations():
    grid = hyper.parse(["algo.lr:1e-3,3e-4", "algo.ent_coef:0,0.01"])
    assert grid == {"lr": [1e-3, 3e-4], "ent_coef": [0.0, 0.01]}
    combos = hyper.combinations(grid)
    assert combos[1] == {"lr": 1e-3, "ent_coef": 0.01} and len(combos) == 4
    for bad in ["lr:1e-3", "algo.lr", "algo.lr:fast", "env.kwargs.x:1"]:
        with pytest.raises(hyper.HyperError):
            hyper.parse([bad])


@pytest.mark.integration
@pytest.mark.slow
def test_a_vmapped_sweep_writes_each_combination_as_its_own_run(tmp_path):
    out = tmp_path / "runs"
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        argv = ["sweep", *TINY, f"out={out}", "name=hp", "vmap=algo.lr:1e-3,3e-4"]
        assert cli.main(argv) == 0
        assert cli.main(["train", *TINY, f"out={out}", "name=alone", "algo.lr=0.0003"]) == 0
    parent = out / "particle" / "simple" / "ippo"
    got = sorted(p.name for p in parent.iterdir())
    assert got == ["alone", "hp-lr_0.0003", "hp-lr_0.001"]
    for name in ("hp-lr_0.0003", "hp-lr_0.001"):
        config = (parent / name / "config.yaml").read_text()
        assert f"lr: {name.split('_')[1]}" in config
        assert json.loads((parent / name / "meta.json").read_text())["finished"]
        record = json.loads((parent / name / "record.json").read_text())
        assert list(record["particle"]["simple"]) == [f"ippo-{name.removeprefix('hp-')}"]
    # the combination trains as the run with that value alone (same seeds, same keys)
    vmapped = json.loads((parent / "hp-lr_0.0003" / "final.json").read_text())
    alone = json.loads((parent / "alone" / "final.json").read_text())
    np.testing.assert_allclose(vmapped["final"]["return"], alone["final"]["return"], rtol=1e-4)
    np.testing.assert_allclose(
        vmapped["absolute"]["return"], alone["absolute"]["return"], rtol=1e-4
    )
    other = json.loads((parent / "hp-lr_0.001" / "final.json").read_text())
    assert other["final"]["return"] != vmapped["final"]["return"]
    with contextlib.redirect_stdout(io.StringIO()) as text:  # a rerun skips the finished sweep
        assert cli.main(argv) == 0
    assert text.getvalue().count("finished before") == 2
    with contextlib.redirect_stderr(io.StringIO()) as err:  # what one program cannot do
        transfer = "protocol.transfer=[{name:short,id:'particle/simple',kwargs:{episode_limit:7}}]"
        assert cli.main([*argv, "name=hq", transfer]) == 2
    assert "without logger= or protocol.transfer" in err.getvalue()


def test_a_setting_that_shapes_the_program_cannot_be_vmapped(tmp_path, capsys):
    argv = ["sweep", *TINY, f"out={tmp_path}", "vmap=algo.epochs:1,2"]
    assert cli.main(argv) == 2
    assert "cannot be vmapped" in capsys.readouterr().err


@pytest.mark.parametrize(
    "module, cls, key",
    [
        ("qlearner", "QConfig", "td_lambda"),
        ("qlearner", "QConfig", "tau"),
        ("mfq", "MFQConfig", "temperature_end"),
        ("mfac", "MFACConfig", "tau"),
    ],
)
def test_range_checked_settings_build_from_traced_values(module, cls, key):
    """A vmapped sweep builds the learner's config inside the traced step: its range checks
    (`0 <= td_lambda <= 1`) must not ask a tracer for a bool (marl sweep checked each value)."""
    import importlib

    config_cls = getattr(importlib.import_module(f"marl.algorithms.{module}"), cls)
    got = jax.jit(lambda x: getattr(config_cls(**{key: x}), key) * 2)(jnp.float32(0.05))
    assert float(got) == pytest.approx(0.1)
    with pytest.raises(ValueError, match=f"{key}=1.5 invalid"):
        config_cls(**{key: 1.5})


@pytest.mark.parametrize(
    "algo, key", [("iql", "epsilon_steps"), ("mfq", "temperature_steps"), ("il", "lr")]
)
def test_exploration_schedules_can_be_vmapped(algo, key):
    """The epsilon and temperature schedules' lengths are sweepable (the schedule divides by
    them in the traced step, not in Python)."""
    import marl

    env = marl.make("particle/spread")
    cfg = {"num_envs": 2, "buffer_size": 64, "batch_size": 4}
    hyper.check_traceable(marl.algorithm(algo), env, cfg, None, [key])


@pytest.mark.parametrize("key", ["epochs", "num_envs", "rollout_length", "agent_id"])
def test_check_traceable_names_each_kind_of_structural_setting(key):
    """epochs and num_envs fail tracing with a TypeError, rollout_length with a concretization
    error, agent_id with a bool conversion: each is one HyperError naming the setting."""
    import marl

    env = marl.make("particle/simple")
    cfg = {"num_envs": 4, "rollout_length": 16}
    with pytest.raises(hyper.HyperError, match=f"algo.{key} cannot be vmapped"):
        hyper.check_traceable(marl.algorithm("ippo"), env, cfg, None, [key])
