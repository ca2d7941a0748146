"""Compacted run folders (`marl.run.saved.compact`, scripts/compact_results.py): lossless,
idempotent, and read by every reader as the plain files they replace; half-precision
parameters."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest
from scripts_loader import load_script
from test_protocol import write_run

from marl.results.files import read_json, read_text, stored
from marl.results.protocol import load
from marl.run.campaigns import parts
from marl.run.saved import compact

TRAIN = [{"step": 100, "loss": [0.5, 0.25, 0.125]}, {"step": 200, "loss": [0.1, 0.2, None]}]


def run_folder(root, **kw):
    """A finished run folder as `marl train` leaves it (record, sidecar with training metrics,
    metrics log, transfer results, config)."""
    path, *_ = write_run(root, **kw)
    meta = json.loads((path / "meta.json").read_text())
    meta["train_metrics"] = TRAIN
    (path / "meta.json").write_text(json.dumps(meta, indent=1))
    lines = [
        {"step": s, "time": 1.0, "eval": {"return": [1.0]}, "train": {}} for s in (0, 100, 200)
    ]
    (path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    seeds = kw.get("seeds", 3)  # transfer.json as `marl.run.train.transfer` writes it
    metrics = {"return": [[float(k), float(k) + 0.5] for k in range(seeds)]}
    target = {"id": "particle/simple", "kwargs": {}, "episodes": 2, "metrics": metrics}
    (path / "transfer.json").write_text(json.dumps({"short": {"name": "short", **target}}))
    (path / "config.yaml").write_text("seeds: 3\n")
    return path


def snapshot(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_a_compacted_run_reads_back_as_it_was(tmp_path):
    path = run_folder(tmp_path)
    before, plain = load([tmp_path]), snapshot(path)
    done = compact.compact_run(path)
    assert done == ["record.json", "metrics.jsonl", "transfer.json", "train_metrics"]
    names = {p.name for p in path.iterdir()}
    assert {"record.json", "metrics.jsonl", "transfer.json"}.isdisjoint(names)
    assert {"record.json.gz", "metrics.jsonl.gz", "transfer.json.gz"} <= names
    for name in ("record.json", "metrics.jsonl", "transfer.json"):  # the same bytes come back
        assert gzip.decompress((path / f"{name}.gz").read_bytes()) == plain[name]
        assert read_text(path / name) == plain[name].decode() and stored(path / name).exists()
    meta = json.loads((path / "meta.json").read_text())
    assert "train_metrics" not in meta and compact.train_metrics(path, meta) == TRAIN
    assert {k: v for k, v in json.loads(plain["meta.json"]).items() if k != "train_metrics"} == meta
    for given in ([tmp_path], [path], [path / "record.json"], [path / "record.json.gz"]):
        (after,) = load(given)
        assert after.meta == meta and after.path == path / "record.json.gz"
        (rec,) = before
        for a, b in zip(rec.runs, after.runs, strict=True):
            np.testing.assert_array_equal(a.steps, b.steps)
            for m in a.metrics:
                np.testing.assert_array_equal(a.metrics[m], b.metrics[m])
            for m in a.absolute:
                np.testing.assert_array_equal(a.absolute[m], b.absolute[m])
    again = snapshot(path)
    assert compact.compact_run(path) == [] and snapshot(path) == again  # idempotent


def test_unfinished_runs_are_left_as_they_are(tmp_path):
    path = run_folder(tmp_path)
    meta = json.loads((path / "meta.json").read_text())
    (path / "meta.json").write_text(json.dumps({**meta, "finished": False}))
    plain = snapshot(path)
    counts = compact.compact([tmp_path], log=lambda line: None)
    assert counts["unfinished"] == 1 and counts["compacted"] == 0 and snapshot(path) == plain


def test_a_plain_copy_beside_a_compact_one_is_read_first(tmp_path):
    path = run_folder(tmp_path)
    compact.compact_run(path)
    (path / "record.json").write_text(json.dumps(read_json(path / "record.json.gz")))
    (rec,) = load([tmp_path])
    assert rec.path == path / "record.json"


def test_parts_merge_from_compacted_folders_as_from_plain_ones(tmp_path):
    from flax import serialization

    def part(root, first, stop):
        path = run_folder(root / f"run.part{first}-{stop}", seeds=stop - first)
        meta = json.loads((path / "meta.json").read_text())
        meta["config"].update(seeds=2, part=f"{first}:{stop}", protocol={"metric": "return"})
        meta.update(seeds=stop - first, wall_time=10.0, compile_time=1.0, created="2026-01-01")
        meta.update(steps_per_second=100.0, train_metrics=[{"step": 100, "loss": [0.5]}])
        (path / "meta.json").write_text(json.dumps(meta))
        final = {"final": {"return": [1.0 * first]}, "absolute": {"return": [2.0 * first]}}
        (path / "final.json").write_text(json.dumps(final))
        w = {"w": np.full((1, 2), first, np.float32)}
        (path / "best_params.msgpack").write_bytes(serialization.msgpack_serialize(w))
        return path

    plain = [part(tmp_path / "plain", 0, 1), part(tmp_path / "plain", 1, 2)]
    packed = [
        shutil.copytree(p, tmp_path / "packed" / p.relative_to(tmp_path / "plain")) for p in plain
    ]
    for p in packed:
        assert compact.compact_run(p)
    a = parts.merge(plain, tmp_path / "a" / "run")
    b = parts.merge(packed, tmp_path / "b" / "run")
    assert json.loads((b / "meta.json").read_text())["train_metrics"] == [
        {"step": 100, "loss": [0.5, 0.5]}
    ]
    merged, again = snapshot(a), snapshot(b)
    stacked = serialization.msgpack_restore(merged["best_params.msgpack"])
    np.testing.assert_array_equal(stacked["w"], [[0, 0], [1, 1]])
    assert json.loads(merged.pop("meta.json")) == json.loads(again.pop("meta.json"))
    assert merged == again
    # each part's one seed (episodes 0.0, 0.5), side by side
    transfer = json.loads(merged["transfer.json"])["short"]
    assert transfer["metrics"]["return"] == [[0.0, 0.5], [0.0, 0.5]]


def test_half_precision_parameters_keep_what_float16_cannot_hold():
    from flax import serialization

    rng = np.random.default_rng(0)
    tree = {
        "w": rng.normal(size=(3, 4, 5)).astype(np.float32),
        "big": np.array([1.0, 1e6], np.float32),  # past float16's range: kept as it is
        "step": np.array([7], np.int32),
        "inner": {"b": np.zeros(2, np.float32)},
    }
    data = compact.half_params(serialization.msgpack_serialize(tree))
    back = serialization.msgpack_restore(gzip.decompress(data))
    assert back["w"].dtype == np.float16 and back["inner"]["b"].dtype == np.float16
    assert back["big"].dtype == np.float32 and back["step"].dtype == np.int32
    np.testing.assert_allclose(back["w"], tree["w"], rtol=2**-11)
    np.testing.assert_array_equal(back["big"], tree["big"])
    assert compact.half_name("best_params.msgpack") == "best_params.f16.msgpack.gz"


@pytest.mark.integration
def test_the_script_compacts_checks_and_leaves_a_compact_tree_alone(tmp_path, capsys):
    from flax import serialization

    script = load_script("compact_results")
    path = run_folder(tmp_path)
    params = serialization.msgpack_serialize({"w": np.ones((3, 2), np.float32)})
    (path / "best_params.msgpack").write_bytes(params)
    assert script.main([str(tmp_path), "--check"]) == 1
    said = capsys.readouterr().out
    assert "record.json, metrics.jsonl, transfer.json, best_params.msgpack, train_metrics" in said
    assert script.main([str(tmp_path)]) == 0
    assert "1 of 1 run folders compacted" in capsys.readouterr().out
    assert gzip.decompress((path / "best_params.msgpack.gz").read_bytes()) == params
    assert script.main([str(tmp_path), "--check"]) == 0
    assert script.main([str(tmp_path), "--check", "--params"]) == 1
    assert script.main([str(tmp_path), "--params"]) == 0
    assert "best_params.f16.msgpack.gz (" in capsys.readouterr().out
    half = serialization.msgpack_restore(
        gzip.decompress((path / "best_params.f16.msgpack.gz").read_bytes())
    )
    assert half["w"].dtype == np.float16 and np.all(half["w"] == 1)
    assert script.main([str(tmp_path), "--check", "--params"]) == 0
    kept = snapshot(path)
    assert script.main([str(tmp_path), "--params"]) == 0 and snapshot(path) == kept
    assert "0 of 1 run folders compacted" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no such directory"):
        script.main([str(tmp_path / "nowhere")])
