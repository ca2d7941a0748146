"""The graph torso over agents (marl.learning.message_passing): permutation-equivariant over
agents, blind to agents it is not linked to, binary messages with a gradient."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marl.learning.message_passing import MessagePassing, aggregate, binary

N, D = 6, 5


def _inputs(seed: int):
    kx, ka = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (N, D))
    adj = jax.random.bernoulli(ka, 0.4, (N, N))
    return x, adj | adj.T  # symmetric, as a range


@pytest.mark.parametrize("how", ["mean", "sum", "max"])
@pytest.mark.parametrize("signal", [False, True])
def test_relabelling_agents_relabels_the_outputs(how, signal):
    net = MessagePassing(hidden=16, message_dim=8, rounds=2, how=how, signal=signal)
    x, adj = _inputs(0)
    params = net.init(jax.random.key(1), x, adj)
    perm = np.random.default_rng(2).permutation(N)
    out = net.apply(params, x, adj)
    relabelled = net.apply(params, x[perm], adj[perm][:, perm])
    np.testing.assert_allclose(relabelled, out[perm], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("how", ["mean", "sum", "max"])
def test_agents_out_of_range_are_not_heard(how):
    net = MessagePassing(hidden=16, message_dim=8, rounds=2, how=how)
    x, _ = _inputs(3)
    adj = jnp.zeros((N, N), bool).at[0, 1].set(True).at[1, 0].set(True)  # 0 and 1 linked only
    params = net.init(jax.random.key(4), x, adj)
    changed = x.at[2:].set(jax.random.normal(jax.random.key(5), (N - 2, D)) * 3.0)
    before, after = net.apply(params, x, adj), net.apply(params, changed, adj)
    np.testing.assert_allclose(after[:2], before[:2], rtol=1e-6)  # 0 and 1 hear only each other
    # and the link carries something: 1's features reach 0
    moved = net.apply(params, x.at[1].add(1.0), adj)
    assert not np.allclose(moved[0], before[0])


def test_dropping_the_mask_would_be_caught():
    """`aggregate` without its links would hear everyone: the out-of-range check fails on it."""
    m = jnp.arange(12.0).reshape(N, 2)
    adj = jnp.zeros((N, N), bool).at[0, 1].set(True)
    np.testing.assert_allclose(aggregate(m, adj, "mean")[0], m[1])
    everyone = aggregate(m, jnp.ones((N, N), bool), "mean")[0]
    assert not np.allclose(everyone, m[1])
    assert (aggregate(m, adj, "sum")[2:] == 0).all()  # nobody heard: zeros


def test_binary_messages_are_bits_with_a_gradient():
    x = jnp.array([-2.0, -0.1, 0.3, 4.0])
    np.testing.assert_array_equal(binary(x), [0.0, 0.0, 1.0, 1.0])
    grad = jax.grad(lambda v: binary(v).sum())(x)
    np.testing.assert_allclose(grad, jax.nn.sigmoid(x) * (1 - jax.nn.sigmoid(x)), rtol=1e-6)


def test_batches_of_envs_and_time_share_the_torso():
    net = MessagePassing(hidden=8, message_dim=4)
    x, adj = _inputs(6)
    params = net.init(jax.random.key(7), x, adj)
    xs = jnp.stack([x, x * 2.0, x - 1.0])[None]  # [T=1, B=3, N, D]
    adjs = jnp.broadcast_to(adj, (1, 3, N, N))
    out = net.apply(params, xs, adjs)
    assert out.shape == (1, 3, N, 8)
    np.testing.assert_allclose(out[0, 1], net.apply(params, x * 2.0, adj), rtol=1e-5)


# --- the torso in the PPO family's actor, on cleanup's communication range --------------------


def _fleet(comm_range: float = 3.0):
    """A cleanup sea of 6 vessels, its first state's observations and links (vessels within
    `comm_range` of each other), and the PPO family's actor with the graph torso (no agent ids:
    they would tell relabelled vessels apart)."""
    from marl.algorithms.ppo import Networks, PPOConfig
    from marl.envs.cleanup import Cleanup

    env = Cleanup(num_vessels=6, comm_range=comm_range, communication=False)
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    cfg = PPOConfig(torso="graph", agent_id=False, graph_rounds=2, hidden=(32, 32))
    nets = Networks(env, cfg)
    actor_params, _ = nets.init(jax.random.key(1))
    links = nets.links(env, jax.tree.map(lambda x: x[None], state))[0]

    @jax.jit
    def logits(obs, adj):
        h = jnp.zeros((1, env.spec.num_agents, nets.hidden_dim))
        avail = jnp.ones((1, 1, env.spec.num_agents, env.spec.action_dim), bool)
        start = jnp.ones((1, 1), bool)
        _, dist = nets.actor_apply(actor_params, h, obs[None, None], start, avail, adj[None, None])
        return dist.logits[0, 0]

    return env, state, ts.obs, links, logits


def test_the_fleet_torso_relabels_with_the_vessels():
    _, _, obs, links, logits = _fleet()
    perm = np.random.default_rng(0).permutation(obs.shape[0])
    np.testing.assert_allclose(
        logits(obs[perm], links[perm][:, perm]), logits(obs, links)[perm], rtol=1e-5, atol=1e-6
    )


def test_the_fleet_torso_ignores_vessels_out_of_communication_range():
    env, state, obs, links, logits = _fleet()
    links = np.asarray(links)
    assert (links == np.asarray(env.neighbourhood(state) > 0)).all()
    # a vessel that hears some vessels and not others
    i = next(i for i in range(len(links)) if 0 < links[i].sum() < len(links) - 1)
    far = np.flatnonzero(~links[i] & (np.arange(len(links)) != i))
    near = np.flatnonzero(links[i])
    noise = jax.random.normal(jax.random.key(2), obs.shape) * 2.0
    changed = obs.at[far].add(noise[far])
    before = logits(obs, jnp.asarray(links))
    np.testing.assert_allclose(logits(changed, jnp.asarray(links))[i], before[i], rtol=1e-5)
    # what it hears moves it; without the mask (everyone linked) the far vessels would too
    assert not np.allclose(logits(obs.at[near].add(noise[near]), jnp.asarray(links))[i], before[i])
    everyone = jnp.ones_like(jnp.asarray(links))
    assert not np.allclose(logits(changed, everyone)[i], logits(obs, everyone)[i])


def test_ablations_silence_or_shuffle_the_messages():
    net = MessagePassing(hidden=8, message_dim=4)
    x, adj = _inputs(8)
    params = net.init(jax.random.key(9), x, adj)
    silent = MessagePassing(hidden=8, message_dim=4, ablation="zero")
    alone = jnp.zeros_like(adj)
    np.testing.assert_allclose(silent.apply(params, x, adj), net.apply(params, x, alone))
    shuffled = MessagePassing(hidden=8, message_dim=4, ablation="shuffle").apply(params, x, adj)
    assert not np.allclose(shuffled, net.apply(params, x, adj))
    with pytest.raises(ValueError, match="unknown ablation"):
        MessagePassing(ablation="mute").apply(params, x, adj)


@pytest.mark.integration
def test_ppo_trains_and_acts_with_the_graph_torso():
    import marl
    from marl.algorithms import happo
    from marl.algorithms.ppo import make_train
    from marl.learning.evaluation import evaluate

    env = marl.make("particle/spread")
    cfg = {"torso": "graph", "num_envs": 2, "rollout_length": 8, "graph_signal": True}
    train = make_train(env, cfg, total_updates=1)
    state, metrics = jax.jit(train.step)(train.init(jax.random.key(0)))
    assert "graph" in state.actor_params["params"] and train.policy.neighbourhood
    assert all(np.isfinite(float(v)) for v in metrics.values())
    out = evaluate(env, train.policy, train.params(state), jax.random.key(1), 2)
    assert np.isfinite(np.asarray(out["return"])).all()
    with pytest.raises(ValueError, match="parameter_sharing=all"):
        make_train(env, {**cfg, "parameter_sharing": "none"})
    with pytest.raises(ValueError, match="happo needs torso='mlp'"):
        happo.make_train(env, {"torso": "graph"})


def test_the_torso_is_a_command_line_option():
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose(["env=cleanup/comm", "algo=mappo", "algo.torso=graph",
                           "algo.graph_signal=true", "algo.graph_aggregate=max"]))  # fmt: skip
    assert run.train.policy.neighbourhood
    assert (run.train.config.torso, run.train.config.graph_aggregate) == ("graph", "max")
