"""Executing jobs: one `marl train` run (`train_command`, `train_run`), a vectorised sweep of
learner values (`vmapped_runs`), and loading records into a study for reports. The CLI and
`python -m marl.app` parse; this module runs.

```
train_command(overrides) -> config.compose / resolve (checked once)
  -> train_run(run): claim the run directory (or the unfinished one to resume)
     -> config.build(run): the env and the learner, once
     -> marl.learning.training.run: segments of jit(scan(vmap(step))), evaluations between,
        each written by RunDir.on_evaluation (record.json, metrics.jsonl, checkpoint)
     -> record_anchors (marl.baselines) -> RunDir.finish: record, sidecar, final.json
```
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from marl.run.errors import UsageError
from marl.run.runtime import DistributedError, join_distributed, wants_distributed


def train_command(overrides: Sequence[str], dry_run: bool = False) -> int:
    """`marl train OVERRIDES`: compose and check the config, join a multi-host run if asked,
    train every seed and write the run directory; the exit code (130: interrupted)."""
    for item in overrides:
        key, _, value = item.partition("=")
        if key == "vmap" or (key.lstrip("+") in ("env", "algo", "protocol") and "," in value):
            raise UsageError(f"{item}: one run takes one value; sweep values with marl sweep")
    try:
        if wants_distributed(overrides) and not dry_run:
            where = os.environ.get("JAX_COORDINATOR_ADDRESS", "the cluster's coordinator")
            print(f"distributed=true: joining the multi-host run at {where}", flush=True)
            join_distributed()  # before anything starts a JAX backend (the config module does)
    except DistributedError as e:
        raise UsageError(str(e)) from None
    from marl.run import config

    try:
        cfg = config.compose(overrides)
        config.start_distributed(cfg, join=not dry_run)  # a dry run checks, joins nothing
        run = config.resolve(cfg, command=overrides)
    except config.ConfigError as e:
        raise UsageError(str(e)) from None
    if dry_run:
        train_run(run, dry_run=True)
        return 0
    return 0 if train_run(run) is not None else 130


def train_run(run: Any, dry_run: bool = False) -> Any:
    """Train a resolved run (`marl.run.config.RunConfig`) and write its directory; returns the
    directory (on hosts other than 0 of a multi-host run, the folder host 0 writes it in), or
    None when interrupted or on a dry run."""
    from marl.learning.training import Diverged
    from marl.learning.training import run as run_training
    from marl.run import config
    from marl.run.rundir import RunDir

    s = run.settings
    plan = (
        f"{run.env_id} with {run.algo}: {s.seeds} seeds x {run.env_steps:,} env steps, "
        f"{run.total_updates} updates of {run.steps_per_update:,} steps, "
        f"{run.num_segments + 1} evaluations of {s.eval_episodes} episodes"
    )
    if dry_run:
        from omegaconf import OmegaConf

        print(OmegaConf.to_yaml(OmegaConf.create(run.to_dict())), end="")
        print(plan)
        return None
    import jax

    from marl.learning.checkpoint import SegmentCheckpoints
    from marl.run.rundir import unfinished_run

    if jax.process_index() > 0:  # a multi-host run: host 0 writes, the others only compute
        env, train = config.build(run)
        run_training(env, train, run.settings, log=None)
        from marl.run.rundir import run_parent

        return run_parent(run)  # where host 0 writes the run

    finished = finished_before(run) if run.resume and run.name is not None else None
    if finished is not None:  # a relaunched sweep passes its finished runs over
        print(f"finished before: {finished}; nothing to resume", flush=True)
        return finished
    try:
        previous = unfinished_run(run) if run.resume else None
        run_dir = RunDir(run, path=previous)
    except FileExistsError as e:
        hint = "" if run.resume else ", choose another name= or pass resume=true"
        raise UsageError(f"run directory exists{hint}: {e.filename or e}") from None
    except ValueError as e:
        raise UsageError(f"cannot resume: {e}; choose another name=") from None
    except OSError as e:
        raise UsageError(f"cannot create the run directory under {run.out}: {e}") from None
    verb = "resuming" if previous is not None else "run directory:"
    print(f"{plan}\n{verb} {run_dir.path}", flush=True)
    env, train = config.build(run)
    # a multi-host run keeps no checkpoints (it cannot resume, and orbax's saves synchronise
    # every host, of which only this one would save)
    keep = run.checkpoint and jax.process_count() == 1
    checkpoints = SegmentCheckpoints(run_dir.checkpoint_dir) if keep else None
    from marl.run.loggers import make_logger

    logger = make_logger(run.logger, run_dir.path, run.to_dict())
    run_dir.loggers = [logger] if logger is not None else []
    try:
        result = run_training(
            env,
            train,
            run.settings,
            log=lambda line: print(line, flush=True),
            on_evaluation=run_dir.on_evaluation,
            checkpoints=checkpoints,
            on_train_metrics=run_dir.on_train_metrics,
        )
    except KeyboardInterrupt:
        if logger is not None:
            logger.close()
        print(
            f"interrupted; the evaluations so far are in {run_dir.path}; the same command with "
            "resume=true continues after the last finished segment",
            file=sys.stderr,
        )
        return None
    except Diverged as e:
        run_dir.diverge(e.step, e.seeds, e.what)
        if logger is not None:
            logger.close()
        raise UsageError(
            f"{run.env_id} {run.algo} diverged: {e}; stopped, {run_dir.path} marked diverged "
            "(try a smaller algo.lr)"
        ) from None
    final = run_dir.finish(result, record_anchors(run, env), env.spec)
    if checkpoints is not None:
        checkpoints.clear()
    if logger is not None:
        logger.close()
    if run.transfer:
        from marl.results.files import write_json
        from marl.run.transfer import build_targets, evaluate_transfer, summary

        params = result.best_params if result.best_params is not None else result.params
        episodes = s.absolute_episodes or s.eval_episodes
        print(f"transfer: {len(run.transfer)} targets x {episodes} episodes per seed", flush=True)
        targets = build_targets(run, train, config.make_env, config.learner_factory)
        transfer = evaluate_transfer(run, targets, params, episodes)
        write_json(run_dir.path / "transfer.json", transfer)
        for line in summary(transfer, s.metric):
            print(line)
    print(f"wrote {run_dir.path}")
    print_final(final, run)
    return run_dir.path


def record_anchors(run: Any, env: Any) -> dict[str, Any] | None:
    """The random and scripted policies' scores a record keeps (return metric only)."""
    if run.settings.metric != "return":
        return None
    from marl.baselines import anchor_scores

    episodes = max(run.settings.absolute_episodes, run.settings.eval_episodes)
    return {**anchor_scores(env, num_episodes=episodes), "episodes": episodes}


