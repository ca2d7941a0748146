"""One change, measured: two runs of one cell on the same seeds, before and after a change.

    python scripts/ab_runs.py BEFORE_DIR AFTER_DIR [--metric won] [--at 2e5,4e5,1e6,1.4e6,2e6]


For a change to an update rule or an env, measured on a committed result it touches (same
command, same seeds): per run, the greedy evaluation curve of `--metric` at the given env steps
(mean over seeds), the final evaluation's return, each seed's absolute metric (its best
parameters re-evaluated), the absolute metric's IQM [95% CI], how far the final evaluation
sits below the best (collapse: of the seeds' mean curve, and each seed's own, whose best of
many noisy evaluations is biased up), and P(after > before) over seeds (unpaired) with its CI,
on the absolute metric and on the final evaluation (each seed's last greedy evaluation: in a
contest, the armies `marl crossplay` plays).
BEFORE may be a run folder from an older commit (`git worktree add /tmp/old SHA` or
`git show SHA:path` into a folder).

Feeds the before/after tables of `results/fidelity.md` (fix 6, death under a team reward).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from marl.results.protocol import Record, load, record_metric
from marl.results.stats import iqm_ci, probability_of_improvement


def one(path: Path) -> Record:
    records = load([path])
    if len(records) != 1:
        raise SystemExit(f"{path}: expected one finished run, found {len(records)}")
    return records[0]


def curve_at(record: Record, metric: str, at: list[float]) -> list[float]:
    steps = record.runs[0].steps
    means = np.mean([np.mean(r.metrics[metric], axis=-1) for r in record.runs], axis=0)
    return [float(means[int(np.argmin(np.abs(steps - a)))]) for a in at]


def summary(record: Record, metric: str) -> dict:
    finals = np.array([np.mean(r.metrics[metric][-1]) for r in record.runs])
    best = np.array([np.max(np.mean(r.metrics[metric], axis=-1)) for r in record.runs])
    absolute = np.array([np.mean(r.absolute[metric]) for r in record.runs])
    ret = np.array([np.mean(r.metrics["episode_return"][-1]) for r in record.runs])
    curve = np.mean([np.mean(r.metrics[metric], axis=-1) for r in record.runs], axis=0)
    return {
        "curve_drop": float(np.max(curve) - curve[-1]),
        "absolute": absolute,
        "finals": finals,
        "iqm": iqm_ci(absolute),
        "final_return": float(np.mean(ret)),
        "collapse": float(np.mean(best - finals)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--metric", default="return", help="record metric (won, return, ...)")
    parser.add_argument("--at", default="2e5,4e5,1e6,1.4e6,2e6", help="env steps of the curve")
    args = parser.parse_args(argv)
    metric = record_metric(args.metric)
    at = [float(x) for x in args.at.split(",")]
    rows = []
    sides = {"before": one(args.before), "after": one(args.after)}
    for name, record in sides.items():
        s = summary(record, metric)
        curve = " / ".join(f"{v:.2f}" for v in curve_at(record, metric, at))
        value, low, high = s["iqm"]
        rows.append(
            f"| {name} | {curve} | {s['final_return']:.1f} | "
            f"{' '.join(f'{v:.2f}' for v in s['absolute'])} | "
            f"{value:.2f} [{low:.2f}, {high:.2f}] | {s['curve_drop']:.2f} | {s['collapse']:.2f} |"
        )
    before, after = (summary(r, metric) for r in sides.values())
    p, low, high = probability_of_improvement([after["absolute"]], [before["absolute"]])
    fp, flow, fhigh = probability_of_improvement([after["finals"]], [before["finals"]])
    steps = " / ".join(f"{a / 1e6:g}" for a in at)
    print(f"| run | greedy {args.metric} at {steps} M steps (mean of seeds) | final return | "
          f"absolute {args.metric} per seed | IQM [95% CI] | mean curve: best - final | "
          "per seed: best - final (mean) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    n_after, n_before = len(after["absolute"]), len(before["absolute"])
    print(f"\nP(after > before) = {p:.2f} [{low:.2f}, {high:.2f}] "
          f"({n_after} and {n_before} seeds)")  # fmt: skip
    for name, s in (("before", before), ("after", after)):
        print(f"final evaluation's {args.metric} per seed, {name}: "
              + " ".join(f"{v:.2f}" for v in s["finals"]))  # fmt: skip
    print(f"P(after > before) on the final evaluation = {fp:.2f} [{flow:.2f}, {fhigh:.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
