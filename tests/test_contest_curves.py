"""scripts/contest_curves.py: per evaluation, the mean over seeds of a contest run's metrics."""

from __future__ import annotations

import json

import pytest
from scripts_loader import load_script


def _run(tmp_path, rows):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_the_table_averages_seeds_and_keeps_every_kth_and_the_last(tmp_path):
    cc = load_script("contest_curves")
    rows = [
        {"step": s, "eval": {"allies_alive": [a, 1.0 - a], "won": [1.0, 0.0], "length": [9, 11]}}
        for s, a in ((0, 0.2), (100, 0.4), (200, 0.6), (300, 0.8))
    ]
    rows.insert(1, {"step": 50, "train": {"loss": 1.0}})  # training metrics: no evaluation
    text = cc.table(_run(tmp_path, rows), every=2)
    lines = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert lines[0] == "| env steps | allies_alive | length | won |"
    assert lines[1:] == [
        "| 0 | 0.5 | 10 | 0.5 |",
        "| 200 | 0.5 | 10 | 0.5 |",
        "| 300 | 0.5 | 10 | 0.5 |",
    ]
    with pytest.raises(SystemExit, match="no enemies_killed; has allies_alive, length, won"):
        cc.table(tmp_path / "run", ["allies_alive", "enemies_killed"])
    with pytest.raises(SystemExit, match="no metrics.jsonl"):
        cc.table(tmp_path)


def test_a_compacted_run_reads_as_the_plain_one(tmp_path):
    """A committed run keeps `metrics.jsonl.gz` (scripts/compact_results.py): the same table."""
    import gzip

    cc = load_script("contest_curves")
    rows = [{"step": s, "eval": {"won": [0.5, 1.0]}} for s in (0, 100)]
    run = _run(tmp_path, rows)
    plain = cc.table(run)
    log = run / "metrics.jsonl"
    (run / "metrics.jsonl.gz").write_bytes(gzip.compress(log.read_bytes()))
    log.unlink()
    assert cc.table(run) == plain and "| 100 | 0.75 |" in plain
