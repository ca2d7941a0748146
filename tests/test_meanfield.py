"""Mean-field pieces and MF-Q: neighbourhood mean actions, the Boltzmann target, learning."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms import replay
from marl.algorithms.meanfield import boltzmann_probs, mean_action, mean_field_value
from marl.algorithms.mfq import MFQConfig, Transition, make_train, make_train_il
from marl.core.learner import SEED_AXIS
from marl.learning.runner import run
from marl.learning.training import RunSettings


def test_mean_action_averages_living_neighbours_by_hand():
    """combat/3m with ally 2 dead: the neighbourhood drops it; rows are normalised."""
    env = marl.make("combat/3m")
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    state = state.replace(
        pos=state.pos.at[:3].set(jnp.array([[10.0, 10.0], [11.0, 10.0], [12.0, 10.0]])),
        health=state.health.at[2].set(0.0),
    )
    weights = env.neighbourhood(state)
    np.testing.assert_array_equal(weights, [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    actions = jnp.array([1, 3, 4])
    mean = mean_action(weights, actions, env.spec.action_dim)
    expected = np.zeros((3, 8))
    expected[0, 3] = 1.0  # agent 0 sees only agent 1, who moved west (3)
    expected[1, 1] = 1.0  # agent 1 sees only agent 0 (east, 1)
    np.testing.assert_allclose(mean, expected)  # the dead agent: no neighbours, zeros

    w = jnp.array([[0.0, 1.0, 1.0, 2.0], [1.0, 0.0, 0.0, 0.0], [0, 0, 0, 0], [1, 1, 1, 0]])
    m = mean_action(w, jnp.array([0, 1, 1, 2]), 3)
    np.testing.assert_allclose(m[0], [0.0, 0.5, 0.5])  # (1 + 1) / 4 on action 1, 2 / 4 on 2
    np.testing.assert_allclose(m[3], [1 / 3, 2 / 3, 0.0])


def test_boltzmann_target_by_hand():
    q_policy = jnp.array([[1.0, 2.0, 0.0]])
    q_value = jnp.array([[3.0, 5.0, 100.0]])
    avail = jnp.array([[True, True, False]])  # the 100 is not available
    probs = boltzmann_probs(q_policy, avail, 0.5)
    p1 = np.exp(2.0 / 0.5) / (np.exp(1.0 / 0.5) + np.exp(2.0 / 0.5))
    np.testing.assert_allclose(probs[0], [1 - p1, p1, 0.0], rtol=1e-6)
    value = mean_field_value(q_policy, q_value, avail, 0.5, "boltzmann")
    np.testing.assert_allclose(value, [(1 - p1) * 3.0 + p1 * 5.0], rtol=1e-6)
    assert float(mean_field_value(q_policy, q_value, avail, 0.5, "max")[0]) == 5.0
    with pytest.raises(ValueError, match="boltzmann, max"):
        mean_field_value(q_policy, q_value, avail, 0.5, "soft")


def test_every_family_gives_spatial_neighbourhoods():
    for env_id, far in [
        ("particle/spread", 1.0),
        ("pathfinding/random_grid", 2.0),
        ("cleanup/comm", 4.0),
    ]:
        env = marl.make(env_id)
        state, _ = jax.jit(env.reset)(jax.random.key(1))  # compiled: an eager reset costs more
        pos = state.pos[: env.spec.num_agents]
        w = np.asarray(jax.jit(env.neighbourhood)(state))
        d = np.linalg.norm(np.asarray(pos)[:, None] - np.asarray(pos)[None], axis=-1)
        expected = (d < far) & ~np.eye(len(d), dtype=bool)
        np.testing.assert_array_equal(w > 0, expected, err_msg=env_id)


@pytest.mark.integration
@pytest.mark.slow
def test_mfq_learns_the_single_agent_task():
    """particle/simple: no neighbours (mean action zero), so MF-Q is plain Q-learning here."""
    env = marl.make("particle/simple")
    cfg = {"temperature_steps": 10_000, "lr": 1e-3, "hidden": (32, 32), "rollout_length": 2}
    settings = RunSettings(
        seeds=2, budget=40_000, eval_interval=20_000, eval_episodes=8, absolute_episodes=0
    )
    res = run(env, marl.algorithm("mfq")(env, cfg), settings, log=None)
    curve = res.curve().mean(axis=1)
    assert curve[-1] > curve[0] + 30 and curve[-1] > -40, curve


def test_mfq_updates_are_deterministic_and_without_mean_action():
    env = marl.make("particle/spread", num_agents=4)
    train = marl.algorithm("mfq")(env, {"num_envs": 2, "batch_size": 8})
    keys = jax.random.split(jax.random.key(0), 2)
    init = jax.jit(lambda k: jax.lax.map(train.init, k))
    step = jax.jit(jax.vmap(train.step, axis_name=SEED_AXIS))

    def updates(n: int = 6):
        state = init(keys)
        for _ in range(n):
            state, metrics = step(state)
        return state, metrics

    (a, m), (b, _) = updates(), updates()
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        assert np.array_equal(x, y)
    assert float(m["learning"].min()) == 1.0  # gradient steps were taken
    kernel = a.params["params"]["MLP_0"]["Dense_0"]["kernel"]  # inputs: obs and mean action
    assert kernel.shape[-2] == env.spec.obs_dim + env.spec.action_dim
    il = marl.algorithm("mfq")(env, {"mean_action": False})
    shapes = jax.eval_shape(il.init, jax.random.key(0)).params
    assert shapes["params"]["MLP_0"]["Dense_0"]["kernel"].shape[-2] == env.spec.obs_dim


@pytest.mark.integration
@pytest.mark.slow
def test_mfac_learns_the_single_agent_task():
    env = marl.make("particle/simple")
    cfg = {"actor_lr": 1e-3, "hidden": (32, 32), "rollout_length": 8}
    settings = RunSettings(
        seeds=2, budget=60_000, eval_interval=30_000, eval_episodes=8, absolute_episodes=0
    )
    res = run(env, marl.algorithm("mfac")(env, cfg), settings, log=None)
    curve = res.curve().mean(axis=1)
    # from about -42 at the start to about -16 (the landmark reached, not yet held)
    assert curve[-1] > curve[0] + 15 and curve[-1] > -25, curve


def test_il_never_has_the_mean_action():
    """IL is MF-Q without the mean action, whatever the config: a config object is taken
    without it, and a dict asking for it is refused."""
    env = marl.make("particle/spread")
    shapes = jax.eval_shape(make_train_il(env, MFQConfig()).init, jax.random.key(0)).params
    assert shapes["params"]["MLP_0"]["Dense_0"]["kernel"].shape[-2] == env.spec.obs_dim
    with pytest.raises(ValueError, match="mean_action must be false"):
        make_train_il(env, {"mean_action": True})


def test_mfq_resets_the_previous_mean_action_at_episode_start():
    """After a rollout ending on spread's time limit (25 steps), the previous mean action the
    next step acts on is zeros, though the last step's mean action was not."""
    env = marl.make("particle/spread", num_agents=4)
    train = make_train(env, {"num_envs": 2, "rollout_length": 25, "train_steps": 0})
    state, _ = jax.jit(train.step)(jax.jit(train.init)(jax.random.key(0)))
    last_mean = np.asarray(state.buffer.data.mean[24 * 2 : 25 * 2])  # the step at t=24
    assert state.buffer.size == 50 and np.abs(last_mean).sum() > 0
    np.testing.assert_array_equal(np.asarray(state.prev_mean), 0.0)


