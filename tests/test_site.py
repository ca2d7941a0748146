"""The leaderboard's static site (`marl.results.site`): byte-for-byte regeneration, links and
images that resolve on the file system, raw records linked or copied, the `--site` command.
The browser checks are in tests/test_site_browser.py (`-m slow`)."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

from test_protocol import write_run

from marl import cli
from marl.results.published import read_published
from marl.results.site import write_site
from marl.results.study import load_study

ROOT = Path(__file__).resolve().parent.parent
V1 = ROOT / "results" / "benchmark" / "v1"
# four committed cells, two families; no learner ran both tasks
CELLS = ("combat/3m/iql", "combat/3m/qmix", "particle/spread/ippo", "particle/spread/mappo")
COVERAGE = {
    "benchmark": "v1",
    "cells": [
        {"cell": "combat/3m/iql", "tier": "cpu", "held": True},
        {"cell": "combat/3m/qmix", "tier": "cpu", "held": True},
        {"cell": "particle/spread/ippo", "tier": "gpu", "held": True},
        {"cell": "particle/spread/mappo", "tier": "gpu", "held": True},
    ],
}
REPS = 100


def committed_study():
    return load_study([V1 / c for c in CELLS])


def write_committed(out: Path) -> Path:
    """The site of the four committed cells (shared with the browser test)."""
    return write_site(
        committed_study(),
        out,
        reps=REPS,
        published=read_published(),
        coverage=COVERAGE,
        command="marl leaderboard (test)",
    )


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def local_refs(page: Path) -> list[Path]:
    """The files a page's href and src attributes name (other schemes and anchors left out)."""
    refs = re.findall(r'(?:href|src)="([^"]*)"', page.read_text())
    out = []
    for ref in refs:
        url = urlsplit(ref)
        if url.scheme or not url.path:
            continue
        out.append(page.parent / unquote(url.path))
    return out


def test_site_regenerates_byte_for_byte(tmp_path):
    a = write_committed(tmp_path / "a" / "site").parent
    (a / "tasks" / "mine.html").write_text("the user's own page")
    gone = a / "cells" / "combat_3m" / "old.html"  # an earlier writing's cell, marl's
    gone.write_text("an earlier cell")
    manifest = json.loads((a / ".marl-written.json").read_text())
    manifest["files"]["cells/combat_3m/old.html"] = hashlib.sha256(b"an earlier cell").hexdigest()
    (a / ".marl-written.json").write_text(json.dumps(manifest))
    write_committed(a)  # rewriting removes marl's earlier files it no longer writes
    assert not gone.exists() and (a / "tasks" / "mine.html").read_text() == "the user's own page"
    (a / "tasks" / "mine.html").unlink()
    b = write_committed(tmp_path / "b" / "site").parent
    first, second = files(a), files(b)
    assert first == second
    names = set(first)
    assert {"index.html", "assets/site.js", "assets/site.css"} <= names
    assert {"tasks/combat_3m.html", "tasks/particle_spread.html"} <= names
    assert {"cells/combat_3m/qmix.html", "figures/particle_spread.png"} <= names
    # the data inside the site, the raw records named, never copied
    assert {"data/cells.csv", "data/seeds.csv", "data/cells/combat_3m/qmix.json"} <= names
    assert "groups.html" in names and not any(n.startswith("records/") for n in names)
    assert not any(name.endswith(".tmp") for name in names)


def test_every_link_and_image_resolves_and_pages_say_what_a_cell_is(tmp_path):
    index = write_committed(tmp_path / "site")
    site = index.parent
    pages = sorted(site.rglob("*.html"))
    assert len(pages) == 1 + 1 + 2 + 4  # overview, groups, tasks, cells
    for page in pages:
        for ref in local_refs(page):
            assert ref.is_file(), f"{page.relative_to(site)} names a missing {ref}"
            assert ref.resolve().is_relative_to(site.resolve()), f"{page} links outside: {ref}"
    overview = index.read_text()
    assert "data:image" not in overview and "http" not in overview.replace("http-equiv", "")
    assert overview.count('<tr data-family="combat" data-tier="cpu">') == 1
    assert 'data-filter="family"' in overview and 'data-filter="tier"' in overview
    cell = (site / "cells/combat_3m/qmix.html").read_text()
    for fact in ("d2f78608b51e426026011c8463457a94a9675d78", "inferred", "mixing_embed_dim",
                 "jaxlib", "cpu, 2 cores", "run_4", "Download", "<svg class=\"seeds\"",
                 "marl benchmark verify v1 --only combat/3m/qmix<",
                 "None kept: the cell was trained before parameters were kept"):  # fmt: skip
        assert fact in cell, fact
    task = (site / "tasks/particle_spread.html").read_text()
    assert '<img src="../figures/particle_spread.png"' in task
    assert "Peers' published figures" in task and "JaxMARL" in task


