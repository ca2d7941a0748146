"""Segment checkpoints: a killed run resumed with resume=true ends bit for bit where an
uninterrupted run ends; the per-run metrics log and the optional external loggers."""

from __future__ import annotations

import contextlib
import importlib.machinery
import io
import json
import shutil
import sys
import types

import jax
import numpy as np
import pytest
from tiny import TINY_IPPO

import marl
from marl import cli
from marl.learning import checkpoint
from marl.learning.runner import run
from marl.learning.training import RunSettings

KILL_AFTER = 3  # segments


@pytest.fixture(autouse=True, scope="module")
def compile_once(tmp_path_factory):
    """A persistent compilation cache shared by this module's runs: each program compiles once
    (every run jits its own closures, which the in-memory cache cannot share)."""
    from jax._src import compilation_cache

    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    saved = {n: getattr(jax.config, n) for n in names}
    jax.config.update(names[0], str(tmp_path_factory.mktemp("xla-cache")))
    jax.config.update(names[1], 0.0)
    compilation_cache.reset_cache()
    yield
    for n, v in saved.items():
        jax.config.update(n, v)
    compilation_cache.reset_cache()


class Killed(Exception):
    pass


@contextlib.contextmanager
def killed_after(segment: int):
    """SegmentCheckpoints.save raises once it has saved `segment` (a kill between segments)."""
    original = checkpoint.SegmentCheckpoints.save

    def save(self, k, *args, **kwargs):
        original(self, k, *args, **kwargs)
        if k == segment:
            raise Killed

    checkpoint.SegmentCheckpoints.save = save
    try:
        yield
    finally:
        checkpoint.SegmentCheckpoints.save = original