def test_mfq_td_loss_ignores_agents_not_alive():
    """Replay filled with transitions whose agents are all dead, with rewards of 1e4: the TD
    loss (over the sampled agents alive at `o`) stays of the size of the one real spread step
    sampled with them, instead of the ~1e8 of the dead agents' errors."""
    env = marl.make("particle/spread")
    n, a = env.spec.num_agents, env.spec.action_dim
    cfg = {"num_envs": 1, "rollout_length": 1, "batch_size": 32, "buffer_size": 32 * n}
    train = make_train(env, cfg)
    state = jax.jit(train.init)(jax.random.key(0))
    dead = Transition(
        obs=jnp.zeros((32, n, env.spec.obs_dim)),
        mean=jnp.zeros((32, n, a)),
        action=jnp.zeros((32, n), jnp.int32),
        reward=jnp.full((32, n), 1e4),
        next_obs=jnp.zeros((32, n, env.spec.obs_dim)),
        next_avail=jnp.ones((32, n, a), bool),
        alive=jnp.zeros((32, n), bool),
        terminated=jnp.zeros((32, n), bool),
    )
    state = state.replace(buffer=replay.add_masked(state.buffer, dead, jnp.ones((32,), bool)))
    _, metrics = jax.jit(train.step)(state)
    assert float(metrics["learning"]) == 1.0
    assert 0.0 <= float(metrics["loss/td"]) < 1e3, metrics["loss/td"]


