"""The leaderboard: rankings per task and, per group of tasks the same algorithms ran, overall
(normalised IQM with stratified bootstrap CIs); leaderboard.md, .json and .html."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from marl.results import stats
from marl.results.contests import contest_figures, contests_markdown
from marl.results.files import atomic_write, write_json
from marl.results.flags import MEANINGS, cell_id, flag_text, flagged, names
from marl.results.orders import orders_markdown, peer_orders
from marl.results.published import Published, by_task, published_markdown, steps_text
from marl.results.ranks import RULE, shared_ranks, significant
from marl.results.report import fmt_ci, html_page, prune_figures, summarise, write_figures
from marl.results.sensitivity import group_sensitivity, ranked_row, sensitivity_markdown
from marl.results.study import Group, Study
from marl.results.verified import verified_markdown


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def ranked_key(task: dict[str, Any]) -> str:
    """The row field that ranks a summarised task: its score IQM where it is scored, else the
    mean of the metric."""
    return "normalised_iqm" if task.get("scoring") else "absolute_mean"


def statistic(task: dict[str, Any], metric: str) -> str:
    """The name of what ranks a task's learners, displayed wherever its scores are shown:
    `won IQM` (scored in a natural unit), `score IQM` (scored between anchors) or
    `episode_return mean` (not scored)."""
    score = task.get("scoring")
    if task["ranked_by"] == "absolute_mean" or not score:
        return f"{metric} mean"
    return f"{score['metric']} IQM" if score["kind"] == "natural" else "score IQM"


def device_label(meta: dict[str, Any] | None) -> str:
    """A record's device in words: `cpu, 2 cores` or `NVIDIA H100 x1` (`rundir.device`)."""
    d = (meta or {}).get("device")
    if not d:
        return "unrecorded"
    if d.get("platform") == "cpu":
        return f"cpu, {d.get('cpu_count', '?')} cores"
    return f"{d.get('kind', d.get('platform'))} x{d.get('count', 1)}"


