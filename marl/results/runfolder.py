"""A run folder's summary files, read back: what `marl train` writes beside the record.

```
final.json      each seed's last evaluation and absolute metric (means over episodes), the
                budget and env steps trained, timings
config.yaml     the resolved config: the run's `label=` (a learner at other settings is a
                learner of its own) and root `seed=` (seed k of two runs from one root seed
                starts alike)
meta.json       the sidecar: the task, whether the run finished or diverged
metrics.jsonl   one line per evaluation: its env step and each metric's mean per seed
```

Reports, the leaderboard and the site read records (`marl.results.protocol.load`); studies that
set runs side by side on their final scores, whatever their evaluation grids, read them here
(`read_run`), and the curves of runs still training from `evaluations`. Compacted copies
(`metrics.jsonl.gz`, `marl.run.saved.compact`) read as the files they replace; NaN, Infinity and
values past `protocol.VALUE_BOUND` are refused naming the file and field.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from marl.results.files import read_json, read_text, read_yaml, stored
from marl.results.protocol import (
    META,
    RecordError,
    checked_values,
    has_record,
    skip_reason,
    split_env_id,
)

# a run folder's files, named once (`marl.run.folder.writer` writes them,
# `marl.run.campaigns.parts` joins and `marl.run.saved.compact` shrinks them)
FINAL = "final.json"
CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
PARAMS = "params.msgpack"  # every seed's final acting parameters
BEST_PARAMS = "best_params.msgpack"  # each seed's best evaluated parameters


@dataclass(frozen=True)
class FinishedRun:
    """A finished run folder's `final.json`, `config.yaml` and sidecar (None where the run
    predates sidecars)."""

    path: Path
    final: dict[str, Any]
    config: dict[str, Any]
    meta: dict[str, Any] | None
    command: str | None = None  # the `marl train` command config.yaml's first line names

    @property
    def task(self) -> str:
        """`family/task` as run folders name it, e.g. `swarm/vicsek[num_agents=50]`: the
        sidecar's, else the folder's place in `<out>/<family>/<task>/<algo>/<name>`."""
        if self.meta and self.meta.get("env") and self.meta.get("task"):
            return f"{split_env_id(self.meta['env'])[0]}/{self.meta['task']}"
        return f"{self.path.parent.parent.parent.name}/{self.path.parent.parent.name}"

    @property
    def algo(self) -> str:
        """The learner's registry name."""
        return str(self.final.get("algo") or self.path.parent.name)

    @property
    def learner(self) -> str:
        """The name the run is compared under: its `label=` where it has one, else `algo`."""
        return str(self.config.get("label") or self.algo)

    @property
    def budget(self) -> float | None:
        """The nominal budget (None in a `final.json` older than the field)."""
        return self.final.get("budget")

    @property
    def env_steps(self) -> int:
        """The env steps each seed trained (the budget rounded to the learner's updates)."""
        return int(self.final["env_steps"])

    @property
    def root_seed(self) -> int:
        """The root seed (`seed=`) whose split gives the run's seeds."""
        return int(self.config.get("seed") or 0)

    def absolute(self, metric: str = "return") -> np.ndarray:
        """[seeds] the absolute metric: each seed's best evaluated parameters re-evaluated."""
        return self._per_seed("absolute", metric)

    def last(self, metric: str = "return") -> np.ndarray:
        """[seeds] the last evaluation's mean per seed."""
        return self._per_seed("final", metric)

    def _per_seed(self, part: str, metric: str) -> np.ndarray:
        values = self.final.get(part) or {}
        if metric not in values:
            has = ", ".join(values) or "none"
            raise RecordError(f"{self.path / FINAL}: no {part} {metric!r}; has {has}")
        return checked_values(self.path / FINAL, f"{part}/{metric}", values[metric])


def read_run(path: str | Path) -> FinishedRun:
    """The finished run folder `path` (RecordError naming the folder where it is not one: no
    `final.json`, a sidecar that says it diverged or is unfinished, or no `record.json`, the
    run's last write, where a sidecar says it finished)."""
    path = Path(path)
    if not (path / FINAL).is_file():
        raise RecordError(f"{path}: no {FINAL} (not a finished run folder)")
    meta = _json(path / META) if (path / META).is_file() else None
    if meta is not None and (meta.get("diverged") or not meta.get("finished")):
        raise RecordError(f"{path}: {skip_reason(path)}")
    if meta is not None and not has_record(path):
        raise RecordError(f"{path}: {skip_reason(path)}")
    config_path = path / CONFIG
    text = config_path.read_text() if config_path.is_file() else ""
    head = text.partition("\n")[0]  # "# resolved config of this run; command: marl train ..."
    command = (head.partition("command: ")[2] or None) if head.startswith("#") else None
    try:
        config = (read_yaml(config_path) if text else None) or {}
    except ValueError as e:
        raise RecordError(str(e)) from None
    return FinishedRun(path, _json(path / FINAL), config, meta, command)


def evaluations(path: str | Path) -> list[tuple[int, dict[str, np.ndarray]]]:
    """(env step, metric -> [seeds] mean of the evaluation's episodes) of every evaluation
    `metrics.jsonl` holds, in order; the run may still be training (a last line cut off by a
    kill is left out, as the run itself drops it on resume)."""
    path = Path(path)
    log = stored(path / METRICS)
    if not log.is_file():
        raise RecordError(f"{path}: no {METRICS} (not a run folder)")
    lines = read_text(log).splitlines()
    out = []
    for k, line in enumerate(lines):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if k == len(lines) - 1:
                break
            raise RecordError(f"{log}: line {k + 1} is not JSON") from None
        evals = row.get("eval")
        if not evals:  # a line of training metrics only
            continue
        step = int(row["step"])
        out.append(
            (step, {m: checked_values(log, f"step {step}/eval/{m}", v) for m, v in evals.items()})
        )
    return out


def _json(path: Path) -> dict[str, Any]:
    try:
        data = read_json(path)
    except (OSError, EOFError, ValueError, zlib.error) as e:
        raise RecordError(f"{path}: cannot read JSON: {e}") from None
    except RecursionError:
        raise RecordError(f"{path}: cannot read JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data