def assert_same_tree(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


class TickClock:
    """Stands in for `time` in marl.learning.runner: each perf_counter() call adds 1 second."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 1.0
        return self.now


@pytest.mark.integration
@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    """A replay learner: buffer, typed keys, target network and the best parameters so far;
    with a clock ticking 1 s per reading, each segment trains 1 s, so both runs report
    steps[-1] x 2 seeds / 6 s (the resumed one counts the killed run's 3 s)."""
    from marl.learning import runner

    monkeypatch.setattr(runner, "time", TickClock())
    env = marl.make("particle/simple")
    cfg = {
        "num_envs": 2,
        "rollout_length": 5,
        "buffer_size": 8,
        "batch_size": 4,
        "unroll_buckets": 1,
    }
    train = marl.algorithm("iql")(env, cfg)
    settings = RunSettings(
        seeds=2,
        budget=8 * train.steps_per_update * 6,
        num_evaluations=6,
        eval_episodes=3,
        absolute_episodes=4,
    )
    whole = run(env, train, settings, log=None)

    store = checkpoint.SegmentCheckpoints(tmp_path / "ckpt")
    with killed_after(KILL_AFTER), pytest.raises(Killed):
        run(env, train, settings, log=None, checkpoints=store)
    assert store.latest() == KILL_AFTER
    replayed = []
    resumed = run(
        env,
        train,
        settings,
        log=None,
        checkpoints=checkpoint.SegmentCheckpoints(tmp_path / "ckpt"),
        on_evaluation=lambda step, evals: replayed.append(step),
    )
    assert replayed == whole.steps  # the saved evaluations replayed, then the new ones
    assert resumed.steps == whole.steps
    for a, b in zip(resumed.evaluations, whole.evaluations, strict=True):
        assert_same_tree(a, b)
    assert_same_tree(resumed.train_metrics, whole.train_metrics)
    assert_same_tree(resumed.params, whole.params)
    assert_same_tree(resumed.best_params, whole.best_params)
    assert_same_tree(resumed.absolute, whole.absolute)
    np.testing.assert_array_equal(resumed.best_step, whole.best_step)
    np.testing.assert_array_equal(resumed.best_score, whole.best_score)
    assert resumed.steps_per_second == whole.steps_per_second == whole.steps[-1] * 2 / 6
    # the wall clock too counts the killed run up to its last checkpoint (its meta, the
    # leaderboard's wall time and `marl benchmark status` read it), not the last process only
    assert resumed.wall_time >= whole.wall_time


TINY = TINY_IPPO  # 8 evaluations: a run cut after any of its segments


def train(*overrides: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(["train", *TINY, *overrides])


class FakeWandb(types.ModuleType):
    """Stands in for wandb: records what marl sends (tests never go online)."""

    def __init__(self):
        super().__init__("wandb")
        self.__spec__ = importlib.machinery.ModuleSpec("wandb", None)
        self.inits, self.logged, self.finished = [], [], 0

    def init(self, **kwargs):
        self.inits.append(kwargs)
        return self

    def log(self, scalars, step):
        self.logged.append((step, scalars))

    def finish(self):
        self.finished += 1


def eval_lines(path):
    return [{k: v for k, v in json.loads(x).items() if k != "time"} for x in path.open()]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The tiny run, uninterrupted, logged to a stand-in wandb: (run dir, the fake wandb)."""
    out = tmp_path_factory.mktemp("whole")
    fake, saved = FakeWandb(), sys.modules.get("wandb")
    sys.modules["wandb"] = fake
    try:
        assert train(f"out={out}", "name=whole", "logger=wandb") == 0
    finally:
        if saved is None:
            del sys.modules["wandb"]
        else:
            sys.modules["wandb"] = saved
    return out / "particle" / "simple" / "ippo" / "whole", fake


@pytest.mark.integration
def test_every_evaluation_is_logged_to_jsonl_and_the_logger(whole):
    path, fake = whole
    assert fake.inits[0]["mode"] == "offline" and fake.finished == 1
    logged = eval_lines(path / "metrics.jsonl")
    assert [step for step, _ in fake.logged] == [line["step"] for line in logged]
    assert len(logged) == 9 and logged[0]["step"] == 0 and not logged[0]["train"]
    assert "eval/return" in fake.logged[-1][1]
    assert any(k.startswith("train/") for k in fake.logged[-1][1])
    assert len(logged[-1]["eval"]["return"]) == 2  # per seed


@pytest.mark.integration
def test_a_resumed_run_logs_into_the_same_wandb_run(whole, tmp_path, monkeypatch):
    """Each process makes its own logger; the W&B id kept in the run directory makes a resumed
    run continue its W&B run instead of starting a second one with the rest of the curve."""
    import dataclasses

    from marl.run.folder import claim
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    path, fake = whole
    assert fake.inits[0]["resume"] == "allow"
    assert fake.inits[0]["id"] == (path / "wandb_id").read_text().strip()
    again = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", again)
    run = resolve(compose([*TINY, f"out={tmp_path}", "name=a", "logger=wandb"]))
    for each in (run, dataclasses.replace(run, resume=True), dataclasses.replace(run, name="b")):
        claim(each).close()  # a new process per (re)start
    ids = [init["id"] for init in again.inits]
    assert ids[0] == ids[1] != ids[2]


@pytest.mark.integration
def test_marl_eval_and_render_use_the_saved_parameters(whole, tmp_path, capsys):
    path, _ = whole
    report = tmp_path / "eval.json"
    assert cli.main(["eval", str(path), "--episodes", "8", "--json", str(report)]) == 0
    assert "2 seeds x 8 episodes" in capsys.readouterr().out
    again = json.loads(report.read_text())
    absolute = json.loads((path / "final.json").read_text())["absolute"]["return"]
    assert len(again["return"]) == 2 and again["return"] != absolute  # fresh episodes
    gif = tmp_path / "trained.gif"
    argv = ["render", "particle/simple", "--out", str(gif), "--params", str(path)]
    assert cli.main([*argv, "--seed-index", "1"]) == 0
    assert gif.stat().st_size > 0 and "ippo seed 1 (greedy)" in capsys.readouterr().out
    for extra, needle in [
        (["--seed-index", "2"], "out of range: the run has 2 seeds"),
        (["--set", "episode_limit=10"], "was trained on particle/simple"),
    ]:
        assert cli.main([*argv, *extra]) == 2
        assert needle in capsys.readouterr().err
    assert cli.main(["eval", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    # --algo: a learner value changed for acting; unknown keys and misfits refused
    assert cli.main(["eval", str(path), "--episodes", "2", "--algo", "ent_coef=0.5"]) == 0
    assert "best evaluated, ent_coef=0.5" in capsys.readouterr().out
    for extra, needle in [
        ("foo=1", "foo: not a value of the run's learner to change (valid: critic,"),
        ("hidden=[8]", "differ from the learner's"),
        ("foo", "--algo expects key=value"),
    ]:
        assert cli.main(["eval", str(path), "--algo", extra]) == 2
        assert needle in capsys.readouterr().err


@pytest.mark.integration
def test_a_compacted_run_evaluates_and_renders_from_its_float16_parameters(whole, tmp_path, capsys):
    """`marl eval` of a compacted run scores every seed as the original does on the same keys,
    from its gzipped float32 parameters and, once only the float16 copy is kept, from that;
    `marl render` plays the float16 policy; the compacted record still loads."""
    from marl.results.protocol import load
    from marl.run.saved import compact

    path, _ = whole
    packed = shutil.copytree(path, tmp_path / "packed")
    assert compact.compact_run(packed, params=True)

    def scores(run_dir):
        report = tmp_path / "eval.json"
        assert cli.main(["eval", str(run_dir), "--episodes", "8", "--json", str(report)]) == 0
        return {k: v for k, v in json.loads(report.read_text()).items() if k != "run"}

    full = scores(path)
    assert scores(packed) == full
    for name in ("params.msgpack.gz", "best_params.msgpack.gz"):  # keep only float16
        (packed / name).unlink()
    assert scores(packed) == full
    gif = tmp_path / "half.gif"
    argv = ["render", "particle/simple", "--out", str(gif), "--params", str(packed), "--final"]
    assert cli.main(argv) == 0 and gif.stat().st_size > 0
    assert "ippo seed 0 (greedy)" in capsys.readouterr().out
    (rec,) = load([packed])
    assert rec.path.name == "record.json.gz" and len(rec.runs) == 2


@pytest.mark.integration
def test_marl_train_resume_true_finishes_the_killed_run_identically(tmp_path, whole):
    out = tmp_path / "runs"
    parent = out / "particle" / "simple" / "ippo"
    shutil.copytree(whole[0], parent / "whole")
    with killed_after(KILL_AFTER), pytest.raises(Killed):
        train(f"out={out}", "name=killed")
    killed, whole = parent / "killed", parent / "whole"
    assert not json.loads((killed / "meta.json").read_text())["finished"]
    assert (killed / "checkpoint").is_dir()
    for extra, needle in [
        (["logger=bogus"], "unknown logger 'bogus'; valid: null, wandb, tensorboard"),
        (["distributed=maybe"], "distributed must be true or false"),
        (["distributed=true", "resume=true", "name=killed"], "resume=true is single-host"),
        (["resume=true", "checkpoint=false"], "resume=true needs checkpoint=true"),
        (["name=killed"], "resume=true"),  # a plain rerun says how to continue
        (["name=killed", "resume=true", "seeds=3"], "different seeds"),
        (["name=whole", "resume=true", "seeds=3"], "finished run with a different seeds"),
    ]:
        with contextlib.redirect_stderr(io.StringIO()) as msg:
            assert cli.main(["train", *TINY, f"out={out}", *extra]) == 2
        assert needle in msg.getvalue(), msg.getvalue()
    record = (whole / "record.json").read_bytes()
    with contextlib.redirect_stdout(io.StringIO()) as said:  # a relaunched sweep passes it over
        assert cli.main(["train", *TINY, f"out={out}", "name=whole", "resume=true"]) == 0
    assert "finished before" in said.getvalue() and (whole / "record.json").read_bytes() == record
    assert train(f"out={out}", "name=killed", "resume=true") == 0
    assert (killed / "record.json").read_bytes() == (whole / "record.json").read_bytes()
    assert (killed / "params.msgpack").read_bytes() == (whole / "params.msgpack").read_bytes()
    assert eval_lines(killed / "metrics.jsonl") == eval_lines(whole / "metrics.jsonl")
    assert json.loads((killed / "meta.json").read_text())["finished"]
    assert not (killed / "checkpoint").exists()  # a finished run keeps no checkpoint
    # without name=: the newest unfinished run of this config is continued
    with killed_after(1), pytest.raises(Killed):
        train(f"out={out}")
    (stamped,) = set(parent.iterdir()) - {killed, whole}
    assert train(f"out={out}", "resume=true") == 0
    assert set(parent.iterdir()) == {killed, whole, stamped}
    assert (stamped / "record.json").read_bytes() == (whole / "record.json").read_bytes()


@pytest.mark.integration
def test_a_run_stopped_before_its_first_evaluation_resumes(tmp_path):
    """The directory is claimed (config and an unfinished meta.json) before compiling, so a run
    interrupted then, with nothing evaluated, is continued by resume=true, not refused."""
    import dataclasses

    from marl.run.folder import claim, unfinished_run
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose([*TINY, f"out={tmp_path}", "name=early"]))
    first = claim(run)  # ... and the run stops here (the OS lets go of its folder's lock)
    first.close()
    claimed = first.path
    assert not json.loads((claimed / "meta.json").read_text())["finished"]
    resumed = dataclasses.replace(run, resume=True)
    assert unfinished_run(resumed) == claimed
    assert unfinished_run(dataclasses.replace(resumed, name=None)) == claimed  # newest of config
    again = claim(resumed)
    assert again.resumed and again.path == claimed
    with contextlib.redirect_stderr(io.StringIO()) as msg:
        assert cli.main(["train", *TINY, f"out={tmp_path}", "name=early"]) == 2
    assert "resume=true" in msg.getvalue()


@pytest.mark.integration
def test_a_relaunched_sweep_finds_each_run_as_its_folder_left_it(tmp_path):
    """`relaunch` (what `marl sweep` asks of each run again) and `claim` read the folder: free
    (train it), killed with this config (resume it), killed with another (moved aside, train
    afresh), finished with this config (nothing to do), finished with another (refused)."""
    import dataclasses

    from marl.run.errors import UsageError
    from marl.run.folder import claim, relaunch
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose([*TINY, f"out={tmp_path}", "name=r"]))
    said = []
    assert relaunch(run, said.append) is run  # free
    claim(run).close()  # ... killed before its first evaluation
    again = relaunch(run, said.append)
    assert again is not None and again.resume and again.folder == run.folder
    other = resolve(compose([*TINY, f"out={tmp_path}", "name=r", "seed=1"]))
    assert relaunch(other, said.append) is other and not run.folder.exists()
    (aside,) = run.parent.glob("r.unfinished-*")
    assert said == [f"moved the unfinished run (another config) aside to {aside}"]
    done = claim(run)
    done.close()
    folder = done.path
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "finished": True}))
    (folder / "record.json").write_text("{}")  # the run's last write
    assert relaunch(run) is None and claim(dataclasses.replace(run, resume=True)) is None
    with pytest.raises(UsageError, match="holds a finished run with a different seed"):
        relaunch(other)


def test_a_resumed_run_keeps_metrics_jsonl_whole_and_its_clock(tmp_path):
    """Reopened after a hard kill: a line cut off mid-write is dropped (that step is logged
    again), and `time` goes on from the last line instead of restarting at 0."""
    import dataclasses

    from marl.run.folder import claim
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose([*TINY, f"out={tmp_path}", "name=cut"]))
    cut = claim(run)
    cut.close()  # killed
    path = cut.path
    lines = [{"step": 0, "time": 5.0, "eval": {}, "train": {}},
             {"step": 256, "time": 100.0, "eval": {}, "train": {}}]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (path / "metrics.jsonl").write_text(text + '{"step": 512, "ti')
    again = claim(dataclasses.replace(run, resume=True))
    assert (path / "metrics.jsonl").read_text() == text
    assert again._logged_steps() == {0, 256}
    again.on_evaluation(512, {"return": np.zeros((2, 4))})
    last = json.loads((path / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["step"] == 512 and last["time"] >= 100.0


def test_a_segment_with_no_finished_episode_logs_null_not_0(tmp_path):
    """A seed none of whose episodes ended in a segment has no episode statistic: metrics.jsonl
    holds null for it (valid JSON, not NaN) and loggers get the mean over the other seeds, or no
    value when no seed has one."""
    from marl.run.folder import claim
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    class Scalars:
        def __init__(self):
            self.logged = []

        def log(self, step, scalars):
            self.logged.append(scalars)

        def close(self):
            pass

    run_dir = claim(resolve(compose([*TINY, f"out={tmp_path}", "name=quiet"])))
    run_dir.loggers.append(logger := Scalars())
    metrics = {"train/return": np.array([np.nan, -3.0]), "train/length": np.full(2, np.nan)}
    metrics["loss"] = np.array([0.5, 1.5])
    run_dir.on_train_metrics(256, metrics)
    run_dir.on_evaluation(256, {"return": np.zeros((2, 4))})
    line = json.loads((run_dir.path / "metrics.jsonl").read_text().splitlines()[-1])
    assert line["train"] == {
        "train/return": [None, -3.0],
        "train/length": [None, None],
        "loss": [0.5, 1.5],
    }
    # named train/return, not train/train/return
    assert logger.logged[-1] == {"eval/return": 0.0, "train/return": -3.0, "train/loss": 1.0}
    run_dir.close()


@pytest.mark.integration
def test_a_multi_host_worker_trains_writes_nothing_and_exits_0(tmp_path, monkeypatch):
    """Hosts other than 0 compute their share and leave the writing to host 0; a finished
    share is a success (exit 0), not an interruption (130)."""
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    assert train(f"out={tmp_path}", "name=worker") == 0
    assert not any(tmp_path.rglob("meta.json"))
    with contextlib.redirect_stderr(io.StringIO()) as msg:
        assert cli.main(["sweep", *TINY, f"out={tmp_path}", "distributed=true"]) == 2
    assert "marl sweep is single-host" in msg.getvalue()


@pytest.mark.parametrize("task", ["spread", "3m[see_enemy_actions=true]"])
def test_checkpoint_round_trip_quietly(tmp_path, caplog, task):
    """A checkpoint restores in a run directory named after env keywords (brackets: orbax's
    OCDBT store globbed for its files and lost them), and saving logs no orbax merge warning."""
    store = checkpoint.SegmentCheckpoints(tmp_path / task / "checkpoint")
    state = {"w": jax.numpy.arange(6.0).reshape(2, 3), "key": jax.random.key(3)}
    best = {"w": np.ones(3)}
    history = checkpoint.stack_history([5], [{"r": np.ones(2)}], [{"loss": np.zeros(2)}])
    with caplog.at_level("WARNING"):
        store.save(1, state, best, history)
        store.save(2, state, best, history)
    assert not [r for r in caplog.records if checkpoint._NO_MERGE in r.getMessage()]
    again = checkpoint.SegmentCheckpoints(tmp_path / task / "checkpoint")
    assert again.latest() == 2
    like = {"w": np.zeros((2, 3), np.float32), "key": jax.random.key(0)}
    got_state, got_best, got_history = again.restore(2, like, {"w": np.zeros(3)})
    np.testing.assert_array_equal(got_state["w"], state["w"])
    np.testing.assert_array_equal(
        jax.random.key_data(got_state["key"]), jax.random.key_data(state["key"])
    )
    np.testing.assert_array_equal(got_best["w"], best["w"])
    np.testing.assert_array_equal(got_history["steps"], [5])


def test_pack_rewraps_keys_of_the_template_impl_and_rebuilds_empty_leaves():
    """An rbg key (4 words of key data, not threefry's 2) comes back as an rbg key with its
    data; an empty int32 leaf is left out of the packed leaves and rebuilt as int32 [0, 3]."""
    tree = {"e": np.zeros((0, 3), np.int32), "k": jax.random.key(7, impl="rbg"), "w": np.ones(2)}
    packed = checkpoint._pack(tree)
    assert sorted(packed) == ["1", "2"] and packed["1"].shape == (4,)
    like = {"e": np.zeros((0, 3), np.int32), "k": jax.random.key(0, impl="rbg"), "w": np.ones(2)}
    got = checkpoint._unpack(packed, like)
    assert got["e"].shape == (0, 3) and got["e"].dtype == np.int32
    assert str(jax.random.key_impl(got["k"])) == str(jax.random.key_impl(tree["k"]))
    assert_same_tree(jax.random.key_data(got["k"]), jax.random.key_data(tree["k"]))
    assert_same_tree(got["w"], tree["w"])


def test_only_the_newest_segment_checkpoint_is_kept(tmp_path):
    """Saving segments 1, 2, 3 leaves one segment directory on disk, 3."""
    store = checkpoint.SegmentCheckpoints(tmp_path / "checkpoint")
    history = checkpoint.stack_history([5], [{"r": np.ones(2)}], [{"loss": np.zeros(2)}])
    for segment in (1, 2, 3):
        store.save(segment, {"w": np.full(2, float(segment))}, {"w": np.ones(2)}, history)
    assert [p.name for p in (tmp_path / "checkpoint").iterdir() if p.is_dir()] == ["3"]


def test_resume_without_a_name_continues_the_newest_unfinished_run_of_the_config(tmp_path):
    """Runs of one config created on Jan 1, 2 and 3 (the 3rd finished): resume picks Jan 2's;
    a config key added since (algo.new_key) is no difference, a changed lr or seeds is."""
    import dataclasses
    from datetime import datetime

    from marl.run.folder import claim, config_differences, unfinished_run
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose([*TINY, f"out={tmp_path}"]))
    dirs = [claim(run, now=datetime(2026, 1, day)).path for day in (1, 2, 3)]
    meta = json.loads((dirs[2] / "meta.json").read_text())
    (dirs[2] / "meta.json").write_text(json.dumps({**meta, "finished": True}))
    (dirs[2] / "record.json").write_text("{}")  # the run's last write
    assert unfinished_run(dataclasses.replace(run, resume=True)) == dirs[1]
    before = {"algo": {"lr": 1e-3}, "seeds": 2, "out": "a"}
    assert config_differences(before, {"algo": {"lr": 1e-3, "new_key": 5}, "seeds": 2}) == []
    assert config_differences(before, {"algo": {"lr": 3e-4}, "seeds": 3, "out": "b"}) == [
        "algo",
        "seeds",
    ]


def test_the_restore_template_holds_no_arrays_but_the_keys():
    """A resumed run frees its fresh state before restoring: the template keeps shapes and
    dtypes only (a replay buffer of GBs held twice ran a 2s3z resume out of memory), and the
    typed keys, whose implementation rewraps the restored key data."""
    tree = {"buffer": jax.numpy.zeros((4, 3)), "key": jax.random.split(jax.random.key(0), 2)}
    like = checkpoint.template(tree)
    assert isinstance(like["buffer"], jax.ShapeDtypeStruct) and like["buffer"].shape == (4, 3)
    assert like["key"] is tree["key"]
