"""Registry: ids, unknown ids and keywords fail on one line naming the valid choices."""

from __future__ import annotations

import pytest

import marl
from marl.registry import RegistryError

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
        from marl import registry

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
