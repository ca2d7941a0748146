"""scripts/learning_benchmark.py: rows over several runs (`--extend`), without training."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from scripts_loader import load_script


@pytest.fixture
def lb(tmp_path, monkeypatch):
    module = load_script("learning_benchmark")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    return module


def _final(root: Path, name: str, returns: list[float], won: list[float], sps: float) -> str:
    run_dir = root / "runs" / name
    run_dir.mkdir(parents=True)
    final = {
        "seeds": len(returns),
        "env_steps": 1000,
        "steps_per_second": sps,
        "final": {"return": returns, "won": won},
        "absolute": {"return": [r - 1 for r in returns], "won": won},
    }
    (run_dir / "final.json").write_text(json.dumps(final))
    return f"runs/{name}"


def _run(run_dir: str, seeds: int, root_seed: int, wall: float) -> dict:
    return {
        "run_dir": run_dir,
        "seeds": seeds,
        "root_seed": root_seed,
        "wall_time_s": wall,
        "resumed": False,
        "command": f"cmd {root_seed}",
    }


def test_a_row_over_two_runs_pools_their_seeds(lb, tmp_path):
    a = _final(tmp_path, "a", [10.0, 0.0], [1.0, 0.0], sps=100.0)
    b = _final(tmp_path, "b", [20.0, 30.0, 40.0], [1.0, 1.0, 0.5], sps=300.0)
    anchors = {"random": 0.0, "reference": 10.0}
    runs = [_run(a, 2, 0, 60.0), _run(b, 3, 1, 120.0)]
    row = lb.summarise("qmix", runs, anchors, 1000.0, ["algo.lr=1e-3"])
    pooled = [10.0, 0.0, 20.0, 30.0, 40.0]
    assert row["seeds"] == 5
    assert row["per_seed"] == pooled
    assert row["iqm_return"] == pytest.approx(lb.iqm(np.array(pooled)))
    assert row["iqm_absolute"] == pytest.approx(lb.iqm(np.array(pooled) - 1))
    assert row["iqm_won"] == pytest.approx(lb.iqm(np.array([1.0, 0.0, 1.0, 1.0, 0.5])))
    assert row["gap_closed"] == pytest.approx(row["iqm_return"] / 10.0)
    assert row["wall_time_s"] == 180.0
    # 2,000 steps at 100/s and 3,000 at 300/s: 5,000 steps in 30 s
    assert row["steps_per_second"] == pytest.approx(5000 / 30)
    assert [r["command"] for r in row["runs"]] == ["cmd 0", "cmd 1"]
    text = lb.markdown({"env": "x/y", "anchors": anchors, "results": [row]})
    assert "| qmix | 5 |" in text and "`cmd 0`, then `cmd 1`" in text


def test_extend_checks_the_row_it_adds_to(lb, tmp_path):
    a = _final(tmp_path, "a", [10.0, 0.0], [1.0, 0.0], sps=100.0)
    anchors = {"random": 0.0, "reference": 10.0}
    row = lb.summarise("qmix", [_run(a, 2, 0, 60.0)], anchors, 1e6, ["algo.pack_episodes=4"])
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"env": "x/y", "anchors": anchors, "results": [row]}))

    def args(*overrides: str, budget: float = 1e6) -> argparse.Namespace:
        return argparse.Namespace(budget=budget, set=list(overrides))

    ok = lb.extendable_row(record, "qmix", args("seed=1", "algo.pack_episodes=4"))
    assert ok["algo"] == "qmix"
    with pytest.raises(SystemExit, match="already in the qmix row"):
        lb.extendable_row(record, "qmix", args("algo.pack_episodes=4"))  # root seed 0 again
    with pytest.raises(SystemExit, match="overrides"):
        lb.extendable_row(record, "qmix", args("seed=1"))
    with pytest.raises(SystemExit, match="budget"):
        lb.extendable_row(record, "qmix", args("seed=1", "algo.pack_episodes=4", budget=2e6))
    with pytest.raises(SystemExit, match="no vdn row"):
        lb.extendable_row(record, "vdn", args("seed=1", "algo.pack_episodes=4"))


def test_env_keywords_name_a_variant_task_and_its_record(lb):
    assert lb.variant("combat/3m", ["algo.lr=1e-3", "seed=2"]) == ("3m", {})
    task, kwargs = lb.variant("combat/3m", ["env.kwargs.see_enemy_actions=true", "seeds=3"])
    assert task == "3m[see_enemy_actions=true]" and kwargs == {"see_enemy_actions": True}
    with pytest.raises(SystemExit, match="nonsense"):
        lb.variant("combat/3m", ["env.kwargs.nonsense=1"])


def test_add_screen_tables_a_variant_run_in_its_task_record(lb, tmp_path):
    """`--add-screen`: a finished run's absolute win rate per seed and IQM join the record's
    Screens table; adding the same run again replaces its entry in place."""
    run_dir = tmp_path / _final(tmp_path, "eps01", [50.0, 60.0, 55.0], [0.9, 0.8, 1.0], 100.0)
    (run_dir / "config.yaml").write_text("# resolved config of this run; command: marl train x\n")
    (run_dir / "meta.json").write_text(json.dumps({"env": "combat/3m", "task": "3m"}))
    final = json.loads((run_dir / "final.json").read_text())
    (run_dir / "final.json").write_text(json.dumps({**final, "algo": "qmix"}))
    out = tmp_path / "learning"
    out.mkdir()
    record = {"env": "combat/3m", "anchors": {"random": 0.0, "reference": 1.0}, "results": []}
    (out / "combat_3m.json").write_text(json.dumps(record))
    with pytest.raises(SystemExit, match="an unfinished run"):
        lb.add_screen(run_dir, "epsilon to 0.01", out)
    (run_dir / "meta.json").write_text(
        json.dumps({"env": "combat/3m", "task": "3m", "finished": True})
    )
    (run_dir / "record.json").write_text("{}")  # the run's last write
    lb.add_screen(run_dir, "epsilon to 0.01", out)
    lb.add_screen(run_dir, "epsilon ending at 0.01", out)
    (entry,) = json.loads((out / "combat_3m.json").read_text())["screens"]
    assert entry["command"] == "marl train x" and entry["metric"] == "won"
    assert entry["iqm_absolute"] == pytest.approx(lb.iqm(np.array([0.9, 0.8, 1.0])))
    text = (out / "combat_3m.md").read_text()
    assert "## Screens" in text
    assert "| qmix | epsilon ending at 0.01 | 3 x 1,000 | 90.0% / 80.0% / 100.0% | 90.0% |" in text


def test_change_alone_trains_a_screen_and_keeps_the_rows(lb, tmp_path, monkeypatch, capsys):
    """`--change TEXT` with a training run: the run joins the Screens table; the learner's row,
    its note included, is left as it was (training is replaced by a finished run on disk)."""
    run_dir = tmp_path / _final(tmp_path, "tuned", [50.0, 60.0], [0.9, 1.0], 100.0)
    (run_dir / "config.yaml").write_text("# resolved config of this run; command: marl train y\n")
    (run_dir / "meta.json").write_text(
        json.dumps({"env": "combat/3m", "task": "3m", "finished": True})
    )
    (run_dir / "record.json").write_text("{}")  # the run's last write
    final = json.loads((run_dir / "final.json").read_text())
    (run_dir / "final.json").write_text(json.dumps({**final, "algo": "qmix"}))
    out = tmp_path / "results" / "learning"
    out.mkdir(parents=True)
    anchors = {"random": 0.0, "reference": 10.0}
    shipped = _final(tmp_path, "shipped", [55.0, 58.0], [0.9, 0.9], 100.0)
    row = {**lb.summarise("qmix", [_run(shipped, 2, 0, 60.0)], anchors, 1e3, []), "note": "kept"}
    record = {"env": "combat/3m", "anchors": anchors, "results": [row]}
    (out / "combat_3m.json").write_text(json.dumps(record))
    trained = []

    def fake_run(env_id, task, algo, seeds, budget, out_, extra, name=None, resume=False):
        trained.append((env_id, algo, extra))
        return run_dir, 1.0

    monkeypatch.setattr(lb, "run_one", fake_run)
    argv = ["lb", "--env", "combat/3m", "--algos", "qmix", "--seeds", "2", "--set", "algo.tau=0.02"]
    monkeypatch.setattr("sys.argv", [*argv, "--change", "Polyak targets"])
    lb.main()
    assert trained == [("combat/3m", "qmix", ["algo.tau=0.02"])]
    saved = json.loads((out / "combat_3m.json").read_text())
    assert saved["results"] == [row]
    (entry,) = saved["screens"]
    assert entry["change"] == "Polyak targets" and entry["absolute"] == [0.9, 1.0]
    monkeypatch.setattr("sys.argv", [*argv, "--change", "x", "--extend"])
    with pytest.raises(SystemExit):
        lb.main()
    assert "choose one" in capsys.readouterr().err
    (out / "combat_3m.json").unlink()
    monkeypatch.setattr("sys.argv", [*argv, "--change", "x"])
    with pytest.raises(SystemExit):
        lb.main()
    assert "no record to add a screen to" in capsys.readouterr().err
    assert len(trained) == 1  # both refused before training


def test_replacing_a_row_keeps_the_records_screens(lb, tmp_path, monkeypatch):
    out = tmp_path / "results" / "learning"
    out.mkdir(parents=True)
    anchors = {"random": 0.0, "reference": 10.0}
    old = _final(tmp_path, "old", [50.0, 52.0], [0.8, 0.9], 100.0)
    screen = {
        "algo": "qmix",
        "change": "Polyak targets",
        "command": "marl train y",
        "seeds": 2,
        "env_steps": 1000,
        "metric": "won",
        "absolute": [0.9, 1.0],
        "iqm_absolute": 0.95,
        "run_dir": "runs/tuned",
    }
    record = {
        "env": "combat/3m",
        "anchors": anchors,
        "results": [lb.summarise("qmix", [_run(old, 2, 0, 60.0)], anchors, 1e3, [])],
        "screens": [screen],
    }
    (out / "combat_3m.json").write_text(json.dumps(record))
    run_dir = tmp_path / _final(tmp_path, "new", [58.0, 60.0], [1.0, 1.0], 100.0)
    monkeypatch.setattr(lb, "run_one", lambda *a, **k: (run_dir, 1.0))
    monkeypatch.setattr(lb, "anchor_scores", lambda env, num_episodes: anchors)
    argv = ["lb", "--env", "combat/3m", "--algos", "qmix", "--seeds", "2", "--budget", "1e3"]
    monkeypatch.setattr("sys.argv", argv)
    lb.main()
    saved = json.loads((out / "combat_3m.json").read_text())
    assert saved["screens"] == [screen]
    (row,) = saved["results"]
    assert row["iqm_return"] == pytest.approx(59.0)
    assert "Screens" in (out / "combat_3m.md").read_text()
