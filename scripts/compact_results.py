"""Compact finished run folders in place, losslessly, so committed records stay light.

    python scripts/compact_results.py DIR ...            # e.g. results
    python scripts/compact_results.py DIR ... --params   # and half-precision parameters
    python scripts/compact_results.py DIR ... --check    # list run folders not compact yet

Each finished run folder's `record.json`, `metrics.jsonl`, `transfer.json` and `curve.json`
become `.gz` copies and meta.json's training metrics move to `train_metrics.json.gz`
(`marl.run.saved.compact`); every marl reader takes them as the files they replace. `--params`
writes `best_params.f16.msgpack.gz` (float16, gzipped) beside each `best_params.msgpack` (and
likewise for `params.msgpack`), the form results/.gitignore admits for benchmark cells.
Unfinished runs are left as they are; a compact folder is left alone (idempotent).

Maintains every committed run folder under `results/` (`results/README.md`, "A run folder").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from marl.run.saved.compact import compact, finished, pending, run_dirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="run folders or folders holding them")
    parser.add_argument("--params", action="store_true", help="also half-precision parameters")
    parser.add_argument(
        "--check", action="store_true", help="list what is not compact; change nothing"
    )
    args = parser.parse_args(argv)
    missing = [d for d in args.dirs if not d.exists()]
    if missing:
        raise SystemExit(f"no such directory: {missing[0]}")
    if args.check:
        loose = [
            (d, todo)
            for root in args.dirs
            for d in run_dirs(root)
            if finished(d) and (todo := pending(d, args.params))
        ]
        for d, todo in loose:
            print(f"{d}: {', '.join(todo)} not compact")
        return 1 if loose else 0
    counts = compact(args.dirs, params=args.params)
    saved = counts["bytes_before"] - counts["bytes_after"]
    print(
        f"{counts['compacted']} of {counts['runs']} run folders compacted "
        f"({counts['unfinished']} unfinished left as they are), {saved:,} bytes saved"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
