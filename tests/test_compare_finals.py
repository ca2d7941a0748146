"""scripts/compare_finals.py: learners' final absolute scores side by side, from run folders."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from scripts_loader import load_script


def _script():
    return load_script("compare_finals")


def _run(
    root: Path,
    algo: str,
    scores: list[float],
    steps: int,
    name="x",
    budget=None,
    seed=None,
    label=None,
) -> str:
    d = root / "swarm" / "vicsek[num_agents=50]" / algo / name
    d.mkdir(parents=True)
    final = {"algo": algo, "env_steps": steps, "absolute": {"return": scores, "order": scores}}
    if budget is not None:
        final["budget"] = budget
    (d / "final.json").write_text(json.dumps(final))
    if seed is not None or label is not None:
        (d / "config.yaml").write_text(f"seed: {seed or 0}\nlabel: {label or 'null'}\n")
    return str(d)


def test_pairs_are_compared_per_task_with_each_runs_env_steps(tmp_path):
    a = _run(tmp_path, "decpomfc", [1.0, 2.0, 3.0, 4.0], 512_000)
    b = _run(tmp_path, "mfac", [5.0, 6.0, 7.0, 8.0], 524_160)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _script().main([a, b, "--reps", "500"]) == 0
    text = out.getvalue()
    assert "### swarm/vicsek[num_agents=50] (return, absolute metric)" in text
    assert "| decpomfc | 4 | 512,000 | 2.50 [" in text and "| mfac | 4 | 524,160 | 6.50 [" in text
    assert "| P(mfac > decpomfc) | 1.00 [1.00, 1.00] |" in text  # every mfac seed is higher
    assert "| P(decpomfc > mfac) | 0.00 [0.00, 0.00] |" in text


def test_runs_of_one_learner_at_two_budgets_are_rows_of_their_own(tmp_path):
    a = _run(tmp_path, "decpomfc", [1.0, 2.0], 512_000, budget=500_000)
    b = _run(tmp_path, "decpomfc", [3.0, 4.0], 2_083_200, name="long", budget=2_000_000)
    c = _run(tmp_path, "decpomfc", [5.0, 6.0], 512_000, name="more", budget=500_000)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _script().main([a, b, c, "--reps", "500"]) == 0
    text = out.getvalue()
    assert "| decpomfc (5e5) | 4 | 512,000 |" in text  # one budget: pooled
    assert "| decpomfc (2e6) | 2 | 2,083,200 |" in text
    assert "| P(decpomfc (2e6) > decpomfc (5e5)) |" in text


def test_a_labelled_run_is_a_learner_of_its_own(tmp_path):
    """`label=qmix-pymarl` trains QMIX at other settings: not pooled with plain QMIX's seeds."""
    a = _run(tmp_path, "qmix", [0.1, 0.2], 1000, seed=0)
    b = _run(tmp_path, "qmix", [0.9, 0.8], 1000, name="pymarl", label="qmix-pymarl")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _script().main([a, b, "--reps", "500"]) == 0
    text = out.getvalue()
    assert "| qmix | 2 | 1,000 |" in text and "| qmix-pymarl | 2 | 1,000 |" in text
    assert "| P(qmix-pymarl > qmix) | 1.00 [1.00, 1.00] |" in text


def test_a_missing_metric_names_the_ones_there(tmp_path):
    a = _run(tmp_path, "ippo", [1.0, 2.0], 1000)
    with pytest.raises(SystemExit, match="no absolute 'cohesion'; has return, order"):
        _script().main([a, "--metric", "cohesion"])


def test_paired_differences_by_hand(tmp_path):
    """Seed k of two runs against each other: the mean difference, its bootstrap CI over seeds
    (one value when every difference is equal) and who is ahead on how many seeds."""
    cf = _script()
    d = cf.paired([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], reps=200)
    assert d["mean"] == (1.0, 1.0, 1.0) and (d["ahead"], d["behind"], d["seeds"]) == (3, 0, 3)
    d = cf.paired([1.0, 0.0, 5.0, 2.0], [0.0, 1.0, 1.0, 2.0], reps=2000)
    assert d["mean"][0] == pytest.approx(1.0) and (d["ahead"], d["behind"]) == (2, 1)
    assert d["mean"][1] < 1.0 < d["mean"][2]
    a = _run(tmp_path, "vdn", [0.9, 0.5, 0.7], 1000)
    b = _run(tmp_path, "iql", [0.8, 0.5, 0.6], 1000)
    c = _run(tmp_path, "qmix", [0.1, 0.2], 1000, seed=3)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cf.main([a, b, c, "--paired", "--reps", "500"]) == 0
    text = out.getvalue()
    assert "| vdn - iql | 0.07 [" in text and "| 2 / 0 of 3 |" in text
    assert "| vdn - qmix | not paired (the runs hold no seed in common) | |" in text


