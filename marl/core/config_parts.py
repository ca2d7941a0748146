"""An env family's parts as its config surface: each part's constructor keywords, one table.

A family declares `CONFIG_PARTS` (a dict of part name -> `ConfigPart`) in the package of its
constructor, beside `BEHAVIOUR_VERSION`:

```python
CONFIG_PARTS = {
    "generator": ConfigPart(("allies", "enemies", "race", "start_positions", "map_size")),
    "reward": ConfigPart(choice="reward"),  # `env.reward=magent` sets the keyword `reward`
}
```

`marl train` then takes `env=combat/3m env.reward=magent env.generator.enemies=6m`: every part
is a config node whose keys are the keywords it groups (their defaults the map's), its option
(`choice`) under `kind`. The nodes only group keywords: a run's record stores the keywords
that differ from the map's (`env.kwargs`), so a task reads the same whichever way it was set
(`combat/3m[enemies=6m,reward=magent]`). Keywords no part names (the episode limit, the name)
stay `env.kwargs.KEYWORD`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from marl.core.registry import env_kwargs, family_attr

KIND = "kind"  # the key of a part's option in its node


@dataclass(frozen=True)
class ConfigPart:
    """The constructor keywords one part is built from: `keywords` (its settings) and
    `choice` (the keyword naming which part to build, e.g. `reward="magent"`; None if the part
    has one build)."""

    keywords: tuple[str, ...] = ()
    choice: str | None = None

    def names(self) -> tuple[str, ...]:
        """Every keyword of the part, its choice first."""
        return ((self.choice,) if self.choice else ()) + self.keywords


def plain_value(value: Any) -> Any:
    """`value` as a config holds it (tuples as lists); `ValueError` if a config cannot."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain_value(v) for v in value]
    raise ValueError(f"{type(value).__name__} is not a config value")


def env_parts(env_id: str) -> dict[str, ConfigPart]:
    """The parts of `env_id` as config nodes: its family's `CONFIG_PARTS`, each cut to the
    keywords this id's constructor takes with a default a config can hold; {} for a family
    that declares none (a plugin, `jaxmarl/smax`)."""
    declared = family_attr(env_id, "CONFIG_PARTS") or {}
    defaults = env_kwargs(env_id)

    def settable(key: str | None) -> bool:
        if key is None or key not in defaults:
            return False
        try:
            plain_value(defaults[key])
        except ValueError:
            return False
        return True

    out = {}
    for name, part in declared.items():
        choice = part.choice if settable(part.choice) else None
        keywords = tuple(k for k in part.keywords if settable(k))
        if choice or keywords:
            out[name] = ConfigPart(keywords, choice)
    return out


def part_nodes(env_id: str) -> dict[str, dict[str, Any]]:
    """`{part: {kind: option, keyword: default, ...}}`: the config nodes of `env_id`'s parts,
    holding its defaults."""
    defaults = env_kwargs(env_id)
    nodes = {}
    for name, part in env_parts(env_id).items():
        node = {KIND: plain_value(defaults[part.choice])} if part.choice else {}
        node.update({k: plain_value(defaults[k]) for k in part.keywords})
        nodes[name] = node
    return nodes
