"""Flags on a cell (one learner on one task) whose score is not the task's answer, each with its
one-line meaning, and the explanations attached to flagged cells.

The rules, read off the cell's records and the board's numbers (`report.summarise`'s row):

- never learned: on at least half of the seeds (`NEVER_LEARNED_SHARE`) whose sidecar names
  the best step, the best evaluation (by the protocol's metric) is the first one, at step 0
  before any update; the score is then the untrained policy's.
- collapsed: the mean over seeds of the final evaluation's score lies below the mean score of
  the best parameters (the board's `best - final`) by more than `COLLAPSE`, in score units:
  a fraction of the random-to-reference span on an anchored task, of the natural unit's 0 to 1
  on a natural one (1 - the metric where lower is better), so the direction is the score's.
  On v1 the learners that hold their level stay within 0.14 of it (smacv2_5_units, whose
  curves wander on 32 evaluation episodes a seed), the three that fall late lie 0.20 to 0.34
  below it: 0.15 lies between.
- not above random: the score's 95% CI ends at or below the random policy's score: 0 on an
  anchored task (its random anchor), 0 on a natural unit too (the unit's floor: no policy,
  the random one included, scores below it; natural units carry no random anchor); or the
  CI of the absolute metric's mean (the return) ends at or below the records' random anchor
  (the random policy's return, measured by `marl train`), in the metric's direction.

Explanations are data: a YAML mapping of cell id (`task/algo`) to one paragraph
(`read_notes`, `yaml.safe_load`; nothing in it is run). Benchmark v1's live in
`marl/conf/benchmark/notes/v1.yaml` (`marl.run.campaigns.benchmark_notes`);
`unexplained(board)` names the flagged cells that have none.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from marl.results.study import Study

NEVER_LEARNED = "never learned"
COLLAPSED = "collapsed"
NOT_ABOVE_RANDOM = "not above random"
NEVER_LEARNED_SHARE = 0.5  # of the seeds whose best step is known
COLLAPSE = 0.15  # score units: of the random-to-reference span, or of a natural unit's 0 to 1
NOTES_BYTES = 1 << 20  # the most a notes file may hold
FLOOR = 1e-9  # a score CI ending this close to 0 ends at 0

MEANINGS = {
    NEVER_LEARNED: "the best evaluation is the first (step 0, before any update) on at least "
    "half of the seeds: the score is the untrained policy's",
    COLLAPSED: f"the final evaluation scores more than {COLLAPSE:g} (of the random-to-reference "
    "span, or of a natural unit's 0 to 1) below the best parameters, mean over seeds",
    NOT_ABOVE_RANDOM: "the score's 95% CI ends at or below the random policy's (0: the random "
    "anchor, or a natural unit's floor), or the return's at or below the random anchor",
}


def cell_flags(study: Study, task: str, algo: str, row: dict[str, Any]) -> list[dict[str, str]]:
    """The flags of `algo` on `task`, each `{flag, detail}` (`detail`: the numbers behind it);
    `row`: the cell's numbers as `marl.results.report.summarise` computes them."""
    entry = study.entries[(task, algo)]
    out = []
    first, known = 0, 0
    for record in entry.records:
        best = (record.meta or {}).get("best_step")
        if not isinstance(best, list):
            continue
        for step, run in zip(best, record.runs, strict=False):
            if isinstance(step, (int, float)) and not isinstance(step, bool):
                known += 1
                first += int(step) <= int(run.steps[0])
    if known and first >= NEVER_LEARNED_SHARE * known:
        out.append(
            {
                "flag": NEVER_LEARNED,
                "detail": f"best evaluation at step 0 on {first} of {known} seeds",
            }
        )
    collapse = row.get("collapse")
    if collapse is not None and collapse > COLLAPSE:
        final = row["final_score"]
        out.append(
            {
                "flag": COLLAPSED,
                "detail": f"score {final + collapse:.3f} at the best parameters, {final:.3f} at "
                f"the final evaluation",
            }
        )
    below = []
    iqm = row.get("normalised_iqm")
    if iqm is not None and iqm["high"] <= FLOOR:
        below.append(f"score IQM {_ci(iqm)}")
    anchors = study.anchors.get(task)
    if anchors is not None:
        mean = row["absolute_mean"]
        lower = study.lower.get(task, False)
        if (mean["low"] >= anchors.random) if lower else (mean["high"] <= anchors.random):
            metric = study.metric.replace("_", " ")
            below.append(f"{metric} {_ci(mean)}, random {anchors.random:.4g}")
    if below:
        out.append({"flag": NOT_ABOVE_RANDOM, "detail": "; ".join(below)})
    return out


