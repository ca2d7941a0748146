"""`marl benchmark` and `marl leaderboard`: a versioned benchmark's cells (status, training,
measuring), and the leaderboard, with its static site, built from the records. Each checks its
arguments, calls `marl.run` and `marl.results`, and prints; user-fixable errors are one-line
`UsageError`s."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from marl.cli.args import check_launcher_flags, launch_options, output_dir
from marl.results.stats import REPS
from marl.results.tables import format_table
from marl.run.errors import UsageError


def cmd_benchmark(args: argparse.Namespace) -> int:
    """`marl benchmark status|run|measure NAME`: a versioned benchmark's cells; the file's ids
    resolve to registered ones (import paths only from --algo and --allow-import)."""
    from marl.core.registry import files_are_data

    with files_are_data([*(args.algo or ()), *(args.allow_import or ())]):
        return _benchmark(args)


def _benchmark(args: argparse.Namespace) -> int:
    from marl.run.campaigns import benchmark, benchmark_costs, benchmark_runs

    check_launcher_flags(args)
    if args.launcher and args.action != "run":
        raise UsageError("--launcher: only with `marl benchmark run`")
    try:
        if args.action == "list":
            for name in benchmark.names():
                d = benchmark.load(name)
                n = {t: len(benchmark.cells(d, t)) for t in d["tiers"]}
                print(f"{name}: " + ", ".join(f"{t} tier {k} cells" for t, k in n.items()))
            return 0
        if args.part and args.action != "run":
            raise UsageError("--part: only with `marl benchmark run`")
        if args.keep_parts and args.action != "run":
            raise UsageError("--keep-parts: only with `marl benchmark run`")
        if args.seeds is not None and args.action != "verify":
            raise UsageError("--seeds: only with `marl benchmark verify`")
        if args.action == "verify":
            return _verify(args)
        if args.algo and not args.records:
            raise UsageError(
                f"--algo: give --records DIR, a folder of yours for its cells (e.g. --records "
                f"runs/{Path(args.name).stem}-mine)"
            )
        d = benchmark.load(args.name)
        if args.algo:  # a learner of the user's on the benchmark's tasks
            from marl.run.campaigns import entrants

            chosen = entrants.cells(d, args.algo, args.records, args.tier, args.only or ())
            runs = entrants.resolve(d, chosen)
            for line in entrants.plan(d, runs):
                print(line)
        else:
            chosen = benchmark.cells(d, args.tier, args.only or ())
            if args.records:
                chosen = [dataclasses.replace(c, records=Path(args.records)) for c in chosen]
            runs = benchmark.resolve_cells(d, chosen)  # every cell checked before any work
    except benchmark.BenchmarkError as e:
        raise UsageError(str(e)) from None
    records = Path(args.records or d["records"])
    if args.action in ("run", "measure"):  # found before the work, not after it
        output_dir(str(records), "--records")
    launch = launch_options(args, records / JOBS_FOLDER)
    if args.action == "run":  # parts trained elsewhere that now cover a cell's seeds
        for _, run in runs:
            benchmark_runs.merge_parts(run, keep_parts=args.keep_parts)
    if args.action == "measure":
        benchmark_costs.measure_cells(runs, records, again=args.again)
    rows, todo, summary = benchmark_runs.status(runs, benchmark_costs.read_costs(records))
    header = ["tier", "cell", "seeds x steps", "state", "training time"]
    jobs_seen = _job_states(records / JOBS_FOLDER)
    if jobs_seen:  # cells launched as jobs (--launcher): the scheduler's word on each
        header.append("job")
        for row in rows:
            row.append(jobs_seen.get(row[1], ""))
    print(format_table(header, rows))
    print(summary)
    if args.action != "run" or not todo:
        return 0
    if launch is not None:
        return _launch_cells(args, todo, records, launch)
    from marl.run.train import execute

    train = execute.train_run
    if args.no_checkpoint:  # results do not depend on checkpoints; only resuming does

        def train(run):
            return execute.train_run(dataclasses.replace(run, checkpoint=False, resume=False))

    todo = benchmark_runs.cheapest_first(todo, benchmark_costs.read_costs(records))
    if args.part:  # seeds a..b-1 of each cell left, joined once parts cover its seeds
        try:
            failed = benchmark_runs.run_cells(
                benchmark_runs.parts_of(todo, benchmark_runs.parse_part(args.part)), train
            )
        except benchmark.BenchmarkError as e:
            raise UsageError(str(e)) from None
        for _, run in todo:
            benchmark_runs.merge_parts(run, keep_parts=args.keep_parts)
    else:
        failed = benchmark_runs.run_cells(todo, train)
    for cell, error in failed:
        print(f"failed: {cell.key}: {error}", file=sys.stderr)
    return 1 if failed else 0


def _verify(args: argparse.Namespace) -> int:
    """`marl benchmark verify NAME --only CELL [--seeds K]` (`marl.run.campaigns.verify`)."""
    from marl.run.campaigns import benchmark, verify
    from marl.run.train import execute

    if args.algo or args.launcher:
        raise UsageError("verify re-runs the benchmark's own cells: no --algo or --launcher")
    if not args.only:
        raise UsageError("verify: name the cells with --only TASK/LEARNER (a cell re-runs whole)")
    d = benchmark.load(args.name)
    chosen = benchmark.cells(d, args.tier, args.only)
    if not chosen:
        raise UsageError(f"--only {' '.join(args.only)}: no cell of {args.name} matches")
    scratch = Path(args.records or f"runs/verify-{d['name']}")
    own = Path(d["records"]).resolve()
    if scratch.resolve() == own or scratch.resolve().is_relative_to(own):
        raise UsageError(f"--records {scratch}: the benchmark's own records; give one of yours")
    output_dir(str(scratch), "--records")
    outcomes = verify.verify_cells(d, chosen, scratch, args.seeds, execute.train_run)
    path = verify.log_path(d)
    if path is not None and outcomes:
        verify.write_log(path, outcomes)
        print(f"kept in {path}")
    return 1 if any(o["verdict"].startswith("failed") for o in outcomes) else 0


JOBS_FOLDER = ".jobs"  # in the records folder: the launcher's logs and jobs.json (untracked)


def _job_states(folder: Path) -> dict[str, str]:
    """Each launched cell's job state ("slurm 123 RUNNING"), by cell name; {} without jobs."""
    from marl.run.campaigns.launch_records import job_state, read_jobs

    out = {}
    for key, entry in read_jobs(folder).items():
        cell = key.split("#", 1)[0]
        out[cell] = f"{entry.get('launcher')} {entry.get('job_id')} {job_state(entry, folder)}"
    return out


