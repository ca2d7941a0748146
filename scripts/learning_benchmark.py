"""Learning benchmark: learners on one task, many seeds, scored against the random and scripted
anchors. Not part of the tests (it takes tens of minutes on a 2-core CPU).

    python scripts/learning_benchmark.py --env particle/spread --algos ippo,mappo,happo \
        --seeds 10 --budget 2e6 [--set algo.lr=1e-3 ...]

Each learner runs through `marl train` (same configs, same run directories); then the script
computes, per learner, the IQM over seeds of the final greedy evaluation return (mean over the
evaluation episodes) and the fraction of the random -> scripted gap it closes, and writes
`results/learning/<env>.json` and `.md`.
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


def run_one(env_id: str, algo: str, seeds: int, budget: float, out: Path, extra: list[str]):
    name = f"bench-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}"
    args = [
        "train",
        f"env={env_id}",
        f"algo={algo}",
        f"seeds={seeds}",
        f"budget={budget}",
        f"out={out}",
        f"name={name}",
        *extra,
    ]
    print("marl " + " ".join(args), flush=True)
    start = time.perf_counter()
    code = cli.main(args)
    if code != 0:
        raise SystemExit(f"marl train failed with exit code {code}")
    run_dir = out / env_id / algo / name
    final = json.loads((run_dir / "final.json").read_text())
    curve = json.loads((run_dir / "curve.json").read_text())
    return run_dir, final, curve, time.perf_counter() - start


def main() -> None:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="particle/spread")
    parser.add_argument("--algos", default="ippo,mappo,happo")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=2e6)
    parser.add_argument("--out", default=str(ROOT / "results" / "runs"))
    parser.add_argument("--set", action="append", default=[], help="extra marl train override")
    args = parser.parse_args()

    env = marl.make(args.env)
    anchors = anchor_scores(env, num_episodes=320)
    print(f"anchors on {args.env}: {anchors}", flush=True)
    rows = []
    for algo in args.algos.split(","):
        run_dir, final, curve, wall = run_one(
            args.env, algo, args.seeds, args.budget, Path(args.out), args.set
        )
        per_seed = np.asarray(final["final"]["return"], np.float64)
        score = iqm(per_seed)
        gap = None
        if anchors["scripted"] is not None:
            gap = (score - anchors["random"]) / (anchors["scripted"] - anchors["random"])
        rows.append(
            {
                "algo": algo,
                "iqm_return": score,
                "gap_closed": gap,
                "per_seed": per_seed.tolist(),
                "wall_time_s": wall,
                "steps_per_second": final.get("steps_per_second"),
                "env_steps": final.get("env_steps"),
                "run_dir": str(run_dir.relative_to(ROOT))
                if run_dir.is_relative_to(ROOT)
                else str(run_dir),
            }
        )
        print(f"{algo}: IQM {score:.2f}, gap closed {gap}", flush=True)

    record = {
        "env": args.env,
        "seeds": args.seeds,
        "budget": args.budget,
        "overrides": args.set,
        "anchors": anchors,
        "results": rows,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    stem = args.env.replace("/", "_")
    out_dir = ROOT / "results" / "learning"
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / f"{stem}.json", record)
    lines = [
        f"# Learning benchmark: {args.env}",
        "",
        f"{args.seeds} seeds x {int(args.budget):,} env steps each; greedy evaluation, 32 "
        "episodes per seed at the end; team return (summed over agents). Anchors over 320 "
        f"episodes: random {anchors['random']:.2f}, scripted "
        + ("n/a" if anchors["scripted"] is None else f"{anchors['scripted']:.2f}")
        + ".",
        "",
        "| learner | IQM return | gap closed | env steps/s (all seeds) | wall time |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        gap = "n/a" if r["gap_closed"] is None else f"{100 * r['gap_closed']:.0f}%"
        sps = r["steps_per_second"] or 0
        lines.append(
            f"| {r['algo']} | {r['iqm_return']:.2f} | {gap} | {sps:,.0f} | "
            f"{r['wall_time_s'] / 60:.1f} min |"
        )
    lines += [
        "",
        f"Command: `python scripts/learning_benchmark.py --env {args.env} --algos "
        f"{args.algos} --seeds {args.seeds} --budget {args.budget:g}`"
        + "".join(f" --set {s}" for s in args.set),
        "",
    ]
    atomic_write(out_dir / f"{stem}.md", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
