"""Behaviour check for refactors: one short `marl train` per learner, record.json hashed.

    python scripts/behaviour_check.py                 # run the set, compare with the saved hashes
    python scripts/behaviour_check.py --save          # run the set, save the hashes
    python scripts/behaviour_check.py --only qmix,mfq # a subset

A refactor that keeps behaviour writes byte-identical records: same programs, same seeds, same
evaluations. The hashes hold on one machine and one jax/jaxlib version (XLA's CPU code can
differ across both), so the saved file records them and a comparison on another setup says so
instead of failing: save on the old commit, then compare on the new one, on the same machine.

Maintains `tests/data/behaviour_records.json` (the saved hashes).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "tests" / "data" / "behaviour_records.json"
COMMON = ["seeds=2", "protocol.eval_episodes=4", "protocol.absolute_episodes=4", "checkpoint=false"]
# one short run per learner: learner -> (env, overrides); budgets cover two evaluations or more
RUNS: dict[str, tuple[str, list[str]]] = {
    "ippo": ("particle/spread", ["budget=8192", "algo.num_envs=8", "algo.rollout_length=64"]),
    "mappo": ("particle/spread", ["budget=8192", "algo.num_envs=8", "algo.rollout_length=64"]),
    "happo": ("particle/spread", ["budget=8192", "algo.num_envs=8", "algo.rollout_length=64"]),
    "iql": ("combat/3m", ["budget=4096", "algo.num_envs=4", "algo.buffer_size=256"]),
    "vdn": ("combat/3m", ["budget=4096", "algo.num_envs=4", "algo.buffer_size=256"]),
    "qmix": ("combat/3m", ["budget=4096", "algo.num_envs=4", "algo.buffer_size=256"]),
    "il": ("combat/battle64", ["budget=4096", "algo.num_envs=2"]),
    "mfq": ("combat/battle64", ["budget=4096", "algo.num_envs=2"]),
    "mfac": ("combat/battle64", ["budget=4096", "algo.num_envs=2"]),
}


def setup() -> dict[str, str]:
    import jax
    import jaxlib

    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "backend": jax.default_backend(),
    }


def run_one(algo: str, out: Path) -> str:
    """Train `algo`'s short run under `out`; the sha256 of its record.json."""
    from marl import cli

    env_id, extra = RUNS[algo]
    args = ["train", f"env={env_id}", f"algo={algo}", f"out={out}", "name=check", *COMMON, *extra]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli.main(args)
    if code != 0:
        raise SystemExit(f"marl {' '.join(args)} failed ({code}):\n{buffer.getvalue()}")
    (record,) = out.glob(f"*/*/{algo}/check/record.json")
    return hashlib.sha256(record.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", action="store_true", help=f"save the hashes to {SAVED}")
    parser.add_argument("--only", default="", help="comma-separated learners (default: all)")
    parser.add_argument("--file", default=str(SAVED), help="the saved hashes")
    args = parser.parse_args(argv)
    from marl.learning.xla import configure_xla

    configure_xla()
    algos = [a for a in args.only.split(",") if a] or list(RUNS)
    unknown = sorted(set(algos) - set(RUNS))
    if unknown:
        parser.error(f"unknown learners {unknown}; known: {', '.join(RUNS)}")
    hashes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for algo in algos:
            hashes[algo] = run_one(algo, Path(tmp))
            print(f"{algo:6s} {hashes[algo]}", flush=True)
    path = Path(args.file)
    if args.save:
        saved = json.loads(path.read_text()) if path.exists() else {"records": {}}
        saved["setup"] = setup()
        saved["records"].update(hashes)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n")
        print(f"saved to {path}")
        return 0
    saved = json.loads(path.read_text())
    if saved["setup"] != setup():
        print(f"saved on {saved['setup']}, this is {setup()}: save on the old commit here first")
        return 2
    differ = [a for a in algos if saved["records"].get(a) != hashes[a]]
    print("identical" if not differ else f"records differ: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
