"""Reports and leaderboard from records: numbers against an independent computation, files,
refusals; the sweep command end to end."""

from __future__ import annotations

import contextlib
import io
import json
import re
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import trim_mean
from test_protocol import write_run
from tiny import tiny

from marl import cli
from marl.results.leaderboard import leaderboard, write_leaderboard
from marl.results.report import summarise, write_report
from marl.results.study import load_study
from marl.run.campaigns import sweep
from marl.run.saved.study import RegisteredTasks

NO_ANCHORS = RegisteredTasks(anchors=False)  # registry facts, no baseline runs


def _study(tmp_path):
    write_run(tmp_path / "a", env_id="particle/spread", algo="ippo", seed=1)
    write_run(tmp_path / "b", env_id="particle/spread", algo="mappo", shift=2.0, seed=2)
    write_run(tmp_path / "c", env_id="particle/simple", algo="ippo", seed=3)
    write_run(tmp_path / "d", env_id="particle/simple", algo="mappo", shift=1.0, seed=4)
    return load_study([tmp_path], facts=NO_ANCHORS)


def _absolute_from_files(root, task, algo):
    """Per-run absolute scores read straight from the JSON files."""
    family, name = task.split("/")
    out = []
    for path in sorted(root.rglob("record.json")):
        data = json.loads(path.read_text())
        runs = data.get(family, {}).get(name, {}).get(algo, {})
        out += [np.mean(run["absolute_metrics"]["episode_return"]) for run in runs.values()]
    return out


def test_numbers_match_an_independent_computation(tmp_path):
    study = _study(tmp_path)
    summary = summarise(study, reps=500)
    assert summary["normalised_tasks"] == ["particle/simple", "particle/spread"]
    for algo in ("ippo", "mappo"):
        pooled = []
        for task in ("particle/simple", "particle/spread"):
            absolute = _absolute_from_files(tmp_path, task, algo)
            norm = (np.asarray(absolute) + 3.0) / 6.0  # anchors random -3, reference 3
            row = summary["tasks"][task]["algorithms"][algo]
            assert row["runs"] == 3
            assert row["absolute_mean"]["point"] == pytest.approx(np.mean(absolute))
            assert row["normalised_iqm"]["point"] == pytest.approx(trim_mean(norm, 0.25))
            pooled.extend(norm)
        (group,) = summary["groups"]  # both ran both tasks: one comparable group
        assert group["name"] == "particle" and group["tasks"] == summary["normalised_tasks"]
        agg = group["aggregates"][algo]
        assert agg["iqm"]["point"] == pytest.approx(trim_mean(pooled, 0.25))
        assert agg["mean"]["point"] == pytest.approx(np.mean(pooled))
        assert agg["iqm"]["low"] <= agg["iqm"]["point"] <= agg["iqm"]["high"]
    pair = summary["groups"][0]["improvement"]
    assert pair["mappo > ippo"]["point"] + pair["ippo > mappo"]["point"] == pytest.approx(1.0)
    assert pair["mappo > ippo"]["point"] > 0.5  # mappo's runs were shifted up


def test_report_files_are_self_contained(tmp_path):
    study = _study(tmp_path / "runs")
    paths = write_report(study, tmp_path / "out", reps=200)
    md = paths["md"].read_text()
    assert "| algorithm | IQM | mean | median | optimality gap |" in md
    assert "### particle/spread" in md and "(figures/aggregates_particle.png)" in md
    page = paths["html"].read_text()
    assert page.count("data:image/png;base64,") == 6  # 4 aggregate figures + 2 task curves
    assert 'src="figures' not in page and "<table>" in page
    (group,) = json.loads(paths["json"].read_text())["groups"]
    assert group["aggregates"]["mappo"]["iqm"]["point"] > 0


def test_a_report_written_again_keeps_only_its_own_figures(tmp_path):
    """A rewrite removes the figures marl drew before and not now; a user's file stays."""
    mine = tmp_path / "out" / "figures" / "aggregates.png"  # a user's, not marl's
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"the user's")
    study = _study(tmp_path / "runs")
    write_report(study, tmp_path / "out", reps=200)
    simple = mine.parent / "task_particle_simple.png"
    assert simple.exists()
    only_spread = load_study([tmp_path / "runs" / "a", tmp_path / "runs" / "b"], facts=NO_ANCHORS)
    paths = write_report(only_spread, tmp_path / "out", reps=200)
    assert not simple.exists()  # marl's, no longer shown: gone
    assert mine.read_bytes() == b"the user's"
    shown = sorted(p.name for p in mine.parent.glob("*.png") if p != mine)
    assert shown and all(f"figures/{n}" in paths["md"].read_text() for n in shown)


