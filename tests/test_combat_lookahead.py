"""scripts/combat_lookahead.py: the rollout planner beats the policy it plans over."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scripts_loader import load_script

import marl
from marl.baselines.combat import focus_fire_policy


def _module():
    return load_script("combat_lookahead")


@pytest.mark.slow
def test_planner_over_focus_fire_wins_where_focus_fire_loses():
    module = _module()
    env = marl.make("combat/3m")
    policy = focus_fire_policy(env)
    planner = module.make_planner(env, policy, None, rollouts=8, horizon=12)
    keys = jax.random.split(jax.random.key(3), 6)
    base = [module.play_battle(env, policy, planner._replace(plan=None), k)[0] for k in keys]
    planned = [module.play_battle(env, policy, planner, k) for k in keys]
    assert np.mean([won for won, _ in planned]) > np.mean(base)  # focus fire alone: ~60%
    assert any(deviated for _, deviated in planned)
    # planning only within 0 distance never happens: the planner then plays the base policy
    never = [module.play_battle(env, policy, planner, k, plan_within=0.0) for k in keys[:2]]
    assert [won for won, _ in never] == base[:2] and not any(d for _, d in never)
