"""The site's page of groups (`marl.results.site`): per group of tasks the same learners ran,
the ranking by score IQM with its shared ranks, rliable's other aggregates beside it (not
ranked), the probability of improvement of every pair, and the sensitivity of each family's
ranking to the scoring rule (the one place scoring v1 appears, labelled)."""

from __future__ import annotations

from html import escape
from typing import Any

from marl.results.ranks import RULE
from marl.results.sensitivity import sensitivity_markdown
from marl.results.site_data import Site
from marl.results.site_html import breakable, ci, markdown_tables, nav, page, score, table

PAGE = "groups.html"
AGGREGATES = ("mean", "median", "optimality_gap")


def _improvement(group: dict[str, Any]) -> str:
    """P(row beats column) [95% CI] for every pair, bold where the CI excludes 0.5."""
    algos = [r["algorithm"] for r in group["rows"]]
    pairs = group.get("improvement") or {}
    if len(algos) < 2 or not pairs:
        return ""
    rows = []
    for a in algos:
        tds = [escape(a)]
        for b in algos:
            iv = pairs.get(f"{a} > {b}")
            if iv is None:
                tds.append("&ndash;")
                continue
            shown = escape(ci(iv))
            tds.append(
                f"<strong>{shown}</strong>" if iv["low"] > 0.5 or iv["high"] < 0.5 else shown
            )
        rows.append(tds)
    return (
        "<h3>Probability of improvement</h3>\n<p>P(row beats column) over the group's runs "
        "(rliable's Mann-Whitney statistic, averaged over tasks), 95% stratified bootstrap CI; "
        "<strong>bold</strong> where the CI excludes 0.5.</p>\n"
        + table(["P(row &gt; column)", *map(escape, algos)], rows, "improvement")
    )


def _group(group: dict[str, Any]) -> str:
    rows = [
        [
            str(r["rank"]),
            escape(r["algorithm"]) + (" (external)" if r["external"] else ""),
            score(r["iqm"]),
            *(escape(ci(r[k])) for k in AGGREGATES),
        ]
        for r in group["rows"]
    ]
    ranking = table(
        [
            "rank",
            "learner",
            "score IQM [95% CI]",
            "mean, not ranked",
            "median, not ranked",
            "optimality gap, not ranked",
        ],
        rows,
        "ranking",
    )
    return "\n".join(
        [
            f'<h2 id="{escape(group["name"])}">{escape(group["name"])}</h2>',
            f'<p class="small">Tasks: {", ".join(map(breakable, group["tasks"]))}.</p>',
            ranking,
            _improvement(group),
        ]
    )


def groups_page(site: Site) -> str:
    """Every group's ranking, aggregates and probabilities of improvement; the sensitivity."""
    board = site.board
    body = [
        nav(0, ("groups", None)),
        "<h1>Groups of tasks: aggregates, probability of improvement, sensitivity</h1>",
        "<p>Each group ranks the learners that ran exactly its tasks, by the IQM of their "
        "scores over the group's tasks and seeds (scoring v2: each task in its natural unit "
        "where it has a bounded one, otherwise min-max between the benchmark's fixed anchors), "
        "with 95% stratified bootstrap CIs; across families each family weighs the same.</p>",
        f'<p class="small">Shared ranks: {escape(RULE)}</p>',
        *(_group(g) for g in board["overall"]),
        markdown_tables(
            [
                line.replace("## ", "").replace("### ", "")
                for line in sensitivity_markdown(board.get("sensitivity", []))
            ]
        ),
    ]
    return page("Groups: marl leaderboard", "\n".join(body), 0)


__all__ = ["PAGE", "groups_page"]
