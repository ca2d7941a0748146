"""Learner update times under XLA CPU flag sets (XLA's defaults against YNNPACK's fusions
kept to dots or turned off). Not a test: how a slow fusion was found (battle64's updates ran
2x faster with YNNPACK kept to dots, spread's IPPO 15-30% slower, so the fix went into the
code: combat's pairwise sums as contractions) and how to check a jaxlib release for the next.

    python scripts/xla_cpu_flags.py                      # the default cells, three flag sets
    python scripts/xla_cpu_flags.py --cells "combat/battle64 mfac" --seconds 20
    python scripts/xla_cpu_flags.py --set "default=" \
        --set "dot+eltwise=--xla_cpu_experimental_ynn_fusion_type=dot,eltwise"

Each (cell, flag set) runs in its own process (XLA reads its flags once), one seed, the
update donated and jitted as `marl train` runs it; after the compile and a warm-up it times
updates for `--seconds`. Flag sets run interleaved, `--repeats` rounds, and the table gives
each set's best time and its speed-up over the first set. Every set keeps the CPU-safety flag.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CELLS = (
    "combat/battle64 il +env.kwargs.opponent=self_play +env.kwargs.reward=magent "
    "algo.self_play=mirror",
    "combat/battle64 mfac",
    "combat/5m_vs_6m qmix algo.pack_episodes=4",
    "combat/5m_vs_6m mappo",
    "combat/3m iql algo.pack_episodes=4",
    "particle/reference iql",
    "particle/spread ippo",
    "pathfinding/random_grid happo",
)
YNN = "--xla_cpu_experimental_ynn_fusion_type"
FLAG_SETS = {"xla default": "", "ynn: dot (marl)": f"{YNN}=dot", "ynn: none": f"{YNN}="}


def child(cell: str, seconds: float) -> None:
    """Time one cell's updates in this process (flags already in XLA_FLAGS)."""
    import jax

    from marl.core.learner import SEED_AXIS
    from marl.learning.training import init_seeds
    from marl.run import config

    env_id, algo, *overrides = cell.split()
    run = config.resolve(config.compose([f"env={env_id}", f"algo={algo}", *overrides]))
    _, train = config.build(run)
    state = init_seeds(train, jax.random.split(jax.random.PRNGKey(0), 1))
    step = jax.jit(jax.vmap(train.step, axis_name=SEED_AXIS), donate_argnums=0)
    state, m = step(state)
    jax.block_until_ready(m)
    t0, warm = time.perf_counter(), 0
    while time.perf_counter() - t0 < min(4.0, seconds):
        state, m = step(state)
        jax.block_until_ready(m)
        warm += 1
    n = max(3, int(warm * seconds / min(4.0, seconds)))
    t0 = time.perf_counter()
    for _ in range(n):
        state, m = step(state)
    jax.block_until_ready(m)
    ms = (time.perf_counter() - t0) / n * 1e3
    print(json.dumps({"ms": ms, "steps_per_s": train.steps_per_update / ms * 1e3}))


def measure(cell: str, flags: str, seconds: float) -> dict | None:
    safe = "--xla_cpu_multi_thread_eigen=false"
    env = {**os.environ, "XLA_FLAGS": f"{flags} {safe}".strip(), "MARL_XLA_CPU_MULTI_THREAD": "1"}
    cmd = [sys.executable, __file__, "--child", cell, "--seconds", str(seconds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"  {cell!r} with {flags!r} failed: {out.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cells", nargs="+", default=list(CELLS), help="'env algo [overrides]'")
    p.add_argument("--seconds", type=float, default=10.0, help="timed seconds per process")
    p.add_argument("--repeats", type=int, default=2, help="interleaved rounds per flag set")
    p.add_argument("--set", action="append", help="NAME=XLA_FLAGS (repeat; replaces the sets)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(a.child, a.seconds)
        return
    sets = dict(s.split("=", 1) for s in a.set) if a.set else FLAG_SETS
    names = list(sets)
    print(f"{'cell':58s} " + " ".join(f"{n:>22s}" for n in names))
    for cell in a.cells:
        best: dict[str, float] = {}
        for _ in range(a.repeats):
            for name, flags in sets.items():
                r = measure(cell, flags, a.seconds)
                if r is not None:
                    best[name] = min(best.get(name, float("inf")), r["ms"])
        base = best.get(names[0])
        cols = []
        for n in names:
            if n not in best:
                cols.append(f"{'-':>22s}")
                continue
            ratio = f" ({base / best[n]:.2f}x)" if base else ""
            cols.append(f"{best[n]:>12.1f} ms{ratio:>8s}")
        print(f"{cell[:58]:58s} " + " ".join(cols), flush=True)


if __name__ == "__main__":
    main()
