"""What is installed: the registered environments (agents, actions, episode limit) and learners
(the first paragraph of their docs), for `marl list`; the config groups, options and keys, for
`marl train --help`.

`marl list` builds no environment and imports no learner of marl's own: the built-in ids' facts
are the table `BUILTIN_FACTS` (tests/test_catalog.py builds every env once and checks it) and a
built-in learner's text is read from its source file. Only envs and learners of other packages
(entry points, `register`) are built or imported to describe them."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from marl.core import registry
from marl.core.config_parts import ConfigPart, env_parts
from marl.run.train.compose import CONFIG_NAME, GROUPS, chosen, conf_dir, group_options

_COMMENTED_KEY = re.compile(r"^(\w+):\s*(.*?)\s+#\s*(.*)$")
_NOTES = re.compile(r"^Constructor\b[^:]*:\s*$")  # a docstring's section of keyword notes
_NOTE = re.compile(r"^(\s+)(\w+(?:,\s*\w+)*):\s+(.*)$")  # `name: text` or `a, b: text`

# (agents, action space, episode limit) of every built-in id at its default keywords
BUILTIN_FACTS: dict[str, tuple[int, str, int]] = {
    "cleanup/comm": (4, "Discrete(18)", 200),
    "cleanup/custom": (4, "Discrete(18)", 200),
    "cleanup/fleet128": (128, "Discrete(18)", 200),
    "cleanup/fleet16": (16, "Discrete(18)", 200),
    "cleanup/nocomm": (4, "Discrete(9)", 200),
    "combat/10m_vs_11m": (10, "Discrete(16)", 150),
    "combat/25m": (25, "Discrete(30)", 150),
    "combat/27m_vs_30m": (27, "Discrete(35)", 180),
    "combat/2s3z": (5, "Discrete(10)", 120),
    "combat/3m": (3, "Discrete(8)", 60),
    "combat/3s5z": (8, "Discrete(13)", 150),
    "combat/3s5z_vs_3s6z": (8, "Discrete(14)", 170),
    "combat/3s_vs_5z": (3, "Discrete(10)", 250),
    "combat/5m_vs_6m": (5, "Discrete(11)", 70),
    "combat/64m_vs_64m": (64, "Discrete(69)", 200),
    "combat/6h_vs_8z": (6, "Discrete(13)", 150),
    "combat/8m": (8, "Discrete(13)", 120),
    "combat/8m_vs_9m": (8, "Discrete(14)", 120),
    "combat/battle64": (64, "Discrete(13)", 200),
    "combat/custom": (3, "Discrete(8)", 60),
    "combat/smacv2_10_units": (10, "Discrete(15)", 200),
    "combat/smacv2_10_vs_11": (10, "Discrete(16)", 200),
    "combat/smacv2_20_units": (20, "Discrete(25)", 200),
    "combat/smacv2_20_vs_23": (20, "Discrete(28)", 200),
    "combat/smacv2_5_units": (5, "Discrete(10)", 200),
    "grid/custom": (8, "Discrete(5)", 64),
    "grid/lifelong20": (32, "Discrete(5)", 256),
    "grid/pogema_mazes": (8, "Discrete(5)", 128),
    "grid/pogema_movingai": (64, "Discrete(5)", 256),
    "grid/pogema_random": (8, "Discrete(5)", 128),
    "grid/pogema_warehouse": (32, "Discrete(5)", 128),
    "grid/random20": (32, "Discrete(5)", 256),
    "grid/random8": (8, "Discrete(5)", 64),
    "jaxmarl/smax": (3, "Discrete(8)", 60),
    "particle/adversary": (3, "Discrete(5)", 25),
    "particle/crypto": (3, "Discrete(4)", 25),
    "particle/push": (2, "Discrete(5)", 25),
    "particle/reference": (2, "Discrete(50)", 25),
    "particle/simple": (1, "Discrete(5)", 25),
    "particle/speaker_listener": (2, "Discrete(5)", 25),
    "particle/spread": (3, "Discrete(5)", 25),
    "particle/spread50": (50, "Discrete(5)", 25),
    "particle/tag": (4, "Discrete(5)", 25),
    "particle/world_comm": (6, "Discrete(20)", 25),
    "pathfinding/caves": (16, "Box(-1, 1, (2,))", 256),
    "pathfinding/custom": (32, "Box(-1, 1, (2,))", 128),
    "pathfinding/labyrinth": (8, "Box(-1, 1, (2,))", 256),
    "pathfinding/random_grid": (32, "Box(-1, 1, (2,))", 128),
    "pathfinding/random_grid128": (128, "Box(-1, 1, (2,))", 256),
    "pathfinding/rooms": (16, "Box(-1, 1, (2,))", 192),
    "pathfinding/string": (16, "Box(-1, 1, (2,))", 192),
    "swarm/aggregation": (100, "Discrete(5)", 100),
    "swarm/kuramoto": (100, "Discrete(5)", 100),
    "swarm/vicsek": (100, "Discrete(5)", 100),
}
# modules a built-in id needs beyond marl's dependencies (its row says so when one is missing)
NEEDS = {"jaxmarl/smax": "jaxmarl"}


def describe_space(space: Any) -> str:
    """Short text of an action space: `Discrete(5)` or `Box(0.0, 1.0, (5,))`."""
    if hasattr(space, "n"):
        return f"Discrete({int(space.n)})"
    if hasattr(space, "low") and hasattr(space, "shape"):
        low, high = np.min(space.low), np.max(space.high)
        return f"Box({low:g}, {high:g}, {tuple(space.shape)})"
    return str(space)


def _marls_own(entry: Any, package: str) -> bool:
    """Whether a registry entry is a constructor of marl's own `package` (as its import path,
    or the object it named once resolved), not something of another package registered over
    a built-in id."""
    if isinstance(entry, str):
        module = entry.partition(":")[0]
    else:
        module = getattr(getattr(entry, "func", entry), "__module__", None) or ""
    return module == package or module.startswith(package + ".")


def env_facts(env_id: str) -> tuple[str, str, str]:
    """(agents, actions, episode limit) of `env_id` as text: a built-in's from `BUILTIN_FACTS`,
    anything else's from the env it builds; one that cannot be built says why."""
    if env_id in BUILTIN_FACTS and _marls_own(registry._ENVS.get(env_id), "marl.envs"):
        needs = NEEDS.get(env_id)
        if needs and importlib.util.find_spec(needs) is None:
            return ("-", f"unavailable: needs {needs}", "-")
        agents, actions, limit = BUILTIN_FACTS[env_id]
        return (str(agents), actions, str(limit))
    try:
        spec = registry.make(env_id).spec
    except Exception as e:  # one broken family must not hide the rest
        return ("-", f"unavailable: {type(e).__name__}", "-")
    return (str(spec.num_agents), describe_space(spec.action_space), str(spec.episode_limit))


