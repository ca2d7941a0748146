"""`python -m marl.app`: marl train as a Hydra app; a joblib-launched sweep runs its jobs in
concurrent processes that write valid, separate run directories."""

from __future__ import annotations

import subprocess
import sys

import pytest

from marl.results.study import load_study
from marl.run.saved.study import RegisteredTasks

TINY = [
    "env=particle/simple",
    "algo=ippo",
    "seeds=1",
    "budget=256",
    "algo.num_envs=4",
    "algo.rollout_length=16",
    "protocol.eval_episodes=2",
    "protocol.num_evaluations=2",
    "protocol.absolute_episodes=2",
]


@pytest.mark.integration
@pytest.mark.slow
def test_a_joblib_sweep_writes_one_valid_record_per_job(tmp_path):
    out = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "marl.app",
        "--multirun",
        *TINY,
        "algo.lr=1e-3,3e-4",  # two jobs with the same run folder, started together
        "label=${algo.name}-lr_${algo.lr}",  # each value ranks as its own algorithm
        f"out={out}",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted((out / "particle" / "simple" / "ippo").iterdir())
    assert len(runs) == 2  # claimed atomically: a timestamp and its -2, or two timestamps
    lrs = sorted(float((r / "config.yaml").read_text().split("lr: ")[1].split()[0]) for r in runs)
    assert lrs == [3e-4, 1e-3]
    study = load_study([str(r) for r in runs], facts=RegisteredTasks(anchors=False))
    assert sorted(study.algorithms) == ["ippo-lr_0.0003", "ippo-lr_0.001"]
    assert len(study.entries[("particle/simple", "ippo-lr_0.001")].runs) == 1


@pytest.mark.integration
def test_the_app_rejects_a_bad_config_in_one_line(tmp_path):
    cmd = [sys.executable, "-m", "marl.app", *TINY, "algo=nope", f"out={tmp_path}"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "nope" in done.stderr


@pytest.mark.integration
def test_the_app_takes_marl_trains_overrides():
    """Env keywords and learner settings need Hydra's add-or-override prefix, which `marl
    train` adds itself; the app adds it too (flags and group choices stay as they are)."""
    from marl.app import command_line

    argv = ["app", "--multirun", "env=particle/spread", "env.kwargs.num_agents=3,5",
            "algo.lr=1e-3", "seeds=2", "++algo.tau=0.1"]  # fmt: skip
    assert command_line(argv) == ["app", "--multirun", "env=particle/spread",
                                  "++env.kwargs.num_agents=3,5", "++algo.lr=1e-3", "seeds=2",
                                  "++algo.tau=0.1"]  # fmt: skip
    job = subprocess.run(
        [
            sys.executable,
            "-m",
            "marl.app",
            "env=particle/spread",
            "env.kwargs.num_agents=5",
            "--cfg",
            "job",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert job.returncode == 0, job.stderr
    assert "num_agents: 5" in job.stdout


@pytest.mark.integration
def test_only_hydra_settings_are_left_to_hydra(capsys):
    """check_overrides skips keys naming hydra (hydra.launcher.n_jobs=2) but not a value that
    mentions it: algo=hydra_nope is an unknown learner, exit 2, one line."""
    from marl.app import check_overrides

    check_overrides(["app", "hydra.launcher.n_jobs=2", "env=particle/spread"])
    with pytest.raises(SystemExit) as done:
        check_overrides(["app", "hydra.launcher.n_jobs=2", "algo=hydra_nope"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "unknown algorithm 'hydra_nope'" in err and err.count("\n") == 1
