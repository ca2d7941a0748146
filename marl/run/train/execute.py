"""A resolved run trained into its folder, top to bottom (`train_run`), and a named run as a
relaunched sweep or job meets it (`continue_run`).

```
train_run(run): folder.claim, the run directory (or the unfinished one to resume), locked, read
                once, its first files written (RunDir.start)
  -> marl.learning.runner.run: segments of jit(scan(vmap(step))), evaluations between,
     each written by RunDir.on_evaluation (record.json, metrics.jsonl, checkpoint)
  -> transfer.play_targets where the protocol lists targets
  -> RunDir.finish (transfer.json, final.json, sidecar with summary.record_anchors,
     record.json last), or RunDir.diverge (the sidecar marked diverged)
  -> RunDir.close, however the run ended: the loggers closed, the folder let go
```
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jax

from marl.learning import runner
from marl.learning.checkpoint import CheckpointError
from marl.learning.training import Diverged
from marl.run.errors import UsageError
from marl.run.folder import RunDir, claim, relaunch
from marl.run.train.config import RunConfig
from marl.run.train.summary import record_anchors
from marl.run.train.transfer import play_targets


def plan(run: RunConfig) -> str:
    """One line: what the run trains, for how long, and how often it is evaluated."""
    s = run.settings
    return (
        f"{run.env_id} with {run.algo}: {s.seeds} seeds x {run.env_steps:,} env steps, "
        f"{run.total_updates} updates of {run.steps_per_update:,} steps, "
        f"{run.num_segments + 1} evaluations of {s.eval_episodes} episodes"
    )


def train_run(run: RunConfig) -> Path | None:
    """Train a resolved run and write its directory, top to bottom: claim it (`folder.claim`:
    new, resumed, or finished before), train into it (`marl.learning.runner.run`, every
    evaluation written as it comes), play the transfer targets, finish it (transfer.json,
    final.json, sidecar with the anchors, and last record.json, which marks it complete).
    Returns the directory (on hosts other than 0 of a multi-host run, the folder host 0 writes
    it in), or None when interrupted. However it ends, the folder is closed once."""
    if jax.process_index() > 0:  # a multi-host run: host 0 writes, the others only compute
        runner.run(run.env, run.train, run.settings, log=None)
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
            result = runner.run(
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
    """A named run as a relaunched sweep or job meets it (`marl.run.folder.relaunch`): its
    folder when it finished there before (nothing trained), else trained, after its last
    segment where it was killed; None when interrupted."""
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
