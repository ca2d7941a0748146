"""The argparse subcommands of `marl` that read records and write results: `report`,
`leaderboard` and `crossplay`, each bound to its `cmd_*`."""

from __future__ import annotations

import argparse

from marl.cli.args import add_allow_import, at_least
from marl.cli.benchmark import cmd_leaderboard
from marl.cli.commands import cmd_crossplay, cmd_report
from marl.results.stats import REPS


def add_report(sub: argparse._SubParsersAction) -> None:
    """`marl report`: aggregate run records into a report."""
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


def add_leaderboard(sub: argparse._SubParsersAction) -> None:
    """`marl leaderboard`: rank algorithms per task and overall."""
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
    add_allow_import(p)
    p.set_defaults(func=cmd_leaderboard)


def add_crossplay(sub: argparse._SubParsersAction) -> None:
    """`marl crossplay`: saved policies of different runs play each other."""
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
    add_allow_import(p)
    p.set_defaults(func=cmd_crossplay)
