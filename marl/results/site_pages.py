"""The site's pages (`marl.results.site`): overview, one per task, one per cell, as HTML text."""

from __future__ import annotations

from html import escape
from typing import Any

from marl.results.flags import MEANINGS, flagged, names
from marl.results.orders import orders_markdown
from marl.results.published import steps_text
from marl.results.ranks import RULE
from marl.results.site_data import Site, href, shade
from marl.results.site_files import CELLS_CSV, SEEDS_CSV
from marl.results.site_groups import PAGE as GROUPS
from marl.results.site_html import (
    BIBTEX,
    Td,
    background,
    breakable,
    ci,
    facts,
    hours,
    link,
    markdown_tables,
    nav,
    num,
    page,
    score,
    table,
)


# --- overview ---------------------------------------------------------------------------------
def overview_page(site: Site) -> str:
    board, study = site.board, site.study
    algos = study.algorithms
    families = sorted({t.split("/")[0] for t in study.tasks})
    tiers = sorted({t for ts in site.tiers.values() for t in ts})
    if tiers and not all(site.tiers.values()):
        tiers.append("none")
    head = ["task", "family", "tier", "ranked by", *map(escape, algos)]
    types = ["text", "text", "text", "text", *["num"] * len(algos)]
    extra = [
        "",
        ' class="meta"',
        ' class="meta"',
        ' class="meta"',
        *(f' data-learner="{escape(a)}"' for a in algos),
    ]
    ths = "".join(
        f'<th data-type="{t}"{x}>{h}</th>' for h, t, x in zip(head, types, extra, strict=True)
    )
    rows = []
    for task in study.tasks:
        pos = shade(site, task)
        data = board["tasks"][task]
        n = len(data["rows"])
        tds = [
            f'<td class="task"><a href="{escape(site.task_page(task))}">{breakable(task)}</a></td>',
            f'<td class="meta">{escape(task.split("/")[0])}</td>',
            f'<td class="meta">{escape(" ".join(site.tiers[task])) or "&ndash;"}</td>',
            f'<td class="meta">{escape(data["statistic"].replace("_", " "))}'
            + (" (lower is better)" if data["lower_is_better"] and not data.get("scoring") else "")
            + "</td>",
        ]
        for algo in algos:
            cell = site.cells.get((task, algo))
            if cell is None:
                empty = f'data-sort="" data-learner="{escape(algo)}"'
                tds.append(f'<td class="empty" {empty}>&ndash;</td>')
                continue
            stat, iv = site.ranked(cell)
            rank = cell.row["rank"]
            tip = f"{algo} on {task}: {stat} {ci(iv)}; rank {rank} of {n}; {cell.row['runs']} runs"
            value = pos[algo]
            flags = cell.row.get("flags", [])
            if flags:
                tip += "; flagged: " + "; ".join(f"{f['flag']}: {f['detail']}" for f in flags)
            tds.append(
                f'<td class="score{" flagged" if flags else ""}" data-sort="{value:.4f}" '
                f'data-learner="{escape(algo)}" '
                f'style="{background(value)}" title="{escape(tip)}"><a href="{escape(cell.page)}">'
                f'{score(iv)}<span class="rank">#{rank}</span>{_flag_mark(flags)}</a></td>'
            )
        tier_attr = escape(" ".join(site.tiers[task]) or "none")
        rows.append(
            f'<tr data-family="{escape(task.split("/")[0])}" data-tier="{tier_attr}">'
            + "".join(tds)
            + "</tr>"
        )
    controls = (
        _select("family", families)
        + (_select("tier", tiers, {"none": "outside the benchmark"}) if tiers else "")
        + _select("learner", algos).replace('data-filter="learner"', 'data-columns="learner"')
    )
    parts = [
        nav(0),
        "<h1>marl leaderboard</h1>",
        _summary(site),
        f'<div class="controls">{controls}<span id="shown"></span></div>',
        f'<div class="scroll"><table id="matrix" class="matrix sortable"><thead><tr>{ths}</tr>'
        "</thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>",
        "<p>Each cell: the statistic that ranks the task (its IQM over seeds in the task's "
        "natural unit: win rate, success rate, ...; a score between fixed anchors where the "
        "task has none) of the absolute metric (each seed's best evaluated parameters "
        "re-evaluated), with its 95% bootstrap CI, and the learner's rank (#) on the task. "
        "The shade places it between the task's worst learner (light) and best (dark). Click "
        "a column to sort, a task for its curves, a cell for its config, provenance, per-seed "
        "values and raw record.</p>",
        f'<p class="small">Shared ranks: {escape(RULE)}</p>',
        _links(),
        _flagged(site),
        _overall(site),
        _cite(),
    ]
    if site.command:
        parts.append(f'<p class="small">Written by <code>{escape(site.command)}</code>.</p>')
    return page("marl leaderboard", "\n".join(parts), 0)


def _select(name: str, values: list[str], labels: dict[str, str] | None = None) -> str:
    labels = labels or {}
    options = '<option value="all">all</option>' + "".join(
        f'<option value="{escape(v)}">{escape(labels.get(v, v))}</option>' for v in values
    )
    return (
        f'<label>{name} <select id="filter-{name}" data-filter="{name}" data-table="matrix">'
        f"{options}</select></label>"
    )


