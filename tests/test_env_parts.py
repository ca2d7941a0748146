"""An env family's parts are its config surface: `env=combat/3m env.reward=magent
env.generator.enemies=6m` builds the battle those keywords name and records the task by its
keywords, whichever way they were set (`marl.core.config_parts`, `marl.run.train.env_parts`)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from marl.core import registry
from marl.core.config_parts import env_parts, part_nodes
from marl.run.errors import ConfigError
from marl.run.train.catalog import describe
from marl.run.train.compose import compose
from marl.run.train.resolve import resolve
from marl.run.train.settings import plain

RUN = ["algo=ippo", "seeds=1", "budget=2e4"]


def _run(*overrides):
    return resolve(compose([*overrides, *RUN]))


def test_parts_set_on_the_command_line_build_the_battle_they_name():
    run = _run("env=combat/3m", "env.reward=magent", "env.generator.enemies=6m")
    assert run.env.num_enemies == 6 and type(run.env.reward).__name__ == "MagentReward"
    assert run.env_kwargs == {"enemies": "6m", "reward": "magent"}
    assert run.task == "3m[enemies=6m,reward=magent]"
    flat = _run("env=combat/3m", "env.kwargs.reward=magent", "env.kwargs.enemies=6m")
    assert (flat.task, flat.env_kwargs) == (run.task, run.env_kwargs)


def test_a_part_node_holds_the_maps_defaults():
    env = plain(compose(["env=combat/battle64"]))["env"]
    assert env["generator"] == {
        "allies": "64m",
        "enemies": "64m",
        "race": None,
        "start_positions": "reflect",
        "map_size": 40.0,
    }
    assert env["observer"]["nearest"] == 8 and env["reward"] == {"kind": "smac"}
    assert _run("env=combat/battle64").task == "battle64"  # defaults name no keyword


def test_v1_task_names_read_the_same_set_through_parts():
    """The contest tier's cell and a pathfinding variant keep the names their records use."""
    assert _run("env=combat/battle64", "env.opponent=self_play").task == (
        "battle64[opponent=self_play]"
    )
    run = _run(
        "env=pathfinding/random_grid", "env.generator.density=0.15", "env.agents.num_agents=8"
    )
    assert run.task == "random_grid[density=0.15,num_agents=8]"


def test_a_part_with_one_build_has_no_options():
    with pytest.raises(ConfigError, match=r"env.generator has no options; set its keys: "):
        compose(["env=combat/3m", "env.generator=reflect"])


def test_unknown_parts_and_keys_are_named_with_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown config key 'env.foo'; valid: .*env.reward"):
        compose(["env=combat/3m", "env.foo=1"])
    with pytest.raises(ConfigError, match=r"'env.generator.foo'; valid: env.generator.allies"):
        compose(["env=combat/3m", "env.generator.foo=1"])
    with pytest.raises(ConfigError, match=r"unknown reward 'nope'; valid: smac, magent"):
        _run("env=combat/3m", "env.reward=nope")


def test_a_keyword_set_two_ways_to_two_values_is_refused():
    with pytest.raises(ConfigError, match=r"env.reward='magent' and env.kwargs.reward='smac'"):
        _run("env=combat/3m", "env.reward=magent", "env.kwargs.reward=smac")
    run = _run("env=combat/3m", "env.kwargs.enemies=5m")  # the part's default yields
    assert run.task == "3m[enemies=5m]"


def test_help_shows_each_keyword_under_its_part():
    text = describe(["env=combat/3m"])
    for key in ("env.reward=smac", "env.generator.allies=3m", "env.opponent=heuristic"):
        assert f"  {key}" in text
    assert "  env.kwargs.episode_limit=60" in text


def test_every_declared_part_keyword_is_a_constructor_keyword_of_its_family():
    """A family's table names each keyword once, and only keywords some id takes (a
    misspelt one would silently drop out of every node)."""
    taken: dict[str, set[str]] = defaultdict(set)
    some_id = {}
    for env_id in registry.list_envs():
        if env_id.startswith("jaxmarl/"):  # the adapter declares no parts
            continue
        taken[env_id.split("/")[0]] |= set(registry.env_kwargs(env_id))
        some_id[env_id.split("/")[0]] = env_id
    checked = 0
    for family, keywords in taken.items():
        declared = registry.family_attr(some_id[family], "CONFIG_PARTS")
        if declared is None:
            continue
        names = [k for part in declared.values() for k in part.names()]
        assert len(names) == len(set(names)), family
        assert set(names) <= keywords, (family, set(names) - keywords)
        checked += 1
    assert checked == 6  # combat, pathfinding, grid, swarm, particle, cleanup


@pytest.mark.parametrize(
    "env_id", ["cleanup/fleet16", "grid/random8", "swarm/kuramoto", "particle/tag"]
)
def test_each_family_builds_from_its_part_nodes(env_id):
    nodes = part_nodes(env_id)
    assert nodes and set(nodes) == set(env_parts(env_id))
    assert _run(f"env={env_id}").task == env_id.split("/")[1]  # the defaults change nothing


def test_a_part_option_per_family():
    assert _run("env=cleanup/comm", "env.current=uniform").task == "comm[current=uniform]"
    assert _run("env=grid/random8", "env.collision=soft").task == "random8[collision=soft]"
    assert _run("env=pathfinding/rooms", "env.dynamics=diffdrive").task == (
        "rooms[dynamics=diffdrive]"
    )
