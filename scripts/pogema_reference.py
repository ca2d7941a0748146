"""Play pogema (the reference of marl's grid family) on generated episodes and record every
step, for tests/test_grid_pogema.py to replay in marl's `GridMAPF`.

pogema 1.4.0 pins numpy <= 1.26.4, gymnasium 0.28.1 and pydantic <= 1.9.1, which no
environment holding jax >= 0.5 (numpy >= 2) and gymnax (gymnasium >= 1.1) can satisfy, so it
runs in an interpreter of its own; this script imports only numpy and pogema:

    python3 -m venv .venv-pogema && .venv-pogema/bin/pip install pogema==1.4.0
    .venv-pogema/bin/python scripts/pogema_reference.py --out tests/data/pogema_golden.npz
    .venv-pogema/bin/python scripts/pogema_reference.py --seed 7 --episodes 40 --out /tmp/x.npz

Feeds `tests/data/pogema_golden.npz` (the default suite's step-for-step test). With
`MARL_POGEMA_PYTHON=.venv-pogema/bin/python`, the test also runs this script itself on fresh
seeds (more episodes under `-m slow`).

Episodes: for every collision system (priority, block_both, soft) and on-target mode (finish,
nothing, restart), random instances from pogema's own generator (maps, starts, goals; under
restart, goal sequences drawn on the start's component, so both sides follow the same goals),
crowded ones (many agents on small maps) and hand-built ones (a swap, a chain into vacated
cells, three agents contending for one cell, a rotation), with random actions biased to moves;
and two instances of each published instance set (envs/grid/data/pogema_<set>.npz, maps of
several sizes in one array) in the set's own setting, for 32 steps.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

SETS = Path(__file__).resolve().parents[1] / "envs" / "grid" / "data"

RULES = ("priority", "block_both", "soft")
MODES = ("finish", "nothing", "restart")

# hand-built: (map, starts, goals, actions per step) in map coordinates; actions 0 wait,
# 1 up (-x), 2 down (+x), 3 left (-y), 4 right (+y)
HAND = {
    "swap": ("....\n....", [[0, 0], [0, 1]], [[0, 3], [1, 3]], [[4, 3], [4, 3], [0, 4]]),
    "chain": (
        "......",
        [[0, 0], [0, 1], [0, 2]],
        [[0, 3], [0, 4], [0, 5]],
        [[4, 4, 4], [4, 4, 4], [4, 4, 4]],
    ),
    "contend": (
        "...\n...\n...",
        [[0, 1], [1, 0], [1, 2], [2, 1]],
        [[2, 0], [2, 2], [0, 0], [0, 2]],
        [[2, 4, 3, 1], [2, 4, 3, 1], [0, 2, 1, 0]],
    ),
    "rotation": (
        "..\n..",
        [[0, 0], [0, 1], [1, 1], [1, 0]],
        [[1, 1], [1, 0], [0, 0], [0, 1]],
        [[4, 2, 3, 1], [4, 2, 3, 1], [4, 2, 3, 1]],
    ),
    "into_waiter": ("...", [[0, 0], [0, 1]], [[0, 2], [0, 0]], [[4, 0], [4, 3], [0, 0]]),
}


def _pogema():
    from pogema import GridConfig, pogema_v0

    return GridConfig, pogema_v0


def instance(rng: np.random.Generator, size: int, density: float, agents: int, mode: str):
    """A random instance from pogema's generator: (map rows, starts, goals)."""
    GridConfig, pogema_v0 = _pogema()
    while True:  # pogema's generator refuses some draws (too few cells in a component)
        seed = int(rng.integers(1 << 30))
        config = GridConfig(size=size, density=density, num_agents=agents, seed=seed)
        try:
            env = pogema_v0(config)
            env.reset()
        except OverflowError:
            continue
        if len(env.unwrapped.grid.get_agents_xy()) == agents:
            break
    grid = env.unwrapped.grid.get_obstacles(ignore_borders=True).astype(int).tolist()
    starts = [list(map(int, p)) for p in env.unwrapped.grid.get_agents_xy(ignore_borders=True)]
    goals = [list(map(int, p)) for p in env.unwrapped.grid.get_targets_xy(ignore_borders=True)]
    if mode == "restart":  # goal sequences on the goal's component (free cells, any)
        free = [(x, y) for x in range(len(grid)) for y in range(len(grid[0])) if not grid[x][y]]
        comp = _components(np.array(grid))
        seqs = []
        for g in goals:
            same = [c for c in free if comp[c] == comp[tuple(g)]]
            seq = [g]
            for _ in range(5):
                nxt = [c for c in same if list(c) != seq[-1]]
                seq.append(list(map(int, nxt[int(rng.integers(len(nxt)))])))
            seqs.append(seq)
        goals = seqs
    return grid, starts, goals


def _components(grid: np.ndarray) -> dict:
    h, w = grid.shape
    label, out = 0, {}
    for x in range(h):
        for y in range(w):
            if grid[x, y] or (x, y) in out:
                continue
            stack, out[(x, y)] = [(x, y)], label
            while stack:
                cx, cy = stack.pop()
                for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    nx, ny = cx + dx, cy + dy
                    if 0 <= nx < h and 0 <= ny < w and not grid[nx, ny] and (nx, ny) not in out:
                        out[(nx, ny)] = label
                        stack.append((nx, ny))
            label += 1
    return out


