"""Flags on cells whose score is not the task's answer (`marl.results.flags`): never learned,
collapsed, not above random; shown by `marl leaderboard`, its files and site, and by `marl
report`; explanations read as data, and every flagged cell of the committed board explained.
Records are synthetic (no training) except the committed board's."""

from __future__ import annotations

import contextlib
import html
import io
import json
from pathlib import Path

import numpy as np
import pytest

from marl import cli
from marl.results import flags
from marl.results.leaderboard import leaderboard
from marl.results.protocol import run_record
from marl.results.site import write_site
from marl.results.site_data import slug
from marl.results.study import load_study
from marl.run.campaigns import benchmark, benchmark_notes

ROOT = Path(__file__).resolve().parent.parent
STEPS = (0, 100, 200, 300)
SEEDS = 4
REPS = 100


def write_cell(root, algo, curve, best_step, absolute, env_id="particle/spread", meta=None):
    """A finished run folder of `algo`: each seed's mean return at each of STEPS (`curve`,
    tiny per-episode noise), each seed's best step, and its absolute return; the sidecar as
    `marl train` writes it (random anchor -3, reference 3)."""
    rng = np.random.default_rng(len(algo))
    evals = [
        {
            "return": value + 0.001 * rng.standard_normal((SEEDS, 4)),
            "length": np.full((SEEDS, 4), 25.0),
        }
        for value in curve
    ]
    final = {
        "return": absolute + 0.001 * rng.standard_normal((SEEDS, 40)),
        "length": np.full((SEEDS, 40), 25.0),
    }
    path = root / env_id / algo / "run"
    path.mkdir(parents=True)
    record = run_record(env_id, algo, list(STEPS), evals, final)
    (path / "record.json").write_text(json.dumps(record))
    sidecar = {
        "finished": True,
        "seeds": SEEDS,
        "protocol": {"version": "1", "eval_episodes": 4, "absolute_episodes": 40},
        "env_steps": STEPS[-1],
        "config": {"env": {"id": env_id, "kwargs": {}}, "algo": {"name": algo}},
        "anchors": {"random": -3.0, "reference": 3.0},
        "best_step": [int(best_step)] * SEEDS,
        **(meta or {}),
    }
    (path / "meta.json").write_text(json.dumps(sidecar))
    return path


def healthy(root):
    """Learns, holds it: the best evaluation is the last."""
    return write_cell(root, "good", [0.0, 1.0, 2.0, 2.5], 300, 2.5)


def stuck(root):
    """Never learns: every seed's best evaluation is step 0, the later ones a little lower."""
    return write_cell(root, "stuck", [0.0, -0.5, -0.5, -0.5], 0, 0.0)


def fallen(root):
    """Learns, then collapses: best 2.5 at step 200 (score 0.92), final -0.5 (score 0.42)."""
    return write_cell(root, "fallen", [0.0, 1.0, 2.5, -0.5], 200, 2.5)


def weak(root):
    """Below the random policy's return (-3) throughout."""
    return write_cell(root, "weak", [-3.5, -3.4, -3.3, -3.3], 300, -3.3)


def board_flags(board):
    return {
        (task, row["algorithm"]): [f["flag"] for f in row["flags"]]
        for task, data in board["tasks"].items()
        for row in data["rows"]
    }


def test_a_record_whose_best_step_is_0_on_every_seed_is_flagged_and_the_command_prints_it(
    tmp_path,
):
    """The known broken cell's shape (HAPPO on v1's pathfinding: best_step [0, 0, 0, 0, 0]):
    the board says it never learned, and `marl leaderboard` prints the flag and its meaning,
    and warns that it has no explanation."""
    healthy(tmp_path / "runs")
    stuck(tmp_path / "runs")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(
            ["leaderboard", str(tmp_path / "runs"), "--out", str(tmp_path / "board"),
             "--reps", str(REPS), "--published", "none"]
        )  # fmt: skip
    assert code == 0
    printed = out.getvalue()
    assert (
        "flagged: particle/spread/stuck: never learned (best evaluation at step 0 on 4 of 4 "
        f"seeds): {flags.MEANINGS[flags.NEVER_LEARNED]}" in printed
    )
    assert "particle/spread/good" not in printed  # the healthy cell is not flagged
    assert "1 flagged cell(s) without an explanation: particle/spread/stuck" in err.getvalue()
    board = json.loads((tmp_path / "board/leaderboard.json").read_text())
    assert board_flags(board) == {
        ("particle/spread", "good"): [],
        ("particle/spread", "stuck"): [flags.NEVER_LEARNED],
    }
    md = (tmp_path / "board/leaderboard.md").read_text()
    assert "## Flagged cells: 1" in md
    assert "particle/spread/stuck: never learned (best evaluation at step 0 on 4 of 4 seeds)" in md
    assert "| never learned |" in md  # the task's table
    assert "never learned" in (tmp_path / "board/leaderboard.html").read_text()


