"""Write the golden rollout fingerprints that pin each env family's behaviour version.

    python scripts/golden_rollouts.py            # check: which envs differ from the file
    python scripts/golden_rollouts.py --write    # rewrite tests/data/golden_rollouts.json

Run `--write` in the commit that bumps a family's `BEHAVIOUR_VERSION` (envs/<family>/
__init__.py) because what its envs return changed; tests/test_env_versions.py fails when a
fingerprint changes while the version stays.

Maintains `tests/data/golden_rollouts.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from marl.core.registry import env_version, make
from marl.core.testing import fingerprint_difference, rollout_fingerprint

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden_rollouts.json"
# per family: the env the default test suite checks first, then those `pytest -m slow` adds
ENVS = {
    "particle": ["particle/spread", "particle/tag", "particle/speaker_listener"],
    "combat": ["combat/3m", "combat/2s3z", "combat/smacv2_5_units", "combat/battle64"],
    "pathfinding": ["pathfinding/random_grid", "pathfinding/rooms"],
    "cleanup": ["cleanup/comm", "cleanup/nocomm"],
    "grid": ["grid/random8", "grid/lifelong20"],
    "swarm": ["swarm/aggregation", "swarm/vicsek", "swarm/kuramoto"],
    "jaxmarl": ["jaxmarl/smax"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the golden file")
    args = parser.parse_args(argv)
    old = json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}
    out, changed = {}, 0
    for family, ids in ENVS.items():
        out[family] = {"version": env_version(ids[0]), "envs": {}}
        for env_id in ids:
            now = rollout_fingerprint(make(env_id))
            out[family]["envs"][env_id] = now
            golden = old.get(family, {}).get("envs", {}).get(env_id)
            diff = "new" if golden is None else fingerprint_difference(golden, now)
            changed += diff is not None
            print(f"{env_id}: {diff or 'same'}", flush=True)
    if args.write:
        GOLDEN.write_text(json.dumps(out, separators=(",", ":")) + "\n")
        print(f"wrote {GOLDEN}")
    return 0 if args.write or not changed else 1


if __name__ == "__main__":
    sys.exit(main())
