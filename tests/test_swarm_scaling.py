"""scripts/swarm_scaling.py: swarm policies played at other agent counts, and training time
against N, from committed run folders (with or without their parameters)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from scripts_loader import load_script

RUNS = Path(__file__).resolve().parents[1] / "results" / "swarms" / "runs" / "swarm"


@pytest.mark.slow
def test_plays_saved_policies_and_times_training_at_each_n(tmp_path):
    played = RUNS / "aggregation[num_agents=50]" / "decpomfc" / "swarms"  # with its parameters
    timed = RUNS / "aggregation[num_agents=50]" / "mfac" / "swarms"  # a record without them
    out = tmp_path / "scaling.md"
    printed = io.StringIO()
    args = [str(played), str(timed), "--agents", "5,10", "--episodes", "2", "--timing", "1"]
    with contextlib.redirect_stdout(printed):
        code = load_script("swarm_scaling").main([*args, "--out", str(out)])
    assert code == 0
    assert "mfac/swarms: not played" in printed.getvalue()
    text = out.read_text()
    plays = [line for line in text.splitlines() if line.startswith("| swarm/aggregation |")]
    assert [line.split(" | ")[1:4] for line in plays[:2]] == [
        ["decpomfc", "50", "5"],
        ["decpomfc", "50", "10"],
    ]
    timing = text.split("## Training time against N")[1]
    rows = [line.split(" | ") for line in timing.splitlines() if line.startswith("| swarm/")]
    assert [(r[1], r[2]) for r in rows] == [
        ("decpomfc", "5"), ("decpomfc", "10"), ("mfac", "5"), ("mfac", "10")
    ]  # fmt: skip
    assert all(float(r[5]) > 0 for r in rows)  # seconds per update
    assert "--timing 1" in text
