"""Learner update times under XLA CPU flag sets (XLA's defaults against YNNPACK's fusions
kept to dots or turned off). Not a test: how a slow fusion was found (battle64's updates ran
2x faster with YNNPACK kept to dots, spread's IPPO 15-30% slower, so the fix went into the
code: combat's pairwise sums as contractions) and how to check a jaxlib release for the next.

    python scripts/xla_cpu_flags.py                      # the default cells, three flag sets
    python scripts/xla_cpu_flags.py --cells "combat/battle64 mfac" --work 20000
    python scripts/xla_cpu_flags.py --set "default=" \
        --set "dot+eltwise=--xla_cpu_experimental_ynn_fusion_type=dot,eltwise"

Each (cell, flag set) runs in its own process (XLA reads its flags once): one seed's
training loop timed as `marl bench` times learners (`bench_training`, `--work` env steps a
call, best of two). Flag sets run interleaved, `--repeats` rounds, and the table gives each
set's best time per update and its speed-up over the first set. Every set keeps the
CPU-safety flag.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from marl.learning.xla import OPT_OUT, SAFE_CPU_FLAG

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
FLAG_SETS = {"xla default": "", "ynn: dot": f"{YNN}=dot", "ynn: none": f"{YNN}="}


def child(cell: str, work: int) -> None:
    """Time one cell's training loop in this process (flags already in XLA_FLAGS) with
    `marl bench`'s learner measurement (`marl.bench.suite.bench_training`)."""
    from marl.bench.suite import bench_training

    env_id, algo, *overrides = cell.split()
    r = bench_training([f"env={env_id}", f"algo={algo}", *overrides], seeds=1, work=work)
    ms = r["train_s"] / r["updates"] * 1e3
    print(json.dumps({"ms": ms, "steps_per_s": r["steps_per_s"], "share_env": r["share_env"]}))


def measure(cell: str, flags: str, work: int) -> dict | None:
    env = {**os.environ, "XLA_FLAGS": f"{flags} {SAFE_CPU_FLAG}".strip(), OPT_OUT: "1"}
    cmd = [sys.executable, __file__, "--child", cell, "--work", str(work)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"  {cell!r} with {flags!r} failed: {out.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cells", nargs="+", default=list(CELLS), help="'env algo [overrides]'")
    p.add_argument("--work", type=int, default=5000, help="env steps per timed call")
    p.add_argument("--repeats", type=int, default=2, help="interleaved rounds per flag set")
    p.add_argument("--set", action="append", help="NAME=XLA_FLAGS (repeat; replaces the sets)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(a.child, a.work)
        return
    sets = dict(s.split("=", 1) for s in a.set) if a.set else FLAG_SETS
    names = list(sets)
    print(f"{'cell':58s} " + " ".join(f"{n:>22s}" for n in names))
    for cell in a.cells:
        best: dict[str, float] = {}
        for _ in range(a.repeats):
            for name, flags in sets.items():
                r = measure(cell, flags, a.work)
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