def test_leaderboard_ranks_and_marks_external(tmp_path):
    from test_protocol import evaluations

    from marl.results.protocol import run_record

    study_dir = tmp_path / "runs"
    _study(study_dir)
    steps, evals, absolute = evaluations(shift=5.0, seed=9)
    ext = tmp_path / "external.json"
    ext.write_text(json.dumps(run_record("particle/spread", "qmix", steps, evals, absolute)))
    study = load_study([study_dir, ext], facts=NO_ANCHORS)
    board = leaderboard(study, reps=200)
    rows = board["tasks"]["particle/spread"]["rows"]
    assert [r["algorithm"] for r in rows][0] == "qmix" and rows[0]["external"]
    # qmix ran one of the two tasks: each overall table ranks the algorithms of one task set
    groups = {tuple(g["tasks"]): [r["algorithm"] for r in g["rows"]] for g in board["overall"]}
    assert len(groups) == 2 and groups[("particle/spread",)][0] == "qmix"
    (other,) = [algos for tasks, algos in groups.items() if tasks != ("particle/spread",)]
    assert "qmix" not in other and sorted(other) == sorted(groups[("particle/spread",)][1:])
    paths = write_leaderboard(study, tmp_path / "board", reps=200)
    md = paths["md"].read_text()
    assert "qmix (external)" in md and "## particle (task set 2): particle/spread" in md
    # the page shows its figures, each group's aggregates and each task's curves, linked to
    # the files beside it rather than inlined (the committed page stays light)
    assert "(leaderboard_files/figures/aggregates_particle_task_set_2.png)" in md
    assert "(leaderboard_files/figures/task_particle_spread.png)" in md
    page = paths["html"].read_text()
    links = re.findall(r'<img alt="[^"]*" src="([^"]+)">', page)
    assert "data:image" not in page and len(links) == md.count("](leaderboard_files/figures/")
    assert all((paths["html"].parent / urllib.parse.unquote(src)).is_file() for src in links)
    # regenerated from the same records, every file is the same byte for byte
    again = write_leaderboard(study, tmp_path / "again", reps=200)
    files = sorted(p.relative_to(tmp_path / "board") for p in (tmp_path / "board").rglob("*.*"))
    assert files and files == sorted(
        p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*.*")
    )
    for f in files:
        assert (tmp_path / "board" / f).read_bytes() == (tmp_path / "again" / f).read_bytes(), f
    assert "created" not in json.loads(again["json"].read_text())  # no clock in the record


def test_no_aggregate_ranks_algorithms_over_different_task_sets(tmp_path):
    """Mixed task sets over two families: every aggregate, profile, P(improvement) and
    sample-efficiency figure covers algorithms that ran exactly its tasks, and only those."""
    runs = [
        ("particle/spread", "ippo"),
        ("particle/spread", "mappo"),
        ("particle/simple", "ippo"),
        ("particle/simple", "mappo"),
        ("particle/reference", "ippo"),
        ("combat/3m", "ippo"),
        ("combat/3m", "mappo"),
        ("combat/3m", "qmix"),
    ]
    for i, (env_id, algo) in enumerate(runs):
        write_run(tmp_path / f"r{i}", env_id=env_id, algo=algo, seed=i, shift=0.3 * i)
    study = load_study([tmp_path], facts=NO_ANCHORS)
    ran = {}
    for env_id, algo in runs:
        ran.setdefault(algo, set()).add(env_id)
    summary = summarise(study, reps=100)
    names = [g["name"] for g in summary["groups"]]
    assert names == ["combat", "particle (task set 1)", "particle (task set 2)"]
    for g in summary["groups"]:
        assert sorted(g["aggregates"]) == g["algorithms"]
        for algo in g["algorithms"]:
            assert set(g["tasks"]) <= ran[algo]
        others = set(ran) - set(g["algorithms"])
        assert not any(set(g["tasks"]) <= ran[a] for a in others)
        assert {p.split(" > ")[0] for p in g["improvement"]} <= set(g["algorithms"])
    board = leaderboard(study, reps=100)
    assert [g["name"] for g in board["overall"]] == names
    md = write_report(study, tmp_path / "report", reps=100)["md"].read_text()
    assert "aggregates.png" not in md and "(figures/aggregates_combat.png)" in md
    assert "(figures/improvement_particle_task_set_1.png)" in md