def _launch_cells(args: argparse.Namespace, todo: list, records: Path, opts: Any) -> int:
    """`marl benchmark run --launcher`: each cell left (or each --part of it) as a job."""
    from marl.run.campaigns import benchmark, benchmark_costs, benchmark_runs, launch

    costs, cells_left = benchmark_costs.read_costs(records), todo
    if args.part:
        try:
            todo = benchmark_runs.parts_of(todo, benchmark_runs.parse_part(args.part))
        except benchmark.BenchmarkError as e:
            raise UsageError(str(e)) from None
    allow = (*(args.algo or ()), *(args.allow_import or ()))
    jobs = []
    for cell, run in todo:
        estimate = benchmark_costs.estimate_s(run, costs.get(cell.key))
        if cell.part is not None and estimate is not None:
            estimate *= (cell.part[1] - cell.part[0]) / cell.seeds
        key = cell.key + (f"#{cell.part[0]}:{cell.part[1]}" if cell.part else "")
        target = launch.TrainJob(tuple(cell.overrides()), allow, not args.no_checkpoint)
        jobs.append(launch.Job(key, target, estimate))
    print(f"{len(jobs)} job(s) to {opts.launcher}; logs and jobs.json in {opts.folder}")
    try:
        failed = launch.launch(jobs, opts)
    except KeyboardInterrupt:
        print(
            "interrupted: the running jobs were stopped; the same command resumes each cell "
            "after its last saved segment",
            file=sys.stderr,
        )
        return 130
    if opts.launcher == "local":  # parts that now cover a cell's seeds
        for _, run in cells_left:
            benchmark_runs.merge_parts(run, keep_parts=args.keep_parts)
    elif not failed:
        print("`marl benchmark status` shows the cells and their jobs")
    for key, error in failed:
        print(f"failed: {key}: {error}", file=sys.stderr)
    return 1 if failed else 0


