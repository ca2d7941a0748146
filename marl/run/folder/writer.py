"""A run folder, `<out>/<family>/<task>/<algo>/<name or timestamp>/` (the task: the scenario
plus its non-default env keywords, `particle/spread[continuous_actions=true]/...`), being filled
by its one writer (`RunDir`): config first, the curve as it grows, the final files last.

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
.lock                while a process writes it: its OS lock, naming the holder (`folder.lock`)
transfer.json        where the protocol lists transfer targets: the trained policy's episodes on
                     each (`marl.run.train.transfer`)
wandb_id             with `logger=wandb`: the W&B run it logs into (a resumed run continues it)
```

A folder is claimed, written and closed in one pass: `claiming.claim` takes it (its OS lock
first, then what it holds, read once) and hands it to a `RunDir`, which writes what a run
starts with (`start`), each evaluation as it comes (`on_evaluation`), and at the end either the
final files (`finish`) or the divergence mark (`diverge`); `close` lets go of it once, however
the run ended (the external loggers closed, the lock released). marl's files of the folder are
all written here (the loggers' own folders aside): whole files atomically (a temporary file,
then `os.replace`), metrics.jsonl in appended whole lines. `record.json` is written last,
so its presence marks the run complete (`protocol.has_record`): a run that died in its final
write never looks complete, to marl's readers or to a tool reading only `record.json`. A
finished folder may be compacted (`marl.run.saved.compact`): `record.json.gz`, ..., read as the
plain files. Where a run's directories go, its task and `<out>/<family>/<task>/<algo>`, is
derived once by `marl.run.train.resolve.resolve` (`RunConfig.task`, `RunConfig.parent`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization
from omegaconf import OmegaConf

from marl.learning.checkpoint import SegmentCheckpoints
from marl.learning.training import RunResult
from marl.results.files import atomic_write, write_json
from marl.results.protocol import META, RECORD, record_metric, run_record
from marl.results.runfolder import BEST_PARAMS, CONFIG, FINAL, METRICS, PARAMS
from marl.run.folder.lock import FolderLock
from marl.run.train.config import RunConfig
from marl.run.train.loggers import make_logger
from marl.run.train.provenance import provenance
from marl.run.train.summary import final_record, floats

STAMP = "%Y%m%d-%H%M%S"
CHECKPOINT = "checkpoint"  # the newest segment's checkpoint while the run is unfinished
PARTIAL = "record.partial.json"  # the record so far, while the run is unfinished
TRANSFER = "transfer.json"  # the transfer targets' episodes (`marl.run.train.transfer`)
WANDB_ID = "wandb_id"  # the W&B run a resumed marl run continues (`marl.run.train.loggers`)


# --- the directory being filled -----------------------------------------------------------------
class RunDir:
    """A run directory being filled: config first, the curve as it grows, final files last."""

    def __init__(
        self,
        run: RunConfig,
        lock: FolderLock,
        reopened: dict[str, Any] | None = None,
        created: datetime | None = None,
    ):
        """The folder `lock` holds (`claiming.claim` takes it), for `run`: a new one
        (created at `created`), or the unfinished run whose sidecar is `reopened` (its creation
        time and code kept; its evaluations are replayed through `on_evaluation`). Nothing is
        written before `start`; `close` lets go of it."""
        self.run = run
        self.lock = lock
        self.path = lock.folder
        self.resumed = reopened is not None
        self.checkpoints: SegmentCheckpoints | None = None  # `start`
        self.loggers: list[Any] = []  # `loggers.make_logger`'s: each gets log(step, scalars)
        self.steps: list[int] = []
        self.evaluations: list[dict[str, np.ndarray]] = []
        self._train_metrics: dict[str, np.ndarray] = {}
        self._logged: set[int] | None = None  # steps already in metrics.jsonl (read once)
        self._rewrite: list[dict[str, Any]] | None = None  # metrics.jsonl less a cut line
        self._started = datetime.now()
        self._earlier_code: list[dict[str, Any]] = []  # a resumed run's code before this process
        self.created = created or datetime.now()  # a reopened run's is read back
        if reopened is not None:
            self._reopen(reopened)

    def _reopen(self, before: dict[str, Any]) -> None:
        """Take up the unfinished run whose sidecar is `before`: its creation time, the code it
        ran on, the steps it logged and its clock (`time` in metrics.jsonl goes on from the
        last line logged before the interruption)."""
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
        again); with `logger=wandb`, the W&B run it logs into is made once and kept in
        `wandb_id`, so that a resumed run (a new process) continues it. Then open the segment
        checkpoints (`checkpoints`, `checkpoint=true` and one host: a multi-host run cannot
        resume, and orbax's saves synchronise every host, of which only this one would save)
        and the external logger (`logger=`); `finish` clears the one and `close` closes the
        other."""
        if not self.resumed:
            config, meta = self._config_text(), self._sidecar()
            atomic_write(self.path / CONFIG, config)
            write_json(self.path / META, meta)
        elif self._rewrite is not None:
            text = "".join(json.dumps(line) + "\n" for line in self._rewrite)
            atomic_write(self.path / METRICS, text)
        run_id = None
        if self.run.logger == "wandb":  # kept in the folder: a resumed run continues it
            kept = self.path / WANDB_ID
            if not kept.exists():
                atomic_write(kept, uuid.uuid4().hex[:16] + "\n")
            run_id = kept.read_text().strip()
        if checkpoints and self.run.checkpoint and jax.process_count() == 1:
            self.checkpoints = SegmentCheckpoints(self.checkpoint_dir)
        logger = make_logger(self.run.logger, self.path, self.run.config, run_id)
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

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc: object) -> None:
        """`with run_dir:` closes it however the block ends."""
        self.close()

    def close(self) -> None:
        """Let go of the folder, however the run ended (finished, diverged, interrupted, or
        failed): the external loggers closed, the lock released; once (again: nothing)."""
        self._close_loggers()
        self.lock.release()

    def _close_loggers(self) -> None:
        for logger in self.loggers:
            logger.close()
        self.loggers = []

    def _config_text(self) -> str:
        """config.yaml: the resolved config under a line naming the command."""
        head = "# resolved config of this run"
        if self.run.command:
            words = (a if a.isprintable() else repr(a) for a in self.run.command)
            head += "; command: marl train " + " ".join(words)  # one line, whatever they hold
        return f"{head}\n{OmegaConf.to_yaml(OmegaConf.create(self.run.config))}"

    def _sidecar(self) -> dict[str, Any]:
        """meta.json as the run starts (and stays while unfinished): what it trains, the
        resolved config, when it was created and what it is made with (`made_with`; a run
        resumed on other code than it started on names every code)."""
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
            "finished": False,
            **self.made_with,
        }
        codes = [c for c in self._earlier_code if c != out["code"]]
        if codes:
            out["codes"] = [*codes, out["code"]]
        return out

    def meta(
        self,
        result: RunResult,
        anchors: dict | None = None,
        lower_is_better: Sequence[str] = (),
        headline_metric: str = "return",
    ) -> dict[str, Any]:
        """The finished run's sidecar of `record.json`: its timings and training metrics, the
        env's lower-is-better metrics (`EnvSpec.lower_is_better`) and its metric in the task's
        natural unit (`EnvSpec.headline_metric`), record names, so reports rank and show them
        without building the env, and the anchors where measured (`record_anchors`)."""
        train_metrics = [
            {"step": int(step), **{k: floats(v) for k, v in m.items()}}
            for step, m in zip(result.steps[1:], result.train_metrics, strict=True)
        ]
        out = {
            **self._sidecar(),
            "finished": True,
            "wall_time": float(result.wall_time),
            "compile_time": float(result.compile_time),
            "steps_per_second": float(result.steps_per_second),
            "best_step": [int(s) for s in result.best_step],
            "lower_is_better": sorted(record_metric(m) for m in lower_is_better),
            "headline_metric": record_metric(headline_metric),
            "train_metrics": train_metrics,
        }
        if anchors is not None:
            out["anchors"] = {
                "metric": record_metric(self.run.settings.metric),
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
            "eval": {k: floats(np.asarray(v).mean(axis=-1)) for k, v in evals.items()},
            "train": {k: floats(v) for k, v in self._train_metrics.items()},
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
        diverged = {"step": int(step), "seeds": [int(s) for s in seeds], "what": what}
        meta = {**self._sidecar(), "diverged": diverged}
        write_json(self.path / META, meta)

    def finish(
        self,
        result: RunResult,
        anchors: dict | None = None,
        transfer: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Close the loggers (training is over), write the transfer targets' episodes
        (`transfer.play_targets`), the parameters, `final.json`, the sidecar (with the anchors,
        `record_anchors`) and last the full record with the absolute metric (its presence marks
        the run complete), then drop the checkpoint and the partial record; returns the final
        summary (`close` lets go of the folder)."""
        self._close_loggers()
        run, spec = self.run, self.run.env.spec  # what the sidecar says of its metrics
        meta = self.meta(result, anchors, spec.lower_is_better, spec.headline_metric)
        record = run_record(
            run.env_id, run.record_algo, result.steps, result.evaluations, result.absolute, run.task
        )
        final = final_record(run, result, self.made_with, meta["created"])
        if transfer is not None:
            write_json(self.path / TRANSFER, transfer)
        if result.params is not None:
            atomic_write(self.path / PARAMS, serialization.to_bytes(result.params))
        if result.best_params is not None:
            atomic_write(self.path / BEST_PARAMS, serialization.to_bytes(result.best_params))
        write_json(self.path / FINAL, final)
        write_json(self.path / META, meta)
        write_json(self.path / RECORD, record, indent=None)  # last: the run is complete
        if self.checkpoints is not None:  # a finished run keeps its record, not its segments
            self.checkpoints.clear()
        (self.path / PARTIAL).unlink(missing_ok=True)
        return final
