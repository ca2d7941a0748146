"""Benchmark cells and sweep runs as scheduler jobs, through submitit (the library Hydra's
Slurm launcher uses): `--launcher slurm` submits one job per run to Slurm; `--launcher local`
runs the same jobs as local processes, at most `--jobs N` at once.

```
runs left -> Job(key, what to train, estimated seconds) -> submitit executor -> one job each
          -> <folder>/jobs.json: each run's job id, so `status` and a relaunch see it
```

A job trains its run exactly as the in-process command does (`marl.run.train.execute.continue_run`,
resuming an unfinished run after its last saved segment), so its records are the same. A
relaunch skips runs whose job is still pending or running; Slurm's time limit comes from the
run's measured cost (`marl benchmark measure`), and a job that reaches it is requeued by
submitit and resumes.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marl.run.campaigns.launch_options import LaunchOptions
from marl.run.campaigns.launch_records import (
    ALIVE,
    OUTCOME,
    Recorded,
    job_state,
    read_jobs,
    read_outcome,
    record_job,
    submitit_module,
)

CONTROLLER_LOG = "controllers.log"  # what the local jobs' controllers say (a stop's tracebacks)
# a job's time limit: the run's measured training time x MARGIN + SLACK_MIN (evaluations,
# compiles and a slower node); an unmeasured run gets DEFAULT_LIMIT_MIN
MARGIN, SLACK_MIN, DEFAULT_LIMIT_MIN = 2.0, 15, 24 * 60


@dataclass(frozen=True)
class Job:
    """One run to train as a job: `key` names it in jobs.json and in messages; `target` is
    the picklable callable the job calls (it raises on failure); `estimate_s` its measured
    training time (None: unmeasured)."""

    key: str
    target: Callable[[], Any]
    estimate_s: float | None = None


def time_limit(job: Job, opts: LaunchOptions) -> int:
    """Minutes the scheduler gives `job`: the options' limit, else its measured cost x MARGIN
    + SLACK_MIN, else DEFAULT_LIMIT_MIN."""
    if opts.time_limit_min:
        return opts.time_limit_min
    if job.estimate_s is None:
        return DEFAULT_LIMIT_MIN
    return int(math.ceil(job.estimate_s * MARGIN / 60)) + SLACK_MIN


def executor(opts: LaunchOptions) -> Any:
    """A submitit executor for `opts` (job-independent parameters set)."""
    submitit = submitit_module()
    folder = opts.folder / "%j"
    if opts.launcher == "local":
        ex = submitit.LocalExecutor(folder=folder)
        ex.update_parameters(setup=list(opts.setup))
        return ex
    ex = submitit.SlurmExecutor(folder=folder)
    params: dict[str, Any] = {
        "partition": opts.partition,
        "account": opts.account,
        "qos": opts.qos,
        "constraint": opts.constraint,
        "gpus_per_node": opts.gpus_per_job or None,
        "cpus_per_task": opts.cpus_per_job,
        "mem": f"{opts.mem_gb:g}GB" if opts.mem_gb else None,
        "setup": list(opts.setup) or None,
        "additional_parameters": dict(opts.additional) or None,
        "array_parallelism": opts.jobs or 256,
    }
    ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
    return ex


# --- launching ---------------------------------------------------------------------------------
def launch(
    jobs: Sequence[Job], opts: LaunchOptions, log: Callable[[str], None] = print
) -> list[tuple[str, str]]:
    """Submit each job not already pending or running. Slurm: submit and return (the cap is
    the array's parallelism); local: run them, at most `opts.jobs` at once, and wait; a
    SIGINT or SIGTERM cancels the running ones (each resumes on the next launch).
    -> [(key, error)] of the jobs that failed (local) or could not be submitted."""
    known = read_jobs(opts.folder)
    todo = []
    for job in jobs:
        entry = known.get(job.key)
        if entry is not None and entry.get("launcher") == opts.launcher:
            state = job_state(entry, opts.folder)
            if state in ALIVE:
                log(f"{job.key}: {opts.launcher} job {entry['job_id']} is {state}; left to it")
                continue
        todo.append(job)
    if not todo:
        return []
    ex = executor(opts)
    if opts.launcher == "slurm":
        return _submit_all(ex, todo, opts, known, log)
    return _run_local(ex, todo, opts, known, log)


def _submit_all(ex, todo, opts, known, log) -> list[tuple[str, str]]:  # noqa: ANN001
    failed = []
    for job in todo:
        ex.update_parameters(time=time_limit(job, opts), job_name=_job_name(job.key))
        try:
            submitted = ex.submit(Recorded(job.target))
        except Exception as e:  # noqa: BLE001 - sbatch refused it: say so, submit the rest
            failed.append((job.key, f"not submitted: {str(e).strip().splitlines()[-1]}"))
            continue
        record_job(known, job.key, str(submitted.job_id), opts)
        log(f"submitted {job.key}: slurm job {submitted.job_id}, {time_limit(job, opts)} min")
    return failed


def _job_name(key: str) -> str:
    return "marl-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:60]


def _run_local(ex, todo, opts, known, log) -> list[tuple[str, str]]:  # noqa: ANN001
    cap = opts.jobs or os.cpu_count() or 1
    waiting, running, failed = list(todo), {}, []
    stop: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        stop.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while (waiting or running) and not stop:
            while waiting and len(running) < cap:
                job = waiting.pop(0)
                ex.update_parameters(timeout_min=time_limit(job, opts))
                with _stderr_into(Path(opts.folder) / CONTROLLER_LOG):
                    submitted = ex.submit(Recorded(job.target))
                running[job.key] = submitted
                record_job(known, job.key, str(submitted.job_id), opts)
                log(f"started {job.key}: local job {submitted.job_id} ({len(running)} running)")
            time.sleep(0.5)
            for key, submitted in list(running.items()):
                if submitted.done():
                    del running[key]
                    error = _local_error(submitted, opts.folder)
                    if error:
                        failed.append((key, error))
                        log(f"{key}: failed ({error}); log: {submitted.paths.stderr}")
                    else:
                        log(f"{key}: done")
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if stop:
            for submitted in running.values():
                submitted.cancel()
            for submitted in running.values():
                _wait_gone(submitted)
    if stop:
        raise KeyboardInterrupt
    return failed


@contextmanager
def _stderr_into(path: Path) -> Iterator[None]:
    """This process's stderr appended to `path` while inside: the local job's controller
    (submitit's, started here) inherits it, so its tracebacks when a stop interrupts it land
    in the jobs folder, not on the launcher's console (the job's own output has its log)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def _local_error(submitted: Any, folder: Path) -> str | None:
    """The failed job's error line from the outcome it left (never its pickled result)."""
    job_id = str(submitted.job_id)
    outcome = read_outcome(Path(folder) / job_id / OUTCOME.format(job_id=job_id))
    if outcome is None:
        return f"stopped without an outcome (its log: {Path(folder) / job_id})"
    if outcome.get("outcome") == "success":
        return None
    return str(outcome.get("error") or outcome.get("outcome"))


def _wait_gone(submitted: Any, seconds: float = 60.0) -> None:
    """Wait until a cancelled local job's process has ended (it saves nothing half-written:
    the run resumes after its last segment)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not submitted.done():
        time.sleep(0.2)
    if not submitted.done():
        process = getattr(submitted, "_process", None)
        if process is not None:
            process.kill()


# --- what a job runs ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainJob:
    """A job's callable: `marl train` of `overrides` as the in-process command runs it
    (resuming an unfinished run), with the import paths the user allowed. Picklable; its
    `checkpoint` requeues it on a Slurm time limit or preemption."""

    overrides: tuple[str, ...]
    allow_import: tuple[str, ...] = ()
    checkpoint_runs: bool = True

    def __call__(self) -> str:
        from marl.core.registry import files_are_data
        from marl.learning.logs import quiet_library_logs
        from marl.learning.xla import configure_xla

        configure_xla()
        quiet_library_logs()
        with files_are_data(list(self.allow_import)):
            return str(_train(list(self.overrides), self.checkpoint_runs))

    def checkpoint(self) -> Any:
        submitit = submitit_module()
        return submitit.helpers.DelayedSubmission(self)


def _train(overrides: list[str], checkpoint_runs: bool) -> Path:
    """The job's run, resolved and trained in the job's process (imported here, after
    `configure_xla`: importing them starts a JAX backend)."""
    from marl.run.train.compose import compose
    from marl.run.train.execute import continue_run
    from marl.run.train.resolve import resolve

    run = resolve(compose(overrides), command=overrides)
    if not checkpoint_runs:
        run = dataclasses.replace(run, checkpoint=False, resume=False)
    done = continue_run(run)
    if done is None:
        print("interrupted", file=sys.stderr, flush=True)
        raise KeyboardInterrupt
    return done
