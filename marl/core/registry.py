"""Registry of environments and learners: `make`, `register`, `list_envs`, `algorithm`.

Ids are `family/scenario`. Built-in envs and learners are entry points of marl's own
distribution (`marl-suite`'s pyproject.toml), read as a plugin's are: import paths resolved on
first use, so importing `marl` stays cheap and one broken family never hides the others. Three
ways in for your own:

- `register("mine/race", Race)` / `register_algorithm("mine", make_train)` in your process;
- an import path as the id, `make("my_pkg.race:Race")` or `marl train env=my_pkg.race:Race`
  (also `algo=my_pkg.learner:make_train`): imported on first use, no registration at all;
- entry points of an installed package, groups `marl.envs` (name: the env id) and
  `marl.algorithms` (name: the learner's), e.g. in its pyproject.toml:
  `[project.entry-points."marl.envs"]` / `"mine/race" = "my_pkg.race:Race"`; they appear in
  `marl list` and on the command line like the built-in ones.

An import path imports and calls code, so ids read from files (a run folder's config.yaml, a
benchmark file) are resolved under `files_are_data`: registered ids only, and an import path
only where the user named it on the command line (`--allow-import`).
"""

from __future__ import annotations

import importlib
import inspect
import numbers
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the registry itself never imports JAX (`marl list` stays fast)
    from marl.core.env import MultiAgentEnv

EnvFactory = Callable[..., "MultiAgentEnv"]

DISTRIBUTION = "marl-suite"  # marl's own distribution: its entry points are the built-ins
ENV_ENTRY_POINTS = "marl.envs"  # entry-point group: name = env id, value = "module:attr"
ALGORITHM_ENTRY_POINTS = "marl.algorithms"  # name = learner name, value = its make_train


def _builtins() -> list[metadata.EntryPoint]:
    """marl's own entry points (pyproject.toml's `[project.entry-points."marl.envs"]` and
    `"marl.algorithms"`): the built-in ids, read at import (one distribution's metadata, no
    JAX); none, with a warning, where marl runs from a source tree never installed."""
    try:
        found = metadata.distribution(DISTRIBUTION)
        points = list(found.entry_points)
        if not any(ep.group == ENV_ENTRY_POINTS for ep in points):
            warnings.warn(
                f"the metadata of {DISTRIBUTION} found first ({getattr(found, '_path', '?')}) "
                "names no built-in environments: stale, from an install older than its entry "
                "points or a leftover *.egg-info in the working directory; reinstall "
                "(pip install -e .)",
                stacklevel=2,
            )
        return points
    except metadata.PackageNotFoundError:
        warnings.warn(
            f"the distribution {DISTRIBUTION} is not installed: no built-in environments or "
            "learners (pip install -e .)",
            stacklevel=2,
        )
        return []


_BUILTINS = _builtins()
_ENVS: dict[str, str | EnvFactory] = {
    ep.name: ep.value for ep in _BUILTINS if ep.group == ENV_ENTRY_POINTS
}
_ALGORITHMS: dict[str, str | Callable[..., Any]] = {
    ep.name: ep.value for ep in _BUILTINS if ep.group == ALGORITHM_ENTRY_POINTS
}
_plugins_loaded = False
# import paths the user allowed while files are read (None: not reading files, all allowed)
_ALLOWED: ContextVar[frozenset[str] | None] = ContextVar("marl_allowed_imports", default=None)


class RegistryError(ValueError):
    """An unknown id or keyword; the message is one line naming the valid choices."""


def is_import_path(name: str) -> bool:
    """Whether `name` is a `package.module:attr` path rather than a registered id."""
    return ":" in name and "/" not in name


@contextmanager
def files_are_data(allowed: Iterable[str] = ()) -> Iterator[None]:
    """Within it, ids resolve to registered ones (built-ins, entry points, `register`) and an
    import path only if it is one of `allowed` (given on the command line); nested, the
    allowances add up."""
    token = _ALLOWED.set((_ALLOWED.get() or frozenset()) | frozenset(allowed))
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def _check_allowed(name: str, what: str) -> None:
    allowed = _ALLOWED.get()
    if allowed is not None and is_import_path(name) and name not in allowed:
        raise RegistryError(
            f"{what} {name!r} is an import path read from a file; files are data and never "
            f"import code (to trust it, pass --allow-import {name})"
        )