def _cli(*args):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.integration
def test_report_cli_keeps_mixed_protocols_apart_in_sections(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs / "a", algo="ippo", seed=1)
    write_run(runs / "b", algo="mappo", seed=2)
    write_run(runs / "c", algo="vdn", seed=3, protocol_over={"eval_episodes": 16})
    write_run(runs / "d", env_id="particle/simple", algo="ippo", seed=4)
    out = tmp_path / "r"
    code, stdout, err = _cli("report", str(runs), "--out", str(out))
    assert code == 0, err
    assert "section 1: 2 task(s), 2 algorithm(s) (ippo, mappo)" in stdout
    assert "section 2: 1 task(s), 1 algorithm(s) (vdn)" in stdout
    index = json.loads((out / "report.json").read_text())["sections"]
    assert [s["tasks"] for s in index] == [
        ["particle/simple", "particle/spread"],
        ["particle/spread"],
    ]
    (kept,) = index[1]["kept_apart"]
    assert kept == {
        "task": "particle/spread",
        "setting": "protocol.eval_episodes",
        "value": 16,
        "first_section": 4,
    }
    md = (out / "report.md").read_text()
    assert "[section-2/report.md](section-2/report.md)" in md and "protocol.eval_episodes" in md
    for k in (1, 2):
        assert (out / f"section-{k}" / "report.html").exists()
    # the leaderboard ranks one protocol: it still refuses, in one line
    code, _, err = _cli("leaderboard", str(runs), "--out", str(tmp_path / "board"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "different protocols: protocol.eval_episodes is 4" in err


def test_report_cli_names_a_bad_record(tmp_path):
    path, *_ = write_run(tmp_path / "a")
    record = json.loads((path / "record.json").read_text())
    record["particle"]["spread"]["mappo"]["run_2"]["step_0"]["step_count"] = "zero"
    (path / "record.json").write_text(json.dumps(record))
    code, _, err = _cli("report", str(tmp_path), "--out", str(tmp_path / "r"))
    assert code == 2 and "record.json: particle/spread/mappo/run_2/step_0/step_count" in err


def test_report_names_the_unfinished_runs_it_skips(tmp_path):
    write_run(tmp_path / "a", algo="ippo", seed=1)
    unfinished, *_ = write_run(tmp_path / "b", algo="mappo", seed=2)
    meta = json.loads((unfinished / "meta.json").read_text())
    (unfinished / "meta.json").write_text(json.dumps({**meta, "finished": False}))
    code, out, _ = _cli("report", str(tmp_path), "--out", str(tmp_path / "r"), "--reps", "50")
    assert code == 0 and f"skipped an unfinished run: {unfinished}" in out
    code, _, err = _cli("report", str(unfinished), "--out", str(tmp_path / "r"))
    assert code == 2 and f"no finished run records found; unfinished: {unfinished}" in err


def test_the_leaderboard_names_the_command_that_regenerates_it(tmp_path):
    write_run(tmp_path / "a", algo="ippo", seed=1)
    board = tmp_path / "board"
    args = [str(tmp_path / "a"), "--out", str(board), "--metric", "episode_length"]
    assert _cli("leaderboard", *args, "--reps", "60", "--seed", "3")[0] == 0
    generated = f"`marl leaderboard {' '.join(args)} --reps 60 --seed 3`"
    assert generated in (board / "leaderboard.md").read_text()


def test_the_leaderboard_reads_benchmark_v1s_records_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli("leaderboard", "--out", "board", "--reps", "60")
    assert code == 2
    assert "none of results/benchmark/v1, results/external exists" in err
    write_run(tmp_path / "results" / "benchmark" / "v1", algo="ippo", seed=1)
    assert _cli("leaderboard", "--out", "board", "--reps", "60")[0] == 0
    assert "| ippo |" in (tmp_path / "board" / "leaderboard.md").read_text()


# the shared tiny run's sizes, for IPPO and MAPPO, at two evaluations (its own program)
SWEEP = [*tiny(algo="ippo,mappo", **{"protocol.num_evaluations": "2"}), "name=s"]


@pytest.mark.integration
def test_sweep_trains_the_grid_writes_a_report_and_skips_finished_runs(tmp_path):
    out = tmp_path / "runs"
    code, text, err = _cli("sweep", *SWEEP, f"out={out}")
    assert code == 0, err
    assert "sweep: 2 run(s)" in text
    for algo in ("ippo", "mappo"):
        assert json.loads((out / "particle/simple" / algo / "s" / "meta.json").read_text())[
            "finished"
        ]
    report = out / "report-s" / "report.html"
    assert report.exists() and "particle/simple" in report.read_text()
    code, text, _ = _cli("sweep", *SWEEP, f"out={out}", "--report", str(tmp_path / "again"))
    assert code == 0 and text.count("finished before") == 2
    assert (tmp_path / "again" / "report.md").exists()
    longer = [o if not o.startswith("budget=") else "budget=4096" for o in SWEEP]
    code, _, err = _cli("sweep", *longer, f"out={out}")
    assert code == 2 and "finished run with a different budget" in err


def test_env_keyword_variants_get_their_own_task_and_directory():
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    plain = resolve(compose(["env=particle/spread", "out=r"]))
    cont = resolve(compose(["env=particle/spread", "env.kwargs.continuous_actions=true", "out=r"]))
    assert plain.task == "spread" and cont.task == "spread[continuous_actions=true]"
    assert plain.parent != cont.parent
    assert str(cont.parent) == "r/particle/spread[continuous_actions=true]/mappo"


def test_sweep_axes_over_learner_settings_get_their_own_runs_and_names():
    """A grid over a learner setting (or the root seed) would put two runs in one directory:
    the axis goes into the run's name, and a learner setting into the algorithm's name."""
    grid = sweep.separate_grid(
        sweep.sweep_overrides(["algo=ippo,mappo", "algo.lr=1e-3,3e-4", "seed=0", "name=s"])
    )
    assert grid[1] == ["algo=ippo", "algo.lr=0.0003", "seed=0", "name=s-lr_0.0003",
                       "label=ippo-lr_0.0003"]  # fmt: skip
    assert len({(c[0], c[3]) for c in grid}) == 4
    seeds = sweep.separate_grid(
        sweep.sweep_overrides(["env=particle/simple", "seed=0,1", "name=s"])
    )
    assert [c[-1] for c in seeds] == ["name=s-seed_0", "name=s-seed_1"]  # pooled: one algorithm
    plain = sweep.sweep_overrides(["env=particle/simple,particle/spread", "algo=ippo", "name=s"])
    assert sweep.separate_grid(plain) == plain  # env and algo choices have their own directories


def test_sweep_puts_learners_of_different_update_sizes_on_one_grid():
    """At one budget, IPPO (2,048-step updates) and IQL (64-step updates) would each round the
    evaluation interval to their own updates and train different steps, which reports refuse
    to compare: the sweep pins one interval, a multiple of both, per task."""
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    def planned(*overrides):
        grid = sweep.sweep_overrides(["algo=ippo,iql", "budget=1e5", "name=s", *overrides])
        runs = [resolve(compose(c), command=c) for c in grid]
        grid, notes = sweep.common_grid(grid, runs)
        return [resolve(compose(c), command=c) for c in grid], notes

    before = [resolve(compose(c)) for c in sweep.sweep_overrides(["algo=ippo,iql", "budget=1e5"])]
    assert len({r.env_steps for r in before}) == 2  # the problem: 100,352 against 100,032
    runs, notes = planned("env=particle/simple,particle/spread")
    assert len(notes) == 2 and "4,096 env steps" in notes[0]  # one line per task
    assert {(r.env_steps, r.num_segments) for r in runs} == {(102_400, 25)}
    assert all("protocol.eval_interval=4096" in r.command for r in runs)  # reproducible alone
    runs, notes = planned("env=particle/simple", "protocol.eval_interval=6000")
    assert not notes and len({r.env_steps for r in runs}) == 2  # the user's interval stands
    one = sweep.sweep_overrides(["env=particle/simple", "algo=ippo,mappo", "budget=1e5"])
    resolved = [resolve(compose(c)) for c in one]
    assert sweep.common_grid(one, resolved) == (one, [])  # one update size: nothing to pin


def test_sweep_rejects_a_bad_combination_before_training(tmp_path):
    code, _, err = _cli(
        "sweep", "env=particle/simple,particle/nope", "algo=ippo", f"out={tmp_path}"
    )
    assert code == 2 and "particle/nope" in err
    assert not any(tmp_path.iterdir())


def _scale_lengths(run_dir, factor):
    """Multiply every recorded episode length of a written run by `factor`."""
    path = run_dir / "record.json"
    data = json.loads(path.read_text())

    def scale(node):
        if isinstance(node, dict):
            return {
                k: [x * factor for x in v] if k == "episode_length" else scale(v)
                for k, v in node.items()
            }
        return node

    path.write_text(json.dumps(scale(data)))


def test_a_lower_is_better_metric_ranks_the_lowest_first(tmp_path):
    """pathfinding declares episode length lower-is-better (EnvSpec.lower_is_better): without
    a reference for it, the leaderboard and the report rank the shortest episodes first."""
    task = "pathfinding/random_grid"
    fast, _, _, _ = write_run(tmp_path / "a", env_id=task, algo="fast", seed=1)
    slow, _, _, _ = write_run(tmp_path / "b", env_id=task, algo="slow", seed=2)
    _scale_lengths(fast, 0.5)
    study = load_study([tmp_path], metric="episode_length", facts=NO_ANCHORS)
    board = leaderboard(study, reps=100)
    data = board["tasks"][task]
    assert data["lower_is_better"] and data["ranked_by"] == "absolute_mean"
    assert [r["algorithm"] for r in data["rows"]] == ["fast", "slow"]
    md = write_leaderboard(study, tmp_path / "board", reps=100)["md"].read_text()
    assert "ranked by episode_length mean (lower is better)" in md
    report = write_report(study, tmp_path / "report", reps=100)["md"].read_text()
    assert report.index("| fast |") < report.index("| slow |")
    returns = load_study([tmp_path], facts=NO_ANCHORS)  # returns: highest first, as ever
    assert not leaderboard(returns, reps=100)["tasks"][task]["lower_is_better"]


def test_a_record_names_its_lower_is_better_metrics_for_reports(tmp_path):
    """A finished run's sidecar names the env's lower-is-better metrics (record names), and
    reports rank by it, also for an env this process's registry does not know."""
    from marl.learning.training import RunResult
    from marl.run.folder import claim
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose(["env=particle/simple", "algo=ippo", f"out={tmp_path / 'w'}"]))
    result = RunResult(steps=[0], best_step=np.zeros(1, int))
    with claim(run) as run_dir:
        meta = run_dir.meta(result, None, ("length", "flowtime"))
    assert meta["lower_is_better"] == ["episode_length", "flowtime"]

    task = "mine/race"  # registered in the process that trained it, not in this one
    for algo, seed, factor in (("fast", 1, 0.5), ("slow", 2, 1.0)):
        path, _, _, _ = write_run(tmp_path / algo, env_id=task, algo=algo, seed=seed)
        _scale_lengths(path, factor)
        side = json.loads((path / "meta.json").read_text())
        (path / "meta.json").write_text(json.dumps({**side, "lower_is_better": ["episode_length"]}))
    study = load_study([tmp_path / "fast", tmp_path / "slow"], "episode_length", facts=NO_ANCHORS)
    data = leaderboard(study, reps=100)["tasks"][task]
    assert data["lower_is_better"] and [r["algorithm"] for r in data["rows"]] == ["fast", "slow"]


@pytest.mark.parametrize("reference", [-20.0, -10.0])
def test_anchors_whose_reference_does_not_beat_random_are_not_used(tmp_path, reference):
    """Normalising by a reference worse than random would rank the algorithms backwards, and
    by one equal to it would divide by 0: the task stays unnormalised, with a warning."""
    path, _, _, _ = write_run(tmp_path / "a", algo="ippo", seed=1)
    meta = json.loads((path / "meta.json").read_text())
    meta["anchors"] = {"random": -10.0, "reference": reference}
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="does not beat the random policy"):
        study = load_study([tmp_path], facts=NO_ANCHORS)
    assert study.anchors["particle/spread"] is None


