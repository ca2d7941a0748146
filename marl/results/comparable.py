"""Which records compare: the protocol settings, budgets and learner settings that records of
one task (or of one algorithm on a task) must share before a report pools or ranks them.

`check_comparable` refuses records that cannot be compared, in one line naming the setting
that differs and the command that trains matching records; `split_comparable` splits them into
sections of one protocol and budget each instead (`marl report`). Records of one nominal budget
whose env steps differ by at most `protocol.BUDGET_RTOL` of it (each learner rounds the budget
to its own update size) compare on their final scores.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from marl.results.protocol import BUDGET_RTOL, Record, RecordError, Run

# protocol settings that must agree between records compared on one task
COMPARABLE = ("version", "eval_episodes", "absolute_episodes", "metric")
# learner settings that change only how fast an update runs (the same loss), so runs differing
# in them are still one algorithm; every other `algo.*` key must agree between pooled runs
SPEED_ONLY = ("unroll_buckets", "pack_episodes")


def check_comparable(records: Sequence[Record]) -> None:
    """Refuse records of one task made under different protocol settings or budgets, and
    records of one algorithm on one task trained with different settings.

    Compared between the marl records of a task: `COMPARABLE` protocol fields, the env steps
    trained and the evaluation step grid's length, and the environment's keywords; between the
    marl records of one algorithm name on a task, every `algo.*` setting but `SPEED_ONLY`, and
    their root seeds (two records from one root seed hold the same runs); between all records
    of one algorithm on a task, the evaluation steps (their curves are pooled step by step).
    External records are checked on what their data shows (episodes per evaluation and
    absolute metric), and a run an external file holds again is refused (`_check_copies`).
    """
    found = _first_mismatch(records, lambda r: r.env_id, _differences)
    if found:
        _, _, _, _, ref, other = found
        raise _protocol_refusal(ref.env_id, ref, other)
    found = _first_mismatch(
        records, lambda r: None if r.external else (r.env_id, r.algorithm), _algo_differences
    )
    if found:
        (task, algo), key, a, b, ref, other = found
        raise RecordError(
            f"records of {algo} on {task} were trained with different settings: "
            f"algo.{key} is {a!r} in {ref.path} but {b!r} in {other.path}; pooled runs "
            "must share their settings (report them separately, or train a variant "
            f"with label=NAME, e.g. label={algo}-{key}, to rank it as its own algorithm)"
        )
    found = _first_mismatch(records, lambda r: (r.env_id, r.algorithm), _grid_differences)
    if found:
        (task, algo), _, (k, a), (_, b), ref, other = found
        raise RecordError(
            f"records of {algo} on {task} evaluate at different steps: evaluation {k} is at "
            f"step {a} in {ref.path} but {b} in {other.path}; their curves cannot be pooled "
            "(train both with one protocol.eval_interval, or report them separately)"
        )
    seen: dict[tuple[str, str, Any], Record] = {}
    for r in records:  # seed k of a run is split(key(seed), seeds)[k], whatever `seeds` is
        seed = None if r.external else ((r.meta or {}).get("config") or {}).get("seed")
        if seed is None:
            continue
        first = seen.setdefault((r.env_id, r.algorithm, seed), r)
        if first is not r:
            raise RecordError(
                f"{first.path} and {r.path} both hold {r.algorithm} on {r.env_id} trained "
                f"from root seed {seed}: the same runs would count twice; keep one, or train "
                "the other with another seed="
            )
    _check_copies(records)


def _fingerprint(run: Run) -> bytes:
    """A digest of a run's data: its steps and every metric's values, absolute ones too."""
    h = hashlib.sha256(np.ascontiguousarray(run.steps, np.int64).tobytes())
    for kind, values in (("eval", run.metrics), ("absolute", run.absolute)):
        for name in sorted(values):
            h.update(f"{kind}/{name}".encode())
            h.update(np.ascontiguousarray(values[name], np.float64).tobytes())
    return h.digest()


def _check_copies(records: Sequence[Record]) -> None:
    """Refuse a run whose data two files hold where one of them is external (a marl record
    passed again as another framework's file): the seed check cannot see external records."""
    seen: dict[tuple[str, bytes], tuple[Record, Run]] = {}
    for r in records:
        for run in r.runs:
            first, first_run = seen.setdefault((r.env_id, _fingerprint(run)), (r, run))
            if first is not r and (r.external or first.external):
                raise RecordError(
                    f"{first.path} ({first.algorithm} {first_run.name}) and {r.path} "
                    f"({r.algorithm} {run.name}) hold the same run on {r.env_id}: the same "
                    "runs would count twice; keep one"
                )


def _protocol_refusal(task: str, ref: Record, other: Record) -> RecordError:
    """One line naming what really differs between two records of `task`: the env version
    first, then the nominal budget (with each side's seeds), a protocol field, the evaluation
    grid or the env steps of one budget; and what else differs. Env steps and evaluation
    counts follow from the budget and grid, and are named as those."""
    found = {k: (a, b) for k, a, b in _differences(ref, other)}
    budgets = ((ref.meta or {}).get("budget"), (other.meta or {}).get("budget"))
    two_budgets = None not in budgets and not _same(*budgets)
    names: list[str] = []
    for k in found:
        if k in ("env steps", "evaluations"):
            k = "budget" if two_budgets else "evaluation grid" if "evaluations" in found else k
        if k not in names:
            names.append(k)
    key = next((k for k in ("env version", "budget") if k in names), names[0])
    also = [k for k in names if k != key]
    pair = (ref, other)
    if key == "env version":
        a, b = found[key]
        return RecordError(
            f"records of {task} were made on different versions of its env, {a!r} in "
            f"{ref.path} and {b!r} in {other.path}{_also(also, ref, other)}: the env's "
            "behaviour changed between them; re-run the older cells on the current env",
            pair,
            key,
        )
    if key == "budget":
        return RecordError(
            f"records of {task} were trained to different budgets: {_budget(budgets[0])} env "
            f"steps x {len(ref.runs)} seeds in {ref.path} but {_budget(budgets[1])} x "
            f"{len(other.runs)} seeds in {other.path}{_also(also, ref, other, seeds=False)}; "
            "the leaderboard ranks one budget per task (`marl report` puts each in a section "
            "of its own)",
            pair,
            key,
        )
    rounding = (
        "learners round the evaluation interval to their own update sizes: train both with "
        "one protocol.eval_interval, a multiple of both (`marl train --dry-run` shows a "
        "learner's update; `marl sweep` and `marl benchmark run` pin one themselves)"
    )
    if key == "evaluation grid":
        return RecordError(
            f"records of {task} were evaluated on different grids: {_grid(ref)} in {ref.path} "
            f"but {_grid(other)} in {other.path}{_also(also, ref, other)}; {rounding}",
            pair,
            key,
        )
    a, b = found[key]
    hint = rounding if key == "env steps" else "re-run one side, or report them separately"
    return RecordError(
        f"records of {task} were made under different protocols: {key} is {a!r} in "
        f"{ref.path} but {b!r} in {other.path}{_also(also, ref, other)}; compare runs of "
        f"one protocol ({hint})",
        pair,
        key,
    )


def _also(names: Sequence[str], ref: Record, other: Record, seeds: bool = True) -> str:
    """` (they also differ in budget, protocol.eval_episodes; 10 and 3 seeds)`, or empty."""
    bits = [f"they also differ in {', '.join(names)}"] if names else []
    n, m = len(ref.runs), len(other.runs)
    if seeds and n != m:
        bits.append(f"{n} and {m} seeds")
    return f" ({'; '.join(bits)})" if bits else ""


def _budget(value: Any) -> str:
    """A nominal budget as configs write it: 1e6, 2e5, 1.5e6 (exact integers otherwise)."""
    x = float(value)
    short = f"{x:.3g}".replace("e+0", "e").replace("e+", "e")
    return short if float(short) == x else f"{int(x):,}" if x.is_integer() else str(value)


def _grid(r: Record) -> str:
    """`21 evaluations every 49,152 steps to 1,032,192`: a record's evaluation step grid."""
    steps = [int(s) for s in r.runs[0].steps]
    every = f" every {steps[1] - steps[0]:,} steps" if len(steps) > 1 else ""
    return f"{len(steps)} evaluations{every} to {steps[-1]:,}"


Differences = Callable[[Record, Record], list[tuple[str, Any, Any]]]


@dataclass
class Section:
    """Records that compare: for each task, the records made under one protocol and budget.
    `kept_apart`: (task, setting, this section's value, the first section's value) for each
    task whose records differ from the first section's."""

    records: list[Record]
    kept_apart: list[tuple[str, str, Any, Any]]


def split_comparable(records: Sequence[Record]) -> list[Section]:
    """Records split into sections of one protocol and budget per task (what
    `check_comparable` refuses to mix): each task's records fall into classes of equal
    settings, largest first; section j holds class j of every task that has one. One section
    where nothing differs."""
    by_task: dict[str, list[list[Record]]] = {}
    for r in records:
        classes = by_task.setdefault(r.env_id, [])
        for members in classes:
            if not _differences(members[0], r):
                members.append(r)
                break
        else:
            classes.append([r])
    for classes in by_task.values():  # stable: largest class first, then first seen
        classes.sort(key=lambda members: -len(members))
    sections = []
    for j in range(max((len(c) for c in by_task.values()), default=0)):
        chosen = [(task, c[j]) for task, c in by_task.items() if len(c) > j]
        kept = [
            (task, key, b, a)
            for task, members in chosen
            if j > 0
            for key, a, b in _differences(by_task[task][0][0], members[0])
        ]
        sections.append(Section([r for _, members in chosen for r in members], kept))
    return sections


def _first_mismatch(
    records: Sequence[Record], group_of: Callable[[Record], Any], differences: Differences
) -> tuple[Any, str, Any, Any, Record, Record] | None:
    """The first setting on which a record differs from the first of its group (`group_of`;
    None: not compared): (group, key, reference value, value, reference, record), or None."""
    groups: dict[Any, list[Record]] = {}
    for r in records:
        group = group_of(r)
        if group is not None:
            groups.setdefault(group, []).append(r)
    for group, members in groups.items():
        ref = members[0]
        for other in members[1:]:
            for key, a, b in differences(ref, other):
                return group, key, a, b, ref, other
    return None


def _settings(r: Record) -> dict[str, Any]:
    p = r.protocol
    out: dict[str, Any] = {}
    if r.meta is not None:
        out.update({f"protocol.{k}": p.get(k) for k in COMPARABLE})
        out["env steps"] = r.meta.get("env_steps")
        out["env.kwargs"] = (r.meta.get("config") or {}).get("env", {}).get("kwargs", {})
        if r.meta.get("env_version") is not None:  # records from before versions say none
            out["env version"] = (r.meta["env_version"] or {}).get("version")
    else:
        out["protocol.eval_episodes"] = p.get("eval_episodes")
        if "absolute_episodes" in p:
            out["protocol.absolute_episodes"] = p["absolute_episodes"]
    out["evaluations"] = len(r.runs[0].steps)
    out["env steps"] = out.get("env steps") or int(r.runs[0].steps[-1])
    # scores are the absolute metric where a record has one, else its last evaluation: a task
    # must not rank one kind against the other
    out["absolute metric"] = bool(r.runs[0].absolute)
    return out


def _differences(a: Record, b: Record) -> list[tuple[str, Any, Any]]:
    sa, sb = _settings(a), _settings(b)
    if _one_budget(a, b):  # steps and evaluation counts rounded to each learner's update
        for key in ("env steps", "evaluations"):
            del sa[key], sb[key]
    return _changed(sa, sb)


def _one_budget(a: Record, b: Record) -> bool:
    """Two marl records of one nominal budget whose env steps differ by `BUDGET_RTOL` of it at
    most."""
    if a.meta is None or b.meta is None:
        return False
    budget, other = a.meta.get("budget"), b.meta.get("budget")
    mine, theirs = a.meta.get("env_steps"), b.meta.get("env_steps")
    if budget is None or other is None or mine is None or theirs is None:
        return False
    return _same(budget, other) and abs(mine - theirs) <= BUDGET_RTOL * float(budget)


def _grid_differences(a: Record, b: Record) -> list[tuple[str, Any, Any]]:
    """The first evaluation at which two records' step grids differ, as ((k, a's step),
    (k, b's step)); grids of the same length (`_differences` compares lengths first)."""
    for k, (sa, sb) in enumerate(zip(a.runs[0].steps, b.runs[0].steps, strict=False)):
        if int(sa) != int(sb):
            return [("evaluation steps", (k, int(sa)), (k, int(sb)))]
    return []


def _algo_differences(a: Record, b: Record) -> list[tuple[str, Any, Any]]:
    """`algo.*` settings two marl records both state and set differently (`SPEED_ONLY` aside;
    a key one record lacks, added to the learner after it was made, is not compared)."""
    ca = ((a.meta or {}).get("config") or {}).get("algo") or {}
    cb = ((b.meta or {}).get("config") or {}).get("algo") or {}
    return _changed(ca, cb, skip=SPEED_ONLY)


def _changed(
    a: dict[str, Any], b: dict[str, Any], skip: Sequence[str] = ()
) -> list[tuple[str, Any, Any]]:
    """(key, a's value, b's value) for the keys both hold with different values."""
    return [(k, a[k], b[k]) for k in a if k in b and k not in skip and not _same(a[k], b[k])]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b))
        except (TypeError, ValueError):
            return False
    if isinstance(a, (int, str)) and isinstance(b, (int, str)):
        return str(a) == str(b)
    return a == b
