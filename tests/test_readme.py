"""The README stays true: its set-up commands, its tables, its example, its commands and its
links; every number in it is checked against the code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

import marl
from marl.cli.parser import build_parser
from marl.run.train.catalog import BUILTIN_FACTS, env_rows

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

INSTALL_AND_BENCH = (
    "python -m venv .venv && . .venv/bin/activate && pip install -e . "
    "&& marl train env=particle/spread algo=mappo seeds=10 budget=2e5"
)
INSTALL_AND_TEST = 'pip install -e ".[test]" && pytest -q -n 2'


def section(title: str, text: str = README) -> str:
    """Text of the `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {title}' section"
    return match.group(1)


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def commands(text: str) -> list[str]:
    """The command lines of a text's ```bash blocks (comments and blank lines left out)."""
    return [
        line.split("  #")[0].strip()
        for block in code_blocks(text, "bash")
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def test_the_readme_is_short():
    assert len(README.splitlines()) < 250


def test_quick_start_first_two_commands():
    assert commands(section("Quick start"))[:2] == [INSTALL_AND_BENCH, INSTALL_AND_TEST]


def test_quick_start_numbers_are_the_commands():
    text = " ".join(section("Quick start").split())
    assert "for 200,000 environment steps on each of 10 seeds" in text
    assert "seeds=10 budget=2e5" in INSTALL_AND_BENCH and int(float("2e5")) == 200_000
    assert "runs/particle/spread/mappo/" in text


def test_ci_runs_the_readme_test_command():
    # the commands CI executes, not its comments (the header quotes the README's command)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    ci = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    install, test = (part.strip() for part in INSTALL_AND_TEST.split("&&"))
    assert install in ci
    assert test in ci


def test_environment_table_is_the_catalogs():
    """The table is what `marl list` prints (tests/test_catalog.py holds those facts to the
    envs themselves), every built-in id in it, in one table."""
    pattern = r"^\| `([^`]+)` \| (\d+) \| ([^|]+) \| (\d+) \|"
    rows = re.findall(pattern, section("Environments"), re.M)
    documented = {env_id: (n, acts.strip(), limit) for env_id, n, acts, limit in rows}
    table = re.search(r"^\|.*\|\n(?:\|.*\|\n)+", section("Environments"), re.M).group(0)
    assert len(re.findall(pattern, table, re.M)) == len(rows), "the table is split"
    assert sorted(documented) == sorted(BUILTIN_FACTS)
    listed = {env_id: (n, acts, limit) for env_id, n, acts, limit in env_rows()}
    for env_id, facts in documented.items():
        assert facts == listed[env_id], env_id


def test_the_families_counted_are_the_registrys():
    families = {env_id.split("/")[0] for env_id in BUILTIN_FACTS} - {"jaxmarl"}
    assert len(families) == 6 and "six environment\nfamilies" in README


def test_learner_table_is_the_registrys():
    names = re.findall(r"^\| `([a-z]+)` \|", section("Learners"), re.M)
    assert sorted(names) == sorted(n for n in marl.list_algorithms() if "." not in n)
    assert len(names) == 11


def test_the_python_example_runs():
    (block,) = code_blocks(section("Environments"), "python")
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(block, "README.md:environments", "exec"), namespace)
    ts = namespace["ts"]
    assert ts.obs.shape == (3, 18) and ts.avail_actions.shape == (3, 5)  # as its comments say
    assert ts.reward.shape == (3,)


def test_the_evaluation_interval_stated_is_the_protocols():
    protocol = yaml.safe_load((ROOT / "marl/conf/protocol/default.yaml").read_text())
    assert protocol["num_evaluations"] == 20 and "every\nbudget/20 steps" in README


def test_every_command_parses_with_marls_parser(tmp_path, capsys):
    from marl import cli

    lines = commands(section("Use it"))
    assert lines and all(line.startswith("marl ") for line in lines)
    parsed = [build_parser().parse_args(shlex.split(line)[1:]) for line in lines]
    assert {a.command for a in parsed} >= {"list", "train", "sweep", "report", "leaderboard"}
    (train,) = [line for line in lines if line.startswith("marl train")]
    assert cli.main([*shlex.split(train)[1:2], "--dry-run", *shlex.split(train)[2:]]) == 0
    assert "combat/3m with qmix: 5 seeds" in capsys.readouterr().out
    (run,) = [a for a in parsed if a.command == "benchmark" and a.action == "run"]
    (check,) = [a for a in parsed if a.command == "benchmark" and a.action == "verify"]
    (board,) = [a for a in parsed if a.command == "leaderboard"]
    assert run.name == "v1" and run.algo and run.records
    assert check.name == "v1" and check.only == ["combat/3m/il"]
    assert board.runs == ["results/benchmark/v1", run.records]


def test_every_link_leads_to_a_file():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert len(links) > 15
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, missing
