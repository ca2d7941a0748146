"""The declared dependencies are what the package imports: pyproject's [project].dependencies
name every third-party package its modules import at run time and nothing more, and an optional
import (under try/except ImportError, or in a module serving an extra) is declared in an extra.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the backport (the test extra installs it)
    import tomli as tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# import name -> distribution, where they differ
DISTRIBUTIONS = {
    "hydra": "hydra-core",
    "orbax": "orbax-checkpoint",
    "tensorboardX": "tensorboardx",
    "yaml": "pyyaml",
}
# modules that import an extra's packages only when its feature is used: the interop adapters,
# the peers of `marl bench --vs`, the jaxmarl/smax env and the loggers (`logger=`)
OPTIONAL_MODULES = re.compile(
    r"marl\.interop\.|marl\.bench\.peers$|marl\.envs\.jaxmarl_smax$|marl\.run\.train\.loggers$"
)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution(import_name: str) -> str:
    return normalise(DISTRIBUTIONS.get(import_name, import_name))


def declared_core() -> set[str]:
    return {normalise(Requirement(r).name) for r in PROJECT["project"]["dependencies"]}


def declared_extras() -> set[str]:
    return {
        normalise(Requirement(r).name)
        for extra in PROJECT["project"]["optional-dependencies"].values()
        for r in extra
    }


def module_files() -> dict[str, Path]:
    """Every module of the installed package -> its source file (pyproject's package-dir)."""
    out = {}
    for package, folder in PROJECT["tool"]["setuptools"]["package-dir"].items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            out[".".join((package, *parts))] = path
    return out


def _catches_import_error(node: ast.Try) -> bool:
    names = {"ImportError", "ModuleNotFoundError"}
    for handler in node.handlers:
        caught = handler.type
        elts = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(isinstance(e, ast.Name) and e.id in names for e in elts):
            return True
    return False


def _type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def imports(tree: ast.AST) -> Iterator[tuple[str, bool]]:
    """(top-level name, guarded) of every absolute import run at some point: all but those
    under `if TYPE_CHECKING:`; guarded: inside the body of a try that catches ImportError."""

    def visit(node: ast.AST, guarded: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.If) and _type_checking(node.test) and child in node.body:
                continue
            inner = guarded or (
                isinstance(node, ast.Try) and child in node.body and _catches_import_error(node)
            )
            if isinstance(child, ast.Import):
                yield from ((a.name.split(".")[0], inner) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                yield child.module.split(".")[0], inner
            yield from visit(child, inner)

    yield from visit(tree, False)


def third_party() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Distribution -> the modules importing it: (required, optional)."""
    required: dict[str, set[str]] = {}
    optional: dict[str, set[str]] = {}
    for module, path in module_files().items():
        for name, guarded in imports(ast.parse(path.read_text())):
            if name in sys.stdlib_module_names or name in {"marl", "__future__"}:
                continue
            into = optional if guarded or OPTIONAL_MODULES.match(module) else required
            into.setdefault(distribution(name), set()).add(module)
    return required, optional


def test_every_required_import_is_a_declared_dependency():
    required, _ = third_party()
    undeclared = {d: sorted(m) for d, m in required.items() if d not in declared_core()}
    assert not undeclared, f"imported, not in [project].dependencies: {undeclared}"


def test_every_declared_dependency_is_imported():
    required, _ = third_party()
    unused = declared_core() - set(required)
    assert not unused, f"declared in [project].dependencies, imported by no module: {unused}"


def test_every_optional_import_is_declared_in_an_extra():
    _, optional = third_party()
    known = declared_core() | declared_extras()
    undeclared = {d: sorted(m) for d, m in optional.items() if d not in known}
    assert not undeclared, f"optional imports declared in no extra: {undeclared}"


def test_import_names_map_to_their_distributions():
    """Where a package is installed, the table names the distribution that provides it."""
    provided = importlib.metadata.packages_distributions()
    for name, dist in DISTRIBUTIONS.items():
        if name in provided:
            assert normalise(dist) in {normalise(d) for d in provided[name]}, name


def test_the_scan_sees_guards_and_type_checking():
    tree = ast.parse(
        "import a\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import b\n"
        "try:\n    import c.x\nexcept (ModuleNotFoundError, OSError):\n    import d\n"
        "def f():\n    from e import y\n"
    )
    assert list(imports(tree)) == [
        ("a", False),
        ("typing", False),
        ("c", True),
        ("d", False),
        ("e", False),
    ]
