"""The `marl` command line: `marl train | sweep | report | leaderboard | list | bench | render`.

Errors a user can fix (an unknown id or keyword, a missing optional package) are printed as one
line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import json
import math
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from marl import __version__
from marl.learning.xla import configure_xla
from marl.results.stats import REPS
from marl.results.tables import format_row, format_table
from marl.run.runtime import DistributedError, join_distributed, wants_distributed

PEERS = ("jaxmarl", "camar")
DEFAULT_NUM_ENVS = "1,64,1024,4096"
BENCH_STEPS = 1000  # steps per env per timed call of `marl bench ENV`
SUITE_AGENTS = "3,10,30,100,300,1000"  # `marl bench --suite scaling` agent counts


class UsageError(Exception):
    """A mistake on the command line; printed as one line, exit code 2."""


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= `minimum` (argparse reports anything else, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def output_file(path: str | None, option: str) -> Path | None:
    """Check a file to write before any work: not a directory; its directory is created."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {path} is a directory; give a file path")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot create its directory: {e}") from None
    return p


def output_dir(path: str, option: str) -> Path:
    """Check a directory to write into before any work: it may not be an existing file."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {path} exists and is not a directory")
    return p


# --- argument helpers -------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A `--set` value: a Python literal (3, 0.5, [1, 2], 'a'), true/false/none, or the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_sets(items: Sequence[str] | None) -> dict[str, Any]:
    """`["k=v", ...]` -> `{k: parse_value(v)}`."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = parse_value(value)
    return out


def parse_ints(text: str) -> list[int]:
    """`"1,64,1024"` -> `[1, 64, 1024]` (each >= 1)."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise UsageError(f"expected positive integers, got {text!r}")
    return values


def describe_space(space: Any) -> str:
    """Short text of an action space: `Discrete(5)` or `Box(0.0, 1.0, (5,))`."""
    if hasattr(space, "n"):
        return f"Discrete({int(space.n)})"
    if hasattr(space, "low") and hasattr(space, "shape"):
        low, high = np.min(space.low), np.max(space.high)
        return f"Box({low:g}, {high:g}, {tuple(space.shape)})"
    return str(space)


def build_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """`marl.make` with its failures turned into one-line usage errors."""
    from marl.run import config

    try:
        return config.make_env(env_id, kwargs)
    except config.ConfigError as e:
        raise UsageError(str(e)) from None


# --- commands ---------------------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    """Registered environment ids with agent count, action space and episode limit."""
    from marl.core.registry import list_algorithms, list_envs, make

    families = sorted({e.split("/")[0] for e in list_envs()})
    if args.family is not None and args.family not in families:
        raise UsageError(f"unknown family {args.family!r}; valid: {', '.join(families)}")
    rows = []
    for env_id in list_envs(args.family):
        try:
            spec = make(env_id).spec
        except Exception as e:  # one broken family must not hide the rest
            rows.append((env_id, "-", f"unavailable: {type(e).__name__}", "-"))
            continue
        rows.append(
            (
                env_id,
                str(spec.num_agents),
                describe_space(spec.action_space),
                str(spec.episode_limit),
            )
        )
    print(format_table(("id", "agents", "actions", "episode_limit"), rows))
    print("\nalgorithms:")
    names = list_algorithms()
    width = max(map(len, names), default=0)
    for name in names:
        print(f"  {name.ljust(width)}  {describe_algorithm(name, 96 - width)}")
    return 0


def describe_algorithm(name: str, width: int = 90) -> str:
    """First paragraph of a learner's docstring (its module's, unless `make_train` is not the
    module's own), or why it cannot be imported."""
    from marl.core.registry import algorithm

    try:
        make_train = algorithm(name)
    except Exception as e:  # one broken learner must not hide the rest
        return f"unavailable: {type(e).__name__}"
    module = sys.modules.get(make_train.__module__)
    own = getattr(make_train, "__name__", "") == "make_train"
    doc = ((getattr(module, "__doc__", None) if own else None) or make_train.__doc__ or "").strip()
    first_paragraph = " ".join(doc.split("\n\n")[0].split())
    return textwrap.shorten(first_paragraph, width=width, placeholder=" ...")


