"""How a contest run's sides behave as they train: at each greedy evaluation, the mean over
seeds of what the battles ended with (on combat: the fraction of units alive, of foes killed,
the length, who won), as a markdown table per run.

    python scripts/contest_curves.py RUN_DIR... [--every 4] [--metrics allies_alive,won]

A run directory is a `marl train` run (finished or not) with its `metrics.jsonl`. In self-play
the evaluation puts the run's own sides against each other, so these columns say whether its
armies still fight (results/fidelity.md, Yang et al.), not how strong either is: that is
`marl crossplay`'s job. `--every k` keeps every k-th evaluation (and the last).

Feeds the contest curves `results/fidelity.md` quotes (Yang et al.: MF-Q's army against IL's).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from marl.results import runfolder
from marl.results.protocol import RecordError

DEFAULT = ("allies_alive", "enemies_killed", "length", "won", "lost", "return/allies")


def seed_means(run_dir: str | Path) -> list[tuple[int, dict[str, float]]]:
    """(env steps, metric -> mean over seeds) of each logged evaluation, in order
    (`marl.results.runfolder.evaluations`)."""
    try:
        rows = runfolder.evaluations(run_dir)
    except RecordError as e:
        raise SystemExit(str(e)) from None
    return [(step, {k: float(np.mean(v)) for k, v in evals.items()}) for step, evals in rows]


def table(run_dir: str | Path, metrics: list[str] | None = None, every: int = 1) -> str:
    """The markdown table of one run (columns: env steps, then the metrics it logged)."""
    rows = seed_means(run_dir)
    if not rows:
        return f"{run_dir}: no evaluations yet\n"
    logged = rows[0][1]
    names = [m for m in (metrics or DEFAULT) if m in logged]
    if metrics and len(names) < len(metrics):
        missing = sorted(set(metrics) - set(names))
        raise SystemExit(f"{run_dir}: no {', '.join(missing)}; has {', '.join(sorted(logged))}")
    keep = [r for i, r in enumerate(rows) if i % every == 0 or i == len(rows) - 1]
    lines = [
        f"{run_dir} (mean over seeds)",
        "",
        "| env steps | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for step, values in keep:
        lines.append(f"| {step:,} | " + " | ".join(f"{values[m]:.3g}" for m in names) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--metrics", default=None, help="comma-separated evaluation metrics")
    args = parser.parse_args(argv)
    metrics = args.metrics.split(",") if args.metrics else None
    print("\n".join(table(run, metrics, max(args.every, 1)) for run in args.runs))


if __name__ == "__main__":
    main()
