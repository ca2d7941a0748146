"""MkDocs hook: lay the package out as it installs, for mkdocstrings to read.

`envs/`, `algorithms/` and `baselines/` sit beside `marl/` and install as `marl.envs`,
`marl.algorithms` and `marl.baselines` (pyproject's `[tool.setuptools.package-dir]`); griffe
reads folders, so the API reference reads `build/docs-stage/marl/`, a tree of links to the real
files laid out as installed, made here before any page is rendered.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "build" / "docs-stage"


def package_dirs(pyproject: str) -> dict[str, str]:
    """`[tool.setuptools.package-dir]`'s subpackages: `{"envs": "envs", ...}` (the folder of
    each `marl.X`)."""
    table = re.search(
        r"^\[tool\.setuptools\.package-dir\]\n(.*?)(?:\n\[|\Z)", pyproject, re.M | re.S
    )
    pairs = re.findall(r'^"marl\.(\w+)"\s*=\s*"([^"]+)"', table.group(1) if table else "", re.M)
    return dict(pairs)


def stage() -> Path:
    """Make `build/docs-stage/marl/`: links to `marl/`'s entries and to each mapped folder."""
    target = STAGE / "marl"
    shutil.rmtree(STAGE, ignore_errors=True)
    target.mkdir(parents=True)
    for child in (ROOT / "marl").iterdir():
        if child.name != "__pycache__":
            (target / child.name).symlink_to(child, target_is_directory=child.is_dir())
    for name, folder in package_dirs((ROOT / "pyproject.toml").read_text()).items():
        (target / name).symlink_to(ROOT / folder, target_is_directory=True)
    return STAGE


def on_startup(command: str, dirty: bool) -> None:
    """MkDocs event: stage the package before the config (and mkdocstrings) is loaded."""
    stage()
