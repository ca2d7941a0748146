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
