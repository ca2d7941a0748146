"""Shared on-policy pieces: GAE against a plain NumPy reference, losses, value normalisation,
masked action distributions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hand_rollouts import death_env, hand_rollout
from hypothesis import given, settings
from hypothesis import strategies as st
from shapes import SHAPES, size

from marl.algorithms.onpolicy import ValueNorm, clipped_surrogate, gae, value_loss
from marl.learning.networks import MaskedCategorical, MaskedDiagGaussian


def numpy_gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Textbook GAE, one env, one step at a time (no vectorisation)."""
    T = len(rewards)
    adv = np.zeros(T)
    last = 0.0
    for t in reversed(range(T)):
        bootstrap = 0.0 if terminated[t] else gamma * next_values[t]
        delta = rewards[t] + bootstrap - values[t]
        ended = terminated[t] or truncated[t]
        last = delta + (0.0 if ended else gamma * lam * last)
        adv[t] = last
    return adv, adv + values


def test_gae_truncation_bootstraps_from_the_true_final_value():
    # episode 1 truncated at t=1 (final obs value 5.0), episode 2 terminates at t=3
    rewards = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    values = np.array([0.5, 0.6, 0.7, 0.8, 0.9])
    next_values = np.array([0.6, 5.0, 0.8, 0.9, 2.0])  # t=1: V(true final obs) = 5
    terminated = np.array([0, 0, 0, 1, 0], bool)
    truncated = np.array([0, 1, 0, 0, 0], bool)
    gamma, lam = 0.9, 0.8
    adv, ret = gae(
        jnp.asarray(rewards)[:, None],
        jnp.asarray(values)[:, None],
        jnp.asarray(next_values)[:, None],
        jnp.asarray(terminated)[:, None],
        jnp.asarray(terminated | truncated)[:, None],
        gamma,
        lam,
    )
    # by hand at the truncation: delta = 1 + 0.9 * 5 - 0.6 = 4.9, no recursion past it
    assert np.isclose(float(adv[1, 0]), 4.9)
    # at the termination: delta = 1 + 0 - 0.8 = 0.2
    assert np.isclose(float(adv[3, 0]), 0.2)
    ref_adv, ref_ret = numpy_gae(rewards, values, next_values, terminated, truncated, gamma, lam)
    np.testing.assert_allclose(np.asarray(adv[:, 0]), ref_adv, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ret[:, 0]), ref_ret, rtol=1e-6)


_gae = jax.jit(gae)