def test_a_record_without_the_absolute_metric_is_not_ranked_against_one_with_it(tmp_path):
    """Scores are the absolute metric, or the last evaluation where a record has none: an
    external record without it would be ranked on another kind of number."""
    from test_protocol import evaluations

    from marl.results.protocol import RecordError, run_record

    _study(tmp_path / "runs")
    steps, evals, _ = evaluations(shift=5.0, seed=9)
    ext = tmp_path / "external.json"
    ext.write_text(json.dumps(run_record("particle/spread", "qmix", steps, evals, None)))
    with pytest.raises(RecordError, match="absolute metric is True in .* but False in"):
        load_study([tmp_path / "runs", ext], facts=NO_ANCHORS)


def _with_meta(run_dir, **changes):
    """Update a written run's sidecar with `changes`."""
    meta = json.loads((run_dir / "meta.json").read_text())
    (run_dir / "meta.json").write_text(json.dumps({**meta, **changes}))


def test_lower_is_better_anchors_normalise_towards_the_reference(tmp_path):
    """episode_length, lower is better, anchors random 50, reference 20: absolute lengths
    12.75 (fast) and 25.5 (slow) normalise to (12.75 - 50) / -30 = 1.2417 and 0.8167, and
    rank fast first by normalised IQM."""
    task = "mine/race"
    anchors = {"metric": "episode_length", "random": 50.0, "reference": 20.0}
    for algo, seed, factor in (("fast", 1, 0.5), ("slow", 2, 1.0)):
        path, _, _, _ = write_run(tmp_path / algo, env_id=task, algo=algo, seed=seed)
        _scale_lengths(path, factor)
        _with_meta(path, lower_is_better=["episode_length"], anchors=anchors)
    study = load_study([tmp_path], "episode_length", facts=NO_ANCHORS)
    assert study.anchors[task] is not None and study.lower[task]
    scores = study.normalised_scores()
    np.testing.assert_allclose(scores["fast"][task], (12.75 - 50) / -30)
    np.testing.assert_allclose(scores["slow"][task], (25.5 - 50) / -30)
    data = leaderboard(study, reps=100)["tasks"][task]
    assert data["ranked_by"] == "normalised_iqm"
    assert [r["algorithm"] for r in data["rows"]] == ["fast", "slow"]


