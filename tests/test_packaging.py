"""The wheel holds every module of the source tree, under the `marl` namespace, as the
distribution `marl-suite` (`marl` on the package index is an unrelated package)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = "marl-suite"
# source folder -> its place in the wheel: envs/, algorithms/ and baselines/ install as marl.*
MAPPING = {
    "marl": "marl",
    "envs": "marl/envs",
    "algorithms": "marl/algorithms",
    "baselines": "marl/baselines",
}


def source_modules() -> set[str]:
    out = set()
    for folder, target in MAPPING.items():
        for path in (ROOT / folder).rglob("*.py"):
            out.add(f"{target}/{path.relative_to(ROOT / folder).as_posix()}")
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # build from a copy so parallel test workers never share a build/ folder
    src = tmp_path_factory.mktemp("src")
    for name in [*MAPPING, "pyproject.toml", "README.md"]:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy(path, src / name)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (whl,) = out.glob("marl_suite-*.whl")
    return whl


@pytest.mark.integration
def test_wheel_contains_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = source_modules()
    assert len(expected) > 10
    missing = sorted(expected - names)
    assert not missing, f"modules missing from the wheel: {missing}"


@pytest.mark.integration
def test_wheel_installs_nothing_generic_at_top_level(wheel):
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert tops <= {"marl", next(t for t in tops if t.endswith(".dist-info"))}, tops


@pytest.mark.integration
def test_wheel_ships_configs_and_console_script(wheel):
    zf = zipfile.ZipFile(wheel)
    entry = next(n for n in zf.namelist() if n.endswith("entry_points.txt"))
    text = zf.read(entry).decode()
    assert "marl = marl.cli:main" in text
    # the built-in envs and learners: the registry reads them from here, as a plugin's
    assert "[marl.envs]" in text and "combat/3m = marl.envs.combat:make_3m" in text
    assert "[marl.algorithms]" in text and "qmix = marl.algorithms.qmix:make_train" in text


@pytest.mark.integration
def test_wheel_ships_the_site_assets(wheel):
    """`marl leaderboard --site` copies its stylesheet and script from the installed package."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"marl/results/site_assets/site.css", "marl/results/site_assets/site.js"} <= names


@pytest.mark.integration
def test_the_distribution_is_named_marl_suite_everywhere_it_is_read(wheel):
    """pyproject's name, the wheel's metadata and what records read their version from agree
    (`importlib.metadata.version("marl")` would find the unrelated package where installed)."""
    from marl.run.train import provenance

    pyproject = (ROOT / "pyproject.toml").read_text()
    (name,) = re.findall(r'^\[project\]\n(?:#.*\n)*name = "([^"]+)"', pyproject, re.M)
    assert name == DISTRIBUTION == provenance.DISTRIBUTION
    assert '\n[project.scripts]\nmarl = "marl.cli:main"\n' in pyproject  # the command stays
    zf = zipfile.ZipFile(wheel)
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    assert f"Name: {DISTRIBUTION}\n" in zf.read(meta).decode()
    assert "marl" in provenance.versions()  # records keep naming marl's version "marl"
