"""Reading records back: `load` finds the records under run directories, directories of runs
or JSON files and skips unfinished runs (`skip_reason` says why); `parse` checks a marl-eval
JSON field by field into `Record`s, refusing what is not numbers, NaN, Infinity or past
`VALUE_BOUND` (`checked_values`). Re-exported by `marl.results.protocol`."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.files import GZ, read_json, stored
from marl.results.record_types import (
    ABSOLUTE,
    META,
    RECORD,
    VALUE_BOUND,
    Record,
    RecordError,
    Run,
)


def _fail(path: Path, where: str, message: str) -> RecordError:
    return RecordError(f"{path}: {where}: {message}")


def checked_values(path: Path, where: str, value: Any) -> np.ndarray:
    """`value` (a number or a flat list of them) as a float64 array, or a RecordError naming
    `path` and `where`: not numbers, empty, NaN, Infinity or past `VALUE_BOUND`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _fail(
            path, where, f"expected a non-empty list of numbers, got {type(value).__name__}"
        )
    try:
        arr = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        raise _fail(path, where, "expected a list of numbers") from None
    if arr.ndim != 1:
        raise _fail(path, where, f"expected a flat list of numbers, got shape {arr.shape}")
    return _sane(path, where, arr)


def _sane(path: Path, where: str, arr: np.ndarray) -> np.ndarray:
    """`arr` if every value is finite and within `VALUE_BOUND`, else a RecordError naming it."""
    bad = ~np.isfinite(arr)
    if bad.any():
        found = ", ".join(sorted({"NaN" if np.isnan(x) else "Infinity" for x in arr[bad]}))
        raise _fail(path, where, f"holds {found} (value {int(np.flatnonzero(bad)[0])})")
    huge = np.abs(arr) > VALUE_BOUND
    if huge.any():
        k = int(np.flatnonzero(huge)[0])
        raise _fail(path, where, f"value {k} is {arr[k]:g}, past the sane bound ±{VALUE_BOUND:g}")
    return arr


def _step_index(path: Path, where: str, key: str) -> int:
    try:
        return int(key.removeprefix("step_"))
    except ValueError:
        raise _fail(path, where, f"step keys must be step_<k> or {ABSOLUTE}, got {key!r}") from None


def _parse_run(path: Path, where: str, name: str, data: Any) -> Run:
    if not isinstance(data, dict):
        raise _fail(path, where, "a run must map step_<k> to metrics")
    steps: list[int] = []
    metrics: dict[str, Any] = {}
    absolute: dict[str, Any] = {}
    keys = sorted((k for k in data if k != ABSOLUTE), key=lambda k: _step_index(path, where, k))
    if not keys:
        raise _fail(path, where, "no step_<k> entries")
    names: set[str] | None = None
    for key in keys:
        entry = data[key]
        at = f"{where}/{key}"
        if not isinstance(entry, dict) or "step_count" not in entry:
            raise _fail(path, at, "missing step_count")
        count = entry["step_count"]
        if (
            isinstance(count, bool)
            or not isinstance(count, (int, float))
            or not 0 <= count <= VALUE_BOUND
        ):
            raise _fail(path, f"{at}/step_count", f"expected a step number, got {count!r}")
        steps.append(int(count))
        here = {m for m in entry if m != "step_count"}
        if names is not None and here != names:
            raise _fail(
                path, at, f"metrics {sorted(here)} differ from the first step's {sorted(names)}"
            )
        names = here
        for m in sorted(here):
            metrics.setdefault(m, []).append(checked_values(path, f"{at}/{m}", entry[m]))
    out = {}
    for m, rows in metrics.items():
        lengths = {len(r) for r in rows}
        if len(lengths) != 1:
            raise _fail(
                path, f"{where}/{m}", f"episode counts differ between steps: {sorted(lengths)}"
            )
        out[m] = np.stack(rows)
    if any(b < a for a, b in zip(steps, steps[1:], strict=False)):
        raise _fail(path, where, f"step_count must not decrease, got {steps}")
    if ABSOLUTE in data:
        if not isinstance(data[ABSOLUTE], dict):
            raise _fail(path, f"{where}/{ABSOLUTE}", "expected a mapping of metric to values")
        for m, v in data[ABSOLUTE].items():
            absolute[m] = checked_values(path, f"{where}/{ABSOLUTE}/{m}", v)
    return Run(name=name, steps=np.asarray(steps), metrics=out, absolute=absolute)


