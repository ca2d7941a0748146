"""`marl bench --suite`: its parts run, report what they measured, and write results/bench.md."""

from __future__ import annotations

import pytest

from marl.bench import suite as benchsuite
from marl.bench import suite_tables
from marl.cli import main


@pytest.mark.parametrize("family", benchsuite.SCALING_FAMILIES)
@pytest.mark.parametrize("n", [3, 40])
def test_scaled_env_has_n_agents(family, n):
    env = benchsuite.scaled_env(family, n)
    assert env.spec.num_agents == n


def test_scaled_env_rejects_unknown_family_and_bad_counts():
    with pytest.raises(ValueError, match="unknown family"):
        benchsuite.scaled_env("chess", 3)
    with pytest.raises(ValueError, match=">= 1"):
        benchsuite.scaled_env("particle", 0)


def test_env_case_steps_are_clamped():
    case = benchsuite.EnvCase("particle/spread", "jaxmarl", 10_000, max_steps=500, min_steps=5)
    assert [case.steps(n) for n in (1, 64, 1024, 4096)] == [500, 156, 9, 5]


def test_suite_envs_and_scaling_records_and_markdown(tmp_path):
    cases = [benchsuite.EnvCase("particle/simple", None, 64, max_steps=8)]
    out = benchsuite.run_suite(
        parts=["envs", "scaling"],
        num_envs=[2],
        repeats=1,
        agents=[3],
        families=["particle"],
        env_cases=cases,
    )
    (rec,) = out["envs"]
    assert rec["case"] == "particle/simple" and "ratio" not in rec
    assert rec["marl"]["num_envs"] == 2 and rec["marl"]["steps"] == 8
    assert rec["marl"]["steps_per_s"] > 0 and rec["marl"]["memory_bytes"] > 0
    (scale,) = out["scaling"]
    assert scale["family"] == "particle" and scale["num_agents"] == 3
    assert scale["num_envs"] == 1024 // 3
    path = tmp_path / "bench.md"
    path.write_text("old tables\n" + suite_tables.NOTES_MARK + "\nhand-written notes\n")
    suite_tables.write_markdown(str(path), out, "marl bench --suite")
    text = path.read_text()
    assert "old tables" not in text and "hand-written notes" in text
    assert "| particle/simple | 2 | 8 |" in text
    assert "## Scaling with the number of agents" in text
    assert "## Training loops" not in text  # not measured


@pytest.mark.slow
def test_training_profile_parts():
    # a mean-field learner: its policy also reads the env's neighbourhood
    rec = benchsuite.bench_training(
        ["env=particle/spread", "algo=mfq", "algo.num_envs=2", "algo.batch_size=4"],
        work=4,
        repeats=1,
    )
    assert rec["algo"] == "mfq" and rec["updates"] * rec["env_steps_per_update"] >= 4
    assert rec["steps_per_s"] == pytest.approx(
        rec["updates"] * rec["env_steps_per_update"] / rec["train_s"]
    )
    shares = rec["share_env"] + rec["share_policy"] + rec["share_update"]
    assert 0.0 < rec["share_env"] <= 1.0 and shares >= 0.99  # parts cover the training step
    assert rec["memory_bytes"] > 0 and rec["compile_s"] > 0 and rec["policy_s"] > 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--suite", "envs,bogus"], "unknown suite part"),
        (["bench", "--suite", "particle/spread"], "unknown suite part"),
        (["bench", "particle/spread", "--suite"], "drop the env id"),
        (["bench", "--suite", "envs", "--steps", "10"], "sizes its scans"),
        (["bench"], "needs an env id"),
        (["bench", "cleanup/comm", "--vs"], "no peer has a cleanup"),
    ],
)
def test_bench_cli_errors(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_random_valid_actions_are_uniform_over_available_ones():
    import jax
    import jax.numpy as jnp
    import numpy as np

    from marl.bench.envs import random_valid_actions
    from marl.core.spaces import Discrete

    avail = jnp.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1]], bool)
    keys = jax.random.split(jax.random.key(0), 20_000)
    acts = np.asarray(jax.vmap(lambda k: random_valid_actions(k, Discrete(5), avail))(keys))
    for i in range(3):
        counts = np.bincount(acts[:, i], minlength=5) / len(keys)
        allowed = np.asarray(avail[i])
        assert np.all(counts[~allowed] == 0)  # never an unavailable action
        np.testing.assert_allclose(counts[allowed], 1 / allowed.sum(), atol=0.015)