DEFAULT_RECORDS = ("results/benchmark/v1", "results/external")
DEFAULT_CONTESTS = ("results/crossplay",)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """Rank algorithms per task and overall; writes leaderboard.md, .json and .html."""
    import yaml

    from marl.results.contests import read_contests
    from marl.results.files import read_json
    from marl.results.leaderboard import write_leaderboard
    from marl.results.published import SHIPPED, read_published
    from marl.run.saved.study import load_study

    if args.out is None:  # never into results/ unasked: the committed leaderboard lives there
        raise UsageError(
            "--out DIR is required: the folder for leaderboard.md, .json and .html (the "
            "committed leaderboard is regenerated with --out results)"
        )
    runs = args.runs or [p for p in DEFAULT_RECORDS if os.path.isdir(p)]
    if not runs:
        raise UsageError(f"no records given and none of {', '.join(DEFAULT_RECORDS)} exists")
    output_dir(args.out, "--out")
    if args.site:
        output_dir(args.site, "--site")
    definition, declared, notes, verified = None, None, {}, {}
    from marl.run.campaigns import benchmark, benchmark_runs
    from marl.run.campaigns.entrants import implied, refusal_hint

    if args.benchmark is None:  # never a flag users forget: a benchmark's own records imply it
        args.benchmark = implied(runs)
        if args.benchmark:
            print(
                f"scored as benchmark {args.benchmark}: its records ({', '.join(runs)}) are "
                "among these (--benchmark none: no benchmark)"
            )
    elif args.benchmark == "none":
        args.benchmark = None
    if args.benchmark:
        from marl.results.scoring import declared_scoring
        from marl.run.campaigns import benchmark_notes, verify

        try:
            definition = benchmark.load(args.benchmark)
            declared = declared_scoring(definition)
            notes = benchmark_notes.notes(args.benchmark)
            verified = verify.read_log(verify.log_path(definition))
        except (benchmark.BenchmarkError, ValueError) as e:
            raise UsageError(f"--benchmark {args.benchmark}: {e}") from None

    study = load_study(
        runs,
        args.metric,
        hint=lambda e: refusal_hint(e, runs, args.benchmark),
        declared=declared,
        drop_bad=args.drop_bad,
    )
    given = [*args.runs, "--out", args.out]  # what regenerates the files
    if args.metric != "episode_return":
        given += ["--metric", args.metric]
    if args.reps != REPS:
        given += ["--reps", str(args.reps)]
    if args.seed:
        given += ["--seed", str(args.seed)]
    crossplay = args.crossplay or [p for p in DEFAULT_CONTESTS if os.path.isdir(p)]
    if args.crossplay:
        given += [a for p in args.crossplay for a in ("--crossplay", p)]
    try:
        contests = read_contests(crossplay)
    except ValueError as e:
        raise UsageError(str(e)) from None
    published = []
    if args.published:
        given += ["--published", args.published]
    if args.published != "none":
        try:
            published = read_published(args.published or SHIPPED)
        except (OSError, ValueError, yaml.YAMLError) as e:
            raise UsageError(f"--published: {e}") from None
    cov = None
    if definition is not None:
        from marl.core.registry import files_are_data

        try:
            with files_are_data(args.allow_import or ()):
                cov = benchmark_runs.coverage(definition, study)
        except benchmark.BenchmarkError as e:
            raise UsageError(str(e)) from None
        given += ["--benchmark", args.benchmark]
    command = "marl leaderboard " + " ".join(given)
    paths = write_leaderboard(
        study,
        args.out,
        reps=args.reps,
        seed=args.seed,
        command=command,
        contests=contests,
        published=published,
        coverage=cov,
        notes=notes,
        verified=verified,
    )
    held = (
        ""
        if cov is None
        else (
            f", {sum(r['held'] for r in cov['cells'])} of {len(cov['cells'])} cells of benchmark "
            f"{cov['benchmark']}"
        )
    )
    print(
        f"{len(study.tasks)} task(s), {len(study.algorithms)} algorithm(s), {len(contests)} "
        f"contest(s){held}; wrote {paths['md']}"
    )
    _say_flags(read_json(paths["json"]), notes, args.benchmark)
    if args.site:
        _write_site(args, study, given, published, cov, notes, verified)
    return 0


def _say_flags(board: dict[str, Any], notes: dict[str, str], name: str | None) -> None:
    """Print each flag of the board's flagged cells (`marl.results.flags`) with its meaning;
    warn of flagged cells without an explanation and of explanations of cells on the board
    that carry no flag."""
    from marl.results.flags import cell_id, flag_lines, flagged, unexplained

    for line in flag_lines(board):
        print(f"flagged: {line}")
    where = "marl/conf/benchmark/notes/<benchmark>.yaml"
    if name:
        from marl.run.campaigns.benchmark_notes import notes_path

        where = str(notes_path(name))
    missing = unexplained(board)
    if missing:
        print(
            f"warning: {len(missing)} flagged cell(s) without an explanation: "
            f"{'; '.join(missing)} (explain each in {where})",
            file=sys.stderr,
        )
    marked = {cell for cell, _ in flagged(board)}
    on_board = {cell_id(t, r["algorithm"]) for t, d in board["tasks"].items() for r in d["rows"]}
    stale = sorted(c for c in notes if c in on_board and c not in marked)
    if stale:
        print(
            f"warning: explained but not flagged: {'; '.join(stale)} (drop it from {where})",
            file=sys.stderr,
        )


def _write_site(
    args: argparse.Namespace,
    study: Any,
    given: list[str],
    published: list,
    cov: Any,
    notes: dict[str, str],
    verified: dict[str, Any],
) -> None:
    """`marl leaderboard --site DIR`: the static site (`marl.results.site`), which names the
    command that regenerates it (the leaderboard's, with its --site)."""
    from marl.results.site import write_site

    command = " ".join(["marl leaderboard", *given, "--site", args.site])
    index = write_site(
        study,
        args.site,
        reps=args.reps,
        seed=args.seed,
        published=published,
        coverage=cov,
        command=command,
        notes=notes,
        verified=verified,
    )
    print(f"wrote the site {index}")