def cmd_train(args: argparse.Namespace) -> int:
    """Compose and validate the config, train every seed, write the run directory."""
    for item in args.overrides:
        key, _, value = item.partition("=")
        if key == "vmap" or (key.lstrip("+") in ("env", "algo", "protocol") and "," in value):
            raise UsageError(f"{item}: one run takes one value; sweep values with marl sweep")
    try:
        if wants_distributed(args.overrides) and not args.dry_run:
            where = os.environ.get("JAX_COORDINATOR_ADDRESS", "the cluster's coordinator")
            print(f"distributed=true: joining the multi-host run at {where}", flush=True)
            join_distributed()  # before anything starts a JAX backend (the config module does)
    except DistributedError as e:
        raise UsageError(str(e)) from None
    from marl.run import config

    try:
        cfg = config.compose(args.overrides)
        config.start_distributed(cfg, join=not args.dry_run)  # a dry run checks, joins nothing
        run = config.resolve(cfg, command=args.overrides)
    except config.ConfigError as e:
        raise UsageError(str(e)) from None
    if args.dry_run:
        train_run(run, dry_run=True)
        return 0
    return 0 if train_run(run) is not None else 130


def train_run(run: Any, dry_run: bool = False) -> Any:
    """Train a resolved run (`marl.run.config.RunConfig`) and write its directory; returns the
    directory (on hosts other than 0 of a multi-host run, the folder host 0 writes it in), or
    None when interrupted or on a dry run."""
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

    finished = _finished_before(run) if run.resume and run.name is not None else None
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
    final = run_dir.finish(result, _anchors(run, env), env.spec)
    if checkpoints is not None:
        checkpoints.clear()
    if logger is not None:
        logger.close()
    if run.transfer:
        from marl.run.rundir import write_json
        from marl.run.transfer import evaluate_transfer, summary

        params = result.best_params if result.best_params is not None else result.params
        episodes = s.absolute_episodes or s.eval_episodes
        print(f"transfer: {len(run.transfer)} targets x {episodes} episodes per seed", flush=True)
        transfer = evaluate_transfer(run, train, params, episodes)
        write_json(run_dir.path / "transfer.json", transfer)
        for line in summary(transfer, s.metric):
            print(line)
    print(f"wrote {run_dir.path}")
    _print_final(final, run)
    return run_dir.path


def _study(paths: Sequence[str], metric: str, compute_anchors: bool = True) -> Any:
    from marl.results.protocol import RecordError
    from marl.results.report import load_study

    skipped: list[Path] = []
    try:
        study = load_study(paths, metric=metric, compute_anchors=compute_anchors, skipped=skipped)
    except RecordError as e:
        raise UsageError(str(e)) from None
    for path in skipped:
        print(f"skipped an unfinished run: {path}", flush=True)
    return study


def cmd_report(args: argparse.Namespace) -> int:
    """Aggregate run records into report.md, report.html (self-contained) and report.json;
    records of a task under different protocols or budgets go to sections of their own."""
    from marl.results.protocol import RecordError, load
    from marl.results.report import write_sectioned_report

    output_dir(args.out, "--out")
    skipped: list[Path] = []
    try:
        records = load(args.runs, skipped)
        if not records:
            unfinished = f"; unfinished: {', '.join(map(str, skipped))}" if skipped else ""
            raise RecordError(f"no finished run records found{unfinished}")
        for path in skipped:
            print(f"skipped an unfinished run: {path}", flush=True)
        paths, studies = write_sectioned_report(
            records, args.out, title=args.title, metric=args.metric, reps=args.reps, seed=args.seed
        )
    except RecordError as e:
        raise UsageError(str(e)) from None
    for k, study in enumerate(studies, 1):
        where = f"section {k}: " if len(studies) > 1 else ""
        print(
            f"{where}{len(study.tasks)} task(s), {len(study.algorithms)} algorithm(s) "
            f"({', '.join(study.algorithms)})"
        )
    print(f"wrote {paths['md']}, {paths['html']}")
    return 0


