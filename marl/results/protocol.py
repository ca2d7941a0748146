"""The evaluation protocol's run records: marl-eval's JSON schema plus a sidecar.

A run directory holds `record.json` in marl-eval's schema (Gorsane et al. 2022), readable by
its tools and by `marl report`:

```
{environment: {task: {algorithm: {
    "run_0": {"step_0": {"step_count": 0, "episode_return": [per episode], ...}, ...,
              "step_20": {...},
              "absolute_metrics": {"episode_return": [absolute_episodes values], ...}},
    ...,
    "run_9": {...}}}}}
```

with one `run_k` per seed, every evaluation's per-episode values, and `absolute_metrics`: each
seed's best evaluated parameters re-evaluated on fresh episodes. Metric names follow marl-eval
and Mava (`episode_return`, `episode_length`; `episode_return/<group>` per agent group; task
metrics under their own names). The sidecar `meta.json` carries what the schema has no room for:
the protocol and its version, the resolved config, the normalisation anchors, package versions,
device, wall time and steps per second.

`load(paths)` reads records back, from run directories, `record.json` files or any marl-eval
JSON (records written elsewhere are marked external), a compacted `record.json.gz` as the
record itself (`marl.run.compact`). Which records compare (protocol settings, budgets, the
settings of pooled runs) is `marl.results.comparable`'s.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.files import GZ, float_list, read_json, stored

PROTOCOL_VERSION = "1"
RECORD = "record.json"
META = "meta.json"
ABSOLUTE = "absolute_metrics"
# marl records of one task trained to one nominal budget compare on their final scores when
# their env steps differ by at most this fraction of it: each learner rounds the budget and the
# evaluation interval up to its own update size, and where the updates share no multiple near
# the interval (Dec-POMFC's 1,600 steps, MF-AC's 128, PPO's 2,048) no common grid pins them
BUDGET_RTOL = 0.05
# no task's metric comes near it (returns reach thousands); past it a value is refused: it
# would overflow the statistics (a return of 1e308 showed an optimality gap of 0.00)
VALUE_BOUND = 1e9


class RecordError(ValueError):
    """A record that cannot be read, or records that cannot be compared; names file and field.
    A refusal to compare two records also carries them (`pair`) and what differs (`setting`:
    `budget`, `evaluation grid`, `env steps`, `env version`, a protocol field, ...), so that a
    caller can name the command that trains matching records."""

    def __init__(
        self, message: str, pair: tuple[Record, Record] | None = None, setting: str | None = None
    ):
        super().__init__(message)
        self.pair = pair
        self.setting = setting


def record_metric(name: str) -> str:
    """The record name of an evaluation metric: `return` -> `episode_return`, `length` ->
    `episode_length`, `return/<group>` -> `episode_return/<group>`; others unchanged."""
    if name == "return" or name.startswith("return/"):
        return "episode_" + name
    if name == "length":
        return "episode_length"
    return name


def split_env_id(env_id: str) -> tuple[str, str]:
    """`"particle/spread"` -> `("particle", "spread")`; an env given by its import path,
    `"my_pkg.race:Race"` -> `("my_pkg.race", "Race")`."""
    family, _, task = env_id.partition("/" if "/" in env_id else ":")
    return family, task or family


def task_name(env_id: str, kwargs: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The record's task: the scenario, plus the keywords that differ from its defaults, e.g.
    `spread` or `spread[continuous_actions=true,num_agents=5]`, so that runs of different
    environment settings are never pooled as one task."""
    _, task = split_env_id(env_id)
    changed = {k: v for k, v in sorted(kwargs.items()) if k not in defaults or defaults[k] != v}
    if not changed:
        return task
    text = ",".join(f"{k}={_value_text(v)}" for k, v in changed.items())
    return f"{task}[{text}]"


def _value_text(value: Any) -> str:
    """A keyword value as written in task names (and run directory names): strings bare."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def step_entry(step: int, evals: dict[str, np.ndarray], seed: int) -> dict[str, Any]:
    """One `step_k` of one run: `step_count` and each metric's per-episode values of `seed`."""
    out: dict[str, Any] = {"step_count": int(step)}
    for name, values in evals.items():
        out[record_metric(name)] = float_list(np.asarray(values)[seed])
    return out


def run_record(
    env_id: str,
    algo: str,
    steps: Sequence[int],
    evaluations: Sequence[dict[str, np.ndarray]],
    absolute: dict[str, np.ndarray] | None = None,
    task: str | None = None,
) -> dict[str, Any]:
    """A marl-eval record of one run (evaluations: per metric `[seeds, episodes]`); `task`
    defaults to the scenario of `env_id` (see `task_name`)."""
    family, scenario = split_env_id(env_id)
    task = task or scenario
    seeds = int(np.asarray(evaluations[0]["return"]).shape[0]) if evaluations else 0
    runs: dict[str, Any] = {}
    for s in range(seeds):
        run = {
            f"step_{k}": step_entry(step, evals, s)
            for k, (step, evals) in enumerate(zip(steps, evaluations, strict=True))
        }
        if absolute is not None:
            run[ABSOLUTE] = {
                record_metric(m): float_list(np.asarray(v)[s]) for m, v in absolute.items()
            }
        runs[f"run_{s}"] = run
    return {family: {task: {algo: runs}}}


# --- reading ----------------------------------------------------------------------------------
@dataclass
class Run:
    """One seed: step counts `[K]`, per-metric values `[K, episodes]`, absolute per-episode."""

    name: str
    steps: np.ndarray
    metrics: dict[str, np.ndarray]
    absolute: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Record:
    """The runs of one (environment, task, algorithm) from one file, with its sidecar."""

    path: Path
    environment: str
    task: str
    algorithm: str
    runs: list[Run]
    meta: dict[str, Any] | None  # None: written elsewhere (external)

    @property
    def env_id(self) -> str:
        return f"{self.environment}/{self.task}"

    @property
    def external(self) -> bool:
        return self.meta is None

    @property
    def protocol(self) -> dict[str, Any]:
        """The protocol settings of the sidecar (external records: read off the data)."""
        if self.meta is not None:
            return dict(self.meta.get("protocol") or {})
        first = self.runs[0]
        some = next(iter(first.metrics.values()))
        out: dict[str, Any] = {"eval_episodes": int(some.shape[1]) if some.ndim == 2 else None}
        if first.absolute:
            out["absolute_episodes"] = int(len(next(iter(first.absolute.values()))))
        return out

    def final(self, metric: str = "episode_return") -> np.ndarray:
        """[runs] mean over the last evaluation's episodes."""
        return np.array([run.metrics[metric][-1].mean() for run in self.runs])

    def absolute_metric(self, metric: str = "episode_return") -> np.ndarray:
        """[runs] mean over the absolute-metric episodes (the last evaluation when absent)."""
        out = []
        for run in self.runs:
            values = run.absolute.get(metric)
            out.append(np.mean(values) if values is not None else run.metrics[metric][-1].mean())
        return np.array(out)

    def curve(self, metric: str = "episode_return") -> tuple[np.ndarray, np.ndarray]:
        """(steps [K], values [K, runs]) mean over episodes at each evaluation."""
        steps = self.runs[0].steps
        return steps, np.stack([run.metrics[metric].mean(axis=1) for run in self.runs], axis=1)


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
    steps, metrics, absolute = [], {}, {}
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
    and parts of a run not merged yet (`marl.run.parts`) are skipped, their directories
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
