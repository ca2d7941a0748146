"""Reports: records in, normalised aggregates, plots, Markdown and HTML out.

```
records (marl.results.protocol.load)  ->  marl.results.study.collect: entries, anchors
                              ->  normalise: (score - random) / (reference - random)
                              ->  marl.results.stats: IQM, mean, median, optimality gap, profiles,
                                  P(improvement), sample efficiency, stratified bootstrap CIs
                              ->  marl.results.plots figures; report.md, self-contained report.html,
                                  report.json  (write_report)
                              ->  leaderboard.md/.json/.html (marl.results.leaderboard)
```

The numbers are `report_numbers`', the figures `report_figures`', the Markdown and HTML pages
`report_pages`'; this module writes reports, and re-exports the others' names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from marl.results import stats
from marl.results.comparable import split_comparable
from marl.results.files import atomic_write, write_json
from marl.results.protocol import Record
from marl.results.report_figures import FIGURE_TITLES, prune_figures, write_figures
from marl.results.report_numbers import (
    MIN_SEEDS,
    family_of,
    few_seeds,
    few_seeds_warning,
    summarise,
)
from marl.results.report_pages import fmt_ci, html_page, report_markdown
from marl.results.study import METRIC, Study, TaskFacts, collect

__all__ = [
    "FIGURE_TITLES",
    "MIN_SEEDS",
    "dumps",
    "family_of",
    "few_seeds",
    "few_seeds_warning",
    "fmt_ci",
    "html_page",
    "prune_figures",
    "summarise",
    "write_figures",
    "write_report",
    "write_sectioned_report",
]


def write_report(
    study: Study, out: str | Path, title: str = "marl report", reps: int = stats.REPS, seed: int = 0
) -> dict[str, Path]:
    """Write `report.md`, `report.html` (self-contained), `report.json` and `figures/` to `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(study, reps=reps, seed=seed)
    figs = write_figures(study, out, reps, seed)
    prune_figures(out / "figures", figs)
    markdown = report_markdown(summary, figs, out, title)
    atomic_write(out / "report.md", markdown + "\n")
    atomic_write(out / "report.html", html_page(markdown, figs, out, title))
    write_json(out / "report.json", summary)
    return {"md": out / "report.md", "html": out / "report.html", "json": out / "report.json"}


def write_sectioned_report(
    records: Sequence[Record],
    out: str | Path,
    title: str = "marl report",
    metric: str = METRIC,
    reps: int = stats.REPS,
    seed: int = 0,
    facts: TaskFacts | None = None,
) -> tuple[dict[str, Path], list[Study]]:
    """`write_report` over records that may mix protocols or budgets on a task: one report
    where they do not; otherwise each comparable section (`comparable.split_comparable`) in its
    own folder `section-K/`, and `report.md`/`.html`/`.json` in `out` an index saying which
    records were kept apart and why. -> (index paths, the sections' studies)."""
    sections = split_comparable(records)
    if len(sections) == 1:
        study = collect(records, metric=metric, facts=facts)
        return write_report(study, out, title=title, reps=reps, seed=seed), [study]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# {title}",
        "",
        f"Records of a task made under different protocols or budgets do not compare, so "
        f"this report has {len(sections)} sections, each a report of its own: section 1 holds "
        "each task's largest set of records that share their settings, the later sections "
        "the records kept apart from it.",
        "",
    ]
    studies, index = [], []
    for k, section in enumerate(sections, 1):
        study = collect(section.records, metric=metric, facts=facts)
        folder = f"section-{k}"
        write_report(study, out / folder, title=f"{title}: section {k}", reps=reps, seed=seed)
        studies.append(study)
        lines += [
            f"## Section {k}: [{folder}/report.md]({folder}/report.md)",
            "",
            f"{len(study.tasks)} task(s) ({', '.join(study.tasks)}), "
            f"{len(study.algorithms)} algorithm(s) ({', '.join(study.algorithms)}).",
            "",
        ]
        if section.kept_apart:
            lines += ["| task | setting | here | in section 1 |", "|---|---|---|---|"]
            lines += [f"| {t} | {key} | {a!r} | {b!r} |" for t, key, a, b in section.kept_apart]
            lines.append("")
        index.append(
            {
                "folder": folder,
                "tasks": study.tasks,
                "algorithms": study.algorithms,
                "kept_apart": [
                    {"task": t, "setting": key, "value": a, "first_section": b}
                    for t, key, a, b in section.kept_apart
                ],
            }
        )
    markdown = "\n".join(lines)
    atomic_write(out / "report.md", markdown + "\n")
    atomic_write(out / "report.html", html_page(markdown, {}, out, title))
    write_json(out / "report.json", {"metric": metric, "sections": index})
    paths = {"md": out / "report.md", "html": out / "report.html", "json": out / "report.json"}
    return paths, studies


def dumps(obj: Any) -> str:
    """JSON text of a summary (NumPy scalars converted)."""
    return json.dumps(obj, default=float, indent=1)