def print_final(final: dict[str, Any], run: Any) -> None:
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


def finished_before(run: Any) -> Any:
    """The run's directory if it holds a finished run of the same config (else None; a
    different config is refused)."""
    from marl.results.protocol import META
    from marl.run.rundir import run_parent

    path = run_parent(run) / str(run.name)
    if not (path / META).exists():
        return None
    before = json.loads((path / META).read_text())
    if not before.get("finished"):
        return None
    same_config(path, before.get("config") or {}, run.to_dict())
    return path


def vmapped_runs(run: Any, combos: list[dict[str, float]]) -> list[Any]:
    """Train every value combination of `combos` x the run's seeds as one program
    (`marl.learning.hyper`) and write one run directory per combination (named
    `<name>-<key>_<value>`); returns the directories."""
    import dataclasses as dc

    import jax

    from marl.core.registry import algorithm
    from marl.learning import hyper
    from marl.learning.training import RunResult
    from marl.learning.training import run as run_training
    from marl.run import config
    from marl.run.rundir import RunDir

    if run.logger is not None or run.transfer:
        raise UsageError(
            "vmap= trains its combinations as one program, without logger= or "
            "protocol.transfer; drop them, or sweep the values as a comma list instead"
        )
    names = list(combos[0])
    runs = []
    for c in combos:  # each combination is a run of its own: validated with concrete values
        label = "-".join(f"{k}_{v:g}" for k, v in c.items())
        overrides = [*run.command, *(f"algo.{k}={v!r}" for k, v in c.items())]
        overrides = [o for o in overrides if not o.startswith(("name=", "label="))]
        overrides += [f"name={run.name}-{label}", f"label={run.record_algo}-{label}"]
        try:
            runs.append(config.resolve(config.compose(overrides), command=overrides))
        except config.ConfigError as e:
            raise UsageError(f"vmap {label}: {e}") from None
    finished = [finished_before(r) for r in runs]
    if all(finished):  # a rerun sweep: every combination is done
        for path in finished:
            print(f"finished before: {path}", flush=True)
        return finished
    if run.resume:
        raise UsageError(
            "vmap= runs keep no checkpoints and cannot resume; drop resume=true (and rerun "
            "under another name= if this one was interrupted)"
        )
    env, _ = config.build(run)
    make_train = algorithm(run.algo)
    try:
        hyper.check_traceable(make_train, env, dict(run.algo_cfg), run.total_updates, names)
    except hyper.HyperError as e:
        raise UsageError(str(e)) from None
    seeds, count = run.settings.seeds, len(combos)
    try:
        dirs = [RunDir(r) for r in runs]
    except FileExistsError as e:
        raise UsageError(f"run directory exists, choose another name=: {e.filename or e}") from None
    for r, d in zip(runs, dirs, strict=True):
        print(f"{' '.join(r.command)}\nrun directory: {d.path}", flush=True)
    train = hyper.hyper_train(make_train, env, dict(run.algo_cfg), run.total_updates)
    keys = run.settings.seed_keys(jax.random.key(run.settings.seed))
    inputs = hyper.member_inputs(keys, combos)

    def each(hook: str):
        def call(step: int, tree: Any) -> None:
            for c, d in enumerate(dirs):
                getattr(d, hook)(step, hyper.split_members(tree, c, seeds))

        return call

    print(f"{count} value combinations x {seeds} seeds = {count * seeds} members", flush=True)
    result = run_training(
        env,
        train,
        dc.replace(run.settings, seeds=count * seeds),
        log=lambda line: print(line, flush=True),
        on_evaluation=each("on_evaluation"),
        on_train_metrics=each("on_train_metrics"),
        init_inputs=inputs,
    )
    anchors = record_anchors(run, env)
    for c, (r, d) in enumerate(zip(runs, dirs, strict=True)):
        part = RunResult(
            steps=result.steps,
            evaluations=[hyper.split_members(e, c, seeds) for e in result.evaluations],
            train_metrics=[hyper.split_members(m, c, seeds) for m in result.train_metrics],
            params=hyper.split_members(result.params, c, seeds),
            wall_time=result.wall_time,
            compile_time=result.compile_time,
            steps_per_second=result.steps_per_second / count,
            best_step=result.best_step[c * seeds : (c + 1) * seeds],
            best_score=result.best_score[c * seeds : (c + 1) * seeds],
            best_params=hyper.split_members(result.best_params, c, seeds),
            absolute=None
            if result.absolute is None
            else hyper.split_members(result.absolute, c, seeds),
        )
        print(f"wrote {d.path}")
        print_final(d.finish(part, anchors, env.spec), r)
    return [d.path for d in dirs]


def same_config(path: Any, before: dict[str, Any], planned: dict[str, Any]) -> None:
    """A finished run is reused only if it was trained with the planned config."""
    from marl.run.rundir import config_differences

    diff = config_differences(before, planned)
    if diff:
        raise UsageError(
            f"{path} holds a finished run with a different {', '.join(diff)}; "
            "choose another name= or remove it"
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
