"""Argument helpers of the `marl` command line: values, lists and output paths checked before
any work, each failure a one-line `UsageError`."""

from __future__ import annotations

import argparse
import ast
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from marl.run.errors import UsageError

PEERS = ("jaxmarl", "camar")
DEFAULT_NUM_ENVS = "1,64,1024,4096"
BENCH_STEPS = 1000  # steps per env per timed call of `marl bench ENV`
SUITE_AGENTS = "3,10,30,100,300,1000"  # `marl bench --suite scaling` agent counts
HELP_ALLOW = (
    "trust this import path where a file read back names it (an env or learner of yours); "
    "files are data and import nothing otherwise (repeatable)"
)


def add_allow_import(p: argparse.ArgumentParser) -> None:
    """`--allow-import MODULE:ATTR` (repeatable): the import paths a file read back may name."""
    p.add_argument("--allow-import", action="append", metavar="MODULE:ATTR", help=HELP_ALLOW)


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
    """Check a directory to write into before any work: it may not be an existing file, and
    it, or the nearest folder above it that exists, must be writable (nothing is created)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {path} exists and is not a directory")
    there = p.absolute()
    while not there.exists() and there != there.parent:
        there = there.parent
    if not there.is_dir():
        raise UsageError(f"{option} {path} cannot be created: {there} is not a directory")
    if not os.access(there, os.W_OK | os.X_OK):
        made = "is not writable" if there == p.absolute() else f"cannot be created in {there}"
        raise UsageError(f"{option} {path} {made} (no permission, or a read-only file system)")
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


def parse_sets(items: Sequence[str] | None, option: str = "--set") -> dict[str, Any]:
    """`["k=v", ...]` (the values of `option`) -> `{k: parse_value(v)}`."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} expects key=value, got {item!r}")
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


def build_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """`marl.make` with its failures turned into one-line usage errors."""
    from marl.run.errors import ConfigError
    from marl.run.train.lookup import make_env

    try:
        return make_env(env_id, kwargs)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def add_launcher_args(p: argparse.ArgumentParser, what: str) -> None:
    """The `--launcher` options of `marl benchmark run` and `marl sweep`
    (`marl.run.campaigns.launch`)."""
    g = p.add_argument_group(
        "launcher",
        f'{what} as scheduler jobs through submitit (pip install -e ".[cluster]"); flags '
        "override --launcher-config's keys",
    )
    g.add_argument(
        "--launcher",
        choices=("local", "slurm"),
        help="slurm: one Slurm job each (submitted, then this command returns); local: the "
        "same jobs as local processes (this command waits)",
    )
    g.add_argument(
        "--jobs",
        type=at_least(1),
        help="at most N jobs at once (default: local the CPU count; Slurm unlimited)",
    )
    g.add_argument(
        "--launcher-config",
        metavar="YAML",
        help="a yaml file of the options below "
        "(keys: partition, account, qos, constraint, gpus_per_job, cpus_per_job, "
        "mem_gb, time_limit_min, setup, additional, jobs)",
    )
    g.add_argument("--partition", help="Slurm partition")
    g.add_argument("--account", help="Slurm account")
    g.add_argument("--gpus-per-job", type=at_least(0), help="GPUs of each job (default 0)")
    g.add_argument("--cpus-per-job", type=at_least(1), help="CPUs of each job")
    g.add_argument("--mem-gb", type=float, help="memory of each job, GB")
    g.add_argument(
        "--time-limit",
        type=at_least(1),
        metavar="MIN",
        help="every job's time limit in minutes (default: the run's measured cost x 2 + 15; "
        "24 h unmeasured); a job that reaches it is requeued and resumes",
    )


LAUNCHER_FLAGS = (
    "jobs",
    "launcher_config",
    "partition",
    "account",
    "gpus_per_job",
    "cpus_per_job",
    "mem_gb",
    "time_limit",
)


def check_launcher_flags(args: argparse.Namespace) -> None:
    """Launcher options without --launcher fail in one line, before any work."""
    if getattr(args, "launcher", None):
        return
    given = [
        f"--{f.replace('_', '-')}" for f in LAUNCHER_FLAGS if getattr(args, f, None) is not None
    ]
    if given:
        raise UsageError(f"{', '.join(given)}: only with --launcher local|slurm")


def launch_options(args: argparse.Namespace, folder: Path) -> Any:
    """`marl.run.campaigns.launch_options.LaunchOptions` from the launcher flags (None without
    --launcher)."""
    check_launcher_flags(args)
    if not getattr(args, "launcher", None):
        return None
    from marl.run.campaigns.launch_options import options

    return options(
        args.launcher,
        folder,
        args.launcher_config,
        jobs=args.jobs,
        partition=args.partition,
        account=args.account,
        gpus_per_job=args.gpus_per_job,
        cpus_per_job=args.cpus_per_job,
        mem_gb=args.mem_gb,
        time_limit_min=args.time_limit,
    )
