"""scripts/gpu_check.py's report, from what a GPU check left in its OUT folder."""

from __future__ import annotations

import json

from scripts_loader import load_script


def test_report_shows_bench_cells_of_a_bench_step_cut_by_its_time_limit(tmp_path):
    """A bench step killed by its limit never merges its cells into OUT/bench_<task>.json; the
    report still shows every cell it measured (it once printed '-' for all of them)."""
    (tmp_path / "bench").mkdir()
    status = {}
    for n, sps in ((1, 59_664.0), (16, 373_661.0)):
        status[f"particle_spread_{n}"] = {
            "task": "particle/spread",
            "num_envs": n,
            "steps": 25,
            "status": "ok",
            "seconds": 9.0,
        }
        side = {"num_envs": n, "steps": 25, "compile_s": 9.5, "memory_bytes": 0}
        record = {
            "marl": {**side, "env": "particle/spread", "steps_per_s": sps},
            "jaxmarl": {**side, "env": "MPE_simple_spread_v3", "steps_per_s": sps / 2},
        }
        (tmp_path / "bench" / f"particle_spread_{n}.json").write_text(json.dumps([record]))
    (tmp_path / "bench_status.json").write_text(json.dumps(status))
    (tmp_path / "versions.json").write_text(json.dumps({"python": "3.12", "packages": {}}))
    assert load_script("gpu_check").main(["report", str(tmp_path)]) == 0
    text = (tmp_path / "bench_gpu.md").read_text()
    assert "| 1 | 25 | 59,664 |" in text and "| 16 | 25 | 373,661 |" in text
    assert "| 2.00 |" in text  # marl / jaxmarl