def test_mfac_actor_loss_conditions_on_the_behaviour_mean_action():
    """The actor's loss evaluates the policy on what the behaviour policy saw: one step from
    reset, its `entropy` metric (at the initial parameters) is the actor's on the reset
    observation with a zero mean action, not with that step's (non-zero) mean action."""
    from marl.algorithms.mfac import MFACConfig
    from marl.algorithms.mfq import MeanFieldQ
    from marl.core.wrappers import training_env

    env = marl.make("particle/spread", num_agents=4)
    cfg = MFACConfig(num_envs=2, rollout_length=1, hidden=(16, 16))
    train = marl.algorithm("mfac")(env, cfg)
    state = jax.jit(train.init)(jax.random.key(0))
    _, metrics = jax.jit(train.step)(state)
    actor = MeanFieldQ(env, cfg.networks_config())

    def entropy(mean):
        logits = actor.q(state.actor, state.timestep.obs, mean)
        avail = state.timestep.avail_actions
        logp = jax.nn.log_softmax(jnp.where(avail, logits, -1e9), axis=-1)
        return float(jnp.mean(-jnp.sum(jnp.where(avail, jnp.exp(logp) * logp, 0.0), axis=-1)))

    zeros = jnp.zeros((2, 4, env.spec.action_dim))
    assert np.isclose(float(metrics["entropy"]), entropy(zeros), rtol=1e-6, atol=1e-7)
    # the check can tell: the step's mean action (any joint action) changes the entropy
    neighbours = jax.vmap(training_env(env).neighbourhood)(state.env_state)
    some_mean = mean_action(neighbours, jnp.zeros((2, 4), jnp.int32), env.spec.action_dim)
    assert float(jnp.abs(some_mean).sum()) > 0
    assert abs(entropy(some_mean) - entropy(zeros)) > 1e-5


def _huge_target(params):
    """Parameters whose linear head's bias is 1e6: every Q value about 1e6."""
    new = jax.tree.map(lambda x: x, params)
    new["params"]["Dense_0"]["bias"] = jnp.full_like(params["params"]["Dense_0"]["bias"], 1e6)
    return new


@pytest.mark.parametrize("learner", ["mfq", "mfac"])
def test_mean_field_targets_do_not_bootstrap_past_an_agents_death(learner):
    """Every agent dies in the first step while the episode goes on: with the target network's
    values at ~1e6, the TD error of that step is the reward's (about 1), not ~1e12 (mfrl:
    `terminal = not alive` per agent)."""
    from hand_rollouts import death_env

    env = death_env(num_agents=2, die_at=0)
    if learner == "mfq":
        cfg = {"num_envs": 1, "rollout_length": 1, "batch_size": 1, "hidden": [8]}
        train = make_train(env, cfg)
        state = jax.jit(train.init)(jax.random.key(0))
        state = state.replace(target_params=_huge_target(state.target_params))
        _, metrics = jax.jit(train.step)(state)
        loss = float(metrics["loss/td"])
    else:
        from marl.algorithms.mfac import MFACConfig

        train = marl.algorithm("mfac")(env, MFACConfig(num_envs=1, rollout_length=1, hidden=(8,)))
        state = jax.jit(train.init)(jax.random.key(0))
        state = state.replace(target_critic=_huge_target(state.target_critic))
        _, metrics = jax.jit(train.step)(state)
        loss = float(metrics["loss/critic"])
    assert loss < 100.0, loss


def test_mfq_stores_each_agents_termination():
    """The replay holds per-agent terminations: agent 0 dies in step 1 and agent 1 in step 2
    of each 4-step episode; the stored flags are set exactly there."""
    from hand_rollouts import death_env

    env = death_env(num_agents=2, die_at=(1, 2))
    train = make_train(env, {"num_envs": 1, "rollout_length": 8, "train_steps": 0})
    state, _ = jax.jit(train.step)(jax.jit(train.init)(jax.random.key(0)))
    terminated = np.asarray(state.buffer.data.terminated[:8])
    expected = np.zeros((8, 2), bool)
    expected[[1, 5], 0] = True
    expected[[2, 6], 1] = True
    np.testing.assert_array_equal(terminated, expected)
