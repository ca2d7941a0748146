"""Learning benchmark: learners on one task, many seeds, scored against the random and reference
anchors. Not part of the tests (it takes tens of minutes on a 2-core CPU).

    python scripts/learning_benchmark.py --env particle/spread --algos ippo,mappo,happo \
        --seeds 10 --budget 2e6 [--set algo.lr=1e-3 ...] [--name NAME [--resume]]

Each learner runs through `marl train` (same configs, same run directories); then the script
computes, per learner, the IQM over seeds of the final greedy evaluation return (mean over the
evaluation episodes) and the fraction of the random -> reference gap it closes (the anchors of
`marl.baselines.anchor_scores`: random actions and the task's scripted reference policy,
normalised as `marl.results.scoring` does), and merges the
rows into `results/learning/<env>.json` and `.md` (a learner's earlier row is replaced, the
other learners' rows are kept; each row records its own seeds, budget and overrides).
Environment keywords (`--set env.kwargs.K=V`) make a variant task with its own record,
`results/learning/<family>_<task>.json`, the task named as in run directories
(`combat_3m[see_enemy_actions=true].json`); its anchors are measured on the variant.
Runs checkpoint every segment: after a kill, the same command with `--name <the run name it
printed> --resume` continues them (the row's wall time then counts only the resumed part).

`--add-screen RUN_DIR --change TEXT` adds a finished run of a variant (any `marl train` run of
the task) to the Screens table of its task's record (or of `--env`'s, e.g. a run on a variant
task screened for the plain task), its absolute metric per seed, without training.
`--change TEXT` alone (no `--add-screen`) trains as usual but records each run as a screen of
`--env`'s record instead of replacing the learner's row: the rows and their notes stay as
they are.

`--extend --set seed=K` adds seeds to a learner's existing row instead of replacing it: the
new run uses root seed K (its seeds are independent of the row's earlier runs), must match
the row's budget and other overrides, and the row's figures are recomputed over the seeds of
all its runs (read back through `marl.results.runfolder`).

Feeds `results/learning/<family>_<task>.json` and `.md`; each page lists the commands of
its rows.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import marl
from marl import cli
from marl.baselines import anchor_scores
from marl.learning.xla import configure_xla
from marl.results.files import atomic_write, read_json, write_json
from marl.results.protocol import RecordError, split_env_id
from marl.results.runfolder import read_run
from marl.results.scoring import RETURN, TaskScore
from marl.results.stats import iqm
from marl.run.errors import ConfigError
from marl.run.train.compose import compose
from marl.run.train.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _rel(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def root_seed(overrides: list[str]) -> int:
    """The root seed a run's overrides set (`seed=K`), 0 if none."""
    seeds = [int(o.split("=", 1)[1]) for o in overrides if o.startswith("seed=")]
    return seeds[-1] if seeds else 0


def strip_seed(overrides: list[str]) -> list[str]:
    """The overrides without the root seed (what runs of one row must share)."""
    return [o for o in overrides if not o.startswith("seed=")]


def variant(env_id: str, overrides: list[str]) -> tuple[str, dict]:
    """The task the environment overrides among `overrides` make of `env_id` (its run-directory
    name: the scenario plus its non-default keywords) and those keywords."""
    env_overrides = [o for o in overrides if o.lstrip("+~").startswith("env.")]
    try:
        run = resolve(compose([f"env={env_id}", *env_overrides]))
    except ConfigError as e:
        raise SystemExit(f"--env {env_id} {' '.join(env_overrides)}: {e}") from None
    return run.task, dict(run.env_kwargs)


def runs_of(row: dict) -> list[dict]:
    """The runs a row pools; a row written before rows held several runs is its one run."""
    if row.get("runs"):
        return row["runs"]
    keys = ("run_dir", "seeds", "wall_time_s", "resumed", "command")
    run = {k: row.get(k) for k in keys}
    run["root_seed"] = root_seed(row.get("overrides", []))
    return [run]


def extendable_row(path: Path, algo: str, args: argparse.Namespace) -> dict:
    """The learner's row at `path` that `--extend` adds to, after checking the run fits it."""
    rows = read_json(path)["results"] if path.exists() else []
    row = next((r for r in rows if r["algo"] == algo), None)
    if row is None:
        raise SystemExit(f"--extend: no {algo} row in {path} to add seeds to")
    runs = runs_of(row)
    if float(row["budget"]) != float(args.budget):
        raise SystemExit(
            f"--extend: the {algo} row's budget is {row['budget']:g}, not {args.budget:g}"
        )
    if strip_seed(row.get("overrides", [])) != strip_seed(args.set):
        raise SystemExit(
            f"--extend: the {algo} row ran with overrides {row.get('overrides', [])}; "
            f"this run has {args.set} (only seed= may differ)"
        )
    used = {r["root_seed"] for r in runs}
    if root_seed(args.set) in used:
        raise SystemExit(
            f"--extend: root seed {root_seed(args.set)} is already in the {algo} row "
            f"(root seeds {sorted(used)}); pass --set seed=K with a new K"
        )
    return row