def leaderboard(
    study: Study,
    reps: int = stats.REPS,
    seed: int = 0,
    published: Sequence[Published] = (),
    notes: dict[str, str] | None = None,
    verified: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Rankings per task (normalised IQM of the absolute metric; raw mean where a task has no
    reference) and overall: per group of normalised tasks that the same algorithms ran, the
    IQM over the group's tasks (stratified bootstrap CI). `published`: peers' figures, listed
    under the tasks they stand beside (`marl.results.published`), never ranked; where a source
    states its learners' order, each task says whether its runs here agree
    (`marl.results.orders`). Each row carries its cell's flags (`marl.results.flags`) and,
    where `notes` (cell id -> paragraph, `flags.read_notes`) hold one, its `explanation`;
    where `verified` (cell id -> outcome, `marl.run.campaigns.verify`) holds one, its `verified`."""
    summary = summarise(study, reps=reps, seed=seed)
    beside = by_task(list(published), list(summary["tasks"]))
    orders = peer_orders(study, list(published), reps=reps, seed=seed)
    tasks = {}
    for task, data in summary["tasks"].items():
        key = ranked_key(data)
        # normalised scores rise towards the reference whatever the metric's direction
        sign = 1.0 if key == "absolute_mean" and data.get("lower_is_better") else -1.0
        ranks = shared_ranks(
            {a: row[key] for a, row in data["algorithms"].items()},
            lower_is_better=sign > 0,
        )
        ranked = [(a, r, data["algorithms"][a]) for a, r in ranks]
        for algo, _, row in ranked:
            cell = cell_id(task, algo)
            explained, checked = (notes or {}).get(cell), (verified or {}).get(cell)
            if explained:
                row["explanation"] = explained
            if checked:
                row["verified"] = checked
        tasks[task] = {
            "ranked_by": key,
            "statistic": statistic({"ranked_by": key, **data}, summary["metric"]),
            "lower_is_better": data["lower_is_better"],
            "anchors": data["anchors"],
            "scoring": data.get("scoring"),
            "rows": [{"rank": r, "algorithm": a, **row} for a, r, row in ranked],
            "published": beside.get(task, []),
            "orders": orders.get(task, []),
        }
    overall, group_v2 = [], {}
    for g in summary["groups"]:
        group_ranks = shared_ranks(
            {a: agg["iqm"] for a, agg in g["aggregates"].items()},
            beats=significant(g["improvement"]),
        )
        overall.append(
            {
                "name": g["name"],
                "tasks": g["tasks"],
                "families": g["families"],
                "improvement": g["improvement"],
                "rows": [
                    {
                        "rank": rank,
                        "algorithm": algo,
                        "external": any(
                            e.external for (t, a), e in study.entries.items() if a == algo
                        ),
                        **g["aggregates"][algo],
                    }
                    for algo, rank in group_ranks
                ],
            }
        )
        group_v2[g["name"]] = {
            algo: ranked_row(g["aggregates"][algo]["iqm"], rank) for algo, rank in group_ranks
        }
    sensitivity = [
        group_sensitivity(
            study,
            Group(g["name"], tuple(g["tasks"]), tuple(g["algorithms"])),
            reps=reps,
            seed=seed,
            v2=group_v2[g["name"]],
        )
        for g in summary["groups"]
        if len(g["families"]) == 1 and len(g["algorithms"]) > 1
    ]
    devices = Counter(
        device_label(r.meta) for e in study.entries.values() for r in e.records if not r.external
    )
    return {
        "metric": summary["metric"],
        "tasks": tasks,
        "overall": overall,
        "sensitivity": [{**sec, "flips": [list(f) for f in sec["flips"]]} for sec in sensitivity],
        "devices": dict(sorted(devices.items())),
    }


def leaderboard_markdown(
    board: dict[str, Any], command: str = "", figs: dict[str, str] | None = None
) -> str:
    """The leaderboard as Markdown; `figs`: figure name -> path relative to the file, shown
    under each group (aggregates, sample efficiency) and task (evaluation curves)."""
    figs = figs or {}

    def figure(key: str, title: str) -> list[str]:
        return [f"![{title}]({figs[key]})", ""] if key in figs else []

    lines = [
        "# Leaderboard",
        "",
        "Ranked by the IQM of scores of the absolute metric (each seed's best evaluated "
        "parameters re-evaluated), with 95% stratified bootstrap CIs. Scoring v2: each task "
        "is scored in its natural unit where it has a bounded one (win rate, success rate, "
        "collected fraction, order parameter) and otherwise min-max between fixed anchors "
        "declared with the benchmark (0 = random policy, 1 = the strongest reference); each "
        "task's rule is stated under it. Across families, each family weighs the same: an "
        "aggregate is the mean over families of the family's aggregate, never one pool of "
        "unlike tasks. The final parameters' score stands beside each cell's, with the "
        "collapse (best - final). External records (not produced by marl) are marked.",
        "",
        f"Shared ranks: {RULE}",
        "",
    ]
    if command:
        lines += [f"Generated by `{command}`.", ""]
    if board.get("devices"):
        where = ", ".join(f"{d} ({n})" for d, n in board["devices"].items())
        lines += [
            "Wall time is each record's whole run (compile, training and evaluations), summed "
            "over a task's records of one algorithm (and over the parts of a run trained in "
            "parts, `marl merge`), and env steps/s is every seed's env steps "
            "over that time: below the training-only rate a run prints, and a measure of the "
            f"machine it ran on as much as of the learner. Records by device: {where}.",
            "",
        ]
    lines += coverage_markdown(board.get("coverage"))
    lines += flags_markdown(board)
    lines += verified_markdown(board)
    if len(board["overall"]) > 1:
        lines += [
            "Aggregates over different task sets do not compare, so each table ranks the "
            "algorithms that ran exactly the same tasks, over those tasks: per family, then "
            "across families where the same algorithms ran tasks of several (families "
            "weighted equally).",
            "",
        ]
    for group in board["overall"]:
        lines += [
            f"## {group['name']}: {', '.join(group['tasks'])}",
            "",
            "| rank | algorithm | score IQM [95% CI] |",
            "|---|---|---|",
        ]
        for row in group["rows"]:
            name = row["algorithm"] + (" (external)" if row["external"] else "")
            lines.append(f"| {row['rank']} | {name} | {fmt_ci(row['iqm'])} |")
        lines.append("")
        steps = {row["env_steps"] for t in group["tasks"] for row in board["tasks"][t]["rows"]}
        if len(steps) > 1:  # one nominal budget, rounded by each learner (protocol.BUDGET_RTOL)
            lines += [
                f"Env steps per run range from {min(steps):,} to {max(steps):,} over these "
                "records: one nominal budget, which each learner rounds up to its own update "
                "size (each task's table gives every run's).",
                "",
            ]
        slug = Group(group["name"], (), ()).slug
        for kind in ("aggregates", "profiles", "improvement", "sample_efficiency"):
            lines += figure(f"{kind}/{slug}", f"{kind.replace('_', ' ')}: {group['name']}")
    lines += sensitivity_markdown(board.get("sensitivity", []))
    for task, data in board["tasks"].items():
        norm = data["ranked_by"] == "normalised_iqm"
        rule = (data.get("scoring") or {}).get("rule")
        stat = data.get("statistic") or statistic(data, board["metric"])
        lines += [
            f"## {task}",
            "",
            f"ranked by {stat}; scored: {rule}"
            if norm
            else f"not scored: ranked by {stat}"
            + (" (lower is better)" if data.get("lower_is_better") else ""),
            "",
            f"| rank | algorithm | runs | {stat} [95% CI] | final score | best - final "
            f"| {board['metric']} mean [95% CI], not ranked | env steps per run "
            "| wall time | env steps/s | flags |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in data["rows"]:
            name = row["algorithm"] + (" (external)" if row["external"] else "")
            wall = row.get("wall_time_s")
            speed = (
                "n/a | n/a"
                if wall is None
                else (f"{wall / 3600:.2f} h | {row['steps_per_second']:,.0f}")
            )
            lines.append(
                f"| {row['rank']} | {name} | {row['runs']} | {fmt_ci(row[data['ranked_by']])} | "
                f"{_num(row.get('final_score'))} | {_num(row.get('collapse'))} | "
                f"{fmt_ci(row['absolute_mean'])} | {row['env_steps']:,} | {speed} | "
                f"{names(row.get('flags', []))} |"
            )
        lines.append("")
        lines += published_markdown(data.get("published", []))
        lines += orders_markdown(data.get("orders", []))
        lines += figure("task_" + task.replace("/", "_"), f"{task}: evaluation curves")
    return "\n".join(lines)


def flags_markdown(board: dict[str, Any]) -> list[str]:
    """The flagged cells (`marl.results.flags`): the rules, then each cell with its flags, their
    numbers and its explanation; nothing where no cell is flagged."""
    marked = flagged(board)
    if not marked:
        return []
    lines = [
        f"## Flagged cells: {len(marked)}",
        "",
        "A flag says that a cell's score is not the task's answer (`marl.results.flags`); each "
        "flagged cell's explanation stands beside its flags and on its page of the site.",
        "",
        *(f"- {flag}: {meaning}." for flag, meaning in MEANINGS.items()),
        "",
    ]
    for cell, row in marked:
        lines += [
            f"{cell}: {flag_text(row['flags'], meanings=False)}. "
            + (
                f"Explanation: {row['explanation']}"
                if row.get("explanation")
                else "No explanation yet."
            ),
            "",
        ]
    return lines


def coverage_markdown(cov: dict[str, Any] | None) -> list[str]:
    """The benchmark's families (seeds, budget, the papers' budgets) and the cells these
    records hold (`marl.run.campaigns.benchmark_runs.coverage`), and the rest."""
    if not cov:
        return []
    rows, name = cov["cells"], cov["benchmark"]
    held = [r for r in rows if r["held"]]
    lines = [f"## Benchmark {name}: {len(held)} of {len(rows)} cells", ""]
    families = cov.get("families", [])
    if families:
        lines += [
            "| tier | family | tasks | learners | seeds x env steps | cells here | the papers |",
            "|---|---|---|---|---|---|---|",
        ]
        for f in families:
            cells = [r for r in rows if (r["tier"], r["family"]) == (f["tier"], f["family"])]
            lines.append(
                f"| {f['tier']} | {f['family']} | {', '.join(f['tasks'])} | "
                f"{', '.join(f['algos'])} | {f['seeds']} x {steps_text(f['budget'])} | "
                f"{sum(r['held'] for r in cells)} of {len(cells)} | {f['papers']} |"
            )
        lines.append("")
    if len(held) == len(rows):
        return [
            *lines,
            f"These records hold every cell of benchmark {name} at its seed count and budget.",
            "",
        ]
    tiers = Counter(r["tier"] for r in rows)
    per_tier = ", ".join(
        f"{t} tier {sum(r['held'] for r in rows if r['tier'] == t)} of {n}"
        for t, n in tiers.items()
    )
    missing = [
        f"{r['cell']} ({r['tier']}"
        + (f", {r['runs']} of {r['seeds']} runs, {r['env_steps']:,} steps" if r["runs"] else "")
        + (_parts_text(r) if r.get("parts") else "")
        + ")"
        for r in rows
        if not r["held"]
    ]
    return [
        *lines,
        f"These records hold {len(held)} of the {len(rows)} cells of benchmark {name} at the "
        f"cell's seed count and budget ({per_tier}; `marl benchmark status {name}` says what "
        f"is left and its cost). Not yet here: {'; '.join(missing)}.",
        "",
    ]


def _parts_text(row: dict[str, Any]) -> str:
    """`, 7 of 10 seeds trained in parts (0-3, 4-6)` for a cell whose parts are not all done."""
    spans = ", ".join(f"{a}-{b - 1}" if b - a > 1 else f"{a}" for a, b in row["parts"])
    trained = sum(b - a for a, b in row["parts"])
    return f", {trained} of {row['seeds']} seeds trained in parts ({spans})"


def write_leaderboard(
    study: Study,
    out: str | Path,
    reps: int = stats.REPS,
    seed: int = 0,
    command: str = "",
    contests: Sequence[dict[str, Any]] = (),
    published: Sequence[Published] = (),
    coverage: dict[str, Any] | None = None,
    notes: dict[str, str] | None = None,
    verified: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Path]:
    """Write `leaderboard.md`, `.json` and `.html` (figures linked) into the directory `out`,
    and the figures into `out/leaderboard_files/figures/`; `contests`: cross-play records
    (`marl.results.contests.read_contests`) for the competitive section; `published`: peers'
    figures (`marl.results.published.read_published`) beside the tasks they concern;
    `coverage`: the benchmark cells these records hold
    (`marl.run.campaigns.benchmark_runs.coverage`); `notes`: explanations of flagged cells (cell
    id -> paragraph, `marl.results.flags`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    board = leaderboard(
        study, reps=reps, seed=seed, published=published, notes=notes, verified=verified
    )
    if coverage:
        board["coverage"] = coverage
    figs = write_figures(study, out / "leaderboard_files", reps, seed)
    figs.update(contest_figures(list(contests), out / "leaderboard_files" / "figures"))
    prune_figures(out / "leaderboard_files" / "figures", figs)
    board["contests"] = [
        {k: r[k] for k in ("task", "command", "players", "ratings", "matrix")} for r in contests
    ]
    rel = {name: str(path.relative_to(out)) for name, path in figs.items()}
    markdown = "\n".join(
        [leaderboard_markdown(board, command, rel), "", *contests_markdown(list(contests), rel)]
    ).rstrip()
    atomic_write(out / "leaderboard.md", markdown + "\n")
    write_json(out / "leaderboard.json", board)
    page = html_page(markdown, figs, out, "marl leaderboard", inline=False)  # beside its figures
    atomic_write(out / "leaderboard.html", page)
    return {
        "md": out / "leaderboard.md",
        "json": out / "leaderboard.json",
        "html": out / "leaderboard.html",
    }
