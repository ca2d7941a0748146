"""The package's layers hold (the import-linter contracts in pyproject.toml, checked by
scripts/lint_imports.py on a copy laid out as installed), and no modules import each other in a
cycle, counting imports under `if TYPE_CHECKING:` and inside functions."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
lint_imports = load_script("lint_imports")


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    return lint_imports.stage(tmp_path_factory.mktemp("stage"))


def test_the_stage_holds_every_package(staged):
    code = "import grimp, json; print(json.dumps(sorted(grimp.build_graph('marl').modules)))"
    env = {**os.environ, "PYTHONPATH": str(staged)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=staged, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    modules = set(json.loads(out.stdout))
    assert {"marl.envs.combat.env", "marl.algorithms.qmix", "marl.baselines.combat"} <= modules
    assert modules == set(module_files())


def test_import_linter_contracts_are_kept():
    out = subprocess.run(
        [sys.executable, "scripts/lint_imports.py"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_a_broken_contract_fails_the_lint(tmp_path, capfd):
    """Not vacuous: a core module importing an environment fails it."""
    tree = lint_imports.stage(tmp_path)
    (tree / "marl" / "core" / "leak.py").write_text("import marl.envs.combat\n")
    assert lint_imports.lint(tree) == 1
    assert "marl.core.leak -> marl.envs.combat" in capfd.readouterr().out


def module_files() -> dict[str, Path]:
    """Every module of the package -> its file, named as installed (pyproject's package-dir)."""
    out = {}
    for package, folder in lint_imports.package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            out[".".join((package, *parts[: -1 if parts[-1] == "__init__" else None]))] = path
    return out


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports anywhere in its file (module level, in functions, under
    TYPE_CHECKING): `from p import m` names the module p.m where there is one, else p."""

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                targets = [known(f"{base}.{a.name}") or known(base) for a in node.names]
            else:
                continue
            graph[module] |= {t for t in targets if t and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative), sorted."""
    adj = {m: sorted(graph[m]) for m in graph}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            for w in adj[v]:
                if w in on_stack:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def test_no_import_cycles():
    found = cycles(import_graph(module_files()))
    assert found == [], "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    graph = {"p.a": {"p.b"}, "p.b": {"p.a", "p.c"}, "p.c": set(), "p.d": {"p.d"}}
    assert cycles(graph) == [["p.a", "p.b"]]


def test_the_graph_counts_type_checking_and_function_local_imports(tmp_path):
    (tmp_path / "p").mkdir()
    files = {f"p.{m}": tmp_path / "p" / f"{m}.py" for m in "abcd"}
    files["p"] = tmp_path / "p" / "__init__.py"
    files["p"].write_text("")
    files["p.a"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n"
    )
    files["p.b"].write_text("def f():\n    from p import c\n")
    files["p.c"].write_text("import p.d.e\n")
    files["p.d"].write_text("from . import a\n")
    graph = import_graph(files)
    assert graph == {"p": set(), "p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.d"}, "p.d": {"p.a"}}
    assert cycles(graph) == [["p.a", "p.b", "p.c", "p.d"]]


def test_every_scripts_marl_imports_resolve():
    """The scripts are run by hand, not by the suite: a module they import from marl that
    moved (the layered package) must fail here, not months later at a user's prompt."""
    import ast
    import importlib
    import importlib.util
    from pathlib import Path

    missing = []
    for path in sorted((Path(__file__).parents[1] / "scripts").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "marl":
                try:
                    module = importlib.import_module(node.module)
                except ImportError as e:  # a module of an extra not installed here (torch)
                    cause = e.__cause__ if isinstance(e.__cause__, ImportError) else e
                    outside = not (getattr(cause, "name", "") or "marl").startswith("marl")
                    if outside and importlib.util.find_spec(node.module) is not None:
                        continue
                    raise
                for alias in node.names:
                    if not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ModuleNotFoundError:
                            missing.append(f"{path.name}: from {node.module} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "marl":
                        importlib.import_module(alias.name)
    assert not missing, missing