def summarise(
    algo: str, runs: list[dict], anchors: dict, budget: float, overrides: list[str]
) -> dict:
    """A learner's row: IQMs over the seeds of all its runs (`marl.results.runfolder`)."""
    finished = [read_run(ROOT / r["run_dir"]) for r in runs]

    def per_seed(part: str, metric: str) -> np.ndarray | None:
        try:
            return np.concatenate([getattr(f, part)(metric) for f in finished])
        except RecordError:  # a run that did not record it
            return None

    returns, absolute = per_seed("last", "return"), per_seed("absolute", "return")
    won, won_abs = per_seed("last", "won"), per_seed("absolute", "won")
    score = iqm(returns)
    gap = None
    if anchors["reference"] is not None:
        scoring = TaskScore(RETURN, "anchored", anchors["random"], anchors["reference"])
        gap = float(scoring.apply(score))
    env_steps = finished[-1].env_steps
    steps = [f.env_steps * f.final["seeds"] for f in finished]
    train_time = sum(n / f.final["steps_per_second"] for n, f in zip(steps, finished, strict=True))
    row = {
        "algo": algo,
        "iqm_return": score,
        "iqm_absolute": None if absolute is None else iqm(absolute),
        "gap_closed": gap,
        "iqm_won": None if won is None else iqm(won),
        "iqm_absolute_won": None if won_abs is None else iqm(won_abs),
        "per_seed": returns.tolist(),
        "seeds": len(returns),
        "budget": budget,
        "overrides": overrides,
        "wall_time_s": sum(r["wall_time_s"] for r in runs),
        "resumed": any(r.get("resumed") for r in runs),
        "steps_per_second": sum(steps) / train_time,
        "env_steps": env_steps,
        "run_dir": runs[0]["run_dir"],
        "command": runs[0]["command"],
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if len(runs) > 1:
        row["runs"] = runs
    return row


def merge_rows(path: Path, rows: list[dict]) -> list[dict]:
    """Rows of an earlier record at `path` for other learners, followed by `rows`."""
    if not path.exists():
        return rows
    new = {r["algo"] for r in rows}
    old = read_json(path)
    kept = []
    for r in old.get("results", []):
        if r["algo"] in new:
            continue
        r.setdefault("seeds", old.get("seeds"))
        r.setdefault("budget", old.get("budget"))
        if "command" not in r and old.get("budget") is not None:
            r["command"] = (
                f"python scripts/learning_benchmark.py --env {old['env']} --algos {r['algo']} "
                f"--seeds {old.get('seeds')} --budget {old['budget']:g}"
                + "".join(f" --set {s}" for s in old.get("overrides", []))
            )
        kept.append(r)
    order = ["ippo", "mappo", "happo", "iql", "vdn", "qmix"]
    merged = kept + rows
    return sorted(merged, key=lambda r: order.index(r["algo"]) if r["algo"] in order else 99)


def run_one(
    env_id: str,
    task: str,
    algo: str,
    seeds: int,
    budget: float,
    out: Path,
    extra: list[str],
    name: str | None = None,
    resume: bool = False,
):
    name = name or f"bench-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}"
    args = [
        "train",
        f"env={env_id}",
        f"algo={algo}",
        f"seeds={seeds}",
        f"budget={budget}",
        f"out={out}",
        f"name={name}",
        *(["resume=true"] if resume else []),
        *extra,
    ]
    print("marl " + " ".join(args), flush=True)
    start = time.perf_counter()
    code = cli.main(args)
    if code != 0:
        raise SystemExit(f"marl train failed with exit code {code}")
    run_dir = out / split_env_id(env_id)[0] / task / algo / name  # where `marl train` wrote it
    return run_dir, time.perf_counter() - start


def main() -> None:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", help="environment id (default particle/spread)")
    parser.add_argument("--algos", default="ippo,mappo,happo")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=2e6)
    parser.add_argument("--out", default=str(ROOT / "results" / "runs"))
    parser.add_argument("--set", action="append", default=[], help="extra marl train override")
    parser.add_argument(
        "--name", help="run name under <out>/<env>/<algo>/ (default: bench-<UTC time>)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the unfinished runs called --name (after a killed benchmark)",
    )
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite the .md from the .json and exit"
    )
    parser.add_argument(
        "--add-screen",
        metavar="RUN_DIR",
        help="add a finished run of a variant to its task's Screens table (with --change) and exit",
    )
    parser.add_argument(
        "--change",
        help="what the run changes, in words: with --add-screen, or alone to train a screen "
        "(the run joins the Screens table; the learner's row is kept)",
    )
    parser.add_argument(
        "--extend",
        action="store_true",
        help="add this run's seeds to the learner's existing row (with --set seed=K, a new K)",
    )
    args = parser.parse_args()
    if args.resume and not args.name:
        parser.error("--resume needs --name (the runs to continue)")
    if args.add_screen:
        if not args.change:
            parser.error("--add-screen needs --change (what the run changes)")
        stem = None  # the run's own task, unless --env names the record
        if args.env:
            stem = f"{split_env_id(args.env)[0]}_{variant(args.env, args.set)[0]}"
        path = add_screen(Path(args.add_screen), args.change, ROOT / "results" / "learning", stem)
        print(f"wrote {path} and {path.with_suffix('.md')}")
        return
    args.env = args.env or "particle/spread"
    family = split_env_id(args.env)[0]
    task, env_kwargs = variant(args.env, args.set)
    stem = f"{family}_{task}"
    out_dir = ROOT / "results" / "learning"
    if args.render_only:
        atomic_write(out_dir / f"{stem}.md", markdown(read_json(out_dir / f"{stem}.json")))
        return

    algos = args.algos.split(",")
    record_path = out_dir / f"{stem}.json"
    if args.change and args.extend:
        parser.error("--change records a screen; --extend adds to a row: choose one")
    if args.change and not record_path.exists():  # checked before any training
        parser.error(f"{record_path}: no record to add a screen to; run the rows first")
    # checked before any training: a mismatch should not cost a run
    earlier = {a: extendable_row(record_path, a, args) for a in algos} if args.extend else {}

    def train(algo: str):
        """`marl train` of one learner with this command's settings."""
        return run_one(
            args.env,
            task,
            algo,
            args.seeds,
            args.budget,
            Path(args.out),
            args.set,
            args.name,
            args.resume,
        )

    if args.change:
        for algo in algos:
            run_dir, _ = train(algo)
            path = add_screen(run_dir, args.change, out_dir, stem)
            print(f"{algo}: screen added to {path} and {path.with_suffix('.md')}", flush=True)
        return
    env = marl.make(args.env, **env_kwargs)
    anchors = anchor_scores(env, num_episodes=320)
    print(f"anchors on {family}/{task}: {anchors}", flush=True)
    rows = []
    for algo in algos:
        run_dir, wall = train(algo)
        command = (
            f"python scripts/learning_benchmark.py --env {args.env} --algos {algo} "
            f"--seeds {args.seeds} --budget {args.budget:g}"
            + "".join(f" --set {s}" for s in args.set)
            + (" --extend" if args.extend else "")
        )
        run = {
            "run_dir": _rel(run_dir),
            "seeds": args.seeds,
            "root_seed": root_seed(args.set),
            "wall_time_s": wall,
            "resumed": args.resume,
            "command": command,
        }
        old = earlier.get(algo)
        runs = (runs_of(old) if old else []) + [run]
        row = summarise(algo, runs, anchors, args.budget, strip_seed(args.set))
        if old and old.get("note"):
            row["note"] = old["note"]
        rows.append(row)
        print(f"{algo}: IQM {row['iqm_return']:.2f} over {row['seeds']} seeds", flush=True)

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = merge_rows(record_path, rows)
    kept = read_json(record_path) if record_path.exists() else {}  # screens stay
    record = {**kept, "env": f"{family}/{task}", "anchors": anchors, "results": rows}
    write_json(record_path, record)
    text = markdown(record)
    atomic_write(out_dir / f"{stem}.md", text)
    print(text)