def test_half_the_seeds_at_step_0_is_enough_and_fewer_is_not(tmp_path):
    for algo, at_zero in (("half", 2), ("one", 1)):
        path = write_cell(tmp_path, algo, [0.0, 1.0, 2.0, 2.5], 300, 2.5)
        meta = json.loads((path / "meta.json").read_text())
        meta["best_step"] = [0] * at_zero + [300] * (SEEDS - at_zero)
        (path / "meta.json").write_text(json.dumps(meta))
    got = board_flags(leaderboard(load_study([tmp_path]), reps=REPS))
    assert got == {
        ("particle/spread", "half"): [flags.NEVER_LEARNED],
        ("particle/spread", "one"): [],
    }


def test_collapsed_and_below_random_cells_are_flagged_and_a_healthy_one_is_not(tmp_path):
    for make in (healthy, fallen, weak):
        make(tmp_path)
    board = leaderboard(load_study([tmp_path]), reps=REPS)
    assert board_flags(board) == {
        ("particle/spread", "good"): [],
        ("particle/spread", "fallen"): [flags.COLLAPSED],
        ("particle/spread", "weak"): [flags.NOT_ABOVE_RANDOM],
    }
    rows = {r["algorithm"]: r for r in board["tasks"]["particle/spread"]["rows"]}
    assert rows["fallen"]["collapse"] == pytest.approx(0.5, abs=0.01)  # (2.5 - -0.5) / 6
    assert rows["fallen"]["flags"][0]["detail"] == (
        "score 0.917 at the best parameters, 0.417 at the final evaluation"
    )
    assert rows["weak"]["flags"][0]["detail"].startswith("score IQM -0.0")
    assert "random -3" in rows["weak"]["flags"][0]["detail"]  # the return's clause too


def test_a_drop_within_the_threshold_is_not_a_collapse(tmp_path):
    """Best 2.5 (score 0.917), final 1.7 (0.783): 0.13 of the span, under COLLAPSE."""
    write_cell(tmp_path, "wobbly", [0.0, 1.0, 2.5, 1.7], 200, 2.5)
    board = leaderboard(load_study([tmp_path]), reps=REPS)
    (row,) = board["tasks"]["particle/spread"]["rows"]
    assert 0.1 < row["collapse"] < flags.COLLAPSE and row["flags"] == []


def test_the_direction_of_a_lower_is_better_metric_is_kept(tmp_path):
    """On a metric where lower is better (episode length here, anchors random 25, reference
    5), a length that rises from 10 to 24 is a collapse and a length at 26 is not above
    random; a length that falls is neither."""
    meta = {
        "anchors": {"metric": "episode_length", "random": 25.0, "reference": 5.0},
        "lower_is_better": ["episode_length"],
    }
    for algo, curve in (("shorter", [20, 15, 10, 8]), ("longer", [20, 15, 10, 24]),
                        ("slow", [26, 26, 26, 26])):  # fmt: skip
        path = write_cell(tmp_path, algo, [0.0] * 4, 0, 0.0, meta=meta)
        record = json.loads((path / "record.json").read_text())
        runs = record["particle"]["spread"][algo]
        for run in runs.values():
            for k, value in enumerate(curve):
                run[f"step_{k}"]["episode_length"] = [float(value)] * 4
            best = min(curve[:3]) if algo == "longer" else curve[-1]
            run["absolute_metrics"]["episode_length"] = [float(best)] * 40
        (path / "record.json").write_text(json.dumps(record))
        sidecar = json.loads((path / "meta.json").read_text())
        sidecar["best_step"] = [200 if algo == "longer" else 300] * SEEDS
        (path / "meta.json").write_text(json.dumps(sidecar))
    study = load_study([tmp_path], metric="episode_length")
    assert study.lower["particle/spread"]
    assert board_flags(leaderboard(study, reps=REPS)) == {
        ("particle/spread", "shorter"): [],
        ("particle/spread", "longer"): [flags.COLLAPSED],
        ("particle/spread", "slow"): [flags.NOT_ABOVE_RANDOM],
    }


