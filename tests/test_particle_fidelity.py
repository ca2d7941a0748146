"""Every particle scenario against PettingZoo's MPE (mpe2), whole episodes, both action types.

Both sides start from mpe2's random initial world and receive the same actions for 25 steps;
observations, rewards, terminations and truncations must agree to 1e-5. marl runs in float64
here so that float32 rounding cannot hide or fake a difference.
"""

from __future__ import annotations

import jax
import pytest

pytest.importorskip("mpe2")
from mpe_reference import play_episode  # noqa: E402

import marl  # noqa: E402

CASES = [
    ("particle/simple", {}),
    ("particle/spread", {}),
    ("particle/spread", {"num_agents": 6}),
    ("particle/spread", {"num_agents": 2, "local_ratio": 0.2}),
    ("particle/adversary", {}),
    ("particle/adversary", {"num_good": 4}),
    ("particle/tag", {}),
    ("particle/tag", {"num_good": 2, "num_adversaries": 5, "num_obstacles": 3}),
    ("particle/push", {}),
    ("particle/reference", {}),
    ("particle/reference", {"local_ratio": 0.8}),
    ("particle/speaker_listener", {}),
    ("particle/crypto", {}),
    ("particle/world_comm", {}),
    (
        "particle/world_comm",
        {"num_good": 3, "num_adversaries": 2, "num_obstacles": 2, "num_food": 3, "num_forests": 1},
    ),
]
SEEDS = (0, 1, 2)


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("env_id,kwargs", CASES, ids=[f"{e}-{k}" for e, k in CASES])
def test_matches_mpe2_over_whole_episodes(env_id, kwargs, continuous):
    reuse = {}  # one compile of marl's step for the three seeds
    with jax.enable_x64(True):
        for seed in SEEDS:
            cmp = play_episode(env_id, continuous, seed, atol=1e-5, reuse=reuse, **kwargs)
            spec = marl.make(env_id, **kwargs).spec
            # the comparison really compared whole episodes of every agent
            assert cmp.steps == spec.episode_limit == 25
            assert cmp.values >= 26 * (sum(spec.obs_sizes) + spec.num_agents)
            assert any(k.startswith("obs[") for k in cmp.max_error)


def test_every_particle_scenario_is_compared():
    """Every mpe2 scenario; particle/spread50 is spread's code at a size mpe2 has no id for."""
    compared = {env_id for env_id, _ in CASES}
    assert compared == set(marl.list_envs("particle")) - {"particle/spread50"}


def test_comparison_detects_a_wrong_physics_constant(monkeypatch):
    """The harness fails when marl differs: damping 0.25 -> 0.3 must be caught."""
    from marl.envs.particle import world as world_module

    original = world_module.make_world

    def wrong_world(**kwargs):
        w = original(**kwargs)
        object.__setattr__(w, "damping", 0.3)
        return w

    monkeypatch.setattr("marl.envs.particle.scenarios.spread.make_world", wrong_world)
    with jax.enable_x64(True), pytest.raises(AssertionError, match="obs"):
        play_episode("particle/spread", False, 0, atol=1e-5)
