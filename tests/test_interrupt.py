"""Ctrl-C anywhere in `marl train`: one line, exit code 130, the run resumable from its last
saved segment (`marl.learning.interrupt`). Each test fails on the code before it: a start-up
Ctrl-C was a traceback, one that landed in JAX's garbage-collection callback was dropped (the
run trained to its end), and one inside a segment's bookkeeping lost that segment."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path

import pytest
from test_hostile import TINY

from marl import cli
from marl.learning import interrupt, runner


@pytest.fixture
def sigint():
    """Python's own SIGINT handler for the test (a worker may inherit it ignored), restored
    after; marl's `install` then takes it as the command line does."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.integration
def test_ctrl_c_at_start_up_is_one_line(sigint, capsys, monkeypatch):
    def pressed():
        _ctrl_c()  # lands while the command starts (here: configuring XLA)

    monkeypatch.setattr(cli, "configure_xla", pressed)
    assert cli.main(["train", *TINY]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["marl: interrupted"]


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_a_library_swallows_still_stops_the_run(sigint, tmp_path, capsys, monkeypatch):
    def swallowing(phase, _info):  # JAX's gc callback is one: its exceptions are "ignored"
        if phase == "stop":
            gc.callbacks.remove(swallowing)
            _ctrl_c()

    def pressed_in_a_gc_callback():
        gc.callbacks.append(swallowing)
        gc.collect()  # the KeyboardInterrupt is dropped where it lands

    monkeypatch.setattr(cli, "configure_xla", pressed_in_a_gc_callback)
    assert cli.main(["train", *TINY, f"out={tmp_path}", "name=r"]) == 130
    assert "interrupted; the evaluations so far are in" in capsys.readouterr().err
    (folder,) = Path(tmp_path).glob("*/*/*/r")
    assert not (folder / "record.json").exists()  # it did not train to its end


@pytest.mark.integration
def test_ctrl_c_inside_the_run_loop_stops_after_the_segment_is_saved(
    sigint, tmp_path, capsys, monkeypatch
):
    record = runner._Loop._record

    def record_then_ctrl_c(self, steps, evals, metrics=None):
        record(self, steps, evals, metrics)
        if steps and not interrupt.pending():  # segment 1, before its checkpoint
            _ctrl_c()

    monkeypatch.setattr(runner._Loop, "_record", record_then_ctrl_c)
    args = ["train", *TINY, f"out={tmp_path}", "name=r"]
    assert cli.main(args) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "stopping at the next safe point" in err
    (folder,) = Path(tmp_path).glob("*/*/*/r")
    saved = sorted(p.name for p in (folder / "checkpoint").iterdir() if p.name.isdigit())
    assert saved == ["1"], saved  # the segment it was pressed in, kept
    assert not (folder / "record.json").exists()

    monkeypatch.setattr(runner._Loop, "_record", record)
    assert cli.main([*args, "resume=true"]) == 0
    assert (folder / "record.json").exists()
