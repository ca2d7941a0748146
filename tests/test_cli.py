"""The `marl` command line: list, bench, render, errors, and the installed entry point."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from PIL import Image

import marl
from marl import cli
from marl.cli import commands
from marl.cli.args import parse_value


def table_rows(out: str, first_col: str) -> list[list[str]]:
    """Rows of a printed table (split on 2+ spaces) below the header starting `first_col`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_col))
    rows = []
    for line in lines[start + 2 :]:  # header, rule
        if not line.strip():
            break
        rows.append(line.split())
    return rows


@pytest.mark.integration
def test_list_shows_spread_with_agents_and_actions(capsys):
    assert cli.main(["list", "--family", "particle"]) == 0
    out = capsys.readouterr().out
    rows = {r[0]: r for r in table_rows(out, "id")}
    assert "particle/spread" in rows
    assert rows["particle/spread"][1:] == ["3", "Discrete(5)", "25"]


@pytest.mark.integration
def test_list_family_filters_and_an_unknown_family_is_refused(capsys):
    assert cli.main(["list", "--family", "combat"]) == 0
    ids = [r[0] for r in table_rows(capsys.readouterr().out, "id")]
    assert ids and all(i.startswith("combat/") for i in ids)
    assert cli.main(["list", "--family", "partcle"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown family 'partcle'" in err and "particle" in err and "\n" not in err


def test_bench_prints_positive_throughput(capsys):
    argv = ["bench", "particle/spread", "--num-envs", "1,4", "--steps", "20", "--repeats", "1"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    rows = table_rows(out, "num_envs")
    assert [r[0] for r in rows] == ["1", "4"]
    for row in rows:
        steps_per_s = float(row[1].replace(",", ""))
        agent_steps_per_s = float(row[2].replace(",", ""))
        assert steps_per_s > 0
        assert agent_steps_per_s == pytest.approx(3 * steps_per_s, rel=0.01)


def test_bench_set_passes_env_keywords(capsys, tmp_path):
    out_json = tmp_path / "bench.json"
    argv = ["bench", "particle/spread", "--num-envs", "2", "--steps", "5", "--repeats", "1",
            "--set", "num_agents=4", "--json", str(out_json)]  # fmt: skip
    assert cli.main(argv) == 0
    assert "4 agents" in capsys.readouterr().out
    assert '"num_agents": 4' in out_json.read_text()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["bench", "particle/nope"], "particle/spread"),
        (["render", "nope/nope", "--out", "x.gif"], "particle/spread"),
        (["bench", "particle/spread", "--set", "bogus=1"], "num_agents"),
        (["bench", "particle/spread", "--set", "num_agents"], "key=value"),
        (["bench", "particle/spread", "--num-envs", "0"], "positive"),
        # output paths are checked before any work ({tmp}: a directory, {file}: a file)
        (["report", "{tmp}", "--out", "{file}"], "exists and is not a directory"),
        (["leaderboard", "{tmp}", "--out", "{file}"], "exists and is not a directory"),
        (["sweep", "--report", "{file}", "env=particle/simple", "algo=ippo"], "not a directory"),
        (["render", "particle/spread", "--out", "{tmp}"], "give a .gif file path"),
        (["render", "particle/spread", "--out", "{tmp}/x.gif", "--final"], "add --params"),
        (["eval", "{tmp}/run", "--json", "{tmp}"], "is a directory"),
        (["bench", "particle/spread", "--json", "{tmp}"], "is a directory"),
        (["bench", "particle/spread", "--seeds", "3", "--agents", "5"], "only with --suite"),
        (["bench", "combat/battle64", "--vs", "jaxmarl"], "combat/3m"),
        (["train", "env=particle/spread,combat/3m"], "marl sweep"),
        (["train", "vmap=algo.lr:1e-3,1e-4"], "marl sweep"),
        (["train", "--dry-run", "algo.lr=-1"], "lr=-1 invalid; must be > 0"),
        (["train", "--dry-run", "algo.epochs=0"], "epochs=0 invalid"),
        (["train", "--dry-run", "env.kwargs.num_agents=abc"], "num_agents must be an integer"),
        (["train", "--dry-run", "env.kwargs.continuous_actions=no"], "must be true or false"),
        (["train", "--dry-run", "distributed=true", "resume=true"], "resume=true is single-host"),
        (["sweep", "env=particle/spread,", "algo=ippo"], "cannot parse 'env=particle/spread,'"),
    ],
)
def test_user_errors_are_one_line_exit_2(capsys, tmp_path, argv, needle):
    (tmp_path / "file").write_text("")
    argv = [a.format(tmp=tmp_path, file=tmp_path / "file") for a in argv]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("marl: error:")
    assert needle in err
    assert "Traceback" not in captured.out + captured.err