DEFAULT_RECORDS = ("results/reference/runs", "results/external")


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """Rank algorithms per task and overall; writes leaderboard.md, .json and .html."""
    from marl.results.report import write_leaderboard

    runs = args.runs or [p for p in DEFAULT_RECORDS if os.path.isdir(p)]
    if not runs:
        raise UsageError(f"no records given and none of {', '.join(DEFAULT_RECORDS)} exists")
    output_dir(args.out, "--out")
    study = _study(runs, args.metric)
    given = [*args.runs, "--out", args.out]  # what regenerates the files
    if args.metric != "episode_return":
        given += ["--metric", args.metric]
    if args.reps != REPS:
        given += ["--reps", str(args.reps)]
    if args.seed:
        given += ["--seed", str(args.seed)]
    command = "marl leaderboard " + " ".join(given)
    paths = write_leaderboard(study, args.out, reps=args.reps, seed=args.seed, command=command)
    print(f"{len(study.tasks)} task(s), {len(study.algorithms)} algorithm(s); wrote {paths['md']}")
    return 0


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


# override keys whose values already give a run its own directory (<out>/<env>/<task>/<algo>/)
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
    from marl.run import config

    out = []
    for combo, point in zip(grid, points, strict=True):
        parts = {k: f"{k.rpartition('.')[2]}_{point[k]}" for k in axes if k in point}
        tags = "-".join(parts.values())
        algo_tags = "-".join(v for k, v in parts.items() if k.startswith("algo."))
        kept = [o for o in combo if _key_value(o)[0] not in ("name", "label")]
        name = point.get("name")
        kept.append(f"name={name}-{tags}" if name else f"name={tags}")
        if algo_tags:
            base = point.get("label") or str(config.compose(kept).algo.name)
            kept.append(f"label={base}-{algo_tags}")
        elif point.get("label"):
            kept.append(f"label={point['label']}")
        out.append(kept)
    return out


def common_grid(grid: list[list[str]], runs: Sequence[Any]) -> tuple[list[list[str]], list[str]]:
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


def _same_config(path: Any, before: dict[str, Any], planned: dict[str, Any]) -> None:
    """A finished run is reused only if it was trained with the planned config."""
    from marl.run.rundir import config_differences

    diff = config_differences(before, planned)
    if diff:
        raise UsageError(
            f"{path} holds a finished run with a different {', '.join(diff)}; "
            "choose another name= or remove it"
        )


def cmd_sweep(args: argparse.Namespace) -> int:
    """Train every combination of comma-separated overrides, then write one report."""
    if args.report is not None:
        output_dir(args.report, "--report")
    from datetime import datetime

    from marl.learning import hyper
    from marl.results.protocol import META
    from marl.run import config
    from marl.run.rundir import config_differences, run_parent

    vmap = [o.removeprefix("vmap=") for o in args.overrides if o.startswith("vmap=")]
    overrides = [o for o in args.overrides if not o.startswith("vmap=")]
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
    except config.ConfigError as e:
        raise UsageError(str(e)) from None

    def resolve_all(grid: list[list[str]]) -> list[Any]:
        runs = []
        for combo in grid:  # validate every run before training any
            try:
                cfg = config.compose(combo)
                runs.append(config.resolve(cfg, command=combo))
            except config.ConfigError as e:
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
    dirs = []
    for k, run in enumerate(runs, 1):
        path = run_parent(run) / str(run.name)
        print(f"[{k}/{len(runs)}] {' '.join(run.command)}", flush=True)
        if combos:  # one program for the value combinations x seeds; not resumable
            dirs += vmapped_runs(run, combos)
            continue
        if _finished_before(run) is not None:
            print(f"finished before: {path}", flush=True)
            dirs.append(path)
            continue
        if (path / META).exists():
            before = json.loads((path / META).read_text())
            if config_differences(before.get("config"), run.to_dict()):
                aside = path.with_name(f"{path.name}.unfinished-{datetime.now():%Y%m%d-%H%M%S}")
                path.rename(aside)
                print(f"moved the unfinished run (another config) aside to {aside}", flush=True)
            else:  # a killed sweep continues its run after the last finished segment
                run = dataclasses.replace(run, resume=True)
        done = train_run(run)
        if done is None:
            return 130
        dirs.append(done)
    out = args.report or str(runs[0].out / f"report-{sweep_name}")
    from marl.results.report import write_report

    study = _study([str(d) for d in dirs], "episode_return")
    paths = write_report(study, out, title=f"marl sweep {sweep_name}")
    print(f"wrote {paths['md']} and {paths['html']}")
    return 0


