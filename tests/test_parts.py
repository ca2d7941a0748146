"""A run split into parts (`part=a:b`, `marl benchmark run --part`) and merged (`marl merge`)
holds the same seeds as the run trained at once."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml
from test_benchmark import _cli

from marl.results.protocol import load
from marl.run.campaigns import parts
from marl.run.errors import UsageError


def _cell(records):
    """A benchmark of one cell: IPPO on particle/simple, 2 seeds, two evaluations, one update
    (IPPO's 16 x 128 steps): the parts' one-seed programs round floats otherwise than the
    whole run's two-seed one, and over tens of updates that can grow past the tolerance (with
    the shared tiny run's 32 updates, seed 0's curve parted after 20)."""
    protocol = ("num_evaluations=2", "absolute_episodes=4", "eval_episodes=2")
    evals = [f"protocol.{k}" for k in protocol]
    family = {"budget": 2e3, "seeds": 2, "tasks": ["particle/simple"], "algos": ["ippo"]}
    family["overrides"] = {"all": evals}
    definition = {"name": "tiny", "records": str(records), "protocol": "default"}
    return yaml.safe_dump({**definition, "tiers": {"cpu": {"particle": family}}})


def _definition(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(_cell(tmp_path / name))
    return str(path)


def _run(tmp_path, name):
    return tmp_path / name / "particle" / "simple" / "ippo" / "tiny"


def _json(path):
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The cell trained at once, and in two parts (seed 1, then seed 0) merged by the benchmark."""
    tmp = tmp_path_factory.mktemp("parts")
    whole, split = _definition(tmp, "whole"), _definition(tmp, "split")
    assert _cli("benchmark", "run", whole)[0] == 0
    code, out, _ = _cli("benchmark", "run", split, "--part", "1:2")
    assert code == 0 and (_run(tmp, "split").parent / "tiny.part1-2").is_dir()
    status = _cli("benchmark", "status", split)[1]
    assert "missing (parts 1:2 of 2)" in status
    skipped = []
    assert load([tmp / "split"], skipped) == [] and [p.name for p in skipped] == ["tiny.part1-2"]
    shutil.copytree(tmp / "split", tmp / "kept")  # for --keep-parts, with seed 1 trained
    code, out, _ = _cli("benchmark", "run", split, "--part", "0:1")
    assert code == 0 and "merged tiny.part0-1, tiny.part1-2" in out
    return _run(tmp, "whole"), _run(tmp, "split")


@pytest.mark.integration
def test_merged_parts_hold_the_seeds_of_the_run_trained_at_once(trained):
    whole, merged = trained
    assert not list(merged.parent.glob("tiny.part*"))  # the parts' folders are gone
    a, b = _json(whole / "final.json"), _json(merged / "final.json")
    assert b["seeds"] == 2 and len(b["best_step"]) == 2
    for key in ("final", "absolute"):
        for metric, values in a[key].items():
            np.testing.assert_allclose(b[key][metric], values, rtol=1e-4, atol=1e-5)
    assert b["absolute_mean"] == pytest.approx(a["absolute_mean"], rel=1e-4)
    ra, rb = _json(whole / "record.json"), _json(merged / "record.json")
    runs_a = ra["particle"]["simple"]["ippo"]
    runs_b = rb["particle"]["simple"]["ippo"]
    assert sorted(runs_b) == sorted(runs_a) == ["run_0", "run_1"]
    for run, steps in runs_a.items():
        for step, values in steps.items():
            for metric, v in values.items():
                np.testing.assert_allclose(runs_b[run][step][metric], v, rtol=1e-4, atol=1e-5)
    lines_a = (whole / "metrics.jsonl").read_text().splitlines()
    lines_b = (merged / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines_b] == [json.loads(x)["step"] for x in lines_a]
    eval_a, eval_b = json.loads(lines_a[-1])["eval"], json.loads(lines_b[-1])["eval"]
    np.testing.assert_allclose(eval_b["return"], eval_a["return"], rtol=1e-4, atol=1e-5)
    meta = _json(merged / "meta.json")
    assert meta["finished"] and meta["seeds"] == 2 and "part" not in meta["config"]
    assert [p["part"] for p in meta["parts"]] == ["0:1", "1:2"]
    assert meta["wall_time"] == pytest.approx(sum(p["wall_time"] for p in meta["parts"]))


@pytest.mark.integration
def test_the_merged_run_is_one_record_of_two_seeds(trained):
    _, merged = trained
    (record,) = load([merged.parent])
    assert len(record.runs) == 2


@pytest.mark.integration
def test_keep_parts_leaves_the_parts_beside_the_merged_run(trained):
    """`--keep-parts` merges the cell as its last part lands and keeps the parts' folders (a
    part staged elsewhere is then not the only copy of its files); a later run leaves the
    merged cell alone instead of merging it again."""
    tmp = trained[0].parents[4]
    kept = _definition(tmp, "kept")  # seed 1's part, copied from the split run
    code, out, _ = _cli("benchmark", "run", kept, "--part", "0:1", "--keep-parts")
    assert code == 0 and "merged tiny.part0-1, tiny.part1-2" in out
    run = _run(tmp, "kept")
    assert sorted(p.name for p in run.parent.glob("tiny.part*")) == [
        "tiny.part0-1",
        "tiny.part1-2",
    ]
    assert _json(run / "meta.json")["seeds"] == 2
    code, out, err = _cli("benchmark", "run", kept, "--part", "0:1", "--keep-parts")
    assert code == 0 and "merged" not in out and "do not merge" not in out + err
    assert _cli("benchmark", "status", kept, "--keep-parts")[0] != 0  # only with run


