"""One name per thing: each type, function and helper defined once, where the layers put it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("marl", "envs", "algorithms", "baselines")


def _definitions(name: str, folders: tuple[str, ...] = PACKAGES) -> list[str]:
    """The file of every module-level class, function or assignment called `name`."""
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                names = []
                if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                    names = [node.name]
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names = [node.target.id]
                if name in names:
                    found.append(str(path.relative_to(ROOT)))
    return found


def test_one_policy_type():
    """`marl.core.learner.Policy` is the only Policy: the renderer acts through it too."""
    assert _definitions("Policy") == ["marl/core/learner.py"]


def test_one_random_policy():
    assert _definitions("random_policy") == ["baselines/random.py"]


def test_the_renderer_plays_the_random_baseline_by_default():
    """`render_episode` without a trained policy plays `marl.baselines.random_policy` (the
    lower anchor's policy), the same episode as when it is passed explicitly."""
    import marl
    from marl.baselines import random_policy
    from marl.run.saved.render import render_episode

    env = marl.make("particle/spread")
    key = jax.random.key(3)
    default = render_episode(env, key, steps=4)
    explicit = render_episode(env, key, steps=4, trained=(random_policy(env), None))
    assert len(default) == len(explicit) == 5
    for a, b in zip(default, explicit, strict=True):
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# the library's readers and writers that scripts import rather than define again
LIBRARY_HELPERS = {"atomic_write", "evaluations", "read_json", "read_run", "versions", "write_json"}


def test_scripts_define_no_library_helper_again():
    assert _definitions_in_scripts() & LIBRARY_HELPERS == set()


def _definitions_in_scripts() -> set[str]:
    names = set()
    for path in (ROOT / "scripts").glob("*.py"):
        tree = ast.parse(path.read_text())
        names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return names


def test_each_script_names_its_command_and_what_it_feeds():
    """scripts/ holds reproducible studies and the tools that keep committed results: each
    docstring gives its command and the results page (or the committed data: tests', an env
    family's package data; the docs' images; or CI's `.ci/run`) it feeds."""
    import re

    for path in sorted((ROOT / "scripts").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert f"scripts/{path.name}" in doc, f"{path.name}: no command in its docstring"
        said = re.search(r"(?:^|\n)(?:Feeds|Maintains) (.+?)(?:\n\n|$)", doc, re.S)
        assert said, (
            f"{path.name}: the docstring says not what it feeds (Feeds ... / Maintains ...)"
        )
        named = re.findall(
            r"`((?:results|tests/data|docs/pages/assets|envs/\w+/data|\.ci)/[^`<*\[]*)",
            said.group(1),
        )
        assert named, f"{path.name}: names no results page or committed data"
        for name in named:
            assert (ROOT / name).exists(), f"{path.name}: {name} does not exist"


def test_package_modules_stay_within_400_lines():
    """Every module of the installed package (marl/ and the envs/, algorithms/ and baselines/
    folders it maps in) stays within 400 lines, and no line is kept from the formatter with
    `# fmt: skip`: split by role instead of packing lines."""
    long = {
        str(p.relative_to(ROOT)): n
        for folder in ("marl", "envs", "algorithms", "baselines")
        for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}
    skipped = [
        str(p.relative_to(ROOT))
        for folder in ("marl", "envs", "algorithms", "baselines")
        for p in (ROOT / folder).rglob("*.py")
        if "# fmt: skip" in p.read_text()
    ]
    assert skipped == []


def test_every_public_function_of_envs_and_baselines_is_used_by_the_package():
    """No dead names: a public module-level function of envs/ or baselines/ is called or
    named somewhere in the installed package or pyproject.toml (entry points, hooks), not
    only by tests."""
    import ast

    folders = ("marl", "envs", "algorithms", "baselines")
    sources = {p: p.read_text() for f in folders for p in (ROOT / f).rglob("*.py")}
    corpus = [*sources.values(), (ROOT / "pyproject.toml").read_text()]
    dead = []
    for path, text in sources.items():
        if path.relative_to(ROOT).parts[0] not in ("envs", "baselines"):
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                uses = sum(len(re.findall(rf"\b{node.name}\b", t)) for t in corpus)
                if uses <= 1:  # its definition only
                    dead.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert dead == []
