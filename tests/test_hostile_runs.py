"""Hostile conditions around a run: a second writer of one run folder, a killed writer's leftovers,
a final write that fails, a full or read-only disk, corrupt files, impossible sizes, plugins that
misbehave. Each ends in one `marl: error:` line and a non-zero exit; nothing is trained twice,
and nothing is presented as complete (a run folder is complete once its last write, record.json,
is there)."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from test_hostile import TINY, _one_error
from test_protocol import write_run

from marl import cli
from marl.core import registry
from marl.learning.training import RunResult
from marl.results.protocol import load, skip_reason
from marl.results.runfolder import read_run
from marl.run.errors import ConfigError, UsageError
from marl.run.folder import LOCK, FolderLock, claiming, writer
from marl.run.train.compose import compose
from marl.run.train.resolve import resolve


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """TINY resolved once (`named(name)`: the run under another name), its runs under `out`."""
    out = tmp_path_factory.mktemp("runs")
    run = resolve(compose([*TINY, f"out={out}"]))
    return out, run


def named(tiny, name: str, resume: bool = False):
    return dataclasses.replace(tiny[1], name=name, resume=resume)


def killed(run) -> Path:
    """A run claimed, then stopped before training (its process ended: the lock let go)."""
    stopped = claiming.claim(run)
    stopped.close()
    return stopped.path


def _hold(folder: Path) -> subprocess.Popen:
    """Another process that holds `folder`'s lock until killed."""
    code = (
        "import sys, time; from marl.run.folder.lock import FolderLock; "
        "FolderLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.integration
def test_a_second_writer_of_a_run_folder_meets_one_line(tiny, capsys):
    """Two concurrent resume=true of one run: the second is refused in one line naming the
    folder and the holder, and trains nothing; once the holder is gone the folder is free."""
    out, _ = tiny
    folder = killed(named(tiny, "busy"))
    holder = _hold(folder)
    try:
        args = ["train", *TINY, f"out={out}", "name=busy", "resume=true"]
        assert cli.main(args) == 2
        err = _one_error(capsys)
        assert f"{folder} is in use by another marl process (pid {holder.pid} on host" in err
        assert "one writer per run folder" in err
        assert not (folder / "metrics.jsonl").exists()
        with pytest.raises(UsageError, match="in use by another marl process"):
            claiming.relaunch(named(tiny, "busy"))  # a relaunched sweep never moves it aside
    finally:
        holder.kill()
        holder.wait()
    again = claiming.claim(named(tiny, "busy", resume=True))  # the OS let go of the dead one's
    assert again.resumed and again.path == folder
    with pytest.raises(UsageError, match=f"pid {os.getpid()} on host"):  # in one process too
        claiming.claim(named(tiny, "busy", resume=True))
    again.close()
    assert not (folder / LOCK).exists()


def test_the_lock_survives_its_file_being_removed_by_a_releasing_holder(tmp_path):
    first = FolderLock(tmp_path)
    first.acquire()
    first.release()
    second, third = FolderLock(tmp_path), FolderLock(tmp_path)
    second.acquire()
    with pytest.raises(RuntimeError, match="in use"):
        third.acquire()
    second.release()
    third.acquire()
    assert f"pid {os.getpid()}" in (tmp_path / LOCK).read_text()
    third.release()


@pytest.mark.integration
def test_a_killed_writers_temporary_files_are_removed_on_resume(tiny):
    folder = killed(named(tiny, "litter"))
    litter = [folder / ".record.partial.json.k1l2.tmp", folder / ".meta.json.x9.tmp"]
    for path in litter:
        path.write_text('{"half')
    (folder / "notes.tmp").write_text("mine")  # not one of marl's temporaries
    resumed = claiming.claim(named(tiny, "litter", resume=True))
    resumed.close()
    assert not any(path.exists() for path in litter)
    assert (folder / "notes.tmp").exists()


@pytest.mark.integration
def test_a_claim_reads_its_folder_once_and_under_its_lock(tiny, monkeypatch):
    """resume=true reads what the folder holds once, holding its lock: what it acts on is what
    the folder holds, since no other writer can finish or change it after that read."""
    folder = killed(named(tiny, "once"))
    read, reads = claiming.read_meta, []

    def reading(where):
        reads.append((Path(where), (Path(where) / LOCK).exists()))
        return read(where)

    monkeypatch.setattr(claiming, "read_meta", reading)
    again = claiming.claim(named(tiny, "once", resume=True))
    again.close()
    assert again.resumed and reads == [(folder, True)]


def test_a_run_finished_by_another_writer_after_the_search_is_not_trained_again(
    tmp_path, monkeypatch
):
    """resume=true without name= finds the newest unfinished run, then locks it; a writer that
    finished it in between leaves nothing to resume: one line, and the run is left as it is."""
    run = resolve(compose([*TINY, f"out={tmp_path}", "name=race"]))
    folder = killed(run)
    search = claiming.unfinished_run

    def finished_meanwhile(planned):
        found = search(planned)
        meta = json.loads((folder / "meta.json").read_text())
        (folder / "meta.json").write_text(json.dumps({**meta, "finished": True}))
        (folder / "record.json").write_text("{}")  # the other writer's last write
        return found

    monkeypatch.setattr(claiming, "unfinished_run", finished_meanwhile)
    with pytest.raises(UsageError, match=f"{folder} was finished by another process"):
        claiming.claim(dataclasses.replace(run, name=None, resume=True))
    assert (folder / "record.json").read_text() == "{}" and not (folder / LOCK).exists()


def _result(seeds: int = 1) -> RunResult:
    evals = {"return": np.zeros((seeds, 2)), "length": np.full((seeds, 2), 25.0)}
    return RunResult(steps=[0], evaluations=[evals], best_step=np.zeros(seeds, int))


@pytest.mark.integration
def test_a_run_that_fails_in_its_final_write_never_looks_complete(tiny, capsys, monkeypatch):
    """The disk fills as record.json, the last write, is written: meta.json says finished,
    but without record.json no reader takes the run as complete; resume=true finishes it."""
    out, _ = tiny
    run_dir = claiming.claim(named(tiny, "full"))
    run_dir.on_evaluation(0, _result().evaluations[0])
    assert not (run_dir.path / "record.json").exists()  # the record so far is partial
    assert (run_dir.path / writer.PARTIAL).exists()
    write = writer.write_json

    def full(path, *args, **kwargs):
        if Path(path).name == "record.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        write(path, *args, **kwargs)

    monkeypatch.setattr(writer, "write_json", full)
    with pytest.raises(OSError):
        run_dir.finish(_result())
    run_dir.close()
    folder = run_dir.path
    assert json.loads((folder / "meta.json").read_text())["finished"]
    assert not (folder / "record.json").exists()
    skipped: list[Path] = []
    assert load([out], skipped) == [] and folder in skipped
    assert "incomplete run (its final write did not finish" in skip_reason(folder)
    with pytest.raises(ValueError, match="incomplete run"):
        read_run(folder)
    assert cli.main(["report", str(folder.parent), "--out", str(out / "rep")]) == 2
    assert "no finished run records found; unfinished: " in _one_error(capsys)
    again = claiming.claim(named(tiny, "full", resume=True))  # finished again from its checkpoint
    assert again.resumed and again.path == folder
    again.close()


def _disk_full(path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


@pytest.mark.integration
def test_a_full_disk_is_one_line_and_the_run_is_not_complete(tiny, capsys, monkeypatch):
    out, _ = tiny

    def start(self, checkpoints=True):
        raise _disk_full(self.path / "config.yaml")

    monkeypatch.setattr(writer.RunDir, "start", start)
    assert cli.main(["train", *TINY, f"out={out}", "name=nospace"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    folder = out / "particle/simple/ippo/nospace"
    assert err.strip() == f"marl: error: No space left on device: {folder}/config.yaml (ENOSPC)"
    assert not (folder / "record.json").exists() and not (folder / LOCK).exists()


@pytest.mark.integration
def test_a_full_disk_under_a_report_is_one_line(tmp_path, capsys, monkeypatch):
    from marl.results import report

    write_run(tmp_path / "recs", root_seed=1)
    monkeypatch.setattr(report, "atomic_write", lambda path, data: (_ for _ in ()).throw(
        _disk_full(path)))  # fmt: skip
    assert cli.main(["report", str(tmp_path / "recs"), "--out", str(tmp_path / "rep")]) == 1
    assert "No space left on device: " in _one_error(capsys)


@pytest.mark.integration
def test_a_read_only_output_is_one_line(tiny, tmp_path, capsys, monkeypatch):
    """Root ignores chmod, so the refusal is simulated where the OS would raise it."""
    out, _ = tiny

    def denied(parent, name, now):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(parent))

    monkeypatch.setattr(claiming, "_mkdir", denied)
    assert cli.main(["train", *TINY, f"out={out}", "name=ro"]) == 2
    assert "cannot create the run directory under" in _one_error(capsys)
    write_run(tmp_path / "recs", root_seed=1)
    (tmp_path / "file").write_text("")
    rep = ["report", str(tmp_path / "recs"), "--out"]
    assert cli.main([*rep, str(tmp_path / "file" / "sub")]) == 2
    assert "cannot be created: " in _one_error(capsys)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # a read-only file system
    assert cli.main([*rep, str(tmp_path / "new" / "rep")]) == 2
    err = _one_error(capsys)
    assert f"cannot be created in {tmp_path}" in err and "read-only" in err
    assert not (tmp_path / "new").exists()


def _record_folder(tmp_path, name: str) -> Path:
    path, *_ = write_run(tmp_path / name, root_seed=1)
    return path


@pytest.mark.integration
@pytest.mark.parametrize(
    "file, content, says",
    [
        ("record.json", bytes(range(256)) * 4, "record.json: cannot read JSON: 'utf-8' codec"),
        ("record.json", b"[" * 100_000 + b"]" * 100_000, "record.json: cannot read JSON: nested"),
        ("meta.json", b"\x89PNG\r\n\x1a\n\x00", "meta.json: cannot read JSON"),
        ("meta.json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "meta.json: cannot read JSON"),
    ],
)
def test_a_binary_or_deeply_nested_record_is_one_line(tmp_path, capsys, file, content, says):
    path = _record_folder(tmp_path, "recs")
    (path / file).write_bytes(content)
    assert cli.main(["report", str(tmp_path / "recs"), "--out", str(tmp_path / "rep")]) == 2
    assert says in _one_error(capsys)
    assert not (tmp_path / "rep").exists()


def _saved_folder(tiny, name: str) -> Path:
    """A run folder as `marl eval` reads it: TINY's config.yaml and parameters."""
    folder = killed(named(tiny, name))
    (folder / "params.msgpack").write_bytes(b"\x82\xa6params\x81")
    (folder / "best_params.msgpack").write_bytes(b"\x82\xa6params\x81")
    return folder


@pytest.mark.integration
@pytest.mark.parametrize(
    "file, content, says",
    [
        ("best_params.msgpack", None, "best_params.msgpack: not a parameters file (truncated?)"),
        ("config.yaml", b"\xff\xfe\x00binary", "config.yaml: not YAML"),
        ("config.yaml", b"a: " + b"[" * 20_000, "config.yaml: not YAML"),
    ],
)
def test_a_corrupt_run_folder_is_one_line(tiny, capsys, file, content, says):
    folder = _saved_folder(tiny, f"corrupt-{file}-{len(content or b'')}")
    if content is not None:
        (folder / file).write_bytes(content)
    assert cli.main(["eval", str(folder)]) == 2
    assert says in _one_error(capsys)


@pytest.mark.integration
def test_a_truncated_checkpoint_is_one_line(tiny, capsys):
    """resume=true from a segment whose files were cut off: one line naming it, exit 2."""
    import jax.numpy as jnp

    out, _ = tiny
    held = claiming.claim(named(tiny, "cut"))
    history = {"steps": np.zeros(1, np.int32)}
    held.checkpoints.save(1, {"w": jnp.ones(3)}, {"w": jnp.ones(3)}, history)
    held.close()
    saved = held.checkpoint_dir / "1"
    for path in saved.rglob("*"):
        if path.is_file():
            path.write_bytes(path.read_bytes()[:7])
    assert cli.main(["train", *TINY, f"out={out}", "name=cut", "resume=true"]) == 2
    err = _one_error(capsys)
    assert f"{saved}: cannot restore this checkpoint" in err and "train under another" in err
    assert not (held.path / "record.json").exists() and not (held.path / LOCK).exists()


@pytest.mark.integration
def test_impossible_sizes_are_one_line(tiny, capsys, monkeypatch):
    out, _ = tiny
    assert cli.main(["train", *TINY, f"out={out}", "budget=1e30"]) == 2
    assert "budget must be at most 1e+12, got 1e+30" in _one_error(capsys)
    assert cli.main(["train", *TINY, f"out={out}", "name=many", "seeds=1e9"]) == 1
    err = _one_error(capsys)
    assert "out of memory (MemoryError: the training state of 1000000000 seed(s) needs" in err
    assert not (out / "particle/simple/ippo/many/record.json").exists()
    args = ["train", *TINY, f"out={out}", "name=episodes", "protocol.eval_episodes=1e10"]
    assert cli.main(args) == 1
    assert "out of memory (MemoryError: evaluating 10000000000 episodes" in _one_error(capsys)
    import marl.learning.runner as training

    def exhausted(*args, **kwargs):
        from jax.errors import JaxRuntimeError

        raise JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 1.2TiB.\nmore")

    monkeypatch.setattr(training, "run", exhausted)
    assert cli.main(["train", *TINY, f"out={out}", "name=huge", "seeds=1000000"]) == 1
    err = _one_error(capsys)
    assert "out of memory (JaxRuntimeError: RESOURCE_EXHAUSTED" in err and "fewer seeds=" in err
    folder = out / "particle/simple/ippo/huge"
    assert not (folder / "record.json").exists() and not (folder / LOCK).exists()


@pytest.mark.integration
def test_a_name_or_label_with_a_newline_is_refused(tiny):
    cfg = compose([*TINY, "name=x"])
    for key in ("name", "label"):
        bad = OmegaConf.merge(cfg, {key: "two\nlines"})
        with pytest.raises(ConfigError, match=f"{key} must be printable"):
            resolve(bad)
    run_dir = claiming.claim(dataclasses.replace(named(tiny, "cmd"), command=("label=a\nb",)))
    run_dir.close()
    text = (run_dir.path / "config.yaml").read_text()
    assert text.splitlines()[0].endswith("command: marl train 'label=a\\nb'")


PLUGIN = """
import marl
if "{what}" == "raises":
    raise RuntimeError("the plugin's import failed")

def make_env(**kwargs):
    return 42

def make_train(env, cfg=None, total_updates=None):
    return {{"init": None}}
"""


@pytest.mark.integration
@pytest.mark.parametrize(
    "what, args, says",
    [
        ("raises", ["env=bad/env"], "environment 'bad/env' is registered as badpkg_raises.mod:"
         "make_env, which cannot be imported (RuntimeError: the plugin's import failed)"),
        ("wrong", ["env=bad/env"], "bad/env: its constructor returned int, not an environment"),
        ("wrong", ["env=particle/simple", "algo=bad-learner"],
         "algo bad-learner: its make_train returned dict, not a marl.core.learner.Train"),
        ("raises", ["env=particle/simple", "algo=bad-learner"],
         "learner 'bad-learner' is registered as badpkg_raises.mod:make_train, which cannot"),
    ],
)  # fmt: skip
def test_a_plugin_that_raises_or_returns_the_wrong_object_is_one_line(
    tmp_path, capsys, monkeypatch, what, args, says
):
    pkg = tmp_path / f"badpkg_{what}"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(textwrap.dedent(PLUGIN.format(what=what)))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_ENVS", dict(registry._ENVS))
    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))
    registry.register("bad/env", f"badpkg_{what}.mod:make_env")
    registry.register_algorithm("bad-learner", f"badpkg_{what}.mod:make_train")
    extra = [a for a in TINY if not a.startswith(("env=", "algo="))]
    assert cli.main(["train", *extra, *args, f"out={tmp_path / 'runs'}"]) == 2
    assert says in _one_error(capsys)
    assert not (tmp_path / "runs").exists()
    sys.modules.pop(f"badpkg_{what}.mod", None)


@pytest.mark.integration
def test_an_unexpected_failure_is_one_line(capsys, monkeypatch):
    from marl.run.train import catalog

    def boom(family=None):
        raise KeyError("boom")

    monkeypatch.setattr(catalog, "env_rows", boom)
    monkeypatch.delenv("MARL_TRACEBACK")
    assert cli.main(["list"]) == 1
    assert _one_error(capsys) == (
        "marl: error: unexpected KeyError: 'boom' (MARL_TRACEBACK=1 shows where)"
    )
    monkeypatch.setenv("MARL_TRACEBACK", "1")
    with pytest.raises(KeyError):
        cli.main(["list"])


def test_a_state_larger_than_the_devices_memory_is_refused_from_its_shapes():
    import jax

    from marl.learning.memory import capacity, check_fits, tree_bytes

    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), 10**6))
    huge = {"buffer": jax.ShapeDtypeStruct((10**9, 10**6), np.float32), "keys": keys}
    assert tree_bytes(huge) == 4 * 10**15 + 8 * 10**6
    free, where = capacity(jax.local_devices()[:1])
    assert free is None or free > 0
    says = rf"^the state needs 3.6 PiB, more than the .* on {where}"
    with pytest.raises(MemoryError, match=says):
        check_fits("the state", huge, jax.local_devices()[:1])
    check_fits("the state", {"w": jax.ShapeDtypeStruct((4,), np.float32)}, jax.local_devices())