@pytest.mark.parametrize("vary", SHAPES)
@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    seed=st.integers(0, 10_000),
    gamma=st.floats(0.5, 1.0),
    lam=st.floats(0.0, 1.0),
)
def test_gae_matches_numpy_reference(vary, data, seed, gamma, lam):
    T = size(data, vary, st.integers(1, 40), 17)
    rng = np.random.default_rng(seed)
    B, N = 3, 2
    r = rng.normal(size=(T, B, N))
    v = rng.normal(size=(T, B, N))
    nv = rng.normal(size=(T, B, N))
    term = rng.random((T, B)) < 0.1
    trunc = (rng.random((T, B)) < 0.1) & ~term
    # one program per T: gamma and lam are traced, not baked in (eager, every example
    # compiled each of the scan's ops again)
    adv, ret = jax.tree.map(
        np.asarray,
        _gae(r, v, nv, term, term | trunc, np.float32(gamma), np.float32(lam)),
    )
    for b in range(B):
        for n in range(N):
            ra, rr = numpy_gae(
                r[:, b, n], v[:, b, n], nv[:, b, n], term[:, b], trunc[:, b], gamma, lam
            )
            np.testing.assert_allclose(adv[:, b, n], ra, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(ret[:, b, n], rr, rtol=1e-4, atol=1e-4)


def test_clipped_surrogate_by_hand():
    logp = jnp.log(jnp.array([1.5, 0.5, 1.0]))  # ratios 1.5, 0.5, 1.0 against old log 0
    old = jnp.zeros(3)
    adv = jnp.array([1.0, -1.0, 2.0])
    loss, m = clipped_surrogate(logp, old, adv, 0.2, jnp.ones(3, bool))
    # min(1.5*1, 1.2*1) = 1.2; min(0.5*-1, 0.8*-1) = -0.8; 2.0 -> mean 0.8
    assert np.isclose(float(loss), -(1.2 - 0.8 + 2.0) / 3)
    assert np.isclose(float(m["clip_frac"]), 2 / 3)
    weighted, _ = clipped_surrogate(logp, old, adv, 0.2, jnp.ones(3, bool), jnp.full(3, 2.0))
    assert np.isclose(float(weighted), 2 * float(loss))


def test_value_loss_clipping_and_mask():
    values, old, targets = jnp.array([1.0, 0.0]), jnp.array([0.0, 0.0]), jnp.array([2.0, 9.0])
    mask = jnp.array([True, False])
    # unclipped 0.5*(2-1)^2 = 0.5; clipped pred 0.2 -> 0.5*1.8^2 = 1.62 -> max 1.62
    got = value_loss(values, old, targets, mask, clip_eps=0.2, huber_delta=None)
    assert np.isclose(float(got), 1.62)


def test_value_norm_tracks_mean_and_std():
    vn = ValueNorm.create()
    x = jnp.asarray(np.random.default_rng(0).normal(3.0, 2.0, size=4096))
    for _ in range(3):
        vn = vn.update(x, jnp.ones_like(x), beta=0.9)
    mean, std = vn.stats()
    assert abs(float(mean) - 3.0) < 0.1 and abs(float(std) - 2.0) < 0.1
    np.testing.assert_allclose(
        np.asarray(vn.denormalize(vn.normalize(x))), np.asarray(x), rtol=1e-5, atol=1e-4
    )


def test_masked_categorical_never_samples_unavailable_actions():
    logits = jnp.array([[5.0, 0.0, 0.0, 9.0]] * 3)
    avail = jnp.array(
        [[False, True, True, False], [True, False, False, False], [False, False, False, True]]
    )
    dist = MaskedCategorical.create(logits, avail)
    samples = jax.vmap(dist.sample)(jax.random.split(jax.random.key(0), 2000))  # [2000, 3]
    chosen = np.asarray(avail)[np.arange(3)[None, :], np.asarray(samples)]
    assert chosen.all()
    assert list(np.asarray(dist.mode())) == [1, 0, 3]
    assert np.all(np.isfinite(np.asarray(dist.entropy())))
    assert np.isclose(float(dist.entropy()[1]), 0.0)


def test_masked_gaussian_ignores_padded_dims():
    mean = jnp.zeros((2, 3))
    mask = jnp.array([[True, True, True], [True, False, False]])
    dist = MaskedDiagGaussian.create(mean, jnp.zeros(3), mask)
    a = dist.sample(jax.random.key(0))
    assert np.all(np.asarray(a)[1, 1:] == 0)
    lp = np.asarray(dist.log_prob(a))
    one_dim = -0.5 * np.log(2 * np.pi) - 0.5 * float(a[1, 0]) ** 2
    assert np.isclose(lp[1], one_dim, atol=1e-5)


def test_each_parameter_set_is_clipped_by_its_own_norm():
    """IPPO/MAPPO actors with several parameter sets (groups, or no sharing) clip each set's
    gradient as a separate network's: a large gradient in one set does not shrink another's
    step; with one set it is optax's global clip exactly."""
    import optax

    from marl.algorithms.ppo import clip_by_set_norm

    rng = np.random.default_rng(0)
    grads = {
        "w": jnp.asarray(rng.normal(size=(3, 4, 5))),
        "b": jnp.asarray(rng.normal(size=(3, 5))),
    }
    grads = jax.tree.map(
        lambda x: x * jnp.array([0.01, 1.0, 100.0]).reshape(3, *[1] * (x.ndim - 1)), grads
    )
    clipped, _ = clip_by_set_norm(1.0).update(grads, optax.EmptyState())
    one_by_one = jax.vmap(lambda g: optax.clip_by_global_norm(1.0).update(g, None)[0])(grads)
    for got, want in zip(jax.tree.leaves(clipped), jax.tree.leaves(one_by_one), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(clipped["w"][0], grads["w"][0])  # small set: untouched
    single = jax.tree.map(lambda x: x[2:], grads)
    ours, _ = clip_by_set_norm(1.0).update(single, optax.EmptyState())
    theirs, _ = optax.clip_by_global_norm(1.0).update(single, None)
    for got, want in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(got, want)


# --- PPO's advantages and rollout -------------------------------------------------------------


def test_ppo_advantages_bootstrap_truncated_episodes():
    """PPO's GAE bootstraps a truncation from the final value and not a termination (T=2,
    gamma .9, lambda .8): truncated at t=1: adv[1] = 1 + .9 * 5 - .6 = 4.9, adv[0] =
    (1 + .9 * .6 - .5) + .9 * .8 * 4.9 = 4.568; terminated at t=1: adv[1] = 1 - .6 = .4,
    adv[0] = 1.04 + .72 * .4 = 1.328."""
    from marl.algorithms.ppo import PPOConfig, advantages_and_targets

    cfg = PPOConfig(gamma=0.9, gae_lambda=0.8, value_norm=False)

    def col(x):  # [T] -> [T, B=1, N=1]
        return np.asarray(x, np.float32).reshape(2, 1, 1)

    def flags(x):  # [T] -> [T, B=1]
        return np.asarray(x, bool).reshape(2, 1)

    reward, value, next_value = col([1.0, 1.0]), col([0.5, 0.6]), col([0.6, 5.0])
    truncated = hand_rollout(reward, value, next_value, flags([0, 0]), flags([0, 1]))
    adv, targets = advantages_and_targets(False, cfg, ValueNorm.create(), truncated)
    np.testing.assert_allclose(np.asarray(adv)[:, 0, 0], [4.568, 4.9], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(targets)[:, 0, 0], [5.068, 5.5], rtol=1e-5)
    terminated = hand_rollout(reward, value, next_value, flags([0, 1]), flags([0, 1]))
    adv, _ = advantages_and_targets(False, cfg, ValueNorm.create(), terminated)
    np.testing.assert_allclose(np.asarray(adv)[:, 0, 0], [1.328, 0.4], rtol=1e-5)


def test_ppo_advantages_end_an_agents_return_at_its_death():
    """Agent 0 dies in step 1 of 3 (the episode goes on; gamma .9, lambda .8): its step 1 does
    not bootstrap from the dead unit's (untrained) value 3.0 and step 2 (dead) does not flow
    back: adv0[1] = 1 - .6 = .4, adv0[0] = (1 + .9 * .6 - .5) + .72 * .4 = 1.328. Agent 1,
    alive throughout with the same numbers, bootstraps: adv1[2] = 1 + .9 * .8 - .7 = 1.02,
    adv1[1] = (1 + .9 * .7 - .6) + .72 * 1.02 = 1.7644, adv1[0] = 1.04 + .72 * 1.7644."""
    from marl.algorithms.ppo import PPOConfig, advantages_and_targets

    cfg = PPOConfig(gamma=0.9, gae_lambda=0.8, value_norm=False)

    def agents(a, b):  # two [T] columns -> [T, B=1, N=2]
        return np.stack([a, b], axis=-1).astype(np.float32).reshape(3, 1, 2)

    reward = agents([1.0, 1.0, 0.0], [1.0, 1.0, 1.0])
    value = agents([0.5, 0.6, 0.0], [0.5, 0.6, 0.7])
    next_value = agents([0.6, 3.0, 0.0], [0.6, 0.7, 0.8])
    flags = np.zeros((3, 1), bool)
    alive = agents([1, 1, 0], [1, 1, 1]).astype(bool)
    died = agents([0, 1, 0], [0, 0, 0]).astype(bool)
    ro = hand_rollout(reward, value, next_value, flags, flags, alive=alive, died=died)
    adv, targets = advantages_and_targets(False, cfg, ValueNorm.create(), ro)
    adv = np.asarray(adv)[:, 0]
    np.testing.assert_allclose(adv[:2, 0], [1.328, 0.4], rtol=1e-5)
    np.testing.assert_allclose(adv[:, 1], [1.04 + 0.72 * 1.7644, 1.7644, 1.02], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(targets)[1, 0, 0], 1.0, rtol=1e-6)


def test_team_win_reaches_a_unit_that_died_two_steps_before_it():
    """Two agents, 4 steps, values 0, gamma .9, lambda .8: agent 0 dies in step 1 (dead at
    2, 3); the team wins at step 3 (reward 10 to every agent, terminated). Under the team
    reward its last living step (1) gets the win through GAE, (gamma lambda)^2 * 10 = 5.184,
    as its living teammate does; under per-agent rewards its return ended at its death: 0."""
    from marl.algorithms.ppo import PPOConfig, advantages_and_targets

    cfg = PPOConfig(gamma=0.9, gae_lambda=0.8, value_norm=False)

    def agents(a, b):  # two [T] columns -> [T, B=1, N=2]
        return np.stack([a, b], axis=-1).astype(np.float32).reshape(4, 1, 2)

    reward = agents([0, 0, 0, 10], [0, 0, 0, 10])
    zeros = np.zeros((4, 1, 2), np.float32)
    ended = np.array([0, 0, 0, 1], bool).reshape(4, 1)
    alive = agents([1, 1, 0, 0], [1, 1, 1, 1]).astype(bool)
    died = agents([0, 1, 0, 0], [0, 0, 0, 0]).astype(bool)
    ro = hand_rollout(reward, zeros, zeros, ended, ended, alive=alive, died=died)
    team, _ = advantages_and_targets(True, cfg, ValueNorm.create(), ro)
    own, _ = advantages_and_targets(False, cfg, ValueNorm.create(), ro)
    np.testing.assert_allclose(np.asarray(team)[1, 0], [5.184, 5.184], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(own)[1, 0], [0.0, 5.184], atol=1e-6)


def test_death_mask_on_the_critic_input_under_a_team_reward():
    """MAPPO's death mask: under a team reward a dead agent's critic input is zeros beside its
    agent id; under per-agent rewards and for HAPPO's team critic (one V(s)) it is the state."""
    from marl.algorithms.ppo import Networks, PPOConfig

    cfg = PPOConfig(critic="central", agent_id=True, hidden=(8,))
    state = jnp.array([0.5, 0.25])
    obs = jnp.ones((2, 2))
    alive = jnp.array([False, True])
    x = np.asarray(Networks(death_env(shared_reward=True), cfg).critic_input(obs, state, alive))
    np.testing.assert_array_equal(x, [[0, 0, 1, 0], [0.5, 0.25, 0, 1]])
    x = np.asarray(Networks(death_env(), cfg).critic_input(obs, state, alive))
    np.testing.assert_array_equal(x, [[0.5, 0.25, 1, 0], [0.5, 0.25, 0, 1]])
    team = Networks(death_env(shared_reward=True), cfg, team_critic=True)
    np.testing.assert_array_equal(team.critic_input(obs, state, alive), [[0.5, 0.25]] * 2)


def test_collect_runs_a_dead_units_return_on_under_a_team_reward():
    """On the death env with a team reward (1 a step to everyone, dead or alive, to the limit
    of 4), the step where both agents die bootstraps from the dead units' (death-masked)
    values: its value target is not the reward alone, as it is under per-agent rewards."""
    from marl.algorithms.ppo import Networks, PPOConfig, advantages_and_targets, collect, make_train
    from marl.core.wrappers import training_env

    env = death_env(num_agents=2, die_at=1, shared_reward=True)
    cfg = PPOConfig(num_envs=2, rollout_length=8, hidden=(8,), value_norm=False)
    state = jax.jit(make_train(env, cfg).init)(jax.random.key(0))
    nets = Networks(env, cfg)
    _, ro, _ = jax.jit(lambda s: collect(nets, training_env(env), cfg, s))(state)
    dead = ~np.asarray(ro.alive)
    assert dead[2:4].all()
    critic_in = np.asarray(ro.critic_in)
    np.testing.assert_array_equal(critic_in[dead][:, :2], 0.0)  # the state's part: masked
    _, targets = advantages_and_targets(True, cfg, ValueNorm.create(), ro)
    assert not np.allclose(np.asarray(targets)[[1, 5]], 1.0)


def test_collect_marks_each_agents_death():
    """On an env whose agents all die in step 1 while the episode runs on to its limit (4),
    the rollout's `died` is set at t=1 (and t=5, the next episode's step 1) only, and the
    value targets of those steps are the reward alone."""
    from marl.algorithms.ppo import (
        Networks,
        PPOConfig,
        advantages_and_targets,
        collect,
        make_train,
    )
    from marl.core.wrappers import training_env

    env = death_env(num_agents=2, die_at=1)
    cfg = PPOConfig(num_envs=2, rollout_length=8, hidden=(8,), value_norm=False)
    state = jax.jit(make_train(env, cfg).init)(jax.random.key(0))
    nets = Networks(env, cfg)
    _, ro, _ = jax.jit(lambda s: collect(nets, training_env(env), cfg, s))(state)
    died = np.asarray(ro.died)
    expected = np.zeros(died.shape, bool)
    expected[[1, 5]] = True
    np.testing.assert_array_equal(died, expected)
    _, targets = advantages_and_targets(False, cfg, ValueNorm.create(), ro)
    np.testing.assert_allclose(np.asarray(targets)[[1, 5]], 1.0, rtol=1e-6)


def test_normalize_advantages_by_hand():
    """Masked entries [1, 2, 3]: mean 2, population std sqrt(2/3) -> -1.2247, 0, 1.2247; the
    masked-out 100 takes no part in the statistics."""
    from marl.algorithms.onpolicy import normalize_advantages

    adv = jnp.array([1.0, 2.0, 3.0, 100.0])
    out = normalize_advantages(adv, jnp.array([True, True, True, False]))
    np.testing.assert_allclose(np.asarray(out)[:3], [-1.2247449, 0.0, 1.2247449], atol=1e-5)


@pytest.fixture(scope="module")
def spread_rollout():
    """30 steps of PPO on particle/spread (4 envs; episodes truncated after 25). Feed-forward:
    a recurrent critic's value at a start differs from its bootstrap value anyway (reset
    carry), which would hide a bootstrap from the next episode's first observation."""
    import marl
    from marl.algorithms.ppo import Networks, PPOConfig, collect, make_train
    from marl.core.wrappers import training_env

    env = marl.make("particle/spread")
    cfg = PPOConfig(num_envs=4, rollout_length=30, hidden=(8, 8), epochs=1)
    state = jax.jit(make_train(env, cfg).init)(jax.random.key(0))
    nets = Networks(env, cfg)
    _, ro, _ = jax.jit(lambda s: collect(nets, training_env(env), cfg, s))(state)
    return ro


def test_collect_values_the_true_next_observation(spread_rollout):
    """Within an episode next_value[t] is value[t+1]; at the truncation (t=24) it is the
    value of the episode's final observation, not of the next episode's first one."""
    ro = spread_rollout
    done = np.asarray(ro.done)
    assert done[24].all() and done.sum() == done.shape[1]  # every env truncated at t=24 only
    value, next_value = np.asarray(ro.value), np.asarray(ro.next_value)
    np.testing.assert_allclose(next_value[:24], value[1:25], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(next_value[25:-1], value[26:], rtol=1e-5, atol=1e-6)
    assert np.all(np.abs(next_value[24] - value[25]) > 1e-6)


def test_collect_marks_the_start_after_a_truncation(spread_rollout):
    """The recurrent reset flag (recorded whatever the network): set at t=0 (the first
    episode) and at t=25 (the episode after the truncation at t=24), nowhere else."""
    start = np.asarray(spread_rollout.start)
    assert start[0].all() and start[25].all()
    assert not start[1:25].any() and not start[26:].any()


# --- losses, normaliser and minibatches on masked samples --------------------------------------


def test_clipped_surrogate_averages_only_the_masked_in_samples():
    """Ratios 1.5, 0.5, 1.0 with advantages 1, -1, 2 and the third sample masked out: the
    loss is -(1.2 - 0.8) / 2 = -0.2, not a mean over all three."""
    logp = jnp.log(jnp.array([1.5, 0.5, 1.0]))
    mask = jnp.array([True, True, False])
    loss, m = clipped_surrogate(logp, jnp.zeros(3), jnp.array([1.0, -1.0, 2.0]), 0.2, mask)
    assert np.isclose(float(loss), -0.2)
    assert np.isclose(float(m["clip_frac"]), 1.0)


def test_huber_value_loss_by_hand():
    """Huber delta 1, no clipping, prediction 0: errors 0.5 -> 0.5 * 0.25 = 0.125 and 3 ->
    1 * (3 - 0.5) = 2.5; mean 1.3125."""
    values = jnp.zeros(2)
    got = value_loss(values, values, jnp.array([0.5, 3.0]), jnp.ones(2, bool), None, 1.0)
    assert np.isclose(float(got), 1.3125)


def test_value_norm_update_weighs_samples_by_the_mask():
    """x = [1, 3, 100] with weights [1, 1, 0], beta 0.5, from fresh: batch mean 2, mean square
    5, so debiased mean 2 and std sqrt(5 - 4) = 1; the weight-0 sample 100 is ignored."""
    vn = ValueNorm.create().update(jnp.array([1.0, 3.0, 100.0]), jnp.array([1.0, 1.0, 0.0]), 0.5)
    mean, std = vn.stats()
    assert np.isclose(float(mean), 2.0) and np.isclose(float(std), 1.0)


def test_minibatch_indices_split_a_random_permutation():
    """8 envs in 2 minibatches: every env exactly once, 4 per minibatch, and the split is
    drawn from the key (some of 8 keys give different splits, none the identity order)."""
    from marl.algorithms.onpolicy import minibatch_indices

    splits = [
        np.asarray(minibatch_indices(k, 8, 2)) for k in jax.random.split(jax.random.key(0), 8)
    ]
    for s in splits:
        assert s.shape == (2, 4) and sorted(s.ravel().tolist()) == list(range(8))
    assert len({tuple(s.ravel().tolist()) for s in splits}) > 1
    assert not any(np.array_equal(s.ravel(), np.arange(8)) for s in splits)


def zero_params(params):
    return jax.tree.map(jnp.zeros_like, params)


def test_actor_loss_counts_the_entropy_of_living_agents_only():
    """Zero actor weights give uniform policies over the available actions: agent 0 alive
    with 5 available (entropy log 5), agent 1 alive with 2 (log 2), agent 2 dead with 1 (0).
    Entropy metric (log 5 + log 2) / 2; ratio 1, so the loss is -mean(adv over the living)
    - ent_coef * entropy = -(1 + 3) / 2 - 0.01 * log(10) / 2."""
    import marl
    from marl.algorithms.ppo import Networks, PPOConfig, actor_loss

    env = marl.make("particle/spread")  # 3 agents, 5 actions
    cfg = PPOConfig(hidden=(8,), ent_coef=0.01, clip_eps=0.2)
    nets = Networks(env, cfg)
    params = zero_params(nets.init(jax.random.key(0))[0])
    avail = jnp.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]], bool)
    alive = jnp.array([True, True, False])
    shape = (1, 1, 3)  # [T, B, N]
    mb = hand_rollout(jnp.zeros(shape), jnp.zeros(shape), jnp.zeros(shape), [[0]], [[0]])
    mb = mb.replace(
        actor_in=jnp.zeros((*shape, nets.actor_dim)),
        avail=avail[None, None],
        log_prob=-jnp.log(jnp.array([5.0, 2.0, 1.0]))[None, None],
        alive=alive[None, None],
    )
    adv = jnp.array([1.0, 3.0, 50.0]).reshape(shape)
    h0 = jnp.zeros((1, 3, nets.hidden_dim))
    loss, (m, _) = actor_loss(nets, cfg, params, mb, adv, h0)
    entropy = (np.log(5.0) + np.log(2.0)) / 2
    np.testing.assert_allclose(float(m["entropy"]), entropy, rtol=1e-5)
    np.testing.assert_allclose(float(loss), -2.0 - 0.01 * entropy, rtol=1e-5)


