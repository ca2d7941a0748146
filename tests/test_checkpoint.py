"""Segment checkpoints: a killed run resumed with resume=true ends bit for bit where an
uninterrupted run ends; the per-run metrics log and the optional external loggers."""

from __future__ import annotations

import contextlib
import importlib.machinery
import io
import json
import sys
import types

import jax
import numpy as np
import pytest

import marl
from marl import checkpoint, cli
from marl.training import RunSettings, run

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


def test_a_killed_run_resumes_to_the_uninterrupted_result(tmp_path):
    """A replay learner: buffer, typed keys, target network and the best parameters so far."""
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


TINY = [
    "env=particle/simple",
    "algo=ippo",
    "seeds=2",
    "budget=2048",
    "algo.num_envs=4",
    "algo.rollout_length=16",
    "protocol.eval_episodes=4",
    "protocol.num_evaluations=8",
    "protocol.absolute_episodes=8",
]


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


def test_marl_train_resume_true_finishes_the_killed_run_identically(tmp_path, monkeypatch):
    out = tmp_path / "runs"
    parent = out / "particle" / "simple" / "ippo"
    monkeypatch.setitem(sys.modules, "wandb", FakeWandb())
    assert train(f"out={out}", "name=whole", "logger=wandb") == 0
    fake = sys.modules["wandb"]
    assert fake.inits[0]["mode"] == "offline" and fake.finished == 1
    logged = eval_lines(parent / "whole" / "metrics.jsonl")
    assert [step for step, _ in fake.logged] == [line["step"] for line in logged]
    assert len(logged) == 9 and logged[0]["step"] == 0 and not logged[0]["train"]
    assert "eval/return" in fake.logged[-1][1]
    assert any(k.startswith("train/") for k in fake.logged[-1][1])
    assert len(logged[-1]["eval"]["return"]) == 2  # per seed
    with killed_after(KILL_AFTER), pytest.raises(Killed):
        train(f"out={out}", "name=killed")
    killed, whole = parent / "killed", parent / "whole"
    assert not json.loads((killed / "meta.json").read_text())["finished"]
    assert (killed / "checkpoint").is_dir()
    for extra, needle in [
        (["logger=bogus"], "unknown logger 'bogus'; valid: null, wandb, tensorboard"),
        (["name=killed"], "resume=true"),  # a plain rerun says how to continue
        (["name=killed", "resume=true", "seeds=3"], "different seeds"),
        (["name=whole", "resume=true"], "is finished; nothing to resume"),
    ]:
        with contextlib.redirect_stderr(io.StringIO()) as msg:
            assert cli.main(["train", *TINY, f"out={out}", *extra]) == 2
        assert needle in msg.getvalue(), msg.getvalue()
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
