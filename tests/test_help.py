"""Help texts say what the command does with the options given: `marl train algo=qmix --help`
lists QMIX's keys, `crossplay --help` prints 95%, `sweep --help` explains vmap=."""

from __future__ import annotations

import re

import pytest

from marl import cli
from marl.cli.parser import build_parser
from marl.run.train.catalog import chosen, describe


def help_text(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


def section(text: str, title: str) -> str:
    """The lines under the heading starting `title`, up to the next blank line."""
    match = re.search(rf"^{re.escape(title)}.*?\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    assert match, f"no '{title}' section in:\n{text}"
    return match.group(1)


def keys(block: str, prefix: str) -> set[str]:
    return set(re.findall(rf"^  {re.escape(prefix)}(\w+)=", block, re.M))


@pytest.mark.parametrize("where", ["before", "after"])
def test_train_help_lists_the_chosen_learners_keys(capsys, where):
    argv = (
        ["train", "algo=qmix", "--help"] if where == "before" else ["train", "--help", "algo=qmix"]
    )
    out = help_text(capsys, argv)
    learner = keys(section(out, "learner keys (algo=qmix"), "algo.")
    assert {"mixing_embed_dim", "hypernet_embed", "td_lambda", "double_q"} <= learner
    assert not {"clip_eps", "gae_lambda", "critic", "value_norm"} & learner  # MAPPO's
    assert "algo=qmix" in section(out, "config groups")


def test_train_help_without_a_choice_lists_the_default_learner(capsys):
    out = help_text(capsys, ["train", "--help"])
    learner = keys(section(out, "learner keys (algo=mappo"), "algo.")
    assert {"clip_eps", "gae_lambda", "critic"} <= learner and "mixing_embed_dim" not in learner


def test_train_help_lists_the_chosen_env_and_protocol(capsys):
    out = help_text(capsys, ["train", "env=combat/3m", "protocol=pathfinding_easy", "-h"])
    block = section(out, "env keywords (env=combat/3m")
    assert {"allies", "enemies"} <= keys(block, "env.generator.")  # keywords under their part
    assert "attack_mode" in keys(block, "env.opponent.") and "  env.opponent=heuristic" in block
    assert "episode_limit" in keys(block, "env.kwargs.") and "num_landmarks" not in block
    protocol = section(out, "protocol keys (protocol=pathfinding_easy")
    assert "none: the tier tests on the training configuration" in protocol


def test_a_learner_without_a_yaml_is_described_not_refused():
    text = describe(["algo=my_pkg.learner:make_train"])
    assert "algo=my_pkg.learner:make_train: no shipped yaml" in text
    assert "algo.KEY=VALUE" in text


def test_the_last_group_choice_wins_and_other_overrides_are_ignored():
    picked = chosen(["algo=ippo", "algo.lr=1e-3", "+algo=qmix", "seeds=3", "env=combat/8m"])
    assert picked == {"env": "combat/8m", "algo": "qmix", "protocol": "default"}


def test_crossplay_help_prints_a_single_percent_sign(capsys):
    out = help_text(capsys, ["crossplay", "--help"])
    assert "95% bootstrap" in " ".join(out.split())
    assert "%%" not in out


def test_sweep_help_explains_vmap(capsys):
    out = help_text(capsys, ["sweep", "--help"])
    assert "vmap=algo.KEY:V1,V2" in out and "ONE vmapped program" in out
    assert "usage: marl sweep" in out and "[vmap=algo.KEY:V1,V2,...]" in out


def test_no_help_text_shows_an_escaped_percent_sign(capsys):
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:
        out = help_text(capsys, [name, "--help"])
        assert "%%" not in out and f"marl {name}" in out, name