def cmd_benchmark(args: argparse.Namespace) -> int:
    """`marl benchmark status|run|measure NAME`: a versioned benchmark's cells."""
    from marl.run import benchmark as bm

    try:
        if args.action == "list":
            for name in bm.names():
                d = bm.load(name)
                n = {t: len(bm.cells(d, t)) for t in d["tiers"]}
                print(f"{name}: " + ", ".join(f"{t} tier {k} cells" for t, k in n.items()))
            return 0
        d = bm.load(args.name)
        chosen = bm.cells(d, args.tier, args.only or ())
        runs = [(c, bm.resolve(c)) for c in chosen]  # every cell checked before any work
    except bm.BenchmarkError as e:
        raise UsageError(str(e)) from None
    records = Path(d["records"])
    costs = bm.read_costs(records)
    if args.action == "measure":
        for k, (cell, run) in enumerate(runs, 1):
            if cell.key in costs and not args.again:
                continue
            costs[cell.key] = bm.measure(run)
            bm.write_costs(records, costs)
            est = bm.estimate_s(run, costs[cell.key])
            print(f"[{k}/{len(runs)}] {cell.key}: {bm.hours(est)} of training", flush=True)
    rows, left, unmeasured = [], 0.0, 0
    for cell, run in runs:
        status, meta = bm.state(run)
        est = bm.estimate_s(run, costs.get(cell.key))
        if status == "finished":
            took = meta.get("wall_time")
            cost = f"took {bm.hours(took)}" if took else "done"
        else:
            cost = bm.hours(est)
            left += est or 0.0
            unmeasured += est is None
        rows.append([cell.tier, cell.key, f"{cell.seeds} x {cell.budget:.0e}", status, cost])
    print(format_table(["tier", "cell", "seeds x steps", "state", "training time"], rows))
    todo = [(c, r) for (c, r), row in zip(runs, rows, strict=True) if row[3] != "finished"]
    more = f" and {unmeasured} unmeasured (marl benchmark measure)" if unmeasured else ""
    print(f"{len(todo)} of {len(runs)} cells left: {bm.hours(left)} measured on this machine{more}")
    if args.action != "run" or not todo:
        return 0
    failed = bm.run_cells(todo, train_run)
    for cell, error in failed:
        print(f"failed: {cell.key}: {error}", file=sys.stderr)
    return 1 if failed else 0


def peer_installed(peer: str) -> bool:
    """True when the peer package can be imported."""
    return importlib.util.find_spec(peer) is not None


def _check_peer(peer: str) -> None:
    if peer not in PEERS:
        raise UsageError(f"unknown peer {peer!r}; valid: {', '.join(PEERS)}")
    if not peer_installed(peer):
        raise UsageError(f'--vs {peer} needs {peer} installed: pip install -e ".[peers]"')


PEER_OF_FAMILY = {"particle": "jaxmarl", "combat": "jaxmarl", "pathfinding": "camar"}


