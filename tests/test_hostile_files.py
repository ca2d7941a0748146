"""The second hostile round: a folder a user points marl at may hold a crafted pickle, a
symlinked lock or files of their own where marl writes. Nothing in it runs, marl deletes only
what it wrote, and each reader ends in one line."""

from __future__ import annotations

import hashlib
import json
import os
import pickle

import pytest
from test_benchmark import _cli

from marl.run.campaigns import launch_records


class _Evil:
    """Unpickling this runs `touch MARKER`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _crafted_jobs(records, marker, job_id="4194303"):
    """A records folder whose launcher state names a dead local job and plants the pickled
    result submitit would leave, carrying a command."""
    jobs = records / ".jobs"
    (jobs / job_id).mkdir(parents=True)
    entry = {"launcher": "local", "job_id": job_id, "host": None, "submitted": "2026-12-01"}
    (jobs / "jobs.json").write_text(json.dumps({"combat/3m/qmix": entry}))
    (jobs / job_id / f"{job_id}_0_result.pkl").write_bytes(pickle.dumps(("success", _Evil(marker))))
    return jobs


def test_no_pickle_in_a_records_folder_runs(tmp_path):
    pytest.importorskip("submitit")
    marker = tmp_path / "MARKER"
    jobs = _crafted_jobs(tmp_path / "records", marker)
    assert launch_records.states(jobs) == {"combat/3m/qmix": "INTERRUPTED"}
    code, out, err = _cli(
        "benchmark", "status", "v1", "--algo", "qmix", "--records", str(tmp_path / "records"),
        "--only", "combat/3m/*",
    )  # fmt: skip
    assert code == 0, err
    assert "local 4194303 INTERRUPTED" in out
    assert not marker.exists()


def test_a_jobs_outcome_is_data_it_wrote(tmp_path):
    """What the launcher reads back of a finished job: a small JSON the job wrote, refused
    (UNKNOWN) where it is anything else."""
    folder = tmp_path / "jobs" / "4194302"
    folder.mkdir(parents=True)
    entry = {"launcher": "local", "job_id": "4194302", "host": None}
    path = folder / launch_records.OUTCOME.format(job_id="4194302")
    path.write_text(json.dumps({"outcome": "failed", "error": "ValueError: boom"}))
    assert launch_records.job_state(entry, tmp_path / "jobs") == "FAILED"
    path.write_text(json.dumps({"outcome": "success"}))
    assert launch_records.job_state(entry, tmp_path / "jobs") == "FINISHED"
    path.write_bytes(b"\x80\x04crafted")
    assert launch_records.job_state(entry, tmp_path / "jobs") == "UNKNOWN"
    path.write_text(" " * (launch_records.OUTCOME_BYTES + 10))
    assert launch_records.job_state(entry, tmp_path / "jobs") == "UNKNOWN"


def test_merge_refuses_an_output_inside_a_part(tmp_path):
    for name in ("run.part0-1", "run.part1-2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "meta.json").write_text("{}")
    inside = tmp_path / "run.part0-1" / "merged"
    code, out, err = _cli(
        "merge", str(tmp_path / "run.part0-1"), str(tmp_path / "run.part1-2"),
        "--out", str(inside), "--remove",
    )  # fmt: skip
    assert code == 2 and "inside or around the part" in err and "merged" not in out
    assert (tmp_path / "run.part0-1" / "meta.json").exists()
    assert (tmp_path / "run.part1-2" / "meta.json").exists()


def _users_files(root):
    """A user's files where marl writes: returns {path: bytes}."""
    mine = {}
    for rel in ("records/mine.json", "figures/mine.png", "tasks/mine.html", "notes.txt"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"the user's {rel}".encode())
        mine[path] = path.read_bytes()
    return mine


