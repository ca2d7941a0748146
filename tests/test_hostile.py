"""Hostile but fair inputs: folders and files marl did not write. Each is refused in one line
(exit 2) naming the file and the field, and nothing in it runs or gets ranked."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml
from test_protocol import write_run

from marl import cli
from marl.core import registry

CONFIG = {
    "env": {"id": "particle/simple", "kwargs": {}},
    "algo": {"name": "ippo"},
    "protocol": {"eval_episodes": 2, "absolute_episodes": 2},
    "seeds": 1,
    "budget": 2000,
    "seed": 0,
    "out": "runs",
}
TINY = ["env=particle/simple", "algo=ippo", "seeds=1", "budget=2e3"]
TINY += ["protocol.eval_episodes=2", "protocol.absolute_episodes=2"]


def _one_error(capsys) -> str:
    """The command's error: exactly one `marl: error:` line, the last on stderr."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if line.startswith("marl: error:")]) == 1, err
    assert err[-1].startswith("marl: error:"), err
    return err[-1]


def _run_folder(tmp_path, **changes):
    """A run folder whose config.yaml is CONFIG with `changes` (top-level keys replaced)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump({**CONFIG, **changes}))
    (run / "best_params.msgpack").write_bytes(b"\x80")
    (run / "params.msgpack").write_bytes(b"\x80")
    return run


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """A run folder naming `os:system` as its env, with a `command` that makes a marker file;
    the registry's tables restored afterwards."""
    monkeypatch.setattr(registry, "_ENVS", dict(registry._ENVS))
    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))
    marker = tmp_path / "MARKER"
    env = {"id": "os:system", "kwargs": {"command": f"touch {marker}"}}
    return _run_folder(tmp_path, env=env), marker


READERS = {
    "eval": lambda run, tmp: ["eval", str(run)],
    "crossplay": lambda run, tmp: ["crossplay", str(run), "random", "--out", str(tmp / "cp")],
    "render": lambda run, tmp: [
        "render", "particle/simple", "--params", str(run), "--out", str(tmp / "a.gif")
    ],
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_run_folder_never_runs_code(evil, tmp_path, capsys, command):
    run, marker = evil
    assert cli.main(READERS[command](run, tmp_path)) == 2
    err = _one_error(capsys)
    assert "'os:system' is an import path read from a file" in err and "config.yaml" in err
    assert not marker.exists()


@pytest.mark.integration
def test_a_learner_import_path_in_a_run_folder_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))
    run = _run_folder(tmp_path, algo={"name": "os:system"})
    assert cli.main(["eval", str(run)]) == 2
    assert "learner 'os:system' is an import path" in _one_error(capsys)
    assert "os:system" not in registry._ALGORITHMS


@pytest.mark.integration
def test_allow_import_trusts_what_the_command_line_names(evil, tmp_path, capsys):
    """The opt-in reaches the registry: `--allow-import` of another path still refuses it."""
    run, marker = evil
    assert cli.main(["eval", str(run), "--allow-import", "os:getcwd"]) == 2
    assert "pass --allow-import os:system" in _one_error(capsys)
    assert not marker.exists()
    with registry.files_are_data(["os:getcwd"]):
        assert registry.env_factory("os:getcwd") is not None
        with pytest.raises(registry.RegistryError, match="import path read from a file"):
            registry.algorithm("os:system")


