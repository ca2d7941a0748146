"""The run record's types: its file names (`RECORD`, `META`) and the absolute metric's key
(`ABSOLUTE`), the bound past which a value is refused (`VALUE_BOUND`), the error naming file and
field (`RecordError`), and the `Run` and `Record` that hold a record read back. Re-exported by
`marl.results.protocol`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RECORD = "record.json"
META = "meta.json"
ABSOLUTE = "absolute_metrics"
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
