"""`marl sweep`: the grid of comma-separated overrides (Hydra's multirun expansion), kept apart
in run directories and on one evaluation grid per task, trained one run after another, then
one report."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marl.run.errors import ConfigError, UsageError
from marl.run.train.compose import compose

if TYPE_CHECKING:
    from marl.core.learner import Train
    from marl.learning.training import RunResult
    from marl.run.campaigns.launch_options import LaunchOptions
    from marl.run.folder import RunDir
    from marl.run.train.config import RunConfig


def sweep_overrides(overrides: Sequence[str]) -> list[list[str]]:
    """Hydra multirun expansion: `env=a,b algo=x,y` -> the grid of override lists."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    parsed = []
    for item in overrides:  # one by one, so an error names the override
        try:
            parsed += parser.parse_overrides([item])
        except HydraException as e:
            raise UsageError(f"cannot parse {item!r}: {str(e).strip().splitlines()[0]}") from None
    batches = BasicSweeper.split_arguments(parsed, max_batch_size=None)
    return [list(combo) for batch in batches for combo in batch]


# override keys whose values already give a run its own directory (<out>/<family>/<task>/<algo>/)
_PLACING = ("env", "algo", "out", "name", "label")


def _key_value(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+"), value


def separate_grid(grid: list[list[str]]) -> list[list[str]]:
    """Keep a sweep's grid points apart: each axis that would leave two runs in one directory
    (an `algo.*` setting, `seed`, a protocol setting) is appended to the run's name as
    `-<key>_<value>` (as `vmap=` names its runs), and an `algo.*` axis also names the algorithm
    in the records, `label=<algo>-<key>_<value>`, so that reports rank each setting on its own
    instead of pooling them."""
    points = [dict(_key_value(o) for o in combo) for combo in grid]
    keys = list(dict.fromkeys(k for p in points for k in p))
    axes = [
        k
        for k in keys
        if len({p.get(k) for p in points}) > 1
        and k not in _PLACING
        and not k.startswith("env.kwargs.")
    ]
    if not axes:
        return grid
    out = []
    for combo, point in zip(grid, points, strict=True):
        parts = {k: f"{k.rpartition('.')[2]}_{point[k]}" for k in axes if k in point}
        tags = "-".join(parts.values())
        algo_tags = "-".join(v for k, v in parts.items() if k.startswith("algo."))
        kept = [o for o in combo if _key_value(o)[0] not in ("name", "label")]
        name = point.get("name")
        kept.append(f"name={name}-{tags}" if name else f"name={tags}")
        if algo_tags:
            base = point.get("label") or str(compose(kept).algo.name)
            kept.append(f"label={base}-{algo_tags}")
        elif point.get("label"):
            kept.append(f"label={point['label']}")
        out.append(kept)
    return out


def common_grid(
    grid: list[list[str]], runs: Sequence[RunConfig]
) -> tuple[list[list[str]], list[str]]:
    """One evaluation grid per task for learners whose updates differ in size.

    Each run evaluates every `interval` env steps rounded to its own whole updates, so at one
    budget a learner of 2,048-step updates and one of 64-step updates would train different
    numbers of steps, and their records could not be compared. Where a task's runs leave
    `protocol.eval_interval` unset and share a budget and evaluation count, it is pinned to
    the interval rounded to a multiple of every one of their update sizes (a single-learner
    task is unchanged).
    Returns the grid with the pinned overrides and one line per pinned task.
    """
    tasks: dict[str, list[int]] = {}
    for k, run in enumerate(runs):
        s = run.settings
        key = json.dumps([run.env_id, run.env_kwargs, s.budget, s.num_evaluations], sort_keys=True)
        tasks.setdefault(key, []).append(k)
    grid, notes = [list(combo) for combo in grid], []
    for members in tasks.values():
        chosen = [runs[k] for k in members]
        sizes = sorted({r.steps_per_update for r in chosen})
        if len(sizes) < 2 or any(r.settings.eval_interval is not None for r in chosen):
            continue
        step = math.lcm(*sizes)
        interval = chosen[0].settings.interval()
        pinned = max(1, round(interval / step)) * step
        if pinned > 2 * interval:  # the update sizes share no multiple near the interval
            notes.append(
                f"sweep: {chosen[0].env_id}'s learners update every {', '.join(map(str, sizes))} "
                "env steps, with no common multiple near the evaluation interval; their runs "
                "will differ in length (pin protocol.eval_interval to compare them)"
            )
            continue
        for k in members:
            grid[k].append(f"protocol.eval_interval={pinned}")
        notes.append(
            f"sweep: {chosen[0].env_id} evaluated every {pinned:,} env steps, a multiple of each "
            f"learner's update ({', '.join(f'{n:,}' for n in sizes)} steps), so that its runs "
            "train the same steps and compare"
        )
    return grid, notes


def run_sweep(
    overrides: Sequence[str], report: str | None = None, launch: LaunchOptions | None = None
) -> int:
    """`marl sweep OVERRIDES`: train every combination of comma-separated overrides (each
    finished run kept, each killed one resumed), then write one report (default:
    `<out>/report-<name>`); the exit code (130: interrupted). With `launch`, the runs left
    are scheduler jobs (`launch`, their logs in `<out>/.jobs`) on the grid fixed
    here; the report is written once every run has finished."""
    from datetime import datetime

    from marl.learning import hyper
    from marl.run.saved.study import load_study
    from marl.run.train.execute import continue_run
    from marl.run.train.resolve import resolve

    vmap = [o.removeprefix("vmap=") for o in overrides if o.startswith("vmap=")]
    overrides = [o for o in overrides if not o.startswith("vmap=")]
    try:
        combos = hyper.combinations(hyper.parse(vmap)) if vmap else []
    except hyper.HyperError as e:
        raise UsageError(str(e)) from None
    grid = sweep_overrides(overrides)
    if not any(o.startswith("name=") for o in overrides):
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        grid = [[*combo, f"name=sweep-{stamp}"] for combo in grid]
    sweep_name = next(v for k, v in map(_key_value, grid[0]) if k == "name")
    try:
        grid = separate_grid(grid)
    except ConfigError as e:
        raise UsageError(str(e)) from None

    def resolve_all(grid: list[list[str]]) -> list[Any]:
        runs = []
        for combo in grid:  # validate every run before training any
            try:
                cfg = compose(combo)
                runs.append(resolve(cfg, command=combo))
            except ConfigError as e:
                raise UsageError(f"{' '.join(combo)}: {e}") from None
            if cfg.get("distributed", False) is True:
                raise UsageError(
                    "distributed=true runs through marl train (the same command on every "
                    "host); marl sweep is single-host"
                )
        return runs

    runs = resolve_all(grid)
    grid, notes = common_grid(grid, runs)
    if notes:
        runs = resolve_all(grid)
        for note in notes:
            print(note, flush=True)
    print(f"sweep: {len(runs)} run(s)", flush=True)
    if launch is not None:
        if combos:
            raise UsageError("vmap= sweeps train as one program: run them without --launcher")
        code = _launch_runs(runs, dataclasses.replace(launch, folder=runs[0].out / ".jobs"))
        if code is not None:
            return code
    dirs = []
    for k, run in enumerate(runs, 1):
        print(f"[{k}/{len(runs)}] {' '.join(run.command)}", flush=True)
        if combos:  # one program for the value combinations x seeds; not resumable
            dirs += vmapped_runs(run, combos)
            continue
        done = continue_run(run)  # a killed sweep continues after its runs' last segments
        if done is None:
            return 130
        dirs.append(done)
    out = report or str(runs[0].out / f"report-{sweep_name}")
    from marl.results.report import write_report

    study = load_study([str(d) for d in dirs], "episode_return")
    paths = write_report(study, out, title=f"marl sweep {sweep_name}")
    print(f"wrote {paths['md']} and {paths['html']}")
    return 0


def _launch_runs(runs: list[RunConfig], opts: LaunchOptions) -> int | None:
    """The sweep's unfinished runs as jobs. None when every run has finished (the report
    follows), else the exit code: local jobs failed or were stopped, or Slurm jobs are queued
    (the same command writes the report once they have finished)."""
    from marl.run.campaigns import launch
    from marl.run.folder import relaunch

    left = [run for run in runs if relaunch(run, log=lambda _: None) is not None]
    if left:
        jobs = [launch.Job(str(run.folder), launch.TrainJob(tuple(run.command))) for run in left]
        print(f"{len(jobs)} job(s) to {opts.launcher}; logs and jobs.json in {opts.folder}")
        try:
            failed = launch.launch(jobs, opts)
        except KeyboardInterrupt:
            print("interrupted: the same command resumes the runs left", file=sys.stderr)
            return 130
        for key, error in failed:
            print(f"failed: {key}: {error}", file=sys.stderr)
        if failed:
            return 1
        if opts.launcher == "slurm":
            print("submitted; the same command writes the report once the jobs have finished")
            return 0
    return None


# --- vmap=: value combinations x seeds, one program -------------------------------------------
def vmapped_runs(run: RunConfig, combos: list[dict[str, float]]) -> list[Path]:
    """Train every value combination of `combos` x the run's seeds as one program
    (`marl.learning.hyper`) and write one run directory per combination (named
    `<name>-<key>_<value>`); returns the directories."""
    from marl.run.folder import claim, finished_run
    from marl.run.train.execute import print_final
    from marl.run.train.summary import record_anchors

    if run.logger is not None or run.transfer:
        raise UsageError(
            "vmap= trains its combinations as one program, without logger= or "
            "protocol.transfer; drop them, or sweep the values as a comma list instead"
        )
    runs = _combination_runs(run, combos)
    finished = [finished_run(r) for r in runs]
    if all(finished):  # a rerun sweep: every combination is done
        for path in finished:
            print(f"finished before: {path}", flush=True)
        return [path for path in finished if path is not None]
    if run.resume:
        raise UsageError(
            "vmap= runs keep no checkpoints and cannot resume; drop resume=true (and rerun "
            "under another name= if this one was interrupted)"
        )
    train = _member_train(run, list(combos[0]))
    dirs: list[Any] = []
    try:
        for r in runs:
            dirs.append(claim(r, resumable=False))
            print(f"{' '.join(r.command)}\nrun directory: {dirs[-1].path}", flush=True)
        result = _train_members(run, train, combos, dirs)
        anchors = record_anchors(run)
        for c, (r, d) in enumerate(zip(runs, dirs, strict=True)):
            final = d.finish(_member_result(result, c, run.settings.seeds, len(combos)), anchors)
            print(f"wrote {d.path}")
            print_final(final, r)
    finally:  # however it ends, every folder let go
        for d in dirs:
            d.close()
    return [d.path for d in dirs]


def _combination_runs(run: RunConfig, combos: list[dict[str, float]]) -> list[RunConfig]:
    """Each value combination as a run of its own, validated with its concrete values."""
    from marl.run.train.resolve import resolve

    runs = []
    for c in combos:
        label = "-".join(f"{k}_{v:g}" for k, v in c.items())
        overrides = [*run.command, *(f"algo.{k}={v!r}" for k, v in c.items())]
        overrides = [o for o in overrides if not o.startswith(("name=", "label="))]
        overrides += [f"name={run.name}-{label}", f"label={run.record_algo}-{label}"]
        try:
            runs.append(resolve(compose(overrides), command=overrides))
        except ConfigError as e:
            raise UsageError(f"vmap {label}: {e}") from None
    return runs


def _member_train(run: RunConfig, names: list[str]) -> Train:
    """The run's learner with the swept `names` carried in each member's state, checked to
    trace with them as values (`hyper.check_traceable`: nothing compiles)."""
    from marl.core.registry import algorithm
    from marl.learning import hyper

    make_train = algorithm(run.algo)
    try:
        hyper.check_traceable(make_train, run.env, dict(run.algo_cfg), run.total_updates, names)
    except hyper.HyperError as e:
        raise UsageError(str(e)) from None
    return hyper.hyper_train(make_train, run.env, dict(run.algo_cfg), run.total_updates)


def _train_members(
    run: RunConfig, train: Train, combos: list[dict[str, float]], dirs: Sequence[RunDir]
) -> RunResult:
    """`runner.run` of every combination x seed as one program, each evaluation and
    segment's metrics written into its combination's directory."""
    import jax

    from marl.learning import hyper, runner

    seeds, count = run.settings.seeds, len(combos)
    inputs = hyper.member_inputs(run.settings.seed_keys(jax.random.key(run.settings.seed)), combos)

    def each(hook: str) -> Callable[[int, Any], None]:
        def call(step: int, tree: Any) -> None:
            for c, d in enumerate(dirs):
                getattr(d, hook)(step, hyper.split_members(tree, c, seeds))

        return call

    print(f"{count} value combinations x {seeds} seeds = {count * seeds} members", flush=True)
    return runner.run(
        run.env,
        train,
        dataclasses.replace(run.settings, seeds=count * seeds),
        log=lambda line: print(line, flush=True),
        on_evaluation=each("on_evaluation"),
        on_train_metrics=each("on_train_metrics"),
        init_inputs=inputs,
    )


def _member_result(result: RunResult, c: int, seeds: int, count: int) -> RunResult:
    """Combination `c`'s part of the members' result (its `seeds` members, its share of the
    throughput), as if it had been a run of its own."""
    from marl.learning import hyper
    from marl.learning.training import RunResult

    def part(tree: Any) -> Any:
        return hyper.split_members(tree, c, seeds)

    return RunResult(
        steps=result.steps,
        evaluations=[part(e) for e in result.evaluations],
        train_metrics=[part(m) for m in result.train_metrics],
        params=part(result.params),
        wall_time=result.wall_time,
        compile_time=result.compile_time,
        steps_per_second=result.steps_per_second / count,
        best_step=result.best_step[c * seeds : (c + 1) * seeds],
        best_score=result.best_score[c * seeds : (c + 1) * seeds],
        best_params=part(result.best_params),
        absolute=None if result.absolute is None else part(result.absolute),
    )
