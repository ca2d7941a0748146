"""The reference sweep: regenerates the committed results with one command.

    python scripts/reference_sweep.py [--budget 3e5] [--seeds 10] [--fresh]

Trains the learners of each group of `TASKS` on its tasks with the default protocol (10 seeds
vmapped per run, greedy evaluation every budget/20 steps, absolute metric on 320 episodes;
a task may set its own seeds and budget) through `marl sweep`, then writes

    results/reference/runs/<env>/<algo>/reference/   the run directories (records + sidecars)
    results/reference/report/                        report.md, figures (and report.html, untracked)

The committed leaderboard is benchmark v1's (`marl benchmark run v1`, then `marl leaderboard
results/benchmark/v1 results/swarms/runs --crossplay results/crossplay --out results
--benchmark v1`); these CPU-friendly runs are the quick reference beside it.

Runs finished before are skipped (so a killed sweep resumes); `--fresh` deletes them first.
The budget is CPU-friendly (about 20 minutes per task on 2 cores), far below the learning
benchmarks of `scripts/learning_benchmark.py` and of benchmark v1; the report says which
budget it used.

Feeds `results/reference/` (its runs and report; `results/fidelity.md` quotes them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from marl import cli
from marl.learning.xla import configure_xla

ROOT = Path(__file__).resolve().parents[1]
ON_POLICY = "ippo,mappo,happo"
VALUE_BASED = "iql,vdn,qmix"  # discrete actions only
BATTLE = ["seeds=5", "budget=1e5"]
# one `marl sweep` per group: (tasks, learners, extra overrides)
TASKS: list[tuple[str, str, list[str]]] = [
    ("particle/spread,particle/speaker_listener", ON_POLICY, []),
    # the replay learners' gradient step (32 whole episodes through the GRU) costs ~30x an
    # on-policy update on a CPU: half the seeds, on the main particle task
    # on-policy learners' exact schedule (21 evaluations 14,336 env steps apart: 301,056 steps),
    # since the leaderboard compares only runs of one protocol
    ("particle/spread", VALUE_BASED, ["seeds=5", "budget=301056", "protocol.eval_interval=14336"]),
    ("particle/spread", ON_POLICY, ["env.kwargs.continuous_actions=true"]),
    # pathfinding, easy tier (train and test on one configuration), next to the planner anchor
    (
        "pathfinding/random_grid",
        "mappo",
        ["env.kwargs.num_agents=8", "env.kwargs.density=0.15", "algo.agent_id=false"],
    ),
    # ocean cleanup with and without the one-bit signal, on the same budget
    ("cleanup/comm,cleanup/nocomm", "mappo", []),
    # the mean-field benchmark: 64 vs 64 with a local view; MF-Q, its IL baseline and MF-AC
    # at equal budget (64 agents make an env step ~20x a particle one: fewer seeds and steps;
    # the Boltzmann temperature anneals over the first half)
    ("combat/battle64", "il,mfq", [*BATTLE, "algo.temperature_steps=50000"]),
    ("combat/battle64", "mfac", BATTLE),
]


def main() -> int:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="3e5", help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--algos", default=None, help="only these learners (comma-separated; default: all)"
    )
    parser.add_argument("--fresh", action="store_true", help="delete earlier runs first")
    args = parser.parse_args()

    os.chdir(ROOT)  # relative paths in the records' sources and the report
    base = Path("results") / "reference"
    runs = base / "runs"
    if args.fresh and runs.exists():
        shutil.rmtree(runs)
    only = None if args.algos is None else set(args.algos.split(","))
    for envs, algos, extra in TASKS:
        algos = ",".join(a for a in algos.split(",") if only is None or a in only)
        if not algos:
            continue
        given = {e.split("=", 1)[0] for e in extra}  # a task's own seeds or budget win
        defaults = {"seeds": args.seeds, "budget": args.budget}
        schedule = [f"{k}={v}" for k, v in defaults.items() if k not in given]
        code = cli.main(
            [
                "sweep",
                f"env={envs}",
                f"algo={algos}",
                *schedule,
                f"out={runs}",
                "name=reference",
                *extra,
                "--report",
                str(base / "last-sweep-report"),
            ]
        )
        if code != 0:
            return code
    shutil.rmtree(base / "last-sweep-report", ignore_errors=True)
    return cli.main(
        [
            "report",
            str(runs),
            "--out",
            str(base / "report"),
            "--title",
            f"marl reference sweep ({args.seeds} seeds x {args.budget} env steps unless a task "
            "says otherwise)",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