def screen_entry(run_dir: Path, change: str) -> dict:
    """A screen: one finished run of a learner variant and its absolute metric per seed (the
    win rate where the task has one, else the return)."""
    run = read_run(run_dir)
    absolute = run.final.get("absolute")
    if not absolute:
        raise SystemExit(f"{run_dir}: no absolute metric in final.json (run unfinished or old)")
    metric = "won" if "won" in absolute else "return"
    per_seed = [float(x) for x in run.absolute(metric)]
    return {
        "algo": run.algo,
        "change": change,
        "command": run.command,
        "seeds": run.final["seeds"],
        "env_steps": run.env_steps,
        "metric": metric,
        "absolute": per_seed,
        "iqm_absolute": iqm(np.asarray(per_seed)),
        "run_dir": _rel(run_dir),
    }


def add_screen(run_dir: Path, change: str, out_dir: Path, stem: str | None = None) -> Path:
    """Add (or replace, by run directory) a screen in the record `<out_dir>/<stem>.json`
    (default: the run's own task's); returns the record's path."""
    try:
        task = read_run(run_dir).task
    except RecordError as e:
        raise SystemExit(str(e)) from None
    stem = stem or task.replace("/", "_", 1)
    path = out_dir / f"{stem}.json"
    if not path.exists():
        raise SystemExit(f"{path}: no learning-benchmark record for this task yet")
    record = read_json(path)
    entry = screen_entry(run_dir, change)
    screens = record.setdefault("screens", [])
    same = [k for k, e in enumerate(screens) if e["run_dir"] == entry["run_dir"]]
    if same:
        screens[same[0]] = entry  # a screen added again keeps its place
    else:
        screens.append(entry)
    write_json(path, record)
    atomic_write(path.with_suffix(".md"), markdown(record))
    return path


