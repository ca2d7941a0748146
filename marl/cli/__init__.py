"""The `marl` command line: `marl train | sweep | benchmark | report | leaderboard | list |
bench | render | eval`. It parses (`parser`, `args`) and calls library functions
(`commands`; `benchmark` for the benchmark and the leaderboard); the work is done in
`marl.run`, `marl.results` and `marl.bench`.

Errors a user can fix (an unknown id or keyword, a missing optional package, a file that is not
what it should be) are printed as one line on stderr with exit code 2, never as a traceback;
failures of the machine (a full disk, a read-only folder, memory too small for the run) and
anything unexpected are one line too, exit code 1 (`MARL_TRACEBACK=1` shows the traceback of
an unexpected one). A run that fails is never presented as complete: its folder lacks
`record.json`, which a run writes last (`marl.run.folder.writer`).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Sequence

from marl.learning import interrupt
from marl.learning.logs import quiet_library_logs
from marl.learning.xla import configure_xla
from marl.run.errors import UsageError

__all__ = ["UsageError", "failure_line", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `marl` command line; returns the exit code (130 after Ctrl-C)."""
    interrupt.install()  # Ctrl-C: one line at any point, a run stopped where it can resume
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("marl: interrupted", file=sys.stderr, flush=True)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    configure_xla()
    from marl.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    try:
        quiet_library_logs()  # orbax's INFO lines off the console (MARL_LIBRARY_LOGS=INFO)
    except ValueError as e:
        print(f"marl: error: {e}", file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        return _fail(str(e), 2)
    except BrokenPipeError:  # `marl list | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:  # noqa: BLE001 - every failure is one line
        known = failure_line(e)
        if known is None and os.environ.get("MARL_TRACEBACK", "") not in ("", "0"):
            raise
        line, code = known or (f"unexpected {type(e).__name__}: {_first_line(e)}", 1)
        return _fail(line + (" (MARL_TRACEBACK=1 shows where)" if known is None else ""), code)


def _fail(line: str, code: int) -> int:
    """Print the error line; returns the exit code. A process of a multi-host run ends here
    (`runtime.end_process`): its peers are told by its silence (their watchdogs), and nothing
    waits on a collective or on JAX's shutdown barrier."""
    from marl.run.processes.runtime import Watchdog, end_process

    if Watchdog.running is not None:
        end_process(line, code)
    print(f"marl: error: {line}", file=sys.stderr)
    return code


# what a multi-host run's collectives raise when a peer's connection is gone
_PEER_LOST = ("Gloo", "Connection reset by peer", "Connection closed by peer", "NCCL")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


def failure_line(e: BaseException) -> tuple[str, int] | None:
    """(one line saying what failed, the exit code) for an exception no command turned into a
    `UsageError`: 2 for a file that is not what it should be, 1 for the machine (a disk that
    is full or read-only, memory too small); None for anything else (unexpected)."""
    from marl.results.protocol import RecordError

    first = _first_line(e)
    if isinstance(e, RecordError):
        return first, 2
    if isinstance(e, OSError):
        what = e.strerror or first or type(e).__name__
        where = f": {e.filename}" if e.filename else ""
        name = errno.errorcode.get(e.errno or 0)
        return f"{what}{where}{f' ({name})' if name else ''}", 1
    if isinstance(e, RuntimeError) and any(w in first for w in _PEER_LOST):
        return (
            f"distributed=true: a collective failed, a process of the run is gone ({first}); "
            "restart the multi-host run under another name=",
            1,
        )
    if isinstance(e, MemoryError) or "RESOURCE_EXHAUSTED" in first:
        return (
            f"out of memory ({type(e).__name__}: {first or 'no details'}); fewer seeds=, or "
            "smaller sizes (algo.num_envs, algo.buffer_size, protocol.eval_episodes) need less",
            1,
        )
    return None
