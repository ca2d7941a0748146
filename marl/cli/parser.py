"""The argparse parser of `marl`: one subcommand per job, each bound to its `commands.cmd_*`.
The training subcommands (`train`, `sweep`, `benchmark`, `merge`) are built here; those of
results (`parser_results`) and of environments and policies (`parser_envs`) there."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from marl import __version__
from marl.cli.args import add_allow_import, add_launcher_args
from marl.cli.benchmark import cmd_benchmark
from marl.cli.commands import cmd_merge, cmd_sweep, cmd_train
from marl.cli.parser_envs import add_bench, add_eval, add_list, add_render
from marl.cli.parser_results import add_crossplay, add_leaderboard, add_report


def train(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """`marl train`'s command: `--help` prints the usual help plus the config groups and the
    keys of the chosen env, learner and protocol (wherever `--help` stands among the overrides,
    so `marl train algo=qmix --help` lists QMIX's keys); otherwise it trains."""

    def run(args: argparse.Namespace) -> int:
        if args.help:
            from marl.run.train.catalog import describe

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
        "--keep-parts",
        action="store_true",
        help="run: keep the parts' folders once merged into the cell's run (they are removed "
        "otherwise)",
    )
    add_allow_import(p)
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

    add_report(sub)
    add_leaderboard(sub)
    add_list(sub)
    add_bench(sub)
    add_render(sub)
    add_eval(sub)
    add_crossplay(sub)
    return parser
