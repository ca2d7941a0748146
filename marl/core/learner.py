"""The learner contract: what `make_train(env, cfg)` returns and what a policy is.

```python
train = algorithm.make_train(env, cfg)
state = train.init(key)                 # params, optimisers, env states, buffers
state, metrics = train.step(state)      # one update (rollout + learn), jittable
params = train.params(state)            # what acting needs
policy = train.policy                   # Policy: acts from params, for one environment
```

Each of the four acts on ONE seed's state. The runner (`marl.learning.runner`) vmaps
`init`/`step` over seeds and scans `step` over updates, and reads a stack of seeds' parameters
with `seed_params` (vmapped `params`: a learner's `params` may index its own axes, as mirror
self-play's does, so it is never applied to a stacked state directly). The evaluator knows a
learner only through `Policy`. `step` is vmapped with `axis_name=SEED_AXIS`, so a learner may
agree on a value across seeds (`seed_max`), e.g. to pick one branch of a `lax.switch` for all
seeds instead of computing every branch.
"""

from __future__ import annotations

import dataclasses
import numbers
import typing
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import jax
import numpy as np

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Array = jax.Array
Params = Any
Carry = Any

SEED_AXIS = "seeds"  # the vmap axis name of the seeds in `train.step`


def seed_max(x: Array) -> Array:
    """`x`'s maximum over the seeds when `train.step` is vmapped over `SEED_AXIS` (as in
    `marl.learning.runner`), `x` itself otherwise (one seed, or a vmap without the axis name).

    The result is the same for every seed, so a `lax.switch` on it stays a real branch under
    vmap rather than becoming a select that runs every branch.
    """
    try:
        return jax.lax.pmax(x, SEED_AXIS)
    except NameError:  # the seed axis is not bound
        return x


class Policy(NamedTuple):
    """How a learner acts in ONE environment (vmap it for a batch).

    initial_carry(): the recurrent state at an episode start (a dummy for feed-forward).
    act(params, obs [N, obs_dim], avail [N, A], carry, start [] bool, key, greedy) ->
        (actions [N] int32 or [N, d] float32 within the action space, carry).
        `start` is True on an episode's first step (recurrent policies reset there).
    privileged: a non-learned reference policy that reads the environment's state: `act`
        then receives the (bare) environment state in place of `obs` (e.g. the pathfinding
        planner, which needs the whole map). Learners never set it.
    neighbourhood: `act` also takes `neighbours=` (the env's `[N, N]` neighbourhood of the
        state acted in; mean-field learners average their neighbours' actions over it).
    """

    initial_carry: Callable[[], Carry]
    act: Callable[..., tuple[Array, Carry]]
    privileged: bool = False
    neighbourhood: bool = False


class Train(NamedTuple):
    """A learner bound to an environment and a config (see module docstring)."""

    init: Callable[[Any], Any]  # a key (a sweep's members: key and values) -> the state
    step: Callable[[Any], tuple[Any, dict[str, Array]]]
    params: Callable[[Any], Params]
    policy: Policy
    steps_per_update: int  # environment steps consumed by one `step` (all parallel envs)
    # environments stepped in parallel per seed, the state's leaves `[seeds, num_envs, ...]`
    # that hold them (0: not said); a run with fewer seeds than devices splits them over its
    # devices (`marl.learning.sharding`)
    num_envs: int = 0
    # the learner's resolved hyperparameters (a config dataclass or a mapping): a learner
    # without a shipped yaml (a plugin) has them recorded in its run's config (`derived`)
    config: Any = None


def seed_params(train: Train, state: Any) -> Params:
    """`train.params` of a state stacked over seeds (leading axis), seed by seed."""
    return jax.vmap(train.params)(state)