@pytest.mark.integration
def test_an_interpolation_in_a_run_folder_is_refused_not_resolved(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MARL_HOSTILE_SECRET", "hunter2")
    run = _run_folder(tmp_path, label="${oc.env:MARL_HOSTILE_SECRET}")
    assert cli.main(["eval", str(run)]) == 2
    err = _one_error(capsys)
    assert "label holds an interpolation" in err and "config.yaml" in err
    assert "hunter2" not in err


def _leaderboard_records(tmp_path):
    write_run(tmp_path / "recs", env_id="particle/spread", algo="ippo", root_seed=1)
    write_run(tmp_path / "recs", env_id="particle/spread", algo="mappo", root_seed=2)
    return tmp_path / "recs"


def _leaderboard(tmp_path, *extra):
    out = tmp_path / "board"
    argv = ["leaderboard", *extra, "--out", str(out), "--published", "none", "--reps", "20"]
    return cli.main(argv), out


def test_a_benchmark_file_never_runs_code(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no default records or contests of the repository
    monkeypatch.setattr(registry, "_ENVS", dict(registry._ENVS))
    marker = tmp_path / "MARKER"
    (tmp_path / "cells").mkdir()
    family = {"tasks": [f"os:system[command=touch {marker}]"], "algos": ["ippo"]}
    definition = {
        "name": "evil",
        "records": str(tmp_path / "cells"),
        "tiers": {"cpu": {"evil": {**family, "seeds": 1, "budget": 1000}}},
    }
    (tmp_path / "evil.yaml").write_text(yaml.safe_dump(definition))
    records = _leaderboard_records(tmp_path)
    code, out = _leaderboard(tmp_path, str(records), "--benchmark", str(tmp_path / "evil.yaml"))
    assert code == 2
    assert "'os:system' is an import path read from a file" in _one_error(capsys)
    assert not marker.exists() and not (out / "leaderboard.md").exists()


def test_an_interpolation_in_a_benchmark_file_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MARL_HOSTILE_SECRET", "hunter2")
    family = {"tasks": ["particle/spread"], "algos": ["ippo"], "seeds": 1, "budget": 1000}
    definition = {
        "name": "${oc.env:MARL_HOSTILE_SECRET}",
        "records": str(tmp_path),
        "tiers": {"cpu": {"particle": family}},
    }
    (tmp_path / "env.yaml").write_text(yaml.safe_dump(definition))
    records = _leaderboard_records(tmp_path)
    code, _ = _leaderboard(tmp_path, str(records), "--benchmark", str(tmp_path / "env.yaml"))
    assert code == 2
    err = _one_error(capsys)
    assert "env.yaml: name holds an interpolation" in err and "hunter2" not in err


@pytest.mark.integration
@pytest.mark.parametrize("lr", ["inf", "nan", "-inf"])
def test_a_non_finite_hyperparameter_is_refused_at_resolve(tmp_path, capsys, lr):
    assert cli.main(["train", *TINY, f"out={tmp_path}", f"algo.lr={lr}"]) == 2
    assert f"algo.lr must be a finite number, got {float(lr)!r}" in _one_error(capsys)
    assert not any(tmp_path.iterdir())


@pytest.mark.integration
def test_a_diverging_run_stops_marked_diverged_and_is_never_ranked(tmp_path, capsys, monkeypatch):
    """lr=1e300 is finite, so it trains: its parameters turn non-finite at the first segment;
    the run stops there, exit 2, and readers skip it as diverged."""
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    assert cli.main(["train", *TINY, f"out={runs}", "name=big", "algo.lr=1e300"]) == 2
    err = _one_error(capsys)
    assert "diverged: non-finite parameters" in err and "at step 2,048 in seed(s) 0" in err
    run = runs / "particle/simple/ippo/big"
    meta = json.loads((run / "meta.json").read_text())
    assert meta["finished"] is False
    assert meta["diverged"]["step"] == 2048 and meta["diverged"]["seeds"] == [0]
    assert not (run / "final.json").exists() and not (run / "params.msgpack").exists()
    assert not (run / ".lock").exists()  # let go of once it stopped
    assert cli.main(["report", str(runs), "--out", str(tmp_path / "rep")]) == 2
    out = capsys.readouterr()
    assert "no finished run records found" in out.err
    records = _leaderboard_records(tmp_path)
    code, board = _leaderboard(tmp_path, str(records), str(runs))
    assert code == 0
    out = capsys.readouterr().out
    skipped = re.search(r"skipped a diverged run \(non-finite parameters.* at step 2,048 (.*)", out)
    assert skipped and skipped.group(1) == f"in seed(s) 0): {run}"
    assert "particle/simple" not in (board / "leaderboard.md").read_text()


def _external(path, values, step_count=0):
    """A marl-eval file of one run of `ext` on particle/spread: one evaluation, `values`."""
    run = {"step_0": {"step_count": step_count, "episode_return": values}}
    path.write_text(json.dumps({"particle": {"spread": {"ext": {"run_0": run}}}}))
    return path


@pytest.mark.parametrize(
    "values, step_count, says",
    [
        ([0.5, float("nan")], 0, "run_0/step_0/episode_return: holds NaN (value 1)"),
        ([float("inf"), 1.0], 0, "run_0/step_0/episode_return: holds Infinity (value 0)"),
        ([1e308, 1.0], 0, "episode_return: value 0 is 1e+308, past the sane bound ±1e+09"),
        ([1.0, 2.0], float("inf"), "run_0/step_0/step_count: expected a step number, got inf"),
        ([1.0, 2.0], float("nan"), "run_0/step_0/step_count: expected a step number, got nan"),
    ],
)
def test_a_record_with_bad_numbers_is_refused(
    tmp_path, capsys, monkeypatch, values, step_count, says
):  # noqa: E501
    monkeypatch.chdir(tmp_path)
    records = _leaderboard_records(tmp_path)
    bad = _external(tmp_path / "bad.json", values, step_count)
    code, board = _leaderboard(tmp_path, str(records), str(bad))
    assert code == 2
    err = _one_error(capsys)
    assert str(bad) in err and says in err
    assert not (board / "leaderboard.md").exists()
    assert cli.main(["report", str(bad), "--out", str(tmp_path / "rep")]) == 2
    assert says in _one_error(capsys)


def test_a_bad_record_is_dropped_with_a_warning_when_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    records = _leaderboard_records(tmp_path)
    bad = _external(tmp_path / "bad.json", [0.5, float("nan")])
    code, board = _leaderboard(tmp_path, str(records), str(bad), "--drop-bad")
    assert code == 0
    err = capsys.readouterr().err
    assert f"warning: dropped a bad record: {bad}: particle/spread/ext/run_0" in err
    text = (board / "leaderboard.md").read_text()
    assert "ippo" in text and "ext" not in text.replace("external", "")


def test_a_nan_anchor_in_a_sidecar_is_refused(tmp_path, capsys):
    path, *_ = write_run(tmp_path, root_seed=1)
    meta = json.loads((path / "meta.json").read_text())
    meta["anchors"]["reference"] = float("nan")
    (path / "meta.json").write_text(json.dumps(meta))
    assert cli.main(["report", str(tmp_path), "--out", str(tmp_path / "rep")]) == 2
    assert "meta.json: anchors/reference: holds NaN" in _one_error(capsys)


def test_a_marl_record_passed_again_as_external_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, *_ = write_run(tmp_path / "mine", algo="mappo", root_seed=1)
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / "theirs.json"
    shutil.copy(path / "record.json", copy)
    code, board = _leaderboard(tmp_path, str(tmp_path / "mine"), str(copy))
    assert code == 2
    err = _one_error(capsys)
    assert "hold the same run on particle/spread" in err and str(copy) in err
    assert not (board / "leaderboard.md").exists()
    assert cli.main(["report", str(tmp_path / "mine"), str(copy), "--out", "rep"]) == 2
    assert "the same runs would count twice" in _one_error(capsys)