def env_rows(family: str | None = None) -> list[tuple[str, str, str, str]]:
    """(id, agents, actions, episode limit) of every registered env (of `family`)."""
    return [(env_id, *env_facts(env_id)) for env_id in registry.list_envs(family)]


def _first_paragraph(doc: str, width: int) -> str:
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return textwrap.shorten(first, width=width, placeholder=" ...")


def _source_doc(path: str) -> str | None:
    """What `describe_algorithm` shows for the `module:function` path, read from the module's
    source without importing it (None where the source or the function is not found)."""
    module, _, attr = path.partition(":")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
            own = (ast.get_docstring(tree) if attr == "make_train" else None) or ""
            return own or ast.get_docstring(node) or ""
    return None


def describe_algorithm(name: str, width: int = 90) -> str:
    """First paragraph of a learner's docstring (its module's, unless `make_train` is not the
    module's own), or why it cannot be imported. One of marl's own not imported yet is read from
    its source, without importing it."""
    entry = registry._ALGORITHMS.get(name)
    if isinstance(entry, str) and _marls_own(entry, "marl.algorithms"):
        doc = _source_doc(entry)
        if doc is not None:
            return _first_paragraph(doc, width)
    try:
        make_train = registry.algorithm(name)
    except Exception as e:  # one broken learner must not hide the rest
        return f"unavailable: {type(e).__name__}"
    own = getattr(make_train, "__name__", "") == "make_train"  # its module's own learner
    module = inspect.getmodule(make_train) if own else None
    doc = getattr(module, "__doc__", None) or make_train.__doc__ or ""
    return _first_paragraph(doc, width)


def _commented_keys(relative: str) -> list[tuple[str, str, str]]:
    """`(key, value, comment)` of the top-level `key: value  # comment` lines of a yaml file
    (none where the file is not shipped)."""
    path = conf_dir() / relative
    if not path.is_file():
        return []
    return [
        m.groups() for line in path.read_text().splitlines() if (m := _COMMENTED_KEY.match(line))
    ]


def _algo_lines(algo: str) -> list[tuple[str, str, str]]:
    """A shipped learner's commented keys, those it inherits included (none without a yaml)."""
    from marl.conf import algo_lines

    if not (conf_dir() / "algo" / f"{algo}.yaml").is_file():
        return []
    return algo_lines(algo)


def _notes_of(doc: str) -> dict[str, str]:
    notes: dict[str, str] = {}
    current: list[str] = []
    indent, inside = None, False
    for line in doc.splitlines():
        if _NOTES.match(line):
            inside, indent, current = True, None, []
            continue
        if not inside:
            continue
        if not line.strip() or (indent is not None and len(line) - len(line.lstrip()) < indent):
            inside = False
            continue
        m = _NOTE.match(line)
        if m and (indent is None or len(m.group(1)) == indent):
            indent = len(m.group(1))
            current = [n.strip() for n in m.group(2).split(",")]
            for n in current:
                notes[n] = m.group(3).strip()
        elif current:
            for n in current:
                notes[n] += " " + line.strip()
    return notes


