"""A multi-host process under a supervisor: `marl train distributed=true` (and `python -m
marl.app ... distributed=true`) runs the real work in a child process and relays its output.

JAX ends a process itself when its distributed service reports an error (the coordinator gone,
a peer's heartbeats missed): a fatal C++ log and a stack trace, then SIGABRT, with no Python
code in between. The supervisor turns that into marl's one line: it passes the child's stderr
through, swallows the runtime's dying words (from the service's error on), and when the child
ends without a `marl: error:` line of its own, says in one line what ended it, exit code 1. The
child's own one-line errors (and `runtime.Watchdog`'s, when a peer goes silent) pass as they
are, with the child's exit code.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

SUPERVISED = "MARL_SUPERVISED"  # set in the child: it does the work, nothing supervises it
# a C++ log line of the runtime (absl / glog): "F1205 02:33:08.024083   19160 client.h:80] ..."
_NATIVE_LOG = re.compile(r"^([EFWI])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\] ?(.*)")
HOLD_S = 2.0  # the runtime's log lines are held this long: a dying process's are never shown


def supervised() -> bool:
    """Whether this process is the supervised child (or asked to run unsupervised)."""
    return os.environ.get(SUPERVISED, "") not in ("", "0")


class _Relay:
    """The child's stderr, line by line: its own lines passed on at once, the runtime's native
    log lines (and the lines that continue them) held for `HOLD_S` seconds and passed on only
    if the child lives on; a `marl: error:` line drops those held (the child is ending)."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.since = 0.0
        self.fatal: str | None = None  # the runtime's fatal line, if it wrote one
        self.said = False  # the child wrote its own `marl: error:` line

    def line(self, text: str) -> None:
        native = _NATIVE_LOG.match(text)
        if native and native.group(1) == "F":  # its first sentence
            self.fatal = native.group(2).strip().split(". ")[0].rstrip(".")
        if text.startswith("marl: error:"):
            self.held, self.said = [], True
            self._write(text)
        elif native or self.held:
            if not self.held:
                self.since = time.monotonic()
            self.held.append(text)
        else:
            self._write(text)

    def tick(self) -> None:
        if self.held and time.monotonic() - self.since > HOLD_S:
            self.flush()

    def flush(self) -> None:
        for text in self.held:
            self._write(text)
        self.held = []

    @staticmethod
    def _write(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()


def supervise(command: Sequence[str]) -> int:
    """Run `command` (this command, again) as the supervised child; returns its exit code, or
    1 with one line when the runtime ended it."""
    child = subprocess.Popen(
        list(command), env={**os.environ, SUPERVISED: "1"}, stderr=subprocess.PIPE
    )
    forward = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    for s in forward:  # a scheduler's or a user's signal reaches the work
        signal.signal(s, lambda sig, _frame: child.send_signal(sig))
    relay, partial = _Relay(), b""
    try:
        assert child.stderr is not None
        fd = child.stderr.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], 0.5)
            chunk = os.read(fd, 65536) if ready else None
            if chunk == b"":
                break
            lines = (partial + (chunk or b"")).split(b"\n")
            partial = lines.pop()
            for raw in lines:
                relay.line(raw.decode(errors="replace") + "\n")
            relay.tick()
        if partial:
            relay.line(partial.decode(errors="replace") + "\n")
        code = child.wait()
    finally:
        for s, handler in forward.items():
            signal.signal(s, handler)
    if code == 0 or relay.said:
        if code == 0:
            relay.flush()
        return code if code > 0 else (0 if code == 0 else 1)
    what = relay.fatal or (f"signal {-code}" if code < 0 else f"exit code {code}")
    process = os.environ.get("JAX_PROCESS_ID", "this process")
    print(
        f"marl: error: distributed=true: JAX ended process {process} ({what[:240]}): the "
        "coordinator or a peer was lost; restart the multi-host run under another name=",
        file=sys.stderr,
        flush=True,
    )
    return 1
