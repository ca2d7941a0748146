"""The registered grid tasks as data: each preset names the parts of a `GridMAPF` and its
sizes; `grid/<name>` builds it, and any keyword overrides it (a mapping for `maps` updates
the preset's generator field by field: `env.kwargs.maps.density=0.2`).

Settings follow POGEMA: its `GridConfig` defaults (8 x 8 cells, density 0.3, observation
radius 5, 64 steps) and the random-map setting of its paper's benchmark (maps of about 20 x 20
cells at density 0.3, 256 steps), in the finish (one goal each) and lifelong (restart) modes;
and the POGEMA benchmark's published MAPF instance sets (`sets.py`) with their settings, at
the smallest agent count each reports (`env.kwargs.num_agents` picks another).
"""

from __future__ import annotations

import inspect
from functools import wraps
from typing import Any

from .env import GridMAPF, fields_over
from .maps import RandomMaps
from .sets import NAMES, settings

PRESETS: dict[str, dict[str, Any]] = {
    "random8": {"maps": RandomMaps(8, 8, 0.3), "num_agents": 8, "episode_limit": 64},
    "random20": {"maps": RandomMaps(20, 20, 0.3), "num_agents": 32, "episode_limit": 256},
    "lifelong20": {
        "maps": RandomMaps(20, 20, 0.3),
        "num_agents": 32,
        "on_target": "restart",
        "episode_limit": 256,
    },
}
for _set in NAMES:  # the instances themselves load when a task is built
    _s = settings(_set)
    PRESETS[f"pogema_{_set}"] = {
        "maps": f"pogema/{_set}",
        "num_agents": _s["num_agents"][0],
        "collision": _s["collision"],
        "on_target": _s["on_target"],
        "episode_limit": _s["episode_limit"],
        "obs_radius": _s["obs_radius"],
    }


def preset(name: str) -> Any:
    """The constructor of `grid/<name>`: `GridMAPF` with the preset's parts as defaults."""
    values = dict(PRESETS[name])
    if isinstance(values["maps"], str):  # "pogema/<set>": a published instance set
        from .sets import pogema_set

        values["maps"] = pogema_set(values["maps"].split("/", 1)[1])
    base = inspect.signature(GridMAPF)

    @wraps(GridMAPF)
    def make(**kwargs: Any) -> GridMAPF:
        maps = kwargs.get("maps")
        if isinstance(maps, dict):
            kwargs["maps"] = fields_over(values["maps"], maps)
        return GridMAPF(**{**values, "name": f"grid/{name}", **kwargs})

    params = [
        p.replace(default=values.get(p.name, f"grid/{name}" if p.name == "name" else p.default))
        for p in base.parameters.values()
    ]
    make.__signature__ = base.replace(parameters=params)  # type: ignore[attr-defined]
    return make


def __getattr__(name: str) -> Any:  # `marl.envs.grid.presets:random8`, one per preset
    if name in PRESETS:
        return preset(name)
    raise AttributeError(name)
