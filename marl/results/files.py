"""Atomic file writes: a reader never sees half a record, report or leaderboard."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file and `os.replace`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any, indent: int | None = 1) -> None:
    """Atomic JSON (NaN/inf written as JSON's non-standard NaN/Infinity)."""
    atomic_write(path, json.dumps(obj, indent=indent) + "\n")


def float_list(values: Any) -> list[float]:
    """Array values as a flat list of Python floats for JSON. Single (or half) precision is
    written at the shortest decimal that reads back as the same float32 (`0.6512432`, where
    float64's repr of that float32 is `0.6512432098388672`): lossless, and records are 40%
    smaller, which keeps the committed ones within what travels to a device machine."""
    a = np.asarray(values)
    if a.dtype.kind == "f" and a.dtype.itemsize <= 4:
        return [float(str(v)) for v in a.astype(np.float32).ravel()]
    return [float(v) for v in a.astype(np.float64).ravel()]
