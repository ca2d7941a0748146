"""Peers' orders against marl's runs: does a task's ranking here agree with a source's?

A source of peers' figures (`marl/conf/published.yaml`) may state the order its learners came
in (`order: qmix > vdn > iql`, `=` where it does not separate two). For every pair of that
order whose learners both ran the task here, the probability of improvement P(first beats
second) over marl's runs (rliable's Mann-Whitney statistic, bootstrap CI), in the task's
natural unit where every run has it (the absolute metric otherwise), gives the verdict:

- a ranked pair (`a > b`): agrees when the CI lies above 0.5, reversed when below, and not
  separated when it spans 0.5;
- a tie (`a = b`): agrees when the CI spans 0.5, otherwise the learner ahead here is named.

Budgets and simulators differ (each source says its own), so this compares orders, not levels.
"""

from __future__ import annotations

from typing import Any

from marl.results import stats
from marl.results.published import Published, order_pairs, order_text, steps_text
from marl.results.study import Study


def verdict(relation: str, first: str, second: str, iv: stats.Interval) -> str:
    """The verdict on one pair of a source's order from P(first beats second) here."""
    _, low, high = iv
    if relation == ">":
        return "agrees" if low > 0.5 else "reversed" if high < 0.5 else "not separated"
    if low <= 0.5 <= high:
        return "agrees (tie)"
    return f"separated: {first if low > 0.5 else second} ahead"


def _scores(study: Study, task: str, algo: str) -> tuple[str, Any]:
    entry = study.entries[(task, algo)]
    unit = study.headline_unit(task, algo)
    if unit:
        return unit, entry.scores(unit)
    sign = -1.0 if study.lower.get(task, False) else 1.0
    return study.metric, sign * entry.scores(study.metric)


def peer_orders(
    study: Study, published: list[Published], reps: int = stats.REPS, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """task -> one check per source with an order that has a pair of learners run here."""
    out: dict[str, list[dict[str, Any]]] = {}
    for p in published:
        pairs = [
            (a, b, rel)
            for a, b, rel in order_pairs(p.order)
            if (p.task, a) in study.entries and (p.task, b) in study.entries
        ]
        if not pairs:
            continue
        rows = []
        for a, b, rel in pairs:
            unit, x = _scores(study, p.task, a)
            _, y = _scores(study, p.task, b)
            iv = stats.probability_of_improvement([x], [y], reps=reps, seed=seed)
            rows.append(
                {
                    "pair": f"{a} {rel} {b}",
                    "unit": unit,
                    "p": {"point": iv[0], "low": iv[1], "high": iv[2]},
                    "verdict": verdict(rel, a, b, iv),
                }
            )
        check = {"source": p.source, "budget": p.budget, "order": order_text(p.order)}
        out.setdefault(p.task, []).append({**check, "pairs": rows})
    return out


def orders_markdown(checks: list[dict[str, Any]]) -> list[str]:
    """One task's order checks as a Markdown table, a row per source."""
    if not checks:
        return []
    units = sorted({r["unit"] for c in checks for r in c["pairs"]})
    lines = [
        "Peers' orders against marl's runs (per pair of a source's order: P(first beats "
        f"second) over this task's runs here in {', '.join(units)}, 95% bootstrap CI; a ranked "
        "pair agrees when the CI is above 0.5, is reversed below it, not separated across it; "
        "a tie agrees when the CI spans 0.5):",
        "",
        "| source | its env steps | its order | here, pair by pair |",
        "|---|---|---|---|",
    ]
    for c in checks:
        pairs = "; ".join(
            f"{r['pair']}: {r['p']['point']:.2f} [{r['p']['low']:.2f}, {r['p']['high']:.2f}] "
            f"{r['verdict']}"
            for r in c["pairs"]
        )
        lines.append(f"| {c['source']} | {steps_text(c['budget'])} | {c['order']} | {pairs} |")
    return [*lines, ""]


__all__ = ["orders_markdown", "peer_orders", "verdict"]
