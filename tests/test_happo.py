"""HAPPO: the compounded ratio, the agent order, the sequential update, a short run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms import happo
from marl.algorithms.ppo import Networks, collect, make_optimizer
from marl.core.wrappers import training_env
from marl.learning.runner import run
from marl.learning.training import RunSettings

Array = jax.Array

TINY = {"num_envs": 8, "rollout_length": 25, "hidden": (16, 16), "epochs": 2}


def short_run(seed: int = 0, budget: int = 20_000):
    """HAPPO on spread through the runner: 2 seeds, `budget` env steps each, 3 evaluations."""
    env = marl.make("particle/spread")
    train = happo.make_train(env, TINY)
    settings = RunSettings(
        seeds=2, budget=budget, eval_interval=budget // 2, eval_episodes=8, seed=seed
    )
    return run(env, train, settings, log=None)


def leaves_of(params, agent):
    return [np.asarray(x[agent]) for x in jax.tree.leaves(params)]


def same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# --- the compounded ratio ---------------------------------------------------------------------


def compound_factor(
    old_log_probs: Array, new_log_probs: Array, order: Array, alive: Array | None = None
) -> Array:
    """The weight each position of `order` sees: the product of the ratios before it (the
    reference the learner's in-scan factors are checked against).

    Args:
        old_log_probs, new_log_probs: [N, ...] per agent (agent-major).
        order: [N] the agents in update order.
        alive: [N, ...] bool (default all True).
    Returns:
        [N, ...] `out[k] = prod_{j < k} exp(new[order[j]] - old[order[j]])` (`out[0] = 1`).
    """
    alive = jnp.ones(old_log_probs.shape, bool) if alive is None else alive

    def body(factor, agent):
        nxt = happo.next_factor(factor, new_log_probs[agent], old_log_probs[agent], alive[agent])
        return nxt, factor

    _, out = jax.lax.scan(body, jnp.ones(old_log_probs.shape[1:]), order)
    return out


def test_compound_factor_hand_example():
    # 3 agents, 2 samples; ratios pi_new/pi_old per agent and sample:
    #   agent 0: 2.0, 0.5    agent 1: 0.5, 4.0    agent 2: 1.5, 1.0
    ratios = np.array([[2.0, 0.5], [0.5, 4.0], [1.5, 1.0]], np.float32)
    old = np.log(np.array([[0.1, 0.4], [0.6, 0.2], [0.2, 0.5]], np.float32))
    new = old + np.log(ratios)
    order = jnp.array([2, 0, 1])
    out = np.asarray(compound_factor(jnp.asarray(old), jnp.asarray(new), order))
    # position 0 (agent 2): nobody before -> 1
    # position 1 (agent 0): agent 2 before -> 1.5, 1.0
    # position 2 (agent 1): agents 2, 0 before -> 1.5 * 2.0 = 3.0, 1.0 * 0.5 = 0.5
    np.testing.assert_allclose(out, [[1.0, 1.0], [1.5, 1.0], [3.0, 0.5]], rtol=1e-6)


def test_compound_factor_ignores_dead_agents():
    old = jnp.zeros((2, 3))
    new = jnp.log(jnp.array([[2.0, 3.0, 4.0], [5.0, 5.0, 5.0]]))
    alive = jnp.array([[True, False, True], [True, True, True]])
    out = np.asarray(compound_factor(old, new, jnp.array([0, 1]), alive))
    # agent 0's ratio counts only where it is alive (samples 0 and 2)
    np.testing.assert_allclose(out, [[1.0, 1.0, 1.0], [2.0, 1.0, 4.0]], rtol=1e-6)


def test_next_factor_compounds_one_agent():
    f = happo.next_factor(
        jnp.array([2.0]), jnp.log(jnp.array([0.3])), jnp.log(jnp.array([0.6])), jnp.array([True])
    )
    np.testing.assert_allclose(np.asarray(f), [1.0], rtol=1e-6)


# --- the agent order --------------------------------------------------------------------------


def test_agent_order_is_a_permutation_changing_between_updates():
    n = 5
    key = jax.random.key(3)
    orders = []
    for _ in range(8):  # the keys successive updates use
        key, k_order, _, _ = happo.split_keys(key)
        order = np.asarray(happo.agent_order(k_order, n))
        assert sorted(order.tolist()) == list(range(n))
        orders.append(tuple(order.tolist()))
    assert len(set(orders)) > 1
    # the same key gives the same order
    k = jax.random.key(11)
    assert np.array_equal(happo.agent_order(k, n), happo.agent_order(k, n))


# --- the sequential update --------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained():
    """A short run (2 seeds, 20k steps each) on spread, shared by the tests below."""
    return short_run(seed=0)


@pytest.fixture(scope="module")
def setup():
    """A fresh learner after one rollout: (nets, cfg, tx, state, rollout, adv)."""
    env = marl.make("particle/spread")
    cfg = happo.config(TINY)
    nets = Networks(env, cfg, actor_sharing="none", team_critic=True)
    state = happo.make_train(env, TINY).init(jax.random.key(0))
    state, ro, _ = jax.jit(lambda s: collect(nets, training_env(env), cfg, s))(state)
    adv = jax.random.normal(jax.random.key(1), ro.alive.shape)
    tx = make_optimizer(cfg, cfg.lr, None)
    return nets, cfg, tx, state, ro, adv


def test_config_ships_no_sharing_and_rejects_conflicts():
    cfg = happo.config(None)
    assert cfg.parameter_sharing == "none" and not cfg.agent_id and cfg.critic == "central"
    assert (cfg.epochs, cfg.num_minibatches, cfg.lr, cfg.critic_lr) == (10, 2, 2e-3, 2e-3)
    harl = happo.config(happo.HARL)
    assert (harl.num_minibatches, harl.lr, harl.activation, harl.hidden) == (
        1,
        5e-4,
        "relu",
        (128, 128),
    )
    with pytest.raises(ValueError, match="critic_agent_id"):
        happo.config({"critic_agent_id": True})


def test_a_shared_actor_takes_a_turn_for_each_agent():
    """HARL's `share_param` (`parameter_sharing="all"`): one actor parameter set, which each of
    spread's 3 agents updates in turn on its own samples, so one update takes 3 x epochs x
    minibatches Adam steps on it (refused before: HAPPO forced one set per agent)."""
    env = marl.make("particle/spread")
    cfg = happo.config({**TINY, "parameter_sharing": "all"})
    train = happo.make_train(env, cfg)
    state = jax.jit(train.init)(jax.random.key(0))
    after, metrics = jax.jit(train.step)(state)
    assert {x.shape[0] for x in jax.tree.leaves(after.actor_params)} == {1}
    counts = [int(np.max(x)) for x in jax.tree.leaves(after.actor_opt) if x.dtype == jnp.int32]
    assert counts and set(counts) == {3 * cfg.epochs * cfg.num_minibatches}
    assert not same(leaves_of(state.actor_params, 0), leaves_of(after.actor_params, 0))
    assert np.isfinite(float(metrics["loss/factor_mean"]))


# the settings that decide how hard each sample is optimised; HAPPO, IPPO and MAPPO must agree
# on them for a comparison of their update rules to mean anything (HARL runs its HAPPO and MAPPO
# at one ppo_epoch); HAPPO's 5 epochs against MAPPO's 10 made MAPPO look clearly better
OPTIMISATION = (
    "num_envs",
    "rollout_length",
    "epochs",
    "num_minibatches",
    "lr",
    "critic_lr",
    "anneal_lr",
    "clip_eps",
    "value_clip_eps",
    "ent_coef",
    "max_grad_norm",
    "value_norm",
    "huber_delta",
    "hidden",
    "activation",
    "gamma",
    "gae_lambda",
    "advantage_norm",
)


def test_on_policy_learners_ship_the_same_optimisation_settings():
    from marl.learning.learner_config import shipped

    happo_cfg = {k: shipped("happo")[k] for k in OPTIMISATION}
    for other in ("mappo", "ippo"):
        assert happo_cfg == {k: shipped(other)[k] for k in OPTIMISATION}, other


def test_refuses_tasks_without_one_team_objective():
    """One team advantage would train tag's prey on the mean of both teams' rewards."""
    for task in ("particle/tag", "particle/adversary", "particle/push"):
        with pytest.raises(ValueError, match="happo trains every agent on one team advantage"):
            happo.make_train(marl.make(task), TINY)
    happo.make_train(marl.make("particle/speaker_listener"), TINY)  # two groups, one objective


def test_update_agent_changes_only_that_agent(setup):
    nets, cfg, tx, state, ro, adv = setup
    n = ro.alive.shape[2]
    factor = jnp.ones(ro.alive.shape[:2])
    update = jax.jit(
        lambda agent: happo.update_agent(
            nets,
            cfg,
            tx,
            state.actor_params,
            state.actor_opt,
            ro,
            adv,
            state.actor_carry,
            factor,
            agent,
            jax.random.key(2),
        )
    )
    for k in range(n):
        params, opt, new_log_prob, _ = update(jnp.int32(k))
        assert new_log_prob.shape == ro.alive.shape[:2]
        for j in range(n):
            before = leaves_of(state.actor_params, j) + leaves_of(state.actor_opt, j)
            after = leaves_of(params, j) + leaves_of(opt, j)
            assert same(before, after) == (j != k), (k, j)


def test_sequential_update_weights_by_the_agents_before(setup):
    nets, cfg, tx, state, ro, adv = setup
    n = ro.alive.shape[2]
    order = jnp.array([2, 0, 1])
    params, _, factors, metrics = jax.jit(
        lambda: happo.sequential_update(
            nets,
            cfg,
            tx,
            state.actor_params,
            state.actor_opt,
            ro,
            adv,
            state.actor_carry,
            order,
            jax.random.key(2),
        )
    )()
    for j in range(n):  # every agent was updated
        assert not same(leaves_of(state.actor_params, j), leaves_of(params, j))
    assert metrics["entropy"].shape == (n,)
    # each agent's parameters are final once its turn is over, so the weights used equal the
    # compounded ratios of the final policies over the rollout policies, in order
    _, dist = nets.actor_apply(params, state.actor_carry, ro.actor_in, ro.start, ro.avail)
    new = jnp.moveaxis(dist.log_prob(ro.action), 2, 0)
    expected = compound_factor(
        jnp.moveaxis(ro.log_prob, 2, 0), new, order, jnp.moveaxis(ro.alive, 2, 0)
    )
    np.testing.assert_allclose(np.asarray(factors), np.asarray(expected), rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(factors[0]), 1.0)
    assert float(jnp.max(jnp.abs(factors[-1] - 1.0))) > 1e-4  # the weights did move


@pytest.mark.integration
def test_short_run_on_spread_is_finite(trained):
    result = trained
    assert result.steps[-1] >= 20_000
    curve = result.curve()
    assert curve.shape == (3, 2) and np.all(np.isfinite(curve))
    for m in result.train_metrics:
        assert all(np.all(np.isfinite(v)) for v in m.values())
    first = jax.tree.leaves(result.final_state.actor_params)[0]
    assert first.shape[:2] == (2, 3)  # [seeds, agents, ...]: one parameter set per agent


@pytest.mark.integration
def test_same_seed_same_parameters(trained):
    again = short_run(seed=0)  # traced and compiled anew
    for x, y in zip(jax.tree.leaves(trained.params), jax.tree.leaves(again.params), strict=True):
        np.testing.assert_array_equal(x, y)
    first = jax.tree.leaves(trained.params)[0]
    assert not np.array_equal(first[0], first[1])  # the two seeds differ


def test_team_critic_takes_one_sample_per_step_whoever_is_alive(setup):
    """The critic fits V(s) with a plain mean over steps (HARL's EP critic): which agents are
    alive does not change its update; MAPPO's per-agent masked loss would."""
    from marl.algorithms.ppo import critic_update

    nets, cfg, _, state, ro, _ = setup
    tx = make_optimizer(cfg, cfg.critic_lr, None)
    targets = jax.random.normal(jax.random.key(3), ro.alive.shape[:2])
    targets = jnp.broadcast_to(targets[..., None], ro.alive.shape)
    deaths = jax.random.bernoulli(jax.random.key(4), 0.5, ro.alive.shape).at[..., 0].set(True)
    died = ro.replace(alive=ro.alive & deaths)
    assert not bool(jnp.all(died.alive))

    def fit(update, rollout):
        h0, key = state.critic_carry, jax.random.key(5)
        params, _, _ = jax.jit(lambda r: update(nets, cfg, tx, state, r, targets, h0, key))(rollout)
        return jax.tree.leaves(params)

    all_alive = fit(happo.team_critic_update, ro)
    assert same(all_alive, fit(happo.team_critic_update, died))
    assert not same(fit(critic_update, ro), fit(critic_update, died))
    mask = happo.team_samples(died.alive)
    assert mask.shape == ro.alive.shape and int(mask.sum()) == mask.shape[0] * mask.shape[1]


def test_team_advantages_bootstrap_truncations_by_hand():
    """GAE on the team reward (mean of the agents') and the team value (T=2, N=2, gamma .9,
    lambda .8), rewards (0, 2) -> 1 per step, values .5, .6, next values .6, 5: truncated at
    t=1: adv = [4.568, 4.9] (1 + .9 * 5 - .6 = 4.9; 1.04 + .72 * 4.9 = 4.568); terminated at
    t=1: adv = [1.328, .4]."""
    from hand_rollouts import hand_rollout

    from marl.algorithms.onpolicy import ValueNorm
    from marl.algorithms.ppo import PPOConfig

    cfg = PPOConfig(gamma=0.9, gae_lambda=0.8, value_norm=False)

    def per_agent(x):  # [T] -> [T, B=1, N=2]
        return jnp.broadcast_to(jnp.asarray(x)[:, None, None], (2, 1, 2))

    reward = jnp.array([[0.0, 2.0], [0.0, 2.0]])[:, None, :]

    def rollout(terminated):
        value, next_value = per_agent([0.5, 0.6]), per_agent([0.6, 5.0])
        done = jnp.array([[False], [True]])
        return hand_rollout(reward, value, next_value, jnp.array([[False], [terminated]]), done)

    adv, targets = happo.team_advantages(cfg, ValueNorm.create(), rollout(False))
    assert adv.shape == (2, 1)
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [4.568, 4.9], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(targets)[:, 0], [5.068, 5.5], rtol=1e-5)
    adv, _ = happo.team_advantages(cfg, ValueNorm.create(), rollout(True))
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [1.328, 0.4], rtol=1e-5)


