"""The learners' config base: their defaults in one place and the checks they share.

A learner's defaults are its shipped `marl/conf/algo/<name>.yaml`, which `marl train` composes
and which explains each value; `defaults_from(name)` makes that file the config dataclass's
field defaults, so `PPOConfig()`, `marl.algorithm("mappo")(env)` and `marl train algo=mappo`
build the same learner with nothing to keep in sync. Learners sharing one dataclass (IPPO,
MAPPO and HAPPO on `PPOConfig`) read their own file with `shipped(name)`; a variant's file
sets only what differs from the learner it inherits (`defaults: [ippo, _self_]`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from marl.conf import algo_values
from marl.core.learner import check_config, config_from_dict, traced
from marl.learning.networks import ACTIVATIONS

C = TypeVar("C")


def shipped(algo: str) -> dict[str, Any]:
    """Learner `algo`'s shipped defaults (`marl/conf/algo/<algo>.yaml` with the learner it
    inherits merged in, `marl.conf.algo_values`, without its name; lists as tuples)."""
    values = {k: v for k, v in algo_values(algo).items() if k != "name"}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def defaults_from(algo: str) -> Callable[[type[C]], type[C]]:
    """Class decorator, under `@dataclass`: each field the class declares takes its default
    from `shipped(algo)`; a field the file does not set is an error at import."""

    def set_defaults(cls: type[C]) -> type[C]:
        values = shipped(algo)
        fields = list(cls.__dict__.get("__annotations__", {}))
        missing = [k for k in fields if k not in values]
        if missing:
            raise TypeError(f"{cls.__name__}: {algo}.yaml sets no {', '.join(missing)}")
        for k in fields:
            setattr(cls, k, values[k])
        return cls

    return set_defaults


class LearnerConfig:
    """Base of the learners' config dataclasses: `from_dict` (Hydra mapping -> config, unknown
    keys refused in one line) and, after construction, the checks every learner shares, then
    the learner's own `checks()` (a vmapped sweep's traced values skip them: `marl sweep` has
    checked them concretely)."""

    @classmethod
    def from_dict(cls: type[C], cfg: dict[str, Any] | None, also_valid: Iterable[str] = ()) -> C:
        """Build from a (Hydra) mapping, rejecting unknown keys with the valid ones named."""
        return config_from_dict(cls, cfg, also_valid)  # type: ignore[type-var]  # a dataclass

    def checks(self) -> dict[str, tuple[bool, str]]:
        """The learner's own checks: key -> (holds, what it must be)."""
        return {}

    def __post_init__(self) -> None:
        if traced(self):
            return
        v = vars(self)
        shared = {
            "activation": lambda: (
                v["activation"] in ACTIVATIONS,
                f"one of {', '.join(ACTIVATIONS)}",
            ),
            "parameter_sharing": lambda: (
                v["parameter_sharing"] in ("all", "group", "none"),
                "all, group or none",
            ),
            "num_envs": lambda: (v["num_envs"] >= 1, "a positive integer"),
            "rollout_length": lambda: (v["rollout_length"] >= 1, "a positive integer"),
            "train_steps": lambda: (v["train_steps"] >= 0, "an integer >= 0"),
            "batch_size": lambda: (
                1 <= v["batch_size"] <= v["buffer_size"],
                "in 1 .. buffer_size",
            ),
            "hidden": lambda: (len(v["hidden"]) >= 1, "at least one width"),
        }
        checks = {k: check() for k, check in shared.items() if k in v}
        check_config(self, {**checks, **self.checks()})