def load_plugins() -> None:
    """Register the entry points of installed packages (once per process); the built-in ids
    (marl's own entry points, read at import) win over a plugin's of the same name, and a
    malformed one is skipped with a warning."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for group, table in ((ENV_ENTRY_POINTS, _ENVS), (ALGORITHM_ENTRY_POINTS, _ALGORITHMS)):
        for ep in metadata.entry_points(group=group):
            bad = group == ENV_ENTRY_POINTS and (
                ep.name.count("/") != 1 or not all(ep.name.split("/"))
            )
            if bad or ":" not in ep.value:
                warnings.warn(
                    f"entry point {ep.name} = {ep.value} ({group}) is not "
                    "'family/scenario' = 'module:attr'; skipped",
                    stacklevel=2,
                )
                continue
            table.setdefault(ep.name, ep.value)


def load_attr(path: str) -> Any:
    """The object a `package.module:attr` path names (imports the module)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def _import_path(path: str, what: str) -> Any:
    try:
        found = load_attr(path)
    except (ImportError, AttributeError) as e:
        raise RegistryError(f"cannot import {what} {path!r}: {e}") from None
    if not callable(found):
        raise RegistryError(f"{what} {path!r} is not callable")
    return found


def register(env_id: str, factory: EnvFactory | str, *, overwrite: bool = False) -> None:
    """Register an environment constructor (or a "module:attr" path) under `family/scenario`."""
    if env_id.count("/") != 1 or not all(env_id.split("/")):
        raise RegistryError(f"environment id {env_id!r} must look like 'family/scenario'")
    if env_id in _ENVS and not overwrite:
        raise RegistryError(f"environment {env_id!r} is already registered (overwrite=True)")
    _ENVS[env_id] = factory


def list_envs(family: str | None = None) -> list[str]:
    """Registered environment ids (plugins included), sorted; optionally of one family."""
    load_plugins()
    ids = sorted(i for i in _ENVS if not is_import_path(i))
    return [i for i in ids if family is None or i.split("/")[0] == family]


def _resolve(env_id: str) -> EnvFactory:
    entry = _ENVS[env_id]
    if isinstance(entry, str):
        entry = _ENVS[env_id] = _load_entry(entry, f"environment {env_id!r}")
    return entry


def _load_entry(path: str, what: str) -> Any:
    """The object a registered `module:attr` path names; a plugin that fails to import (it
    raises, whatever it raises) or names no callable is one RegistryError line."""
    try:
        found = load_attr(path)
    except Exception as e:  # noqa: BLE001 - a plugin's module may raise anything on import
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise RegistryError(
            f"{what} is registered as {path}, which cannot be imported ({type(e).__name__}: "
            f"{first})"
        ) from None
    if not callable(found):
        raise RegistryError(f"{what} is registered as {path}, which is not callable")
    return found


def env_factory(env_id: str) -> EnvFactory:
    """The constructor registered under `env_id`, or imported from a `module:attr` path
    (raises RegistryError if unknown)."""
    _check_allowed(env_id, "environment")
    load_plugins()
    if env_id not in _ENVS and is_import_path(env_id):
        _ENVS[env_id] = _import_path(env_id, "environment")
    if env_id not in _ENVS:
        raise RegistryError(f"unknown environment {env_id!r}; valid: {', '.join(list_envs())}")
    return _resolve(env_id)


