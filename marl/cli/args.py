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


def build_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """`marl.make` with its failures turned into one-line usage errors."""
    from marl.run import config

    try:
        return config.make_env(env_id, kwargs)
    except config.ConfigError as e:
        raise UsageError(str(e)) from None
