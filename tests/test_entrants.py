"""A learner of the user's on a benchmark's cells (`marl benchmark run NAME --algo LEARNER
--records DIR`), ranked beside the benchmark's learners; the leaderboard's refusals name the
real mismatch and the command that trains matching cells; nothing is written into results/
unasked."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from marl import cli
from marl.run.campaigns import benchmark, entrants
from marl.run.train import execute

ROOT = Path(__file__).resolve().parents[1]

TINY = """
name: tiny
records: {records}
protocol: default
tiers:
  cpu:
    particle:
      budget: 2048
      seeds: 2
      tasks: [particle/simple]
      algos: [ippo]
      overrides:
        all: [algo.num_envs=4, algo.rollout_length=16, protocol.num_evaluations=2,
              protocol.eval_episodes=2, protocol.absolute_episodes=4, checkpoint=false]
"""

PLUGIN = '''
import marl


def make_train(env, cfg=None, total_updates=None):
    """A learner of the user's: IPPO under another name."""
    return marl.algorithm("ippo")(env, cfg, total_updates)
'''

FAMILIES = """
name: fam
records: {records}
protocol: default
tiers:
  cpu:
    particle:
      budget: 1e6
      seeds: 3
      tasks: [particle/spread, particle/simple]
      algos: [ippo, iql]
      overrides:
        all: [algo.lr=1e-3]
        iql: [algo.buffer_size=64]
    particle-ippo:
      budget: 5e5
      seeds: 2
      tasks: [particle/simple, particle/reference]
      algos: [happo]
    mirror:
      variant: mirror
      budget: 1e6
      seeds: 3
      tasks: [particle/spread, particle/push]
      algos: [ippo]
  gpu:
    combat:
      budget: 2e6
      seeds: 5
      tasks: [combat/3m]
      algos: [qmix]
"""


def _cli(*args):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """`mylearner` on sys.path, as a user's package would be."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "mylearner.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(site))
    yield "mylearner:make_train"
    sys.modules.pop("mylearner", None)


@pytest.mark.integration
def test_a_plugin_learner_trains_a_benchmarks_cells_and_ranks_beside_its_learners(tmp_path, plugin):
    """The whole path: the benchmark's own cells, then a learner of the user's on exactly those
    cells (seeds, budget, evaluation grid) into a folder of the user's, then the leaderboard
    of both folders."""
    bench, mine, board = tmp_path / "bench", tmp_path / "mine", tmp_path / "board"
    definition = tmp_path / "tiny.yaml"
    definition.write_text(TINY.format(records=bench))
    code, _, err = _cli("benchmark", "run", str(definition))
    assert code == 0, err
    before = _files(bench)
    code, out, err = _cli(
        "benchmark", "run", str(definition), "--algo", plugin, "--records", str(mine)
    )
    assert code == 0, err
    assert f"benchmark tiny: {plugin} on 1 cell(s) into {mine}" in out  # the plan first
    assert out.index("into") < out.index("[1/1] particle/simple/mylearner:make_train")
    assert _files(bench) == before  # the benchmark's records untouched
    theirs = json.loads((bench / "particle/simple/ippo/tiny/meta.json").read_text())
    ours = json.loads((mine / "particle/simple/mylearner.make_train/tiny/meta.json").read_text())
    assert ours["algo"] == plugin and ours["finished"]
    for key in ("seeds", "budget", "env_steps", "protocol", "env_version"):
        assert ours[key] == theirs[key], key
    assert (
        ours["config"]["derived"]["eval_interval"] == theirs["config"]["derived"]["eval_interval"]
    )
    code, out, err = _cli(
        "leaderboard", str(bench), str(mine), "--out", str(board), "--reps", "50",
        "--published", "none", "--benchmark", str(definition),
    )  # fmt: skip
    assert code == 0, err
    assert "1 task(s), 2 algorithm(s)" in out
    md = (board / "leaderboard.md").read_text()
    assert f"| {plugin} |" in md and "| ippo |" in md
    # status of the user's cells: finished, nothing left
    code, out, _ = _cli(
        "benchmark", "status", str(definition), "--algo", plugin, "--records", str(mine)
    )
    assert code == 0 and "0 of 1 cells left" in out


def test_a_new_learner_enters_each_task_once_outside_variant_families(tmp_path):
    """A learner the definition does not name enters every task once, in the first family that
    holds it (its seeds, budget and `overrides: all`, not another learner's), never a variant
    family's; one it names keeps its own cells; --tier and --only narrow them."""
    path = tmp_path / "fam.yaml"
    path.write_text(FAMILIES.format(records=tmp_path / "bench"))
    d = benchmark.load(str(path))
    mine = str(tmp_path / "mine")
    cells = entrants.cells(d, ["mappo"], mine)
    assert [(c.key, c.family, c.seeds, c.budget) for c in cells] == [
        ("particle/spread/mappo", "particle", 3, 1e6),
        ("particle/simple/mappo", "particle", 3, 1e6),
        ("particle/reference/mappo", "particle-ippo", 2, 5e5),
        ("combat/3m/mappo", "combat", 5, 2e6),
    ]
    assert all(c.extra == ("algo.lr=1e-3",) for c in cells[:2]) and cells[2].extra == ()
    assert all(c.records == Path(mine) and c.run_name == "fam" for c in cells)
    assert [c.key for c in entrants.cells(d, ["mappo"], mine, tier="gpu")] == ["combat/3m/mappo"]
    only = entrants.cells(d, ["mappo", "happo"], mine, only=["particle/simple/*"])
    assert [(c.key, c.family) for c in only] == [
        ("particle/simple/mappo", "particle"),
        ("particle/simple/happo", "particle-ippo"),
    ]
    assert only[1].seeds == 2  # happo's own cell of the definition
    with pytest.raises(benchmark.BenchmarkError, match="--only 'combat/\\*/qmix' matches no cell"):
        entrants.cells(d, ["mappo"], mine, only=["combat/*/qmix"])


def test_a_new_learner_is_evaluated_on_the_grid_of_the_benchmarks_learners(tmp_path):
    """Its cell trains the env steps and evaluation interval the definition's learners of the
    task share (IPPO's 2,048-step updates and IQL's 64 pin one interval), whatever its own
    updates (VDN's 64 steps would evaluate every 49,984 steps unpinned); its own updates must
    not move theirs. A learner that lands on their grid unpinned (MAPPO) is left as it is."""
    path = tmp_path / "fam.yaml"
    path.write_text(FAMILIES.format(records=tmp_path / "bench"))
    d = benchmark.load(str(path))
    theirs = dict(
        (c.key, r) for c, r in benchmark.resolve_cells(d, benchmark.cells(d, only=["*/spread/*"]))
    )
    ippo = theirs["particle/spread/ippo"]
    interval = ippo.updates_per_segment * ippo.steps_per_update
    mine = str(tmp_path / "mine")
    chosen = entrants.cells(d, ["vdn", "mappo"], mine, only=["particle/spread/*"])
    (vdn, vdn_run), (mappo, mappo_run) = entrants.resolve(d, chosen, log=lambda _: None)
    assert f"protocol.eval_interval={interval}" in vdn.overrides()
    assert not any(o.startswith("protocol.eval_interval") for o in mappo.overrides())
    for run in (vdn_run, mappo_run):
        assert run.updates_per_segment * run.steps_per_update == interval
        assert run.env_steps == ippo.env_steps == theirs["particle/spread/iql"].env_steps
        assert run.settings.seeds == 3 and run.out == tmp_path / "mine"
    assert vdn_run.steps_per_update != ippo.steps_per_update


@pytest.mark.parametrize(
    "args, message",
    [
        (["--algo", "mappo"], "--algo: give --records DIR"),
        (["--algo", "mappo", "--records", "{bench}"], "benchmark fam's own records folder"),
        (["--algo", "mappo", "--records", "{bench}/mine"], "benchmark fam's own records folder"),
        (["--algo", "mappo", "--records", "{tmp}/m", "--tier", "tpu"], "tier 'tpu' unknown"),
        (["--algo", "no_such.mod:f", "--records", "{tmp}/m"], "no_such.mod:f"),
    ],
)
def test_bad_entrant_options_fail_in_one_line_writing_nothing(tmp_path, args, message):
    path = tmp_path / "fam.yaml"
    path.write_text(FAMILIES.format(records=tmp_path / "bench"))
    before = _files(tmp_path)
    given = [a.format(bench=tmp_path / "bench", tmp=tmp_path) for a in args]
    code, _, err = _cli("benchmark", "run", str(path), *given)
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert _files(tmp_path) == before


def _records(root, algo, seeds, budget, steps, seed=0):
    from test_protocol import write_run

    path, *_ = write_run(
        root, env_id="particle/simple", algo=algo, seeds=seeds, budget=budget, steps=steps,
        env_version="1", root_seed=seed, seed=seed,
    )  # fmt: skip
    return path


def test_the_leaderboards_refusal_names_the_budget_and_seeds_and_the_command(tmp_path):
    """A user's runs at another budget and seed count beside a benchmark's: the refusal says
    budget and seeds (it blamed the evaluation interval) and the command that trains the
    benchmark's cells for that learner into a folder of the user's."""
    path = tmp_path / "tiny.yaml"
    bench, mine = tmp_path / "bench", tmp_path / "mine"
    path.write_text(TINY.format(records=bench))
    _records(bench, "ippo", 2, 2048, (0, 1024, 2048))
    _records(mine, "mylearner:make_train", 3, 512, (0, 256, 512))
    code, _, err = _cli(
        "leaderboard", str(bench), str(mine), "--out", str(tmp_path / "board"),
        "--benchmark", str(path),
    )  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "particle/simple were trained to different budgets: 2,048 env steps x 2 seeds" in err
    assert "but 512 x 3 seeds in" in err and "eval_interval" not in err
    assert f"marl benchmark run {path} --algo mylearner:make_train --records {mine}-tiny" in err
    assert not (tmp_path / "board").exists()


def test_one_folder_holding_a_task_at_two_budgets_is_named(tmp_path):
    """`marl report` splits such a folder into sections; the leaderboard ranks one budget and
    says plainly that the folder holds two."""
    mine = tmp_path / "mine"
    _records(mine / "a", "ippo", 2, 2048, (0, 1024, 2048))
    _records(mine / "b", "mappo", 2, 512, (0, 256, 512), seed=1)
    code, _, err = _cli("leaderboard", str(mine), "--out", str(tmp_path / "board"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "different budgets: 2,048 env steps x 2 seeds" in err
    assert f"{mine} holds particle/simple at two budgets" in err


def test_the_leaderboard_without_out_writes_nothing(tmp_path, monkeypatch):
    """`marl leaderboard RUNS` once wrote into results/ by default, over the committed
    leaderboard; now --out is required, and without it nothing is read or written."""
    _records(tmp_path / "results" / "benchmark" / "v1", "ippo", 2, 2048, (0, 1024, 2048))
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    for args in ([], ["results/benchmark/v1"]):
        code, _, err = _cli("leaderboard", *args)
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert "--out DIR is required" in err
    assert _files(tmp_path) == before


@pytest.mark.integration
def test_the_leaderboard_without_out_leaves_the_repository_as_it_was():
    """The issue's check: in the repository, `marl leaderboard RUNS` with no --out changes
    nothing `git status` sees."""
    status = ["git", "-C", str(ROOT), "status", "--porcelain"]
    try:
        before = subprocess.run(status, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    cmd = [sys.executable, "-m", "marl.cli", "leaderboard", "results/benchmark/v1"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--out DIR is required" in done.stderr
    assert subprocess.run(status, capture_output=True, text=True).stdout == before


def test_benchmark_status_of_a_learners_cells_reads_its_records_folder(tmp_path, monkeypatch):
    """`status` and `run` with --algo look in --records: a finished cell there is skipped."""
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(records=tmp_path / "bench"))
    trained = []

    def train(run):
        trained.append((run.algo, run.out))
        folder = run.folder
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({"finished": True, "wall_time": 1.0}))
        (folder / "record.json").write_text("{}")  # its last write
        return folder

    monkeypatch.setattr(execute, "train_run", train)
    given = ["--algo", "mappo", "--records", str(tmp_path / "mine")]
    assert _cli("benchmark", "run", str(path), *given)[0] == 0
    assert trained == [("mappo", tmp_path / "mine")] and not (tmp_path / "bench").exists()
    code, out, _ = _cli("benchmark", "status", str(path), *given)
    assert code == 0 and "0 of 1 cells left" in out
