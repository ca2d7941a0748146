"""Convert POGEMA's published MAPF instance sets (the POGEMA benchmark's random, mazes,
warehouse and MovingAI sets: maps and scenarios) into the package data of marl's grid family.

The sets live in the POGEMA benchmark's repository (`algorithms/experiments/<set>/maps.yaml`
and `<set>-mapf.yaml`, whose `scenarios` give each instance's map, `agents_xy` and
`targets_xy`); point `--source` at a checkout of it:

    python scripts/pogema_instances.py --source ../pogema-benchmark
    python scripts/pogema_instances.py --source ../pogema-benchmark --sets random mazes

Feeds `envs/grid/data/` (a `pogema_<set>.npz` per set), which `marl.envs.grid.sets.pogema_set`
loads and the `grid/pogema_<set>` tasks play: every instance, maps of several sizes in one
array (each in the top-left corner, its size beside it), in the scenarios' order, with the
set's environment settings (collision system, on-target mode, episode limit, agent counts).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import yaml

from marl.envs.grid import parse_grid

SETS = {
    "random": "01-random",
    "mazes": "02-mazes",
    "warehouse": "03-warehouse",
    "movingai": "04-movingai",
}
OUT = Path(__file__).resolve().parents[1] / "envs" / "grid" / "data"


def convert(source: Path, folder: str) -> dict[str, np.ndarray]:
    """One set's arrays: maps [M, H, W] bool, sizes [M, 2], starts and goals [M, N, 2] int16,
    names [M], and `settings` (JSON text)."""
    root = source / "algorithms" / "experiments" / folder
    maps = yaml.safe_load((root / "maps.yaml").read_text())
    config = yaml.safe_load((root / f"{folder}-mapf.yaml").read_text())
    scenarios = list(config["scenarios"].values())
    grids = [parse_grid(maps[s["map_name"]]) for s in scenarios]
    h = max(g.shape[0] for g in grids)
    w = max(g.shape[1] for g in grids)
    out = np.zeros((len(grids), h, w), bool)
    for i, g in enumerate(grids):
        out[i, : g.shape[0], : g.shape[1]] = g
    starts = np.asarray([s["agents_xy"] for s in scenarios], np.int16)
    goals = np.asarray([s["targets_xy"] for s in scenarios], np.int16)
    env = config["environment"]
    counts = env["num_agents"]
    settings = {
        "source": f"algorithms/experiments/{folder}/{folder}-mapf.yaml",
        "collision": env["collision_system"],
        "on_target": env["on_target"],
        "episode_limit": int(env["max_episode_steps"]),
        "num_agents": counts["grid_search"] if isinstance(counts, dict) else [counts],
        "obs_radius": int(env.get("obs_radius", 5)),
    }
    return {
        "maps": np.packbits(out, axis=-1),
        "width": np.int32(w),
        "sizes": np.asarray([g.shape for g in grids], np.int32),
        "starts": starts,
        "goals": goals,
        "names": np.asarray([s["map_name"] for s in scenarios]),
        "settings": np.asarray(json.dumps(settings)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, required=True, help="a POGEMA benchmark checkout")
    ap.add_argument("--sets", nargs="+", choices=sorted(SETS), default=list(SETS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        arrays = convert(args.source, SETS[name])
        path = args.out / f"pogema_{name}.npz"
        np.savez_compressed(path, **arrays)
        m, n = arrays["starts"].shape[:2]
        print(f"{path}: {m} instances of {n} agents, {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    sys.exit(main())