def test_the_site_carries_its_data_and_names_the_raw_records(tmp_path):
    """Every cell's seeds (values and curves) as JSON, every cell and seed as CSV, inside the
    site; the raw records named by path, never linked outside the folder."""
    write_run(tmp_path / "runs", env_id="particle/spread", algo="ippo", seed=1)
    write_run(tmp_path / "runs", env_id="particle/spread", algo="mappo", shift=1.0, seed=2)
    study = load_study([tmp_path / "runs"])
    index = write_site(study, tmp_path / "site", reps=REPS)
    site = index.parent
    assert not (site / "records").exists()
    cell = site / "cells/particle_spread/ippo.html"
    assert all(p.resolve().is_relative_to(site.resolve()) for p in local_refs(cell))
    assert str(tmp_path / "runs/particle/spread/ippo/run") in cell.read_text()
    data = json.loads((site / "data/cells/particle_spread/ippo.json").read_text())
    assert [s["run"] for s in data["seeds"]] == ["run_0", "run_1", "run_2"]
    assert len(data["seeds"][0]["curve"]["steps"]) == len(
        data["seeds"][0]["curve"]["episode_return"]
    )
    rows = list(csv.DictReader(io.StringIO((site / "data/cells.csv").read_text())))
    assert [(r["task"], r["learner"]) for r in rows] == [
        ("particle/spread", "ippo"),
        ("particle/spread", "mappo"),
    ]
    seeds = list(csv.DictReader(io.StringIO((site / "data/seeds.csv").read_text())))
    assert len(seeds) == 6 and {r["learner"] for r in seeds} == {"ippo", "mappo"}
    overview = index.read_text()
    assert 'href="data/cells.csv"' in overview and 'href="data/seeds.csv"' in overview


def test_leaderboard_site_option_writes_the_site_and_names_its_command(tmp_path):
    write_run(tmp_path / "runs", env_id="particle/spread", algo="ippo", seed=1)
    write_run(tmp_path / "runs", env_id="particle/spread", algo="mappo", shift=1.0, seed=2)
    site, board = tmp_path / "site", tmp_path / "board"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(
            ["leaderboard", str(tmp_path / "runs"), "--out", str(board), "--reps", "50",
             "--published", "none", "--site", str(site)]
        )  # fmt: skip
    assert code == 0 and "wrote the site" in buf.getvalue()
    assert (board / "leaderboard.md").exists()
    overview = (site / "index.html").read_text()
    assert (
        f"<code>marl leaderboard {tmp_path / 'runs'} --out {board} --reps 50 --published none "
        f"--site {site}</code>" in overview
    )


def test_site_option_refuses_a_file(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    write_run(tmp_path / "runs", env_id="particle/spread", algo="ippo", seed=1)
    code = cli.main(
        ["leaderboard", str(tmp_path / "runs"), "--out", str(tmp_path / "board"), "--site",
         str(tmp_path / "taken")]
    )  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("exists and is not a directory")
    assert not (tmp_path / "board").exists()  # refused before any work


def test_the_citation_on_the_site_is_citation_cff():
    """The BibTeX the site shows and CITATION.cff at the top level say the same; a LICENSE
    stands beside them."""
    import yaml

    from marl.results.site_html import BIBTEX

    root = Path(__file__).resolve().parent.parent
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    assert cff["title"].replace("JAX", "{JAX}") in BIBTEX
    assert f"version = {{{cff['version']}}}" in BIBTEX and cff["license"] in BIBTEX
    assert "Apache License" in (root / "LICENSE").read_text()
    import marl

    assert cff["version"] == marl.__version__


def test_a_cell_with_parameters_names_them_and_the_eval_command(tmp_path):
    index = write_site(load_study([V1 / "combat/3m/il"]), tmp_path / "site", reps=REPS)
    page = (index.parent / "cells/combat_3m/il.html").read_text()
    folder = V1 / "combat/3m/il/v1"
    assert str(folder / "best_params.f16.msgpack.gz") in page
    assert f"marl eval {folder} --episodes 320" in page


def test_records_made_at_one_instant_still_make_a_site(tmp_path):
    """Two cells whose metas share a `created` time (parts merged together) tie on the sort
    key; the site was an "unexpected TypeError" (comparing the metas) before."""
    for cell in CELLS[:2]:
        dst = tmp_path / cell
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(V1 / cell, dst)
        meta = json.loads((dst / "v1" / "meta.json").read_text())
        meta["created"] = "2026-12-06T23:08:11+00:00"
        (dst / "v1" / "meta.json").write_text(json.dumps(meta))
    study = load_study([tmp_path / c for c in CELLS[:2]])
    index = write_site(study, tmp_path / "site", reps=REPS, command="marl leaderboard (test)")
    assert "records trained 2026-12-06 to 2026-12-06" in index.read_text()


def test_a_merged_cells_times_say_they_are_its_parts_sum(tmp_path):
    """A run trained in parts (`marl merge`) shows its parts' summed wall and compile time:
    the cell page's label says so, a run trained whole keeps the plain label."""
    index = write_committed(tmp_path / "site")
    merged = (index.parent / "cells/combat_3m/iql.html").read_text()
    whole = (index.parent / "cells/particle_spread/ippo.html").read_text()
    assert "wall time, summed over 5 parts" in merged
    assert "compile time, summed over 5 parts" in merged
    assert "summed over" not in whole and "wall time" in whole