def _screens_markdown(screens: list[dict]) -> list[str]:
    won = all(e["metric"] == "won" for e in screens)

    def cell(x: float) -> str:
        return f"{100 * x:.1f}%" if won else f"{x:.2f}"

    lines = [
        "",
        "## Screens",
        "",
        "Variants tried beside the rows above, each one finished run (`--change`, or "
        "`--add-screen` for a run made elsewhere): the absolute metric per seed (each seed's "
        "best evaluated parameters re-evaluated on 320 episodes) and its IQM over seeds.",
        "",
        f"| learner | change | seeds x env steps | absolute {'win rate' if won else 'return'} "
        "per seed | IQM | run |",
        "|---|---|---|---|---|---|",
    ]
    for e in screens:
        per_seed = " / ".join(cell(x) for x in e["absolute"])
        lines.append(
            f"| {e['algo']} | {e['change']} | {e['seeds']} x {e['env_steps']:,} | {per_seed} | "
            f"{cell(e['iqm_absolute'])} | {e['run_dir'].removeprefix('results/runs/')} |"
        )
    return lines


def markdown(record: dict) -> str:
    """The Markdown table of a learning-benchmark record (`results/learning/<env>.json`)."""
    anchors, rows = record["anchors"], record["results"]
    lines = [
        f"# Learning benchmark: {record['env']}",
        "",
        "Greedy evaluation, 32 episodes per seed at the end of training; team return (summed "
        "over agents); IQM over seeds. The absolute metric re-evaluates each seed's best "
        "evaluated parameters on 320 episodes (n/a: run before the protocol had it). "
        "Anchors over 320 episodes: random "
        f"{anchors['random']:.2f}, reference (the scripted policy) "
        + ("n/a" if anchors["reference"] is None else f"{anchors['reference']:.2f}")
        + ".",
        "",
    ]
    wins = any(r.get("iqm_won") is not None for r in rows)
    win_head = " IQM win rate | IQM absolute win rate |" if wins else ""
    lines += [
        "| learner | seeds | env steps | IQM return | gap closed | IQM absolute metric |"
        + win_head
        + " env steps/s (all seeds) | wall time |",
        "|---|---|---|---|---|---|" + ("---|---|" if wins else "") + "---|---|",
    ]
    for r in rows:
        gap = "n/a" if r["gap_closed"] is None else f"{100 * r['gap_closed']:.0f}%"
        sps = r["steps_per_second"] or 0
        win_cells = (
            f" {_pct(r.get('iqm_won'))} | {_pct(r.get('iqm_absolute_won'))} |" if wins else ""
        )
        lines.append(
            f"| {r['algo']} | {r.get('seeds', '?')} | {int(r.get('budget', 0)):,} | "
            f"{r['iqm_return']:.2f} | {gap} | {_num(r.get('iqm_absolute'))} |{win_cells} "
            f"{sps:,.0f} | {r['wall_time_s'] / 60:.1f} min"
            + (" (resumed part) |" if r.get("resumed") else " |")
        )
    lines += ["", "Commands:", ""]
    for r in rows:
        commands = [run["command"] for run in runs_of(r)]
        if commands[0]:
            lines.append("- " + ", then ".join(f"`{c}`" for c in commands))
    lines += [f"- {r['algo']}: {r['note']}" for r in rows if r.get("note")]
    if record.get("screens"):
        lines += _screens_markdown(record["screens"])
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
