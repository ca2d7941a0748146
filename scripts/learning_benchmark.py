"""Learning benchmark: learners on one task, many seeds, scored against the random and scripted
anchors. Not part of the tests (it takes tens of minutes on a 2-core CPU).

    python scripts/learning_benchmark.py --env particle/spread --algos ippo,mappo,happo \
        --seeds 10 --budget 2e6 [--set algo.lr=1e-3 ...] [--name NAME [--resume]]

Each learner runs through `marl train` (same configs, same run directories); then the script
computes, per learner, the IQM over seeds of the final greedy evaluation return (mean over the
evaluation episodes) and the fraction of the random -> scripted gap it closes, and merges the
rows into `results/learning/<env>.json` and `.md` (a learner's earlier row is replaced, the
other learners' rows are kept; each row records its own seeds, budget and overrides).
Runs checkpoint every segment: after a kill, the same command with `--name <the run name it
printed> --resume` continues them (the row's wall time then counts only the resumed part).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scipy.stats import trim_mean

import marl
from marl import cli
from marl.baselines import anchor_scores
from marl.rundir import atomic_write, write_json
from marl.runtime import configure_xla

ROOT = Path(__file__).resolve().parents[1]


def iqm(x: np.ndarray) -> float:
    """Interquartile mean (25% trimmed mean), as rliable."""
    return float(trim_mean(np.asarray(x, np.float64), 0.25))


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def merge_rows(path: Path, rows: list[dict]) -> list[dict]:
    """Rows of an earlier record at `path` for other learners, followed by `rows`."""
    if not path.exists():
        return rows
    new = {r["algo"] for r in rows}
    old = json.loads(path.read_text())
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
    run_dir = out / env_id / algo / name
    final = json.loads((run_dir / "final.json").read_text())
    return run_dir, final, time.perf_counter() - start


def main() -> None:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="particle/spread")
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
    args = parser.parse_args()
    if args.resume and not args.name:
        parser.error("--resume needs --name (the runs to continue)")
    stem = args.env.replace("/", "_")
    out_dir = ROOT / "results" / "learning"
    if args.render_only:
        atomic_write(
            out_dir / f"{stem}.md", markdown(json.loads((out_dir / f"{stem}.json").read_text()))
        )
        return

    env = marl.make(args.env)
    anchors = anchor_scores(env, num_episodes=320)
    print(f"anchors on {args.env}: {anchors}", flush=True)
    rows = []
    for algo in args.algos.split(","):
        run_dir, final, wall = run_one(
            args.env,
            algo,
            args.seeds,
            args.budget,
            Path(args.out),
            args.set,
            args.name,
            args.resume,
        )
        per_seed = np.asarray(final["final"]["return"], np.float64)
        score = iqm(per_seed)
        gap = None
        if anchors["scripted"] is not None:
            gap = (score - anchors["random"]) / (anchors["scripted"] - anchors["random"])
        absolute = final.get("absolute", {}).get("return")
        won = final["final"].get("won")
        won_abs = final.get("absolute", {}).get("won")
        rows.append(
            {
                "algo": algo,
                "iqm_return": score,
                "iqm_absolute": None if absolute is None else iqm(np.asarray(absolute)),
                "gap_closed": gap,
                "iqm_won": None if won is None else iqm(np.asarray(won)),
                "iqm_absolute_won": None if won_abs is None else iqm(np.asarray(won_abs)),
                "per_seed": per_seed.tolist(),
                "seeds": args.seeds,
                "budget": args.budget,
                "overrides": args.set,
                "wall_time_s": wall,
                "resumed": args.resume,
                "steps_per_second": final.get("steps_per_second"),
                "env_steps": final.get("env_steps"),
                "run_dir": str(run_dir.relative_to(ROOT))
                if run_dir.is_relative_to(ROOT)
                else str(run_dir),
            }
        )
        print(f"{algo}: IQM {score:.2f}, gap closed {gap}", flush=True)

        rows[-1]["command"] = (
            f"python scripts/learning_benchmark.py --env {args.env} --algos {algo} "
            f"--seeds {args.seeds} --budget {args.budget:g}"
            + "".join(f" --set {s}" for s in args.set)
        )
        rows[-1]["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")

    stem = args.env.replace("/", "_")
    out_dir = ROOT / "results" / "learning"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = merge_rows(out_dir / f"{stem}.json", rows)
    record = {"env": args.env, "anchors": anchors, "results": rows}
    write_json(out_dir / f"{stem}.json", record)
    text = markdown(record)
    atomic_write(out_dir / f"{stem}.md", text)
    print(text)


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
        f"{anchors['random']:.2f}, scripted "
        + ("n/a" if anchors["scripted"] is None else f"{anchors['scripted']:.2f}")
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
    lines += [f"- `{r['command']}`" for r in rows if r.get("command")]
    lines += [f"- {r['algo']}: {r['note']}" for r in rows if r.get("note")]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
