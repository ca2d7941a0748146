"""The argparse parser of `marl`: one subcommand per job, each bound to its `commands.cmd_*`."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from marl import __version__
from marl.cli.args import (
    BENCH_STEPS,
    DEFAULT_NUM_ENVS,
    PEERS,
    SUITE_AGENTS,
    add_launcher_args,
    at_least,
)
from marl.cli.benchmark import cmd_benchmark, cmd_leaderboard
from marl.cli.commands import (
    cmd_bench,
    cmd_crossplay,
    cmd_eval,
    cmd_list,
    cmd_merge,
    cmd_render,
    cmd_report,
    cmd_sweep,
    cmd_train,
)
from marl.results.stats import REPS

HELP_ALLOW = (
    "trust this import path where a file read back names it (an env or learner of yours); "
    "files are data and import nothing otherwise (repeatable)"
)


def train(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """`marl train`'s command: `--help` prints the usual help plus the config groups and the
    keys of the chosen env, learner and protocol (wherever `--help` stands among the overrides,
    so `marl train algo=qmix --help` lists QMIX's keys); otherwise it trains."""

    def run(args: argparse.Namespace) -> int:
        if args.help:
            from marl.run.catalog import describe

            parser.epilog = describe(args.overrides)
            parser.print_help()
            parser.exit()
        return cmd_train(args)

    return run


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
        "the config tree marl/conf/; the run is written to <out>/<family>/<task>/<algo>/<name>/.",
        usage="marl train [-h] [--dry-run] [KEY=VALUE ...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    p.add_argument(
        "-h",
        "--help",
        action="store_true",
        help="show this help, the config options and the keys of the chosen env, learner and "
        "protocol (e.g. marl train algo=qmix --help)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the resolved config and exit")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="Hydra overrides, e.g. algo=ippo budget=1e6",
    )
    p.set_defaults(func=train(p))

    p = sub.add_parser(
        "sweep",
        help="train a grid of runs (comma-separated overrides), then write a report",
        description="Hydra multirun syntax: each comma-separated override is a sweep axis,\n"
        "e.g. `marl sweep env=particle/spread,particle/simple algo=ippo,mappo budget=2e5`.\n"
        "Seeds are vmapped inside each run. Runs already finished under the same name=\n"
        "are skipped, so a killed sweep resumes; the report goes to --report.\n\n"
        "vmap=algo.KEY:V1,V2,... (repeatable) trains the values of a learner setting x seeds\n"
        "as ONE vmapped program per run and writes one run directory per value\n"
        "(<name>-KEY_V, labelled <algo>-KEY_V), e.g. `marl sweep algo=ippo\n"
        "vmap=algo.lr:1e-4,3e-4,1e-3 name=lr`; several vmap= train their grid. Settings that\n"
        "shape the program (sizes, epochs, flags) cannot be vmapped and are refused before\n"
        "compiling; vmapped runs do not resume.",
        usage="marl sweep [-h] [--report DIR] KEY=VALUE[,VALUE...] ... [vmap=algo.KEY:V1,V2,...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--report", metavar="DIR", help="report directory (default <out>/report-<name>)")
    p.add_argument(
        "overrides",
        nargs="+",
        metavar="KEY=VALUE",
        help="Hydra overrides (comma-separated values: sweep axes) and vmap=algo.KEY:V1,V2,...",
    )
    add_launcher_args(p, "the sweep's runs")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "benchmark",
        help="a versioned benchmark's cells: what is left, its cost here, and running it",
        description="status: every cell's state (finished, unfinished, missing) and measured "
        "training time; measure: time a few updates of each cell on this machine (kept in "
        "<records>/costs.json); run: train the cells left, resuming unfinished ones; a cell "
        "that fails is reported and the others go on. list: the shipped benchmarks. With "
        "--algo, the cells are a learner of yours on the benchmark's tasks (each task's seeds, "
        "budget, protocol and evaluation grid), written to --records; then `marl leaderboard "
        "results/benchmark/v1 RECORDS --out DIR` ranks it beside the benchmark's learners. "
        "verify: re-run committed cells (--only; --seeds k of their seeds) at this code into "
        "--records (default runs/verify-NAME) and say whether each lands inside its committed "
        "interval; the outcome is kept in the benchmark's verification log.",
    )
    p.add_argument("action", choices=("list", "status", "measure", "run", "verify"))
    p.add_argument("name", nargs="?", default="v1", help="benchmark (default v1) or a yaml path")
    p.add_argument("--tier", default="all", help="cpu, gpu, ... or all (default)")
    p.add_argument(
        "--only", action="append", metavar="GLOB", help="cells task/learner matching (repeatable)"
    )
    p.add_argument(
        "--algo",
        action="append",
        metavar="LEARNER",
        help="a learner's cells: a registered name, an entry point's or an import path "
        "(my_pkg.mod:make_train); one the benchmark does not name enters every task once "
        "(repeatable; needs --records)",
    )
    p.add_argument(
        "--records",
        metavar="DIR",
        help="records folder of the cells (default: the benchmark's own; with --algo "
        "required, and never the benchmark's own)",
    )
    p.add_argument("--again", action="store_true", help="measure: re-measure measured cells")
    p.add_argument(
        "--seeds",
        type=int,
        metavar="K",
        help="verify: re-run the cell's first K seeds (default: all of them)",
    )
    p.add_argument(
        "--no-checkpoint",
        action="store_true",
        help="run: train without checkpoints (a cell cut short starts over; for a machine that "
        "is given back after the call, where a replay buffer's checkpoint costs GBs per segment)",
    )
    p.add_argument(
        "--part",
        metavar="A:B",
        help="run: train only seeds A..B-1 of each cell left (a long cell split across machines "
        "or days); a cell's parts are merged into its run once they cover its seeds",
    )
    p.add_argument(
        "--allow-import",
        action="append",
        metavar="MODULE:ATTR",
        help=HELP_ALLOW,
    )
    add_launcher_args(p, "run: the cells left (or each --part of them)")
    p.set_defaults(func=cmd_benchmark)

    p = sub.add_parser(
        "merge",
        help="join the parts of one run (trained with part=a:b) into the whole run",
        description="Each part trained seeds a..b-1 of the same run (marl train ... part=a:b); "
        "the merged run directory holds every seed, as if trained at once.",
    )
    p.add_argument("parts", nargs="+", help="the parts' run directories")
    p.add_argument("--out", required=True, help="the whole run's directory (must not hold a run)")
    p.add_argument("--remove", action="store_true", help="delete the parts' folders once merged")
    p.set_defaults(func=cmd_merge)

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
    p.add_argument(
        "--drop-bad",
        action="store_true",
        help="leave out a record holding NaN, Infinity or an absurd value, with a warning naming "
        "it (default: refuse it)",
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "leaderboard",
        help="rank algorithms per task and overall from run records",
        description="Default records: results/benchmark/v1 and results/external (marl-eval "
        "JSON from other frameworks, marked external).",
    )
    p.add_argument("runs", nargs="*", metavar="RUNS", help="run directories or record files")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (required; the committed leaderboard is regenerated with "
        "--out results)",
    )
    p.add_argument("--metric", default="episode_return", help="record metric to rank by")
    p.add_argument("--reps", type=at_least(1), default=REPS, help="bootstrap replicates")
    p.add_argument("--seed", type=at_least(0), default=0, help="bootstrap seed")
    p.add_argument(
        "--crossplay",
        action="append",
        metavar="DIR",
        help="cross-play records for the competitive section (default: results/crossplay)",
    )
    p.add_argument(
        "--published",
        metavar="FILE",
        help="peers' published figures shown beside the tasks they concern, marked external "
        "(default: the shipped marl/conf/published.yaml; 'none': leave them out)",
    )
    p.add_argument(
        "--benchmark",
        metavar="NAME",
        help="score as this benchmark definition (e.g. v1: its declared anchors and notes) and "
        "say which of its cells the records hold (default: the benchmark whose own records "
        "folder is given, e.g. results/benchmark/v1; 'none': no benchmark)",
    )
    p.add_argument(
        "--site",
        metavar="DIR",
        help="also write a static site there (overview, a page per task and per cell, figures "
        "as files; works from the file system): records under DIR's parent folder are linked, "
        "others copied in",
    )
    p.add_argument(
        "--drop-bad",
        action="store_true",
        help="leave out a record holding NaN, Infinity or an absurd value, with a warning naming "
        "it (default: refuse it)",
    )
    p.add_argument(
        "--allow-import",
        action="append",
        metavar="MODULE:ATTR",
        help=HELP_ALLOW,
    )
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
    p.add_argument(
        "--allow-import",
        action="append",
        metavar="MODULE:ATTR",
        help=HELP_ALLOW,
    )
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("eval", help="re-evaluate a finished run's saved parameters")
    p.add_argument("run_dir", help="a run directory written by marl train")
    p.add_argument("--episodes", type=at_least(1), default=320, help="greedy episodes per seed")
    p.add_argument("--seed", type=at_least(0), default=1, help="episode keys (training used 0)")
    p.add_argument("--final", action="store_true", help="final, not best evaluated, parameters")
    p.add_argument("--json", metavar="FILE", help="also write the per-seed means as JSON")
    p.add_argument(
        "--algo",
        action="append",
        metavar="KEY=VALUE",
        help="act with this learner value in place of the trained one, e.g. "
        "graph_ablation=zero (repeatable; the parameters must still fit)",
    )
    p.add_argument(
        "--allow-import",
        action="append",
        metavar="MODULE:ATTR",
        help=HELP_ALLOW,
    )
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "crossplay",
        help="saved policies of different runs play each other; ratings and a matrix",
        description="Every pair of players meets on fixed evaluation keys, every seed against\n"
        "every seed, in both seats. A player is a finished run directory of a contest task\n"
        "(combat with env.kwargs.opponent=self_play, particle/adversary) or a reference policy\n"
        "(scripted, random). Writes <out>/<family>/<task>/crossplay.json (win/draw/loss per\n"
        "pair, the score matrix and Elo-scale Bradley-Terry ratings with 95% bootstrap\n"
        "intervals over seeds) and crossplay.png. Runs play each seed's final parameters\n"
        "unless --best: a contest run's evaluations score it against itself, so the return\n"
        "that picks its best parameters does not rank its strength.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("players", nargs="+", help="run directories, or scripted / random")
    p.add_argument(
        "--task", help="the task when every player is a reference: combat/3m[opponent=self_play]"
    )
    p.add_argument("--episodes", type=at_least(1), default=32, help="episodes per seat, seed pair")
    p.add_argument("--seed", type=at_least(0), default=0, help="episode keys (and the bootstrap)")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--final",
        dest="best",
        action="store_false",
        default=False,
        help="play each seed's final parameters (the default)",
    )
    which.add_argument(
        "--best",
        action="store_true",
        help="play each seed's best evaluated parameters instead (in self-play that return "
        "scores a run against itself, not its strength)",
    )
    p.add_argument("--reps", type=at_least(1), default=REPS, help="bootstrap replicates")
    p.add_argument("--out", default="results/crossplay", help="records folder")
    p.add_argument(
        "--allow-import",
        action="append",
        metavar="MODULE:ATTR",
        help=HELP_ALLOW,
    )
    p.set_defaults(func=cmd_crossplay)
    return parser