def test_writing_a_site_or_report_keeps_the_users_files(tmp_path):
    from test_protocol import write_run

    from marl.results.report import write_report
    from marl.results.site import write_site
    from marl.results.study import load_study
    from marl.results.written import MANIFEST

    write_run(tmp_path / "runs", algo="ippo", seed=1)
    study = load_study([tmp_path / "runs"])
    site, report = tmp_path / "site", tmp_path / "report"
    mine = {**_users_files(site), **_users_files(report)}
    outside = tmp_path / "outside.txt"
    outside.write_text("not marl's")
    for _ in range(2):
        write_site(study, site, reps=50)
        write_report(study, report, reps=50)
        # a crafted manifest names files outside the folder (with their true hashes)
        digest = hashlib.sha256(outside.read_bytes()).hexdigest()
        for root in (site, report / "figures"):
            files = {"../outside.txt": digest, str(outside): digest, "a/../../outside.txt": digest}
            (root / MANIFEST).write_text(json.dumps({"files": files}))
    assert all(path.read_bytes() == data for path, data in mine.items())
    assert outside.read_text() == "not marl's"


def test_a_lock_that_is_a_link_is_refused_and_nothing_is_written_through_it(tmp_path, capsys):
    """`resume=true` into a folder whose `.lock` links to a user's file: one line, the file
    unchanged."""
    from test_hostile import TINY

    from marl import cli

    victim = tmp_path / "precious.txt"
    victim.write_text("the user's data")
    run = tmp_path / "runs" / "particle" / "simple" / "ippo" / "r"
    run.mkdir(parents=True)
    (run / ".lock").symlink_to(victim)
    code = cli.main(["train", *TINY, f"out={tmp_path / 'runs'}", "name=r", "resume=true"])
    err = capsys.readouterr().err.strip().splitlines()
    assert victim.read_text() == "the user's data"
    assert code == 2 and err[-1].startswith("marl: error:") and "is a link" in err[-1]


