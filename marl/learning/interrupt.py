"""Ctrl-C (SIGINT) as marl's command line takes it: one line, a clean stop, a resumable run.

Python turns SIGINT into `KeyboardInterrupt` wherever the main thread happens to be: inside an
import (a traceback), inside JAX's garbage-collection callback (where it is printed as
"Exception ignored" and dropped: the run trains on to its end), or inside JAX's dispatch (the
process can crash on its way out). `install` replaces that handler for the command line: the
first Ctrl-C inside `deferred()` (the run loop: start-up, compile, segments) only sets a flag,
says so in one line and lets the loop stop at its next safe point (`check`: after the compile,
after each segment's checkpoint), from where the run resumes with `resume=true`; outside
`deferred()`, and at a second Ctrl-C, it raises `KeyboardInterrupt` at once, flag set, so a
`KeyboardInterrupt` a library swallowed is still raised at the next `check`.

A library user who never calls `install` keeps Python's own handler; `check` is then a no-op.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_state = {"installed": False, "pending": False, "deferring": 0}


def install() -> None:
    """Take SIGINT for marl (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return  # a background job of a non-interactive shell: Ctrl-C is not this process's
    signal.signal(signal.SIGINT, _handler)
    _state.update(installed=True, pending=False, deferring=0)


def pending() -> bool:
    """Whether Ctrl-C was pressed since `install`."""
    return bool(_state["pending"])


def check() -> None:
    """Raise `KeyboardInterrupt` if Ctrl-C was pressed (a safe point of the run loop)."""
    if _state["pending"]:
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """Within: a first Ctrl-C waits for the next `check` instead of raising where it lands."""
    _state["deferring"] += 1
    try:
        yield
    finally:
        _state["deferring"] -= 1


def _handler(_sig: int, _frame: FrameType | None) -> None:
    if _state["deferring"] and not _state["pending"]:
        _state["pending"] = True
        print(
            "marl: stopping at the next safe point (after the compile, or once the current "
            "segment is saved); Ctrl-C again stops at once",
            file=sys.stderr,
            flush=True,
        )
        return
    _state["pending"] = True
    raise KeyboardInterrupt
