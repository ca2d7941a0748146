"""The JaxMARL side-by-side study's record keeping (scripts/jaxmarl_qmix_combat.py): a stopped
study keeps the seeds its record holds, and seeds trained by another process merge in; a record
of other settings is refused. No training and no jaxmarl needed."""

from __future__ import annotations

import json

import pytest
from scripts_loader import load_script

study = load_script("jaxmarl_qmix_combat")


def _record(seeds: dict[str, list[int]], lr: float = 5e-5) -> dict:
    return {
        "env": "combat/5m_vs_6m",
        "budget": 2_000_000,
        "overrides": {"HIDDEN_SIZE": 64},
        "algos": {
            algo: {"config": {"LR": lr}, "seeds": [{"seed": s, "best_won": 0.1} for s in got]}
            for algo, got in seeds.items()
        },
    }


def _write(path, record):
    path.write_text(json.dumps(record))
    return path


def test_kept_and_merged_seeds_are_added_once_and_other_settings_refused(tmp_path):
    out = _write(tmp_path / "out.json", _record({"qmix": [0, 1], "vdn": [0]}))
    other = _write(tmp_path / "other.json", _record({"qmix": [1, 4], "vdn": [4]}))
    record = _record({"qmix": [], "vdn": []})
    done = study.kept_seeds(out, record)
    assert done == {("qmix", 0), ("qmix", 1), ("vdn", 0)}
    added = study.kept_seeds(other, record, done)
    assert added == {("qmix", 4), ("vdn", 4)}  # qmix seed 1 is kept once
    assert [r["seed"] for r in record["algos"]["qmix"]["seeds"]] == [0, 1, 4]
    assert study.kept_seeds(tmp_path / "absent.json", record) == set()  # a first call
    changed = _write(tmp_path / "lr.json", _record({"qmix": [2]}, lr=1e-3))
    with pytest.raises(SystemExit, match="another config"):
        study.kept_seeds(changed, _record({"qmix": []}))
    budget = _write(tmp_path / "budget.json", {**_record({"qmix": [2]}), "budget": 10})
    with pytest.raises(SystemExit, match="another study"):
        study.kept_seeds(budget, _record({"qmix": []}))
