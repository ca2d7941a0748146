"""Dec-POMFC (`marl.algorithms.decpomfc`): the decision rule, decentralised execution and one
Dec-POMFPPO update."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms.decpomfc import DecisionRule, gaussian_log_prob, make_train

SMALL = {"num_envs": 4, "rollout_length": 10, "num_minibatches": 2, "epochs": 2, "hidden": [16]}


def test_the_decision_rule_is_a_masked_softmax_of_a_linear_map():
    rule = DecisionRule(obs_dim=2, num_actions=3, scale=2.0)
    w = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.0]])
    b = np.array([0.0, 1.0, 0.0])
    xi = jnp.asarray(np.concatenate([w.ravel(), b]))
    obs = jnp.array([[1.0, 2.0]])
    avail = jnp.array([[True, True, False]])
    logits = 2.0 * (np.array([1.0, 2.0]) @ w + b)[:2]  # the unavailable action is masked
    want = logits - np.log(np.sum(np.exp(logits)))
    got = np.asarray(rule.log_probs(xi, obs, avail))[0]
    np.testing.assert_allclose(got[:2], want, rtol=1e-5)
    assert got[2] < -1e8
    # the upper-level Gaussian's log density
    x, m, s = jnp.array([0.5, -1.0]), jnp.array([0.0, 0.0]), jnp.log(jnp.array([1.0, 2.0]))
    ref = -0.5 * (0.25 + 0.25) - np.log(2.0) - np.log(2 * np.pi)
    assert float(gaussian_log_prob(x, m, s)) == pytest.approx(ref, rel=1e-6)


def test_execution_is_decentralised_each_agent_on_its_own_observation():
    env = marl.make("swarm/vicsek", num_agents=12)
    train = make_train(env, SMALL)
    params = train.params(jax.jit(train.init)(jax.random.key(0)))
    policy = train.policy
    _, ts = jax.jit(env.reset)(jax.random.key(1))
    greedy = jax.jit(
        lambda obs, t: policy.act(params, obs, ts.avail_actions, t, False, jax.random.key(2), True)
    )
    actions, t_next = greedy(ts.obs, jnp.asarray(3))
    assert int(t_next) == 4  # each agent counts the time itself
    changed = ts.obs.at[5].set(ts.obs[5] + 1.0)  # another agent's view changes
    moved, _ = greedy(changed, jnp.asarray(3))
    keep = np.arange(12) != 5
    np.testing.assert_array_equal(np.asarray(actions)[keep], np.asarray(moved)[keep])
    perm = np.random.default_rng(0).permutation(12)  # interchangeable agents
    permuted, _ = greedy(ts.obs[perm], jnp.asarray(3))
    np.testing.assert_array_equal(np.asarray(permuted), np.asarray(actions)[perm])


def test_one_update_runs_and_other_envs_are_refused():
    env = marl.make("swarm/kuramoto", num_agents=20)
    train = make_train(env, SMALL)
    state, metrics = jax.jit(lambda k: train.step(train.init(k)))(jax.random.key(0))
    metrics = jax.device_get(metrics)
    assert all(np.isfinite(v).all() for v in metrics.values())
    assert train.steps_per_update == 40
    with pytest.raises(ValueError, match="discrete actions"):
        make_train(marl.make("swarm/vicsek", discrete_actions=False), SMALL)
    with pytest.raises(ValueError, match="one swarm"):
        make_train(marl.make("particle/adversary"), SMALL)
