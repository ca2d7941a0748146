"""POGEMA's published MAPF instance sets as `Instances`: random, mazes, warehouse and MovingAI
(the POGEMA benchmark's `01-random` .. `04-movingai`, converted by
scripts/pogema_instances.py into `data/pogema_<set>.npz`).

Each set keeps its instances in the benchmark's order and its settings: soft collisions,
`on_target="nothing"`, the episode limit (128 steps; 256 on MovingAI) and the agent counts its
results are reported at (`settings(name)["num_agents"]`). With N agents an episode plays the
first N of an instance's agents, as pogema does.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .maps import Instances

DATA = Path(__file__).parent / "data"
NAMES = ("random", "mazes", "warehouse", "movingai")


def _load(name: str) -> Any:
    if name not in NAMES:
        raise ValueError(f"unknown POGEMA instance set {name!r}; valid: {', '.join(NAMES)}")
    return np.load(DATA / f"pogema_{name}.npz")


@cache
def pogema_set(name: str) -> Instances:
    """The instance set `name` (one of `NAMES`)."""
    data = _load(name)
    width = int(data["width"])
    maps = np.unpackbits(data["maps"], axis=-1, count=width).astype(bool)
    return Instances(maps, data["starts"], data["goals"], data["sizes"])


@cache
def settings(name: str) -> dict[str, Any]:
    """The set's environment settings: collision, on_target, episode_limit, num_agents (the
    counts POGEMA reports), obs_radius and the file they came from."""
    return json.loads(str(_load(name)["settings"]))
