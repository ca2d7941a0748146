"""The site's pages (`marl.results.site`): overview, one per task, one per cell, as HTML text."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from marl.results.flags import MEANINGS, flagged, names
from marl.results.leaderboard import device_label
from marl.results.orders import orders_markdown
from marl.results.published import steps_text
from marl.results.ranks import RULE
from marl.results.site_data import Cell, Site, href, shade
from marl.results.site_html import (
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
from marl.results.verified import describe


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
    ths = "".join(f'<th data-type="{t}">{h}</th>' for h, t in zip(head, types, strict=True))
    rows = []
    for task in study.tasks:
        pos = shade(site, task)
        data = board["tasks"][task]
        n = len(data["rows"])
        tds = [
            f'<td class="task"><a href="{escape(site.task_page(task))}">{breakable(task)}</a></td>',
            f"<td>{escape(task.split('/')[0])}</td>",
            f"<td>{escape(' '.join(site.tiers[task])) or '&ndash;'}</td>",
            f"<td>{escape(data['statistic'].replace('_', ' '))}"
            + (" (lower is better)" if data["lower_is_better"] and not data.get("scoring") else "")
            + "</td>",
        ]
        for algo in algos:
            cell = site.cells.get((task, algo))
            if cell is None:
                tds.append('<td class="empty" data-sort="">&ndash;</td>')
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
                f'style="{background(value)}" title="{escape(tip)}"><a href="{escape(cell.page)}">'
                f'{score(iv)}<span class="rank">#{rank}</span>{_flag_mark(flags)}</a></td>'
            )
        tier_attr = escape(" ".join(site.tiers[task]) or "none")
        rows.append(
            f'<tr data-family="{escape(task.split("/")[0])}" data-tier="{tier_attr}">'
            + "".join(tds)
            + "</tr>"
        )
    controls = _select("family", families) + (
        _select("tier", tiers, {"none": "outside the benchmark"}) if tiers else ""
    )
    parts = [
        nav(0),
        "<h1>marl leaderboard</h1>",
        "<p>Each cell: the statistic that ranks the task (its IQM over seeds in the task's "
        "natural unit: win rate, success rate, ...; a score between fixed anchors where the "
        "task has none) of the absolute metric (each seed's best evaluated parameters "
        "re-evaluated), with its 95% bootstrap CI, and the learner's rank (#) on the task. "
        "The shade places it between the task's worst learner (light) and best (dark). Click "
        "a column to sort, a task for its curves, a cell for its config, provenance, per-seed "
        "values and raw record.</p>",
        f'<p class="small">Shared ranks: {escape(RULE)}</p>',
        _summary(site),
        f'<div class="controls">{controls}<span id="shown"></span></div>',
        f'<table id="matrix" class="matrix sortable"><thead><tr>{ths}</tr></thead><tbody>\n'
        + "\n".join(rows)
        + "\n</tbody></table>",
        _flagged(site),
        _overall(site),
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


def _summary(site: Site) -> str:
    cov, board = site.coverage, site.board
    bits = [
        f"{len(site.study.tasks)} tasks, {len(site.study.algorithms)} learners, "
        f"{len(site.cells)} cells"
    ]
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
        tds = [escape(g["name"]), ", ".join(map(breakable, g["tasks"]))]
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
    ranking = table(
        ["rank", "learner", "runs", f"{escape(data['statistic'])} [95% CI]", "final score",
         "best - final", f"{escape(study.metric)} mean [95% CI], not ranked", "env steps",
         "wall time", "env steps/s", "flags"],
        rows,
        "ranking",
        ["num", "text", "num", "num", "num", "num", "num", "num", "num", "num", "text"],
    )  # fmt: skip
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


# --- cell -------------------------------------------------------------------------------------
def cell_page(site: Site, cell: Cell) -> str:
    row, task = cell.row, cell.task
    stat, iv = site.ranked(cell)
    about = [
        (
            "rank",
            f"{row['rank']} of {len(site.board['tasks'][task]['rows'])} (shared ranks: "
            f"{link('../../' + site.task_page(task), 'the rule')})",
        ),
        (f"{escape(stat)} (ranks the task)", escape(ci(iv))),
        (f"{escape(site.study.metric)} mean, not ranked", escape(ci(row["absolute_mean"]))),
        ("runs", str(row["runs"])),
        ("env steps per run", f"{row['env_steps']:,}"),
        ("wall time", hours(row.get("wall_time_s"))),
        ("tier", escape(cell.tier) or "&ndash;"),
        ("flags", escape(names(row.get("flags", []))) or "none"),
    ]
    here = site.out / Path(cell.page).parent
    flags = row.get("flags", [])
    body = [
        nav(2, (task, f"../../{site.task_page(task)}"), (cell.algo, None)),
        f"<h1>{escape(cell.algo)} on {escape(task)}</h1>",
        facts(about),
        *(["<h2>Flags</h2>", _flag_list(flags), _explanation(row)] if flags else []),
        *_reproduce(site, cell),
        "<h2>Per-seed values</h2>",
        _seeds(site, cell),
    ]
    for k, (record, downloads) in enumerate(zip(cell.records, cell.downloads, strict=True), 1):
        links = " ".join(
            f'<a class="download" href="{href(d.target, here)}" download>'
            f"{escape(d.label)}: {escape(d.source.name)}</a>"
            for d in downloads
        )
        body += [f"<h2>Record {k}: {escape(str(record.path))}</h2>", f"<p>{links}</p>"]
        body += _provenance(record.meta)
    return page(f"{cell.algo} on {task}: marl leaderboard", "\n".join(body), 2)


def _reproduce(site: Site, cell: Cell) -> list[str]:
    """How to train a benchmark cell again at its commit, and to re-check it at today's code
    (`marl benchmark verify`), with the latest re-check's outcome."""
    if not cell.key or not site.coverage:
        return []
    name = site.coverage["benchmark"]
    codes = [(r.meta or {}).get("code") or {} for r in cell.records]
    commits = sorted({c["commit"] for c in codes if c.get("commit")})
    inferred = any(c.get("inferred") for c in codes)
    out = ["<h2>Reproduce and re-check</h2>"]
    if len(commits) == 1:
        out += [
            f"<p>Trained at commit <code>{escape(commits[0][:12])}</code>"
            + (" (inferred from the run's date: the records predate naming it)" if inferred else "")
            + ". To train it again with that code, into a folder of yours:</p>",
            f"<pre>git checkout {escape(commits[0])}\nmarl benchmark run {escape(name)} --only "
            f"{escape(cell.key)} --records runs/reproduce-{escape(name)}</pre>",
        ]
    verify = f"marl benchmark verify {name} --only {cell.key} --seeds 2"
    out.append(
        "<p>To re-check it at today's code (its first seeds re-run, the statistic that ranks "
        f"the task compared with the interval above):</p><pre>{escape(verify)}</pre>"
    )
    v = cell.row.get("verified")
    if v:
        out.append(f'<p class="verified"><strong>Re-checked:</strong> {escape(describe(v))} '
                   f"({escape(str(v.get('created', '')))}).</p>")  # fmt: skip
    else:
        out.append("<p>Not re-checked yet.</p>")
    return out