def env_kwargs(env_id: str) -> dict[str, Any]:
    """Constructor keywords of `env_id` with their defaults."""
    params = inspect.signature(env_factory(env_id)).parameters
    return {
        k: (None if p.default is inspect.Parameter.empty else p.default)
        for k, p in params.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def family_attr(env_id: str, attr: str) -> Any:
    """`attr` of the module defining `env_id`'s constructor or of the nearest package above it
    (`marl.envs.combat` for every combat map); None where none declares it."""
    factory = env_factory(env_id)
    target = getattr(factory, "func", factory)  # a map's functools.partial of its family env
    name = getattr(inspect.getmodule(target), "__name__", None) or ""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        value = getattr(importlib.import_module(".".join(parts[:k])), attr, None)
        if value is not None:
            return value
    return None


def env_version(env_id: str) -> str | None:
    """The behaviour version of `env_id`'s family: its `BEHAVIOUR_VERSION` (`family_attr`);
    None for a plugin that declares none."""
    version = family_attr(env_id, "BEHAVIOUR_VERSION")
    return None if version is None else str(version)


def make(env_id: str, **kwargs: Any) -> MultiAgentEnv:
    """Build the environment `env_id` (e.g. "particle/spread") with constructor keywords.

    Returns the bare environment; wrap it with `marl.core.wrappers.AutoReset` /
    `EpisodeStatistics` for training loops.
    """
    factory = env_factory(env_id)
    valid = env_kwargs(env_id)
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise RegistryError(
            f"{env_id} got unknown keyword(s) {', '.join(unknown)}; "
            f"valid: {', '.join(f'{k}={v!r}' for k, v in valid.items())}"
        )
    params = inspect.signature(factory).parameters
    for key, value in kwargs.items():
        if "|" not in str(params[key].annotation):  # `float | tuple[...]` takes several kinds
            _check_kind(env_id, key, value, valid[key])
    env = factory(**kwargs)
    spec = getattr(env, "spec", None)
    if (
        spec is None
        or not callable(getattr(env, "reset", None))
        or not callable(getattr(env, "step", None))
    ):
        raise RegistryError(
            f"{env_id}: its constructor returned {type(env).__name__}, not an environment "
            "(a MultiAgentEnv: spec, reset, step)"
        )
    if not getattr(spec, "name", ""):
        raise RegistryError(f"{env_id} built an env without a spec name")
    return env


def _check_kind(env_id: str, key: str, value: Any, default: Any) -> None:
    """A keyword whose default is a bool, an int or a float takes a value of that kind (a
    string "false" would otherwise be true, and "3" fail deep inside the constructor)."""
    if isinstance(default, bool):
        ok, kind = isinstance(value, (bool, np.bool_)), "true or false"
    elif isinstance(default, numbers.Integral):
        ok, kind = isinstance(value, numbers.Integral) and not isinstance(value, bool), "an integer"
    elif isinstance(default, numbers.Real):
        ok, kind = isinstance(value, numbers.Real) and not isinstance(value, bool), "a number"
    else:
        return
    if not ok:
        raise RegistryError(f"{env_id}: {key} must be {kind} (default {default!r}), got {value!r}")


def list_algorithms() -> list[str]:
    """Registered learner names (plugins included), sorted."""
    load_plugins()
    return sorted(a for a in _ALGORITHMS if not is_import_path(a))


def register_algorithm(
    name: str, make_train: Callable[..., Any] | str, *, overwrite: bool = False
) -> None:
    """Register a learner's `make_train(env, cfg, total_updates=None)` under `name`."""
    if name in _ALGORITHMS and not overwrite:
        raise RegistryError(f"algorithm {name!r} is already registered (overwrite=True)")
    _ALGORITHMS[name] = make_train


def algorithm(name: str) -> Callable[..., Any]:
    """The `make_train` of learner `name`, or imported from a `module:attr` path (raises
    RegistryError naming the valid ones)."""
    _check_allowed(name, "learner")
    load_plugins()
    if name not in _ALGORITHMS and is_import_path(name):
        _ALGORITHMS[name] = _import_path(name, "learner")
    if name not in _ALGORITHMS:
        raise RegistryError(f"unknown algorithm {name!r}; valid: {', '.join(list_algorithms())}")
    entry = _ALGORITHMS[name]
    if isinstance(entry, str):
        entry = _ALGORITHMS[name] = _load_entry(entry, f"learner {name!r}")
    return entry
