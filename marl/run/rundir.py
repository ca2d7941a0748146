"""Run directories: `<out>/<family>/<task>/<algo>/<name or timestamp>/`, where the task is the
scenario plus its non-default env keywords (`particle/spread[continuous_actions=true]/...`).

```
config.yaml          the resolved config (`RunConfig.config`), written before training starts
record.json          the run record in marl-eval's schema (`marl.results.protocol`): every
                     evaluation's per-episode values per seed and the absolute metric; the run's
                     last write, so a folder holds it only when the run is complete
record.partial.json  while unfinished: the record so far (rewritten after each evaluation)
meta.json            its sidecar: protocol, resolved config, anchors, versions, device, wall
                     time, steps per second, training metrics per segment; `finished`, or
                     `diverged` (step, seeds) where parameters or losses turned non-finite
final.json           summary: last evaluation and absolute metric per seed, mean and std over
                     seeds, the step of each seed's best evaluation, timings
params.msgpack       final acting parameters of every seed, `flax.serialization.to_bytes`
                     (leaves [seeds, ...]; read back with `flax.serialization.msgpack_restore`)
best_params.msgpack  each seed's best evaluated parameters (those the absolute metric scores)
metrics.jsonl        one line per evaluation: step, wall seconds, the evaluation's and the
                     segment's training metrics (per seed, means over episodes / updates)
checkpoint/          while unfinished: the newest segment (`marl.learning.checkpoint`): resume=true
.lock                while a process writes it: its OS lock, naming the holder (`marl.run.lock`)
```

Claiming and resuming live here, all of it: `claim` takes a new directory (`name=`'s, which
must be free, or a timestamp with a -2, -3 suffix), or with `resume=true` reopens the unfinished
run of the same config (`unfinished_run`), or finds `name=`'s run finished already; `relaunch`
is the same question a relaunched sweep asks of each of its runs. Two runs are the same config
when `PLANNED` keys agree (`config_differences`). Where a run's directories go, its task and
`<out>/<family>/<task>/<algo>`, is derived once by `marl.run.config.resolve` (`RunConfig.task`,
`RunConfig.parent`).

One writer per folder: `claim` takes its OS lock (`marl.run.lock`; a second writer is refused
in one line naming the holder) and removes the temporary files a killed writer left. Files are
written atomically (a temporary file, then `os.replace`). `record.json` is written last, so its
presence marks the run complete (`protocol.has_record`): a run that died in its final write
never looks complete, to marl's readers or to a tool reading only `record.json`. A finished
folder may be compacted (`marl.run.compact`): `record.json.gz`, ..., read as the plain files.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from marl.learning.training import RunResult
from marl.results.files import atomic_write, write_json
from marl.results.protocol import (
    META,
    RECORD,
    RecordError,
    has_record,
    read_meta,
    record_metric,
    run_record,
)
from marl.run.errors import UsageError
from marl.run.lock import FolderBusy, FolderLock, busy, locked_by_another, remove_stale_temporaries
from marl.run.provenance import provenance
from marl.run.summary import final_record
from marl.run.summary import floats as _floats

if TYPE_CHECKING:
    from marl.learning.checkpoint import SegmentCheckpoints
    from marl.run.config import RunConfig

STAMP = "%Y%m%d-%H%M%S"
METRICS = "metrics.jsonl"  # one JSON line per evaluation
CHECKPOINT = "checkpoint"  # the newest segment's checkpoint while the run is unfinished
PARTIAL = "record.partial.json"  # the record so far, while the run is unfinished


def run_task(run: RunConfig) -> str:
    """The run's task name: the scenario plus its non-default env keywords (`RunConfig.task`,
    which `resolve` derives once)."""
    return run.task


def _say(line: str) -> None:
    print(line, flush=True)


# --- claiming and resuming ----------------------------------------------------------------------
PLANNED = (
    "env",
    "algo",
    "label",
    "protocol",
    "seeds",
    "budget",
    "seed",
)  # what makes two runs the same


def config_differences(before: Any, planned: Any) -> list[str]:
    """The top-level keys of `PLANNED` whose values `planned` changes from `before` (keys
    added to the config since `before` was written are ignored: their defaults keep the old
    behaviour)."""

    def differs(a: Any, b: Any) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):
            return any(k in b and differs(v, b[k]) for k, v in a.items())
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return list(a) != list(b)
        return a != b

    return [k for k in PLANNED if differs((before or {}).get(k), planned.get(k))]


def _read_meta(folder: Path) -> dict[str, Any] | None:
    """The folder's sidecar (None: none; unreadable: UsageError); finished without its record
    (the final write failed) reads as unfinished: `resume=true` finishes it from its checkpoint."""
    if not (folder / META).exists():
        return None
    try:
        meta = read_meta(folder)
    except RecordError as e:
        raise UsageError(f"{e}; move the folder aside or remove it") from None
    if meta.get("finished") and not has_record(folder):
        return {**meta, "finished": False}
    return meta


def finished_run(run: RunConfig) -> Path | None:
    """`name=`'s directory when it holds a finished run of this config (None when it holds
    none); a finished run of another config there is refused (UsageError)."""
    meta = None if run.folder is None else _read_meta(run.folder)
    if meta is None or not meta.get("finished"):
        return None
    diff = config_differences(meta.get("config") or {}, run.config)
    if diff:
        raise UsageError(
            f"{run.folder} holds a finished run with a different {', '.join(diff)}; "
            "choose another name= or remove it"
        )
    return run.folder


def unfinished_run(run: RunConfig) -> Path | None:
    """The run directory `resume=true` continues: `name=`'s if given (an error when it is
    finished or holds another config), else the newest unfinished one with this config;
    None when there is none (the run starts afresh)."""
    planned = run.config
    if run.folder is not None:
        meta = _read_meta(run.folder)
        if meta is None:
            return None
        if meta.get("finished"):
            raise FileExistsError(f"{run.folder} is finished; nothing to resume")
        diff = config_differences(meta.get("config"), planned)
        if diff:
            raise ValueError(f"{run.folder} holds a run with a different {', '.join(diff)}")
        return run.folder
    found = []
    for meta_path in run.parent.glob(f"*/{META}"):
        try:
            meta = _read_meta(meta_path.parent) or {}
        except UsageError:  # an unreadable folder is no run to continue
            continue
        if not meta.get("finished") and not config_differences(meta.get("config"), planned):
            found.append((meta.get("created", ""), meta_path.parent))
    return max(found)[1] if found else None


def claim(run: RunConfig, now: datetime | None = None, resumable: bool = True) -> RunDir | None:
    """The run directory `run` writes, ready for training (`RunDir.start`: its first files
    written, its checkpoints and logger open). With `resume=true`: the unfinished run of its
    config it continues (`unfinished_run`), or None when `name=`'s run finished with this
    config (nothing to train); else a new directory, `name=`'s (which must be free) or a
    timestamp. A refusal is one `UsageError` line. `resumable=False`: a run that keeps no
    checkpoints and cannot resume (`vmap=`)."""
    if run.resume and finished_run(run) is not None:
        return None
    try:
        previous = unfinished_run(run) if run.resume else None
        run_dir = RunDir(run, now=now, path=previous)  # locked: one writer at a time
    except FileExistsError as e:
        hint = ", choose another name=" + (" or pass resume=true" if resumable else "")
        raise UsageError(
            f"run directory exists{'' if run.resume else hint}: {e.filename or e}"
        ) from None
    except ValueError as e:
        raise UsageError(f"cannot resume: {e}; choose another name=") from None
    except OSError as e:
        raise UsageError(f"cannot create the run directory under {run.out}: {e}") from None
    if previous is not None and finished_run(run) is not None:  # its writer finished it meanwhile
        run_dir.release()
        return None
    try:
        run_dir.start(checkpoints=resumable)
    except BaseException:
        run_dir.release()
        raise
    return run_dir


def _lock(folder: Path) -> FolderLock:
    """The folder's lock taken (a second writer: one line), a killed writer's temporaries gone."""
    lock = FolderLock(folder)
    try:
        lock.acquire()
    except FolderBusy:
        raise UsageError(busy(folder)) from None
    except OSError as e:
        raise UsageError(f"cannot lock the run directory {folder}: {e}") from None
    remove_stale_temporaries(folder)
    return lock


def relaunch(run: RunConfig, log: Callable[[str], None] = _say) -> RunConfig | None:
    """A named run of a relaunched sweep, as its folder finds it: None when it finished there
    with this config (nothing to train; another config is refused), the run with `resume=true`
    when it was killed there, and the run as it is when the folder is free or held an unfinished
    run of another config, which is moved aside to `<name>.unfinished-<time>`."""
    if finished_run(run) is not None:
        return None
    meta = None if run.folder is None else _read_meta(run.folder)
    if meta is None:
        return run
    if locked_by_another(run.folder):  # another job trains into it now: never move it
        raise UsageError(busy(run.folder))
    if not config_differences(meta.get("config"), run.config):
        return dataclasses.replace(run, resume=True)  # continues after its last segment
    aside = run.folder.with_name(f"{run.folder.name}.unfinished-{datetime.now():%Y%m%d-%H%M%S}")
    run.folder.rename(aside)
    log(f"moved the unfinished run (another config) aside to {aside}")
    return run


def _claim(parent: Path, name: str | None, now: datetime) -> Path:
    """Create the run directory; a given name must be new, a timestamp gets a -2, -3 suffix."""
    parent.mkdir(parents=True, exist_ok=True)
    if name is not None:
        path = parent / name
        path.mkdir()  # FileExistsError: never mix two runs in one directory
        return path
    stamp = now.strftime(STAMP)
    for k in range(1, 1000):
        path = parent / (stamp if k == 1 else f"{stamp}-{k}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free run directory under {parent} for {stamp}")


# --- the directory being filled -----------------------------------------------------------------
class RunDir:
    """A run directory being filled: config first, the curve as it grows, final files last."""

    def __init__(self, run: RunConfig, now: datetime | None = None, path: Path | None = None):
        """Claim a new directory for `run` (`mkdir`: `name=`'s, or a timestamp), or reopen the
        unfinished run at `path` (its config and creation time kept; its evaluations are
        replayed through `on_evaluation`); either way its lock is taken (`release` lets go).
        Nothing is written before `start`."""
        self.run = run
        self.resumed = path is not None
        self.checkpoints: SegmentCheckpoints | None = None  # `start`
        self.loggers: list[Any] = []  # marl.run.loggers: each gets log(step, scalars)
        self.steps: list[int] = []
        self.evaluations: list[dict[str, np.ndarray]] = []
        self._train_metrics: dict[str, np.ndarray] = {}
        self._logged: set[int] | None = None  # steps already in metrics.jsonl (read once)
        self._rewrite: list[dict[str, Any]] | None = None  # metrics.jsonl less a cut line
        self._started = datetime.now()
        self._earlier_code: list[dict[str, Any]] = []  # a resumed run's code before this process
        self.created = now or datetime.now()  # a reopened run's is read back
        self.path = _claim(run.parent, run.name, self.created) if path is None else Path(path)
        self.lock = _lock(self.path)
        try:
            if path is not None:
                self._reopen(self.path)
        except BaseException:
            self.release()
            raise

    def _reopen(self, path: Path) -> None:
        """Take up the unfinished run at `path`: its creation time, the code it ran on, the
        steps it logged and its clock (`time` in metrics.jsonl goes on from the last line
        logged before the interruption)."""
        before = read_meta(path)
        created = before.get("created")
        self._earlier_code = [c for c in before.get("codes", [before.get("code")]) if c]
        self.created = datetime.fromisoformat(created) if created else datetime.now()
        lines, whole = self._logged_lines()  # read once: the steps logged and the clock so far
        self._logged = {int(line["step"]) for line in lines}
        self._started -= timedelta(seconds=float(lines[-1].get("time", 0.0)) if lines else 0)
        self._rewrite = None if whole else lines

    def start(self, checkpoints: bool = True) -> None:
        """Write what a run starts with: a new directory its config.yaml and an unfinished
        meta.json (so that a run stopped before its first evaluation can resume); a reopened
        one drops the metrics.jsonl line a hard kill cut off (the resumed run logs that step
        again). Then open the segment checkpoints (`checkpoints`, `checkpoint=true` and one
        host: a multi-host run cannot resume, and orbax's saves synchronise every host, of
        which only this one would save) and the external logger (`logger=`); `finish` clears
        the one and `close` closes the other."""
        import jax

        from marl.learning.checkpoint import SegmentCheckpoints
        from marl.run.loggers import make_logger

        if not self.resumed:
            config, meta = self._config_text(), self.meta()
            atomic_write(self.path / "config.yaml", config)
            write_json(self.path / META, meta)
        elif self._rewrite is not None:
            text = "".join(json.dumps(line) + "\n" for line in self._rewrite)
            atomic_write(self.path / METRICS, text)
        if checkpoints and self.run.checkpoint and jax.process_count() == 1:
            self.checkpoints = SegmentCheckpoints(self.checkpoint_dir)
        logger = make_logger(self.run.logger, self.path, self.run.config)
        self.loggers = [logger] if logger is not None else []

    @cached_property
    def made_with(self) -> dict[str, Any]:
        """What this process makes the run with (`provenance`: code, versions, device, the
        env family's version), as meta.json and final.json name it; read once."""
        return provenance(self.run.env_id)

    @property
    def checkpoint_dir(self) -> Path:
        """Where `marl.learning.checkpoint.SegmentCheckpoints` keeps the run's newest segment."""
        return self.path / CHECKPOINT

    def close(self) -> None:
        """Close the external loggers (the run finished, diverged or was interrupted)."""
        for logger in self.loggers:
            logger.close()
        self.loggers = []

    def release(self) -> None:
        """Let go of the folder's lock (the run finished, diverged, or stopped)."""
        self.lock.release()

    def _config_text(self) -> str:
        """config.yaml: the resolved config under a line naming the command."""
        from omegaconf import OmegaConf

        head = "# resolved config of this run"
        if self.run.command:
            words = (a if a.isprintable() else repr(a) for a in self.run.command)
            head += "; command: marl train " + " ".join(words)  # one line, whatever they hold
        return f"{head}\n{OmegaConf.to_yaml(OmegaConf.create(self.run.config))}"

    def meta(
        self,
        result: RunResult | None = None,
        anchors: dict | None = None,
        lower_is_better: Sequence[str] = (),
        headline_metric: str = "return",
    ) -> dict[str, Any]:
        """The sidecar of `record.json` (`finished` once `result` is given); a finished one
        names the env's lower-is-better metrics (`EnvSpec.lower_is_better`) and its metric in
        the task's natural unit (`EnvSpec.headline_metric`), record names, so reports rank and
        show them without building the env."""
        run, cfg = self.run, self.run.config
        out: dict[str, Any] = {
            "env": run.env_id,
            "task": run.task,
            "algo": run.algo,
            "seeds": run.settings.seeds,
            "budget": run.settings.budget,
            "env_steps": run.env_steps,
            "protocol": {"name": "default", **cfg["protocol"]},
            "config": cfg,
            "created": self.created.isoformat(timespec="seconds"),
            "finished": result is not None,
            **self.made_with,
        }
        codes = [c for c in self._earlier_code if c != out["code"]]
        if codes:  # resumed on other code than it started on: name every one
            out["codes"] = [*codes, out["code"]]
        if result is not None:
            train_metrics = [
                {"step": int(step), **{k: _floats(v) for k, v in m.items()}}
                for step, m in zip(result.steps[1:], result.train_metrics, strict=True)
            ]
            out.update(
                wall_time=float(result.wall_time),
                compile_time=float(result.compile_time),
                steps_per_second=float(result.steps_per_second),
                best_step=[int(s) for s in result.best_step],
                lower_is_better=sorted(record_metric(m) for m in lower_is_better),
                headline_metric=record_metric(headline_metric),
                train_metrics=train_metrics,
            )
        if anchors is not None:
            out["anchors"] = {
                "metric": record_metric(run.settings.metric),
                "episodes": anchors.get("episodes"),
                "random": anchors.get("random"),
                "reference": anchors.get("reference"),
                "reference_policy": "scripted" if anchors.get("reference") is not None else None,
            }
        return out

    def on_train_metrics(self, step: int, metrics: dict[str, np.ndarray]) -> None:
        """Keep a segment's training metrics for the next evaluation's log line."""
        self._train_metrics = {k: np.asarray(v) for k, v in metrics.items()}

    def on_evaluation(self, step: int, evals: dict[str, np.ndarray]) -> None:
        """Add one evaluation to `record.json` and `metrics.jsonl` (pass as `runner.run`'s
        hook). A resumed run replays its saved evaluations: lines already logged stay as they
        are (the run is deterministic, so a line logged after the last checkpoint is the line
        the resumed run would write)."""
        self.steps.append(int(step))
        self.evaluations.append(evals)
        record = run_record(
            self.run.env_id, self.run.record_algo, self.steps, self.evaluations, task=self.run.task
        )
        write_json(self.path / PARTIAL, record, indent=None)
        if int(step) not in self._logged_steps():
            self._log(int(step), evals)
        self._train_metrics = {}

    def _logged_lines(self) -> tuple[list[dict[str, Any]], bool]:
        """(the whole lines of metrics.jsonl, whether every line is whole: a line cut off by
        a hard kill is not, and `start` drops it from the file)."""
        path = self.path / METRICS
        if not path.exists():
            return [], True
        lines, whole = [], True
        for text in path.read_text().splitlines():
            if not text.strip():
                continue
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                whole = False
        return lines, whole

    def _logged_steps(self) -> set[int]:
        if self._logged is None:
            self._logged = {int(line["step"]) for line in self._logged_lines()[0]}
        return self._logged

    def _log(self, step: int, evals: dict[str, np.ndarray]) -> None:
        line = {
            "step": step,
            "time": round((datetime.now() - self._started).total_seconds(), 3),
            "eval": {k: _floats(np.asarray(v).mean(axis=-1)) for k, v in evals.items()},
            "train": {k: _floats(v) for k, v in self._train_metrics.items()},
        }
        with open(self.path / METRICS, "a") as f:  # appended whole lines: a reader may tail it
            f.write(json.dumps(line) + "\n")
        self._logged.add(step)
        scalars = {f"eval/{k}": float(np.mean(v)) for k, v in line["eval"].items()}
        for k, v in self._train_metrics.items():  # seeds with no finished episode left out
            if not np.all(np.isnan(v)):  # episode statistics are named train/ already
                scalars[k if k.startswith("train/") else f"train/{k}"] = float(np.nanmean(v))
        for logger in self.loggers:
            logger.log(step, scalars)

    def diverge(self, step: int, seeds: Sequence[int], what: str) -> None:
        """Mark the run diverged in meta.json (`finished` stays false): readers skip it and
        name it as diverged, never as a score."""
        out = self.meta()
        out["diverged"] = {"step": int(step), "seeds": [int(s) for s in seeds], "what": what}
        write_json(self.path / META, out)
        self.close()
        self.release()

    def finish(self, result: RunResult, anchors: dict | None = None) -> dict[str, Any]:
        """Close the loggers (training is over), write the parameters, `final.json`, the
        sidecar (with the anchors, `record_anchors`) and last the full record with the absolute
        metric (its presence marks the run complete), then drop the checkpoint and the partial
        record, and let go of the folder; returns the final summary."""
        from flax import serialization

        self.close()
        run, spec = self.run, self.run.env.spec  # what the sidecar says of its metrics
        final = final_record(run, result, self.made_with)
        final["created"] = self.created.isoformat(timespec="seconds")
        meta = self.meta(result, anchors, spec.lower_is_better, spec.headline_metric)
        record = run_record(
            run.env_id, run.record_algo, result.steps, result.evaluations, result.absolute, run.task
        )
        if result.params is not None:
            atomic_write(self.path / "params.msgpack", serialization.to_bytes(result.params))
        if result.best_params is not None:
            atomic_write(
                self.path / "best_params.msgpack", serialization.to_bytes(result.best_params)
            )
        write_json(self.path / "final.json", final)
        write_json(self.path / META, meta)
        write_json(self.path / RECORD, record, indent=None)  # last: the run is complete
        if self.checkpoints is not None:  # a finished run keeps its record, not its segments
            self.checkpoints.clear()
        (self.path / PARTIAL).unlink(missing_ok=True)
        self.release()
        return final