def test_a_zero_factor_switches_off_the_agents_surrogate(setup):
    """The compounded factor weights the agent's PPO loss: with factor 0 everywhere and no
    entropy bonus its gradient is 0, so a fresh Adam leaves its parameters exactly as they
    were; with factor 1 they move."""
    import dataclasses

    nets, cfg, tx, state, ro, adv = setup
    cfg = dataclasses.replace(cfg, ent_coef=0.0)
    fresh = jax.vmap(tx.init)(state.actor_params)  # no momentum from earlier updates

    @jax.jit
    def update(factor):
        params, *_ = happo.update_agent(
            nets, cfg, tx, state.actor_params, fresh, ro, adv, state.actor_carry,
            factor, jnp.int32(1), jax.random.key(2),
        )  # fmt: skip
        return params

    before = leaves_of(state.actor_params, 1)
    assert same(before, leaves_of(update(jnp.zeros(ro.alive.shape[:2])), 1))
    assert not same(before, leaves_of(update(jnp.ones(ro.alive.shape[:2])), 1))


def test_each_update_uses_the_drawn_agent_order(monkeypatch):
    """make_train's step updates the agents in the order `agent_order` draws (here fixed to
    [2, 0, 1]), not in index order."""
    env = marl.make("particle/spread")
    cfg = {"num_envs": 2, "rollout_length": 2, "hidden": (8,), "epochs": 1, "num_minibatches": 1}
    train = happo.make_train(env, cfg)
    seen = []
    sequential = happo.sequential_update

    def spy(*args):
        jax.debug.callback(lambda order: seen.append(np.asarray(order).tolist()), args[8])
        return sequential(*args)

    monkeypatch.setattr(happo, "agent_order", lambda key, n: jnp.array([2, 0, 1], jnp.int32))
    monkeypatch.setattr(happo, "sequential_update", spy)
    jax.jit(train.step)(train.init(jax.random.key(0)))
    assert seen == [[2, 0, 1]]


