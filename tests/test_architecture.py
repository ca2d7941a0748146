"""The package's layers hold (the import-linter contracts in pyproject.toml), and no modules
import each other in a cycle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
# source folder -> its package: envs/, algorithms/ and baselines/ install as marl.* (pyproject's
# package-dir). grimp reads a package's files from its folder, so the checks run on a staged
# copy laid out as the installed package, in a fresh process.
PACKAGES = {
    "marl": "marl",
    "envs": "marl/envs",
    "algorithms": "marl/algorithms",
    "baselines": "marl/baselines",
}


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    stage = tmp_path_factory.mktemp("stage")
    for folder, target in PACKAGES.items():
        shutil.copytree(
            ROOT / folder,
            stage / target,
            ignore=shutil.ignore_patterns("__pycache__", "*.yaml", "*.map", "site_assets"),
        )
    return stage


def run_staged(stage: Path, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(stage)}
    return subprocess.run(
        [sys.executable, *args], cwd=stage, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_stage_holds_every_package(staged):
    out = run_staged(
        staged,
        [
            "-c",
            "import grimp, json; g = grimp.build_graph('marl'); "
            "print(json.dumps(sorted(g.modules)))",
        ],
    )
    modules = set(json.loads(out.stdout))
    assert {"marl.envs.combat.env", "marl.algorithms.qmix", "marl.baselines.combat"} <= modules


def test_import_linter_contracts_are_kept(staged):
    out = run_staged(
        staged, ["-m", "importlinter.cli", "--no-cache", "--config", str(ROOT / "pyproject.toml")]
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "broken" not in out.stdout.lower().replace("0 broken", "")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    adj = {
        m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in graph.modules
    }
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
    return found


def test_no_import_cycles(staged):
    out = run_staged(
        staged,
        [
            "-c",
            "import grimp, json; g = grimp.build_graph('marl', "
            "exclude_type_checking_imports=True); print(json.dumps({m: sorted("
            "g.find_modules_directly_imported_by(m)) for m in g.modules}))",
        ],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    graph = grimp.ImportGraph()
    edges = json.loads(out.stdout)
    assert "marl.envs.combat.env" in edges
    for m in edges:
        graph.add_module(m)
    for m, targets in edges.items():
        for t in targets:
            graph.add_import(importer=m, imported=t)
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for m in ("p.a", "p.b", "p.c"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.b", imported="p.c")
    assert cycles(graph) == [["p.a", "p.b"]]


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
