"""Cross-play: policies meet in contest envs (`marl.learning.contest`), ratings from the
scores (`marl.results.ratings`) and `marl crossplay` (`marl.run.saved.crossplay`)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import tiny

import marl
from marl import cli
from marl.baselines import random_policy, scripted_policy
from marl.learning.contest import NotAContest, play
from marl.results.ratings import ELO, bradley_terry, crossplay_table

SELF_PLAY = "combat/3m[opponent=self_play]"


def test_bradley_terry_recovers_the_ratings_that_generated_the_scores():
    r = np.array([0.0, 100.0, 300.0, -50.0])
    games = np.full((4, 4), 1000.0) - 1000.0 * np.eye(4)
    expected = games / (1.0 + 10 ** ((r[None, :] - r[:, None]) / 400))
    np.testing.assert_allclose(bradley_terry(expected, games, prior=0.0), r - r.mean(), atol=1e-6)
    # an unbeaten player stays finite: the prior's drawn game
    won = np.array([[0.0, 10.0], [0.0, 0.0]])
    fit = bradley_terry(won, np.array([[0.0, 10.0], [10.0, 0.0]]))
    assert np.all(np.isfinite(fit)) and fit[0] - fit[1] == pytest.approx(ELO * np.log(10.5 / 0.5))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**31 - 1))
def test_ratings_follow_the_players_not_their_order(n, seed):
    rng = np.random.default_rng(seed)
    games = rng.integers(1, 20, size=(n, n)).astype(float)
    games = np.triu(games, 1) + np.triu(games, 1).T
    share = rng.uniform(size=(n, n))
    score = np.triu(games * share, 1) + np.tril((games * (1 - share.T)), -1)
    perm = rng.permutation(n)
    fit = bradley_terry(score, games)
    moved = bradley_terry(score[np.ix_(perm, perm)], games[np.ix_(perm, perm)])
    np.testing.assert_allclose(moved, fit[perm], atol=1e-6)
    assert abs(fit.sum()) < 1e-6


def test_the_score_matrix_is_complementary_and_its_interval_holds_the_point():
    scores = {(0, 1): np.array([[1.0, 0.5], [1.0, 1.0]]), (1, 2): np.array([[0.25], [0.75]])}
    t = crossplay_table(scores, [2, 2, 1], games=8, reps=200)
    m = t["matrix"]
    assert m[0, 1] == pytest.approx(0.875) and m[1, 0] == pytest.approx(0.125)
    assert np.isnan(m[0, 2]) and np.isnan(np.diag(m)).all()
    assert np.all(t["elo_low"] <= t["elo"] + 1e-9) and np.all(t["elo"] <= t["elo_high"] + 1e-9)
    assert t["elo"][0] > t["elo"][1]


def test_swapping_seats_swaps_the_scores_and_fixed_keys_repeat_them():
    env = marl.make("particle/adversary")
    scripted, rand = scripted_policy(env), random_policy(env)
    key = jax.random.key(3)
    run = jax.jit(lambda k: play(env, scripted, None, rand, None, k, 8))
    swapped = jax.jit(lambda k: play(env, rand, None, scripted, None, k, 8))
    ab, ba = np.asarray(run(key)), np.asarray(swapped(key))
    np.testing.assert_array_equal(ab, 1.0 - ba[::-1])  # A as group 0 is B's game as group 1
    np.testing.assert_array_equal(ab, np.asarray(run(key)))
    assert ab.mean() > 0.6  # the scripted sides beat random actions


def test_the_scripted_policy_against_itself_is_about_even():
    """Both sides focus fire from mirrored starts: each side wins about as often, and the
    seat-averaged score is exactly even."""
    env = marl.make("combat/3m", opponent="self_play")
    scripted = scripted_policy(env)
    scores = np.asarray(
        jax.jit(lambda k: play(env, scripted, None, scripted, None, k, 24))(jax.random.key(0))
    )
    assert scores.mean() == pytest.approx(0.5)
    assert 0.25 <= scores[0].mean() <= 0.75  # group 0's rate


def test_players_the_ratings_do_not_separate_share_a_rank():
    """The board's rating table ranks as its learner tables do: overlapping Elo intervals share
    a rank (the battle64 self-play record of 2026-12-07: MF-AC +186 [+109, +263] and IL +111
    [-1, +209] ranked 2 and 3 before). Below it, each pair's result and mean score with its
    interval (the record held them; the board showed only the matrix figure)."""
    from marl.results.contests import contests_markdown

    ratings = [
        ("mfq", 9, -65, 70),
        ("il", 111, -1, 209),
        ("mfac", 186, 109, 263),
        ("scripted", 560, 457, 744),
        ("random", -866, -918, -841),
    ]
    record = {
        "task": "combat/battle64[opponent=self_play]",
        "groups": ["allies", "enemies"],
        "protocol": {"episodes": 16, "params": "final"},
        "command": "marl crossplay ...",
        "players": [{"name": n, "seeds": 5} for n, *_ in ratings],
        "ratings": [{"name": n, "elo": e, "low": lo, "high": hi} for n, e, lo, hi in ratings],
        "matrix": {"score": np.full((5, 5), 0.5).tolist()},
        "pairs": [{"a": "mfq", "b": "il", "win": 0.40875, "draw": 0.02625, "loss": 0.565}],
    }
    record["matrix"]["low"] = np.full((5, 5), 0.25).tolist()
    record["matrix"]["high"] = np.full((5, 5), 0.75).tolist()
    lines = contests_markdown([record], {})
    table = lines[
        lines.index("| rank | player | Elo [95% CI] | seeds | mean score against the others |") :
    ]
    rows = table[2 : table.index("")]
    ranked = [(row.split(" | ")[1], int(row.split(" | ")[0][2:])) for row in rows]
    assert ranked == [("scripted", 1), ("mfac", 2), ("il", 2), ("mfq", 4), ("random", 5)]
    # the pairs' table: each pair once, its result and mean score with the interval
    assert "| mfq vs il | 40.9% | 2.6% | 56.5% | 0.50 [0.25, 0.75] |" in lines
    assert "| mfq vs mfac | - | - | - | 0.50 [0.25, 0.75] |" in lines
    assert sum(line.startswith("| ") and " vs " in line for line in lines) == 10
    for pairs in (7, [5, {"a": ["mfq"], "b": "il", "win": 0.5}]):  # a hand-edited record
        record["pairs"] = pairs
        assert "| mfq vs il | - | - | - | 0.50 [0.25, 0.75] |" in contests_markdown([record], {})


def test_a_task_without_two_sides_is_refused():
    env = marl.make("particle/spread")
    p = random_policy(env)
    with pytest.raises(NotAContest, match="not a contest"):
        play(env, p, None, p, None, jax.random.key(0), 2)


def _run(*argv):
    with (
        contextlib.redirect_stdout(io.StringIO()) as out,
        contextlib.redirect_stderr(io.StringIO()) as err,
    ):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _crossplay(*args):
    return _run("crossplay", *args)


@pytest.fixture(scope="module")
def adversary_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    evals = {"protocol.num_evaluations": "2", "protocol.absolute_episodes": "4"}
    args = [
        *tiny(env="particle/adversary", **evals),
        f"out={out}",
        "name=a",
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["train", *args]) == 0
    return out / "particle" / "adversary" / "ippo" / "a"


@pytest.mark.integration
def test_marl_crossplay_writes_the_same_record_twice(adversary_run, tmp_path):
    args = [str(adversary_run), "random", "--episodes", "4", "--reps", "50"]
    code, said, err = _crossplay(*args, "--out", str(tmp_path / "one"))
    assert code == 0, err
    assert "ippo" in said and "Elo" in said
    record = json.loads((tmp_path / "one/particle/adversary/crossplay.json").read_text())
    assert (tmp_path / "one/particle/adversary/crossplay.png").is_file()
    assert [p["name"] for p in record["players"]] == ["ippo", "random"]
    m = record["matrix"]  # the pair's mean score and its interval, printed as recorded
    point, low, high = m["score"][0][1], m["low"][0][1], m["high"][0][1]
    assert f"ippo vs random  {point:.3f}  [{low:.3f}, {high:.3f}]" in said
    assert [p["seeds"] for p in record["players"]] == [2, 1]
    first = record["pairs"][0]
    assert np.asarray(first["score"]).shape == (2, 1)
    assert first["win"] + first["draw"] + first["loss"] == pytest.approx(1.0)
    assert record["command"].startswith("marl crossplay ")
    assert _crossplay(*args, "--out", str(tmp_path / "two"))[0] == 0
    again = json.loads((tmp_path / "two/particle/adversary/crossplay.json").read_text())
    assert again["matrix"] == record["matrix"] and again["ratings"] == record["ratings"]
    # the leaderboard's competitive section: the rating table and the matrix figure
    board = tmp_path / "board"
    with contextlib.redirect_stdout(io.StringIO()) as said:
        argv = ["leaderboard", str(adversary_run), "--crossplay", str(tmp_path / "one")]
        assert cli.main([*argv, "--out", str(board), "--reps", "50"]) == 0
    assert "1 contest(s)" in said.getvalue()
    md = (board / "leaderboard.md").read_text()
    section = md[md.index("# Competitive tasks") :]
    assert "## particle/adversary" in section and record["command"] in section
    assert "| 1 | " in section and "shares the rank" in section
    assert (board / "leaderboard_files/figures/crossplay_particle_adversary.png").is_file()
    assert json.loads((board / "leaderboard.json").read_text())["contests"][0]["task"] == (
        "particle/adversary"
    )
    # two records of one task cannot both be shown
    code, _, err = _run(
        "leaderboard",
        str(adversary_run),
        "--crossplay",
        str(tmp_path / "one"),
        "--crossplay",
        str(tmp_path / "two"),
        "--out",
        str(board),
    )
    assert code == 2 and "two cross-play records of particle/adversary" in err


@pytest.mark.integration
def test_best_parameters_from_step_0_are_flagged(adversary_run, tmp_path):
    """A seed whose best evaluation is at step 0 would play its untrained parameters."""
    run = tmp_path / "run"
    shutil.copytree(adversary_run, run)
    meta = json.loads((run / "meta.json").read_text())
    (run / "meta.json").write_text(json.dumps({**meta, "best_step": [1024, 0]}))
    args = [str(run), "random", "--episodes", "2", "--reps", "10", "--out", str(tmp_path)]
    code, _, err = _crossplay(*args, "--best")
    assert code == 0 and "seed(s) 1 evaluated best at step 0" in err
    code, _, err = _crossplay(*args)
    assert code == 0 and "step 0" not in err


@pytest.mark.integration
def test_runs_play_their_final_parameters_unless_best(adversary_run, tmp_path):
    """A contest run's evaluations score it against itself, so its "best" parameters are not
    its strongest: cross-play plays the final ones by default."""
    args = [str(adversary_run), "random", "--episodes", "2", "--reps", "10"]
    records = {}
    for flag in ("", "--final", "--best"):
        out = tmp_path / (flag.strip("-") or "default")
        code, said, err = _crossplay(*args, *([flag] if flag else []), "--out", str(out))
        assert code == 0, err
        records[flag] = json.loads((out / "particle/adversary/crossplay.json").read_text())
    assert records[""]["protocol"]["params"] == "final"
    assert records["--best"]["protocol"]["params"] == "best"
    assert records[""]["pairs"] == records["--final"]["pairs"]
    assert records[""]["command"].split(" --out ")[0].endswith("--final")  # says what it played
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
        cli.main(["crossplay", *args, "--final", "--best"])
    assert "not allowed with argument" in err.getvalue()


@pytest.mark.integration
@pytest.mark.parametrize(
    "players, needle",
    [
        (["scripted", "random"], "name the task with --task"),
        (["scripted", "--task", "particle/spread"], "at least two players"),
        (["scripted", "random", "--task", "particle/spread"], "not a contest"),
        (["RUN", "scripted", "--task", SELF_PLAY], "players of different tasks cannot meet"),
        (["RUN", "/nonexistent"], "not a run directory"),
    ],
)
def test_marl_crossplay_refuses_in_one_line(adversary_run, players, needle):
    players = [str(adversary_run) if p == "RUN" else p for p in players]
    code, _, err = _crossplay(*players)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.integration
def test_half_precision_parameters_play_as_the_full_ones(adversary_run, tmp_path):
    """A compacted run keeping only its float16 parameters (`best_params.f16.msgpack.gz`,
    `params.f16.msgpack.gz`) plays the same games on the same keys, and its record still ranks."""
    from marl.run.saved import compact

    run = tmp_path / "particle" / "adversary" / "ippo" / "a"
    shutil.copytree(adversary_run, run)
    assert "best_params.f16.msgpack.gz" in compact.compact_run(run, params=True)
    for name in ("params.msgpack.gz", "best_params.msgpack.gz"):  # full precision, gzipped
        (run / name).unlink()
    for flag in ("--final", "--best"):
        records = []
        for player, out in ((adversary_run, "full"), (run, "half")):
            args = [str(player), "random", "--episodes", "4", "--reps", "10", flag]
            code, _, err = _crossplay(*args, "--out", str(tmp_path / out / flag))
            assert code == 0, err
            path = tmp_path / out / flag / "particle/adversary/crossplay.json"
            records.append(json.loads(path.read_text()))
        assert records[0]["pairs"] == records[1]["pairs"]
        assert records[0]["ratings"] == records[1]["ratings"]
    code, said, err = _run("leaderboard", str(tmp_path / "particle"), "--out", str(tmp_path / "b"))
    assert code == 0, err