def cmd_bench(args: argparse.Namespace) -> int:
    """Env steps per second at each `--num-envs`, optionally side by side with a peer; or the
    whole suite (`--suite`)."""
    from marl.bench import envs as bench

    if args.suite is not None:
        return cmd_bench_suite(args)
    if args.env_id is None:
        raise UsageError("marl bench needs an env id (e.g. particle/spread) or --suite")
    suite_only = [o for o in ("out", "seeds", "agents") if getattr(args, o) is not None]
    if suite_only:
        raise UsageError(f"--{', --'.join(suite_only)}: only with --suite")
    output_file(args.json, "--json")
    kwargs = parse_sets(args.set)
    sizes = parse_ints(args.num_envs)
    env = build_env(args.env_id, kwargs)
    if args.vs == "all":  # the env family's peer
        family = args.env_id.split("/")[0]
        if family not in PEER_OF_FAMILY:
            raise UsageError(f"no peer has a {family} environment; --vs takes: {', '.join(PEERS)}")
        args.vs = PEER_OF_FAMILY[family]
    if args.vs:
        _check_peer(args.vs)
        try:
            if args.vs == "camar":
                camar = bench.camar_kwargs(args.env_id, kwargs)
                peer_name = f"camar_v0:{camar['map_generator']} {camar['map_kwargs']}"
            else:
                peer_name = bench.jaxmarl_name(args.env_id)
                bench.jaxmarl_kwargs(args.env_id, kwargs)
        except KeyError as e:
            raise UsageError(e.args[0]) from None
        except ValueError as e:
            raise UsageError(str(e)) from None
    import jax

    spec = env.spec
    head = f"{spec.name}: {spec.num_agents} agents, {describe_space(spec.action_space)}"
    head += f", {args.steps} steps per env, best of {args.repeats}"
    head += f"; jax {jax.__version__} on {jax.devices()[0].platform}"
    if args.vs:
        head += f"; vs {args.vs} {peer_name}"
    print(head, flush=True)
    headers = ["num_envs", "marl steps/s", "marl agent-steps/s", "compile s"]
    if args.vs:
        headers += [f"{args.vs} steps/s", f"{args.vs} compile s", f"marl/{args.vs}"]
    widths = [max(len(h), 10) for h in headers]
    print(format_row(headers, widths))
    print(format_row(["-" * w for w in widths], widths), flush=True)
    records = []
    for n in sizes:
        mine = bench.bench_env(env, n, args.steps, args.seed, repeats=args.repeats)
        row = [
            str(n),
            f"{mine['steps_per_s']:,.0f}",
            f"{mine['agent_steps_per_s']:,.0f}",
            f"{mine['compile_s']:.2f}",
        ]
        record = {"marl": mine}
        if args.vs:
            peer_bench = bench.bench_camar if args.vs == "camar" else bench.bench_jaxmarl
            peer = peer_bench(args.env_id, n, args.steps, args.seed, repeats=args.repeats, **kwargs)
            ratio = mine["steps_per_s"] / peer["steps_per_s"]
            row += [f"{peer['steps_per_s']:,.0f}", f"{peer['compile_s']:.2f}", f"{ratio:.2f}"]
            record[args.vs] = peer
        print(format_row(row, widths), flush=True)
        records.append(record)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=2)
    return 0


