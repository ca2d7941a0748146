"""What a launch records and reads back as data: each run's last job (`jobs.json`), the state
the scheduler gives it (`job_state`), and the outcome a job leaves beside submitit's files
(`Recorded`: never submitit's pickles, since a folder a user passes may hold a crafted one, and
unpickling runs code).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from marl.results.files import write_json
from marl.run.campaigns.launch_options import LaunchOptions
from marl.run.errors import UsageError

JOBS_FILE = "jobs.json"
INSTALL = 'pip install -e ".[cluster]"'
ALIVE = ("PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "SUSPENDED")
OUTCOME = "{job_id}_outcome.json"
OUTCOME_BYTES = 64 * 1024  # an outcome is a line; anything longer is not one of ours


def submitit_module() -> Any:
    """submitit, or one line saying how to install it."""
    try:
        import submitit
    except ImportError:
        raise UsageError(f"--launcher needs submitit, in the cluster extra: {INSTALL}") from None
    return submitit


# --- jobs.json: each run's last job ------------------------------------------------------------
def read_jobs(folder: Path) -> dict[str, dict[str, Any]]:
    path = Path(folder) / JOBS_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: unreadable ({e}); remove it to forget the jobs") from None
    return data if isinstance(data, dict) else {}


def _write_jobs(folder: Path, jobs: dict[str, dict[str, Any]]) -> None:
    Path(folder).mkdir(parents=True, exist_ok=True)
    write_json(Path(folder) / JOBS_FILE, dict(sorted(jobs.items())))


def job_state(entry: dict[str, Any], folder: Path) -> str:
    """The scheduler's state of a recorded job: Slurm's (through sacct; UNKNOWN where it
    cannot be asked), or for a local job RUNNING while its process lives, else FINISHED or
    FAILED from the result submitit left."""
    job_id = str(entry.get("job_id", ""))
    if entry.get("launcher") == "slurm":
        submitit = submitit_module()
        try:
            return str(submitit.SlurmJob(Path(folder) / "%j", job_id).state)
        except Exception:  # noqa: BLE001 - no sacct here, or the job is too old for it
            return "UNKNOWN"
    try:
        os.kill(int(job_id), 0)
        alive = _not_zombie(int(job_id))
    except (ValueError, ProcessLookupError):
        alive = False
    except PermissionError:  # another user's process took the pid: ours has ended
        alive = False
    if alive and entry.get("host") in (None, _host()):
        return "RUNNING"
    return _outcome_state(read_outcome(Path(folder) / job_id / OUTCOME.format(job_id=job_id)))


def _outcome_state(outcome: dict[str, Any] | None) -> str:
    if outcome is None:
        return "INTERRUPTED"
    return {"success": "FINISHED", "failed": "FAILED"}.get(outcome.get("outcome"), "UNKNOWN")


# --- outcomes: what a job leaves as data ------------------------------------------------------


def read_outcome(path: Path) -> dict[str, Any] | None:
    """A job's outcome (`{"outcome": "success" | "failed", "error": line}`), None where it left
    none; `{"outcome": "unreadable"}` where the file is not one."""
    try:
        with open(path, "rb") as f:
            data = f.read(OUTCOME_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError:
        return {"outcome": "unreadable"}
    try:
        found = json.loads(data) if len(data) <= OUTCOME_BYTES else None
    except ValueError:
        found = None
    return found if isinstance(found, dict) else {"outcome": "unreadable"}


def _write_outcome(outcome: str, error: str | None = None) -> None:
    """In a job: its outcome beside submitit's files (`OUTCOME` in the job's folder)."""
    try:
        env = submitit_module().JobEnvironment()
    except RuntimeError:  # not in a job (called directly)
        return
    path = Path(env.paths.folder) / OUTCOME.format(job_id=env.job_id)
    write_json(path, {"outcome": outcome, "error": error})


@dataclass(frozen=True)
class Recorded:
    """A job's target that leaves its outcome as data, read back without unpickling; returns
    None so that submitit's own result file carries nothing of ours."""

    target: Callable[[], Any]

    def __call__(self) -> None:
        try:
            self.target()
        except BaseException as e:
            line = (str(e).strip().splitlines() or [""])[-1]
            _write_outcome("failed", last_error(f"{type(e).__name__}: {line}") or type(e).__name__)
            raise
        _write_outcome("success")

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """Requeued as itself where its target can be (`TrainJob.checkpoint`)."""
        if not hasattr(self.target, "checkpoint"):
            return None
        return submitit_module().helpers.DelayedSubmission(self)


def _not_zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # no /proc: trust kill(0)
    return "\nState:\tZ" not in status


def _host() -> str:
    return socket.gethostname()


def states(folder: Path) -> dict[str, str]:
    """Each recorded run's job state (`job_state`), by key."""
    return {key: job_state(e, folder) for key, e in read_jobs(folder).items()}


def record_job(
    known: dict[str, dict[str, Any]], key: str, job_id: str, opts: LaunchOptions
) -> None:
    """Note run `key`'s new job in `known` and write it to the launch's jobs.json."""
    known[key] = {
        "launcher": opts.launcher,
        "job_id": job_id,
        "host": _host(),
        "submitted": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _write_jobs(opts.folder, known)


def last_error(text: str) -> str | None:
    """The job's own error line (`ValueError: ...`, `marl: error: ...`) from submitit's
    message, which quotes the job's traceback and then names its log files."""
    lines = [line.strip() for line in text.splitlines()]
    errors = [
        line
        for line in lines
        if line
        and not line.startswith(("-", "File ", "^", "Traceback", "You can check"))
        and ": " in line
        and line.split(": ", 1)[0].replace(".", "").replace(" ", "").isalnum()
    ]
    return errors[-1] if errors else None
