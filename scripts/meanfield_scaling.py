"""MF-Q training at growing agent counts: compile time and training steps/s.

    python scripts/meanfield_scaling.py [--agents 16,128,1024] [--env cleanup] [--out FILE]

Each agent count gets its own environment (cleanup: a sea whose side grows with sqrt(N) so the
density of vessels and plastic stays that of `cleanup/comm`; pathfinding: a random grid with
the same free cells per agent), the MF-Q learner (`marl/conf/algo/mfq.yaml` defaults; 2 envs x
4 steps per update, batches of 16 env steps, a replay buffer of 32k agent-steps) and `--seeds`
seeds vmapped, as `marl train` runs them. Compile time is the wall time to trace, lower and
compile one `scan` of `--updates` updates; steps/s is the best of two timed calls of it (env
steps, all seeds). With agents on an array axis the program does not grow with N, so compile
time should stay flat.

Feeds `results/meanfield_scaling.md` (written with `--out results/meanfield_scaling.md`).
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import jax

import marl
from marl.bench.envs import measure_program
from marl.bench.suite import scaled_env, training_program
from marl.learning.xla import configure_xla


def make_env(family: str, n: int):
    if family not in ("cleanup", "pathfinding"):
        raise ValueError(f"unknown family {family!r}; valid: cleanup, pathfinding")
    return scaled_env(family, n)


def measure(family: str, n: int, seeds: int, updates: int) -> dict:
    env = make_env(family, n)
    train = marl.algorithm("mfq")(env, {"num_envs": 2, "batch_size": 16, "buffer_size": 32_768})
    many, state = training_program(train, seeds, updates)
    compile_s, best, _ = measure_program(lambda s: many(s)[0], state, repeats=2)
    steps = updates * train.steps_per_update * seeds
    return {"agents": n, "compile_s": compile_s, "steps_per_s": steps / best}


def main() -> None:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="16,128,1024")
    parser.add_argument("--env", default="cleanup", choices=["cleanup", "pathfinding"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--out", default=None, help="also write the table as markdown here")
    args = parser.parse_args()
    rows = []
    print(f"{'agents':>7} {'compile s':>10} {'ratio':>7} {'env steps/s':>12} {'agent-steps/s':>14}")
    for n in (int(x) for x in args.agents.split(",")):
        r = measure(args.env, n, args.seeds, args.updates)
        base = rows[0]["compile_s"] if rows else r["compile_s"]
        r["ratio"] = r["compile_s"] / base
        rows.append(r)
        print(
            f"{n:>7} {r['compile_s']:>10.2f} {r['ratio']:>7.2f} {r['steps_per_s']:>12,.0f} "
            f"{r['steps_per_s'] * n:>14,.0f}",
            flush=True,
        )
    if args.out:
        lines = [
            f"# MF-Q training scaling ({args.env})",
            "",
            f"`python scripts/meanfield_scaling.py --env {args.env} --agents {args.agents}` on "
            f"{platform.machine()} with jax {jax.__version__} ({jax.devices()[0].platform}), "
            f"{args.seeds} seeds x 2 envs, {args.updates} updates of 4 steps per timed call.",
            "",
            "| agents | compile s | ratio to the smallest | env steps/s | agent-steps/s |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['agents']} | {r['compile_s']:.2f} | {r['ratio']:.2f} | {r['steps_per_s']:,.0f} "
            f"| {r['steps_per_s'] * r['agents']:,.0f} |"
            for r in rows
        ]
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
