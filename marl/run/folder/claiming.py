"""Claiming a run folder: which folder a run writes (`claim`), and the same question asked by a
relaunched sweep of each of its runs (`relaunch`).

`claim` takes a new folder (`name=`'s, which must be free, or a timestamp with a -2, -3 suffix),
or with `resume=true` reopens the unfinished run of the same config (`name=`'s, or the newest of
its config under `RunConfig.parent`: `unfinished_run`), or finds `name=`'s run finished already
(nothing to train). Two runs are the same config when `PLANNED` keys agree
(`config_differences`).

One writer per folder, and one reading of it: `claim` takes the folder's OS lock first
(`lock`; a second writer is refused in one line naming the holder), removes the
temporary files a killed writer left, and only then reads what the folder holds (`held`, once):
what it acts on is what the folder holds, since no other writer can finish or change it after
that read. The folder then goes to a `writer.RunDir`, which writes it and lets go of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from marl.results.protocol import META, RecordError, has_record, read_meta
from marl.run.errors import UsageError
from marl.run.folder.lock import (
    FolderBusy,
    FolderLock,
    busy,
    locked_by_another,
    remove_stale_temporaries,
)
from marl.run.folder.writer import STAMP, RunDir
from marl.run.train.config import RunConfig

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


@dataclass(frozen=True)
class Held:
    """What a run folder holds, read once (`held`): its sidecar (`meta`, None: no run) and
    whether that run is complete (`finished`: its sidecar says so and its record is written; a
    run that died in its final write is not, and `resume=true` finishes it from its
    checkpoint)."""

    folder: Path
    meta: dict[str, Any] | None
    finished: bool

    def differences(self, planned: Any) -> list[str]:
        """The `PLANNED` keys in which the run held differs from `planned`."""
        return config_differences((self.meta or {}).get("config"), planned)

    def finished_as(self, run: RunConfig) -> bool:
        """Whether it holds `run` finished (nothing to train); a finished run of another
        config is refused (UsageError)."""
        if not self.finished:
            return False
        diff = self.differences(run.config)
        if diff:
            raise UsageError(
                f"{self.folder} holds a finished run with a different {', '.join(diff)}; "
                "choose another name= or remove it"
            )
        return True


def held(folder: Path) -> Held:
    """What `folder` holds (a sidecar that cannot be read: UsageError)."""
    if not (folder / META).exists():
        return Held(folder, None, False)
    try:
        meta = read_meta(folder)
    except RecordError as e:
        raise UsageError(f"{e}; move the folder aside or remove it") from None
    return Held(folder, meta, bool(meta.get("finished")) and has_record(folder))


def finished_run(run: RunConfig) -> Path | None:
    """`name=`'s directory when it holds a finished run of this config (None when it holds
    none); a finished run of another config there is refused (UsageError)."""
    if run.folder is None or not held(run.folder).finished_as(run):
        return None
    return run.folder


def unfinished_run(run: RunConfig) -> Path | None:
    """The newest unfinished run of `run`'s config under `RunConfig.parent` (what `resume=true`
    without `name=` continues); None when there is none."""
    found = []
    for meta_path in run.parent.glob(f"*/{META}"):
        try:
            there = held(meta_path.parent)
        except UsageError:  # an unreadable folder is no run to continue
            continue
        if not there.finished and not there.differences(run.config):
            found.append(((there.meta or {}).get("created", ""), meta_path.parent))
    return max(found)[1] if found else None


def claim(run: RunConfig, now: datetime | None = None, resumable: bool = True) -> RunDir | None:
    """The run directory `run` writes, locked and ready for training (`RunDir.start`: its first
    files written, its checkpoints and logger open; `RunDir.close` lets go of it). With
    `resume=true`: the unfinished run of its config it continues (`name=`'s, else the newest,
    `unfinished_run`; a fresh directory when there is none), or None when `name=`'s run
    finished with this config (nothing to train); else a new directory, `name=`'s (which must
    be free) or a timestamp. A refusal is one `UsageError` line. `resumable=False`: a run that
    keeps no checkpoints and cannot resume (`vmap=`)."""
    now = now or datetime.now()
    folder = _to_resume(run) if run.resume else None
    lock = _lock(folder if folder is not None else _new_folder(run, now, resumable))
    try:
        before = None if folder is None else _reopened(run, held(folder))  # read once, locked
        if before is not None and before.finished:
            lock.release()
            return None
        run_dir = RunDir(run, lock, None if before is None else before.meta, created=now)
        run_dir.start(checkpoints=resumable)
    except BaseException:
        lock.release()
        raise
    return run_dir


def _to_resume(run: RunConfig) -> Path | None:
    """The folder `resume=true` takes up, not yet locked or read: `name=`'s where it exists,
    else the newest unfinished run of the config; None: a new one."""
    if run.folder is not None:
        return run.folder if run.folder.exists() else None
    return unfinished_run(run)


def _reopened(run: RunConfig, found: Held) -> Held:
    """`found`, read under its lock, as the run `run` continues: finished with this config
    (nothing to train) or unfinished with it; anything else is refused (UsageError)."""
    if found.meta is None:
        raise UsageError(f"run directory exists: {found.folder}")
    if found.finished_as(run):
        if run.folder is None:  # the newest unfinished run, finished by its writer meanwhile
            raise UsageError(f"{found.folder} was finished by another process; nothing to resume")
        return found
    diff = found.differences(run.config)
    if diff:
        raise UsageError(
            f"cannot resume: {found.folder} holds a run with a different {', '.join(diff)}; "
            "choose another name="
        )
    return found


def _new_folder(run: RunConfig, now: datetime, resumable: bool) -> Path:
    """A new run directory (`_mkdir`), or one line saying why there is none."""
    try:
        return _mkdir(run.parent, run.name, now)
    except FileExistsError as e:
        hint = ", choose another name=" + (" or pass resume=true" if resumable else "")
        raise UsageError(
            f"run directory exists{'' if run.resume else hint}: {e.filename or e}"
        ) from None
    except OSError as e:
        raise UsageError(f"cannot create the run directory under {run.out}: {e}") from None


def _mkdir(parent: Path, name: str | None, now: datetime) -> Path:
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


def _say(line: str) -> None:
    print(line, flush=True)


def relaunch(run: RunConfig, log: Callable[[str], None] = _say) -> RunConfig | None:
    """A named run of a relaunched sweep, as its folder finds it: None when it finished there
    with this config (nothing to train; another config is refused), the run with `resume=true`
    when it was killed there, and the run as it is when the folder is free or held an unfinished
    run of another config, which is moved aside to `<name>.unfinished-<time>`."""
    if run.folder is None:
        return run
    found = held(run.folder)
    if found.finished_as(run):
        return None
    if found.meta is None:
        return run
    if locked_by_another(run.folder):  # another job trains into it now: never move it
        raise UsageError(busy(run.folder))
    if not found.differences(run.config):
        return dataclasses.replace(run, resume=True)  # continues after its last segment
    aside = run.folder.with_name(f"{run.folder.name}.unfinished-{datetime.now():%Y%m%d-%H%M%S}")
    run.folder.rename(aside)
    log(f"moved the unfinished run (another config) aside to {aside}")
    return run
