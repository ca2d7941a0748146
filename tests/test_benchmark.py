"""Benchmark definitions: cells, their overrides, refusals in one line, status and running the
cells left (a failing cell does not stop the others)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from marl import cli
from marl.run.campaigns import benchmark, benchmark_costs, benchmark_runs
from marl.run.train import execute

TINY = """
name: tiny
records: {records}
protocol: default
tiers:
  cpu:
    particle:
      budget: 2e3
      seeds: 2
      tasks: [particle/simple, "particle/spread[num_agents=2]"]
      algos: [ippo, vdn]
      overrides:
        all: [protocol.num_evaluations=1, protocol.absolute_episodes=4, protocol.eval_episodes=2]
        vdn: [algo.buffer_size=64]
  gpu:
    combat:
      budget: 1e6
      seeds: 5
      tasks: [combat/3m]
      algos: [qmix]
"""


def _definition(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(records=tmp_path / "records"))
    return path


def _cli(*args):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_cells_carry_their_tasks_keywords_and_overrides(tmp_path):
    d = benchmark.load(str(_definition(tmp_path)))
    cells = benchmark.cells(d)
    assert [c.key for c in cells] == [
        "particle/simple/ippo",
        "particle/simple/vdn",
        "particle/spread[num_agents=2]/ippo",
        "particle/spread[num_agents=2]/vdn",
        "combat/3m/qmix",
    ]
    vdn = cells[3]
    assert vdn.overrides()[:2] == ["env=particle/spread", "env.kwargs.num_agents=2"]
    assert "algo.buffer_size=64" in vdn.overrides() and "name=tiny" in vdn.overrides()
    assert "algo.buffer_size=64" not in cells[2].overrides()
    assert [c.key for c in benchmark.cells(d, "gpu")] == ["combat/3m/qmix"]
    assert [c.key for c in benchmark.cells(d, only=["*/vdn"])] == [cells[1].key, cells[3].key]


def test_a_variant_family_names_its_cells_and_runs_apart(tmp_path):
    """The same learner on the same task, trained otherwise (e.g. mirror self-play), is its own
    cell, `task/algo@variant`, with its own run folder; two families that would give one cell
    two definitions are refused in one line."""
    text = (
        TINY.format(records=tmp_path / "records")
        + """    mirror:
      variant: mirror
      budget: 1e6
      seeds: 5
      tasks: [combat/3m]
      algos: [qmix]
      overrides:
        all: [algo.lr=1e-4]
