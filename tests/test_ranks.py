"""Ranks the evidence allows (`marl.results.ranks`): learners whose intervals overlap share a
rank, identical records tie, group ranks follow their probabilities of improvement, and every
page shows, shades and sorts by the statistic that ranks."""

from __future__ import annotations

import re
from pathlib import Path

from test_protocol import write_run
from test_site import write_committed

from marl.results.leaderboard import leaderboard, write_leaderboard
from marl.results.ranks import shared_ranks, significant
from marl.results.study import load_study


def iv(point, low, high):
    return {"point": point, "low": low, "high": high}


def test_overlapping_intervals_share_a_rank_and_separated_ones_do_not():
    assert shared_ranks({"a": iv(0.6, 0.5, 0.7), "b": iv(0.55, 0.45, 0.65)}) == [
        ("a", 1),
        ("b", 1),
    ]
    assert shared_ranks({"a": iv(0.6, 0.5, 0.7), "b": iv(0.3, 0.2, 0.4)}) == [("a", 1), ("b", 2)]
    # a chain: c overlaps b but lies below a, the first holding rank 1: competition ranking
    chain = {"a": iv(0.9, 0.8, 1.0), "b": iv(0.7, 0.6, 0.85), "c": iv(0.6, 0.5, 0.7)}
    assert shared_ranks(chain) == [("a", 1), ("b", 1), ("c", 3)]
    # lower is better: the lowest first, separation on the other side
    low = {"a": iv(10.0, 9.0, 11.0), "b": iv(20.0, 19.0, 21.0), "c": iv(10.5, 9.5, 12.0)}
    assert shared_ranks(low, lower_is_better=True) == [("a", 1), ("c", 1), ("b", 3)]


def test_ranks_never_fall_as_the_point_rises():
    rng = __import__("numpy").random.default_rng(0)
    for _ in range(200):
        pts = rng.normal(size=6)
        widths = rng.uniform(0.05, 1.0, size=6)
        ivs = {f"l{i}": iv(p, p - w, p + w * rng.uniform(0.2, 1.5)) for i, (p, w) in
               enumerate(zip(pts, widths, strict=True))}  # fmt: skip
        ranked = shared_ranks(ivs)
        ranks = [r for _, r in ranked]
        assert ranks == sorted(ranks) and ranks[0] == 1
        points = [ivs[a]["point"] for a, _ in ranked]
        assert points == sorted(points, reverse=True)


def test_a_significant_probability_of_improvement_is_never_ranked_against():
    # intervals separate b below a, yet P(b beats a) is significant: the two share a rank
    ivs = {"a": iv(0.8, 0.7, 0.9), "b": iv(0.5, 0.4, 0.6), "c": iv(0.1, 0.0, 0.2)}
    improvement = {"b > a": iv(0.7, 0.6, 0.8), "a > b": iv(0.3, 0.2, 0.4)}
    assert shared_ranks(ivs) == [("a", 1), ("b", 2), ("c", 3)]
    assert shared_ranks(ivs, beats=significant(improvement)) == [("a", 1), ("b", 1), ("c", 3)]


def test_identical_records_tie_on_the_board(tmp_path):
    """The same runs under two names get one rank (the issue's renamed copy of IPPO)."""
    write_run(tmp_path / "a", algo="ippo", seed=1)
    write_run(tmp_path / "b", algo="ippo_copy", seed=1)
    write_run(tmp_path / "c", algo="worse", seed=2, shift=-5.0)
    board = leaderboard(load_study([tmp_path]), reps=200)
    rows = {r["algorithm"]: r for r in board["tasks"]["particle/spread"]["rows"]}
    assert rows["ippo"]["rank"] == rows["ippo_copy"]["rank"]
    assert rows["ippo"]["normalised_iqm"] == rows["ippo_copy"]["normalised_iqm"]
    (group,) = board["overall"]
    ranks = {r["algorithm"]: r["rank"] for r in group["rows"]}
    assert ranks["ippo"] == ranks["ippo_copy"]


def overview_orders(index: Path) -> dict[str, list[tuple[str, float, int]]]:
    """task page -> [(learner, shade, rank)] from the overview's matrix, in column order."""
    out = {}
    for row in re.findall(r"<tr data-family=.*?</tr>", index.read_text(), re.S):
        task = re.search(r'<td class="task"><a href="([^"]+)"', row).group(1)
        cells = re.findall(
            r'data-sort="([0-9.]+)"[^>]*><a href="cells/[^/]+/([^"]+)\.html">.*?'
            r'<span class="rank">#(\d+)</span>',
            row,
        )
        out[task] = [(algo, float(v), int(r)) for v, algo, r in cells]
    return out