def test_anchors_of_another_metric_or_disagreeing_anchors_are_not_used(tmp_path):
    """Anchors stated for `won` (random 0, reference 1) do not normalise episode_return; two
    records of one task whose reference anchors differ (3 vs 4) are refused."""
    from marl.results.protocol import RecordError

    path, _, _, _ = write_run(tmp_path / "a", algo="ippo", seed=1)
    _with_meta(path, anchors={"metric": "won", "random": 0.0, "reference": 1.0})
    assert load_study([tmp_path / "a"], facts=NO_ANCHORS).anchors["particle/spread"] is None
    write_run(tmp_path / "b", algo="ippo", seed=1)
    other, _, _, _ = write_run(tmp_path / "c", algo="mappo", seed=2)
    _with_meta(other, anchors={"random": -3.0, "reference": 4.0})
    with pytest.raises(RecordError, match="disagree on the reference anchor"):
        load_study([tmp_path / "b", tmp_path / "c"], facts=NO_ANCHORS)


def test_rankings_use_the_iqm_not_the_mean(tmp_path):
    """Anchors 0 and 1; four runs each: steady [.5, .5, .5, .5] (IQM .5, mean .5) and spiky
    [0, .4, .45, 10] (IQM .425, mean 2.71): steady ranks first on the task and overall."""
    from marl.results.protocol import run_record

    for algo, scores in (("spiky", [0.0, 0.4, 0.45, 10.0]), ("steady", [0.5] * 4)):
        col = np.asarray(scores)[:, None]
        evals = [{"return": col}, {"return": col}]
        path = tmp_path / algo
        path.mkdir()
        record = run_record("particle/spread", algo, [0, 100], evals, {"return": col})
        (path / "record.json").write_text(json.dumps(record))
        meta = {
            "finished": True,
            "protocol": {"version": "1", "eval_episodes": 1, "absolute_episodes": 1},
            "env_steps": 100,
            "config": {"env": {"id": "particle/spread", "kwargs": {}}, "algo": {"name": algo}},
            "anchors": {"random": 0.0, "reference": 1.0},
        }
        (path / "meta.json").write_text(json.dumps(meta))
    board = leaderboard(load_study([tmp_path], facts=NO_ANCHORS), reps=100)
    rows = board["tasks"]["particle/spread"]["rows"]
    assert [r["algorithm"] for r in rows] == ["steady", "spiky"]
    assert rows[1]["normalised_iqm"]["point"] == pytest.approx(0.425)
    (overall,) = board["overall"]
    assert [r["algorithm"] for r in overall["rows"]] == ["steady", "spiky"]
    assert overall["rows"][1]["mean"]["point"] == pytest.approx(10.85 / 4)


