"""Learners side by side on their final scores: per task, each run directory's absolute metric
(each seed's best evaluated parameters, re-evaluated) as IQM [95% CI], and the probability of
improvement between every pair of learners, with CIs (stratified bootstrap over seeds).

    python scripts/compare_finals.py RUN_DIR... [--metric return] [--reps 50000] [--paired]
        [--reached T]

For claims checked on final performance where the runs' evaluation grids differ (learners that
update in different sizes train slightly different env steps, so `marl report` keeps their
records apart): the table states each run's env steps beside its figures. A run directory is
any finished `marl train` run (its `final.json`); a run trained with `label=` (a learner at
other settings, e.g. `qmix-pymarl`) is a learner of its own; several runs of one learner on
one task are pooled (their seeds concatenated) where they trained to one nominal budget, and
shown apart, `learner (2e6)`, where not.

`--paired` adds, for each pair of learners, over the seeds both hold (seed k of root seed
`seed=` in each run's config.yaml), the mean of their per-seed differences with a bootstrap CI
over seeds, and on how many seeds each is ahead. Seed k of two runs is paired where the
learners build the same networks and split their keys alike (IQL, VDN and QMIX share the agent
network: seed k starts from the same weights and the same environments); the probability of
improvement treats the seeds as unpaired.

`--reached T` adds, for learners whose seeds either find a policy or stay stuck (SMAC's
charge-and-die), how many seeds' greedy evaluations reached `T` on the metric during training
(metrics.jsonl), the first env step at which each did, and Fisher's exact test (two-sided)
between every pair of learners on those counts.

Runs are read through `marl.results.runfolder`, the statistics are `marl.results.stats`'.
Feeds `results/swarms/comparison.md` (its command heads it) and the final-score comparisons
of `results/fidelity.md` (each with its command).
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np

from marl.results.protocol import RecordError
from marl.results.runfolder import evaluations, read_run
from marl.results.stats import REPS, iqm_ci, mean_ci, probability_of_improvement


def _fmt(t) -> str:
    point, low, high = t
    return f"{point:,.2f} [{low:,.2f}, {high:,.2f}]"


def load(dirs: list[str], metric: str) -> dict[str, dict[str, dict]]:
    """task -> learner -> {"scores": [seeds], "env_steps": {..}, "dirs": [..], "keys": [..]}
    (`marl.results.runfolder.read_run`). Runs of one learner trained to different nominal
    budgets are not pooled: each budget is its own row, `learner (budget)`."""
    try:
        runs = [(d, read_run(d)) for d in dirs]
        scores = {d: run.absolute(metric) for d, run in runs}
    except RecordError as e:
        raise SystemExit(str(e)) from None
    budgets: dict[tuple[str, str], set] = {}
    for _, run in runs:
        budgets.setdefault((run.task, run.learner), set()).add(run.budget)
    out: dict[str, dict[str, dict]] = {}
    for d, run in runs:
        name = run.learner
        if len(budgets[(run.task, name)]) > 1:  # an older final.json may lack its budget
            label = "budget unknown" if run.budget is None else f"{run.budget:.0e}"
            name = f"{name} ({label.replace('e+0', 'e')})"
        entry = out.setdefault(run.task, {}).setdefault(
            name, {"scores": [], "env_steps": set(), "dirs": [], "keys": []}
        )
        entry["keys"] += [(run.root_seed, k) for k in range(len(scores[d]))]
        entry["scores"] += list(scores[d])
        entry["env_steps"].add(run.env_steps)
        entry["dirs"].append(d)
    return out


def reached(dirs: list[str], metric: str, threshold: float) -> list[int | None]:
    """Per seed of the runs `dirs` (in order), the first env step at which its greedy
    evaluation's `metric` was at least `threshold` (None: never), from metrics.jsonl
    (`marl.results.runfolder.evaluations`)."""
    out: list[int | None] = []
    for d in dirs:
        first: list[int | None] | None = None
        for step, evals in evaluations(d):
            values = evals.get(metric)
            if values is None:
                continue
            first = first or [None] * len(values)
            for k, v in enumerate(values):
                if first[k] is None and v >= threshold:
                    first[k] = step
        if first is None:
            raise SystemExit(f"{d}: no evaluation of {metric!r} in metrics.jsonl")
        out += first
    return out


def fisher_exact(a: int, n: int, b: int, m: int) -> float:
    """Two-sided Fisher's exact test (scipy's) of `a` successes in `n` against `b` in `m`."""
    from scipy.stats import fisher_exact as fisher

    return float(fisher([[a, n - a], [b, m - b]]).pvalue)


def paired(a: np.ndarray, b: np.ndarray, reps: int = REPS, seed: int = 0) -> dict:
    """Per-seed differences `a - b`: their mean with a 95% percentile bootstrap CI over seeds
    (`marl.results.stats.mean_ci`), and the seeds on which each is ahead."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    return {
        "mean": mean_ci(diff, reps=reps, seed=seed),
        "ahead": int(np.sum(diff > 0)),
        "behind": int(np.sum(diff < 0)),
        "seeds": len(diff),
    }