def _ci(iv: dict[str, float]) -> str:
    return f"{iv['point']:.3g} [{iv['low']:.3g}, {iv['high']:.3g}]"


def flag_text(flags: list[dict[str, str]], meanings: bool = True) -> str:
    """`never learned (best evaluation at step 0 on 5 of 5 seeds: the best evaluation is ...)`
    for each flag, `; `-joined; without `meanings` the details only."""
    return "; ".join(
        f"{f['flag']} ({f['detail']}" + (f": {MEANINGS[f['flag']]})" if meanings else ")")
        for f in flags
    )


def names(flags: list[dict[str, str]]) -> str:
    """`never learned, not above random`."""
    return ", ".join(f["flag"] for f in flags)


def read_notes(path: str | Path) -> dict[str, str]:
    """Explanations: cell id (`task/algo`) -> one paragraph (its whitespace folded), from a YAML
    mapping read as data (`yaml.safe_load`); a ValueError naming the file where it is not one."""
    from marl.results.files import read_yaml

    path = Path(path)
    data = read_yaml(path, limit=NOTES_BYTES) or {}  # bounded: a few paragraphs, no aliases
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of cell (task/algo) to explanation")
    out = {}
    for cell, text in data.items():
        if not isinstance(cell, str) or "/" not in cell:
            raise ValueError(f"{path}: {cell!r}: expected a cell id, task/algo")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{path}: {cell}: expected a paragraph of text")
        out[cell] = " ".join(text.split())
    return out


def cell_id(task: str, algo: str) -> str:
    return f"{task}/{algo}"


def flagged(board: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(cell id, row) of every flagged cell of a board (`marl.results.leaderboard`) or of a
    summary's tasks (`marl.results.report.summarise`), in task order, then rank."""
    out = []
    for task, data in board["tasks"].items():
        rows = data.get("rows")
        if rows is None:  # a summary: algorithm -> row
            rows = [{"algorithm": a, **r} for a, r in data["algorithms"].items()]
        out += [(cell_id(task, r["algorithm"]), r) for r in rows if r.get("flags")]
    return out


def flag_lines(board: dict[str, Any]) -> list[str]:
    """One line per flag of every flagged cell, with its numbers and its meaning, as the
    commands print them: `<cell>: never learned (best evaluation at step 0 on 5 of 5 seeds):
    the best evaluation is the first ...`."""
    return [
        f"{cell}: {f['flag']} ({f['detail']}): {MEANINGS[f['flag']]}"
        for cell, row in flagged(board)
        for f in row["flags"]
    ]


def unexplained(board: dict[str, Any]) -> list[str]:
    """The cell ids of a board's flagged cells that carry no explanation."""
    return [cell for cell, row in flagged(board) if not row.get("explanation")]


def report_summary(summary: dict[str, Any]) -> list[str]:
    """`marl report`'s lines naming the flagged cells of `summary` (none: no lines)."""
    marked = flagged(summary)
    if not marked:
        return []
    cells = "; ".join(f"{cell} ({names(row['flags'])})" for cell, row in marked)
    return [
        f"**Flagged:** {len(marked)} cell(s) whose score is not the task's answer "
        f"(`marl.results.flags`; each task's table says why): {cells}.",
        "",
    ]


def report_notes(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A task table's lines after it: each flagged learner's flags with their meanings."""
    notes = [f"Flagged: {algo}: {flag_text(row['flags'])}." for algo, row in rows if row["flags"]]
    return ["", *notes] if notes else []
