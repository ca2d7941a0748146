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
record itself (`marl.run.compact`), and `check_comparable` refuses to mix
records made under different protocol settings, or to pool runs of one algorithm trained with
different settings (a variant takes its own name with `marl train label=NAME`).
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.files import GZ, float_list, read_json, stored

PROTOCOL_VERSION = "1"
RECORD = "record.json"
META = "meta.json"
ABSOLUTE = "absolute_metrics"
# protocol settings that must agree between records compared on one task
COMPARABLE = ("version", "eval_episodes", "absolute_episodes", "metric")
# learner settings that change only how fast an update runs (the same loss), so runs differing
# in them are still one algorithm; every other `algo.*` key must agree between pooled runs
SPEED_ONLY = ("unroll_buckets", "pack_episodes")
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


def _values(path: Path, where: str, value: Any) -> np.ndarray:
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
            metrics.setdefault(m, []).append(_values(path, f"{at}/{m}", entry[m]))
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
            absolute[m] = _values(path, f"{where}/{ABSOLUTE}/{m}", v)
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


def _candidates(path: Path) -> list[Path]:
    if path.is_dir():
        found = {p.parent: p for p in path.rglob(RECORD + GZ)}
        found.update({p.parent: p for p in path.rglob(RECORD)})  # the plain one where both
        if not found:
            raise RecordError(f"{path}: no {RECORD} under this directory")
        return [found[d] for d in sorted(found, key=lambda d: d / RECORD)]
    if not stored(path).exists():
        raise RecordError(f"{path}: no such file or directory")
    return [stored(path)]


def load(
    paths: Iterable[str | Path],
    skipped: list[Path] | None = None,
    dropped: list[str] | None = None,
) -> list[Record]:
    """Every record under `paths` (run directories, directories of runs, or JSON files).

    A `record.json` (or its compacted `record.json.gz`) next to a `meta.json` is a marl
    record; any other JSON in marl-eval's schema, gzipped or not, is read as external (no
    sidecar). Unfinished and diverged runs (sidecar says so; `skip_reason`) and parts of a run
    not merged yet (`marl.run.parts`) are skipped, their directories appended to `skipped` if
    given. A file that cannot be read, or holds NaN, Infinity or a value past `VALUE_BOUND`,
    is refused (RecordError naming file and field), or with `dropped` given, left out and its
    error appended there.
    """
    records: list[Record] = []
    for given in paths:
        for path in _candidates(Path(given)):
            try:
                records.extend(_load_file(path, skipped))
            except RecordError as e:
                if dropped is None:
                    raise
                dropped.append(str(e))
    return records


def _load_file(path: Path, skipped: list[Path] | None) -> list[Record]:
    try:
        data = read_json(path)
    except (OSError, EOFError, ValueError, zlib.error) as e:
        raise RecordError(f"{path}: cannot read JSON: {e}") from None
    meta_path = path.parent / META if path.name in (RECORD, RECORD + GZ) else None
    meta = None
    if meta_path is not None and meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise RecordError(f"{meta_path}: cannot read JSON: {e}") from None
        if not isinstance(meta, dict):
            raise RecordError(f"{meta_path}: expected a JSON object")
        unfinished = not meta.get("finished", False) or meta.get("diverged")
        if unfinished or (meta.get("config") or {}).get("part"):
            if skipped is not None:  # unfinished, diverged, or a part (`marl merge`)
                skipped.append(path.parent)
            return []
        _check_anchors(meta_path, meta)
    return parse(path, data, meta)


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
        meta = json.loads((Path(path) / META).read_text())
    except (OSError, ValueError):
        return "an unreadable run"
    diverged = meta.get("diverged") if isinstance(meta, dict) else None
    if isinstance(diverged, dict):
        seeds = ", ".join(map(str, diverged.get("seeds") or ()))
        step = diverged.get("step")
        at = f" at step {step:,}" if isinstance(step, int) else ""
        what = diverged.get("what", "values")
        return f"a diverged run (non-finite {what}{at} in seed(s) {seeds})"
    if meta.get("finished") and (meta.get("config") or {}).get("part"):
        return "a part of a run (not merged)"
    return "an unfinished run"


