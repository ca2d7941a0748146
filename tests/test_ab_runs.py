"""scripts/ab_runs.py: one cell before and after a change, from two finished run folders."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from scripts_loader import load_script

from marl.results.protocol import run_record

STEPS = [0, 100, 200]


def _run(root: Path, won: list[list[float]], absolute: list[float]) -> Path:
    """A finished run of 2 seeds: `won[k][s]`, seed s's win rate at evaluation k (2 episodes,
    both at that value), `absolute[s]` its absolute win rate; returns are 10 x the win rate."""
    evals = []
    for row in won:
        w = np.repeat(np.asarray(row, float)[:, None], 2, axis=1)  # [seeds, episodes]
        evals.append({"return": 10.0 * w, "won": w})
    a = np.repeat(np.asarray(absolute, float)[:, None], 4, axis=1)
    record = run_record("combat/3m", "mappo", STEPS, evals, {"return": 10.0 * a, "won": a})
    root.mkdir(parents=True)
    (root / "record.json").write_text(json.dumps(record))
    meta = {"finished": True, "protocol": {"eval_episodes": 2}, "config": {}}
    (root / "meta.json").write_text(json.dumps(meta))
    return root


def test_the_table_states_each_side_and_p_after_beats_before(tmp_path):
    before = _run(tmp_path / "before", [[0.0, 0.2], [0.8, 0.6], [0.4, 0.6]], [0.6, 0.7])
    after = _run(tmp_path / "after", [[0.0, 0.2], [0.6, 0.8], [0.8, 1.0]], [0.9, 0.8])
    out = io.StringIO()
    argv = [str(before), str(after), "--metric", "won", "--at", "100,200"]
    with contextlib.redirect_stdout(out):
        assert load_script("ab_runs").main(argv) == 0
    rows = {line.split(" | ")[0]: line.split(" | ") for line in out.getvalue().splitlines()}
    # before: seed means 0.1, 0.7, 0.5 at the three evaluations; the final return 10 x 0.5
    assert rows["| before"][1:4] == ["0.70 / 0.50", "5.0", "0.60 0.70"]
    # each seed's best - final: (0.8 - 0.4 + 0.6 - 0.6) / 2 = 0.2; the mean curve's 0.7 - 0.5
    assert rows["| before"][5:] == ["0.20", "0.20 |"]
    assert rows["| after"][1:4] == ["0.70 / 0.90", "9.0", "0.90 0.80"]
    assert rows["| after"][5:] == ["0.00", "0.00 |"]
    assert rows["| after"][4].startswith("0.85 [")  # IQM of two seeds: their mean
    # every after seed beats every before seed
    assert "P(after > before) = 1.00 [1.00, 1.00] (2 and 2 seeds)" in out.getvalue()
    # the final evaluation per seed (before 0.4, 0.6; after 0.8, 1.0): after beats before
    assert "final evaluation's won per seed, before: 0.40 0.60" in out.getvalue()
    assert "final evaluation's won per seed, after: 0.80 1.00" in out.getvalue()
    assert "P(after > before) on the final evaluation = 1.00 [1.00, 1.00]" in out.getvalue()


def test_a_folder_that_is_not_one_finished_run_is_refused(tmp_path):
    a = _run(tmp_path / "runs" / "a", [[0.0, 0.0]] * 3, [0.0, 0.0])
    _run(tmp_path / "runs" / "b", [[0.0, 0.0]] * 3, [0.0, 0.0])
    with pytest.raises(SystemExit, match="expected one finished run, found 2"):
        load_script("ab_runs").main([str(tmp_path / "runs"), str(a)])
