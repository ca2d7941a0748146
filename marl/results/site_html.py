"""HTML pieces of the site's pages (`marl.results.site_pages`): numbers, tables, the frame."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

SHADE = (33, 102, 172)  # the matrix's colour, at an opacity that grows with the score
# The citation the site shows; CITATION.cff at the top of the repository says the same
# (tests/test_site.py checks that they agree).
BIBTEX = """@software{marl_suite,
  title = {marl: a {JAX} benchmark suite for classical multi-agent reinforcement learning},
  author = {{The marl developers}},
  year = {2026},
  version = {0.1.0},
  license = {Apache-2.0},
  note = {Benchmark v1, its records and leaderboard}
}"""
RANKED_BY = {"normalised_iqm": "score IQM (scoring v2)", "absolute_mean": "raw mean"}


def num(x: float | None, like: float | None = None) -> str:
    """A number at a precision set by its size (or by `like`'s)."""
    if x is None or not np.isfinite(x):
        return "n/a"
    a = abs(like if like is not None else x)
    fmt = ",.0f" if a >= 1000 else ".1f" if a >= 100 else ".2f" if a >= 10 else ".3f"
    return format(x, fmt)


def ci(iv: dict[str, float] | None) -> str:
    """`0.916 [0.897, 0.929]`."""
    if iv is None:
        return "n/a"
    p = iv["point"]
    return f"{num(p)} [{num(iv['low'], p)}, {num(iv['high'], p)}]"


def hours(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds / 3600:.2f} h"


def link(url: str, text: str) -> str:
    return f'<a href="{escape(url)}">{escape(text)}</a>'


Td = str | tuple[str, str]  # a cell's HTML, or (its attributes, its HTML)


def td(c: Td) -> str:
    return f"<td {c[0]}>{c[1]}</td>" if isinstance(c, tuple) else f"<td>{c}</td>"


def table(
    head: Sequence[str], rows: Sequence[Sequence[Td]], cls: str = "", types: Sequence[str] = ()
) -> str:
    """A table of HTML cells (already escaped), in a box that scrolls sideways; `types`: per
    column `num` or `text` makes the table sortable."""
    attrs = f' class="{cls}{" sortable" if types else ""}"'.replace('class=" ', 'class="')
    ths = "".join(
        f'<th data-type="{types[i]}">{h}</th>' if types else f"<th>{h}</th>"
        for i, h in enumerate(head)
    )
    body = "".join("<tr>" + "".join(map(td, r)) + "</tr>\n" for r in rows)
    # in a box that scrolls sideways, so that a wide table never widens a phone's page
    return (
        f'<div class="scroll"><table{attrs}><thead><tr>{ths}</tr></thead><tbody>\n{body}'
        "</tbody></table></div>"
    )


def facts(pairs: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def markdown_tables(lines: list[str]) -> str:
    """Markdown paragraphs and tables (`published_markdown`, `orders_markdown`) as HTML."""
    out, rows = [], []
    for line in [*lines, ""]:
        if line.startswith("|"):
            if not set(line) <= set("|- "):
                rows.append([escape(c.strip()) for c in line.strip().strip("|").split("|")])
            continue
        if rows:
            out.append(table(rows[0], rows[1:]))
            rows = []
        if line.strip():
            out.append(f"<p>{escape(line).replace('`', '')}</p>")
    return "\n".join(out)


def page(title: str, body: str, depth: int) -> str:
    """A page of the site `depth` folders below its root."""
    up = "../" * depth
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title>"
        f'<link rel="stylesheet" href="{up}assets/site.css"></head>\n<body>\n{body}\n'
        f'<script src="{up}assets/site.js"></script>\n</body></html>\n'
    )


def nav(depth: int, *crumbs: tuple[str, str | None]) -> str:
    up = "../" * depth
    parts = [link(f"{up}index.html", "marl leaderboard")]
    parts += [escape(text) if url is None else link(url, text) for text, url in crumbs]
    return '<nav class="crumbs">' + " / ".join(parts) + "</nav>"


def score(iv: dict[str, float]) -> str:
    """A point in bold over its interval in small type."""
    p = iv["point"]
    return (
        f'<span class="v">{num(p)}</span> '
        f'<span class="ci">[{num(iv["low"], p)}, {num(iv["high"], p)}]</span>'
    )


def background(value: float) -> str:
    r, g, b = SHADE
    return f"background:rgba({r},{g},{b},{0.08 + 0.5 * value:.2f})"


def breakable(task: str) -> str:
    """A task name that may wrap after its `[` and commas."""
    return escape(task).replace("[", "[<wbr>").replace(",", ",<wbr>")
