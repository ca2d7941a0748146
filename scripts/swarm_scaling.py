"""Dec-POMFC's scaling claim on the swarm tasks: a policy trained with one N, played with others.

    python scripts/swarm_scaling.py RUN_DIR [RUN_DIR ...] [--agents 5,50,500] [--episodes 32]
        [--timing UPDATES] [--out results/swarms/scaling.md]

For each finished run (any learner whose policy reads no agent id), its best parameters of
every seed play the run's task at each agent count, beside the task's classic rule and random
actions on the same episode keys; the table gives the order parameter at the episode's end
(mean over seeds, with the seeds' range). With `--timing U`, a second table gives training time
against N: the run's learner and settings rebuilt at each agent count, its seeds vmapped as
`marl train` runs them, the compile time of a scan of U updates and the seconds per update of
one timed call after an untimed one (env steps per second over all seeds beside).

Feeds `results/swarms/scaling.md` (its command heads it).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from marl.baselines import random_policy, scripted_policy
from marl.bench.envs import measure_program
from marl.bench.suite import training_program
from marl.learning.evaluation import evaluate
from marl.run.saved.restore import SavedRunError, load, run_config
from marl.run.train.lookup import make_env


def training_cost(run, n: int, updates: int) -> tuple[float, float, float]:
    """(compile s, s per update, env steps/s over all seeds) of `run`'s learner at `n` agents."""
    run = dataclasses.replace(run, env_kwargs={**run.env_kwargs, "num_agents": n})
    train = run.train
    many, state = training_program(train, run.settings.seeds, updates)
    compile_s, call_s, _ = measure_program(many, state, repeats=1, chain=False)
    per_update = call_s / updates
    return compile_s, per_update, train.steps_per_update * run.settings.seeds / per_update


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--agents", default="5,50,500")
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--timing", type=int, default=0, help="updates per timed call (0: no timing)")
    p.add_argument("--out")
    args = p.parse_args(argv)
    counts = [int(n) for n in args.agents.split(",")]
    key = jax.random.key(args.seed)
    lines = [
        "| task | learner | trained N | N | learned (seeds' range) | classic rule | random |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in args.runs:
        try:
            saved = load(path)
        except SavedRunError as e:  # a record committed without its parameters: timing only
            print(f"{path}: not played ({e})", flush=True)
            continue
        run = saved.run
        trained_n = saved.env.spec.num_agents
        for n in counts:
            env = make_env(run.env_id, {**run.env_kwargs, "num_agents": n})
            metric = env.spec.headline_metric

            def score(policy, params, env=env, metric=metric):
                return jnp.mean(evaluate(env, policy, params, key, args.episodes)[metric])

            learned = np.asarray(
                jax.jit(jax.vmap(lambda q, pol=saved.train.policy: score(pol, q)))(saved.params)
            )
            rule = float(jax.jit(lambda env=env: score(scripted_policy(env), None))())
            rand = float(jax.jit(lambda env=env: score(random_policy(env), None))())
            lines.append(
                f"| {run.env_id} | {run.record_algo} | {trained_n} | {n} | {learned.mean():.3f} "
                f"({learned.min():.3f}..{learned.max():.3f}) | {rule:.3f} | {rand:.3f} |"
            )
            print(lines[-1], flush=True)
    timing = [
        "| task | learner | N | env steps per update (all seeds) | compile s | s per update "
        "| env steps/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in args.runs if args.timing else ():
        run = run_config(path)
        for n in counts:
            compile_s, per_update, sps = training_cost(run, n, args.timing)
            steps = round(sps * per_update)
            timing.append(
                f"| {run.env_id} | {run.record_algo} | {n} | {steps:,} | {compile_s:.1f} "
                f"| {per_update:.3f} | {sps:,.0f} |"
            )
            print(timing[-1], flush=True)
    if args.out:
        command = "python scripts/swarm_scaling.py " + " ".join(
            [*args.runs, "--agents", args.agents, "--episodes", str(args.episodes)]
            + (["--timing", str(args.timing)] if args.timing else [])
        )
        if args.timing:
            timed = [
                "",
                "## Training time against N",
                "",
                f"Each run's learner rebuilt at each N, {args.timing} update"
                f"{'s' if args.timing > 1 else ''} timed after compiling (jax {jax.__version__} "
                f"on {jax.devices()[0].platform}).",
                "",
                *timing,
            ]
        else:
            timed = []
        text = "\n".join(
            [
                "# Swarm policies played at other agent counts",
                "",
                f"Generated by `{command}`: the order parameter at the episode's end, "
                f"{args.episodes} episodes per seed.",
                "",
                *lines,
                *timed,
                "",
            ]
        )
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