@pytest.mark.integration
def test_a_collective_that_loses_its_peer_is_one_line(tiny, capsys, monkeypatch):
    """What the survivor of a multi-host run meets mid-segment when a peer's process dies."""
    import marl.learning.runner as training

    def reset(*args, **kwargs):
        from jax.errors import JaxRuntimeError

        raise JaxRuntimeError(
            "INTERNAL: Error dispatching computation: Gloo all-reduce failed: [pair.cc:538] Read "
            "error [127.0.0.1]:22931: Connection reset by peer\nmore"
        )

    monkeypatch.setattr(training, "run", reset)
    out, _ = tiny
    assert cli.main(["train", *TINY, f"out={out}", "name=peer"]) == 1
    err = _one_error(capsys)
    assert "distributed=true: a collective failed, a process of the run is gone (INTERNAL" in err


def test_a_checkpoint_that_fills_the_disk_is_one_oserror(tmp_path, monkeypatch):
    """orbax's failure (tensorstore's RESOURCE_EXHAUSTED, its threads' own reports held back)
    becomes one OSError(ENOSPC) naming the checkpoint folder; the CLI prints it in one line."""
    import logging
    import warnings

    import jax.numpy as jnp

    from marl.learning.checkpoint import SegmentCheckpoints

    checkpoints = SegmentCheckpoints(tmp_path / "checkpoint")

    def full(*args, **kwargs):
        raise ValueError(
            'RESOURCE_EXHAUSTED: Error writing local file "x": No space left on device '
            "[os_error_code='28']"
        )

    monkeypatch.setattr(checkpoints._manager, "save", full)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    level = logging.getLogger("asyncio").level
    with warnings.catch_warnings(), pytest.raises(OSError) as e:
        checkpoints.save(1, {"w": jnp.ones(2)}, {"w": jnp.ones(2)}, {"steps": np.zeros(1)})
    logging.getLogger("asyncio").setLevel(level)
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(checkpoints.directory)
    line, code = cli.failure_line(e.value)
    assert code == 1 and line == (
        f"no space left on device for the checkpoint of segment 1: {checkpoints.directory} (ENOSPC)"
    )