def parse(path: Path, data: Any, meta: dict[str, Any] | None) -> list[Record]:
    """Records of a loaded marl-eval JSON (raises RecordError naming the file and field)."""
    if not isinstance(data, dict) or not data:
        raise _fail(path, "top level", "expected {environment: {task: {algorithm: {run: ...}}}}")
    records = []
    for env, tasks in data.items():
        if not isinstance(tasks, dict):
            raise _fail(path, env, "expected a mapping of task to algorithms")
        for task, algos in tasks.items():
            if not isinstance(algos, dict):
                raise _fail(path, f"{env}/{task}", "expected a mapping of algorithm to runs")
            for algo, runs in algos.items():
                where = f"{env}/{task}/{algo}"
                if "," in algo:
                    raise _fail(path, where, "algorithm names must not contain commas (marl-eval)")
                if not isinstance(runs, dict) or not runs:
                    raise _fail(path, where, "expected a non-empty mapping of run to steps")
                parsed = [_parse_run(path, f"{where}/{r}", r, d) for r, d in runs.items()]
                first = parsed[0]
                for run in parsed[1:]:
                    if set(run.metrics) != set(first.metrics):
                        raise _fail(
                            path, f"{where}/{run.name}", "metrics differ from the first run"
                        )
                records.append(Record(path, env, task, algo, parsed, meta))
    return records


def has_record(folder: str | Path) -> bool:
    """Whether the run folder holds its `record.json` (or the compacted `record.json.gz`): a
    run writes it last, when everything else is written, so a folder without it is incomplete
    however its `meta.json` reads (the run died in its final write)."""
    return stored(Path(folder) / RECORD).is_file()


def _candidates(path: Path, skipped: list[Path] | None = None) -> list[Path]:
    if path.is_dir():
        found = {p.parent: p for p in path.rglob(RECORD + GZ)}
        found.update({p.parent: p for p in path.rglob(RECORD)})  # the plain one where both
        incomplete = sorted({p.parent for p in path.rglob(META)} - set(found))
        if skipped is not None:  # run folders without their record: unfinished or incomplete
            skipped.extend(incomplete)
        if not found and not (incomplete and skipped is not None):
            raise RecordError(f"{path}: no {RECORD} under this directory")
        return [found[d] for d in sorted(found, key=lambda d: d / RECORD)]
    if not stored(path).exists():
        raise RecordError(f"{path}: no such file or directory")
    return [stored(path)]


def load(
    paths: Iterable[str | Path],
    skipped: list[Path] | None = None,
    dropped: list[str] | None = None,
    parts: bool = False,
) -> list[Record]:
    """Every record under `paths` (run directories, directories of runs, or JSON files).

    A `record.json` (or its compacted `record.json.gz`) next to a `meta.json` is a marl
    record; any other JSON in marl-eval's schema, gzipped or not, is read as external (no
    sidecar). Unfinished and diverged runs (sidecar says so; `skip_reason`), run folders
    without their record (`has_record`: unfinished, or incomplete where the final write failed)
    and parts of a run not merged yet (`marl.run.campaigns.parts`) are skipped, their directories
    appended to `skipped` if given. A file that cannot be read, or holds NaN, Infinity or a
    value past `VALUE_BOUND`, is refused (RecordError naming file and field), or with `dropped`
    given, left out and its error appended there. With `parts`, finished parts are read as
    the runs they hold (`marl benchmark verify` compares a part with the committed seeds).
    """
    records: list[Record] = []
    for given in paths:
        for path in _candidates(Path(given), skipped):
            try:
                records.extend(_load_file(path, skipped, parts))
            except RecordError as e:
                if dropped is None:
                    raise
                dropped.append(str(e))
    return records


