"""Hydra configs of `marl train` (algo/, protocol/, benchmark/ and config.yaml), read with
`marl.run.train.compose.compose`.

Env nodes are not files: every registered env id gets a node `{id, kwargs: {}}` in Hydra's
ConfigStore (`marl.run.train.compose`), so `env=combat/3m` and `env.kwargs.x=...` work for
built-ins and plugins alike; `marl train env=ID --help` lists the constructor's keywords.

A learner variant inherits its base with Hydra's defaults list and sets only what differs
(`algo/mappo.yaml`: `defaults: [ippo, _self_]`, then `name` and `critic`). `algo_values` and
`algo_lines` read a learner's file with its bases merged in, as Hydra composes it, without
Hydra (the learners' config dataclasses take their defaults from `algo_values`).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import yaml

_COMMENTED_KEY = re.compile(r"^(\w+):\s*(.*?)\s+#\s*(.*)$")


def _text(relative: str) -> str:
    return resources.files(__name__).joinpath(relative).read_text()


def algo_bases(algo: str) -> list[str]:
    """The learner files `algo/<algo>.yaml` composes, base first, `algo` last (its
    `defaults:` entries, recursively; `_self_` placed last, as every variant here does)."""
    data = yaml.safe_load(_text(f"algo/{algo}.yaml")) or {}
    chain: list[str] = []
    for entry in data.get("defaults", []):
        if entry != "_self_":
            chain += [b for b in algo_bases(str(entry)) if b not in chain]
    return [*chain, algo]


@functools.cache
def algo_values(algo: str) -> dict[str, Any]:
    """Learner `algo`'s keys with its bases merged in (later files win), in Hydra's order: the
    base's keys first, a variant's new keys after them; `defaults` left out."""
    out: dict[str, Any] = {}
    for name in algo_bases(algo):
        data = yaml.safe_load(_text(f"algo/{name}.yaml")) or {}
        data.pop("defaults", None)
        out.update(data)
    return out


def algo_lines(algo: str) -> list[tuple[str, str, str]]:
    """`(key, value, comment)` of learner `algo`'s commented keys, its bases' included (a
    variant's own line replaces its base's), in `algo_values` order."""
    lines: dict[str, tuple[str, str, str]] = {}
    for name in algo_bases(algo):
        for line in _text(f"algo/{name}.yaml").splitlines():
            if m := _COMMENTED_KEY.match(line):
                lines[m.group(1)] = m.groups()
    return list(lines.values())
