"""marl.results.runfolder: a run folder's final.json, config.yaml, sidecar and metrics.jsonl."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from marl.results.protocol import RecordError
from marl.results.runfolder import evaluations, read_run


def _folder(root: Path, final: dict, meta: dict | None = None, config: str | None = None) -> Path:
    d = root / "swarm" / "vicsek[num_agents=50]" / "ippo" / "run"
    d.mkdir(parents=True)
    (d / "final.json").write_text(json.dumps(final))
    if meta is not None:  # with its record, a run's last write
        (d / "meta.json").write_text(json.dumps(meta))
        (d / "record.json").write_text("{}")
    if config is not None:
        (d / "config.yaml").write_text(config)
    return d


FINAL = {
    "algo": "ippo",
    "seeds": 2,
    "budget": 500_000,
    "env_steps": 516_096,
    "final": {"return": [1.0, 2.0]},
    "absolute": {"return": [3.0, 4.0], "won": [0.5, 1]},
}


def test_a_finished_run_reads_its_scores_task_and_learner(tmp_path):
    meta = {"env": "swarm/vicsek", "task": "vicsek[num_agents=50]", "finished": True}
    run = read_run(_folder(tmp_path, FINAL, meta, "seed: 3\nlabel: ippo-wide\n"))
    assert run.task == "swarm/vicsek[num_agents=50]"
    assert (run.algo, run.learner, run.root_seed) == ("ippo", "ippo-wide", 3)
    assert (run.budget, run.env_steps) == (500_000, 516_096)
    np.testing.assert_array_equal(run.absolute("return"), [3.0, 4.0])
    np.testing.assert_array_equal(run.absolute("won"), [0.5, 1.0])
    np.testing.assert_array_equal(run.last(), [1.0, 2.0])
    with pytest.raises(RecordError, match=r"final.json: no absolute 'length'; has return, won"):
        run.absolute("length")


def test_a_run_without_sidecar_or_config_is_named_by_its_folder(tmp_path):
    """Runs from before sidecars: the task is the folder's place under `<out>`, the learner
    its algo, the root seed 0."""
    run = read_run(_folder(tmp_path, FINAL))
    assert (run.task, run.learner, run.root_seed) == ("swarm/vicsek[num_agents=50]", "ippo", 0)


def test_unfinished_diverged_and_bad_runs_are_refused_naming_the_folder(tmp_path):
    with pytest.raises(RecordError, match="no final.json"):
        read_run(tmp_path)
    d = _folder(tmp_path / "a", FINAL, {"finished": False})
    with pytest.raises(RecordError, match="an unfinished run"):
        read_run(d)
    meta = {"finished": False, "diverged": {"step": 2048, "seeds": [1], "what": "losses"}}
    d = _folder(tmp_path / "b", FINAL, meta)
    with pytest.raises(RecordError, match="a diverged run"):
        read_run(d)
    d = _folder(tmp_path / "c", {**FINAL, "absolute": {"return": [1.0, float("nan")]}})
    with pytest.raises(RecordError, match=r"final.json: absolute/return: holds NaN"):
        read_run(d).absolute()
    (d / "final.json").write_text("{")
    with pytest.raises(RecordError, match="cannot read JSON"):
        read_run(d)


def test_a_run_whose_final_write_failed_is_refused(tmp_path):
    """A sidecar that says finished beside no record.json (written last): not complete."""
    d = _folder(tmp_path, FINAL, {"finished": True})
    (d / "record.json").unlink()
    with pytest.raises(RecordError, match=r"incomplete run \(its final write did not finish"):
        read_run(d)


def test_evaluations_read_the_log_compacted_or_cut_off(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    lines = [
        {"step": 0, "eval": {"won": [0.0, 0.5]}, "train": {}},
        {"step": 50, "train": {"loss": [1.0, 1.0]}},  # training metrics only
        {"step": 100, "eval": {"won": [1.0, 0.5]}, "train": {"loss": [0.5, 0.5]}},
    ]
    text = "".join(json.dumps(r) + "\n" for r in lines)
    (d / "metrics.jsonl").write_text(text + '{"step": 150, "ev')  # a kill mid-line
    got = evaluations(d)
    assert [s for s, _ in got] == [0, 100]
    np.testing.assert_array_equal(got[1][1]["won"], [1.0, 0.5])
    (d / "metrics.jsonl").unlink()
    (d / "metrics.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    assert [s for s, _ in evaluations(d)] == [0, 100]
    (d / "metrics.jsonl.gz").unlink()
    (d / "metrics.jsonl").write_text(text.replace("[1.0, 0.5]", "[Infinity, 0.5]"))
    with pytest.raises(RecordError, match=r"step 100/eval/won: holds Infinity"):
        evaluations(d)
    with pytest.raises(RecordError, match="no metrics.jsonl"):
        evaluations(tmp_path)
