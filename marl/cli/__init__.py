"""The `marl` command line: `marl train | sweep | benchmark | report | leaderboard | list |
bench | render | eval`. It parses (`parser`, `args`) and calls library functions
(`commands`; `benchmark` for the benchmark and the leaderboard); the work is done in
`marl.run`, `marl.results` and `marl.bench`.

Errors a user can fix (an unknown id or keyword, a missing optional package) are printed as one
line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from marl.learning.logs import quiet_library_logs
from marl.learning.xla import configure_xla
from marl.run.errors import UsageError

__all__ = ["UsageError", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `marl` command line; returns the exit code."""
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
        print(f"marl: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `marl list | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