def test_pooled_runs_pair_seed_by_seed_on_their_root_seeds(tmp_path):
    """Two runs per learner (root seeds 0 and 1, given in different orders) pair seed k of
    root r with seed k of root r; a learner missing one root's runs is paired on the seeds both
    hold."""
    a0 = _run(tmp_path, "vdn", [0.9, 0.5], 1000, seed=0)
    a1 = _run(tmp_path, "vdn", [0.4, 0.8], 1000, name="s1", seed=1)
    b0 = _run(tmp_path, "qmix", [0.8, 0.5], 1000, seed=0)
    b1 = _run(tmp_path, "qmix", [0.1, 0.9], 1000, name="s1", seed=1)
    c0 = _run(tmp_path, "iql", [0.1, 0.2], 1000, seed=0)
    c1 = _run(tmp_path, "iql", [0.1, 0.2], 1000, name="s1", seed=2)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _script().main([a0, a1, b1, b0, c0, c1, "--paired", "--reps", "500"]) == 0
    text = out.getvalue()
    # differences 0.1, 0.0, 0.3, -0.1 (mean 0.075) whatever the order the runs were named in
    assert "| vdn - qmix | 0.08 [" in text and "| 2 / 1 of 4 |" in text
    # root 0 only, which both hold: differences 0.8 and 0.3
    assert "| vdn - iql | 0.55 [0.30, 0.80] | 2 / 0 of 2 (the seeds both hold) |" in text


def _metrics(d: str, rows: list[tuple[int, list[float]]]) -> None:
    lines = [json.dumps({"step": s, "eval": {"won": w}, "train": {}}) for s, w in rows]
    (Path(d) / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def test_reached_counts_seeds_and_fisher_by_hand(tmp_path):
    """`--reached`: the first evaluation at or above T per seed, and Fisher's exact test; one
    seed of five against four of five is p = 52/252 (tables 0,1,4,5 of [1,25,100,100,25,1])."""
    cf = _script()
    assert cf.fisher_exact(1, 5, 4, 5) == pytest.approx(52 / 252)
    assert cf.fisher_exact(3, 5, 3, 5) == pytest.approx(1.0)
    assert cf.fisher_exact(0, 4, 4, 4) == pytest.approx(2 / 70)
    a = _run(tmp_path, "vdn", [0.9, 0.1], 300, seed=0)
    _metrics(a, [(0, [0.0, 0.0]), (100, [0.2, 0.6]), (200, [0.7, 0.1]), (300, [0.9, 0.1])])
    assert cf.reached([a], "won", 0.5) == [200, 100]
    assert cf.reached([a], "won", 0.95) == [None, None]
    with pytest.raises(SystemExit, match="no evaluation of 'return'"):
        cf.reached([a], "return", 0.5)


def test_reached_reads_a_compacted_log(tmp_path):
    import gzip

    a = _run(tmp_path, "vdn", [0.9, 0.1], 300, seed=0)
    _metrics(a, [(0, [0.0, 0.0]), (100, [0.2, 0.6]), (200, [0.7, 0.1])])
    log = Path(a) / "metrics.jsonl"
    log.with_name("metrics.jsonl.gz").write_bytes(gzip.compress(log.read_bytes()))
    log.unlink()
    assert _script().reached([a], "won", 0.5) == [200, 100]


def test_reached_table(tmp_path):
    a = _run(tmp_path, "vdn", [0.9, 0.1], 300, seed=0)
    _metrics(a, [(0, [0.0, 0.0]), (100, [0.2, 0.6]), (200, [0.7, 0.1])])
    b = _run(tmp_path, "qmix", [0.1, 0.1], 300, seed=0)
    _metrics(b, [(0, [0.0, 0.0]), (300, [0.1, 0.1])])
    final = {"algo": "vdn", "env_steps": 300, "absolute": {"won": [0.9, 0.1]}}
    (Path(a) / "final.json").write_text(json.dumps(final))
    final = {"algo": "qmix", "env_steps": 300, "absolute": {"won": [0.1, 0.1]}}
    (Path(b) / "final.json").write_text(json.dumps(final))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _script().main([a, b, "--metric", "won", "--reached", "0.5", "--reps", "200"]) == 0
    text = out.getvalue()
    assert "| vdn | 2 of 2 | 200, 100 |" in text
    assert "| qmix | 0 of 2 | -, - |" in text
    assert "| vdn vs qmix | 0.333 |" in text