def test_critic_update_regresses_on_normalised_targets():
    """Value norm with mean 2, std 1 (the update above); a zero critic predicts 0 (and 0 was
    the rollout's value, so clipping changes nothing): targets 3 and 5 normalise to 1 and 3,
    loss 0.5 * (1 + 9) / 2 = 2.5 at the first (only) gradient step."""
    import marl
    from marl.algorithms.ppo import Networks, PPOConfig, critic_update, make_train

    env = marl.make("particle/spread")
    cfg = PPOConfig(num_envs=2, rollout_length=1, epochs=1, num_minibatches=1, hidden=(8,))
    nets = Networks(env, cfg)
    state = jax.jit(make_train(env, cfg).init)(jax.random.key(0))
    vn = ValueNorm.create().update(jnp.array([1.0, 3.0]), jnp.ones(2), 0.5)
    state = state.replace(critic_params=zero_params(state.critic_params), value_norm=vn)
    shape = (1, 2, 3)  # [T, B, N]
    ro = hand_rollout(jnp.zeros(shape), jnp.zeros(shape), jnp.zeros(shape), [[0, 0]], [[0, 0]])
    ro = ro.replace(critic_in=jnp.zeros((*shape, nets.critic_dim)))
    targets = jnp.broadcast_to(jnp.array([3.0, 5.0])[None, :, None], shape)
    tx = __import__("optax").sgd(0.0)
    _, _, m = critic_update(
        nets, cfg, tx, state, ro, targets, state.critic_carry, jax.random.key(1)
    )
    np.testing.assert_allclose(float(m["loss/value"]), 2.5, rtol=1e-5)