def test_runs_of_one_algorithm_on_different_step_grids_are_not_pooled_into_one_curve(tmp_path):
    """Two ippo records, both 3 evaluations ending at 200 steps, at [0, 100, 200] and
    [0, 150, 200]: their curves cannot be pooled step by step, so the curve is refused."""
    from marl.results.protocol import RecordError

    write_run(tmp_path / "a", algo="ippo", seed=1)
    write_run(tmp_path / "b", algo="ippo", seed=2, steps=(0, 150, 200))
    with pytest.raises(RecordError, match="evaluate at different steps: evaluation 1 is at step"):
        load_study([tmp_path], facts=NO_ANCHORS)  # refused up front, naming both files
    # and the curve itself refuses, should records reach it another way
    from marl.results.study import Entry

    study_a = load_study([tmp_path / "a"], facts=NO_ANCHORS)
    study_b = load_study([tmp_path / "b"], facts=NO_ANCHORS)
    (ra,) = study_a.entries[("particle/spread", "ippo")].records
    (rb,) = study_b.entries[("particle/spread", "ippo")].records
    with pytest.raises(RecordError, match="evaluation steps differ"):
        Entry("particle/spread", "ippo", [ra, rb]).curve("episode_return")


def test_the_leaderboard_keeps_the_natural_unit_wall_time_and_speed(tmp_path):
    """A task's headline metric (the sidecar's, else the registered env's) kept in the board's
    JSON; its tables show only the ranked statistic (one statistic throughout), with the runs'
    wall time and env steps per second."""
    path, _, _, absolute = write_run(tmp_path / "a", algo="ippo", seed=1)
    cpu = {"platform": "cpu", "kind": "cpu", "count": 1, "cpu_count": 2}
    _with_meta(path, headline_metric="collisions", wall_time=7200.0, seeds=3, device=cpu)
    path_b, *_ = write_run(tmp_path / "b", env_id="combat/3m", algo="qmix", seed=2)
    gpu = {"platform": "gpu", "kind": "NVIDIA H100 80GB HBM3", "count": 1, "cpu_count": 16}
    _with_meta(path_b, device=gpu)
    board = leaderboard(load_study([tmp_path], facts=NO_ANCHORS), reps=100)
    (row,) = board["tasks"]["particle/spread"]["rows"]
    want = np.mean(absolute["collisions"], axis=1).mean()
    assert row["headline"]["metric"] == "collisions"
    assert row["headline"]["mean"]["point"] == pytest.approx(want)
    assert row["wall_time_s"] == 7200.0 and row["steps_per_second"] == pytest.approx(200 * 3 / 7200)
    (combat,) = board["tasks"]["combat/3m"]["rows"]
    assert "headline" not in combat  # combat's unit is `won` (registered), not in this record
    md = write_leaderboard(load_study([tmp_path], facts=NO_ANCHORS), tmp_path / "b2", reps=100)
    text = md["md"].read_text()
    assert "| 2.00 h | 0 |" in text and f"collisions {want:.2f}" not in text
    assert "| rank | algorithm | runs | collisions IQM [95% CI] |" in text  # what ranks
    assert board["devices"] == {"NVIDIA H100 80GB HBM3 x1": 1, "cpu, 2 cores": 1}
    assert "Records by device: NVIDIA H100 80GB HBM3 x1 (1), cpu, 2 cores (1)." in text


