"""One death rule for every team reward: a unit paid its side's reward (SMAC's team reward,
per side in self-play; JaxMARL's SMAX) earns on past its death, so the side's win reaches the
last step it lived through GAE, in every learner that ends returns per agent."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest
from hand_rollouts import hand_rollout

import marl
from marl.algorithms.meanfield import value_samples
from marl.algorithms.onpolicy import ValueNorm
from marl.algorithms.ppo import Networks, PPOConfig, advantages_and_targets
from marl.core.env import TimeStep
from marl.learning.sides import side_spec

WIN = 20.0  # SMAC's scaled win: the most a side's episode can return


def selfplay(reward: str = "smac"):
    return marl.make("combat/3m", opponent="self_play", reward=reward)


def win_after_a_death(num_agents: int, dies: int, winners: np.ndarray):
    """A hand rollout of 4 steps: agent `dies` is alive in steps 0 and 1 and dies in step 1;
    in step 3 the side `winners` [N] bool wins (the episode terminates) and each of its agents,
    the dead one too, is paid `WIN`; every value is 0, so with gamma = lambda = 1 an agent's
    advantage is the reward its return still holds."""
    t, n = 4, num_agents
    reward = np.zeros((t, 1, n), np.float32)
    reward[3, 0] = np.where(winners, WIN, 0.0)
    alive = np.ones((t, 1, n), bool)
    alive[2:, 0, dies] = False
    died = np.zeros((t, 1, n), bool)
    died[1, 0, dies] = True
    terminated = np.zeros((t, 1), bool)
    terminated[3] = True
    zeros = np.zeros((t, 1, n), np.float32)
    return hand_rollout(reward, zeros, zeros, terminated, terminated.copy(), alive, died)


CFG = PPOConfig(gamma=1.0, gae_lambda=1.0, value_norm=False)


def last_living_advantage(spec, dies: int, winners: np.ndarray) -> float:
    ro = win_after_a_death(spec.num_agents, dies, winners)
    adv, _ = advantages_and_targets(spec.team_reward, CFG, ValueNorm.create(), ro)
    return float(np.asarray(adv)[1, 0, dies])


def test_selfplay_unit_that_dies_two_steps_before_its_sides_win_gets_the_win():
    """combat/3m in self-play, SMAC's reward (each side its team reward): ally 0 dies in step
    1, the allies win in step 3; its advantage in step 1 holds the win (it was 0 while the
    self-play spec declared no team reward: the unit's return ended at its death). The same
    for an enemy unit when the enemies win."""
    spec = selfplay().spec
    assert spec.team_reward.all() and not spec.shared_reward
    allies = spec.agent_group == 0
    assert last_living_advantage(spec, 0, allies) == pytest.approx(WIN)
    assert last_living_advantage(spec, 4, ~allies) == pytest.approx(WIN)


def test_selfplay_under_magents_per_unit_reward_ends_a_units_return_at_its_death():
    """MAgent's reward pays each unit its own: no team reward, the death ends the return."""
    spec = selfplay("magent").spec
    assert not spec.team_reward.any()
    assert last_living_advantage(spec, 0, spec.agent_group == 0) == 0.0


def test_jaxmarl_smax_unit_that_dies_two_steps_before_the_win_gets_the_win():
    """JaxMARL's SMAX pays every ally the side's one reward: its adapter declares it, and the
    win reaches a unit that died two steps before it."""
    pytest.importorskip("jaxmarl")
    spec = marl.make("jaxmarl/smax").spec
    assert spec.shared_reward and spec.team_reward.all()
    winners = np.ones(spec.num_agents, bool)
    assert last_living_advantage(spec, 0, winners) == pytest.approx(WIN)


def test_mean_field_learners_follow_the_sides_team_reward():
    """The mean-field learners' per-agent terminations and value samples (IL, MF-Q, MF-AC) in
    self-play: a unit of a side paid its team reward does not end its return at its death and
    its dead steps train the value; under MAgent's per-unit reward both end at the death."""
    for reward, team in (("smac", True), ("magent", False)):
        spec = selfplay(reward).spec
        n = spec.num_agents
        before = jnp.ones((n,), bool)
        after = before.at[0].set(False)
        z = jnp.zeros((n, 1))
        ts = TimeStep(
            obs=z, state=z[0], avail_actions=z.astype(bool), reward=z[:, 0],
            terminated=jnp.array(False), truncated=jnp.array(False), alive=after,
            final_alive=after,
        )  # fmt: skip
        ended = np.asarray(ts.agent_terminated(before, spec.team_reward))
        assert ended[0] == (not team) and not ended[1:].any()
        samples = np.asarray(value_samples(after, spec.team_reward))
        assert samples[0] == float(team) and (samples[1:] == 1.0).all()


def test_selfplay_critic_death_masks_units_of_a_team_rewarded_side():
    """MAPPO's death mask in self-play under SMAC's reward: a dead unit's critic input is
    zeros beside its agent id (it was the state, as under per-agent rewards)."""
    env = selfplay()
    nets = Networks(env, PPOConfig(critic="central", agent_id=True, hidden=(8,)))
    n, s = env.spec.num_agents, env.spec.state_dim
    alive = jnp.ones((n,), bool).at[1].set(False)
    x = np.asarray(nets.critic_input(jnp.zeros((n, env.spec.obs_dim)), jnp.ones((s,)), alive))
    assert (x[1, :s] == 0).all() and (x[0, :s] == 1).all()


def test_a_side_alone_keeps_its_team_reward():
    """A side of a self-play battle as an env of its own (`side_spec`, the teams learner): one
    shared reward under SMAC's, none under MAgent's."""
    assert side_spec(selfplay().spec, 1).shared_reward
    assert not side_spec(selfplay("magent").spec, 0).shared_reward


def test_spec_refuses_an_unknown_team():
    spec = selfplay().spec
    with pytest.raises(ValueError, match="team_rewards"):
        dataclasses.replace(spec, team_rewards=("nobody",))
