"""The leaderboard's competitive section: per contest task, the ratings and the head-to-head
matrix of its cross-play record (`crossplay.json`, written by `marl crossplay`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from marl.results import plots
from marl.results.ranks import shared_ranks

RECORD = "crossplay.json"
CONTEST_RULE = (
    "Players are listed by rating; each shares the rank of the player above it unless its "
    "interval lies wholly below the interval of the first player holding that rank, where it "
    "opens a new rank at its position (1, 2, 2, 4): a shared rank says the cross-play does not "
    "separate the players (`marl.results.ranks`)."
)


def read_contests(folders: list[str | Path]) -> list[dict[str, Any]]:
    """Every cross-play record under `folders`, sorted by task; two records of one task are
    refused (one line naming both), since the section shows one table per task."""
    found: dict[str, tuple[Path, dict[str, Any]]] = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob(RECORD)):
            record = _checked(path, json.loads(path.read_text()))
            task = record["task"]
            if task in found:
                raise ValueError(
                    f"two cross-play records of {task}: {found[task][0]} and {path}; keep one"
                )
            found[task] = (path, record)
    return [found[t][1] for t in sorted(found)]


def _checked(path: Path, record: Any) -> dict[str, Any]:
    """A cross-play record whose ratings are finite numbers and whose matrix holds scores in
    [0, 1] (or null); a ValueError naming the file and the field otherwise (NaN ratings were
    ranked)."""
    if not isinstance(record, dict) or not isinstance(record.get("task"), str):
        raise ValueError(f"{path}: not a cross-play record (no task)")
    ratings = record.get("ratings")
    if not isinstance(ratings, list) or not ratings:
        raise ValueError(f"{path}: ratings: expected a list of players' ratings")
    for k, r in enumerate(ratings):
        for key in ("elo", "low", "high"):
            v = r.get(key) if isinstance(r, dict) else None
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v):
                raise ValueError(f"{path}: ratings[{k}].{key}: expected a finite number, got {v!r}")
    for key in ("score", "low", "high"):
        rows = (record.get("matrix") or {}).get(key)
        cells = [x for row in rows for x in row] if isinstance(rows, list) else [None, "missing"]
        if any(
            x is not None
            and (isinstance(x, bool) or not isinstance(x, int | float) or not 0 <= x <= 1)
            for x in cells
        ):
            raise ValueError(f"{path}: matrix.{key}: expected scores in [0, 1] or null")
    return record


def pair_scores(record: dict[str, Any]) -> list[tuple[str, str, float, float, float]]:
    """(a, b, mean score, low, high) of every pair that met, a before b in the record's player
    order: the first player's mean score with its bootstrap interval, as `matrix` holds it."""
    names = [r["name"] for r in record["ratings"]]
    score, low, high = (_matrix(record, k) for k in ("score", "low", "high"))
    return [
        (a, names[j], score[i, j], low[i, j], high[i, j])
        for i, a in enumerate(names)
        for j in range(i + 1, len(names))
        if not np.isnan(score[i, j])
    ]


def _pair_rows(record: dict[str, Any]) -> list[str]:
    """The pairs' table: win / draw / loss of the first player and its mean score with the
    bootstrap interval (`pair_scores`)."""
    pairs = record.get("pairs")
    played = {
        (p["a"], p["b"]): p
        for p in (pairs if isinstance(pairs, list) else [])
        if isinstance(p, dict) and isinstance(p.get("a"), str) and isinstance(p.get("b"), str)
    }

    def rate(pair: dict[str, Any], key: str) -> str:
        v = pair.get(key)
        ok = isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1
        return f"{v:.1%}" if ok else "-"

    rows = ["| pair | win | draw | loss | mean score [95% CI] |", "|---|---|---|---|---|"]
    for a, b, point, low, high in pair_scores(record):
        pair = played.get((a, b), {})
        rows.append(
            f"| {a} vs {b} | {rate(pair, 'win')} | {rate(pair, 'draw')} | {rate(pair, 'loss')} "
            f"| {point:.2f} [{low:.2f}, {high:.2f}] |"
        )
    return rows


def slug(task: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in task).strip("_")


def _matrix(record: dict[str, Any], key: str) -> np.ndarray:
    rows = record["matrix"][key]
    return np.array([[np.nan if x is None else x for x in row] for row in rows], dtype=float)


def head_to_head_figure(record: dict[str, Any], path: Path) -> Path:
    """A cross-play record's head-to-head matrix, drawn from the record."""
    names = [p["name"] for p in record["players"]]
    score, low, high = (_matrix(record, k) for k in ("score", "low", "high"))
    title = f"Cross-play on {record['task']}"
    return plots.head_to_head(names, score, low, high, path, title=title)


def contest_figures(records: list[dict[str, Any]], fig_dir: Path) -> dict[str, Path]:
    """The head-to-head figure of each record; name -> path."""
    return {
        f"contest/{r['task']}": head_to_head_figure(r, fig_dir / f"crossplay_{slug(r['task'])}.png")
        for r in records
    }


def contests_markdown(records: list[dict[str, Any]], figs: dict[str, str]) -> list[str]:
    """Markdown lines: one section per contest task (ratings best first, the pairs, then the
    matrix)."""
    if not records:
        return []
    lines = [
        "# Competitive tasks",
        "",
        "Saved policies of different runs meet head to head (`marl crossplay`): every seed "
        "against every seed, in both seats, on fixed evaluation keys, greedy. Ratings are a "
        "Bradley-Terry fit on the Elo scale (mean 0; +191 Elo is a 75% expected score), with "
        "95% bootstrap intervals over each player's seeds; the matrix gives row against column "
        "(1 a win, 0.5 a draw). " + CONTEST_RULE,
        "",
    ]
    for record in records:
        proto = record["protocol"]
        n_players = {p["name"]: p for p in record["players"]}
        means = np.nanmean(_matrix(record, "score"), axis=1)
        lines += [
            f"## {record['task']}",
            "",
            f"Sides: {' vs '.join(record['groups'])}; {proto['episodes']} episodes per seat and "
            f"pair of seeds, {proto['params']} parameters. Regenerated by `{record['command']}`.",
            "",
            "| rank | player | Elo [95% CI] | seeds | mean score against the others |",
            "|---|---|---|---|---|",
        ]
        index = {r["name"]: k for k, r in enumerate(record["ratings"])}
        intervals = {
            r["name"]: {"point": r["elo"], "low": r["low"], "high": r["high"]}
            for r in record["ratings"]
        }
        for name, rank in shared_ranks(intervals):
            k = index[name]
            r = record["ratings"][k]
            lines.append(
                f"| {rank} | {r['name']} | {r['elo']:+.0f} [{r['low']:+.0f}, {r['high']:+.0f}] "
                f"| {n_players[r['name']]['seeds']} | {means[k]:.2f} |"
            )
        lines += ["", *_pair_rows(record), ""]
        key = f"contest/{record['task']}"
        if key in figs:
            lines += [f"![head to head: {record['task']}]({figs[key]})", ""]
    return lines