def keyword_notes(factory: Any) -> dict[str, str]:
    """Each constructor keyword's note from the `Constructor:` sections of an env class's
    docstring and its bases' (a map's `functools.partial`: its class's), the class's own
    winning: `keyword: text` entries (or `a, b: text`), continuation lines joined."""
    target = getattr(factory, "func", factory)
    owners = inspect.getmro(target) if inspect.isclass(target) else (target,)
    notes: dict[str, str] = {}
    for owner in reversed(owners):
        notes.update(_notes_of(inspect.cleandoc(owner.__doc__ or "")))
    return notes


def _as_yaml(value: Any) -> str:
    """A default as one writes it on the command line (`null`, `true`, `[2,2]`)."""
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(_as_yaml(v) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(value)


def _env_keywords(env_id: str) -> list[tuple[str, str, str]]:
    """`(keyword, default, note)` of every constructor keyword of `env_id`: defaults from its
    signature, notes (the first sentence) from its class docstring's `Constructor:` section;
    none where it cannot be imported."""
    try:
        defaults = registry.env_kwargs(env_id)
        notes = keyword_notes(registry.env_factory(env_id))
    except Exception:  # the help stands without them
        return []
    first = {
        k: re.split(r"(?<=[^.])(?<!e\.g)(?<!i\.e)\.(?:\s|$)", v, maxsplit=1)[0]
        for k, v in notes.items()
    }
    return [(k, _as_yaml(v), first.get(k, "")) for k, v in defaults.items()]


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


def _beside(head: str, body: str, pad: int) -> str:
    """`body` (already indented after its first line) from column `pad`, beside `head` or on
    the next line when `head` is too long."""
    if len(head) <= pad - 2:
        return (head.ljust(pad) + body).rstrip()
    return f"{head}\n{' ' * pad}{body}".rstrip()


def _row(head: str, text: str, pad: int, width: int = 100) -> str:
    """`head` then `text` from column `pad`, the text wrapped to `width`."""
    lines = textwrap.wrap(text, width=max(width - pad, 30)) or [""]
    return _beside(head, ("\n" + " " * pad).join(lines), pad)


def _env_key(keyword: str, parts: dict[str, ConfigPart]) -> str:
    """Where `keyword` is set on the command line: its part's key (`env.reward` for the part's
    option, `env.generator.allies`), else `env.kwargs.<keyword>`."""
    for name, part in parts.items():
        if keyword == part.choice:
            return f"env.{name}"
        if keyword in part.keywords:
            return f"env.{name}.{keyword}"
    return f"env.kwargs.{keyword}"


def describe(overrides: Sequence[str] = ()) -> str:
    """Text of `marl train [OVERRIDES] --help`: the config groups with their options, then the
    keys of the chosen env, learner and protocol (`algo=qmix --help` lists QMIX's keys)."""
    picked = chosen(overrides)
    options = {
        "env": sorted(set(group_options("env")) | set(registry.list_envs())),
        "algo": sorted(set(group_options("algo")) | set(registry.list_algorithms())),
        "protocol": group_options("protocol"),
    }
    pad = 30
    out = ["config groups (GROUP=OPTION; the option in use shown):"]
    for group in GROUPS:
        out.append(_beside(f"  {group}={picked[group]}", _wrap(options[group], pad), pad))
    out.append("")
    out.append("keys (KEY=VALUE; the default shown):")
    for key, value, comment in _commented_keys(f"{CONFIG_NAME}.yaml"):
        out.append(_row(f"  {key}={value}", comment, pad))
    protocol = picked["protocol"]
    out.append("")
    out.append(f"protocol keys (protocol={protocol}):")
    for key, value, comment in _commented_keys(f"protocol/{protocol}.yaml"):
        out.append(_row(f"  protocol.{key}={value}", comment, pad))
    env_id = picked["env"]
    try:
        parts = env_parts(env_id)
    except Exception:  # the help stands without them
        parts = {}
    out.append("")
    out.append(f"env keywords (env={env_id}; unset ones take the constructor's defaults):")
    keywords = _env_keywords(env_id)
    order = [k for part in parts.values() for k in part.names()]  # part by part, then the rest
    keywords.sort(key=lambda row: order.index(row[0]) if row[0] in order else len(order))
    for key, value, comment in keywords:
        out.append(_row(f"  {_env_key(key, parts)}={value}", comment, pad))
    if not keywords:
        out.append(_row("  env.kwargs.KEYWORD=VALUE", "a constructor keyword of the env", pad))
    algo = picked["algo"]
    out.append("")
    algo_keys = [k for k in _algo_lines(algo) if k[0] != "name"]
    if algo_keys:
        from marl.conf import algo_bases

        files = " on ".join(f"{name}.yaml" for name in reversed(algo_bases(algo)))
        out.append(f"learner keys (algo={algo}; marl/conf/algo/{files}):")
        for key, value, comment in algo_keys:
            out.append(_row(f"  algo.{key}={value}", comment, pad))
    else:
        out.append(f"learner keys (algo={algo}: no shipped yaml):")
        out.append(
            _row("  algo.KEY=VALUE", "reaches the learner's cfg; unset keys keep its defaults", pad)
        )
    out.append("")
    out.append("example:")
    out.append("  marl train env=particle/spread algo=mappo seeds=10 budget=2e6 algo.lr=1e-3")
    return "\n".join(out)
