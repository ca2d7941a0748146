"""Atomic file writes: a reader never sees half a record, report or leaderboard; and reads
that take a compacted copy (`record.json.gz` for `record.json`) as the file itself."""

from __future__ import annotations

import contextlib
import gzip
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


GZ = ".gz"  # a compacted file: the gzip of the file it names (`marl.run.saved.compact`)


def stored(path: str | Path) -> Path:
    """The file that holds `path`: itself where it exists, else its compacted copy `path.gz`
    where that exists, else `path` (missing)."""
    path = Path(path)
    if path.exists() or path.name.endswith(GZ):
        return path
    packed = path.with_name(path.name + GZ)
    return packed if packed.exists() else path


INFLATE_LIMIT = 256 * 2**20  # bytes a compacted file may inflate to (marl's largest: ~1 MB)


def read_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of `path` or of its compacted copy (`stored`), decompressed; a ValueError
    where a compacted file inflates past `limit` (a gzip bomb: 16 MB can hold 16 GiB)."""
    path = stored(path)
    limit = INFLATE_LIMIT if limit is None else limit
    if not path.name.endswith(GZ):
        return path.read_bytes()
    with gzip.open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: inflates past {limit:,} bytes; not a file marl wrote")
    return data


def read_text(path: str | Path) -> str:
    """`read_bytes` as UTF-8 text."""
    return read_bytes(path).decode()


def read_json(path: str | Path) -> Any:
    """`read_text` parsed as JSON."""
    return json.loads(read_text(path))


def gzip_bytes(data: bytes) -> bytes:
    """gzip at level 9 with no time stamp or name: the same input compacts to the same bytes."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def write_json(path: str | Path, obj: Any, indent: int | None = 1) -> None:
    """Atomic JSON (NaN/inf written as JSON's non-standard NaN/Infinity); NumPy scalars are
    written as the Python numbers they hold."""
    atomic_write(Path(path), json.dumps(obj, indent=indent, default=_plain) + "\n")


def _plain(value: Any) -> Any:
    """A NumPy scalar as its Python number (json.dumps' fallback); anything else refused."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def float_list(values: Any) -> list[float]:
    """Array values as a flat list of Python floats for JSON. Single (or half) precision is
    written at the shortest decimal that reads back as the same float32 (`0.6512432`, where
    float64's repr of that float32 is `0.6512432098388672`): lossless, and records are 40%
    smaller, which keeps the committed ones within what travels to a device machine."""
    a = np.asarray(values)
    if a.dtype.kind == "f" and a.dtype.itemsize <= 4:
        return [float(str(v)) for v in a.astype(np.float32).ravel()]
    return [float(v) for v in a.astype(np.float64).ravel()]


YAML_BYTES = 4 * 2**20  # a config, definition or notes file is kilobytes


def read_yaml(path: str | Path, limit: int = YAML_BYTES) -> Any:
    """A YAML file read as data, bounded: at most `limit` bytes, no aliases (a 550-byte alias
    bomb expands to gigabytes), `yaml.safe_load`; a ValueError naming the file otherwise."""
    import yaml

    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise ValueError(f"{path}: larger than {limit:,} bytes; not a file marl reads")
    try:
        text = raw.decode()
        if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise ValueError(f"{path}: YAML aliases (*name) are refused: marl reads plain data")
        return yaml.safe_load(text)
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ValueError(f"{path}: not YAML: nested too deeply") from None