def test_per_agent_normalized_by_hand():
    """Agent 0 alive at all three steps: [1, 2, 3] -> mean 2, std sqrt(2/3): -1.2247, 0,
    1.2247. Agent 1 alive at the first two only: [10, 20] -> -1, 1, whatever its dead step
    holds (HARL: NaN where inactive, then nanmean / nanstd, eps 1e-5)."""
    adv = jnp.array([[1.0, 10.0], [2.0, 20.0], [3.0, 1000.0]]).reshape(3, 1, 2)
    alive = jnp.array([[1, 1], [1, 1], [1, 0]], bool).reshape(3, 1, 2)
    out = np.asarray(happo.per_agent_normalized(adv, alive))[:, 0]
    np.testing.assert_allclose(out[:, 0], [-1.2247, 0.0, 1.2247], atol=1e-4)
    np.testing.assert_allclose(out[:2, 1], [-1.0, 1.0], atol=1e-4)


def test_each_agent_updates_on_its_own_normalised_advantages(monkeypatch):
    """Agents that die at different steps (1 and 2 of each 4-step episode): the advantages
    make_train's step hands the sequential update have, for every agent, zero mean and unit
    std over the samples where that agent is alive (not only over all agents' at once)."""
    from hand_rollouts import death_env

    env = death_env(num_agents=2, die_at=(1, 2))
    cfg = {"num_envs": 2, "rollout_length": 8, "hidden": (8,), "epochs": 1, "num_minibatches": 1}
    train = happo.make_train(env, cfg)
    seen = []
    sequential = happo.sequential_update

    def spy(*args):
        jax.debug.callback(lambda adv: seen.append(np.asarray(adv)), args[6])
        return sequential(*args)

    monkeypatch.setattr(happo, "sequential_update", spy)
    state, _ = jax.jit(train.step)(train.init(jax.random.key(0)))
    jax.jit(train.step)(state)  # a second update: the value is no longer zero
    adv = seen[-1].reshape(2, 4, 2, 2)  # [episode, step, env, agent]: 8 steps, 2 episodes
    for agent, alive_steps in ((0, 2), (1, 3)):
        a = adv[:, :alive_steps, :, agent].ravel()
        assert abs(a.mean()) < 1e-4 and abs(a.std() - 1.0) < 1e-3, (agent, a.mean(), a.std())
