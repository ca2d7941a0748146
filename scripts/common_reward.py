"""What a team reward costs a learner on a task whose agents are paid their own rewards: each
variant trains on the env as it is (`own`) or wrapped in `CommonReward` (`common`: every agent
paid the team's mean, what HAPPO, VDN and QMIX learn from anyway), with shared actor parameters
or one set per agent.

    python scripts/common_reward.py --env 'pathfinding/random_grid[density=0.15,num_agents=8]' \
        --seeds 2 --budget 2e5 \
        --variant mappo:own:group --variant mappo:common:group \
        --variant mappo:own:none --variant mappo:common:none --variant happo:own

A variant is `learner:reward[:sharing]` (sharing: the PPO learners' `parameter_sharing`,
`group` or `none`; HAPPO forces `none`). Prints, per variant, the mean greedy evaluation
return over seeds at every evaluation and the absolute metric (each seed's best evaluated
parameters re-evaluated). A diagnostic, not a benchmark: its runs are not recorded.
"""

from __future__ import annotations

import argparse
import sys

from marl.learning.xla import configure_xla

configure_xla()

import numpy as np  # noqa: E402

import marl  # noqa: E402
from marl.core.wrappers import CommonReward  # noqa: E402
from marl.learning.training import RunSettings, learner_for, run  # noqa: E402
from marl.run.crossplay import parse_task  # noqa: E402

REWARDS = ("own", "common")


def parse_variant(text: str) -> tuple[str, str, str | None]:
    """`learner:reward[:sharing]` -> (learner, reward, sharing or None)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[1] not in REWARDS:
        raise SystemExit(f"variant {text!r}: expected learner:{'|'.join(REWARDS)}[:sharing]")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def train_variant(env_id, kwargs, variant, seeds, budget):
    """(evaluation steps, mean curve over seeds, absolute metric per seed) of one variant."""
    algo, reward, sharing = parse_variant(variant)
    env = marl.make(env_id, **kwargs)
    if reward == "common":
        env = CommonReward(env)
    cfg = {} if sharing is None else {"parameter_sharing": sharing, "agent_id": sharing != "none"}
    settings = RunSettings(seeds=seeds, budget=budget)
    train = learner_for(marl.algorithm(algo), env, cfg, settings)
    result = run(env, train, settings)
    absolute = np.asarray(result.absolute["return"]).mean(axis=1)
    return result.steps, result.curve().mean(axis=1), absolute


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="pathfinding/random_grid", help="task, family/name[k=v,...]")
    p.add_argument("--variant", action="append", required=True)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--budget", type=float, default=2e5)
    args = p.parse_args(argv)
    for v in args.variant:
        parse_variant(v)  # every variant checked before any training
    task = parse_task(args.env)
    rows = []
    budget = int(args.budget)
    for v in args.variant:  # each run prints its progress; the table comes after the last
        steps, curve, absolute = train_variant(task.env_id, task.kwargs, v, args.seeds, budget)
        points = ", ".join(f"{float(c):.0f}" for c in curve[:: max(1, len(curve) // 6)])
        best = ", ".join(f"{float(a):.1f}" for a in absolute)
        rows.append(f"| {v} | {points} (at {int(steps[-1]):,}: {float(curve[-1]):.0f}) | {best} |")
    print("\n| variant | greedy return over training (mean of seeds) | absolute, per seed |")
    print("|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
