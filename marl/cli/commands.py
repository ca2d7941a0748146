"""The `marl` commands: each checks its arguments, calls the layers below (`marl.run`,
`marl.results`, `marl.bench`) and prints; user-fixable errors are one-line `UsageError`s.
`marl benchmark` and `marl leaderboard` are in `marl.cli.benchmark`."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from marl.cli.args import (
    BENCH_STEPS,
    PEERS,
    SUITE_AGENTS,
    build_env,
    launch_options,
    output_dir,
    output_file,
    parse_ints,
    parse_sets,
)
from marl.results.tables import format_table
from marl.run.errors import UsageError


def cmd_list(args: argparse.Namespace) -> int:
    """Registered environment ids with agent count, action space and episode limit."""
    from marl.core.registry import list_algorithms, list_envs
    from marl.run.train.catalog import describe_algorithm, env_rows

    families = sorted({e.split("/")[0] for e in list_envs()})
    if args.family is not None and args.family not in families:
        raise UsageError(f"unknown family {args.family!r}; valid: {', '.join(families)}")
    rows = env_rows(args.family)
    print(format_table(("id", "agents", "actions", "episode_limit"), rows))
    print("\nalgorithms:")
    names = list_algorithms()
    width = max(map(len, names), default=0)
    for name in names:
        print(f"  {name.ljust(width)}  {describe_algorithm(name, 96 - width)}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Compose and validate the config, train every seed, write the run directory."""
    from marl.run.train.command import train_command

    return train_command(args.overrides, dry_run=args.dry_run)