def cmd_bench_suite(args: argparse.Namespace) -> int:
    """`marl bench --suite [PARTS]`: environments, training loops and agent scaling."""
    from marl.bench import suite as benchsuite

    parts = [p for p in args.suite.split(",") if p]
    unknown = [p for p in parts if p not in benchsuite.PARTS]
    if unknown or not parts:
        raise UsageError(
            f"unknown suite part(s) {', '.join(unknown) or '(none)'}; "
            f"valid: {', '.join(benchsuite.PARTS)}"
        )
    if args.env_id is not None or args.set:
        raise UsageError("--suite runs its own tasks: drop the env id and --set")
    output_file(args.json, "--json")
    output_file(args.out, "--out")
    if args.steps != BENCH_STEPS:
        raise UsageError("--suite sizes its scans per task; --steps applies to one env only")
    vs = args.vs is not None
    if vs:
        peers = PEERS if args.vs == "all" else (args.vs,)
        for peer in peers:
            _check_peer(peer)
    cases = benchsuite.ENV_CASES
    if vs and args.vs != "all":  # only the tasks that peer has
        cases = tuple(c for c in cases if c.peer == args.vs)
    results = benchsuite.run_suite(
        parts=parts,
        vs=vs,
        num_envs=parse_ints(args.num_envs),
        repeats=args.repeats,
        seeds=args.seeds or 1,
        agents=parse_ints(args.agents or SUITE_AGENTS),
        env_cases=cases,
    )
    command = "marl bench " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "marl bench"
    if args.json:  # an earlier suite file keeps the parts this run did not measure
        old = json.loads(Path(args.json).read_text()) if Path(args.json).exists() else {}
        old = old if isinstance(old, dict) and any(p in old for p in benchsuite.PARTS) else {}
        with open(args.json, "w") as f:
            json.dump(benchsuite.merge_records(old, results, command), f, indent=2, default=str)
    if args.out:
        benchsuite.write_markdown(args.out, results, command)
        print(f"wrote {args.out}")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    """Play one episode with random valid actions and write it as a GIF."""
    import jax

    from marl.run.render import render_episode, save_gif, viewer

    if Path(args.out).suffix.lower() != ".gif":
        raise UsageError(f"--out {args.out}: give a .gif file path")
    output_file(args.out, "--out")
    if args.params is None and (args.final or args.seed_index):
        raise UsageError("--final and --seed-index choose a run's parameters: add --params")
    env = build_env(args.env_id, parse_sets(args.set))
    try:
        viewer(env)
    except NotImplementedError as e:
        raise UsageError(str(e)) from None
    trained, who = None, "random valid actions"
    if args.params is not None:
        saved = _load_saved(args.params, "final" if args.final else "best")
        if (saved.run.env_id, dict(saved.run.env_kwargs)) != (args.env_id, parse_sets(args.set)):
            raise UsageError(
                f"{args.params} was trained on {saved.run.env_id} with "
                f"{dict(saved.run.env_kwargs) or 'default keywords'}; render that env "
                f"(marl render {saved.run.env_id} ... with the same --set)"
            )
        try:
            trained = (saved.train.policy, saved.seed_params(args.seed_index))
        except ValueError as e:
            raise UsageError(str(e)) from None
        env, who = saved.env, f"{saved.run.algo} seed {args.seed_index} (greedy)"
    states = render_episode(env, jax.random.PRNGKey(args.seed), steps=args.steps, trained=trained)
    path = save_gif(env, states, args.out, fps=args.fps)
    ended = " (the episode ended first)" if args.steps and len(states) <= args.steps else ""
    print(f"wrote {path} ({len(states)} frames{ended}, {who})")
    return 0


def _anchors(run: Any, env: Any) -> dict[str, Any] | None:
    """The random and scripted policies' scores a record keeps (return metric only)."""
    if run.settings.metric != "return":
        return None
    from marl.baselines import anchor_scores

    episodes = max(run.settings.absolute_episodes, run.settings.eval_episodes)
    return {**anchor_scores(env, num_episodes=episodes), "episodes": episodes}


def _print_final(final: dict[str, Any], run: Any) -> None:
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


def _finished_before(run: Any) -> Any:
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
    _same_config(path, before.get("config") or {}, run.to_dict())
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
    finished = [_finished_before(r) for r in runs]
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
    keys = jax.random.split(jax.random.key(run.settings.seed), seeds)
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
    anchors = _anchors(run, env)
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
        _print_final(d.finish(part, anchors, env.spec), r)
    return [d.path for d in dirs]


def _load_saved(path: str, which: str) -> Any:
    from marl.run.saved import SavedRunError, load

    try:
        return load(path, which)
    except SavedRunError as e:
        raise UsageError(str(e)) from None


