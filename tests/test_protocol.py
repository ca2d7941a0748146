"""Run records: marl-eval schema round trip, marl-eval's own loader, clear refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from marl.results import protocol
from marl.results.comparable import check_comparable
from marl.results.protocol import RecordError, load, run_record


def evaluations(seeds=3, episodes=4, steps=(0, 100, 200), shift=0.0, seed=0):
    rng = np.random.default_rng(seed)
    evals = []
    for k, _ in enumerate(steps):
        evals.append(
            {
                "return": rng.normal(k + shift, 1.0, (seeds, episodes)),
                "length": np.full((seeds, episodes), 25.0),
                "return/agents": rng.normal(k, 1.0, (seeds, episodes)),
                "collisions": rng.integers(0, 3, (seeds, episodes)).astype(float),
            }
        )
    absolute = {k: v.repeat(10, axis=1) + 0.5 for k, v in evals[-1].items()}
    return list(steps), evals, absolute


def write_run(
    root,
    env_id="particle/spread",
    algo="mappo",
    protocol_over=None,
    algo_cfg=None,
    root_seed=None,
    budget=None,
    env_version=None,
    **kw,
):
    steps, evals, absolute = evaluations(**kw)
    path = root / env_id / algo / "run"
    path.mkdir(parents=True)
    (path / "record.json").write_text(json.dumps(run_record(env_id, algo, steps, evals, absolute)))
    proto = {"version": "1", "eval_episodes": 4, "absolute_episodes": 40, "metric": "return"}
    proto.update(protocol_over or {})
    meta = {
        "finished": True,
        "protocol": proto,
        "env_steps": steps[-1],
        "config": {"env": {"id": env_id, "kwargs": {}}, "algo": {"name": algo, **(algo_cfg or {})}},
        "anchors": {"random": -3.0, "reference": 3.0},
    }
    if root_seed is not None:
        meta["config"]["seed"] = root_seed
    if budget is not None:
        meta["budget"] = budget
    if env_version is not None:
        meta["env_version"] = {"family": env_id.split("/")[0], "version": env_version}
    (path / "meta.json").write_text(json.dumps(meta))
    return path, steps, evals, absolute


def test_record_round_trip(tmp_path):
    path, steps, evals, absolute = write_run(tmp_path)
    (rec,) = load([path])
    assert (rec.environment, rec.task, rec.algorithm) == ("particle", "spread", "mappo")
    assert not rec.external and len(rec.runs) == 3
    for s, run in enumerate(rec.runs):
        assert run.name == f"run_{s}"
        np.testing.assert_array_equal(run.steps, steps)
        for k in range(len(steps)):
            np.testing.assert_allclose(run.metrics["episode_return"][k], evals[k]["return"][s])
            np.testing.assert_allclose(
                run.metrics["episode_return/agents"][k], evals[k]["return/agents"][s]
            )
        np.testing.assert_allclose(run.absolute["episode_length"], absolute["length"][s])
    np.testing.assert_allclose(rec.final(), evals[-1]["return"].mean(axis=1))
    np.testing.assert_allclose(rec.absolute_metric(), absolute["return"].mean(axis=1))
    curve_steps, values = rec.curve()
    assert values.shape == (3, 3) and list(curve_steps) == steps


def test_single_precision_is_written_short_and_read_back_exactly(tmp_path):
    """float32 metrics are written at their shortest decimal (float64's repr of them is twice
    as long) and read back as the very same float32 values; a NaN is written, and refused
    when read back (tests/test_hostile.py)."""
    rng = np.random.default_rng(0)
    values = rng.normal(0.0, 10.0, (2, 64)).astype(np.float32)
    values[0, 0] = np.nan
    text = json.dumps(run_record("particle/spread", "mappo", [0], [{"return": values}]))
    assert str(float(values[1, 0])) not in text and str(values[1, 0]) in text
    (tmp_path / "record.json").write_text(text)
    with pytest.raises(RecordError, match="run_0/step_0/episode_return: holds NaN"):
        load([tmp_path / "record.json"])
    values[0, 0] = 1.5
    text = json.dumps(run_record("particle/spread", "mappo", [0], [{"return": values}]))
    (tmp_path / "record.json").write_text(text)
    (rec,) = load([tmp_path / "record.json"])
    for s, run in enumerate(rec.runs):
        got = run.metrics["episode_return"][0].astype(np.float32)
        np.testing.assert_array_equal(got, values[s])
    wide = rng.normal(size=(1, 3))  # float64 stays float64
    text = json.dumps(run_record("particle/spread", "mappo", [0], [{"return": wide}]))
    assert str(float(wide[0, 1])) in text


def test_record_metric_names_follow_marl_eval():
    assert protocol.record_metric("return") == "episode_return"
    assert protocol.record_metric("return/adversary") == "episode_return/adversary"
    assert protocol.record_metric("length") == "episode_length"
    assert protocol.record_metric("won") == "won"


def test_marl_eval_reads_our_records(tmp_path):
    """marl-eval's own pipeline (id-marl-eval; installs with --no-deps where its pinned
    pandas does not build) reads a merged file of two algorithms on two tasks."""
    dpu = pytest.importorskip("marl_eval.utils.data_processing_utils")
    diagnose = pytest.importorskip("marl_eval.utils.diagnose_data_errors")
    raw: dict = {"particle": {}}
    for task in ("spread", "simple"):
        raw["particle"][task] = {}
        for algo, shift in (("ippo", 0.0), ("mappo", 1.0)):
            steps, evals, absolute = evaluations(shift=shift, seed=len(task))
            rec = run_record(f"particle/{task}", algo, steps, evals, absolute)
            raw["particle"][task].update(rec["particle"][task])
    assert all(diagnose.DiagnoseData(raw).check_data().values())
    processed = dpu.data_process_pipeline(raw, ["episode_return"])
    assert processed is not raw and processed["extra"]["number_of_runs"] == 3
    matrices, curves = dpu.create_matrices_for_rliable(processed, "particle", ["episode_return"])
    assert matrices["mean_episode_return"]["mappo"].shape == (3, 2)  # runs x tasks
    expected = [
        np.mean(raw["particle"][t]["mappo"]["run_1"]["absolute_metrics"]["episode_return"])
        for t in ("spread", "simple")
    ]
    np.testing.assert_allclose(matrices["mean_episode_return"]["mappo"][1], expected)
    assert curves["mean_episode_return"]["ippo"].shape == (3, 2, 3)  # runs x tasks x steps


def test_loader_names_file_and_field(tmp_path):
    path, *_ = write_run(tmp_path)
    record = json.loads((path / "record.json").read_text())
    del record["particle"]["spread"]["mappo"]["run_1"]["step_2"]["step_count"]
    (path / "record.json").write_text(json.dumps(record))
    with pytest.raises(
        RecordError,
        match=r"record\.json: particle/spread/mappo/run_1/step_2: "
        r"missing step_count",
    ):
        load([path])

    record["particle"]["spread"]["mappo"]["run_1"]["step_2"]["step_count"] = 200
    record["particle"]["spread"]["mappo"]["run_0"]["step_1"]["episode_return"] = "high"
    (path / "record.json").write_text(json.dumps(record))
    with pytest.raises(RecordError, match="run_0/step_1/episode_return: expected a non-empty"):
        load([path])

    (path / "record.json").write_text("{not json")
    with pytest.raises(RecordError, match="cannot read JSON"):
        load([path])
    with pytest.raises(RecordError, match="no such file"):
        load([tmp_path / "missing"])


def test_unfinished_runs_are_skipped(tmp_path):
    path, *_ = write_run(tmp_path)
    meta = json.loads((path / "meta.json").read_text())
    meta["finished"] = False
    (path / "meta.json").write_text(json.dumps(meta))
    assert load([tmp_path]) == []


def test_external_records_are_marked(tmp_path):
    steps, evals, absolute = evaluations()
    path = tmp_path / "mava.json"
    path.write_text(json.dumps(run_record("particle/spread", "ippo", steps, evals, absolute)))
    (rec,) = load([path])
    assert rec.external and rec.protocol == {"eval_episodes": 4, "absolute_episodes": 40}


@pytest.mark.parametrize(
    "change, field",
    [
        ({"eval_episodes": 16}, "protocol.eval_episodes"),
        ({"version": "2"}, "protocol.version"),
        ({"absolute_episodes": 100}, "protocol.absolute_episodes"),
        ({"metric": "occupied"}, "protocol.metric"),
    ],
)
def test_mismatched_protocols_are_refused(tmp_path, change, field):
    write_run(tmp_path / "a", algo="ippo")
    write_run(tmp_path / "b", algo="mappo", protocol_over=change)
    records = load([tmp_path])
    with pytest.raises(RecordError, match=rf"particle/spread .*different protocols: {field}"):
        check_comparable(records)


def test_cells_of_one_task_on_different_env_versions_are_refused(tmp_path):
    """Records of one task made on different behaviour versions of its env family are not
    ranked together: one line names both records and both versions."""
    write_run(tmp_path / "a", algo="ippo", env_version="1")
    write_run(tmp_path / "b", algo="mappo", seed=3, env_version="1")
    check_comparable(load([tmp_path]))
    write_run(tmp_path / "c", algo="happo", seed=4, env_version="2")
    with pytest.raises(RecordError, match=r"particle/spread were made on different versions of "
                       r"its env, '1' in .*/a/.* and '2' in .*/c/") as err:  # fmt: skip
        check_comparable(load([tmp_path]))
    assert "\n" not in str(err.value)


def test_different_budgets_are_refused_same_protocol_accepted(tmp_path):
    write_run(tmp_path / "a", algo="ippo")
    write_run(tmp_path / "b", algo="mappo", seed=3)
    check_comparable(load([tmp_path]))  # same protocol and budget: fine
    write_run(tmp_path / "c", algo="happo", steps=(0, 100, 300))
    with pytest.raises(RecordError, match="env steps"):
        check_comparable(load([tmp_path]))


def test_one_nominal_budget_rounded_to_each_learners_update_compares(tmp_path):
    """Learners round a budget and the evaluation interval up to their own update sizes: runs of
    one nominal budget whose env steps differ by at most `BUDGET_RTOL` of it compare on their
    final scores, whatever their evaluation counts; more than that, or two nominal budgets, not."""
    write_run(tmp_path / "a", algo="ippo", budget=200, steps=(0, 100, 200))
    write_run(tmp_path / "b", algo="mfac", budget=200, steps=(0, 69, 138, 207))
    check_comparable(load([tmp_path]))  # 3.5% apart: one budget
    write_run(tmp_path / "c", algo="happo", budget=200, steps=(0, 120, 240))
    with pytest.raises(RecordError, match="env steps is 200 .* but 240"):
        check_comparable(load([tmp_path]))
    write_run(tmp_path / "d", algo="vdn", budget=190, steps=(0, 100, 195))
    with pytest.raises(RecordError, match="env steps"):
        check_comparable(load([tmp_path / "a", tmp_path / "d"]))
    assert protocol.BUDGET_RTOL == 0.05


def test_a_refusal_names_the_real_mismatch_budget_seeds_or_grid(tmp_path):
    """Two nominal budgets are named as budgets, with each side's seeds (the refusal blamed
    the evaluation interval); one budget on two evaluation grids names both grids; the env
    version its own way. Each refusal carries its records and the setting for the caller."""
    write_run(tmp_path / "a", algo="ippo", budget=200, steps=(0, 100, 200))
    write_run(tmp_path / "b", algo="vdn", budget=1e6, seeds=2, steps=(0, 500_000, 1_000_000))
    with pytest.raises(RecordError) as err:
        check_comparable(load([tmp_path / "a", tmp_path / "b"]))
    message = str(err.value)
    assert "particle/spread were trained to different budgets: 200 env steps x 3 seeds in " in (
        message
    )
    assert "but 1e6 x 2 seeds in " in message and "eval_interval" not in message
    assert err.value.setting == "budget" and [r.algorithm for r in err.value.pair] == [
        "ippo",
        "vdn",
    ]
    write_run(tmp_path / "c", algo="mappo", budget=200, steps=(0, 40, 80, 120, 160, 200, 260))
    with pytest.raises(RecordError, match=r"evaluated on different grids: 3 evaluations every "
                       r"100 steps to 200 in .* but 7 evaluations every 40 steps to 260 in "
                       r".*protocol\.eval_interval") as err:  # fmt: skip
        check_comparable(load([tmp_path / "a", tmp_path / "c"]))
    assert err.value.setting == "evaluation grid" and "\n" not in str(err.value)


def test_one_algorithm_with_different_settings_is_refused(tmp_path):
    """Runs pooled under one algorithm name must share its settings: a tuned variant is a
    different algorithm (label=), while speed-only settings (the same loss) may differ."""
    base = {"lr": 1e-3, "hidden": [64], "pack_episodes": 1}
    write_run(tmp_path / "a", algo="qmix", algo_cfg=base)
    write_run(tmp_path / "b", algo="qmix", algo_cfg={**base, "pack_episodes": 4}, seed=1)
    write_run(tmp_path / "c", algo="vdn", algo_cfg={**base, "lr": 5e-4}, seed=2)
    check_comparable(load([tmp_path]))  # qmix's runs differ only in speed; vdn is another name
    write_run(tmp_path / "d", algo="qmix", algo_cfg={**base, "hidden": [128]}, seed=3)
    with pytest.raises(RecordError, match=r"qmix on particle/spread .*algo\.hidden .*label="):
        check_comparable(load([tmp_path]))
    write_run(tmp_path / "e", algo="mappo", algo_cfg={"lr": 1.0}, env_id="particle/simple")
    write_run(tmp_path / "f", algo="mappo", algo_cfg={"lr": 2.0})  # another task: fine
    check_comparable(load([tmp_path / "e", tmp_path / "f"]))


def test_runs_from_one_root_seed_are_not_pooled_twice(tmp_path):
    """Seed k of any run is split(key(seed), seeds)[k]: two records of one algorithm from one
    root seed (a rerun without name=, a copied directory) hold the same runs, and pooling them
    would shrink the confidence intervals for nothing."""
    write_run(tmp_path / "a", algo="ippo", root_seed=0)
    write_run(tmp_path / "b", algo="ippo", root_seed=10)
    write_run(tmp_path / "c", algo="mappo", root_seed=0)  # another algorithm may share seeds
    check_comparable(load([tmp_path]))
    write_run(tmp_path / "d", algo="ippo", root_seed=0)
    with pytest.raises(RecordError, match=r"both hold ippo on particle/spread .*root seed 0"):
        check_comparable(load([tmp_path]))


def test_other_tasks_do_not_need_to_agree(tmp_path):
    write_run(tmp_path / "a", env_id="particle/spread")
    write_run(tmp_path / "b", env_id="particle/simple", protocol_over={"eval_episodes": 8})
    check_comparable(load([tmp_path]))
    assert math.isfinite(load([tmp_path])[0].final().mean())


def test_task_names_carry_non_default_keywords():
    defaults = {"num_agents": 3, "continuous_actions": False}
    assert protocol.task_name("particle/spread", {}, defaults) == "spread"
    assert protocol.task_name("particle/spread", {"num_agents": 3}, defaults) == "spread"
    assert (
        protocol.task_name(
            "particle/spread", {"continuous_actions": True, "num_agents": 5}, defaults
        )
        == "spread[continuous_actions=true,num_agents=5]"
    )


def test_a_record_without_absolute_metrics_scores_its_last_evaluation(tmp_path):
    """No `absolute_metrics`: a run's score is the mean of its LAST evaluation, run_0: steps
    0, 100, 100 (repeated counts are allowed, only a decrease is refused) with returns
    [1, 3], [5, 7], [9, 11] -> 10 (not the first's 2)."""
    evals = [
        {"return": np.array([[1.0, 3.0], [0.0, 0.0]])},
        {"return": np.array([[5.0, 7.0], [2.0, 2.0]])},
        {"return": np.array([[9.0, 11.0], [4.0, 6.0]])},
    ]
    path = tmp_path / "external.json"
    path.write_text(json.dumps(run_record("particle/spread", "ippo", [0, 100, 100], evals)))
    (rec,) = load([path])
    np.testing.assert_array_equal(rec.runs[0].steps, [0, 100, 100])
    np.testing.assert_allclose(rec.absolute_metric(), [10.0, 5.0])
    np.testing.assert_allclose(rec.final(), [10.0, 5.0])
