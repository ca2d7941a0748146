"""The README stays true: its set-up commands, its example environment and its env table."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

import marl
from marl.run.catalog import describe_space

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

INSTALL_AND_BENCH = (
    "python -m venv .venv && . .venv/bin/activate && pip install -e . "
    "&& marl train env=particle/spread algo=mappo seeds=10 budget=2e5"
)
INSTALL_AND_TEST = 'pip install -e ".[test]" && pytest -q -n 2'


def section(title: str) -> str:
    """Text of the `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def test_quick_start_first_two_commands():
    blocks = code_blocks(section("Quick start"), "bash")
    assert blocks, "Quick start has no ```bash block"
    commands = [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert commands[:2] == [INSTALL_AND_BENCH, INSTALL_AND_TEST]


def test_ci_runs_the_readme_test_command():
    # the commands CI executes, not its comments (the header quotes the README's command)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    ci = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    install, test = (part.strip() for part in INSTALL_AND_TEST.split("&&"))
    assert install in ci
    assert test in ci


def test_add_your_own_environment_example_runs():
    blocks = code_blocks(section("Add your own environment"), "python")
    assert blocks, "'Add your own environment' has no ```python block"
    namespace: dict = {"__name__": "readme_example"}
    try:
        exec(compile(blocks[0], "README.md:add-your-own-environment", "exec"), namespace)
        env = namespace["env"]
        assert env.spec.name == "mine/guess"
        assert env.spec.num_agents == 3
    finally:
        marl.core.registry._ENVS.pop("mine/guess", None)


def test_add_your_own_learner_example_runs():
    blocks = code_blocks(section("Add your own learner"), "python")
    assert blocks, "'Add your own learner' has no ```python block"
    namespace: dict = {"__name__": "readme_example"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(blocks[0], "README.md:add-your-own-learner", "exec"), namespace)
        result = namespace["result"]
        assert len(result.steps) >= 2 and np.all(np.isfinite(result.curve()))
        assert "ippo-wide" in marl.list_algorithms()
    finally:
        marl.core.registry._ALGORITHMS.pop("ippo-wide", None)


def test_environment_table_matches_registry():
    pattern = r"^\| `([^`]+)` \| (\d+) \| ([^|]+) \| (\d+) \|"
    rows = re.findall(pattern, section("Environments"), re.M)
    documented = {env_id: (int(n), acts.strip(), int(limit)) for env_id, n, acts, limit in rows}
    assert documented, "no environment rows found in the README table"
    # one table: a blank line between rows would end it (the rest renders as a paragraph)
    table = re.search(r"^\|.*\|\n(?:\|.*\|\n)+", section("Environments"), re.M).group(0)
    assert len(re.findall(pattern, table, re.M)) == len(rows), "the table is split"
    # every registered id of a documented family is in the table (other tests may register
    # ids of their own families in this process)
    for family in {env_id.split("/")[0] for env_id in documented}:
        assert sorted(i for i in documented if i.startswith(f"{family}/")) == marl.list_envs(family)
    for env_id, expected in documented.items():
        spec = marl.make(env_id).spec
        actual = (spec.num_agents, describe_space(spec.action_space), spec.episode_limit)
        assert actual == expected, env_id


def test_compare_your_algorithm_commands_are_the_cli_s():
    """The recipe's commands parse with `marl`'s own parser, train into the folder the
    leaderboard then reads beside v1's records, and write nothing into results/."""
    import shlex

    from marl.cli.parser import build_parser

    blocks = code_blocks(section("Compare your algorithm with benchmark v1"), "bash")
    assert blocks, "'Compare your algorithm with benchmark v1' has no ```bash block"
    commands = [shlex.split(line) for line in blocks[0].splitlines() if line.strip()]
    assert all(c[0] == "marl" for c in commands)
    parsed = [build_parser().parse_args(c[1:]) for c in commands]
    runs = [a for a in parsed if a.command == "benchmark"]
    assert {a.action for a in runs} >= {"status", "run"}
    assert all(a.name == "v1" and a.algo and a.records for a in runs)
    (board,) = [a for a in parsed if a.command == "leaderboard"]
    assert board.runs == ["results/benchmark/v1", runs[0].records]
    assert board.out and not Path(board.out).is_relative_to("results")