# --- comparability ----------------------------------------------------------------------------
def check_comparable(records: Sequence[Record]) -> None:
    """Refuse records of one task made under different protocol settings or budgets, and
    records of one algorithm on one task trained with different settings.

    Compared between the marl records of a task: `COMPARABLE` protocol fields, the env steps
    trained and the evaluation step grid's length, and the environment's keywords; between the
    marl records of one algorithm name on a task, every `algo.*` setting but `SPEED_ONLY`, and
    their root seeds (two records from one root seed hold the same runs); between all records
    of one algorithm on a task, the evaluation steps (their curves are pooled step by step).
    External records are checked on what their data shows (episodes per evaluation and
    absolute metric), and a run an external file holds again is refused (`_check_copies`).
    """
    found = _first_mismatch(records, lambda r: r.env_id, _differences)
    if found:
        _, _, _, _, ref, other = found
        raise _protocol_refusal(ref.env_id, ref, other)
    found = _first_mismatch(
        records, lambda r: None if r.external else (r.env_id, r.algorithm), _algo_differences
    )
    if found:
        (task, algo), key, a, b, ref, other = found
        raise RecordError(
            f"records of {algo} on {task} were trained with different settings: "
            f"algo.{key} is {a!r} in {ref.path} but {b!r} in {other.path}; pooled runs "
            "must share their settings (report them separately, or train a variant "
            f"with label=NAME, e.g. label={algo}-{key}, to rank it as its own algorithm)"
        )
    found = _first_mismatch(records, lambda r: (r.env_id, r.algorithm), _grid_differences)
    if found:
        (task, algo), _, (k, a), (_, b), ref, other = found
        raise RecordError(
            f"records of {algo} on {task} evaluate at different steps: evaluation {k} is at "
            f"step {a} in {ref.path} but {b} in {other.path}; their curves cannot be pooled "
            "(train both with one protocol.eval_interval, or report them separately)"
        )
    seen: dict[tuple[str, str, Any], Record] = {}
    for r in records:  # seed k of a run is split(key(seed), seeds)[k], whatever `seeds` is
        seed = None if r.external else ((r.meta or {}).get("config") or {}).get("seed")
        if seed is None:
            continue
        first = seen.setdefault((r.env_id, r.algorithm, seed), r)
        if first is not r:
            raise RecordError(
                f"{first.path} and {r.path} both hold {r.algorithm} on {r.env_id} trained "
                f"from root seed {seed}: the same runs would count twice; keep one, or train "
                "the other with another seed="
            )
    _check_copies(records)


def _fingerprint(run: Run) -> bytes:
    """A digest of a run's data: its steps and every metric's values, absolute ones too."""
    h = hashlib.sha256(np.ascontiguousarray(run.steps, np.int64).tobytes())
    for kind, values in (("eval", run.metrics), ("absolute", run.absolute)):
        for name in sorted(values):
            h.update(f"{kind}/{name}".encode())
            h.update(np.ascontiguousarray(values[name], np.float64).tobytes())
    return h.digest()


def _check_copies(records: Sequence[Record]) -> None:
    """Refuse a run whose data two files hold where one of them is external (a marl record
    passed again as another framework's file): the seed check cannot see external records."""
    seen: dict[tuple[str, bytes], tuple[Record, Run]] = {}
    for r in records:
        for run in r.runs:
            first, first_run = seen.setdefault((r.env_id, _fingerprint(run)), (r, run))
            if first is not r and (r.external or first.external):
                raise RecordError(
                    f"{first.path} ({first.algorithm} {first_run.name}) and {r.path} "
                    f"({r.algorithm} {run.name}) hold the same run on {r.env_id}: the same "
                    "runs would count twice; keep one"
                )