def _links() -> str:
    """The other pages and the bulk downloads, all inside the site's folder."""
    groups = link(GROUPS, "Groups: aggregates, probability of improvement, sensitivity")
    return (
        f'<p class="links">{groups} &middot; Download every cell: '
        f"{link(CELLS_CSV, 'cells.csv')}, every seed: {link(SEEDS_CSV, 'seeds.csv')} "
        "(each cell's seeds and curves: the JSON linked from its page) &middot; "
        '<a href="#cite">cite</a></p>'
    )


def _cite() -> str:
    return (
        '<h2 id="cite">Cite</h2>\n<p>The software and its benchmark (CITATION.cff at the top '
        f"of the repository says the same):</p>\n<pre>{escape(BIBTEX)}</pre>"
    )


def _dates(site: Site) -> str:
    """When the records were trained and the code of the newest (from their sidecars)."""
    metas = [r.meta for e in site.study.entries.values() for r in e.records if r.meta]
    made = sorted((m for m in metas if m.get("created")), key=lambda m: str(m["created"]))
    if not made:
        return ""  # records made at one instant tie on the key alone, never on the metas
    first, newest = str(made[0]["created"])[:10], made[-1]
    last = str(newest["created"])
    commit = ((newest.get("code") or {}).get("commit") or "")[:12]
    return f"records trained {first} to {last[:10]}" + (
        f", the newest at commit <code>{escape(commit)}</code>" if commit else ""
    )


def _summary(site: Site) -> str:
    cov, board = site.coverage, site.board
    bits = [
        f"{len(site.study.tasks)} tasks, {len(site.study.algorithms)} learners, "
        f"{len(site.cells)} cells"
    ]
    if _dates(site):
        bits.append(_dates(site))
    if cov:
        held = sum(r["held"] for r in cov["cells"])
        bits.append(f"benchmark {escape(cov['benchmark'])}: {held} of {len(cov['cells'])} cells")
    if board.get("devices"):
        where = ", ".join(f"{escape(d)} ({n})" for d, n in board["devices"].items())
        bits.append(f"records by device: {where}")
    return f'<p class="small">{"; ".join(bits)}.</p>'


def _flag_mark(flags: list[dict[str, str]]) -> str:
    """The flags' names under a score, each with its meaning as its tooltip."""
    if not flags:
        return ""
    marks = ", ".join(
        f'<span title="{escape(MEANINGS[f["flag"]])}">{escape(f["flag"])}</span>' for f in flags
    )
    return f'<span class="flag">flagged: {marks}</span>'


def _meanings() -> str:
    items = "".join(
        f"<dt>{escape(flag)}</dt><dd>{escape(meaning)}</dd>" for flag, meaning in MEANINGS.items()
    )
    return f'<dl class="facts">{items}</dl>'


def _flag_list(flags: list[dict[str, str]]) -> str:
    """A cell's flags with their numbers and meanings."""
    return (
        '<ul class="flags">'
        + "".join(
            f"<li><strong>{escape(f['flag'])}</strong> ({escape(f['detail'])}): "
            f"{escape(MEANINGS[f['flag']])}</li>"
            for f in flags
        )
        + "</ul>"
    )


def _explanation(row: dict[str, Any]) -> str:
    text = row.get("explanation")
    if text:
        return f'<p class="explanation"><strong>Explanation:</strong> {escape(text)}</p>'
    return '<p class="explanation">No explanation yet.</p>'


def _flagged(site: Site) -> str:
    """The flagged cells (`marl.results.flags`): the rules, and each cell with its flags and
    its explanation; nothing where no cell is flagged."""
    marked = flagged(site.board)
    if not marked:
        return ""
    rows = []
    for cell_id, row in marked:
        task = cell_id.rpartition("/")[0]
        cell = site.cells[(task, row["algorithm"])]
        rows.append(
            [
                link(cell.page, f"{row['algorithm']} on {task}"),
                escape(names(row["flags"])),
                escape(row.get("explanation") or "No explanation yet."),
            ]
        )
    return (
        f"<h2>Flagged cells: {len(marked)}</h2>\n<p>A flag says that a cell's score is not the "
        "task's answer; its page gives the numbers behind each flag.</p>\n"
        + _meanings()
        + table(["cell", "flags", "explanation"], rows, "flagged")
    )