def _table(columns: list[str], rows: list[str]) -> None:
    """A markdown table of pre-formatted `rows`, then a blank line."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print(row)
    print()


def _pairs(learners: dict) -> list[tuple[str, str]]:
    return list(itertools.combinations(learners, 2))


def _paired_row(a: str, b: str, learners: dict, reps: int) -> str:
    ea, eb = learners[a], learners[b]
    common = [key for key in ea["keys"] if key in eb["keys"]]
    if not common:
        return f"| {a} - {b} | not paired (the runs hold no seed in common) | |"
    xa = np.asarray(ea["scores"])[[ea["keys"].index(key) for key in common]]
    xb = np.asarray(eb["scores"])[[eb["keys"].index(key) for key in common]]
    d = paired(xa, xb, reps=reps)
    counts = f"{d['ahead']} / {d['behind']} of {d['seeds']}"
    if len(common) < max(len(ea["keys"]), len(eb["keys"])):
        counts += " (the seeds both hold)"
    return f"| {a} - {b} | {_fmt(d['mean'])} | {counts} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--metric", default="return", help="absolute metric of final.json")
    parser.add_argument("--reps", type=int, default=REPS, help="bootstrap replicates")
    parser.add_argument("--paired", action="store_true", help="per-seed differences too")
    parser.add_argument(
        "--reached", type=float, metavar="T", help="seeds whose evaluations reached T, when"
    )
    args = parser.parse_args(argv)
    for task, learners in load(args.runs, args.metric).items():
        print(f"### {task} ({args.metric}, absolute metric)\n")
        rows = []
        for algo, e in learners.items():
            steps = ", ".join(f"{s:,}" for s in sorted(e["env_steps"]))
            ci = _fmt(iqm_ci(np.asarray(e["scores"]), reps=args.reps))
            rows.append(f"| {algo} | {len(e['scores'])} | {steps} | {ci} |")
        _table(["learner", "seeds", "env steps", "IQM [95% CI]"], rows)
        if len(learners) > 1:
            rows = []
            for a, b in itertools.permutations(learners, 2):
                p = probability_of_improvement(
                    [np.asarray(learners[a]["scores"])],
                    [np.asarray(learners[b]["scores"])],
                    reps=args.reps,
                )
                rows.append(f"| P({a} > {b}) | {_fmt(p)} |")
            _table(["P(X > Y)", "value [95% CI]"], rows)
        if args.paired and len(learners) > 1:
            _table(
                ["paired: X - Y", "mean per-seed difference [95% CI]", "X ahead / behind"],
                [_paired_row(a, b, learners, args.reps) for a, b in _pairs(learners)],
            )
        if args.reached is not None:
            hits, rows = {}, []
            for algo, e in learners.items():
                first = reached(e["dirs"], args.metric, args.reached)
                hits[algo] = (sum(f is not None for f in first), len(first))
                when = ", ".join("-" if f is None else f"{f:,}" for f in first)
                rows.append(f"| {algo} | {hits[algo][0]} of {hits[algo][1]} | {when} |")
            reach = f"seeds reaching {args.metric} >= {args.reached:g}"
            _table(["learner", reach, "first at (env steps)"], rows)
            if len(learners) > 1:
                rows = [
                    f"| {a} vs {b} | {fisher_exact(*hits[a], *hits[b]):.3f} |"
                    for a, b in _pairs(learners)
                ]
                _table(["X vs Y", "Fisher's exact p (two-sided)"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