def _protocol_refusal(task: str, ref: Record, other: Record) -> RecordError:
    """One line naming what really differs between two records of `task`: the env version
    first, then the nominal budget (with each side's seeds), a protocol field, the evaluation
    grid or the env steps of one budget; and what else differs. Env steps and evaluation
    counts follow from the budget and grid, and are named as those."""
    found = {k: (a, b) for k, a, b in _differences(ref, other)}
    budgets = ((ref.meta or {}).get("budget"), (other.meta or {}).get("budget"))
    two_budgets = None not in budgets and not _same(*budgets)
    names: list[str] = []
    for k in found:
        if k in ("env steps", "evaluations"):
            k = "budget" if two_budgets else "evaluation grid" if "evaluations" in found else k
        if k not in names:
            names.append(k)
    key = next((k for k in ("env version", "budget") if k in names), names[0])
    also = [k for k in names if k != key]
    pair = (ref, other)
    if key == "env version":
        a, b = found[key]
        return RecordError(
            f"records of {task} were made on different versions of its env, {a!r} in "
            f"{ref.path} and {b!r} in {other.path}{_also(also, ref, other)}: the env's "
            "behaviour changed between them; re-run the older cells on the current env",
            pair,
            key,
        )
    if key == "budget":
        return RecordError(
            f"records of {task} were trained to different budgets: {_budget(budgets[0])} env "
            f"steps x {len(ref.runs)} seeds in {ref.path} but {_budget(budgets[1])} x "
            f"{len(other.runs)} seeds in {other.path}{_also(also, ref, other, seeds=False)}; "
            "the leaderboard ranks one budget per task (`marl report` puts each in a section "
            "of its own)",
            pair,
            key,
        )
    rounding = (
        "learners round the evaluation interval to their own update sizes: train both with "
        "one protocol.eval_interval, a multiple of both (`marl train --dry-run` shows a "
        "learner's update; `marl sweep` and `marl benchmark run` pin one themselves)"
    )
    if key == "evaluation grid":
        return RecordError(
            f"records of {task} were evaluated on different grids: {_grid(ref)} in {ref.path} "
            f"but {_grid(other)} in {other.path}{_also(also, ref, other)}; {rounding}",
            pair,
            key,
        )
    a, b = found[key]
    hint = rounding if key == "env steps" else "re-run one side, or report them separately"
    return RecordError(
        f"records of {task} were made under different protocols: {key} is {a!r} in "
        f"{ref.path} but {b!r} in {other.path}{_also(also, ref, other)}; compare runs of "
        f"one protocol ({hint})",
        pair,
        key,
    )


def _also(names: Sequence[str], ref: Record, other: Record, seeds: bool = True) -> str:
    """` (they also differ in budget, protocol.eval_episodes; 10 and 3 seeds)`, or empty."""
    bits = [f"they also differ in {', '.join(names)}"] if names else []
    n, m = len(ref.runs), len(other.runs)
    if seeds and n != m:
        bits.append(f"{n} and {m} seeds")
    return f" ({'; '.join(bits)})" if bits else ""


def _budget(value: Any) -> str:
    """A nominal budget as configs write it: 1e6, 2e5, 1.5e6 (exact integers otherwise)."""
    x = float(value)
    short = f"{x:.3g}".replace("e+0", "e").replace("e+", "e")
    return short if float(short) == x else f"{int(x):,}" if x.is_integer() else str(value)


def _grid(r: Record) -> str:
    """`21 evaluations every 49,152 steps to 1,032,192`: a record's evaluation step grid."""
    steps = [int(s) for s in r.runs[0].steps]
    every = f" every {steps[1] - steps[0]:,} steps" if len(steps) > 1 else ""
    return f"{len(steps)} evaluations{every} to {steps[-1]:,}"


Differences = Callable[[Record, Record], list[tuple[str, Any, Any]]]


@dataclass
class Section:
    """Records that compare: for each task, the records made under one protocol and budget.
    `kept_apart`: (task, setting, this section's value, the first section's value) for each
    task whose records differ from the first section's."""

    records: list[Record]
    kept_apart: list[tuple[str, str, Any, Any]]


def split_comparable(records: Sequence[Record]) -> list[Section]:
    """Records split into sections of one protocol and budget per task (what
    `check_comparable` refuses to mix): each task's records fall into classes of equal
    settings, largest first; section j holds class j of every task that has one. One section
    where nothing differs."""
    by_task: dict[str, list[list[Record]]] = {}
    for r in records:
        classes = by_task.setdefault(r.env_id, [])
        for members in classes:
            if not _differences(members[0], r):
                members.append(r)
                break
        else:
            classes.append([r])
    for classes in by_task.values():  # stable: largest class first, then first seen
        classes.sort(key=lambda members: -len(members))
    sections = []
    for j in range(max((len(c) for c in by_task.values()), default=0)):
        chosen = [(task, c[j]) for task, c in by_task.items() if len(c) > j]
        kept = [
            (task, key, b, a)
            for task, members in chosen
            if j > 0
            for key, a, b in _differences(by_task[task][0][0], members[0])
        ]
        sections.append(Section([r for _, members in chosen for r in members], kept))
    return sections


