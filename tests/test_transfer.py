"""Transfer evaluation (protocol.transfer) and the pathfinding tier presets."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from marl import cli
from marl.run.errors import ConfigError
from marl.run.train.compose import compose
from marl.run.train.resolve import resolve
from marl.run.train.transfer import TransferError, parse_targets, summary

TINY = ["env=particle/spread", "algo=ippo", "seeds=2", "budget=512", "algo.num_envs=4",
        "algo.rollout_length=32", "protocol.num_evaluations=1", "protocol.eval_episodes=2",
        "protocol.absolute_episodes=3"]  # fmt: skip
SHORT = "protocol.transfer=[{name:short,id:'particle/spread',kwargs:{episode_limit:7}}]"


def count_builds(monkeypatch) -> dict[str, int]:
    """Counts of environments (`registry.make`) and learners (a registered `make_train`
    called) built from here on."""
    from marl.core import registry

    built = {"envs": 0, "learners": 0}
    make, algorithm = registry.make, registry.algorithm

    def counted_make(env_id, **kwargs):
        built["envs"] += 1
        return make(env_id, **kwargs)

    def counted_algorithm(name):
        make_train = algorithm(name)

        @functools.wraps(make_train)
        def counted(*args, **kwargs):
            built["learners"] += 1
            return make_train(*args, **kwargs)

        return counted

    monkeypatch.setattr(registry, "make", counted_make)
    monkeypatch.setattr(registry, "algorithm", counted_algorithm)
    return built


def test_targets_parse_and_refuse_mistakes():
    (t,) = parse_targets([{"id": "particle/spread", "kwargs": {"episode_limit": 7}}])
    assert (t.name, t.env_id, t.env_kwargs) == (
        "particle/spread",
        "particle/spread",
        {"episode_limit": 7},
    )
    with pytest.raises(TransferError, match=r"unknown key\(s\) kw; valid: name, id, kwargs"):
        parse_targets([{"id": "particle/spread", "kw": {}}])
    with pytest.raises(TransferError, match="two targets named 'a'"):
        parse_targets(
            [{"name": "a", "id": "particle/spread"}, {"name": "a", "id": "particle/simple"}]
        )


@pytest.mark.integration
def test_trained_parameters_play_each_target_and_land_in_transfer_json(
    tmp_path, capsys, monkeypatch
):
    """...and the run builds each environment and learner once: its own and the target's
    envs, its learner and the target's (the learner says its update's size, so no first build
    reads it; the run layer once built them all again after resolving them, 4 and 4)."""
    built = count_builds(monkeypatch)
    assert cli.main(["train", *TINY, SHORT, f"out={tmp_path}"]) == 0
    assert built == {"envs": 2, "learners": 2}
    (run_dir,) = tmp_path.glob("*/*/*/*")  # <out>/<family>/<scenario>/<algo>/<name>
    out = json.loads((run_dir / "transfer.json").read_text())
    assert list(out) == ["short"] and out["short"]["episodes"] == 3
    lengths = np.asarray(out["short"]["metrics"]["length"])
    assert lengths.shape == (2, 3) and (lengths == 7).all()  # the target's own episode limit
    assert "transfer short (particle/spread): return" in capsys.readouterr().out


def test_targets_the_policy_cannot_drive_fail_before_compiling():
    with pytest.raises(ConfigError, match="do not fit particle/spread.*agent_id=false"):
        resolve(
            compose([*TINY, "protocol.transfer=[{id:'particle/spread',kwargs:{num_agents:4}}]"])
        )
    with pytest.raises(ConfigError, match="transfer target nope:.*unknown environment"):
        resolve(compose([*TINY, "protocol.transfer=[{name:nope,id:'particle/nope'}]"]))


@pytest.mark.parametrize(
    "tier", [pytest.param("pathfinding_medium", marks=pytest.mark.slow), "pathfinding_hard"]
)
def test_pathfinding_tiers_resolve_for_agent_count_free_policies(tier):
    base = ["env=pathfinding/random_grid", "algo=mappo", f"protocol={tier}"]
    run = resolve(compose([*base, "algo.agent_id=false"]))
    assert len(run.transfer) >= 4
    with pytest.raises(ConfigError, match="agent_id=false"):
        resolve(compose(base))


def test_summary_averages_episodes_then_seeds_with_sample_std():
    """Seeds [[1, 3], [5, 7], [0, 0]]: per-seed means 2, 6, 0 -> 2.667 +- 3.055 (ddof=1: the
    root of 28/3 / 2); one seed has std 0."""
    results = {"a": {"id": "x/y", "episodes": 2, "metrics": {"return": [[1, 3], [5, 7], [0, 0]]}}}
    assert summary(results, "return") == [
        "transfer a (x/y): return 2.667 ± 3.055 over 3 seeds x 2 episodes"
    ]
    one = {"b": {"id": "x/z", "episodes": 3, "metrics": {"length": [[4, 5, 9]]}}}
    assert summary(one, "length") == [
        "transfer b (x/z): length 6.000 ± 0.000 over 1 seeds x 3 episodes"
    ]
