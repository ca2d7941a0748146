"""The chosen env's parts in a run's config: `env.<part>.<keyword>` and `env.<part>=<option>`.

Each env id's config node is `{id, kwargs, <part>: {...}}`, a node per part its family declares
(`marl.core.config_parts`), holding the id's defaults (`node`). `env.reward=magent` is read as
the part's option, `env.reward.kind=magent` (`choice_override`). Resolving a run folds the
nodes back into constructor keywords, those that differ from the id's defaults, beside
`env.kwargs` (`fold`): a record names its task by keywords alone, however they were set.
"""

from __future__ import annotations

import re
from typing import Any

from marl.core import registry
from marl.core.config_parts import KIND, env_parts, part_nodes, plain_value
from marl.run.errors import ConfigError

ENV_KEYS = ("id", "kwargs")  # an env node's own keys; every other key is a part
_PART_CHOICE = re.compile(r"^env\.([A-Za-z_]\w*)=(.*)$")


def node(env_id: str) -> dict[str, Any]:
    """The config node of `env_id`: its id, open `kwargs` and a node per part (defaults)."""
    try:
        parts = part_nodes(env_id)
    except Exception:  # a constructor that cannot be read: the id's errors come when it is built
        parts = {}
    return {"id": env_id, "kwargs": {}, **parts}


def choice_override(override: str) -> str:
    """`env.reward=magent` -> `env.reward.kind=magent` (a part's option); others unchanged."""
    match = _PART_CHOICE.match(override.strip())
    if not match or match.group(1) in ENV_KEYS or match.group(2).startswith("{"):
        return override
    return f"env.{match.group(1)}.{KIND}={match.group(2)}"


def fold(env_id: str, env_cfg: dict[str, Any]) -> dict[str, Any]:
    """The constructor keywords of a composed env node: `env.kwargs`, plus every part keyword
    set away from the id's default. A keyword set both ways to different values is refused."""
    kwargs = dict(env_cfg.get("kwargs") or {})
    try:
        parts = env_parts(env_id)
        defaults = registry.env_kwargs(env_id)
    except Exception:  # unknown or broken ids are refused, in one line, when built
        return kwargs
    for name, part in parts.items():
        values = env_cfg.get(name)
        if not isinstance(values, dict):
            continue
        for keyword in part.names():
            key = KIND if keyword == part.choice else keyword
            if key not in values or values[key] == plain_value(defaults[keyword]):
                continue
            if keyword in kwargs and kwargs[keyword] != values[key]:
                said = f"env.{name}" if key == KIND else f"env.{name}.{key}"
                raise ConfigError(
                    f"{said}={values[key]!r} and env.kwargs.{keyword}={kwargs[keyword]!r} "
                    "disagree; set one of them"
                )
            kwargs[keyword] = values[key]
    return kwargs
