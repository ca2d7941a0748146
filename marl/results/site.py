"""The leaderboard as a static site that works from the file system (no network, no CDN):

```
OUT/index.html                 overview: tasks x learners, natural metric [95% CI], shaded;
                               sortable, filterable by family and tier (assets/site.js); the
                               flagged cells (`marl.results.flags`) marked and listed
OUT/groups.html                per group of tasks: ranking, aggregates, probability of
                               improvement; the scoring rule's sensitivity
OUT/tasks/<task>.html          curves in the natural unit against env steps, the ranking with
                               its flags and the peers' published figures beside
OUT/cells/<task>/<algo>.html   flags and their explanation, the commands that reproduce and
                               re-check it, config and hyperparameters, code, versions, device,
                               wall time, per-seed values and curves (inline SVG)
OUT/figures/<task>.png         figures as files
OUT/data/cells.csv, seeds.csv  every cell, every seed (the bulk download)
OUT/data/cells/<task>/<algo>.json  a cell's seeds: values and curves
```

Every link stays inside OUT, so a copy of the folder published alone keeps working; the raw
records are named by their path, not copied.

Records are read through the `Study`; the numbers come from one call, `site_scores`. Output is
deterministic (sorted, no timestamps), so the site regenerates byte for byte from its records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from marl.results import stats
from marl.results.files import atomic_write
from marl.results.published import Published
from marl.results.site_cell import cell_page
from marl.results.site_data import build_site, site_scores
from marl.results.site_files import CELLS_CSV, SEEDS_CSV, cell_json, cells_csv, seeds_csv
from marl.results.site_groups import PAGE as GROUPS
from marl.results.site_groups import groups_page
from marl.results.site_pages import overview_page, task_page
from marl.results.study import Study
from marl.results.written import prune

ASSETS = Path(__file__).resolve().parent / "site_assets"
ASSET_FILES = ("site.css", "site.js")
__all__ = ["build_site", "site_scores", "write_site"]


def write_site(
    study: Study,
    out: str | Path,
    *,
    reps: int = stats.REPS,
    seed: int = 0,
    published: Sequence[Published] = (),
    coverage: dict[str, Any] | None = None,
    command: str = "",
    notes: dict[str, str] | None = None,
    verified: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write the site into `out` (pages, figures, assets, data), remove the files an earlier
    writing of marl's left there and this one did not write (never a file of the user's:
    `marl.results.written`), and return `out/index.html`. `coverage`: the benchmark's cells
    (`marl.run.campaigns.benchmark_runs.coverage`), which give each cell its tier;
    `command`: what regenerates the site, shown on the overview; `notes`: explanations of
    flagged cells (cell id -> paragraph, `marl.results.flags`), on their pages."""
    site = build_site(
        study,
        out,
        reps=reps,
        seed=seed,
        published=published,
        coverage=coverage,
        command=command,
        notes=notes,
        verified=verified,
    )
    out = site.out
    written = set(site.figures.values())
    for name in ASSET_FILES:
        written.add(_write(out / "assets" / name, (ASSETS / name).read_bytes()))
    written.add(_write(out / "index.html", overview_page(site)))
    written.add(_write(out / GROUPS, groups_page(site)))
    for task in study.tasks:
        written.add(_write(out / site.task_page(task), task_page(site, task)))
    for cell in site.cells.values():
        written.add(_write(out / cell.page, cell_page(site, cell)))
        written.add(_write(out / cell.data, cell_json(site, cell)))
    written.add(_write(out / CELLS_CSV, cells_csv(site)))
    written.add(_write(out / SEEDS_CSV, seeds_csv(site)))
    prune(out, written)  # only marl's earlier files (`marl.results.written`)
    return out / "index.html"


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    return path
