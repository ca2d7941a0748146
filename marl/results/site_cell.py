"""The site's cell pages (`marl.results.site`): a learner on a task, its rank and statistic,
flags, the commands that reproduce and re-check it, per-seed values and curves, provenance."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.flags import names
from marl.results.leaderboard import device_label
from marl.results.site_data import Cell, Site, href
from marl.results.site_files import seed_rows
from marl.results.site_html import ci, facts, hours, link, nav, num, page, table
from marl.results.site_pages import _explanation, _flag_list
from marl.results.site_svg import seed_curves
from marl.results.verified import describe

DATA_LINK = "Download: every seed of this cell, values and curves (JSON)"


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
        *_policies(cell),
        "<h2>Per-seed values</h2>",
        _seeds(site, cell),
        "<p>" + link(href(site.out / cell.data, here), DATA_LINK) + "</p>",
        "<h2>Per-seed curves</h2>",
        _curves(site, cell),
    ]
    for k, record in enumerate(cell.records, 1):
        body += [
            f"<h2>Record {k}</h2>",
            f"<p>Raw record (every episode of every evaluation): <code>{escape(str(record.path))}"
            "</code> in the records the board was made from.</p>",
        ]
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
    verify = f"marl benchmark verify {name} --only {cell.key}"
    out.append(
        "<p>To re-check it at today's code (re-run whole, the statistic that ranks the task "
        "compared with the interval above, each seed with the committed one; <code>--seeds 2"
        "</code> re-runs two seeds, a quicker check that cannot reproduce exactly, since "
        f"fewer seeds compile another program):</p><pre>{escape(verify)}</pre>"
    )
    v = cell.row.get("verified")
    if v:
        out.append(
            f'<p class="verified"><strong>Re-checked:</strong> {escape(describe(v))} '
            f"({escape(str(v.get('created', '')))}).</p>"
        )
    else:
        out.append("<p>Not re-checked yet.</p>")
    return out


PARAMS = ("best_params.f16.msgpack.gz", "best_params.msgpack.gz", "best_params.msgpack")


def _policies(cell: Cell) -> list[str]:
    """The trained policies a cell keeps (each seed's best parameters) and the `marl eval`
    command that plays them again; or that it keeps none."""
    out = ["<h2>Trained policies</h2>"]
    kept = []
    for record in cell.records:
        folder = Path(record.path).parent
        found = next((folder / n for n in PARAMS if (folder / n).is_file()), None)
        if found is not None:
            episodes = ((record.meta or {}).get("protocol") or {}).get("absolute_episodes", 320)
            kept.append((found, f"marl eval {folder} --episodes {episodes}"))
    if not kept:
        return [*out, "<p>None kept: the cell was trained before parameters were kept.</p>"]
    for found, command in kept:
        out += [
            f"<p>Each seed's best evaluated parameters: <code>{escape(str(found))}</code> beside "
            "its record. Played again greedily on fresh episodes (the absolute metric's "
            f"number):</p><pre>{escape(command)}</pre>"
        ]
    return out


def _seeds(site: Site, cell: Cell) -> str:
    unit, metric = site.units[cell.task], site.study.metric
    rows = [
        [
            str(r["record"]),
            escape(r["run"]),
            num(r["absolute"][unit]),
            num(r["absolute"][metric]),
            num(r["score"]),
            num(r["final"]),
            "n/a" if r["best_step"] is None else f"{r['best_step']:,}",
            f"{r['env_steps']:,}",
        ]
        for r in seed_rows(site, cell)
    ]
    u, m = escape(unit), escape(metric)
    columns = [  # (heading, type)
        ("record", "num"),
        ("run", "text"),
        (f"{u} (absolute)", "num"),
        (f"{m} (absolute)", "num"),
        ("score (scoring v2)", "num"),
        (f"{u} (last evaluation)", "num"),
        ("best step", "num"),
        ("env steps", "num"),
    ]
    return table([h for h, _ in columns], rows, "seeds", [t for _, t in columns])


def _curves(site: Site, cell: Cell) -> str:
    """Each seed's greedy evaluations in the task's unit against env steps (inline SVG)."""
    unit = site.units[cell.task]
    rows = seed_rows(site, cell)
    svg = seed_curves(
        [r["curve"]["steps"] for r in rows],
        [[np.nan if v is None else v for v in r["curve"][unit]] for r in rows],
        [f"record {r['record']}, {r['run']}" for r in rows],
        unit.replace("_", " "),
    )
    return (
        f"<figure>{svg}<figcaption>{escape(unit.replace('_', ' '))} of the greedy policy at each "
        "evaluation, one line per seed (hover for its name), the mean over seeds in bold."
        "</figcaption></figure>"
    )


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
        (_summed("wall time", meta), hours(meta.get("wall_time"))),
        (_summed("compile time", meta), hours(meta.get("compile_time"))),
        ("env steps/s", "n/a" if sps is None else f"{sps:,.0f}"),
        ("seeds x env steps", f"{meta.get('seeds', '?')} x {meta.get('env_steps', 0):,}"),
    ]
    config = meta.get("config") or {}
    out = [facts(about)]
    if meta.get("parts"):
        rows = [
            [
                escape(str(p.get("part"))),
                escape(str(p.get("created"))),
                hours(p.get("wall_time")),
                escape(device_label(p)),
            ]
            for p in meta["parts"]
        ]
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


__all__ = ["cell_page"]


def _summed(label: str, meta: dict[str, Any]) -> str:
    """A merged run's time is its parts' sum (the compute it took, `marl merge`), not the time
    from its first part's start to its last part's end: the label says so."""
    parts = meta.get("parts") or []
    return f"{label}, summed over {len(parts)} parts" if parts else label