def _gzip_bomb(path, size):
    """A gzip file of `size` zero bytes, written in pieces (a few hundred KB on disk)."""
    import gzip

    with gzip.open(path, "wb", compresslevel=9) as f:
        block = bytes(2**20)
        for _ in range(size // len(block)):
            f.write(block)


def test_a_gzip_bomb_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """A record.json.gz that inflates past the bound: one line naming it, within seconds."""
    import time

    from test_protocol import write_run

    from marl import cli
    from marl.results import files

    monkeypatch.setattr(files, "INFLATE_LIMIT", 8 * 2**20)  # the same rule, a smaller bomb
    run, *_ = write_run(tmp_path / "runs", algo="ippo", seed=1)
    (run / "record.json").unlink()
    _gzip_bomb(run / "record.json.gz", 64 * 2**20)
    start = time.monotonic()
    code = cli.main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("marl: error:") and "inflates past" in err[-1]
    assert time.monotonic() - start < 10


def _alias_bomb() -> str:
    """About 550 bytes of YAML whose aliases expand to 9**9 strings."""
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for k in range(1, 9):
        bomb += f"{chr(97 + k)}: &{chr(97 + k)} [" + ",".join([f"*{chr(96 + k)}"] * 9) + "]\n"
    return bomb


def test_a_yaml_alias_bomb_is_refused_in_one_line(tmp_path, capsys):
    """A 550-byte alias bomb in a run's config.yaml or in a --benchmark file: one line."""
    import time

    from marl import cli

    bomb = _alias_bomb()
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(bomb)
    (tmp_path / "bomb.yaml").write_text(bomb)
    for args in (["eval", str(run)], ["benchmark", "status", str(tmp_path / "bomb.yaml")]):
        start = time.monotonic()
        code = cli.main(args)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err[-1].startswith("marl: error:") and "aliases" in err[-1], args
        assert time.monotonic() - start < 10


@pytest.mark.parametrize("value", [1e6, -3, 2.5, "320", float("inf")])
def test_a_meta_cannot_size_a_readers_work(tmp_path, capsys, value):
    """`absolute_episodes=1e6` in a meta.json kept `marl report` busy for minutes (the random
    anchor's episodes): refused in one line naming the file and field."""
    import time

    from test_protocol import write_run

    from marl import cli

    run, *_ = write_run(tmp_path / "runs", env_id="particle/simple", algo="ippo", seed=1)
    meta = json.loads((run / "meta.json").read_text())
    meta["protocol"]["absolute_episodes"] = value
    meta.pop("anchors")  # a task whose records carry no anchors: the reader computes them
    (run / "meta.json").write_text(json.dumps(meta))
    start = time.monotonic()
    code = cli.main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "protocol/absolute_episodes" in err[-1], err
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("size", [-5, 0, 2.5, True])
def test_a_learner_declaring_a_bad_update_size_is_refused(tmp_path, capsys, monkeypatch, size):
    """A learner whose Train says steps_per_update=-5 produced a finished record."""
    import marl
    from marl import cli
    from marl.core import registry

    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))

    def bad(env, cfg=None, total_updates=None):
        train = marl.algorithm("ippo")(env, cfg, total_updates)
        return train._replace(steps_per_update=size)

    marl.register_algorithm("bad-size", bad)
    code = cli.main(["train", "env=particle/simple", "algo=bad-size", f"out={tmp_path}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "steps_per_update" in err[-1], err
    assert not list(tmp_path.rglob("record.json"))


def test_merged_parts_evaluated_at_other_steps_are_refused(tmp_path):
    from marl.run.campaigns import parts
    from marl.run.errors import UsageError

    def part(name, first, steps):
        d = tmp_path / name
        d.mkdir()
        runs = {"run_0": {f"step_{k}": {"step_count": s} for k, s in enumerate(steps)}}
        (d / "record.json").write_text(json.dumps({"particle": {"simple": {"ippo": runs}}}))
        return d, {"config": {"part": f"{first}:{first + 1}"}}

    (a, ma), (b, mb) = part("p0", 0, [0, 100, 200]), part("p1", 1, [0, 100, 250])
    with pytest.raises(UsageError, match="evaluated at other steps"):
        parts._record([a, b], [ma, mb])
    (c, mc) = part("p2", 1, [0, 100, 200])
    assert set(parts._record([a, c], [ma, mc])["particle"]["simple"]["ippo"]) == {"run_0", "run_1"}


def test_a_failing_benchmark_cell_is_one_line_unless_asked(tmp_path, monkeypatch):
    from test_benchmark import _definition

    from marl.run.train import execute

    def broken(run):
        raise RuntimeError("boom\nsecond line of a long message")

    monkeypatch.setattr(execute, "train_run", broken)
    monkeypatch.setenv("MARL_TRACEBACK", "0")  # the tests set it; a user does not
    path = str(_definition(tmp_path))
    code, out, err = _cli("benchmark", "run", path, "--tier", "cpu", "--only", "particle/simple/*")
    assert code == 1 and "Traceback" not in err + out
    assert "failed: particle/simple/ippo: RuntimeError: boom second line of a long message" in err
    monkeypatch.setenv("MARL_TRACEBACK", "1")
    code, out, err = _cli("benchmark", "run", path, "--tier", "cpu", "--only", "particle/simple/*")
    assert code == 1 and "Traceback" in err


@pytest.mark.parametrize("field", ["nan", "matrix"])
def test_a_crossplay_record_with_nan_ratings_is_refused(tmp_path, field):
    from pathlib import Path

    from marl.results.contests import read_contests

    root = Path(__file__).resolve().parent.parent / "results" / "crossplay"
    record = json.loads((root / "particle/adversary/crossplay.json").read_text())
    if field == "nan":
        record["ratings"][0]["elo"] = float("nan")
    else:
        record["matrix"]["score"][0][1] = 7.0
    (tmp_path / "crossplay.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="ratings|matrix"):
        read_contests([tmp_path])
    assert read_contests([root])  # the committed records pass


def test_a_flipped_bit_in_a_checkpoint_is_refused(tmp_path):
    """One flipped bit in a saved segment resumed to other parameters unnoticed: the segment
    carries a sha256 of its arrays, checked on restore."""
    import jax
    import numpy as np

    from marl.learning import checkpoint

    store = checkpoint.SegmentCheckpoints(tmp_path / "checkpoint")
    state = {"w": jax.numpy.arange(4096.0)}
    history = checkpoint.stack_history([5], [{"r": np.ones(2)}], [{"loss": np.zeros(2)}])
    store.save(1, state, {"w": np.ones(3, np.float32)}, history)
    chunks = [p for p in (tmp_path / "checkpoint" / "1").rglob("*") if p.is_file()]
    chunk = max(chunks, key=lambda p: p.stat().st_size)  # the big leaf's data
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x01
    chunk.write_bytes(bytes(data))
    like = {"w": np.zeros(4096, np.float32)}
    with pytest.raises(checkpoint.CheckpointError, match="sha256|cannot restore"):
        checkpoint.SegmentCheckpoints(tmp_path / "checkpoint").restore(
            1, like, {"w": np.zeros(3, np.float32)}
        )


def test_one_crafted_records_folder_runs_nothing_changes_nothing_and_each_reader_is_one_line(
    tmp_path, monkeypatch, capsys
):
    """Issue 95's acceptance: a records folder with a pickle, a symlinked lock, a YAML alias
    bomb and a gzip bomb. Every reader pointed at it: no code runs, no file outside marl's own
    outputs changes, one line within 10 s each."""
    import time

    from test_protocol import write_run

    from marl import cli
    from marl.results import files

    monkeypatch.setattr(files, "INFLATE_LIMIT", 8 * 2**20)  # the same rule, a smaller bomb
    monkeypatch.setenv("MARL_TRACEBACK", "0")
    records, marker, victim = tmp_path / "records", tmp_path / "MARKER", tmp_path / "victim.txt"
    victim.write_text("the user's")
    _crafted_jobs(records, marker)
    run, *_ = write_run(records / "runs", algo="ippo", seed=1)
    (run / "record.json").unlink()
    _gzip_bomb(run / "record.json.gz", 64 * 2**20)
    bomb = _alias_bomb()
    (run / "config.yaml").write_text(bomb)
    (run / ".lock").symlink_to(victim)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    readers = [
        ["report", str(records / "runs"), "--out", str(tmp_path / "out")],
        ["leaderboard", str(records / "runs"), "--out", str(tmp_path / "board")],
        ["eval", str(run)],
        ["benchmark", "status", "v1", "--algo", "qmix", "--records", str(records), "--only", "x/*"],
    ]
    for args in readers:
        start = time.monotonic()
        code = cli.main(args)
        out = capsys.readouterr()
        assert time.monotonic() - start < 10, args
        errors = [line for line in out.err.splitlines() if line.startswith("marl: error:")]
        assert code in (0, 2) and len(errors) == (code == 2), (args, out.err)
        assert "Traceback" not in out.err, args
    assert not marker.exists() and victim.read_text() == "the user's"
    after = {p: p.read_bytes() for p in before}
    assert after == before


def test_an_unwritable_records_folder_is_refused_before_the_work(tmp_path, monkeypatch):
    """`marl benchmark run --records DIR` into a folder it cannot make trained first and
    failed after; it is refused in one line before any cell starts."""
    from test_benchmark import _definition

    from marl.run.train import execute

    trained = []
    monkeypatch.setattr(execute, "train_run", lambda run: trained.append(run) or run.folder)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, out, err = _cli(
        "benchmark", "run", str(_definition(tmp_path)), "--records", str(blocker / "r"),
        "--tier", "cpu",
    )  # fmt: skip
    assert code == 2 and "--records" in err and "not a directory" in err and not trained