def test_a_group_whose_learners_rounded_one_budget_differently_says_so(tmp_path):
    write_run(tmp_path / "a", algo="ippo", seed=1, budget=200, steps=(0, 100, 200))
    write_run(tmp_path / "b", algo="mfac", seed=2, budget=200, steps=(0, 69, 138, 207))
    paths = write_leaderboard(load_study([tmp_path], facts=NO_ANCHORS), tmp_path / "o", reps=100)
    text = paths["md"].read_text()
    assert "Env steps per run range from 200 to 207 over these records" in text
    write_run(tmp_path / "c", algo="ippo", seed=3)  # one grid: nothing to say
    paths = write_leaderboard(load_study([tmp_path / "c"], facts=NO_ANCHORS), tmp_path / "p")
    assert "Env steps per run range" not in paths["md"].read_text()


# --- peers' published figures beside the tasks -----------------------------------------------


def _published_file(path, **change):
    entry = {
        "task": "particle/spread",
        "peer_task": "PettingZoo simple_spread_v2",
        "source": "a paper, table 2",
        "basis": "read",
        "metric": "return, median over runs",
        "budget": 1e7,
        "seeds": 3,
        "figures": {"mappo": "-59", "qmix": "-61 [-63, -60]"},
        **change,
    }
    other = {k: v for k, v in entry.items() if k != "order"}
    other.update(task="combat/3m", figures={"qmix": "100"})
    import yaml

    path.write_text(yaml.safe_dump({"sources": [entry, other]}))
    return path


def test_published_figures_stand_beside_their_task_marked_external_and_unranked(tmp_path):
    from marl.results.published import read_published

    study = _study(tmp_path / "runs")
    published = read_published(_published_file(tmp_path / "pub.yaml"))
    board = leaderboard(study, reps=100, published=published)
    spread = board["tasks"]["particle/spread"]
    assert [r["algorithm"] for r in spread["rows"]] == ["mappo", "ippo"]  # ranking: marl's only
    assert spread["published"][0]["figures"] == {"mappo": "-59", "qmix": "-61 [-63, -60]"}
    assert board["tasks"]["particle/simple"]["published"] == []
    assert "combat/3m" not in board["tasks"]  # a source whose task has no runs is left out
    paths = write_leaderboard(study, tmp_path / "out", reps=100, published=published)
    md = paths["md"].read_text()
    section = md.split("## particle/spread")[1].split("\n## ")[0]
    assert "| mappo (external) | -59 | PettingZoo simple_spread_v2 |" in section
    assert "| qmix (external) | -61 [-63, -60] |" in section and "| 1e7 | 3 |" in section
    assert "combat/3m" not in md and "(external) | 100 |" not in md
    assert json.loads(paths["json"].read_text())["tasks"]["particle/spread"]["published"]


def test_a_sources_order_is_checked_pair_by_pair_against_the_runs_here(tmp_path):
    """mappo runs 2 above ippo on spread in the fixture: a source ranking ippo first is
    reversed here, one ranking mappo first agrees, and a tie is separated."""
    from marl.results.published import read_published

    study = _study(tmp_path / "runs")
    checks = {}
    for order in ("ippo > mappo", "mappo > ippo", "ippo = mappo"):
        figures = {"ippo": "-60", "mappo": "-59"}
        published = read_published(
            _published_file(tmp_path / "pub.yaml", order=order, figures=figures)
        )
        board = leaderboard(study, reps=200, published=published)
        (check,) = board["tasks"]["particle/spread"]["orders"]
        assert check["order"] == order and board["tasks"]["particle/simple"]["orders"] == []
        (pair,) = check["pairs"]
        checks[order] = pair
    assert checks["ippo > mappo"]["verdict"] == "reversed"
    assert checks["mappo > ippo"]["verdict"] == "agrees"
    assert checks["ippo = mappo"]["verdict"] == "separated: mappo ahead"
    p, q = checks["ippo > mappo"]["p"], checks["mappo > ippo"]["p"]
    assert p["point"] + q["point"] == pytest.approx(1.0) and p["high"] < 0.5 < q["low"]
    paths = write_leaderboard(study, tmp_path / "out", reps=200, published=published)
    section = paths["md"].read_text().split("## particle/spread")[1].split("\n## ")[0]
    assert "runs here in episode_return, 95%" in section
    assert "| a paper, table 2 | 1e7 | ippo = mappo | ippo = mappo: 0." in section
    assert "] separated: mappo ahead |" in section