def _seeds(site: Site, cell: Cell) -> str:
    unit, metric = site.units[cell.task], site.study.metric
    scoring = site.study.scoring.get(cell.task)
    rows = []
    for k, record in enumerate(cell.records, 1):
        best = (record.meta or {}).get("best_step") or []
        natural, ret = record.absolute_metric(unit), record.absolute_metric(metric)
        final = record.final(unit)
        scores = None if scoring is None else scoring.apply(record.absolute_metric(scoring.metric))
        for i, run in enumerate(record.runs):
            norm = None if scores is None else scores[i]
            rows.append(
                [
                    str(k),
                    escape(run.name),
                    num(natural[i]),
                    num(ret[i]),
                    num(None if norm is None else float(norm)),
                    num(final[i]),
                    f"{int(best[i]):,}" if i < len(best) and best[i] is not None else "n/a",
                    f"{int(run.steps[-1]):,}",
                ]
            )
    u, m = escape(unit), escape(metric)
    head = ["record", "run", f"{u} (absolute)", f"{m} (absolute)", "score (scoring v2)",
            f"{u} (last evaluation)", "best step", "env steps"]  # fmt: skip
    return table(head, rows, "seeds", ["num", "text", *["num"] * 6])


def _flat(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(obj, dict) and obj:
        return [kv for k, v in obj.items() for kv in _flat(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), obj if isinstance(obj, str) else json.dumps(obj))]


def _provenance(meta: dict[str, Any] | None) -> list[str]:
    if meta is None:
        return ["<p>An external record: written elsewhere, no sidecar.</p>"]
    code = meta.get("code") or {}
    commit = code.get("commit")
    code_text = (
        f"<code>{escape(commit)}</code>"
        + (" (inferred from the run's date)" if code.get("inferred") else "")
        + (" (uncommitted changes)" if code.get("dirty") else "")
        if commit
        else escape(f"marl {code['version']}" if code.get("version") else "unrecorded")
    )
    env_version = (meta.get("env_version") or {}).get("version")
    sps = meta.get("steps_per_second")
    about = [
        ("code", code_text),
        ("env version", escape(str(env_version)) if env_version else "unrecorded"),
        ("created", escape(str(meta.get("created", "unrecorded")))),
        ("device", escape(device_label(meta))),
        ("wall time", hours(meta.get("wall_time"))),
        ("compile time", hours(meta.get("compile_time"))),
        ("env steps/s", "n/a" if sps is None else f"{sps:,.0f}"),
        ("seeds x env steps", f"{meta.get('seeds', '?')} x {meta.get('env_steps', 0):,}"),
    ]
    config = meta.get("config") or {}
    out = [facts(about)]
    if meta.get("parts"):
        rows = [
            [escape(str(p.get("part"))), escape(str(p.get("created"))), hours(p.get("wall_time")),
             escape(device_label(p))]
            for p in meta["parts"]
        ]  # fmt: skip
        out += [
            "<h3>Trained in parts</h3>",
            table(["part", "created", "wall time", "device"], rows),
        ]
    algo = {
        **((config.get("derived") or {}).get("hyperparameters") or {}),
        **(config.get("algo") or {}),
    }
    hyper = [[escape(k), f"<code>{escape(v)}</code>"] for k, v in _flat(algo)]
    versions = [[escape(k), escape(str(v))] for k, v in (meta.get("versions") or {}).items()]
    out += [
        '<div class="beside">',
        f"<section><h3>Hyperparameters</h3>{table(['algo', 'value'], hyper)}</section>",
        f"<section><h3>Versions</h3>{table(['package', 'version'], versions)}</section>",
        "</div>",
        "<details><summary>Resolved config and protocol</summary><pre>"
        + escape(json.dumps({"config": config, "protocol": meta.get("protocol")}, indent=1))
        + "</pre></details>",
    ]
    return out


__all__ = ["cell_page", "overview_page", "page", "task_page"]