def play(grid, starts, goals, actions, rule: str, mode: str, radius: int, limit: int) -> dict:
    """pogema on one instance and action sequence: every step's cells, goals, activity,
    observations (bits), rewards, terminations and the final metrics."""
    GridConfig, pogema_v0 = _pogema()
    config = GridConfig(
        map=[list(map(int, row)) for row in grid],
        agents_xy=starts,
        targets_xy=goals,
        num_agents=len(starts),
        collision_system=rule,
        on_target=mode,
        obs_radius=radius,
        max_episode_steps=limit,
        seed=0,
    )
    env = pogema_v0(config)
    obs, _ = env.reset()
    g = env.unwrapped.grid
    rec = {k: [] for k in ("pos", "goal", "active", "obs", "reward", "terminated", "truncated")}

    def snap(o):
        rec["pos"].append(g.get_agents_xy(ignore_borders=True))
        rec["goal"].append(g.get_targets_xy(ignore_borders=True))
        rec["active"].append([bool(g.is_active[i]) for i in range(len(starts))])
        rec["obs"].append(
            np.packbits(np.asarray(o, np.float32).astype(bool).reshape(len(starts), -1), axis=1)
        )

    snap(obs)
    metrics = {}
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(list(map(int, a)))
        snap(obs)
        rec["reward"].append(reward)
        rec["terminated"].append(terminated)
        rec["truncated"].append(truncated)
        if all(terminated) or all(truncated):
            metrics = {k: float(v) for k, v in info[0].get("metrics", {}).items()}
            break
    out = {k: np.asarray(v) for k, v in rec.items()}
    out["metrics"] = metrics
    return out


def episodes(seed: int, per_case: int):
    """(name, grid, starts, goals, actions, rule, mode, radius, limit) for every case."""
    rng = np.random.default_rng(seed)
    cases = [("random", 8, 0.3, 6, 2), ("crowded", 6, 0.1, 14, 2), ("wide", 10, 0.2, 10, 3)]
    for rule in RULES:
        for mode in MODES:
            for name, size, density, agents, radius in cases:
                for k in range(per_case):
                    grid, starts, goals = instance(rng, size, density, agents, mode)
                    limit = 32  # one per case: episodes of a case share one compiled env
                    p = np.array([0.1, 0.225, 0.225, 0.225, 0.225])
                    actions = rng.choice(5, size=(limit, agents), p=p).tolist()
                    yield f"{name}{k}", grid, starts, goals, actions, rule, mode, radius, limit
            for name, (text, starts, goals, actions) in HAND.items():
                grid = [[int(c == "#") for c in row] for row in text.split()]
                if mode == "restart":
                    goals = [[g, s] for g, s in zip(goals, starts, strict=True)]
                yield name, grid, starts, goals, actions, rule, mode, 1, len(actions) + 1


def set_episodes(seed: int, per_set: int = 2):
    """(name, grid, starts, goals, actions, rule, mode, radius, limit, set, index) on the
    first `per_set` instances of each published set, at its smallest agent count."""
    rng = np.random.default_rng(seed + 1)
    for path in sorted(SETS.glob("pogema_*.npz")):
        data = np.load(path)
        config = json.loads(str(data["settings"]))
        n = config["num_agents"][0]
        maps = np.unpackbits(data["maps"], axis=-1, count=int(data["width"])).astype(bool)
        for i in range(per_set):
            h, w = data["sizes"][i]
            grid = maps[i, :h, :w].astype(int).tolist()
            starts = data["starts"][i, :n].astype(int).tolist()
            goals = data["goals"][i, :n].astype(int).tolist()
            actions = rng.choice(5, size=(32, n), p=[0.1, 0.225, 0.225, 0.225, 0.225]).tolist()
            name = path.stem.removeprefix("pogema_")
            yield (f"{name}{i}", grid, starts, goals, actions, config["collision"],
                   config["on_target"], config["obs_radius"], 32, name, i)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episodes", type=int, default=2, help="random episodes per case and mode")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    arrays, index = {}, []
    cases = [(*e, None, None) for e in episodes(args.seed, args.episodes)]
    for i, (name, grid, starts, goals, actions, rule, mode, radius, limit, of, at) in enumerate(
        cases + list(set_episodes(args.seed))
    ):
        rec = play(grid, starts, goals, actions, rule, mode, radius, limit)
        index.append(
            {"name": name, "rule": rule, "mode": mode, "radius": radius, "limit": limit,
             "metrics": rec.pop("metrics"), "set": of, "instance": at}
        )  # fmt: skip
        arrays[f"e{i}_grid"] = np.asarray(grid, bool)
        arrays[f"e{i}_starts"] = np.asarray(starts, np.int16)
        arrays[f"e{i}_goals"] = np.asarray(goals, np.int16)
        arrays[f"e{i}_actions"] = np.asarray(actions, np.int8)
        for k, v in rec.items():
            arrays[f"e{i}_{k}"] = v.astype(np.int16) if k in ("pos", "goal") else v
    arrays["index"] = np.frombuffer(json.dumps(index).encode(), np.uint8)
    np.savez_compressed(args.out, **arrays)
    print(f"{len(index)} episodes -> {args.out}")


if __name__ == "__main__":
    main()