def test_order_verdicts_and_pairs():
    from marl.results.orders import verdict
    from marl.results.published import order_pairs, parse_order

    tiers = parse_order("qmix > vdn = iql > ippo", {"qmix", "vdn", "iql", "ippo"}, "f")
    assert tiers == (("qmix",), ("vdn", "iql"), ("ippo",))
    assert order_pairs(tiers) == [
        ("qmix", "vdn", ">"),
        ("qmix", "iql", ">"),
        ("qmix", "ippo", ">"),
        ("vdn", "iql", "="),
        ("vdn", "ippo", ">"),
        ("iql", "ippo", ">"),
    ]
    assert verdict(">", "a", "b", (0.8, 0.6, 0.9)) == "agrees"
    assert verdict(">", "a", "b", (0.2, 0.1, 0.4)) == "reversed"
    assert verdict(">", "a", "b", (0.6, 0.4, 0.8)) == "not separated"
    assert verdict("=", "a", "b", (0.6, 0.4, 0.8)) == "agrees (tie)"
    assert verdict("=", "a", "b", (0.2, 0.1, 0.4)) == "separated: b ahead"
    for bad, match in (
        ("qmix", "two or more"),
        ("qmix > qmix", "each once"),
        ("a > b", "no figure"),
    ):
        with pytest.raises(ValueError, match=match):
            parse_order(bad, {"qmix", "vdn"}, "f")


def test_a_malformed_published_file_fails_with_one_line_naming_the_entry(tmp_path):
    from marl.results.published import read_published

    with pytest.raises(ValueError, match=r"sources\[0\] basis 'guess' is not one of read"):
        read_published(_published_file(tmp_path / "a.yaml", basis="guess"))
    bad = _published_file(tmp_path / "b.yaml")
    bad.write_text(bad.read_text().replace("  budget: 10000000.0\n", "", 1))
    with pytest.raises(ValueError, match=r"sources\[0\] lacks budget"):
        read_published(bad)
    _study(tmp_path / "runs")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(
            [
                "leaderboard",
                str(tmp_path / "runs"),
                "--out",
                str(tmp_path / "o"),
                "--published",
                str(tmp_path / "a.yaml"),
            ]
        )
    assert code != 0 and "--published:" in err.getvalue() and "basis 'guess'" in err.getvalue()


def test_the_shipped_published_figures_name_registered_tasks_and_learners():
    from marl.core import registry
    from marl.results.published import read_published

    sources = read_published()
    assert {s.basis for s in sources} <= {"read", "derived", "plot", "run"}
    for s in sources:
        assert s.task in registry.list_envs(), s.task
        assert set(s.figures) <= set(registry.list_algorithms()), s.task


def test_the_shipped_jaxmarl_figures_are_the_committed_side_by_side_record():
    """JaxMARL's own scripts run here (results/fidelity/jaxmarl_spread.json, per agent per 25
    steps) stand beside particle/spread on marl's scale: summed over its 3 agents."""
    from marl.results.published import read_published

    record = json.loads(
        (Path(__file__).resolve().parents[1] / "results/fidelity/jaxmarl_spread.json").read_text()
    )
    (source,) = [s for s in read_published() if s.basis == "run" and "JaxMARL" in s.source]
    assert source.task == "particle/spread" and source.budget == record["budget"]
    assert source.seeds == record["seeds"]
    for algo, learner in record["learners"].items():
        summary = learner["jaxmarl"]["summary"]
        lo, hi = (3 * x for x in summary["final_ci95"])
        assert source.figures[algo] == f"{3 * summary['final_mean']:.1f} [{lo:.1f}, {hi:.1f}]"


@pytest.mark.integration
def test_a_benchmarks_own_records_imply_its_scoring(tmp_path, monkeypatch):
    """`marl leaderboard results/benchmark/v1/...` scores at v1's declared anchors without
    `--benchmark v1` (a flag users forgot: happo 1.004 against the published 0.944 on
    speaker_listener); `--benchmark none` opts out."""
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    cell = "results/benchmark/v1/particle/speaker_listener/happo"
    code, text, err = _cli("leaderboard", cell, "--out", str(tmp_path / "a"), "--reps", "60")
    assert code == 0, err
    assert "scored as benchmark v1" in text
    board = json.loads((tmp_path / "a" / "leaderboard.json").read_text())
    task = board["tasks"]["particle/speaker_listener"]
    assert task["scoring"]["reference"] == -11.0  # v1's declared anchor
    assert "--benchmark v1" in (tmp_path / "a" / "leaderboard.md").read_text()
    out = str(tmp_path / "b")
    assert _cli("leaderboard", cell, "--out", out, "--reps", "60", "--benchmark", "none")[0] == 0
    other = json.loads((tmp_path / "b" / "leaderboard.json").read_text())
    assert other["tasks"]["particle/speaker_listener"]["scoring"] != task["scoring"]