def test_collect_scales_the_stored_rewards():
    """The same collection (same state and keys) with reward_scale 2.5 stores 2.5 times the
    rewards of reward_scale 1 (particle/spread's rewards are nonzero)."""
    import dataclasses

    import marl
    from marl.algorithms.ppo import Networks, PPOConfig, collect, make_train
    from marl.core.wrappers import training_env

    env = marl.make("particle/spread")
    cfg = PPOConfig(num_envs=2, rollout_length=3, hidden=(8,))
    state = jax.jit(make_train(env, cfg).init)(jax.random.key(0))
    nets, wrapped = Networks(env, cfg), training_env(env)

    @jax.jit
    def rewards(scale):  # one compilation: the config value is traced
        c = dataclasses.replace(cfg, reward_scale=scale)
        return collect(nets, wrapped, c, state)[1].reward

    one, scaled = np.asarray(rewards(1.0)), np.asarray(rewards(2.5))
    assert np.all(np.abs(one) > 0)
    np.testing.assert_allclose(scaled, 2.5 * one, rtol=1e-6)


def test_ppo_clips_each_actor_parameter_set_by_its_own_norm(monkeypatch):
    """make_train builds the actor's optimiser with `clip_by_set_norm` (one call, the actor;
    the critic, one shared set, keeps optax's global clip)."""
    import marl
    from marl.algorithms import ppo

    calls = []
    per_set = ppo.clip_by_set_norm
    monkeypatch.setattr(ppo, "clip_by_set_norm", lambda n: calls.append(n) or per_set(n))
    ppo.make_train(marl.make("particle/spread"), ppo.PPOConfig(max_grad_norm=0.7))
    assert calls == [0.7]


