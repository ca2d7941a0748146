"""What marl wrote into an output folder (a site, a report's or leaderboard's figures), so that
writing it again removes only marl's own earlier files: a manifest, `.marl-written.json`, lists
each file's path (relative, inside the folder) and content hash. A file is removed only where a
previous writing listed it, this one did not write it, and it still holds what marl wrote; a
user's file beside them, or one they edited, is never touched."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from marl.results.files import atomic_write

MANIFEST = ".marl-written.json"
MANIFEST_BYTES = 8 * 2**20  # a manifest names files, a few hundred bytes each at most


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(root: Path) -> dict[str, str]:
    """relative path -> sha256 of the files the last writing into `root` listed; {} where there
    is no manifest or it is not one (a crafted or damaged file names nothing to remove)."""
    path = Path(root) / MANIFEST
    if path.is_symlink() or not path.is_file():
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read(MANIFEST_BYTES + 1)
        found = json.loads(data) if len(data) <= MANIFEST_BYTES else None
    except (OSError, ValueError):
        return {}
    files = found.get("files") if isinstance(found, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def _inside(root: Path, rel: str) -> Path | None:
    """`root/rel` where `rel` is a plain relative path that stays inside `root` through no
    link; None otherwise."""
    parts = PurePosixPath(rel).parts
    if not parts or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None
    path = root.joinpath(*parts)
    for parent in [path, *list(path.parents)[: len(parts) - 1]]:
        if parent.is_symlink():
            return None
    return path


def prune(root: str | Path, written: Iterable[str | Path]) -> None:
    """Remove what the previous writing into `root` listed and this one (`written`, files
    under `root`) did not, where unchanged since; then list this writing's files."""
    root = Path(os.path.abspath(root))
    now = {}
    for p in written:
        path = Path(os.path.abspath(p))
        if path.is_relative_to(root) and path.is_file():
            now[path.relative_to(root).as_posix()] = _digest(path)
    for rel, digest in sorted(read_manifest(root).items()):
        if rel in now:
            continue
        found = _inside(root, rel)
        if found is None or not found.is_file() or _digest(found) != digest:
            continue  # not a plain file of ours, or edited since: the user's now
        found.unlink()
        for parent in list(found.parents)[: len(PurePosixPath(rel).parts) - 1]:
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
    if now or (root / MANIFEST).exists():
        root.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"files": dict(sorted(now.items()))}, indent=0, sort_keys=True)
        atomic_write(root / MANIFEST, text + "\n")


__all__ = ["MANIFEST", "prune", "read_manifest"]
