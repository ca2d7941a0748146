"""Scoring v2: natural units where bounded, fixed anchors elsewhere, families weighted equally
across families, the sensitivity table, and the warning on fewer than 5 seeds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from marl.results import stats
from marl.results.leaderboard import leaderboard
from marl.results.protocol import run_record
from marl.results.report import few_seeds_warning, summarise
from marl.results.scoring import TaskScore, declared_scoring
from marl.results.sensitivity import group_sensitivity
from marl.results.study import Group, load_study


def write(root, env_id, algo, won, ret, seed, anchors=None, headline="won"):
    """A finished marl run of `len(won)` seeds whose every evaluation (and absolute metric)
    has win rate `won[k]` and return `ret[k]` for seed k (4 episodes each)."""
    won, ret = np.asarray(won, float), np.asarray(ret, float)
    ep = 4
    evals = [
        {"return": np.repeat(ret[:, None] * f, ep, 1), "won": np.repeat(won[:, None] * f, ep, 1)}
        for f in (0.5, 1.0)
    ]
    absolute = {k: v.repeat(10, axis=1) for k, v in evals[-1].items()}
    path = root / env_id / algo / "run"
    path.mkdir(parents=True)
    (path / "record.json").write_text(
        json.dumps(run_record(env_id, algo, [0, 100], evals, absolute))
    )
    meta = {
        "finished": True,
        "env": env_id,
        "protocol": {"version": "1", "eval_episodes": ep, "absolute_episodes": 10 * ep},
        "env_steps": 100,
        "config": {"env": {"id": env_id, "kwargs": {}}, "algo": {"name": algo}, "seed": seed},
        "headline_metric": headline,
        "anchors": anchors or {"random": 0.0, "reference": 10.0},
    }
    (path / "meta.json").write_text(json.dumps(meta))


def test_a_bounded_natural_unit_is_the_score_and_a_weak_reference_no_longer_inflates_it(tmp_path):
    """combat-like task: the scripted reference returns 10, the learners 30 and 20 (v1 scores
    3.0 and 2.0); scored in win rate (its natural unit) they are 0.9 and 0.6, never above 1."""
    write(tmp_path, "combat/3m", "a", [0.9] * 5, [30.0] * 5, seed=0)
    write(tmp_path, "combat/3m", "b", [0.6] * 5, [20.0] * 5, seed=1)
    study = load_study([tmp_path])
    assert study.scoring["combat/3m"] == TaskScore("won", "natural")
    scores = study.normalised_scores()
    np.testing.assert_allclose(scores["a"]["combat/3m"], 0.9)
    np.testing.assert_allclose(scores["b"]["combat/3m"], 0.6)
    row = leaderboard(study, reps=50)["tasks"]["combat/3m"]["rows"][0]
    assert row["algorithm"] == "a" and row["normalised_iqm"]["point"] == pytest.approx(0.9)
    assert row["final_score"] == pytest.approx(0.9) and row["collapse"] == pytest.approx(0.0)


def test_a_task_without_a_natural_unit_is_scored_between_the_declared_anchors(tmp_path):
    """particle-like task (natural unit: the return), records' anchors 0 / 10 but declared
    anchors -10 / 40: a return of 15 scores (15 + 10) / 50 = 0.5."""
    for algo, seed in (("a", 0), ("b", 1)):
        write(
            tmp_path,
            "particle/spread",
            algo,
            [0.0] * 5,
            [15.0] * 5,
            seed,
            headline="episode_return",
        )
    declared = declared_scoring(
        {
            "scoring": {
                "version": 2,
                "anchored": {"particle/spread": {"random": -10, "reference": 40}},
            }
        }
    )
    study = load_study([tmp_path], declared=declared)
    np.testing.assert_allclose(study.normalised_scores()["a"]["particle/spread"], 0.5)
    assert study.scoring["particle/spread"].describe().startswith("episode return, 0 = random (-10")
    undeclared = load_study([tmp_path])  # the records' anchors, as scoring v1
    np.testing.assert_allclose(undeclared.normalised_scores()["a"]["particle/spread"], 1.5)
    with pytest.raises(ValueError, match="scoring version 1 unknown"):
        declared_scoring({"scoring": {"version": 1}})
    with pytest.raises(ValueError, match="reference missing"):
        declared_scoring({"scoring": {"version": 2, "anchored": {"x/y": {"random": 0}}}})


def test_across_families_each_family_weighs_the_same():
    """Family f has one task (scores 1), family g three tasks (scores 0): pooled, the mean is
    0.25; with families weighted equally it is 0.5, and so is the IQM."""
    scores = {"x": {"f/a": np.ones(5), "g/a": np.zeros(5), "g/b": np.zeros(5), "g/c": np.zeros(5)}}
    pooled = stats.aggregate(scores, reps=200)["x"]
    equal = stats.family_aggregate(scores, lambda t: t.split("/")[0], reps=200)["x"]
    assert pooled["mean"][0] == pytest.approx(0.25)
    assert equal["mean"][0] == pytest.approx(0.5) and equal["iqm"][0] == pytest.approx(0.5)
    assert equal["mean"][1] <= 0.5 <= equal["mean"][2]


def test_the_sensitivity_table_flags_a_ranking_the_rule_decides(tmp_path):
    """Scripted reference 10: learner a wins more (0.9 against 0.6) but b's return is higher
    (40 against 30). Scoring v2 (win rate) ranks a first; scoring v1 (return min-max to the
    reference) ranks b first: a flip; capped at 1 both tie at 1.0 (one shared rank)."""
    write(tmp_path, "combat/3m", "a", [0.9] * 5, [30.0] * 5, seed=0)
    write(tmp_path, "combat/3m", "b", [0.6] * 5, [40.0] * 5, seed=1)
    study = load_study([tmp_path])
    sec = group_sensitivity(study, Group("combat", ("combat/3m",), ("a", "b")), reps=2000)
    assert sec["table"]["v2"]["a"]["rank"] == 1 and sec["table"]["v1"]["b"]["rank"] == 1
    assert sec["table"]["capped"]["a"]["rank"] == sec["table"]["capped"]["b"]["rank"] == 1
    assert ("v1", "a", 1, 2) in sec["flips"] and ("v1", "b", 2, 1) in sec["flips"]


def test_the_sensitivity_table_reads_no_flip_into_overlapping_intervals(tmp_path):
    """b wins a little more than a (v2 ranks it first by its point IQM) and a returns a little
    more (v1 ranks it first), each with a spread across seeds that makes the intervals overlap:
    under every rule the two share rank 1, and no flip is reported (the old table ranked the
    point IQMs strictly and called the swap a flip)."""
    spread = np.array([0.3, 0.5, 0.6, 0.8, 0.9])
    write(tmp_path, "combat/3m", "a", spread, 30.0 * spread + 1.0, seed=0)
    write(tmp_path, "combat/3m", "b", spread + 0.02, 30.0 * spread, seed=1)
    study = load_study([tmp_path])
    sec = group_sensitivity(study, Group("combat", ("combat/3m",), ("a", "b")), reps=2000)
    assert sec["table"]["v2"]["b"]["iqm"] > sec["table"]["v2"]["a"]["iqm"]
    assert sec["table"]["v1"]["a"]["iqm"] > sec["table"]["v1"]["b"]["iqm"]
    for name, rows in sec["table"].items():
        assert {row["rank"] for row in rows.values()} == {1}, name
        for row in rows.values():
            assert row["low"] <= row["iqm"] <= row["high"]
    assert sec["flips"] == []


def test_the_board_reuses_its_groups_ranking_as_the_v2_column_and_changes_nothing(tmp_path):
    """`leaderboard` hands each group's own ranking to `group_sensitivity` (scoring v2's
    bootstrap is not drawn twice); the table equals the one drawn afresh, and a v2 handed in is
    the column as given."""
    write(tmp_path, "combat/3m", "a", [0.9] * 5, [30.0] * 5, seed=0)
    write(tmp_path, "combat/3m", "b", [0.6] * 5, [40.0] * 5, seed=1)
    study = load_study([tmp_path])
    (sec,) = leaderboard(study, reps=500)["sensitivity"]
    group = Group(sec["name"], tuple(sec["tasks"]), ("a", "b"))
    fresh = group_sensitivity(study, group, reps=500)
    assert sec["table"] == fresh["table"] and sec["flips"] == [list(f) for f in fresh["flips"]]
    given = {"a": {"iqm": 0.1, "low": 0.0, "high": 0.2, "rank": 2}}
    assert group_sensitivity(study, group, reps=500, v2=given)["table"]["v2"] is given


def test_the_committed_sensitivity_tables_rank_v2_as_their_groups_do():
    """results/leaderboard.json: each family's scoring-v2 column is its group's ranking."""
    from pathlib import Path

    board = json.loads(
        (Path(__file__).resolve().parent.parent / "results" / "leaderboard.json").read_text()
    )
    groups = {g["name"]: {r["algorithm"]: r["rank"] for r in g["rows"]} for g in board["overall"]}
    assert board["sensitivity"]
    for sec in board["sensitivity"]:
        assert {a: row["rank"] for a, row in sec["table"]["v2"].items()} == groups[sec["name"]]


def test_comparisons_on_fewer_than_five_seeds_are_warned_about(tmp_path):
    write(tmp_path, "combat/3m", "a", [0.9] * 3, [30.0] * 3, seed=0)
    write(tmp_path, "combat/3m", "b", [0.6] * 5, [20.0] * 5, seed=1)
    study = load_study([tmp_path])
    warning = few_seeds_warning(study)
    assert warning and "fewer than 5 seeds" in warning and "combat/3m: a (3)" in warning
    assert summarise(study, reps=50)["few_seeds_warning"] == warning