def _load_file(path: Path, skipped: list[Path] | None, parts: bool = False) -> list[Record]:
    data = _read_record(path)
    meta_path = path.parent / META if path.name in (RECORD, RECORD + GZ) else None
    meta = None
    if meta_path is not None and meta_path.exists():
        meta = read_meta(path.parent)
        unfinished = not meta.get("finished", False) or meta.get("diverged")
        if unfinished or ((meta.get("config") or {}).get("part") and not parts):
            if skipped is not None:  # unfinished, diverged, or a part (`marl merge`)
                skipped.append(path.parent)
            return []
        _check_anchors(meta_path, meta)
        _check_sizes(meta_path, meta)
    return parse(path, data, meta)


def _read_record(path: Path) -> Any:
    """The JSON of a record file, or a RecordError naming it (not UTF-8, not JSON, nested past
    what a parser can follow)."""
    try:
        return read_json(path)
    except (OSError, EOFError, ValueError, zlib.error) as e:
        raise RecordError(f"{path}: cannot read JSON: {e}") from None
    except RecursionError:
        raise RecordError(f"{path}: cannot read JSON: nested too deeply") from None


def read_meta(folder: str | Path) -> dict[str, Any]:
    """A run folder's sidecar `meta.json` (RecordError naming it where it is not a JSON
    object)."""
    path = Path(folder) / META
    meta = _read_record(path)
    if not isinstance(meta, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return meta


SIZES = {"absolute_episodes": 100_000, "eval_episodes": 100_000}  # protocol counts' bounds


def _check_sizes(path: Path, meta: dict[str, Any]) -> None:
    """A sidecar's protocol counts, which size work a reader does (the episodes of an anchor
    computed for a task whose records carry none), are whole numbers within bounds."""
    protocol = meta.get("protocol") or {}
    for key, most in SIZES.items():
        value = protocol.get(key) if isinstance(protocol, dict) else None
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and 1 <= value <= most and float(value).is_integer()):
            bound = f"expected a whole number 1..{most:,}, got {value!r}"
            raise _fail(path, f"protocol/{key}", bound)


def _check_anchors(path: Path, meta: dict[str, Any]) -> None:
    """A sidecar's anchors, where given, are sane numbers (they normalise every score)."""
    anchors = meta.get("anchors") or {}
    for key in ("random", "reference"):
        value = anchors.get(key) if isinstance(anchors, dict) else None
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _fail(path, f"anchors/{key}", f"expected a number, got {value!r}")
            _sane(path, f"anchors/{key}", np.asarray([value], np.float64))


def skip_reason(path: str | Path) -> str:
    """Why `load` skipped the run directory `path`: `a diverged run (non-finite parameters at
    step 2,048 in seed(s) 0)`, `a part of a run` or `an unfinished run`."""
    try:
        meta = read_meta(path)
    except RecordError:
        return "an unreadable run"
    diverged = meta.get("diverged")
    if isinstance(diverged, dict):
        seeds = ", ".join(map(str, diverged.get("seeds") or ()))
        step = diverged.get("step")
        at = f" at step {step:,}" if isinstance(step, int) else ""
        what = diverged.get("what", "values")
        return f"a diverged run (non-finite {what}{at} in seed(s) {seeds})"
    if meta.get("finished") and not has_record(path):
        return f"an incomplete run (its final write did not finish: no {RECORD})"
    if meta.get("finished") and (meta.get("config") or {}).get("part"):
        return "a part of a run (not merged)"
    return "an unfinished run"
