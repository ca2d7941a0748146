"""scripts/combat_behaviour.py: the per-step reading of a combat policy, on the scripted one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scripts_loader import load_script

import marl
from marl.baselines.combat import focus_fire_policy
from marl.envs.combat.observation import foe_features


def test_behaviour_reads_the_scripted_focus_fire():
    module = load_script("combat_behaviour")
    env = marl.make("combat/3m")
    policy = focus_fire_policy(env)
    result = module.behaviour(env, policy, None, jax.random.key(0), 16)

    assert 0.0 < result["won"].mean() < 1.0  # the scripted ceiling is about 63% on 3m
    assert result["length"].min() >= 1 and result["length"].max() <= env.spec.episode_limit
    running = result["running"]
    assert running[0] == 1.0 and np.all(np.diff(running) <= 0)  # battles only end
    live = running > 0
    np.testing.assert_allclose(result["actions"][live].sum(1), 1.0, rtol=1e-6)
    assert np.all(np.isnan(result["actions"][~live]))
    # focus fire walks east toward the enemies at first and is attacking once they meet
    assert result["actions"][0, 1] > 0.5  # east
    assert result["actions"][live].max(0)[5] > 0.5  # attack
    assert result["ally_pos"][0, 0] < result["enemy_pos"][0, 0]
    text = module.table(result, [0, 5, 59])
    assert text.splitlines()[0].startswith(f"won {result['won'].mean():.1%} of 16 battles")
    assert len(text.splitlines()) == 2 + 1 + int(running[5] > 0) + int(running[59] > 0)


@pytest.mark.slow
def test_targeting_counts_attacks_on_the_weakest_foe():
    module = load_script("combat_behaviour")
    env = marl.make("combat/3m")
    focus = focus_fire_policy(env)  # attacks the attackable foe with the least health

    def strongest(params, obs, avail, carry, start, key, greedy):
        actions, carry = focus.act(params, obs, avail, carry, start, key, greedy)
        health = foe_features(obs, 2, 3)[..., 4]  # 3m: 2 teammates, 3 foes
        pick = 5 + jnp.argmax(jnp.where(avail[:, 5:], health, -1.0), axis=-1)
        return jnp.where(actions >= 5, pick, actions), carry

    key = jax.random.key(1)
    aim = module.targeting(env, focus, None, key, 16)
    assert aim["attacks"] > 0 and aim["focus"] == 1.0
    assert 0.0 <= aim["won_lowest"] <= 1.0 and 0.0 < aim["won"] < 1.0
    worst = module.targeting(env, focus._replace(act=strongest), None, key, 16)
    assert worst["attacks"] > 0 and worst["focus"] == 0.0
    assert worst["won"] < aim["won_lowest"]  # redirected, the same battles are won again
