"""What is installed: the registered environments (agents, actions, episode limit) and learners
(the first paragraph of their docs), for `marl list`; the config groups, options and keys, for
`marl train --help`."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from marl.core.registry import algorithm, list_envs, make
from marl.run.compose import CONFIG_NAME, GROUPS, conf_dir, group_options

_COMMENTED_KEY = re.compile(r"^(\w+):\s*(.*?)\s+#\s*(.*)$")


def describe_space(space: Any) -> str:
    """Short text of an action space: `Discrete(5)` or `Box(0.0, 1.0, (5,))`."""
    if hasattr(space, "n"):
        return f"Discrete({int(space.n)})"
    if hasattr(space, "low") and hasattr(space, "shape"):
        low, high = np.min(space.low), np.max(space.high)
        return f"Box({low:g}, {high:g}, {tuple(space.shape)})"
    return str(space)


def env_rows(family: str | None = None) -> list[tuple[str, str, str, str]]:
    """(id, agents, actions, episode limit) of every registered env (of `family`); an env that
    cannot be built says why instead of hiding the others."""
    rows = []
    for env_id in list_envs(family):
        try:
            spec = make(env_id).spec
        except Exception as e:  # one broken family must not hide the rest
            rows.append((env_id, "-", f"unavailable: {type(e).__name__}", "-"))
            continue
        rows.append(
            (
                env_id,
                str(spec.num_agents),
                describe_space(spec.action_space),
                str(spec.episode_limit),
            )
        )
    return rows


def describe_algorithm(name: str, width: int = 90) -> str:
    """First paragraph of a learner's docstring (its module's, unless `make_train` is not the
    module's own), or why it cannot be imported."""
    try:
        make_train = algorithm(name)
    except Exception as e:  # one broken learner must not hide the rest
        return f"unavailable: {type(e).__name__}"
    module = sys.modules.get(make_train.__module__)
    own = getattr(make_train, "__name__", "") == "make_train"
    doc = ((getattr(module, "__doc__", None) if own else None) or make_train.__doc__ or "").strip()
    first_paragraph = " ".join(doc.split("\n\n")[0].split())
    return textwrap.shorten(first_paragraph, width=width, placeholder=" ...")


def _commented_keys(relative: str) -> list[tuple[str, str, str]]:
    """`(key, value, comment)` of the top-level `key: value  # comment` lines of a yaml file."""
    text = (conf_dir() / relative).read_text()
    return [m.groups() for line in text.splitlines() if (m := _COMMENTED_KEY.match(line))]


def _wrap(items: Sequence[str], indent: int, width: int = 100) -> str:
    lines, line = [], ""
    for item in items:
        if line and len(line) + len(item) + 3 > width - indent:
            lines.append(line + ",")
            line = item
        else:
            line = f"{line}, {item}" if line else item
    lines.append(line)
    return ("\n" + " " * indent).join(lines)


def _row(head: str, text: str, pad: int) -> str:
    """`head` then `text` at column `pad` (on the next line when `head` is too long)."""
    if len(head) <= pad - 2:
        return head.ljust(pad) + text
    return f"{head}\n{' ' * pad}{text}"


def describe() -> str:
    """Text of `marl train --help`: config groups with their options, and the keys."""
    from marl.core.registry import list_algorithms, list_envs

    defaults = {"env": "particle/spread", "algo": "mappo", "protocol": "default"}
    for line in (conf_dir() / f"{CONFIG_NAME}.yaml").read_text().splitlines():
        match = re.match(r"^\s*-\s*(env|algo|protocol):\s*(\S+)", line)
        if match:
            defaults[match.group(1)] = match.group(2)
    options = {
        "env": sorted(set(group_options("env")) | set(list_envs())),
        "algo": sorted(set(group_options("algo")) | set(list_algorithms())),
        "protocol": group_options("protocol"),
    }
    pad = 30
    out = ["config groups (GROUP=OPTION; the default shown):"]
    for group in GROUPS:
        out.append(_row(f"  {group}={defaults[group]}", _wrap(options[group], pad), pad))
    out.append("")
    out.append("keys (KEY=VALUE; the default shown):")
    for key, value, comment in _commented_keys(f"{CONFIG_NAME}.yaml"):
        out.append(_row(f"  {key}={value}", comment, pad))
    for key, value, comment in _commented_keys(f"protocol/{defaults['protocol']}.yaml"):
        out.append(_row(f"  protocol.{key}={value}", comment, pad))
    out.append(_row("  env.kwargs.KEYWORD=VALUE", "constructor keyword (see the env's yaml)", pad))
    algo_keys = [k for k, _, _ in _commented_keys(f"algo/{defaults['algo']}.yaml") if k != "name"]
    out.append(_row("  algo.KEY=VALUE", "learner hyperparameter, one of:", pad))
    out.append(" " * pad + _wrap(algo_keys, pad))
    out.append("")
    out.append("example:")
    out.append("  marl train env=particle/spread algo=mappo seeds=10 budget=2e6 algo.lr=1e-3")
    return "\n".join(out)
