"""The argparse subcommands of `marl` that list, time, render and re-evaluate environments and
policies: `list`, `bench`, `render` and `eval`, each bound to its `cmd_*`."""

from __future__ import annotations

import argparse

from marl.cli.args import (
    BENCH_STEPS,
    DEFAULT_NUM_ENVS,
    PEERS,
    SUITE_AGENTS,
    add_allow_import,
    at_least,
)
from marl.cli.commands import cmd_bench, cmd_eval, cmd_list, cmd_render


def add_list(sub: argparse._SubParsersAction) -> None:
    """`marl list`: the registered environments and algorithms."""
    p = sub.add_parser("list", help="list registered environments and algorithms")
    p.add_argument("--family", help="only this family (e.g. particle)")
    p.set_defaults(func=cmd_list)


def add_bench(sub: argparse._SubParsersAction) -> None:
    """`marl bench`: environment (or training) steps per second."""
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


def add_render(sub: argparse._SubParsersAction) -> None:
    """`marl render`: a GIF of one episode."""
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
    add_allow_import(p)
    p.set_defaults(func=cmd_render)


def add_eval(sub: argparse._SubParsersAction) -> None:
    """`marl eval`: re-evaluate a finished run's saved parameters."""
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
    add_allow_import(p)
    p.set_defaults(func=cmd_eval)
