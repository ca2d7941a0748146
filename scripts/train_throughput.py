"""Training throughput next to pure environment stepping, in one process.

    python scripts/train_throughput.py [--env particle/spread] [--algos ippo,mappo,happo]
        [--seeds 10] [--updates 20] [--set algo.KEY=VALUE ...]

For each learner: env steps per second of the whole training step (rollout + learning, all
seeds vmapped, `lax.scan` over `--updates` updates, timed after compilation), and of pure
stepping of the same env with random actions at the same total batch (seeds x num_envs).
The table is printed and written to `--out` (default results/train_throughput.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import jax

from marl import config
from marl.bench import bench_env
from marl.learner import SEED_AXIS
from marl.runtime import configure_xla


def train_steps_per_second(overrides: list[str], updates: int, repeats: int = 2):
    run = config.resolve(config.compose(overrides))
    env, train = config.build(run)
    seeds = run.settings.seeds
    keys = jax.random.split(jax.random.key(0), seeds)
    state = jax.jit(lambda k: jax.lax.map(train.init, k))(keys)  # no batched QR: see training.py

    def many(s):
        def body(s, _):
            return jax.vmap(train.step, axis_name=SEED_AXIS)(s)

        return jax.lax.scan(body, s, None, length=updates)

    fn = jax.jit(many)
    start = time.perf_counter()
    state, _ = jax.block_until_ready(fn(state))
    compile_s = time.perf_counter() - start
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        state, _ = jax.block_until_ready(fn(state))
        best = min(best, time.perf_counter() - start)
    steps = updates * train.steps_per_update * seeds
    return run, steps / best, compile_s


def main() -> None:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="particle/spread")
    parser.add_argument("--algos", default="ippo,mappo,happo")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results/train_throughput.md")
    )
    args = parser.parse_args()
    rows = []
    print(
        f"{'learner':<8} {'seeds x envs':>12} {'train steps/s':>14} {'env-only steps/s':>17} "
        f"{'train/env':>9} {'compile s':>9}"
    )
    for algo in args.algos.split(","):
        overrides = [f"env={args.env}", f"algo={algo}", f"seeds={args.seeds}", *args.set]
        run, sps, compile_s = train_steps_per_second(overrides, args.updates)
        batch = args.seeds * int(run.algo_cfg["num_envs"])
        env_sps = bench_env(run.env_id, num_envs=batch, steps=500, **run.env_kwargs)["steps_per_s"]
        print(
            f"{algo:<8} {args.seeds:>5} x {batch // args.seeds:<4} {sps:>14,.0f} "
            f"{env_sps:>17,.0f} {sps / env_sps:>9.3f} {compile_s:>9.1f}"
        )
        rows.append(
            f"| {algo} | {args.seeds} x {batch // args.seeds} | {sps:,.0f} | {env_sps:,.0f} | "
            f"{sps / env_sps:.3f} | {compile_s:.1f} |"
        )
    device = jax.devices()[0]
    text = [
        f"# Training throughput: {args.env}",
        "",
        "Env steps per second of whole training steps (rollout + learning; all seeds vmapped, "
        f"`lax.scan` over {args.updates} updates, best of 2 timed calls after compilation) next "
        "to pure stepping of the same env with random actions at the same batch "
        "(seeds x num_envs). Learner configs: the shipped yaml defaults"
        + (f" with {' '.join(args.set)}" if args.set else "")
        + ".",
        "",
        f"Machine: {os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, "
        f"jax {jax.__version__} on {device.platform}.",
        "",
        "| learner | seeds x envs | train steps/s | env-only steps/s | train/env | compile s |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Command: `python scripts/train_throughput.py --env {args.env} --algos {args.algos} "
        f"--seeds {args.seeds} --updates {args.updates}`",
        "",
    ]
    Path(args.out).write_text("\n".join(text))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