"""
    )
    path = tmp_path / "variant.yaml"
    path.write_text(text)
    cells = benchmark.cells(benchmark.load(str(path)), "gpu")
    assert [c.key for c in cells] == ["combat/3m/qmix", "combat/3m/qmix@mirror"]
    assert "name=tiny" in cells[0].overrides() and "name=tiny-mirror" in cells[1].overrides()
    assert [c.key for c in benchmark.cells(benchmark.load(str(path)), only=["*@mirror"])] == [
        cells[1].key
    ]
    path.write_text(text.replace("      variant: mirror\n", ""))
    with pytest.raises(benchmark.BenchmarkError, match="combat/3m/qmix is defined twice .*variant"):
        benchmark.cells(benchmark.load(str(path)))


def test_only_takes_a_cell_name_as_status_prints_it(tmp_path):
    # the brackets of a task's keywords are a character class to a glob
    d = benchmark.load(str(_definition(tmp_path)))
    name = "particle/spread[num_agents=2]/vdn"
    assert [c.key for c in benchmark.cells(d, only=[name])] == [name]
    assert [c.key for c in benchmark.cells(d, only=["particle/spread*/ippo"])] == [
        "particle/spread[num_agents=2]/ippo"
    ]
    # a glob with a task's keywords in it: the brackets are the name's, not a character class
    assert [c.key for c in benchmark.cells(d, only=["particle/spread[num_agents=2]/*"])] == [
        "particle/spread[num_agents=2]/ippo",
        "particle/spread[num_agents=2]/vdn",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["status", "v0"], "benchmark 'v0' unknown; valid: contests, grid, swarms, v1"),
        (["status", "v1", "--tier", "tpu"], "tier 'tpu' unknown; valid: all, cpu, gpu"),
        (["status", "v1", "--only", "combat/3m/maddpg"], "matches no cell"),
    ],
)
def test_unknown_names_fail_in_one_line_before_any_work(args, message):
    code, _, err = _cli("benchmark", *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err


def test_status_and_run_train_the_cells_left_and_go_on_past_a_failure(tmp_path, monkeypatch):
    path = str(_definition(tmp_path))
    code, out, _ = _cli("benchmark", "status", path, "--tier", "cpu")
    assert code == 0 and "4 of 4 cells left" in out and "unmeasured" in out
    trained = []

    def train(run):  # stands in for marl train: writes a finished run's sidecar
        trained.append(run.algo)
        if run.algo == "vdn" and run.env_kwargs:
            raise RuntimeError("boom")
        folder = run.folder
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({"finished": True, "wall_time": 60.0}))
        (folder / "record.json").write_text("{}")  # its last write
        return folder

    monkeypatch.setattr(execute, "train_run", train)
    code, out, err = _cli("benchmark", "run", path, "--tier", "cpu")
    assert code == 1 and trained == ["ippo", "vdn", "ippo", "vdn"]
    assert "failed: particle/spread[num_agents=2]/vdn: RuntimeError: boom" in err
    code, out, _ = _cli("benchmark", "status", path, "--tier", "cpu")
    assert "1 of 4 cells left" in out and "took 0.0 h" in out
    meta = tmp_path / "records/particle/simple/vdn/tiny/meta.json"
    assert json.loads(meta.read_text())["finished"]
    trained.clear()
    code, _, _ = _cli("benchmark", "run", path, "--tier", "cpu", "--only", "particle/simple/*")
    assert code == 0 and trained == []  # finished cells are skipped


def test_run_resumes_unfinished_cells_then_trains_the_cheapest_first(tmp_path, monkeypatch):
    path = str(_definition(tmp_path))
    records = tmp_path / "records"
    records.mkdir()
    costs = {  # particle/simple/vdn unmeasured
        "particle/simple/ippo": {"s_per_update": 9.0, "compile_s": 1.0},
        "particle/spread[num_agents=2]/ippo": {"s_per_update": 1.0, "compile_s": 1.0},
        "particle/spread[num_agents=2]/vdn": {"s_per_update": 0.001, "compile_s": 1.0},
    }
    (records / "costs.json").write_text(json.dumps(costs))
    cut = records / "particle/simple/ippo/tiny"  # the dearest, but half done: it goes first
    cut.mkdir(parents=True)
    (cut / "meta.json").write_text(json.dumps({"finished": False}))
    trained = []

    def train(run):
        trained.append(f"{run.env_id}{dict(run.env_kwargs) or ''}/{run.algo}:{run.resume}")
        folder = run.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "meta.json").write_text(json.dumps({"finished": True, "wall_time": 1.0}))
        (folder / "record.json").write_text("{}")  # its last write
        return folder

    monkeypatch.setattr(execute, "train_run", train)
    code, _, _ = _cli("benchmark", "run", path, "--tier", "cpu")
    assert code == 0 and trained == [
        "particle/simple/ippo:True",
        "particle/spread{'num_agents': 2}/vdn:False",
        "particle/spread{'num_agents': 2}/ippo:False",
        "particle/simple/vdn:False",
    ]


def test_no_checkpoint_trains_the_cells_without_checkpoints(tmp_path, monkeypatch):
    """For a machine given back after the call (a GPU lent for minutes): a replay buffer's
    checkpoint would cost GBs per segment, and nothing could resume from it."""
    path = str(_definition(tmp_path))
    seen = []

    def train(run):
        seen.append((run.algo, run.checkpoint, run.resume))
        folder = run.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "meta.json").write_text(json.dumps({"finished": True, "wall_time": 1.0}))
        (folder / "record.json").write_text("{}")  # its last write
        return folder

    monkeypatch.setattr(execute, "train_run", train)
    only = ["--tier", "cpu", "--only", "particle/simple/*"]
    assert _cli("benchmark", "run", path, *only, "--no-checkpoint")[0] == 0
    assert seen == [("ippo", False, False), ("vdn", False, False)]
    seen.clear()
    assert _cli("benchmark", "run", path, "--tier", "cpu", "--no-checkpoint")[0] == 0
    assert [s[0] for s in seen] == ["ippo", "vdn"]  # the finished cells are skipped
    seen.clear()
    code, _, _ = _cli("benchmark", "run", path, "--tier", "cpu", "--only", "particle/spread*")
    assert code == 0 and seen == []


def test_status_prices_the_cells_left_at_the_pace_finished_cells_ran(tmp_path):
    d = benchmark.load(str(_definition(tmp_path)))
    runs = benchmark.resolve_cells(d, benchmark.cells(d, "cpu"))
    costs = {cell.key: {"s_per_update": 3600.0, "compile_s": 0.0} for cell, _ in runs}
    for (_, run), took in zip(runs[:3], (2.0, 3.0, 10.0), strict=False):  # 2x, 3x, 10x
        folder = run.folder
        folder.mkdir(parents=True)
        meta = {"finished": True, "wall_time": took * 3600.0 * run.total_updates}
        (folder / "meta.json").write_text(json.dumps(meta))
        (folder / "record.json").write_text("{}")  # its last write
    _, todo, line = benchmark_runs.status(runs, costs)
    left = todo[0][1].total_updates  # hours of training at an hour per update
    assert len(todo) == 1 and f"{left:.1f} h measured" in line
    assert "took 3.0x" in line and f"about {3 * left:.1f} h" in line  # the median
    _, _, line = benchmark_runs.status(runs, {})  # nothing measured: no pace
    assert "1 unmeasured" in line and "took" not in line


def test_status_counts_only_the_segments_an_unfinished_cell_has_left(tmp_path):
    """A cell cut short resumes after its last saved segment: status says how far it got and
    prices only the rest (it priced the whole cell, and said only `unfinished`)."""
    d = benchmark.load(str(_definition(tmp_path)))
    runs = benchmark.resolve_cells(d, benchmark.cells(d, "gpu"))  # combat/3m/qmix: 21 segments
    ((cell, run),) = runs
    costs = {cell.key: {"s_per_update": 3600.0 / run.total_updates, "compile_s": 0.0}}
    folder = run.folder
    (folder / "checkpoint" / "7").mkdir(parents=True)  # orbax keeps the newest segment
    (folder / "checkpoint" / "8.orbax-checkpoint-tmp-1").mkdir()  # a save cut short
    (folder / "meta.json").write_text(json.dumps({"finished": False}))
    rows, todo, line = benchmark_runs.status(runs, costs)
    assert run.num_segments == 21 and len(todo) == 1
    assert rows[0][3] == "unfinished 7/21" and rows[0][4] == "0.7 h"  # 14 of 21 segments
    assert "0.7 h measured" in line
    (folder / "checkpoint" / "7").rmdir()  # killed before its first segment was saved
    rows, _, _ = benchmark_runs.status(runs, costs)
    assert rows[0][3] == "unfinished" and rows[0][4] == "1.0 h"


MEASURED = """
name: measured
records: {records}
protocol: default
tiers:
  cpu:
    particle:
      budget: 1e5
      seeds: 10
      tasks: [particle/spread]
      algos: [ippo]
      overrides:
        ippo: [algo.num_envs=2, algo.rollout_length=8]