def test_the_site_and_the_report_show_flags_and_explanations(tmp_path):
    healthy(tmp_path / "runs")
    stuck(tmp_path / "runs")
    fallen(tmp_path / "runs")
    notes = {"particle/spread/stuck": "Its best evaluation is step 0 on every seed & more."}
    study = load_study([tmp_path / "runs"])
    index = write_site(study, tmp_path / "site", reps=REPS, notes=notes)
    site = index.parent
    overview = index.read_text()
    assert "<h2>Flagged cells: 2</h2>" in overview
    assert overview.count('class="score flagged"') == 2
    assert html.escape(notes["particle/spread/stuck"]) in overview
    cell = (site / "cells/particle_spread/stuck.html").read_text()
    assert "<h2>Flags</h2>" in cell and "never learned" in cell
    assert html.escape(flags.MEANINGS[flags.NEVER_LEARNED]) in cell
    assert f"<strong>Explanation:</strong> {html.escape(notes['particle/spread/stuck'])}" in cell
    other = (site / "cells/particle_spread/fallen.html").read_text()
    assert "collapsed" in other and "No explanation yet." in other
    assert "<h2>Flags</h2>" not in (site / "cells/particle_spread/good.html").read_text()
    task = (site / "tasks/particle_spread.html").read_text()
    assert "Flagged: " in task and html.escape(notes["particle/spread/stuck"]) in task

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(
            ["report", str(tmp_path / "runs"), "--out", str(tmp_path / "report"),
             "--reps", str(REPS)]
        )  # fmt: skip
    assert code == 0
    assert "flagged: particle/spread/stuck: never learned" in out.getvalue()
    assert "flagged: particle/spread/fallen: collapsed" in out.getvalue()
    report = (tmp_path / "report/report.md").read_text()
    assert "**Flagged:** 2 cell(s)" in report
    assert "Flagged: stuck: never learned (best evaluation at step 0 on 4 of 4 seeds" in report


def test_explanations_are_read_as_data_only(tmp_path):
    """A note file is YAML data: a tag that would run code is refused, and nothing runs."""
    target = tmp_path / "ran"
    bad = tmp_path / "bad.yaml"
    bad.write_text(f'"a/b": !!python/object/apply:os.system ["touch {target}"]\n')
    with pytest.raises(ValueError, match="not YAML"):
        flags.read_notes(bad)
    assert not target.exists()
    for text, why in (("[1, 2]", "mapping"), ('"a/b": [1]', "paragraph"), ("x: text", "cell")):
        bad.write_text(text)
        with pytest.raises(ValueError, match=why):
            flags.read_notes(bad)
    good = tmp_path / "good.yaml"
    good.write_text('"combat/3m/qmix": >-\n  one\n  paragraph\n')
    assert flags.read_notes(good) == {"combat/3m/qmix": "one paragraph"}


def test_a_notes_file_is_read_bounded_and_without_aliases(tmp_path):
    """An alias bomb (each level nine of the one before) is refused before it is expanded, and
    so is a file past `NOTES_BYTES`."""
    bomb = tmp_path / "bomb.yaml"
    levels = ['a0: &a0 ["lol"]'] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)
    ]
    bomb.write_text("\n".join(levels) + '\n"x/y": *a9\n')
    with pytest.raises(ValueError, match="aliases"):
        flags.read_notes(bomb)
    big = tmp_path / "big.yaml"
    big.write_text('"a/b": "' + "x" * flags.NOTES_BYTES + '"\n')
    with pytest.raises(ValueError, match="larger than"):
        flags.read_notes(big)


def test_every_flagged_cell_of_the_committed_board_is_explained_on_its_page():
    """The rule: no cell of the committed board (benchmark v1's records, regenerated byte for
    byte by tests/test_committed_results.py) carries a flag without an explanation, beside its
    flags in leaderboard.md and on its page of the site; and every v1 note explains a flagged
    v1 cell (none left over from a cell that was re-run)."""
    board = json.loads((ROOT / "results/leaderboard.json").read_text())
    notes = benchmark_notes.notes("v1")
    marked = dict(flags.flagged(board))
    assert marked, "the committed board flags no cell: HAPPO on pathfinding never learned"
    assert flags.unexplained(board) == []
    assert sorted(notes) == sorted(marked)
    cells = {c.key for c in benchmark.cells(benchmark.load("v1"))}
    assert set(notes) <= cells
    md = (ROOT / "results/leaderboard.md").read_text()
    for cell, row in marked.items():
        assert row["explanation"] == notes[cell]
        assert f"Explanation: {notes[cell]}" in md
        task, _, algo = cell.rpartition("/")
        page = ROOT / "results/site/cells" / slug(task) / f"{slug(algo)}.html"
        assert html.escape(notes[cell]) in page.read_text(), page
    happo = marked["pathfinding/random_grid[density=0.15,num_agents=8]/happo"]
    assert flags.NEVER_LEARNED in [f["flag"] for f in happo["flags"]]
