"""One learner per side of a contest: `SideView` (a side as an env, the other side played by a
policy), `joined` (the two sides' policies as one) and the `teams` learner built from them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms import teams
from marl.core.learner import Policy
from marl.core.testing import check_env
from marl.learning.sides import SideView, joined, side_spec


def _counting(n: int, action: int) -> Policy:
    """Always `action`; the carry counts the steps since the episode's start."""

    def act(params, obs, avail, carry, start, key, greedy, neighbours=None):
        assert obs.shape[0] == n and avail.shape[0] == n
        carry = jnp.where(start, 0, carry) + 1
        return jnp.full((n,), action + params, jnp.int32), carry

    return Policy(lambda: jnp.zeros((), jnp.int32), act)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "side"),
    [("combat/3m", {"opponent": "self_play"}, 1), ("particle/adversary", {}, 0)],
)
def test_a_side_view_keeps_the_env_contract(env_id, kwargs, side):
    env = marl.make(env_id, **kwargs)
    other = side_spec(env.spec, 1 - side).num_agents
    view = SideView(env, side, _counting(other, 1), jnp.int32(0))
    check_env(view, num_episodes=1)
    state, _ = view.reset(jax.random.key(0))  # its own block of the env's neighbourhood
    mine = np.asarray(env.spec.groups[side].agents)
    full = env.neighbourhood(state.env_state)
    np.testing.assert_array_equal(view.neighbourhood(state), full[mine][:, mine])


def test_a_side_view_steps_the_env_with_the_opponents_actions_by_hand():
    env = marl.make("particle/adversary")  # adversary (agent 0) against two good agents
    view = SideView(env, 1, _counting(1, 2), jnp.int32(1))  # the adversary plays 2 + 1
    key = jax.random.key(3)
    state, ts = view.reset(key)
    env_state, full = env.reset(key)
    np.testing.assert_array_equal(ts.obs, full.obs[1:, : view.spec.obs_dim])
    assert view.spec.num_agents == 2 and view.spec.obs_dim == env.spec.obs_sizes[1]
    for t in range(3):
        k = jax.random.fold_in(key, t)
        mine = jnp.array([t % 5, 4 - t % 5], jnp.int32)
        state, ts = view.step(k, state, mine)
        env_state, full = env.step(jax.random.split(k)[1], env_state, jnp.r_[3, mine])
        np.testing.assert_array_equal(ts.obs, full.obs[1:, : view.spec.obs_dim])
        np.testing.assert_array_equal(ts.reward, full.reward[1:])
        np.testing.assert_array_equal(ts.state, full.state)
        assert int(state.opponent_carry) == t + 1  # the opponent's own carry, reset at start
        np.testing.assert_array_equal(state.opponent_obs, full.obs[:1, : env.spec.obs_sizes[0]])


def test_joined_acts_for_each_side_with_its_own_policy():
    env = marl.make("combat/3m", opponent="self_play")
    policy = joined(env.spec, _counting(3, 1), _counting(3, 4))
    _, ts = jax.jit(env.reset)(jax.random.key(0))
    carry = policy.initial_carry()
    actions, carry = policy.act(
        (jnp.int32(0), jnp.int32(1)), ts.obs, ts.avail_actions, carry, True, jax.random.key(1), True
    )
    np.testing.assert_array_equal(actions, [1, 1, 1, 5, 5, 5])
    assert [int(c) for c in carry] == [1, 1]


@pytest.mark.integration
def test_teams_trains_each_side_with_its_own_learner():
    env = marl.make("particle/adversary")
    cfg = {
        "side0": {"name": "ippo", "num_envs": 2, "rollout_length": 8, "num_minibatches": 1},
        "side1": {"name": "il", "num_envs": 2, "rollout_length": 4, "batch_size": 4},
    }
    train = teams.make_train(env, cfg)
    ippo = marl.algorithm("ippo")(SideView(env, 0, _counting(2, 0), None), cfg["side0"])
    assert train.steps_per_update == 2 * 8 + 2 * (2 * 4)  # IL updates twice per IPPO update
    assert teams.label(cfg) == "ippo+il"
    state = jax.jit(train.init)(jax.random.key(0))  # one program, not op by op
    before = train.params(state)
    assert jax.tree.structure(before[0]) == jax.tree.structure(
        jax.eval_shape(lambda k: ippo.params(ippo.init(k)), jax.random.key(0))
    )
    step = jax.jit(train.step)
    for _ in range(3):
        state, metrics = step(state)
    after = train.params(state)
    assert any(k.startswith("side0/") for k in metrics)
    assert any(k.startswith("side1/") for k in metrics)
    for side in (0, 1):  # both learners trained
        moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), before[side], after[side])
        assert any(jax.tree.leaves(moved))
    env_state, ts = jax.jit(env.reset)(jax.random.key(2))
    assert train.policy.neighbourhood  # IL's policy takes it
    actions, _ = train.policy.act(
        after,
        ts.obs,
        ts.avail_actions,
        train.policy.initial_carry(),
        True,
        jax.random.key(3),
        True,
        neighbours=env.neighbourhood(env_state),
    )
    assert actions.shape == (env.spec.num_agents,)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"side0": {"name": "mfq"}, "side1": {"lr": 1e-3}}, "side1.name must name a learner"),
        ({"side0": {"name": "mfq"}, "side1": {"name": "il"}, "sides": 2}, "unknown teams key"),
        ({"side0": {"name": "teams"}, "side1": {"name": "il"}}, "cannot be teams itself"),
        ({"side0": {"name": "mfq", "lr": -1}, "side1": {"name": "il"}}, "side0 (mfq)"),
    ],
)
def test_teams_refuses_a_bad_config_in_one_line(cfg, message):
    env = marl.make("combat/3m", opponent="self_play")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        teams.make_train(env, cfg)
    assert "\n" not in str(e.value)


def test_teams_defaults_to_the_shipped_sides():
    train = teams.make_train(
        marl.make("combat/3m", opponent="self_play"), {"side1": {"name": "il"}}
    )
    assert train.steps_per_update == 2 * 32  # MF-Q's and IL's 8 x 4 steps, once each
    assert teams.balance(2048, 64) == (1, 32) and teams.balance(64, 2048) == (32, 1)
    assert teams.balance(100, 60) == (1, 2) and teams.balance(32, 32) == (1, 1)
    assert teams.label(None) == "mfq+il"


def test_teams_refuses_an_env_without_two_sides():
    with pytest.raises(ValueError, match="one learner per side of a contest"):
        teams.make_train(marl.make("combat/3m"), {"side0": {"name": "il"}, "side1": {"name": "il"}})