def _first_mismatch(
    records: Sequence[Record], group_of: Callable[[Record], Any], differences: Differences
) -> tuple[Any, str, Any, Any, Record, Record] | None:
    """The first setting on which a record differs from the first of its group (`group_of`;
    None: not compared): (group, key, reference value, value, reference, record), or None."""
    groups: dict[Any, list[Record]] = {}
    for r in records:
        group = group_of(r)
        if group is not None:
            groups.setdefault(group, []).append(r)
    for group, members in groups.items():
        ref = members[0]
        for other in members[1:]:
            for key, a, b in differences(ref, other):
                return group, key, a, b, ref, other
    return None


def _settings(r: Record) -> dict[str, Any]:
    p = r.protocol
    out: dict[str, Any] = {}
    if r.meta is not None:
        out.update({f"protocol.{k}": p.get(k) for k in COMPARABLE})
        out["env steps"] = r.meta.get("env_steps")
        out["env.kwargs"] = (r.meta.get("config") or {}).get("env", {}).get("kwargs", {})
        if r.meta.get("env_version") is not None:  # records from before versions say none
            out["env version"] = (r.meta["env_version"] or {}).get("version")
    else:
        out["protocol.eval_episodes"] = p.get("eval_episodes")
        if "absolute_episodes" in p:
            out["protocol.absolute_episodes"] = p["absolute_episodes"]
    out["evaluations"] = len(r.runs[0].steps)
    out["env steps"] = out.get("env steps") or int(r.runs[0].steps[-1])
    # scores are the absolute metric where a record has one, else its last evaluation: a task
    # must not rank one kind against the other
    out["absolute metric"] = bool(r.runs[0].absolute)
    return out


def _differences(a: Record, b: Record) -> list[tuple[str, Any, Any]]:
    sa, sb = _settings(a), _settings(b)
    if _one_budget(a, b):  # steps and evaluation counts rounded to each learner's update
        for key in ("env steps", "evaluations"):
            del sa[key], sb[key]
    return _changed(sa, sb)


def _one_budget(a: Record, b: Record) -> bool:
    """Two marl records of one nominal budget whose env steps differ by `BUDGET_RTOL` of it at
    most."""
    if a.meta is None or b.meta is None:
        return False
    budget, other = a.meta.get("budget"), b.meta.get("budget")
    steps = (a.meta.get("env_steps"), b.meta.get("env_steps"))
    if budget is None or other is None or None in steps or not _same(budget, other):
        return False
    return abs(steps[0] - steps[1]) <= BUDGET_RTOL * float(budget)


def _grid_differences(a: Record, b: Record) -> list[tuple[str, Any, Any]]:
    """The first evaluation at which two records' step grids differ, as ((k, a's step),
    (k, b's step)); grids of the same length (`_differences` compares lengths first)."""
    for k, (sa, sb) in enumerate(zip(a.runs[0].steps, b.runs[0].steps, strict=False)):
        if int(sa) != int(sb):
            return [("evaluation steps", (k, int(sa)), (k, int(sb)))]
    return []


def _algo_differences(a: Record, b: Record) -> list[tuple[str, Any, Any]]:
    """`algo.*` settings two marl records both state and set differently (`SPEED_ONLY` aside;
    a key one record lacks, added to the learner after it was made, is not compared)."""
    ca = ((a.meta or {}).get("config") or {}).get("algo") or {}
    cb = ((b.meta or {}).get("config") or {}).get("algo") or {}
    return _changed(ca, cb, skip=SPEED_ONLY)


def _changed(
    a: dict[str, Any], b: dict[str, Any], skip: Sequence[str] = ()
) -> list[tuple[str, Any, Any]]:
    """(key, a's value, b's value) for the keys both hold with different values."""
    return [(k, a[k], b[k]) for k in a if k in b and k not in skip and not _same(a[k], b[k])]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b))
        except (TypeError, ValueError):
            return False
    if isinstance(a, (int, str)) and isinstance(b, (int, str)):
        return str(a) == str(b)
    return a == b
