"""What HAPPO's setting costs a learner on a task whose agents are paid their own rewards: each
variant trains on the env as it is (`own`) or wrapped in `CommonReward` (`common`: every agent
paid the team's mean, what HAPPO, VDN and QMIX learn from anyway), with the learner's actor
parameters shared (`group`/`all`) or one set per agent (`none`).

    python scripts/common_reward.py --env 'pathfinding/random_grid[density=0.15,num_agents=8]' \
        --seeds 5 --budget 2e5 --out results/fidelity/pathfinding_happo_setting.json \
        --variant mappo:own:group --variant mappo:common:group \
        --variant mappo:own:none --variant mappo:common:none \
        --variant happo:own:none --variant happo:own:all

A variant is `learner:reward[:sharing]` (sharing: the PPO family's `parameter_sharing`; for
HAPPO `all` is HARL's share_param). Each run follows `marl train`'s protocol defaults (greedy
evaluations, each seed's best parameters re-evaluated on 320 episodes). `--out` writes a JSON
record (per variant and seed: the greedy return and success curves, the absolute metrics; the
code's commit), re-read with `--table FILE`; it is the record results/fidelity.md cites.

Feeds `results/fidelity.md` (HARL: where HAPPO's setting does not hold, pathfinding).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from marl.learning.xla import configure_xla

configure_xla()

import numpy as np  # noqa: E402

import marl  # noqa: E402
from marl.core.wrappers import CommonReward  # noqa: E402
from marl.learning.runner import run  # noqa: E402
from marl.learning.training import RunSettings, learner_for  # noqa: E402
from marl.results.files import read_json, write_json  # noqa: E402
from marl.results.stats import iqm_ci  # noqa: E402
from marl.run.saved.crossplay import parse_task  # noqa: E402
from marl.run.train.provenance import code, versions  # noqa: E402

REWARDS = ("own", "common")


def parse_variant(text: str) -> tuple[str, str, str | None]:
    """`learner:reward[:sharing]` -> (learner, reward, sharing or None)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[1] not in REWARDS:
        raise SystemExit(f"variant {text!r}: expected learner:{'|'.join(REWARDS)}[:sharing]")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def train_variant(env_id: str, kwargs: dict, variant: str, seeds: int, budget: int) -> dict:
    """One variant's run: per seed its greedy curves and absolute metrics."""
    algo, reward, sharing = parse_variant(variant)
    env = marl.make(env_id, **kwargs)
    if reward == "common":
        env = CommonReward(env)
    cfg = {}
    if sharing is not None:
        cfg["parameter_sharing"] = sharing
        if algo != "happo":  # HAPPO never takes agent ids; MAPPO's v1 cell runs without
            cfg["agent_id"] = False
    settings = RunSettings(seeds=seeds, budget=budget)
    train = learner_for(marl.algorithm(algo), env, cfg, settings)
    t0 = time.time()
    result = run(env, train, settings)
    metrics = ("return", "success_rate")
    return {
        "variant": variant,
        "config": cfg,
        "steps": [int(s) for s in result.steps],
        "curves": {m: result.curve(m).T.tolist() for m in metrics},  # [seeds][evaluations]
        "absolute": {m: np.asarray(result.absolute[m]).mean(axis=1).tolist() for m in metrics},
        "best_step": [int(s) for s in result.best_step],
        "wall_time": time.time() - t0,
    }


def table(record: dict) -> str:
    """Per variant: the greedy return over training (mean of seeds), the absolute return and
    success rate IQM [95% CI] over seeds, the final evaluation's success rate, and the seeds
    whose best evaluation (by return) is step 0."""
    rows = [
        "| variant | greedy return over training (mean of seeds) | absolute return IQM "
        "[95% CI] | absolute success IQM [95% CI] | final success (mean) | best at step 0 |",
        "|---|---|---|---|---|---|",
    ]
    for v in record["variants"]:
        curve = np.mean(v["curves"]["return"], axis=0)
        points = ", ".join(f"{c:.0f}" for c in curve[:: max(1, len(curve) // 6)])
        cells = []
        for m in ("return", "success_rate"):
            ci = iqm_ci(np.asarray(v["absolute"][m]))
            digits = 1 if m == "return" else 3
            cells.append(f"{ci[0]:.{digits}f} [{ci[1]:.{digits}f}, {ci[2]:.{digits}f}]")
        first = sum(s == 0 for s in v["best_step"])
        final = float(np.mean([c[-1] for c in v["curves"]["success_rate"]]))
        rows.append(
            f"| {v['variant']} | {points} (at {v['steps'][-1]:,}: {curve[-1]:.0f}) | "
            f"{cells[0]} | {cells[1]} | {final:.3f} | {first} of {len(v['best_step'])} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="pathfinding/random_grid", help="task, family/name[k=v,...]")
    p.add_argument("--variant", action="append", default=[])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--budget", type=float, default=2e5)
    p.add_argument("--out", type=Path, help="write the JSON record here (after each variant)")
    p.add_argument("--table", type=Path, help="print the table of a written record and stop")
    args = p.parse_args(argv)
    if args.table:
        print(table(read_json(args.table)))
        return 0
    if not args.variant:
        p.error("give at least one --variant")
    for v in args.variant:
        parse_variant(v)  # every variant checked before any training
    task = parse_task(args.env)
    record = {
        "command": "python scripts/common_reward.py " + " ".join(argv or sys.argv[1:]),
        "env": args.env,
        "seeds": args.seeds,
        "budget": int(args.budget),
        "code": code(),
        "versions": versions(),
        "variants": [],
    }
    for v in args.variant:  # each run prints its progress; the table comes after the last
        record["variants"].append(
            train_variant(task.env_id, task.kwargs, v, args.seeds, int(args.budget))
        )
        if args.out:
            write_json(args.out, record)
    print(table(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
