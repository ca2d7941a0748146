"""AgentParams: each shared set folds its agents into the batch; it must equal a vmap over
agents, values and gradients, however the agents are spread over the sets."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marl.learning.networks import Actor, AgentParams, Critic


@pytest.mark.parametrize(
    "mode, groups",
    [
        ("all", [0, 0, 1, 1]),
        ("group", [0, 0, 1, 1]),
        ("group", [1, 0, 1, 0]),  # interleaved: gathered into sets, put back in agent order
        ("group", [2, 0, 1, 0]),
        ("none", [0, 0, 1, 1]),
    ],
)
def test_apply_equals_a_vmap_over_agents(mode, groups):
    t, b, n, d, h = 5, 3, 4, 6, 8
    groups = np.array(groups)
    sets = AgentParams.sharing(mode, groups)
    actor = Actor(5, True, (16, 16), "relu", recurrent=True, gru_hidden=h)
    critic = Critic((16, 16), "relu", recurrent=True, gru_hidden=h)
    k = jax.random.split(jax.random.key(0), 6)
    x = jax.random.normal(k[0], (t, b, n, d))
    carry = jax.random.normal(k[1], (b, n, h))
    resets = jax.random.bernoulli(k[2], 0.3, (t, b, n))
    avail = jax.random.bernoulli(k[3], 0.8, (t, b, n, 5)).at[..., 0].set(True)

    def init(module, *args):
        return sets.init(lambda key: module.init(key, carry[:1, 0], *args), k[4])

    # jitted, like the applies below: an eager flax init dispatches (and compiles) op by op
    pa, pc = jax.jit(
        lambda: (
            init(actor, x[:1, :1, 0], resets[:1, :1, 0], avail[:1, :1, 0]),
            init(critic, x[:1, :1, 0], resets[:1, :1, 0]),
        )
    )()

    def folded(pc):
        return sets.apply(critic.apply, pc, carry, x, resets, in_axes=(1, 2, 2), out_axes=(1, 2))

    def vmapped(pc):
        mine = jax.tree.map(lambda q: q[sets.index], pc)  # agent i's own set
        return jax.vmap(critic.apply, in_axes=(0, 1, 2, 2), out_axes=(1, 2))(mine, carry, x, resets)

    def got(pa, pc):
        a = sets.apply(
            actor.apply, pa, carry, x, resets, avail, in_axes=(1, 2, 2, 2), out_axes=(1, 2)
        )
        return a, folded(pc)

    def want(pa, pc):
        mine = jax.tree.map(lambda q: q[sets.index], pa)
        a = jax.vmap(actor.apply, in_axes=(0, 1, 2, 2, 2), out_axes=(1, 2))(
            mine, carry, x, resets, avail
        )
        return a, vmapped(pc)

    # jitted: eager flax scans dispatch op by op, many times slower
    (got_a, got_c), (want_a, want_c) = jax.jit(lambda *p: (got(*p), want(*p)))(pa, pc)
    for g_, w_ in ((got_a, want_a), (got_c, want_c)):
        jax.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5), g_, w_)
    assert got_a[1].logits.shape == (t, b, n, 5) and got_c[1].shape == (t, b, n)

    def loss(p, apply):  # each agent's output weighted apart, so a misplaced agent shows
        w = jnp.arange(1.0, n + 1.0)
        return jnp.sum(w * apply(p)[1] ** 2)

    got_g, want_g = jax.jit(lambda p: (jax.grad(loss)(p, folded), jax.grad(loss)(p, vmapped)))(pc)
    jax.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5), got_g, want_g)


def test_fold_needs_a_batch_axis_before_the_agents():
    sets = AgentParams.sharing("all", np.zeros(3, int))
    with pytest.raises(ValueError, match="no batch axis"):
        sets.apply(
            lambda p, x: x, {"w": jnp.zeros((1,))}, jnp.zeros((3, 2)), in_axes=(0,), out_axes=0
        )


def test_reset_gru_is_flax_gru_cell_with_resets():
    """Same parameter tree and initial values as `nn.GRUCell`, same outputs, hidden state
    zeroed where a step resets."""
    import flax.linen as nn

    from marl.learning.networks import ResetGRU

    t, b, d, h = 7, 3, 5, 8
    k = jax.random.split(jax.random.key(1), 4)
    x = jax.random.normal(k[0], (t, b, d))
    resets = jax.random.bernoulli(k[1], 0.3, (t, b))
    carry = jax.random.normal(k[2], (b, h))
    gru = ResetGRU(h)
    params = gru.init(k[3], carry, (x, resets))
    cell = nn.GRUCell(h, kernel_init=nn.initializers.orthogonal(1.0))
    cell_params = {"params": params["params"]["GRUCell_0"]}
    ref_init = cell.init(jax.random.key(0), carry, x[0])
    assert jax.tree.structure(ref_init) == jax.tree.structure(cell_params)
    got_carry, got = gru.apply(params, carry, (x, resets))
    hid, want = carry, []
    for i in range(t):
        hid = jnp.where(resets[i][:, None], 0.0, hid)
        hid, y = cell.apply(cell_params, hid, x[i])
        want.append(y)
    np.testing.assert_allclose(got, jnp.stack(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_carry, hid, rtol=1e-5, atol=1e-5)


def test_harl_action_std_is_bounded_and_starts_where_harls_does():
    """`std="harl"`: HARL's DiagGaussian, std = sigmoid(p) * 0.5 from p = 1 (0.3655), never
    above 0.5 however far p goes; "exp" (the default) starts at exp(-0.5)."""
    h, x = jnp.zeros((1, 1)), jnp.zeros((1, 1, 3))
    args = (h, x, jnp.zeros((1, 1), bool), jnp.ones((1, 1, 2), bool))
    harl = Actor(2, False, (8,), "tanh", std="harl")
    params = harl.init(jax.random.key(0), *args)
    _, dist = harl.apply(params, *args)
    np.testing.assert_allclose(np.exp(dist.log_std), 0.5 / (1 + np.exp(-1.0)), rtol=1e-6)
    far = jax.tree.map(lambda p: p, params)
    far["params"]["log_std"] = jnp.full((2,), 50.0)
    _, dist = harl.apply(far, *args)
    assert np.all(np.exp(dist.log_std) <= 0.5)
    np.testing.assert_allclose(np.exp(dist.log_std), 0.5, rtol=1e-6)
    plain = Actor(2, False, (8,), "tanh")
    _, dist = plain.apply(plain.init(jax.random.key(0), *args), *args)
    np.testing.assert_allclose(np.exp(dist.log_std), np.exp(-0.5), rtol=1e-6)
