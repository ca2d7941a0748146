"""Peers' published figures (`marl/conf/published.yaml`): shown beside marl's results for the
task they stand closest to, marked external with their source and setting, never ranked.

A figure is a string as its source gives it (a median with percentiles, a value with a spread,
a reading off a curve); `basis` says how it was obtained (read, derived from released run data,
read off a plot, or the peer's own code run here), and each source names its budget, seeds and
statistic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marl.results.files import read_yaml

SHIPPED = Path(__file__).resolve().parents[1] / "conf" / "published.yaml"
BASES = {
    "read": "read from the authors' table, text or configs",
    "derived": "computed here from run data the authors released",
    "plot": "read off the authors' learning-curve figure (about +-2)",
    "run": "the peer's own code, unmodified, run on marl's machine by a marl script",
}
_FIELDS = ("task", "peer_task", "source", "basis", "metric", "budget", "seeds", "figures")
_OPTIONAL = ("order",)


@dataclass(frozen=True)
class Published:
    """One source's figures for one marl task."""

    task: str
    peer_task: str
    source: str
    basis: str
    metric: str
    budget: float
    seeds: int | str | None
    figures: dict[str, str]
    order: tuple[tuple[str, ...], ...] = ()  # the source's ranking, best tier first

    def row(self) -> dict[str, Any]:
        row = {k: getattr(self, k) for k in _FIELDS}
        if self.order:
            row["order"] = order_text(self.order)
        return row


def order_text(order: tuple[tuple[str, ...], ...]) -> str:
    """`(("qmix",), ("vdn", "iql"))` as `qmix > vdn = iql`."""
    return " > ".join(" = ".join(tier) for tier in order)


def parse_order(text: str, learners: set[str], where: str) -> tuple[tuple[str, ...], ...]:
    """A source's ranking of its learners, `a > b = c` (`=`: the source does not separate
    them), as tiers; each learner named once, every one of them among `learners`."""
    tiers = tuple(tuple(n.strip() for n in tier.split("=")) for tier in str(text).split(">"))
    names = [n for tier in tiers for n in tier]
    if len(names) < 2 or "" in names or len(set(names)) < len(names):
        raise ValueError(f"{where}: order {text!r} must rank two or more learners, each once")
    unknown = sorted(set(names) - learners)
    if unknown:
        raise ValueError(f"{where}: order names {', '.join(unknown)}, which have no figure")
    return tiers


def order_pairs(order: tuple[tuple[str, ...], ...]) -> list[tuple[str, str, str]]:
    """Every pair of an order as (first, second, ">" or "="), the first ranked at or above."""
    pairs = []
    for i, tier in enumerate(order):
        pairs += [(a, b, "=") for j, a in enumerate(tier) for b in tier[j + 1 :]]
        pairs += [(a, b, ">") for a in tier for lower in order[i + 1 :] for b in lower]
    return pairs


def _source(i: int, entry: Any, where: str) -> Published:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: sources[{i}] is not a mapping")
    missing = [k for k in _FIELDS if k not in entry]
    unknown = sorted(set(entry) - set(_FIELDS) - set(_OPTIONAL))
    if missing or unknown:
        raise ValueError(
            f"{where}: sources[{i}] "
            + (f"lacks {', '.join(missing)}" if missing else f"has unknown {', '.join(unknown)}")
            + f" (fields: {', '.join(_FIELDS)}; optional: {', '.join(_OPTIONAL)})"
        )
    if entry["basis"] not in BASES:
        raise ValueError(
            f"{where}: sources[{i}] basis {entry['basis']!r} is not one of {', '.join(BASES)}"
        )
    figures = entry["figures"]
    if not isinstance(figures, dict) or not figures:
        raise ValueError(f"{where}: sources[{i}] figures must map learners to figures")
    return Published(
        task=str(entry["task"]),
        peer_task=str(entry["peer_task"]),
        source=str(entry["source"]),
        basis=entry["basis"],
        metric=str(entry["metric"]),
        budget=float(entry["budget"]),
        seeds=entry["seeds"],
        figures={str(k): str(v) for k, v in figures.items()},
        order=parse_order(entry["order"], set(map(str, figures)), f"{where}: sources[{i}]")
        if entry.get("order") is not None
        else (),
    )


def read_published(path: str | Path = SHIPPED) -> list[Published]:
    """The sources of a published-figures file (default: the shipped one); a malformed entry
    fails with one line naming it."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
        raise ValueError(f"{path}: expected a mapping with a 'sources' list")
    return [_source(i, e, str(path)) for i, e in enumerate(data["sources"])]


def by_task(published: list[Published], tasks: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The rows of the sources that stand beside each of `tasks` (those with none left out)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for p in published:
        if p.task in tasks:
            out.setdefault(p.task, []).append(p.row())
    return out


def steps_text(budget: float) -> str:
    """Env steps as a short number: 2e6, 1.005e7."""
    return f"{budget:.3g}".replace("e+0", "e").replace("e+", "e")


def published_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """One task's published figures as a Markdown table (one line per source and learner)."""
    if not rows:
        return []
    lines = [
        "Peers' figures (external: published, or the peer's own code run here; another "
        "implementation, its own budget and statistic; not ranked with marl's runs):",
        "",
        "| learner | figure | peer's task | metric | env steps | seeds | source | basis |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seeds = "not stated" if r["seeds"] is None else str(r["seeds"])
        for learner, figure in r["figures"].items():
            lines.append(
                f"| {learner} (external) | {figure} | {r['peer_task']} | {r['metric']} | "
                f"{steps_text(r['budget'])} | {seeds} | {r['source']} | {r['basis']} |"
            )
    return [*lines, ""]


__all__ = [
    "BASES",
    "SHIPPED",
    "Published",
    "by_task",
    "order_pairs",
    "order_text",
    "parse_order",
    "published_markdown",
    "read_published",
    "steps_text",
]