def cmd_report(args: argparse.Namespace) -> int:
    """Aggregate run records into report.md, report.html (self-contained) and report.json;
    records of a task under different protocols or budgets go to sections of their own."""
    from marl.results.protocol import RecordError, load, skip_reason
    from marl.results.report import write_sectioned_report
    from marl.run.saved.study import RegisteredTasks, say_dropped

    output_dir(args.out, "--out")
    skipped: list[Path] = []
    dropped: list[str] | None = [] if args.drop_bad else None
    try:
        records = load(args.runs, skipped, dropped)
        say_dropped(dropped)
        if not records:
            unfinished = f"; unfinished: {', '.join(map(str, skipped))}" if skipped else ""
            raise RecordError(f"no finished run records found{unfinished}")
        for path in skipped:
            print(f"skipped {skip_reason(path)}: {path}", flush=True)
        paths, studies = write_sectioned_report(
            records,
            args.out,
            title=args.title,
            metric=args.metric,
            reps=args.reps,
            seed=args.seed,
            facts=RegisteredTasks(),
        )
    except RecordError as e:
        raise UsageError(str(e)) from None
    from marl.results.files import read_json
    from marl.results.flags import flag_lines
    from marl.results.report import few_seeds_warning

    for k, study in enumerate(studies, 1):
        where = f"section {k}: " if len(studies) > 1 else ""
        print(
            f"{where}{len(study.tasks)} task(s), {len(study.algorithms)} algorithm(s) "
            f"({', '.join(study.algorithms)})"
        )
        warning = few_seeds_warning(study)
        if warning:
            print(f"warning: {where}{warning}", file=sys.stderr)
        folder = Path(args.out) / (f"section-{k}" if len(studies) > 1 else "")
        for line in flag_lines(read_json(folder / "report.json")):
            print(f"flagged: {where}{line}")
    print(f"wrote {paths['md']}, {paths['html']}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Train every combination of comma-separated overrides, then write one report."""
    if args.report is not None:
        output_dir(args.report, "--report")
    from marl.run.campaigns.sweep import run_sweep

    return run_sweep(args.overrides, args.report, launch_options(args, Path(".jobs")))


def cmd_merge(args: argparse.Namespace) -> int:
    """`marl merge PART... --out DIR`: one run's parts (`part=a:b`) joined into the whole run."""
    from marl.run.campaigns.parts import merge

    dest = merge([Path(p) for p in args.parts], Path(args.out), remove_parts=args.remove)
    print(f"merged {len(args.parts)} parts into {dest}")
    return 0


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
    from marl.bench import peers as bench

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
    peer_name = ""
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
    records = bench.bench_table(
        env, args.env_id, sizes, args.steps, args.seed, args.repeats, args.vs, peer_name, kwargs
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=2)
    return 0


def cmd_bench_suite(args: argparse.Namespace) -> int:
    """`marl bench --suite [PARTS]`: environments, training loops and agent scaling."""
    from marl.bench import suite as benchsuite
    from marl.bench import suite_tables

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
            json.dump(suite_tables.merge_records(old, results, command), f, indent=2, default=str)
    if args.out:
        suite_tables.write_markdown(args.out, results, command)
        print(f"wrote {args.out}")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    """Play one episode with random valid actions and write it as a GIF."""
    import jax

    from marl.run.saved.render import render_episode, save_gif, viewer

    if Path(args.out).suffix.lower() != ".gif":
        raise UsageError(f"--out {args.out}: give a .gif file path")
    output_file(args.out, "--out")
    if args.params is None and (args.final or args.seed_index):
        raise UsageError("--final and --seed-index choose a run's parameters: add --params")
    if Path(args.env_id).is_dir():  # a run folder where the env id goes
        raise UsageError(_folder_for_env(args.env_id, args.out))
    env = build_env(args.env_id, parse_sets(args.set))
    try:
        viewer(env)
    except NotImplementedError as e:
        raise UsageError(str(e)) from None
    trained, who = None, "random valid actions"
    if args.params is not None:
        allow = [*(args.allow_import or ()), args.env_id]  # the env named on the command line
        saved = _load_saved(args.params, "final" if args.final else "best", allow)
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


def _folder_for_env(folder: str, out: str) -> str:
    """The error for a folder given as `marl render`'s env id: the command that renders a run
    (its env id read from its config.yaml as bounded data, where it names one)."""
    from marl.results.files import read_yaml

    env_id = "ENV_ID"
    try:
        found = read_yaml(Path(folder) / "config.yaml")["env"]["id"]
        if isinstance(found, str) and found.isprintable():
            env_id = found
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return (
        f"{folder} is a folder, not an environment id; to watch a run's policy: "
        f"marl render {env_id} --params {folder} --out {out}"
    )


def _load_saved(path: str, which: str, allow: Any = (), algo: Any = None) -> Any:
    from marl.run.saved.restore import SavedRunError, load

    try:
        return load(path, which, allow, algo)
    except SavedRunError as e:
        raise UsageError(str(e)) from None


def cmd_eval(args: argparse.Namespace) -> int:
    """Re-evaluate a finished run's saved parameters (every seed) on fresh episodes."""
    from marl.results.files import write_json
    from marl.run.saved.restore import evaluate_saved

    output_file(args.json, "--json")
    algo = parse_sets(args.algo, "--algo")
    which = "final" if args.final else "best"
    saved = _load_saved(args.run_dir, which, args.allow_import or (), algo)
    label = ("final" if args.final else "best evaluated") + "".join(
        f", {k}={v}" for k, v in algo.items()
    )
    summary = evaluate_saved(saved, args.episodes, args.seed, label)
    if args.json:
        out = {"run": str(saved.path), "episodes": args.episodes, "algo": algo, **summary}
        write_json(Path(args.json), out)
    return 0


def cmd_crossplay(args: argparse.Namespace) -> int:
    """Play saved policies of different runs against each other; write the cross-play record."""
    import shlex

    from marl.run.saved.crossplay import (
        crossplay,
        load_players,
        rating_lines,
        record_dir,
        score_lines,
        write_record,
    )

    which = "best" if args.best else "final"
    env, task, players = load_players(args.players, args.task, which, args.allow_import or ())
    print(
        f"cross-play on {task.name}: {len(players)} players "
        f"({', '.join(f'{p.name} x {p.seeds}' for p in players)}), {args.episodes} episodes per "
        f"seat and pair of seeds, {which} parameters",
        flush=True,
    )
    record = crossplay(env, task, players, args.episodes, args.seed, which, args.reps)
    given = [*args.players, *(["--task", args.task] if args.task else [])]
    given += ["--episodes", str(args.episodes), "--seed", str(args.seed), "--reps", str(args.reps)]
    given += [f"--{which}", "--out", args.out]
    command = "marl crossplay " + " ".join(shlex.quote(a) for a in given)
    paths = write_record(record, record_dir(Path(args.out), task), command)
    print("ratings (Elo scale, 95% bootstrap interval over seeds):")
    print("\n".join(rating_lines(record)))
    print("mean score of the first player (a draw counting half, 95% bootstrap interval):")
    print("\n".join(score_lines(record)))
    print("wrote " + ", ".join(map(str, paths)))
    return 0