def test_parts_that_do_not_tile_the_seeds_are_refused(tmp_path):
    def part(name, span, seeds=3):
        d = tmp_path / name
        d.mkdir()
        cfg = {"seeds": seeds, "part": span, "protocol": {"metric": "return"}}
        (d / "meta.json").write_text(json.dumps({"finished": True, "config": cfg}))
        (d / "record.json").write_text("{}")  # its last write: the part is complete
        return d

    a, b, c = part("a", "0:1"), part("b", "2:3"), part("c", "0:2")
    (part("x", "1:2") / "record.json").unlink()  # its final write failed
    with pytest.raises(UsageError, match="x: unfinished"):
        parts.check_parts([a, tmp_path / "x", b])
    with pytest.raises(UsageError, match="seeds 1..1 missing"):
        parts.check_parts([a, b])
    with pytest.raises(UsageError, match="overlap"):
        parts.check_parts([a, c, b])
    with pytest.raises(UsageError, match="the rest is missing"):
        parts.check_parts([c])
    elsewhere = part("f", "2:3")  # written into another record folder: the same run
    meta = json.loads((elsewhere / "meta.json").read_text())
    meta["config"]["out"] = "/another/machine/records"
    (elsewhere / "meta.json").write_text(json.dumps(meta))
    assert parts.check_parts([elsewhere, c])[2] == 3
    other = part("d", "2:3", seeds=4)
    with pytest.raises(UsageError, match=r"another config .* \(seeds differ\)"):
        parts.check_parts([c, other])
    last = part("e", "2:3")
    for d, version in ((c, "1"), (last, "2")):
        meta = json.loads((d / "meta.json").read_text())
        meta["env_version"] = {"family": "combat", "version": version}
        (d / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(UsageError, match="env's behaviour changed between the parts"):
        parts.check_parts([c, last])


def test_a_part_outside_the_seeds_is_refused_in_one_line():
    from marl.run.errors import ConfigError
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    with pytest.raises(ConfigError, match="part must be 'a:b' with 0 <= a < b <= seeds"):
        resolve(compose(["seeds=2", "part=1:3", "budget=1e3"]))


@pytest.mark.integration
def test_parts_compacted_for_the_repository_merge_as_they_are(tmp_path):
    """Parts staged in the repository are compacted (records gzipped, `compact_run`) and keep
    their final parameters gzipped (`params.msgpack.gz`): merged, they give the run the
    uncompacted parts give, parameters included. The transfer targets' episodes are merged
    too, seed by seed, and match the run trained at once (the merge dropped them before)."""
    import gzip
    import shutil

    import jax
    from flax import serialization

    from marl.run.saved.compact import compact_run

    train = ["env=particle/simple", "algo=ippo", "seeds=2", "budget=2e3", f"out={tmp_path}"]
    train += ["protocol.num_evaluations=2", "protocol.absolute_episodes=4"]
    train += ["protocol.eval_episodes=2"]
    train += ["protocol.transfer=[{name:short,id:'particle/simple',kwargs:{episode_limit:7}}]"]
    assert _cli("train", *train, "name=whole")[0] == 0
    for span in ("0:1", "1:2"):
        name = "r.part" + span.replace(":", "-")
        assert _cli("train", *train, f"name={name}", f"part={span}")[0] == 0
    runs = tmp_path / "particle" / "simple" / "ippo"
    plain = [runs / "r.part0-1", runs / "r.part1-2"]
    staged = []
    for d in plain:
        copy = tmp_path / "staged" / d.name
        shutil.copytree(d, copy)
        for f in copy.glob("*.msgpack"):
            if f.name == "params.msgpack":
                (copy / "params.msgpack.gz").write_bytes(gzip.compress(f.read_bytes()))
            f.unlink()
        assert compact_run(copy)  # records and transfer.json gzipped, training metrics moved
        staged.append(copy)
    a = parts.merge(plain, tmp_path / "merged-plain")
    b = parts.merge(staged, tmp_path / "merged-staged")
    assert _json(b / "final.json") == _json(a / "final.json")
    assert _json(b / "record.json") == _json(a / "record.json")
    assert (b / "metrics.jsonl").read_text() == (a / "metrics.jsonl").read_text()
    pa = serialization.msgpack_restore((a / "params.msgpack").read_bytes())
    pb = serialization.msgpack_restore((b / "params.msgpack").read_bytes())
    for x, y in zip(jax.tree.leaves(pa), jax.tree.leaves(pb), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not (b / "best_params.msgpack").exists()  # not every part kept them
    whole, merged = _json(runs / "whole" / "transfer.json"), _json(a / "transfer.json")
    assert _json(b / "transfer.json") == merged
    assert merged["short"]["episodes"] == whole["short"]["episodes"] == 4
    for metric, values in whole["short"]["metrics"].items():
        assert np.shape(merged["short"]["metrics"][metric]) == (2, 4)
        np.testing.assert_allclose(merged["short"]["metrics"][metric], values, rtol=1e-4)
    shutil.rmtree(a)
    (staged[1] / "transfer.json.gz").unlink()
    with pytest.raises(UsageError, match=r"r.part1-2: no transfer.json, which the other parts"):
        parts.merge(staged, tmp_path / "merged-refused")
