"""Executing jobs: one `marl train` run (`train_command`, `train_run`), and loading records
into a study for reports. The CLI and `python -m marl.app` parse; this module runs.

```
train_command(overrides) -> config.compose / resolve: checked once; the env, the learner and
                            the transfer targets built once (RunConfig)
  -> train_run(run): claiming.claim, the run directory (or the unfinished one to resume),
                    locked, read once, its first files written (RunDir.start)
     -> marl.learning.runner.run: segments of jit(scan(vmap(step))), evaluations between,
        each written by RunDir.on_evaluation (record.json, metrics.jsonl, checkpoint)
     -> transfer.play_targets where the protocol lists targets
     -> RunDir.finish (transfer.json, final.json, sidecar with summary.record_anchors,
        record.json last), or RunDir.diverge (the sidecar marked diverged)
     -> RunDir.close, however the run ended: the loggers closed, the folder let go
```
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marl.run.errors import ConfigError, UsageError
from marl.run.runtime import (
    DistributedError,
    finish_distributed,
    join_distributed,
    wants_distributed,
)
from marl.run.supervisor import supervise, supervised

if TYPE_CHECKING:  # imported where used: `train_command` joins a multi-host run first
    from marl.run.config import RunConfig
    from marl.run.rundir import RunDir


def train_command(overrides: Sequence[str], dry_run: bool = False) -> int:
    """`marl train OVERRIDES`: compose and check the config, join a multi-host run if asked
    (the work in a child process under `supervisor.supervise`, which ends it in one line when
    JAX does), train every seed and write the run directory; the exit code (130: interrupted)."""
    for item in overrides:
        key, _, value = item.partition("=")
        if key == "vmap" or (key.lstrip("+") in ("env", "algo", "protocol") and "," in value):
            raise UsageError(f"{item}: one run takes one value; sweep values with marl sweep")
    try:
        if wants_distributed(overrides) and not dry_run and not supervised():
            return supervise([sys.executable, "-m", "marl.cli", "train", *overrides])
        if wants_distributed(overrides) and not dry_run:
            where = os.environ.get("JAX_COORDINATOR_ADDRESS", "the cluster's coordinator")
            print(f"distributed=true: joining the multi-host run at {where}", flush=True)
            join_distributed()  # before anything starts a JAX backend (the config module does)
    except DistributedError as e:
        raise UsageError(str(e)) from None
    from marl.run.compose import compose
    from marl.run.config import resolve, start_distributed

    try:
        cfg = compose(overrides)
        start_distributed(cfg, join=not dry_run)  # a dry run checks, joins nothing
        run = resolve(cfg, command=overrides)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    if dry_run:  # the resolved config and the plan; nothing is claimed or trained
        from omegaconf import OmegaConf

        print(OmegaConf.to_yaml(OmegaConf.create(run.config)), end="")
        print(plan(run))
        return 0
    done = train_run(run)
    finish_distributed()  # a multi-host run's peers stop watching this process
    return 0 if done is not None else 130


def plan(run: RunConfig) -> str:
    """One line: what the run trains, for how long, and how often it is evaluated."""
    s = run.settings
    return (
        f"{run.env_id} with {run.algo}: {s.seeds} seeds x {run.env_steps:,} env steps, "
        f"{run.total_updates} updates of {run.steps_per_update:,} steps, "
        f"{run.num_segments + 1} evaluations of {s.eval_episodes} episodes"
    )


def train_run(run: RunConfig) -> Path | None:
    """Train a resolved run and write its directory, top to bottom: claim it (`claiming.claim`:
    new, resumed, or finished before), train into it (`marl.learning.runner.run`, every
    evaluation written as it comes), play the transfer targets, finish it (transfer.json,
    final.json, sidecar with the anchors, and last record.json, which marks it complete).
    Returns the directory (on hosts other than 0 of a multi-host run, the folder host 0 writes
    it in), or None when interrupted. However it ends, the folder is closed once."""
    import jax

    from marl.learning.checkpoint import CheckpointError
    from marl.learning.runner import run as run_training
    from marl.learning.training import Diverged
    from marl.run.claiming import claim
    from marl.run.summary import record_anchors
    from marl.run.transfer import play_targets

    if jax.process_index() > 0:  # a multi-host run: host 0 writes, the others only compute
        run_training(run.env, run.train, run.settings, log=None)
        return run.parent  # where host 0 writes the run
    announce = plan(run)
    run_dir: RunDir | None = claim(run)
    if run_dir is None:  # a relaunched sweep passes its finished runs over
        print(f"finished before: {run.folder}; nothing to resume", flush=True)
        return run.folder
    verb = "resuming" if run_dir.resumed else "run directory:"
    print(f"{announce}\n{verb} {run_dir.path}", flush=True)
    with run_dir:  # however the run ends, closed once: the loggers closed, the folder let go
        try:
            result = run_training(
                run.env,
                run.train,
                run.settings,
                log=_say,
                on_evaluation=run_dir.on_evaluation,
                checkpoints=run_dir.checkpoints,
                on_train_metrics=run_dir.on_train_metrics,
            )
            anchors = record_anchors(run)  # the random and scripted policies' scores
            transfer = None
            if run.transfer:  # each seed's best evaluated parameters (final ones without them)
                best = result.best_params if result.best_params is not None else result.params
                transfer = play_targets(run, best, log=_say)
            final = run_dir.finish(result, anchors, transfer)  # its last write: run complete
        except KeyboardInterrupt:
            print(
                f"interrupted; the evaluations so far are in {run_dir.path}; the same command "
                "with resume=true continues after the last finished segment",
                file=sys.stderr,
            )
            return None
        except CheckpointError as e:  # a truncated or corrupt segment to resume from
            raise UsageError(str(e)) from None
        except Diverged as e:
            run_dir.diverge(e.step, e.seeds, e.what)  # the sidecar marked, nothing else
            raise UsageError(
                f"{run.env_id} {run.algo} diverged: {e}; stopped, {run_dir.path} marked "
                "diverged (try a smaller algo.lr)"
            ) from None
    print(f"wrote {run_dir.path}")
    print_final(final, run)
    return run_dir.path


def continue_run(run: RunConfig) -> Path | None:
    """A named run as a relaunched sweep or job meets it (`claiming.relaunch`): its folder when
    it finished there before (nothing trained), else trained, after its last segment where it
    was killed; None when interrupted."""
    from marl.run.claiming import relaunch

    again = relaunch(run)
    if again is None:
        print(f"finished before: {run.folder}", flush=True)
        return run.folder
    return train_run(again)


def _say(line: str) -> None:
    print(line, flush=True)


def print_final(final: dict[str, Any], run: RunConfig) -> None:
    """The final summary's lines: the last evaluation's return over seeds, timings, and the
    absolute metric where it was measured."""
    s = run.settings
    print(
        f"final return {final['return_mean']:.3f} ± {final['return_std']:.3f} "
        f"(mean ± std over {s.seeds} seeds) after {final['env_steps']:,} steps; "
        f"{final['wall_time']:.0f}s wall, {final['compile_time']:.0f}s compile, "
        f"{final['steps_per_second']:,.0f} steps/s"
    )
    if "absolute_mean" in final:
        print(
            f"absolute {s.metric} {final['absolute_mean']:.3f} ± {final['absolute_std']:.3f} "
            f"(each seed's best evaluated parameters, {s.absolute_episodes} episodes)"
        )


def say_dropped(dropped: list[str] | None) -> None:
    """`--drop-bad`: a warning on stderr naming each record left out, and why."""
    for error in dropped or ():
        print(f"warning: dropped a bad record: {error}", file=sys.stderr, flush=True)


def load_study(
    paths: Sequence[str],
    metric: str,
    compute_anchors: bool = True,
    hint: Callable[[Exception], str] | None = None,
    declared: Any = None,
    drop_bad: bool = False,
) -> Any:
    """`marl.results.study.load_study` with the registry's facts (anchors computed for records
    without them, unless `compute_anchors` is False) and a benchmark's declared scoring
    anchors (`declared`); unfinished and diverged runs are named and skipped, and with
    `drop_bad` a record with bad numbers is left out with a warning naming it. `hint(error)`
    adds to a refusal (the leaderboard's: `entrants.refusal_hint`, the command that trains
    matching records)."""
    from marl.results import study as results_study
    from marl.results.protocol import RecordError, skip_reason
    from marl.run.tasks import RegisteredTasks

    skipped: list[Path] = []
    dropped: list[str] | None = [] if drop_bad else None
    facts = RegisteredTasks(anchors=compute_anchors)
    try:
        study = results_study.load_study(
            paths, metric=metric, facts=facts, skipped=skipped, declared=declared, dropped=dropped
        )
    except RecordError as e:
        say_dropped(dropped)
        raise UsageError(str(e) + (hint(e) if hint else "")) from None
    say_dropped(dropped)
    for path in skipped:
        print(f"skipped {skip_reason(path)}: {path}", flush=True)
    return study