def task_ranking(page: Path) -> list[tuple[str, int]]:
    table = re.search(r'<table class="ranking.*?</table>', page.read_text(), re.S).group(0)
    rows = re.findall(r"<tr><td>(\d+)</td><td><a href=\"[^\"]*/([^/\"]+)\.html\">", table)
    return [(algo, int(rank)) for rank, algo in rows]


def assert_overview_order_is_the_ranking(site: Path) -> int:
    """Every task row of the overview, ordered by what it shades and sorts, is the task page's
    ranking, ranks included; returns how many tasks were checked."""
    orders = overview_orders(site / "index.html")
    for page, cells in orders.items():
        shown = sorted(cells, key=lambda c: -c[1])
        ranking = task_ranking(site / page)
        assert cells and ranking, page
        assert [(a, r) for a, _, r in cells] == sorted([(a, r) for a, _, r in cells])  # columns
        assert sorted(ranking) == sorted((a, r) for a, _, r in cells), page
        # the shade's order is the ranking's (learners with equal shades in either order)
        by_shade = [a for a, _, _ in shown]
        for (a, va, ra), (b, vb, rb) in zip(shown, shown[1:], strict=False):
            assert va > vb or va == vb, page
            assert ra <= rb, (page, a, b)
        position = {a: i for i, (a, _) in enumerate(ranking)}
        for a, b in zip(by_shade, by_shade[1:], strict=False):
            va = next(v for x, v, _ in cells if x == a)
            vb = next(v for x, v, _ in cells if x == b)
            assert position[a] < position[b] or va == vb, (page, a, b)
    return len(orders)


def test_the_overview_order_is_each_task_pages_ranking(tmp_path):
    site = write_committed(tmp_path / "site").parent
    assert assert_overview_order_is_the_ranking(site) == 2


def test_no_page_shows_a_scoring_v1_value(tmp_path):
    """Scoring v1 (min-max to the scripted anchors) appears only in the sensitivity table, on
    a site written now and on the committed one."""
    site = write_committed(tmp_path / "site").parent
    committed = Path(__file__).resolve().parent.parent / "results" / "site"
    for page in [*site.rglob("*.html"), *committed.rglob("*.html")]:
        text = page.read_text().lower()
        if page.name == "groups.html":  # its sensitivity table names scoring v1, labelled
            text = text.partition("sensitivity of the rankings to the scoring rule")[0]
        assert "normalised" not in text and "scoring v1" not in text, page


def test_the_leaderboard_md_names_scoring_v1_only_in_its_sensitivity_table(tmp_path):
    write_run(tmp_path / "r" / "a", algo="ippo", seed=1)
    write_run(tmp_path / "r" / "b", algo="mappo", seed=2, shift=-1.0)
    md = write_leaderboard(load_study([tmp_path / "r"]), tmp_path / "lb", reps=100)["md"]
    text = md.read_text()
    head, _, rest = text.partition("## Sensitivity")
    assert "scoring v1" not in head.lower() and "normalised" not in head.lower()


def test_the_committed_overview_order_is_every_v1_tasks_ranking():
    """results/site as committed: for every v1 task the overview's order is its page's."""
    site = Path(__file__).resolve().parent.parent / "results" / "site"
    assert assert_overview_order_is_the_ranking(site) >= 14


def test_the_committed_groups_never_rank_against_their_probability_of_improvement():
    """results/leaderboard.json: where P(a beats b) has its 95% CI above 0.5, a ranks no lower
    than b (iql sat above qmix across combat + particle, mappo above mfac on swarm)."""
    import json

    board = json.loads(
        (Path(__file__).resolve().parent.parent / "results" / "leaderboard.json").read_text()
    )
    checked = 0
    for group in board["overall"]:
        rank = {r["algorithm"]: r["rank"] for r in group["rows"]}
        for pair, iv in group["improvement"].items():
            a, b = pair.split(" > ")
            if iv["low"] > 0.5:
                assert rank[a] <= rank[b], (group["name"], pair, rank)
                checked += 1
    assert checked > 10
