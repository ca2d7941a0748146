"""Registry: ids, unknown ids and keywords fail on one line naming the valid choices."""

from __future__ import annotations

import pytest

import marl
from marl.core.registry import RegistryError

PARTICLE = [
    "simple",
    "spread",
    "spread50",
    "adversary",
    "tag",
    "push",
    "reference",
    "speaker_listener",
    "crypto",
    "world_comm",
]


def test_all_particle_scenarios_registered():
    assert marl.list_envs("particle") == sorted(f"particle/{s}" for s in PARTICLE)


def test_unknown_id_lists_valid_ids_on_one_line():
    with pytest.raises(RegistryError) as err:
        marl.make("particle/sprad")
    msg = str(err.value)
    assert "\n" not in msg and "particle/sprad" in msg and "particle/spread" in msg


def test_unknown_keyword_lists_valid_keywords_on_one_line():
    with pytest.raises(RegistryError) as err:
        marl.make("particle/spread", num_agent=5)
    msg = str(err.value)
    assert "\n" not in msg and "num_agent" in msg and "num_agents=3" in msg


def test_register_and_make_a_user_env():
    def factory(num_agents: int = 4):
        return marl.make("particle/spread", num_agents=num_agents)

    marl.register("mine/spread4", factory)
    try:
        assert marl.make("mine/spread4").spec.num_agents == 4
        assert "mine/spread4" in marl.list_envs()
        with pytest.raises(RegistryError, match="already registered"):
            marl.register("mine/spread4", factory)
    finally:
        from marl.core import registry

        registry._ENVS.pop("mine/spread4")


@pytest.mark.parametrize("bad", ["spread", "a/b/c", "/x"])
def test_bad_ids_rejected(bad):
    with pytest.raises(RegistryError, match="family/scenario"):
        marl.register(bad, lambda: None)


def test_spec_documents_defaults():
    """Documented defaults match the constructors (25-step episodes, 3 agents in spread)."""
    env = marl.make("particle/spread")
    assert env.spec.episode_limit == 25 and env.spec.num_agents == 3
    assert env.spec.obs_dim == 18 and env.spec.state_dim == 54


def test_keyword_kinds_follow_the_default_and_keyword_only_parameters_are_valid():
    """A bool keyword refuses 1, an int keyword refuses True, a float keyword takes 32 but not
    True; combat's keyword-only `episode_limit` (default 60) is accepted (5 -> limit 5)."""
    with pytest.raises(RegistryError, match="continuous_actions must be true or false"):
        marl.make("particle/spread", continuous_actions=1)
    with pytest.raises(RegistryError, match="num_agents must be an integer"):
        marl.make("particle/spread", num_agents=True)
    with pytest.raises(RegistryError, match="map_size must be a number"):
        marl.make("combat/3m", map_size=True)
    assert marl.make("combat/3m", map_size=32, episode_limit=5).spec.episode_limit == 5


def test_builtins_are_entry_points_of_marls_own_distribution():
    """Built-in envs and learners are `marl-suite`'s entry points, registered as a plugin's
    are; the registry (marl.core) names no module of the layers above it."""
    import ast
    import inspect
    from importlib import metadata

    from marl.core import registry

    eps = metadata.distribution(registry.DISTRIBUTION).entry_points
    envs = {ep.name: ep.value for ep in eps if ep.group == registry.ENV_ENTRY_POINTS}
    algos = {ep.name: ep.value for ep in eps if ep.group == registry.ALGORITHM_ENTRY_POINTS}
    assert {"combat/3m", "pathfinding/random_grid", "cleanup/comm", "swarm/vicsek"} <= set(envs)
    assert {"ippo", "mappo", "iql", "vdn", "qmix"} <= set(algos)
    assert set(envs) <= set(marl.list_envs()) and set(algos) <= set(marl.list_algorithms())
    names = [
        node.value
        for node in ast.walk(ast.parse(inspect.getsource(registry)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    above = ("marl.envs.", "marl.algorithms.", "marl.baselines.")
    assert not [n for n in names if n.startswith(above)], "a string table naming higher layers"
