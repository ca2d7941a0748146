"""The registered grid tasks as data: each preset names the parts of a `GridMAPF` and its
sizes; `grid/<name>` builds it, and any keyword overrides it (a mapping for `maps` updates
the preset's generator field by field: `env.kwargs.maps.density=0.2`).

Settings follow POGEMA: its `GridConfig` defaults (8 x 8 cells, density 0.3, observation
radius 5, 64 steps) and the random-map setting of its paper's benchmark (maps of about 20 x 20
cells at density 0.3, 256 steps), in the finish (one goal each) and lifelong (restart) modes.
"""

from __future__ import annotations

import inspect
from functools import wraps
from typing import Any

from .env import GridMAPF, fields_over
from .maps import RandomMaps

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


def preset(name: str) -> Any:
    """The constructor of `grid/<name>`: `GridMAPF` with the preset's parts as defaults."""
    values = PRESETS[name]
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
