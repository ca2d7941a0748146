"""Add the code and env version to run folders that were written without them.

Runs made since records name their code (`marl.run.train.provenance`) carry `code` and
`env_version` in meta.json and final.json already. For older run folders:

    python scripts/stamp_provenance.py DIR ... --commit SHA   # trained from a checkout at SHA
    python scripts/stamp_provenance.py DIR ... --infer        # trained before: infer it

`--commit` is exact (a run trained from a worktree at a known commit). `--infer` takes the
newest commit that changed the code (marl/, pyproject.toml) before the run's `created` time,
marked `"inferred": true`: a run launched from an older worktree ran at or before it. The env
version is the family's current `BEHAVIOUR_VERSION` (the golden rollouts pin it from here on).
Folders that already name their code are left alone; `--check` lists those that do not.

Maintains the committed run folders under `results/` (`tests/test_committed_results.py`
checks that each names its code and env version).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from marl.results.files import write_json
from marl.run.train.provenance import env_version

ROOT = Path(__file__).resolve().parent.parent


def code_commits() -> list[tuple[datetime, str]]:
    """(commit time, sha) of every commit that changed the code, newest first."""
    out = subprocess.run(
        ["git", "log", "--format=%H %cI", "--", "marl", "pyproject.toml"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [
        (datetime.fromisoformat(when), sha)
        for sha, when in (line.split() for line in out.splitlines())
    ]


def inferred(created: str, commits: list[tuple[datetime, str]]) -> dict:
    when = datetime.fromisoformat(created)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)  # run times are this machine's, UTC
    for t, sha in commits:
        if t <= when:
            return {"commit": sha, "dirty": None, "inferred": True}
    raise SystemExit(f"no code commit before {created}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="folders holding run folders")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--commit", help="the commit the runs were trained at")
    how.add_argument("--infer", action="store_true", help="infer it from each run's created time")
    how.add_argument("--check", action="store_true", help="list the runs that name no code")
    args = parser.parse_args(argv)
    commits = code_commits() if args.infer else []
    if args.commit:  # a full commit of this repository, or refuse
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{args.commit}^{{commit}}"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        if found.returncode:
            raise SystemExit(f"--commit {args.commit}: not a commit of this repository")
        args.commit = found.stdout.strip()
    missing = 0
    for root in args.dirs:
        for meta_path in sorted(root.rglob("meta.json")):
            meta = json.loads(meta_path.read_text())
            if "code" in meta and "env_version" in meta:
                continue
            missing += 1
            if args.check:
                print(f"no code named: {meta_path.parent}")
                continue
            if args.commit:
                code = {"commit": args.commit, "dirty": False}
            else:
                code = inferred(meta["created"], commits)
            stamp = {"code": code, "env_version": env_version(meta["env"])}
            for name in ("meta.json", "final.json"):
                path = meta_path.parent / name
                if path.is_file():
                    data = json.loads(path.read_text())
                    data.update(stamp)
                    write_json(path, data)
            print(f"{meta_path.parent}: {code['commit'][:7]}{' (inferred)' if args.infer else ''}")
    return 1 if args.check and missing else 0


if __name__ == "__main__":
    sys.exit(main())
