"""What is installed: the registered environments (agents, actions, episode limit) and learners
(the first paragraph of their docs), for `marl list`."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import numpy as np

from marl.core.registry import algorithm, list_envs, make


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
