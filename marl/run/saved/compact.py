"""Compact run folders: a finished run's bulky files in less room, read back as they were.

`compact_run(path)` gzips a finished run folder's bulky files in place (`record.json` ->
`record.json.gz`; `metrics.jsonl`, `transfer.json`, `curve.json`, `params.msgpack` and
`best_params.msgpack` likewise) and moves the per-segment training metrics out of `meta.json`
into `train_metrics.json.gz`. It is lossless (the same bytes come back) and idempotent, and
every reader in marl takes the compacted copy for the file (`marl.results.files.read_json`,
`marl.results.protocol.load`, `train_metrics`, `restore`). With `params=True` it also
writes each parameter file in half precision, gzipped (`best_params.f16.msgpack.gz`, about
40% of the float32 file): what `marl eval`, `marl render` and `marl crossplay` read where the
full-precision parameters are not kept (`restore`). Float16 can flip a greedy action
whose two best scores nearly tie, so results computed from the float32 parameters keep them.

Runs keep writing plain files: `record.json` is rewritten after every evaluation and
`metrics.jsonl` appended line by line (a reader may tail it, a resumed run reads it back), and
tools outside marl read plain marl-eval JSON. Compacting is a step before committing records:

    python scripts/compact_results.py results [--params] [--check]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.files import (
    GZ,
    atomic_write,
    gzip_bytes,
    read_bytes,
    read_json,
    stored,
    write_json,
)
from marl.results.protocol import META, RECORD, has_record
from marl.results.runfolder import BEST_PARAMS, CONFIG, FINAL, METRICS
from marl.results.runfolder import PARAMS as FINAL_PARAMS

PARAMS = (BEST_PARAMS, FINAL_PARAMS)
BULKY = (RECORD, METRICS, "transfer.json", "curve.json", *PARAMS)  # gzipped in place
TRAIN_METRICS = "train_metrics.json.gz"  # meta.json's `train_metrics`, moved out
HALF = ".f16.msgpack.gz"  # `best_params.msgpack` -> `best_params.f16.msgpack.gz`
F16_MAX = float(np.finfo(np.float16).max)


def half_name(name: str) -> str:
    """The compact copy of a parameter file: `params.msgpack` -> `params.f16.msgpack.gz`."""
    return name.removesuffix(".msgpack") + HALF


def half_params(data: bytes) -> bytes:
    """msgpack parameters (`flax.serialization.to_bytes`) with every float leaf in float16,
    gzipped; a leaf with a finite value float16 cannot hold keeps its own precision."""
    from flax import serialization

    def half(x: Any) -> Any:
        if not (isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.dtype.itemsize > 2):
            return x
        finite = x[np.isfinite(x)]
        return x if finite.size and np.abs(finite).max() > F16_MAX else x.astype(np.float16)

    tree = serialization.msgpack_restore(data)
    return gzip_bytes(serialization.msgpack_serialize(_map_leaves(half, tree)))


def _map_leaves(fn: Callable[[Any], Any], tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _map_leaves(fn, v) for k, v in tree.items()}
    return fn(tree)


def finished(path: Path) -> bool:
    """Whether the run folder holds a finished run (its meta.json says so and its last write,
    record.json, is there; folders from before meta.json existed: once final.json is written)."""
    meta = path / META
    if meta.is_file():
        return bool(json.loads(meta.read_text()).get("finished")) and has_record(path)
    return (path / FINAL).is_file()


def run_dirs(root: str | Path) -> list[Path]:
    """The run folders at or under `root` (`marl train` writes config.yaml first), sorted."""
    return sorted({p.parent for p in Path(root).rglob(CONFIG)})


def pending(path: Path, params: bool = False) -> list[str]:
    """What `compact_run(path, params)` would do: the half-precision copies it would write,
    the files it would gzip, and `train_metrics` while meta.json still holds them."""
    todo = []
    if params:  # first: from the full-precision file, plain or gzipped
        todo += [half_name(n) for n in PARAMS if stored(path / n).is_file()]
        todo = [n for n in todo if not (path / n).is_file()]
    todo += [name for name in BULKY if (path / name).is_file()]
    if (path / META).is_file() and "train_metrics" in json.loads((path / META).read_text()):
        todo.append("train_metrics")
    return todo


def compact_run(path: str | Path, params: bool = False) -> list[str]:
    """Compact the finished run folder `path` in place (see the module docstring); returns what
    it did (`pending`; nothing for a compact or unfinished run)."""
    path = Path(path)
    if not finished(path):
        return []
    todo = pending(path, params)
    for name in todo:
        if name.endswith(HALF):
            source = path / (name.removesuffix(HALF) + ".msgpack")
            atomic_write(path / name, half_params(read_bytes(source)))
        elif name in BULKY:  # the copy first: a kill in between leaves both, plain read first
            atomic_write(path / (name + GZ), gzip_bytes((path / name).read_bytes()))
            (path / name).unlink()
        else:
            meta = json.loads((path / META).read_text())
            text = json.dumps(meta.pop("train_metrics")) + "\n"
            atomic_write(path / TRAIN_METRICS, gzip_bytes(text.encode()))
            write_json(path / META, meta)
    return todo


def train_metrics(path: str | Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's training metrics per segment: meta.json's, or `train_metrics.json.gz` where
    compacting moved them ([] when the run has none)."""
    if "train_metrics" in meta:
        return meta["train_metrics"]
    sidecar = Path(path) / TRAIN_METRICS
    return read_json(sidecar) if sidecar.is_file() else []


def compact(
    roots: Iterable[str | Path], params: bool = False, log: Callable[[str], None] = print
) -> dict[str, int]:
    """Compact every finished run folder under `roots`; logs each one changed and the bytes
    saved. -> counts: `runs`, `compacted`, `unfinished`, `bytes_before`, `bytes_after`."""
    counts = dict.fromkeys(("runs", "compacted", "unfinished", "bytes_before", "bytes_after"), 0)
    for root in roots:
        for d in run_dirs(root):
            counts["runs"] += 1
            if not finished(d):
                counts["unfinished"] += 1
                log(f"{d}: unfinished, left as it is")
                continue
            before = _size(d)
            done = compact_run(d, params)
            if done:
                after = _size(d)
                counts["compacted"] += 1
                counts["bytes_before"] += before
                counts["bytes_after"] += after
                log(f"{d}: {', '.join(done)} ({before:,} -> {after:,} bytes)")
    return counts


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