def cmd_eval(args: argparse.Namespace) -> int:
    """Re-evaluate a finished run's saved parameters (every seed) on fresh episodes."""
    import jax
    import numpy as np

    from marl.learning.evaluation import evaluate
    from marl.run.rundir import write_json

    output_file(args.json, "--json")
    saved = _load_saved(args.run_dir, "final" if args.final else "best")
    env, policy = saved.env, saved.train.policy
    key = jax.random.key(args.seed)
    results = jax.device_get(
        jax.jit(jax.vmap(lambda p: evaluate(env, policy, p, key, args.episodes)))(saved.params)
    )
    which = "final" if args.final else "best evaluated"
    print(
        f"{saved.run.env_id} {saved.run.algo}: {saved.seeds} seeds x {args.episodes} episodes, "
        f"{which} parameters of {saved.path}"
    )
    summary = {}
    for name, values in sorted(results.items()):
        per_seed = np.asarray(values, np.float64).mean(axis=-1)
        summary[name] = per_seed.tolist()
        spread = per_seed.std(ddof=1) if len(per_seed) > 1 else 0.0
        print(f"  {name:<24} {per_seed.mean():12.4f} ± {spread:.4f} (mean ± std over seeds)")
    if args.json:
        write_json(Path(args.json), {"run": str(saved.path), "episodes": args.episodes, **summary})
    return 0