"""


@pytest.mark.integration
def test_measure_keeps_each_cells_cost_and_initialises_seeds_as_the_runner(tmp_path):
    """`marl benchmark measure` times the runner's program. A vmap of `train.init` over 10
    seeds of PPO on spread deadlocked XLA's CPU backend (batched QR), so the measure hung;
    it runs in a process of its own here, so a hang fails instead of stopping the suite."""
    import subprocess
    import sys

    path = tmp_path / "measured.yaml"
    path.write_text(MEASURED.format(records=tmp_path / "records"))
    cmd = [sys.executable, "-m", "marl.cli", "benchmark", "measure", str(path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    costs = json.loads((tmp_path / "records" / benchmark_costs.COSTS).read_text())
    assert (
        list(costs) == ["particle/spread/ippo"]
        and costs["particle/spread/ippo"]["s_per_update"] > 0
    )
    assert "particle/spread/ippo:" in done.stdout and "unmeasured" not in done.stdout


@pytest.mark.slow
def test_measure_times_the_runners_segment_with_its_state_donated(tmp_path, monkeypatch):
    """`measure` times the runner's own segment program, which donates the state: timed
    without donation, a replay learner's call also copied its buffer (GBs on combat), which
    nearly doubled the time measured on 5m_vs_6m VDN."""
    import jax

    from marl.learning import training

    d = benchmark.load(str(_definition(tmp_path)))
    (cell,) = benchmark.cells(d, only=["particle/simple/ippo"])
    run = benchmark.resolve_cell(cell)
    train = run.train  # built once, when the cell was resolved
    state = training.init_seeds(train, jax.random.split(jax.random.key(0), 2))
    leaves = jax.tree.leaves(state)
    training.segment_program(train, 1)(state)
    assert all(x.is_deleted() for x in leaves)  # reused, not copied

    lengths = []
    real = training.segment_program
    monkeypatch.setattr(training, "segment_program", lambda t, n: lengths.append(n) or real(t, n))
    assert benchmark_costs.measure(run, updates=2)["s_per_update"] > 0 and lengths == [2]


@pytest.mark.slow
def test_every_shipped_cell_resolves():
    for name in benchmark.names():
        for cell in benchmark.cells(benchmark.load(name)):
            benchmark.resolve_cell(cell)


GRID = """
name: grid
records: {records}
protocol: default
tiers:
  cpu:
    particle:
      budget: 1e6
      seeds: 2
      tasks: [particle/spread]
      algos: [ippo, iql]
    particle-more:
      budget: 1e6
      seeds: 2
      tasks: [particle/spread]
      algos: [mfq]
