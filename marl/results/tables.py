"""Plain-text tables for the command line and the bench: right-aligned numbers, a rule under
the headers."""

from __future__ import annotations

from collections.abc import Sequence


def format_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One table line: the first cell left-aligned, the others right-aligned."""
    first, *rest = (str(c) for c in cells)
    parts = [first.ljust(widths[0])]
    parts += [c.rjust(w) for c, w in zip(rest, widths[1:], strict=True)]
    return "  ".join(parts).rstrip()


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain text table with a rule under the headers; columns as wide as their cells."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]
    lines = [format_row(headers, widths), format_row(["-" * w for w in widths], widths)]
    return "\n".join(lines + [format_row(r, widths) for r in rows])
