"""What a run was made with: the code (git commit and whether the tree was dirty, or the
installed version), the packages results depend on, the device, and the env family's behaviour
version. Every run's `meta.json` and `final.json` carry them (`RunDir`)."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from marl.core import registry
from marl.results.protocol import split_env_id

DISTRIBUTION = "marl-suite"  # marl's name on the package index (pyproject's [project] name)
# distribution -> its key in `versions()` (marl's stays "marl", as records have always named it)
VERSIONED = {DISTRIBUTION: "marl"} | {
    name: name
    for name in (
        "jax",
        "jaxlib",
        "flax",
        "optax",
        "distrax",
        "chex",
        "gymnax",
        "numpy",
        "hydra-core",
    )
}


def versions() -> dict[str, str]:
    """Versions of the packages results depend on, and of Python."""
    out = {"python": platform.python_version()}
    for name, key in VERSIONED.items():
        try:
            out[key] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def device() -> dict[str, Any]:
    """The default JAX backend: platform, device kind and count."""
    import jax

    devices = jax.devices()
    return {
        "platform": devices[0].platform,
        "kind": devices[0].device_kind,
        "count": len(devices),
        "cpu_count": os.cpu_count(),
    }


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout.strip()


@functools.lru_cache(maxsize=1)
def code() -> dict[str, Any]:
    """The code a run is made with, read once per process: `{"commit", "dirty"}` where marl
    runs from a git checkout (dirty: tracked files outside `results/` differ from the commit),
    else `{"version"}`, the installed distribution's."""
    import marl

    root = Path(marl.__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file():
        try:
            commit = _git(root, "rev-parse", "HEAD")
            changed = _git(
                root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results"
            )
            return {"commit": commit, "dirty": bool(changed)}
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return {"version": metadata.version(DISTRIBUTION)}
    except metadata.PackageNotFoundError:
        return {"version": None}


def env_version(env_id: str) -> dict[str, Any]:
    """`{"family", "version"}` of `env_id` (`registry.env_version`; None for a plugin that
    declares none)."""
    return {"family": split_env_id(env_id)[0], "version": registry.env_version(env_id)}


def provenance(env_id: str) -> dict[str, Any]:
    """The fields every meta.json and final.json carry."""
    return {
        "code": code(),
        "env_version": env_version(env_id),
        "versions": versions(),
        "device": device(),
    }