@pytest.mark.integration
def test_vs_without_peer_says_how_to_install(capsys, monkeypatch):
    monkeypatch.setattr(commands, "peer_installed", lambda name: False)
    assert cli.main(["bench", "particle/spread", "--vs", "jaxmarl"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert 'pip install -e ".[peers]"' in err


@pytest.mark.integration
def test_render_writes_gif(tmp_path, capsys):
    out = tmp_path / "spread.gif"
    assert cli.main(["render", "particle/spread", "--out", str(out), "--steps", "5"]) == 0
    assert "6 frames" in capsys.readouterr().out
    with Image.open(out) as gif:
        assert gif.format == "GIF"
        assert gif.n_frames >= 5


def test_a_run_folder_given_as_the_env_id_names_the_render_command(tmp_path, capsys):
    """`marl render RUN_DIR` (the folder where the env id goes): one line with the command
    that renders the run, its env id read from its config.yaml; nothing built or run."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("env:\n  id: particle/spread\n  kwargs: {}\n")
    out = tmp_path / "x.gif"
    assert cli.main(["render", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"marl render particle/spread --params {run} --out {out}" in err
    assert "\n" not in err and not out.exists()
    (run / "config.yaml").write_text("not: [a run")  # unreadable: the id left to fill in
    assert cli.main(["render", str(run), "--out", str(out)]) == 2
    assert f"marl render ENV_ID --params {run}" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"marl {marl.__version__}"


@pytest.mark.parametrize(
    "text, value",
    [("3", 3), ("0.5", 0.5), ("true", True), ("False", False), ("none", None), ("abc", "abc"),
     ("[1, 2]", [1, 2])],
)  # fmt: skip
def test_parse_value(text, value):
    assert parse_value(text) == value


@pytest.mark.integration
def test_console_script_is_installed():
    script = Path(sys.executable).with_name("marl")
    found = str(script) if script.exists() else shutil.which("marl")
    assert found, "the `marl` console script is not installed (pip install -e .)"
    proc = subprocess.run(
        [found, "bench", "particle/nope"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("marl: error: unknown environment 'particle/nope'")
    assert len(proc.stderr.strip().splitlines()) == 1


# not pytest.importorskip: importing jaxmarl directly points sys.stdout at the process's own
# stream (its MABrax module does), which breaks capsys; marl.bench.envs imports it safely.
needs_jaxmarl = pytest.mark.skipif(not commands.peer_installed("jaxmarl"), reason="needs jaxmarl")


@pytest.mark.slow
@needs_jaxmarl
def test_bench_vs_jaxmarl_adds_peer_columns(capsys):
    argv = ["bench", "particle/spread", "--num-envs", "2", "--steps", "10", "--repeats", "1",
            "--vs", "jaxmarl"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "MPE_simple_spread_v3" in out
    assert "Importing" not in out  # JaxMARL's import chatter is silenced
    (row,) = table_rows(out, "num_envs")
    marl_sps, peer_sps, ratio = (float(row[i].replace(",", "")) for i in (1, 4, 6))
    assert marl_sps > 0 and peer_sps > 0
    assert ratio == pytest.approx(marl_sps / peer_sps, rel=0.02, abs=0.006)


@needs_jaxmarl
def test_jaxmarl_keywords_are_translated():
    from marl.bench.peers import jaxmarl_kwargs

    # discrete by default, even where JaxMARL defaults to continuous (world_comm)
    assert jaxmarl_kwargs("particle/world_comm", {}) == {"action_type": "Discrete"}
    assert jaxmarl_kwargs("particle/tag", {"num_good": 2, "episode_limit": 10}) == {
        "action_type": "Discrete", "num_good_agents": 2, "max_steps": 10,
    }  # fmt: skip
    assert jaxmarl_kwargs("particle/spread", {"continuous_actions": True}) == {
        "action_type": "Continuous"
    }
    with pytest.raises(ValueError, match="bogus"):
        jaxmarl_kwargs("particle/spread", {"bogus": 1})
    # marl's spread has as many landmarks as agents unless told; JaxMARL's keeps 3
    assert jaxmarl_kwargs("particle/spread", {"num_agents": 5})["num_landmarks"] == 5


@needs_jaxmarl
def test_bench_refuses_a_jaxmarl_counterpart_that_is_another_task():
    from marl.bench.peers import _check_same_task
    from marl.interop.jaxmarl import import_jaxmarl

    other = import_jaxmarl().make("MPE_simple_spread_v3", num_agents=5, num_landmarks=3)
    with pytest.raises(ValueError, match="another task"):
        _check_same_task("particle/spread", {"num_agents": 5}, other)
    same = import_jaxmarl().make("MPE_simple_spread_v3", num_agents=5, num_landmarks=5)
    _check_same_task("particle/spread", {"num_agents": 5}, same)


@needs_jaxmarl
def test_the_jaxmarl_harness_samples_valid_actions_in_one_draw():
    """SMAX masks actions (dead allies may only stop, attacks need a foe in range): the peer's
    harness draws from the available ones, as marl's does, and MPE's in one joint draw."""
    from marl.bench.peers import _jaxmarl_sampler, jaxmarl_kwargs
    from marl.interop.jaxmarl import import_jaxmarl

    jaxmarl = import_jaxmarl()
    env = jaxmarl.make("HeuristicEnemySMAX", **jaxmarl_kwargs("combat/3m", {}))
    agents = list(env.agents)
    _, state = jax.jit(env.reset)(jax.random.key(0))
    avail = env.get_avail_actions(state)
    sample = jax.jit(_jaxmarl_sampler(env, agents))
    for k in range(50):
        actions = sample(jax.random.key(k), state)
        assert all(bool(avail[a][int(actions[a])]) for a in agents)
    assert env.max_steps == 60 and not env.see_enemy_actions  # marl's 3m settings


def test_burn_in_covers_one_episode_limit():
    from marl.bench.envs import burn_in_calls

    assert burn_in_calls(180, 9) == 20 and burn_in_calls(25, 1000) == 1
    assert burn_in_calls(None, 10) == 1


@pytest.mark.integration
@needs_jaxmarl
def test_combat_maps_run_on_jaxmarl_heuristic_smax():
    from marl.bench.peers import bench_jaxmarl, jaxmarl_kwargs, jaxmarl_name, smax_map

    assert jaxmarl_name("combat/2s3z") == "HeuristicEnemySMAX" and smax_map("combat/2s3z")
    assert smax_map("combat/smacv2_5_units") is None
    scenario = jaxmarl_kwargs("combat/5m_vs_6m", {})["scenario"]
    assert (scenario.num_allies, scenario.num_enemies) == (5, 6)
    with pytest.raises(ValueError, match="defaults only"):
        jaxmarl_kwargs("combat/3m", {"episode_limit": 10})
    record = bench_jaxmarl("combat/3m", num_envs=2, steps=5, repeats=1)
    assert record["env"] == "HeuristicEnemySMAX:3m" and record["steps_per_s"] > 0


needs_camar = pytest.mark.skipif(not commands.peer_installed("camar"), reason="needs camar")


def test_camar_counterpart_carries_the_map_settings():
    from marl.bench.peers import camar_kwargs

    assert camar_kwargs("pathfinding/random_grid", {"num_agents": 8, "density": 0.15}) == {
        "map_generator": "random_grid",
        "map_kwargs": {"num_rows": 20, "num_cols": 20, "obstacle_density": 0.15, "num_agents": 8},
        "max_steps": 128,
    }
    with pytest.raises(KeyError, match="benchable: pathfinding/random_grid"):
        camar_kwargs("pathfinding/caves", {})
    with pytest.raises(ValueError, match="no counterpart of the keyword 'lifelong'"):
        camar_kwargs("pathfinding/random_grid", {"lifelong": True})


@pytest.mark.slow
@needs_camar
def test_bench_vs_camar_adds_peer_columns(capsys):
    argv = ["bench", "pathfinding/random_grid", "--num-envs", "2", "--steps", "5",
            "--repeats", "1", "--set", "num_agents=4", "--vs", "camar"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "camar_v0:random_grid" in out
    (row,) = table_rows(out, "num_envs")
    marl_sps, peer_sps, ratio = (float(row[i].replace(",", "")) for i in (1, 4, 6))
    assert marl_sps > 0 and peer_sps > 0
    assert ratio == pytest.approx(marl_sps / peer_sps, rel=0.02, abs=0.006)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", ".", "--out", "o", "--reps", "0"],
        ["leaderboard", "--seed", "-1"],
        ["render", "particle/spread", "--out", "x.gif", "--fps", "0"],
        ["eval", "run", "--episodes", "0"],
        ["bench", "particle/spread", "--repeats", "abc"],
    ],
)
def test_out_of_range_options_are_refused_by_the_parser(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "must be >= " in err or "is not an integer" in err


@pytest.mark.integration
def test_hydra_app_gives_marl_train_s_one_line_errors():
    """`python -m marl.app` checks every job's choices and keys before Hydra composes them."""
    for args, needle in [(["-m", "algo=ippo,mapo"], "unknown algorithm 'mapo'"),
                         (["budgt=1e5"], "unknown config key 'budgt'")]:  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "marl.app", *args], capture_output=True, text=True
        )
        assert done.returncode == 2 and needle in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