def test_value_norm_floors_the_variance():
    """Constant targets 5 (beta 0.5, from fresh): debiased mean 5, variance 25 - 25 = 0 floored
    at 0.01, so std 0.1 and 5.1 normalises to 1; a fresh norm (no data) has mean 0, std 0.1."""
    vn = ValueNorm.create().update(jnp.array([5.0, 5.0]), jnp.ones(2), 0.5)
    mean, std = vn.stats()
    assert np.isclose(float(mean), 5.0) and np.isclose(float(std), 0.1)
    assert np.isclose(float(vn.normalize(jnp.float32(5.1))), 1.0, rtol=1e-4)
    mean, std = ValueNorm.create().stats()
    assert float(mean) == 0.0 and np.isclose(float(std), 0.1)


# --- the critic's agent ids -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "cfg", "ids"),
    [
        ("particle/spread", {"agent_id": False}, True),  # own collisions: rewards differ
        ("particle/speaker_listener", {"agent_id": False}, False),  # one shared reward
        ("particle/spread", {"agent_id": False, "critic": "local"}, False),  # own observation
        ("particle/spread", {"agent_id": False, "critic_agent_id": True}, True),
        ("particle/speaker_listener", {}, True),  # agent_id=true: actor and critic
        ("combat/3m", {"agent_id": False}, False),  # SMAC's team reward
    ],
)
def test_central_critic_tells_agents_apart_where_rewards_differ(env_id, cfg, ids):
    """MAPPO without actor ids still gives its central critic agent ids on a task whose agents'
    rewards differ, so two agents in one state get two values; not where they share one."""
    import marl
    from marl.algorithms.ppo import Networks, PPOConfig

    env = marl.make(env_id)
    nets = Networks(env, PPOConfig(**cfg))
    n = env.spec.num_agents
    assert nets.critic_id_dim == (n if ids else 0)
    assert nets.id_dim == (n if cfg.get("agent_id", True) else 0)
    _, critic = nets.init(jax.random.key(0))
    _, ts = jax.jit(env.reset)(jax.random.key(1))
    x = nets.critic_input(ts.obs, ts.state)[None, None]
    _, v = nets.critic_apply(critic, jnp.zeros((1, n, nets.hidden_dim)), x, jnp.ones((1, 1), bool))
    spread = float(np.ptp(np.asarray(v)))
    if ids or cfg.get("critic") == "local":
        assert spread > 1e-6
    else:
        assert spread == 0.0


def test_central_critic_without_ids_is_refused_where_rewards_differ():
    import marl
    from marl.algorithms.ppo import Networks, PPOConfig

    with pytest.raises(ValueError, match="critic_agent_id=false.*rewards differ"):
        Networks(marl.make("particle/spread"), PPOConfig(agent_id=False, critic_agent_id=False))
    # a shared reward: allowed
    Networks(marl.make("particle/speaker_listener"), PPOConfig(critic_agent_id=False))


def test_happos_team_critic_never_takes_ids():
    """HAPPO's critic is one team value V(s) (HARL's EP), on any cooperative task."""
    import marl
    from marl.algorithms import happo

    train = happo.make_train(marl.make("particle/spread"), {"num_envs": 2, "rollout_length": 4})
    critic = jax.eval_shape(train.init, jax.random.key(0)).critic_params
    first = critic["params"]["Torso_0"]["MLP_0"]["Dense_0"]["kernel"]
    assert first.shape[1] == marl.make("particle/spread").spec.state_dim