"""


def test_a_tasks_cells_share_one_evaluation_grid_even_when_run_alone(tmp_path):
    """Learners of different update sizes (PPO 2,048 env steps, IQL 64, MF-Q 32) would each
    round the evaluation interval to their own updates and train different env steps, so their
    records would not compare: the benchmark pins one interval per task, over all its cells."""
    path = tmp_path / "grid.yaml"
    path.write_text(GRID.format(records=tmp_path / "records"))
    d = benchmark.load(str(path))
    naive = {c.algo: benchmark.resolve_cell(c) for c in benchmark.cells(d)}
    assert len({r.total_updates * r.steps_per_update for r in naive.values()}) > 1  # the bug
    runs = dict((c.algo, r) for c, r in benchmark.resolve_cells(d, benchmark.cells(d)))
    steps = {a: r.total_updates * r.steps_per_update for a, r in runs.items()}
    assert len(set(steps.values())) == 1, steps
    intervals = {a: r.settings.eval_interval for a, r in runs.items()}
    assert len(set(intervals.values())) == 1 and intervals["ippo"] % 2048 == 0
    ((cell, alone),) = benchmark.resolve_cells(d, benchmark.cells(d, only=["*/iql"]))
    assert alone.settings.eval_interval == intervals["iql"]
    assert f"protocol.eval_interval={intervals['iql']}" in cell.overrides()


def test_the_leaderboard_says_which_cells_of_a_benchmark_its_records_hold(tmp_path, monkeypatch):
    """A cell counts once its records have the cell's seed count at its budget: too few runs
    or too few steps leave it in the list of cells not yet here, as does a missing learner.
    Only a cell with part folders is resolved (a Hydra composition each) to list its parts."""
    from test_protocol import write_run

    resolved = []
    resolve = benchmark_runs.resolve_cell
    monkeypatch.setattr(
        benchmark_runs, "resolve_cell", lambda c: resolved.append(c.key) or resolve(c)
    )

    records = tmp_path / "records"
    write_run(records / "a", env_id="particle/simple", algo="ippo", seeds=2, steps=(0, 1000, 2048))
    write_run(records / "b", env_id="particle/simple", algo="vdn", seeds=1, steps=(0, 1000, 2048))
    spread = "particle/spread[num_agents=2]"
    write_run(records / "c", env_id=spread, algo="ippo", seeds=2, steps=(0, 500, 1000))
    for a, b, finished in ((0, 2, True), (3, 4, True), (2, 3, False)):  # parts of a cell
        part = records / "combat" / "3m" / "qmix" / f"tiny.part{a}-{b}"
        part.mkdir(parents=True)
        meta = {"finished": finished, "config": {"part": f"{a}:{b}"}}
        (part / "meta.json").write_text(json.dumps(meta))
        if finished:  # a part is complete once its last write, record.json, is there
            (part / "record.json").write_text("{}")
    code, out, err = _cli(
        "leaderboard", str(records), "--out", str(tmp_path / "lb"), "--reps", "50",
        "--published", "none", "--benchmark", str(_definition(tmp_path)),
    )  # fmt: skip
    assert code == 0, err
    assert "1 of 5 cells of benchmark tiny" in out
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    section = md.split("## Benchmark tiny: 1 of 5 cells")[1].split("\n## ")[0]
    assert "(cpu tier 1 of 4, gpu tier 0 of 1;" in section
    assert (
        "| cpu | particle | particle/simple, particle/spread[num_agents=2] | ippo, vdn | "
        "2 x 2e3 | 1 of 4 |" in section
    )
    assert "| gpu | combat | combat/3m | qmix | 5 x 1e6 | 0 of 1 |" in section
    assert "particle/simple/ippo" not in section
    assert "particle/simple/vdn (cpu, 1 of 2 runs, 2,048 steps)" in section
    assert f"{spread}/ippo (cpu, 2 of 2 runs, 1,000 steps)" in section
    assert f"{spread}/vdn (cpu)" in section
    assert "combat/3m/qmix (gpu, 3 of 5 seeds trained in parts (0-1, 3))" in section
    assert resolved == ["combat/3m/qmix"]
    cov = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())["coverage"]
    assert [r["cell"] for r in cov["cells"] if r["held"]] == ["particle/simple/ippo"]
    code, _, err = _cli(
        "leaderboard", str(records), "--out", str(tmp_path / "x"), "--benchmark", "v9"
    )
    assert code != 0 and "benchmark 'v9' unknown; valid:" in err
