"""Check pyproject.toml's import contracts ([tool.importlinter]) from a checkout.

    python scripts/lint_imports.py   # exit 0: every contract kept

import-linter (grimp) reads a package's modules from its folder, but envs/, algorithms/ and
baselines/ sit beside marl/ and install as marl.envs, marl.algorithms and marl.baselines
(pyproject's `[tool.setuptools.package-dir]`). So the package's .py files are copied into a
temporary tree laid out as installed (copied, not linked: grimp's walk does not follow links)
and import-linter runs on that tree, first on sys.path.

Feeds CI: the checks stage of `.ci/run` (and tests/test_architecture.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the backport (the test extra installs it)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"


def package_dirs() -> dict[str, Path]:
    """Each top package -> its source folder (pyproject's package-dir table)."""
    table = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-dir"]
    return {package: ROOT / folder for package, folder in table.items()}


def stage(dest: Path) -> Path:
    """Copy every module of the package into `dest`, laid out as installed; returns `dest`."""
    for package, folder in package_dirs().items():
        target = dest.joinpath(*package.split("."))
        for path in folder.rglob("*.py"):
            if "__pycache__" not in path.parts:
                out = target / path.relative_to(folder)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, out)
    return dest


def lint(tree: Path) -> int:
    """import-linter on a staged `tree` in a process of its own: its exit status."""
    shutil.copyfile(PYPROJECT, tree / "pyproject.toml")  # the contracts, found in the cwd
    path = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p)
    # the console script's entry point (`python -m importlinter.cli` runs nothing)
    run = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"
    command = [sys.executable, "-c", run, "--no-cache"]
    return subprocess.run(command, cwd=tree, env={**os.environ, "PYTHONPATH": path}).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="marl-lint-imports-") as tmp:
        return lint(stage(Path(tmp)))


if __name__ == "__main__":
    sys.exit(main())
