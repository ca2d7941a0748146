"""`marl benchmark verify` (`marl.run.campaigns.verify`): a committed cell re-run at today's
code, its first k seeds compared one by one and its ranked statistic against the committed
interval; the outcome kept in the benchmark's log and shown by the leaderboard and the site."""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import numpy as np
from test_protocol import evaluations

from marl import cli
from marl.results.protocol import run_record
from marl.run.campaigns.verify import compare, read_log
from marl.run.train import execute

TINY = """
name: tiny
records: {root}/records
verifications: {root}/verified.json
protocol: default
tiers:
  cpu:
    particle:
      budget: 2e3
      seeds: 3
      tasks: [particle/spread]
      algos: [ippo]
      overrides:
        all: [protocol.num_evaluations=2]
"""


def _cli(*args):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def fake_train(shift: float = 0.0):
    """Stands in for marl train: the same seeds give the same numbers (plus `shift`)."""

    def train(run):
        a = run.settings.first_seed
        b = a + run.settings.seeds
        steps, evals, absolute = evaluations(seeds=3, shift=shift)
        pick = slice(a, b)
        evals = [{k: v[pick] for k, v in e.items()} for e in evals]
        absolute = {k: v[pick] for k, v in absolute.items()}
        run.folder.mkdir(parents=True, exist_ok=True)
        record = run_record("particle/spread", "ippo", steps, evals, absolute)
        (run.folder / "record.json").write_text(json.dumps(record))
        meta = {
            "finished": True,
            "protocol": {"version": "1", "eval_episodes": 4, "absolute_episodes": 40},
            "env_steps": steps[-1],
            "seeds": b - a,
            "config": {
                "env": {"id": "particle/spread", "kwargs": {}},
                "algo": {"name": "ippo"},
                **({"part": f"{a}:{b}"} if b - a < 3 else {}),  # as a part's sidecar says
            },
            "anchors": {"random": -3.0, "reference": 3.0},
        }
        (run.folder / "meta.json").write_text(json.dumps(meta))
        return run.folder

    return train


def test_verify_reruns_k_seeds_and_keeps_the_outcome(tmp_path, monkeypatch):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(root=tmp_path))
    monkeypatch.setattr(execute, "train_run", fake_train())
    code, out, err = _cli("benchmark", "verify", str(path), "--only", "particle/spread/ippo")
    assert code == 2 and "not finished" in err  # nothing committed yet
    assert _cli("benchmark", "run", str(path))[0] == 0
    code, out, err = _cli(
        "benchmark", "verify", str(path), "--only", "particle/spread/ippo", "--seeds", "2",
        "--records", str(tmp_path / "scratch"),
    )  # fmt: skip
    assert code == 0, err
    assert "2 of 3 seeds re-run" in out and "reproduces exactly" in out
    (outcome,) = read_log(tmp_path / "verified.json").values()
    assert outcome["cell"] == "particle/spread/ippo" and outcome["identical_seeds"]
    assert [p["seed"] for p in outcome["per_seed"]] == ["run_0", "run_1"]
    assert outcome["command"].endswith("--only particle/spread/ippo --seeds 2")
    # the leaderboard of the benchmark's records shows it, and the cell's page
    board, site = tmp_path / "board", tmp_path / "site"
    code, out, err = _cli(
        "leaderboard", str(tmp_path / "records"), "--out", str(board), "--benchmark", str(path),
        "--site", str(site), "--reps", "50",
    )  # fmt: skip
    assert code == 0, err
    assert "## Verified cells: 1" in (board / "leaderboard.md").read_text()
    page = (site / "cells" / "particle_spread" / "ippo.html").read_text()
    assert (
        "Re-checked:" in page and "marl benchmark verify tiny --only particle/spread/ippo" in page
    )
    # never into the benchmark's own records
    code, _, err = _cli(
        "benchmark", "verify", str(path), "--only", "particle/spread/ippo",
        "--records", str(tmp_path / "records" / "x"),
    )  # fmt: skip
    assert code == 2 and "own records" in err


def test_compare_tells_exact_inside_and_outside(tmp_path):
    committed = tmp_path / "committed" / "run"
    for name, shift in (("committed", 0.0), ("same", 0.0), ("near", 1e-3), ("far", 50.0)):

        class Run:
            folder = tmp_path / name / "run"

            class settings:
                first_seed = 0
                seeds = 3

        fake_train(shift)(Run)
    found = {
        name: compare(committed, tmp_path / name / "run", "particle/spread", "ippo", {})
        for name in ("same", "near", "far")
    }
    assert found["same"]["verdict"] == "reproduces exactly"
    assert found["near"]["verdict"] == "inside the committed interval"
    assert not found["near"]["identical_seeds"]
    assert found["far"]["verdict"] == "outside the committed interval"
    far = found["far"]["per_seed"][0]
    assert np.isclose(far["rerun"] - far["committed"], 50.0)
    shutil.rmtree(tmp_path / "far")