# --- parser -----------------------------------------------------------------------------------
class TrainHelp(argparse.Action):
    """`marl train --help`: the usual help plus the config groups, options and keys."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        from marl.run.config import describe

        parser.epilog = describe()
        parser.print_help()
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `marl`."""
    parser = argparse.ArgumentParser(
        prog="marl", description="JAX benchmark suite for classical multi-agent RL."
    )
    parser.add_argument("--version", action="version", version=f"marl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "train",
        help="train a learner on an environment over several seeds (Hydra overrides)",
        description="Train a learner on an environment for `budget` env steps per seed, all seeds\n"
        "in one program, evaluating every budget/20 steps. The arguments are Hydra overrides of\n"
        "the config tree marl/conf/; the run is written to <out>/<env>/<algo>/<name>/.",
        usage="marl train [-h] [--dry-run] [KEY=VALUE ...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    p.add_argument("-h", "--help", action=TrainHelp, help="show this help (and the config options)")
    p.add_argument("--dry-run", action="store_true", help="print the resolved config and exit")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="Hydra overrides, e.g. algo=ippo budget=1e6",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "sweep",
        help="train a grid of runs (comma-separated overrides), then write a report",
        description="Hydra multirun syntax: each comma-separated override is a sweep axis,\n"
        "e.g. `marl sweep env=particle/spread,particle/simple algo=ippo,mappo budget=2e5`.\n"
        "Seeds are vmapped inside each run. Runs already finished under the same name=\n"
        "are skipped, so a killed sweep resumes; the report goes to --report.",
        usage="marl sweep [-h] [--report DIR] KEY=VALUE[,VALUE...] ...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--report", metavar="DIR", help="report directory (default <out>/report-<name>)")
    p.add_argument("overrides", nargs="+", metavar="KEY=VALUE", help="Hydra overrides")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "benchmark",
        help="a versioned benchmark's cells: what is left, its cost here, and running it",
        description="status: every cell's state (finished, unfinished, missing) and measured "
        "training time; measure: time a few updates of each cell on this machine (kept in "
        "<records>/costs.json); run: train the cells left, resuming unfinished ones; a cell "
        "that fails is reported and the others go on. list: the shipped benchmarks.",
    )
    p.add_argument("action", choices=("list", "status", "measure", "run"))
    p.add_argument("name", nargs="?", default="v1", help="benchmark (default v1) or a yaml path")
    p.add_argument("--tier", default="all", help="cpu, gpu, ... or all (default)")
    p.add_argument(
        "--only", action="append", metavar="GLOB", help="cells task/learner matching (repeatable)"
    )
    p.add_argument("--again", action="store_true", help="measure: re-measure measured cells")
    p.set_defaults(func=cmd_benchmark)

    p = sub.add_parser(
        "report",
        help="aggregate run records into a report (Markdown, HTML, JSON, plots)",
        description="Reads run directories, directories of runs, or marl-eval JSON files.",
    )
    p.add_argument("runs", nargs="+", metavar="RUNS", help="run directories or record files")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--metric", default="episode_return", help="record metric to aggregate")
    p.add_argument("--title", default="marl report")
    p.add_argument("--reps", type=at_least(1), default=REPS, help="bootstrap replicates")
    p.add_argument("--seed", type=at_least(0), default=0, help="bootstrap seed")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "leaderboard",
        help="rank algorithms per task and overall from run records",
        description="Default records: results/reference/runs and results/external (marl-eval "
        "JSON from other frameworks, marked external).",
    )
    p.add_argument("runs", nargs="*", metavar="RUNS", help="run directories or record files")
    p.add_argument("--out", default="results", metavar="DIR", help="output directory")
    p.add_argument("--metric", default="episode_return", help="record metric to rank by")
    p.add_argument("--reps", type=at_least(1), default=REPS, help="bootstrap replicates")
    p.add_argument("--seed", type=at_least(0), default=0, help="bootstrap seed")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("list", help="list registered environments and algorithms")
    p.add_argument("--family", help="only this family (e.g. particle)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "bench", help="measure environment (or, with --suite, training) steps per second"
    )
    p.add_argument("env_id", nargs="?", help="environment id, e.g. particle/spread")
    p.add_argument(
        "--suite",
        nargs="?",
        const="envs,train,scaling",
        metavar="PARTS",
        help="run the benchmark suite instead: envs, train, scaling (comma-separated; default all)",
    )
    p.add_argument(
        "--num-envs",
        default=DEFAULT_NUM_ENVS,
        help=f"parallel envs, comma-separated (default {DEFAULT_NUM_ENVS})",
    )
    p.add_argument(
        "--steps", type=at_least(1), default=BENCH_STEPS, help="steps per env per timed call"
    )
    p.add_argument("--repeats", type=at_least(1), default=3, help="timed calls; the best is kept")
    p.add_argument("--seed", type=at_least(0), default=0)
    p.add_argument(
        "--vs",
        nargs="?",
        const="all",
        choices=(*PEERS, "all"),
        help="also run the peer's version of the env (no value: the family's peer; with "
        "--suite, every peer)",
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="env keyword (repeatable)")
    p.add_argument(
        "--json",
        metavar="FILE",
        help="also write the records as JSON (--suite: an earlier suite file keeps the parts "
        "not run)",
    )
    p.add_argument(
        "--seeds", type=at_least(1), help="--suite: seeds vmapped in each training loop (default 1)"
    )
    p.add_argument(
        "--agents", help=f"--suite scaling: agent counts (comma-separated; default {SUITE_AGENTS})"
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="--suite: write the tables as markdown (an earlier file keeps the tables not run)",
    )
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "render", help="write a GIF of one episode (random valid actions or a trained policy)"
    )
    p.add_argument("env_id", help="environment id, e.g. particle/spread")
    p.add_argument("--out", required=True, metavar="FILE.gif", help="output GIF path")
    p.add_argument("--seed", type=at_least(0), default=0)
    p.add_argument(
        "--steps", type=at_least(1), help="steps to play, at most one episode (default: all of it)"
    )
    p.add_argument("--fps", type=at_least(1), default=10)
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="env keyword (repeatable)")
    p.add_argument("--params", metavar="RUN_DIR", help="act with a finished run's policy")
    p.add_argument(
        "--seed-index", type=at_least(0), default=0, help="which of its seeds (default 0)"
    )
    p.add_argument("--final", action="store_true", help="final, not best evaluated, parameters")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("eval", help="re-evaluate a finished run's saved parameters")
    p.add_argument("run_dir", help="a run directory written by marl train")
    p.add_argument("--episodes", type=at_least(1), default=320, help="greedy episodes per seed")
    p.add_argument("--seed", type=at_least(0), default=1, help="episode keys (training used 0)")
    p.add_argument("--final", action="store_true", help="final, not best evaluated, parameters")
    p.add_argument("--json", metavar="FILE", help="also write the per-seed means as JSON")
    p.set_defaults(func=cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `marl` command line; returns the exit code."""
    configure_xla()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        print(f"marl: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `marl list | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
