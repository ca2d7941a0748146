"""marl's learners on a POGEMA instance set beside the POGEMA benchmark's published results:
CSR and ISR in the set's own setting, with intervals.

marl's side: finished runs of `marl benchmark run grid` (each seed's best parameters played in
the set's setting, the run's `transfer.json`): IQM over seeds of each seed's mean, with a 95%
bootstrap interval over seeds. POGEMA's side: the benchmark repository's raw results
(`raw_data_MAPF/<set>/<algorithm>.json`: one evaluation per instance and agent count, one
trained model per algorithm), the mean over the instances with a 95% bootstrap interval over
instances. Point `--source` at a checkout of the POGEMA benchmark's repository:

    python scripts/pogema_published.py --source ../pogema-benchmark \\
        "results/grid/runs/grid/pogema_random[on_target=finish]"
    python scripts/pogema_published.py --source ../pogema-benchmark RUNS --agents 16

Feeds the POGEMA rows of `results/fidelity.md` (side by side with the papers and peers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from marl.results.bootstrap import iqm_ci, mean_ci
from marl.results.files import read_json

SETS = {"random": "01-random", "mazes": "02-mazes", "warehouse": "03-warehouse"}
SETS["movingai"] = "04-movingai"


def published(source: Path, folder: str, agents: int) -> dict[str, dict[str, list[float]]]:
    """algorithm -> metric -> per-instance values at `agents` agents."""
    out: dict[str, dict[str, list[float]]] = {}
    for path in sorted((source / "raw_data_MAPF" / folder).glob("*.json")):
        for row in json.loads(path.read_text()):
            if row["env_grid_search"]["num_agents"] != agents:
                continue
            per = out.setdefault(path.stem, {"CSR": [], "ISR": []})
            for m in per:
                per[m].append(float(row["metrics"][m]))
    return out


def marl_runs(roots: list[Path], name: str) -> dict[str, dict[str, np.ndarray]]:
    """learner -> metric -> per-seed means of the runs' transfer to `name`."""
    out = {}
    for root in roots:
        for path in sorted(root.glob("*/*/transfer.json*")):
            played = read_json(path)[name]
            algo = path.parent.parent.name
            out[algo] = {
                m: np.asarray(played["metrics"][m.lower()], np.float64).mean(axis=-1)
                for m in ("CSR", "ISR")
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="task folders of finished grid runs")
    ap.add_argument("--source", type=Path, required=True, help="a POGEMA benchmark checkout")
    ap.add_argument("--set", default="random", choices=sorted(SETS))
    ap.add_argument("--agents", type=int, default=8, help="the runs' agent count")
    args = ap.parse_args()
    ours = marl_runs(args.runs, f"pogema_{args.set}")
    print("| who | agents | CSR | ISR | seeds or instances |")
    print("|---|---|---|---|---|")
    agents = args.agents
    for algo, per in ours.items():
        cells = []
        for m in ("CSR", "ISR"):
            point, low, high = iqm_ci(per[m])
            cells.append(f"{point:.3f} [{low:.3f}, {high:.3f}]")
        print(f"| marl {algo} | {agents} | {' | '.join(cells)} | {len(per['CSR'])} seeds |")
    for algo, per in published(args.source, SETS[args.set], agents).items():
        cells = [
            "{:.3f} [{:.3f}, {:.3f}]".format(*mean_ci(np.asarray(per[m]))) for m in ("CSR", "ISR")
        ]
        print(f"| POGEMA {algo} | {agents} | {' | '.join(cells)} | {len(per['CSR'])} |")


if __name__ == "__main__":
    sys.exit(main())