def settings_data(cfg: Any) -> Any:
    """A learner's config (a dataclass, a mapping) as YAML/JSON data: tuples as lists, other
    objects by their `repr`."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        cfg = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, dict):
        return {str(k): settings_data(v) for k, v in cfg.items()}
    if isinstance(cfg, list | tuple):
        return [settings_data(v) for v in cfg]
    if cfg is None or isinstance(cfg, bool | int | float | str):
        return cfg
    return repr(cfg)


C = TypeVar("C", bound="DataclassInstance")


def config_from_dict(cls: type[C], cfg: dict[str, Any] | None, also_valid: Iterable[str] = ()) -> C:
    """A learner's config dataclass from a (Hydra) mapping.

    Drops `name` (the registry key), rejects unknown keys in one line naming the valid ones
    (`also_valid`: keys the learner took out of `cfg` itself, e.g. its mixer's), and turns the
    values of the wrong type into one line naming the field and what it must be (`1e5` for an
    integer field is 100000; lists for tuple fields become tuples).
    """
    cfg = dict(cfg or {})
    cfg.pop("name", None)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(cfg) - fields)
    if unknown:
        raise ValueError(
            f"unknown {cls.__name__} key(s) {', '.join(unknown)}; "
            f"valid: {', '.join(sorted(fields | set(also_valid)))}"
        )
    hints = typing.get_type_hints(cls)
    for key, value in cfg.items():
        cfg[key] = typed_value(cls.__name__, key, value, hints[key])
    return cls(**cfg)


_ARRAYS = (jax.Array, np.ndarray)  # a vmapped sweep's values
_KIND = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def typed_value(owner: str, key: str, value: Any, hint: Any) -> Any:
    """`value` as a field of type `hint` (bool, int, float, str, `X | None`, tuple[int, ...]),
    or one line `Owner.key=value invalid; must be ...`. Arrays (a vmapped sweep's traced
    values) pass as numbers."""
    args = typing.get_args(hint)
    if type(None) in args:
        if value is None:
            return None
        (hint,) = [a for a in args if a is not type(None)]
    if typing.get_origin(hint) is tuple:
        if isinstance(value, Sequence) and not isinstance(value, str) and all(map(_is_int, value)):
            return tuple(int(v) for v in value)
        ok, kind = False, "a list of integers"
    elif hint is bool:
        ok, kind = isinstance(value, (bool, np.bool_, *_ARRAYS)), _KIND[bool]
    elif hint is str:
        ok, kind = isinstance(value, str), _KIND[str]
    elif hint is int:
        if _is_int(value):
            return int(value)
        ok, kind = isinstance(value, _ARRAYS), _KIND[int]
    elif hint is float:
        ok = isinstance(value, (numbers.Real, *_ARRAYS)) and not isinstance(value, bool)
        kind = _KIND[float]
    else:
        return value
    if not ok:
        none = " or null" if type(None) in args else ""
        raise ValueError(f"{owner}.{key}={value!r} invalid; must be {kind}{none}")
    return value


def _is_int(value: Any) -> bool:
    """An integer, or a float with an integral value (e.g. `budget`-style 1e5 from the CLI)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, numbers.Real) and float(value).is_integer()


class UnscheduledWarning(UserWarning):
    """`anneal_lr` asked of a learner made without the run's length (it keeps its rate)."""


def warn_unscheduled(anneal_lr: bool, total_updates: int | None, learner: str) -> None:
    """Warn that `anneal_lr` is ignored when `make_train` is not told the run's length."""
    if anneal_lr and total_updates is None:
        warnings.warn(
            f"{learner}: anneal_lr=True needs make_train(env, cfg, total_updates) (or "
            "marl.learning.training.learner_for); the learning rate stays constant",
            UnscheduledWarning,
            stacklevel=3,
        )


def check_cooperative(env: Any, learner: str, why: str, instead: str) -> None:
    """Refuse an environment whose agents do not share one objective (`EnvSpec.cooperative`):
    one line naming why `learner` needs a team, the env's groups and what to use `instead`."""
    spec = env.spec
    if not spec.cooperative:
        names = ", ".join(g.name for g in spec.groups)
        raise ValueError(
            f"{learner} {why}; {spec.name} is not cooperative (agent groups: {names}); "
            f"use {instead}"
        )


def traced(config: Any) -> bool:
    """True when a config holds traced values (a vmapped sweep builds its learner inside the
    traced step): range checks cannot read them, and `marl sweep` has checked every value
    concretely before tracing."""
    return any(isinstance(v, jax.core.Tracer) for v in vars(config).values())


def _positive(v: Any) -> bool:
    return v > 0


def _unit(v: Any) -> bool:
    return 0 <= v <= 1


# Ranges of the settings several learners share, checked wherever a config has the key.
SHARED_RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "lr": (_positive, "> 0"),
    "critic_lr": (_positive, "> 0"),
    "gamma": (_unit, "in [0, 1]"),
    "gae_lambda": (_unit, "in [0, 1]"),
    "clip_eps": (_positive, "> 0"),
    "value_clip_eps": (lambda v: v is None or v > 0, "null or > 0"),
    "huber_delta": (lambda v: v is None or v > 0, "null or > 0"),
    "ent_coef": (lambda v: v >= 0, ">= 0"),
    "max_grad_norm": (_positive, "> 0"),
    "reward_scale": (_positive, "> 0"),
    "epochs": (lambda v: v >= 1, "a positive integer"),
    "buffer_size": (lambda v: v >= 1, "a positive integer"),
    "gru_hidden": (lambda v: v >= 1, "a positive integer"),
    "hidden": (lambda v: all(w >= 1 for w in v), "positive widths"),
    "epsilon_start": (_unit, "in [0, 1]"),
    "epsilon_end": (_unit, "in [0, 1]"),
    "epsilon_steps": (lambda v: v >= 0, "an integer >= 0"),
    "temperature_start": (_positive, "> 0"),
    "temperature_steps": (lambda v: v >= 0, "an integer >= 0"),
}


def check_config(config: Any, checks: dict[str, tuple[bool, str]]) -> None:
    """Raise one line `Cls.key=value invalid; must be ...` for the first failed check: the
    config's own `checks`, then `SHARED_RANGES` for the keys it has."""
    values = vars(config)
    shared = [
        (k, (test(values[k]), valid)) for k, (test, valid) in SHARED_RANGES.items() if k in values
    ]
    for key, (ok, valid) in [*checks.items(), *shared]:
        if not ok:
            raise ValueError(
                f"{type(config).__name__}.{key}={getattr(config, key)!r} invalid; must be {valid}"
            )
