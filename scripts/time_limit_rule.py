"""The time-limit rule, measured: a state without time whose limit truncates (learners bootstrap;
pymarl's and SMAC's rule) against `t / limit` in the state with a terminal limit (Pardo et al.
2018), on combat/3m and on pathfinding, same learner, seeds and budget.

    python scripts/time_limit_rule.py [--train] [--out results/learning/time_limits.md]

`--train` runs the four `marl train` jobs (two at a time, resumable: a killed run continues
where it stopped) into `--runs` (default `runs/time_limits`); then, with or without it, the
script reads the finished runs' records and writes the comparison: per variant the absolute
metric of each seed (its best evaluated parameters re-evaluated on 320 episodes), their IQM
with a 95% bootstrap CI, and the probability that the state without time beats the one with
it (rliable's P(X > Y) with its CI).

Feeds `results/learning/time_limits.md`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from marl.results.runfolder import read_run
from marl.results.stats import iqm_ci, probability_of_improvement

ROOT = Path(__file__).resolve().parents[1]
# (task, learner, metric, settings) of each comparison; the variant adds time_in_state
TASKS: list[tuple[str, str, str, list[str]]] = [
    ("combat/3m", "qmix", "won", ["seeds=5", "budget=1e6"]),
    (
        "pathfinding/random_grid",
        "mappo",
        "success_rate",
        ["seeds=5", "budget=3e5", "env.kwargs.num_agents=8", "env.kwargs.density=0.15"],
    ),
]
VARIANTS = {"no time, truncation bootstraps": "false", "time in the state, limit terminal": "true"}
NAMES = {"false": "tl-notime", "true": "tl-time"}


def commands(runs: Path) -> list[list[str]]:
    out = []
    for env_id, algo, _, extra in TASKS:
        for flag in VARIANTS.values():
            out.append(
                [
                    "marl",
                    "train",
                    f"env={env_id}",
                    f"algo={algo}",
                    *extra,
                    f"env.kwargs.time_in_state={flag}",
                    f"name={NAMES[flag]}",
                    f"out={runs}",
                    "resume=true",
                ]
            )
    return out


def train(runs: Path) -> None:
    """The two variants of each task side by side (one process each on the 2 cores)."""
    cmds = commands(runs)
    for pair in (cmds[0:2], cmds[2:4]):
        procs = [subprocess.Popen(c) for c in pair]
        codes = [p.wait() for p in procs]
        if any(codes):
            sys.exit(f"time_limit_rule: a run failed ({codes}); rerun to resume it")


def run_dir(runs: Path, env_id: str, algo: str, flag: str) -> Path:
    family, task = env_id.split("/")
    for d in sorted((runs / family).glob(f"{task}*/{algo}/{NAMES[flag]}")):
        suffix = d.parent.parent.name[len(task) :]
        if (flag == "true") == ("time_in_state=true" in suffix):
            return d
    raise SystemExit(f"time_limit_rule: no {NAMES[flag]} run of {env_id}/{algo} under {runs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", action="store_true", help="run the training jobs first")
    parser.add_argument("--runs", default="runs/time_limits", help="run directories' root")
    parser.add_argument("--out", default=str(ROOT / "results" / "learning" / "time_limits.md"))
    args = parser.parse_args(argv)
    runs = Path(args.runs).resolve()
    if args.train:
        train(runs)
    lines = [
        "# The time-limit rule, measured",
        "",
        "Two consistent ways to end an episode at its time limit, each on one task (same "
        "learner, seeds, budget and evaluation keys): the state carries no time and the limit "
        "truncates, so learners bootstrap from the true final state (pymarl's and SMAC's rule); "
        "or the state carries t / limit and the limit terminates (Pardo et al. 2018). Absolute "
        "metric: each seed's best evaluated parameters re-evaluated on 320 episodes. "
        "Regenerate with `python scripts/time_limit_rule.py --train` "
        "(`--runs DIR` to read runs kept elsewhere).",
        "",
        "| task | learner | variant | seeds x env steps | absolute metric per seed | "
        "IQM [95% CI] | absolute return IQM | wall time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for env_id, algo, metric, _ in TASKS:
        scores = {}
        for label, flag in VARIANTS.items():
            run = read_run(run_dir(runs, env_id, algo, flag))
            x, ret = run.absolute(metric), run.absolute("return")
            scores[flag] = x
            point, lo, hi = iqm_ci(x)
            lines.append(
                f"| {env_id} | {algo} | {label} | {len(x)} x {run.env_steps:,} | "
                + " / ".join(f"{v:.3f}" for v in x)
                + f" | {metric} {point:.3f} [{lo:.3f}, {hi:.3f}] | {iqm_ci(ret)[0]:.2f} | "
                f"{run.final['wall_time'] / 60:.0f} min |"
            )
        p, lo, hi = probability_of_improvement([scores["false"]], [scores["true"]])
        verdicts.append(
            f"- {env_id} ({algo}, {metric}): P(no time > time) = {p:.2f} [{lo:.2f}, {hi:.2f}]"
        )
    lines += ["", "Probability of improvement (rliable's, 95% CI over seeds):", "", *verdicts]
    lines += [
        "",
        "The two variants of a task ran side by side on the 2 cores (`--train` does so): each "
        "wall time is under the other's load.",
        "",
    ]
    text = "\n".join(lines)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