def test_batch_last_equals_vmap_in_every_regime():
    """`marl.core.batching.batch_last`: batch-minor, plain-vmap and batch-of-one paths and nested
    vmaps all compute the kernel's values."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from marl.core.batching import batch_last

    def kernel(pos, w):  # pairwise sums, trailing batch axes
        d = pos[:, None] - pos[None, :]
        return jnp.sum(jnp.tanh(d) * w[:, None], axis=1)

    pos = jax.random.normal(jax.random.key(0), (64, 5))
    w = jax.random.normal(jax.random.key(1), (64, 5))
    want = jax.vmap(kernel)(pos, w)
    for ratio in (None, 4.0):
        fn = batch_last(kernel, ratio)
        np.testing.assert_allclose(jax.jit(jax.vmap(fn))(pos, w), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jax.vmap(fn)(pos[:1], w[:1]), want[:1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(fn(pos[3], w[3]), want[3], rtol=1e-5, atol=1e-6)
        nested = jax.vmap(jax.vmap(fn, in_axes=(0, None)), in_axes=(None, 0))(pos, w[:2])
        np.testing.assert_allclose(nested[1, 7], kernel(pos[7], w[1]), rtol=1e-5, atol=1e-6)


def _fake(parts: list[str], date: str) -> dict:
    results = {"machine": "m", "date": date, "vs": False, "repeats": 1, "wall_s": 60.0}
    if "scaling" in parts:
        results["scaling"] = [
            {
                "family": "particle",
                "num_agents": 3,
                "num_envs": 341,
                "steps_per_s": 10.0,
                "agent_steps_per_s": 30.0,
                "compile_s": 1.0,
                "memory_bytes": 2**20,
            }
        ]
    return results


def test_a_partial_suite_run_replaces_only_its_tables_and_records(tmp_path):
    path = tmp_path / "bench.md"
    first = _fake(["scaling"], "2026-01-01")
    suite_tables.write_markdown(str(path), first, "marl bench --suite scaling")
    path.write_text(path.read_text() + "hand-written notes\n")
    # an envs table from an earlier run, as the full suite would have written it
    envs = "## Environment stepping\n\nMeasured by `old`.\n\n| old env row |\n\n"
    text = path.read_text().replace("## Scaling", envs + "## Scaling")
    path.write_text(text)
    second = _fake(["scaling"], "2026-02-02")
    second["scaling"][0]["steps_per_s"] = 20.0
    suite_tables.write_markdown(str(path), second, "marl bench --suite scaling")
    text = path.read_text()
    assert text.count("## Environment stepping") == 1 and "| old env row |" in text
    assert text.count("## Scaling with the number of agents") == 1
    assert "on 2026-02-02" in text and "on 2026-01-01" not in text  # the table measured anew
    assert "| particle | 3 | 341 | 20 |" in text and "| particle | 3 | 341 | 10 |" not in text
    assert text.index("## Environment stepping") < text.index("## Scaling")
    assert text.endswith("hand-written notes\n") and text.count(suite_tables.NOTES_MARK) == 1

    old = {**_fake([], "2026-01-01"), "envs": ["e"], "train": ["t"], "scaling": ["s"]}
    old["repeats"], second["repeats"] = 5, 2
    merged = suite_tables.merge_records(old, second, "marl bench --suite scaling")
    # each part names its own run's repeats (the file-wide method line names none)
    assert merged["measured"]["envs"]["repeats"] == 5
    assert merged["measured"]["scaling"]["repeats"] == 2
    assert merged["envs"] == ["e"] and merged["train"] == ["t"]
    assert merged["scaling"] == second["scaling"] and merged["date"] == "2026-02-02"
    assert merged["measured"]["envs"]["date"] == "2026-01-01"
    assert merged["measured"]["scaling"]["command"] == "marl bench --suite scaling"
    scaling_only = {k: v for k, v in merged.items() if k not in ("envs", "train")}
    table = suite_tables.markdown(scaling_only, "ignored for parts with a measured entry")
    assert "Measured by `marl bench --suite scaling` on 2026-02-02" in table
    assert "best of 2 timed calls" in table and "best of 5" not in table
