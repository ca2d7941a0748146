"""The Hydra config tree of a run: `compose` turns command-line overrides into one config.

The tree lives in `marl/conf/` (installed with the package): `config.yaml` holds the defaults
list (env, algo, protocol) and the top-level keys. Keys under `env.kwargs` and `algo` are open:
an override of a key not in the yaml is passed on (`++`), so the registry and the learner, which
know the valid names, reject it with one line naming them (`resolve.resolve`).
Env nodes are generated: every registered env id (built-in or plugin) gets `{id, kwargs: {}}`
in Hydra's ConfigStore (`store_registered`), its keywords the constructor's defaults, and the
ids a command line chooses a node per part of their family as well (`store_parts`,
`marl.run.train.env_parts`: `env=combat/3m env.reward=magent env.generator.enemies=6m`);
learners without a yaml of their own get `{name}`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from marl.core.config_parts import KIND
from marl.run.errors import ConfigError
from marl.run.train import env_parts

CONFIG_MODULE = "marl.conf"
CONFIG_NAME = "config"
GROUPS = ("env", "algo", "protocol")
_OPEN_KEY = re.compile(r"^(env\.kwargs|algo)\.[A-Za-z_]")  # validated downstream, not by Hydra
_GROUP_CHOICE = re.compile(r"^(env|algo|protocol)=(.*)$")


def conf_dir() -> Any:
    return resources.files(CONFIG_MODULE)


def group_options(group: str) -> list[str]:
    """Options of a config group shipped as yaml, e.g. `["particle/spread", ...]` for env."""
    found: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".yaml"):
                found.append(prefix + child.name.removesuffix(".yaml"))

    root = conf_dir() / group
    if root.is_dir():
        walk(root, "")
    return sorted(found)


def learner_settings(algo: str, config: Any) -> dict[str, Any]:
    """`{"hyperparameters": ...}`: every setting of a learner without a shipped yaml (a plugin,
    whose defaults live in its code), from its `Train.config`; {} otherwise (a shipped learner's
    yaml already holds them all)."""
    from marl.core.learner import settings_data

    if config is None or algo in group_options("algo"):
        return {}
    return {"hyperparameters": settings_data(config)}


def store_registered() -> None:
    """Every registered env id gets its config node `env/<family>/<scenario>` (`{id, kwargs:
    {}}`: the constructor's defaults), and every registered learner without a yaml its `{name}`
    (Hydra's ConfigStore; a shipped file of the same name would win)."""
    from hydra.core.config_store import ConfigStore

    from marl.core.registry import list_algorithms, list_envs

    store = ConfigStore.instance()
    shipped_envs, shipped_algos = set(group_options("env")), set(group_options("algo"))
    for env_id in list_envs():
        if env_id not in shipped_envs:
            family, scenario = env_id.split("/")
            store.store(group=f"env/{family}", name=scenario, node={"id": env_id, "kwargs": {}})
    for name in list_algorithms():
        if name not in shipped_algos:
            store.store(group="algo", name=name, node={"name": name})


def chosen(overrides: Sequence[str] = ()) -> dict[str, str]:
    """The option of each config group (`env`, `algo`, `protocol`): the command line's last
    `GROUP=OPTION`, else `config.yaml`'s default."""
    groups = GROUPS
    picked = {"env": "particle/spread", "algo": "mappo", "protocol": "default"}
    text = (conf_dir() / f"{CONFIG_NAME}.yaml").read_text()
    for line in text.splitlines():
        match = re.match(r"^\s*-\s*(\w+):\s*(\S+)", line)
        if match and match.group(1) in groups:
            picked[match.group(1)] = match.group(2)
    for override in overrides:
        key, sep, value = override.strip().lstrip("+").partition("=")
        if sep and key in groups and value:
            picked[key] = value
    return picked


def store_parts(overrides: Sequence[str]) -> None:
    """The env ids `overrides` choose (each of a sweep's `env=a,b`; else `config.yaml`'s) get
    their node with a node per part (`env_parts.node`), replacing the plain `{id, kwargs}`."""
    from hydra.core.config_store import ConfigStore

    ids = set(chosen(overrides)["env"].split(","))
    for item in overrides:
        match = _GROUP_CHOICE.match(item.strip())
        if match and match.group(1) == "env":
            ids |= {v.strip() for v in match.group(2).split(",") if v.strip()}
    for env_id in sorted(ids):
        if "/" in env_id and ":" not in env_id:
            family, scenario = env_id.split("/", 1)
            node = env_parts.node(env_id)
            ConfigStore.instance().store(group=f"env/{family}", name=scenario, node=node)


def _check_choices(overrides: Sequence[str]) -> None:
    """Unknown `env=` / `algo=` / `protocol=` choices, with the registry's one-line errors."""
    from marl.core.registry import RegistryError, algorithm, env_factory, is_import_path

    for item in overrides:
        match = _GROUP_CHOICE.match(item.strip())
        if not match:
            continue
        group, choice = match.groups()
        try:
            if group == "env":
                env_factory(choice)
            elif group == "algo":
                algorithm(choice)
        except RegistryError as e:
            raise ConfigError(str(e)) from None
        except ImportError as e:
            raise ConfigError(f"{choice} is registered but cannot be imported: {e}") from None
        if group in ("env", "algo") and is_import_path(choice):  # a config node of its own
            from hydra.core.config_store import ConfigStore

            node = {"id": choice, "kwargs": {}} if group == "env" else {"name": choice}
            ConfigStore.instance().store(group=group, name=choice, node=node)
        if group == "protocol" and choice not in group_options("protocol"):
            valid = ", ".join(group_options("protocol"))
            raise ConfigError(f"unknown protocol {choice!r}; valid: {valid}")


def open_keys(overrides: Sequence[str]) -> list[str]:
    """`algo.x=1` -> `++algo.x=1`: add-or-override, so unknown keys reach their validator;
    `env.reward=magent` -> `env.reward.kind=magent` (a part's option, `env_parts`)."""
    out = [env_parts.choice_override(o) for o in overrides]
    return [f"++{o}" if _OPEN_KEY.match(o) else o for o in out]


def _compose(overrides: Sequence[str]) -> DictConfig:
    import hydra

    with hydra.initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        return hydra.compose(CONFIG_NAME, overrides=list(overrides))


def _chosen_part(key: str, overrides: Sequence[str]) -> str | None:
    """`env.reward` where Hydra refused `key` (`env.reward.kind`) and the command line said
    `env.reward=...`: the user's key; None otherwise."""
    part, _, last = key.rpartition(".")
    if last != KIND or not part.startswith("env."):
        return None
    said = any(o.strip().startswith(f"{part}=") for o in overrides)
    return part if said else None


def _valid_keys(full_key: str, overrides: Sequence[str]) -> str:
    """The keys next to `full_key` in the config the group choices of `overrides` select."""
    choices = [o for o in overrides if _GROUP_CHOICE.match(o.strip())]
    parent, _, _ = full_key.rpartition(".")
    try:
        node = _compose(choices)
        node = OmegaConf.select(node, parent) if parent else node
    except Exception:  # the valid keys are a courtesy; the error stands without them
        return ""
    if not isinstance(node, DictConfig):
        return ""
    if parent:
        keys = [f"{parent}.{k}" for k in node]
    else:
        keys = [str(k) for k in node if k not in GROUPS]
        keys += [f"{g}=OPTION" for g in GROUPS] + ["env.kwargs.KEYWORD", "algo.KEY"]
    return f"; valid: {', '.join(keys)}"


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """The composed config (`config.yaml` + groups) with Hydra command-line overrides applied."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    overrides = [str(o) for o in overrides]
    _check_choices(overrides)
    store_registered()
    store_parts(overrides)
    try:
        return _compose(open_keys(overrides))
    except (HydraException, OmegaConfBaseException) as e:
        message = str(e)
        unknown = re.match(r"Could not override '([^']+)'", message)
        if unknown:
            key = unknown.group(1)
            part = _chosen_part(key, overrides)
            if part is not None and _valid_keys(key, overrides):  # a part with one build
                keys = _valid_keys(key, overrides).removeprefix("; valid: ")
                raise ConfigError(f"{part} has no options; set its keys: {keys}") from None
            key = part or key
            raise ConfigError(f"unknown config key {key!r}{_valid_keys(key, overrides)}") from None
        raise ConfigError((message.strip().splitlines() or [type(e).__name__])[0]) from None