def _overall(site: Site) -> str:
    """Per group of tasks the same learners ran: the normalised IQM of each learner."""
    algos = site.study.algorithms
    rows = []
    for g in site.board["overall"]:
        iqm = {r["algorithm"]: r["iqm"] for r in g["rows"]}
        rank = {r["algorithm"]: r["rank"] for r in g["rows"]}
        points = [v["point"] for v in iqm.values()]
        low, high = min(points), max(points)
        tds: list[Td] = [escape(g["name"]), ", ".join(map(breakable, g["tasks"]))]
        for algo in algos:
            if algo not in iqm:
                tds.append(('class="empty" data-sort=""', "&ndash;"))
                continue
            pos = 0.5 if high - low <= 1e-12 else (iqm[algo]["point"] - low) / (high - low)
            attrs = f'data-sort="{iqm[algo]["point"]:.4f}" style="{background(pos)}"'
            shown = f'{score(iqm[algo])}<span class="rank">#{rank[algo]}</span>'
            tds.append((f'class="score" {attrs}', shown))
        rows.append(tds)
    if not rows:
        return ""
    grid = table(
        ["group", "tasks", *map(escape, algos)],
        rows,
        "overall",
        ["text", "text", *["num"] * len(algos)],
    )
    return (
        f"<h2>Overall: score IQM per group of tasks</h2>\n<p>Scoring v2: each task in its "
        "natural unit where it has a bounded one (win rate, success rate, collected fraction, "
        "order parameter), otherwise min-max between fixed anchors declared with the benchmark "
        "(0 = random policy, 1 = the strongest reference); IQM over a group's tasks and seeds "
        "with 95% stratified bootstrap CIs. Each group ranks the learners that ran exactly its "
        "tasks; across families each family weighs the same (the mean of the families' "
        f"aggregates).</p>\n{grid}"
    )


# --- task -------------------------------------------------------------------------------------
def task_page(site: Site, task: str) -> str:
    data, study = site.board["tasks"][task], site.study
    unit = site.units[task]
    about = [
        ("family", escape(task.split("/")[0])),
        ("tier", escape(", ".join(site.tiers[task])) or "&ndash;"),
        ("natural unit", escape(unit) + (" (lower is better)" if site.lower[task] else "")),
        ("ranked by", escape(data["statistic"])),
        (
            "scored",
            escape(data["scoring"]["rule"]) if data.get("scoring") else "not scored",
        ),
        ("shared ranks", escape(RULE)),
    ]
    rows = []
    for row in data["rows"]:
        cell = site.cells[(task, row["algorithm"])]
        name = row["algorithm"] + (" (external)" if row["external"] else "")
        rows.append(
            [
                str(row["rank"]),
                link("../" + cell.page, name),
                str(row["runs"]),
                escape(ci(site.ranked(cell)[1])),
                num(row["final_score"]) if "final_score" in row else "n/a",
                num(row["collapse"]) if "collapse" in row else "n/a",
                escape(ci(row["absolute_mean"])),
                f"{row['env_steps']:,}",
                hours(row.get("wall_time_s")),
                f"{row['steps_per_second']:,.0f}" if "steps_per_second" in row else "n/a",
                escape(names(row.get("flags", []))),
            ]
        )
    columns = [  # (heading, type)
        ("rank", "num"),
        ("learner", "text"),
        ("runs", "num"),
        (f"{escape(data['statistic'])} [95% CI]", "num"),
        ("final score", "num"),
        ("best - final", "num"),
        (f"{escape(study.metric)} mean [95% CI], not ranked", "num"),
        ("env steps", "num"),
        ("wall time", "num"),
        ("env steps/s", "num"),
        ("flags", "text"),
    ]
    ranking = table([h for h, _ in columns], rows, "ranking", [t for _, t in columns])
    marked = []
    for row in data["rows"]:
        if row.get("flags"):
            page_of = "../" + site.cells[(task, row["algorithm"])].page
            marked += [
                f"<h3>Flagged: {link(page_of, row['algorithm'])}</h3>",
                _flag_list(row["flags"]),
                _explanation(row),
            ]
    fig = href(site.figures[task], site.out / "tasks")
    peers = _peers(data.get("published", []))
    body = [
        nav(1, (task, None)),
        f"<h1>{escape(task)}</h1>",
        facts(about),
        ranking,
        *marked,
        '<div class="beside">',
        f'<figure><a href="{fig}"><img src="{fig}" alt="{escape(task)}: {escape(unit)} '
        f'against env steps"></a><figcaption>{escape(unit)} of the greedy policy against env '
        "steps: every learner's mean over its seeds, 95% bootstrap band.</figcaption></figure>",
        f"<aside><h2>Peers' published figures</h2>{peers}</aside>",
        "</div>",
        markdown_tables(orders_markdown(data.get("orders", []))),
    ]
    return page(f"{task}: marl leaderboard", "\n".join(body), 1)


def _peers(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>None stand beside this task.</p>"
    out = ["<p>External: another implementation, its own budget and statistic; not ranked.</p>"]
    for r in rows:
        seeds = "not stated" if r["seeds"] is None else str(r["seeds"])
        figures = [[escape(a), escape(f)] for a, f in r["figures"].items()]
        out += [
            f"<h3>{escape(r['source'])}</h3>",
            f'<p class="small">{escape(r["peer_task"])}; {escape(r["metric"])}; '
            f"{steps_text(r['budget'])} env steps; seeds {escape(seeds)}; {escape(r['basis'])}"
            + (f"; order {escape(r['order'])}" if r.get("order") else "")
            + "</p>",
            table(["learner", "figure"], figures),
        ]
    return "\n".join(out)


__all__ = ["overview_page", "page", "task_page"]
