"""Replay buffer, exploration, double-Q / TD(lambda) targets and mixers for value-based MARL."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shapes import SHAPES, size

from marl.algorithms import mixers, qlearning, replay

T, N, D, S, A = 3, 2, 4, 5, 3


def make_episode(i: int) -> replay.Episode:
    """An episode whose every field is determined by its id `i`; ends after `1 + i % T` steps."""
    length = 1 + i % T
    f = float(i)
    filled = jnp.arange(T) < length
    return replay.Episode(
        obs=jnp.full((T + 1, N, D), f) + jnp.arange(D),
        state=jnp.full((T + 1, S), -f),
        avail=(jnp.arange(A) <= i % A)[None, None].repeat(T + 1, 0).repeat(N, 1),
        actions=jnp.full((T, N), i % A, jnp.int32),
        rewards=jnp.full((T,), f) * filled,
        terminated=jnp.arange(T) == length - 1,
        filled=filled,
    )


def stack(ids):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *[make_episode(i) for i in ids])


def episode_id(ep) -> int:
    return int(ep.obs[0, 0, 0])


def assert_same(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def sampled_ids(buffer, key, batch=64):
    eps = jax.jit(replay.sample, static_argnums=2)(buffer, key, batch)
    ids = []
    for b in range(batch):
        ep = jax.tree.map(lambda x, b=b: x[b], eps)
        i = episode_id(ep)
        assert_same(ep, make_episode(i))  # whole episode, exactly as added
        ids.append(i)
    return set(ids)


def test_buffer_stores_wraps_and_samples_whole_added_episodes():
    buf = replay.init(make_episode(0), capacity=4)
    assert buf.data.obs.shape == (4, T + 1, N, D) and int(buf.size) == 0
    add = jax.jit(replay.add)
    buf = add(buf, stack([1, 2, 3]))
    assert int(buf.size) == 3 and int(buf.pos) == 3
    for slot, i in enumerate([1, 2, 3]):
        assert_same(jax.tree.map(lambda x, s=slot: x[s], buf.data), make_episode(i))
    assert sampled_ids(buf, jax.random.key(0)) == {1, 2, 3}  # never the empty slot

    buf = add(buf, stack([4, 5, 6]))  # wraps: slots hold 5, 6, 3, 4
    assert int(buf.size) == 4 and int(buf.pos) == 2
    assert [episode_id(jax.tree.map(lambda x, s=s: x[s], buf.data)) for s in range(4)] == [
        5,
        6,
        3,
        4,
    ]
    assert sampled_ids(buf, jax.random.key(1)) == {3, 4, 5, 6}
    with pytest.raises(ValueError):
        replay.add(buf, stack(range(5)))


@pytest.mark.parametrize("vary", SHAPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    seed=st.integers(0, 2**31 - 1),
    epsilon=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_epsilon_greedy_only_available_and_greedy_at_zero(vary, data, seed, epsilon):
    n = size(data, vary, st.integers(1, 4), 3)
    a = size(data, vary, st.integers(1, 6), 5)
    rng = np.random.default_rng(seed)
    avail = rng.random((n, a)) < 0.5
    avail[np.arange(n), rng.integers(0, a, n)] = True  # at least one available per agent
    q = rng.normal(size=(n, a)).astype(np.float32)
    q[~avail] += 100.0  # unavailable actions look best
    for k in range(8):
        acts = np.asarray(qlearning.epsilon_greedy(jax.random.key(seed + k), q, avail, epsilon))
        assert acts.shape == (n,) and acts.dtype == np.int32
        assert avail[np.arange(n), acts].all()
        if epsilon == 0.0:
            np.testing.assert_array_equal(acts, np.where(avail, q, -np.inf).argmax(-1))


def test_epsilon_one_covers_all_available_actions():
    avail = jnp.array([[True, False, True, True]])
    keys = jax.random.split(jax.random.key(3), 400)
    acts = jax.vmap(lambda k: qlearning.epsilon_greedy(k, jnp.zeros((1, 4)), avail, 1.0))(keys)
    assert set(np.asarray(acts).ravel().tolist()) == {0, 2, 3}


def test_linear_schedule():
    from marl.learning.schedule import linear

    f = linear(1.0, 0.05, 100)
    np.testing.assert_allclose([f(0), f(50), f(100), f(1000)], [1.0, 0.525, 0.05, 0.05], rtol=1e-6)


# Two padded 3-step episodes, one agent, 3 actions, gamma 0.9.
# ep 0: terminated at t=1, t=2 is padding.  ep 1: truncated after t=2 (bootstraps).
GAMMA = 0.9
REWARDS = jnp.array([[1.0, 2.0, 5.0], [0.0, 1.0, 1.0]])
TERMINATED = jnp.array([[False, True, False], [False, False, False]])
MASK = jnp.array([[True, True, False], [True, True, True]])
Q_ONLINE = jnp.array(
    [
        [[1.0, 3.0, 2.0], [9.0, 9.0, 9.0], [np.nan, np.nan, np.nan]],
        [[5.0, 1.0, 1.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]],
    ]
)[:, :, None]  # [E, T, N=1, A]
Q_TARGET = jnp.array(
    [
        [[10.0, 20.0, 30.0], [50.0, 50.0, 50.0], [np.nan, np.nan, np.nan]],
        [[7.0, 8.0, 9.0], [2.0, 3.0, 100.0], [4.0, 5.0, 6.0]],
    ]
)[:, :, None]
AVAIL = jnp.array(
    [
        [[1, 0, 1], [1, 1, 1], [1, 1, 1]],
        [[1, 1, 1], [1, 1, 0], [1, 1, 1]],
    ],
    bool,
)[:, :, None]
# ep 0: t0 argmax over available {0, 2} of [1, _, 2] -> a2 -> 30: 1 + 0.9 * 30; t1 terminated.
# ep 1: t0 a0 -> 7; t1 available {0, 1} of [0, 0] -> a0 -> 2; t2 a2 -> 6 (truncated: bootstrap).
EXPECTED = np.array([[28.0, 2.0, 0.0], [6.3, 2.8, 6.4]])


def per_episode_targets(lam=0.0, mix=None):
    fn = lambda r, te, m, qo, qt, av: qlearning.double_q_targets(  # noqa: E731
        r, te, m, qo, qt, av, GAMMA, mix=mix, lam=lam
    )
    return jax.jit(jax.vmap(fn))(REWARDS, TERMINATED, MASK, Q_ONLINE, Q_TARGET, AVAIL)


def test_double_q_targets_hand_computed():
    y = per_episode_targets()  # per agent: [E, T, N=1]
    np.testing.assert_allclose(np.asarray(y[..., 0]), EXPECTED, rtol=1e-6)
    y_mixed = per_episode_targets(mix=lambda q: q.sum(-1))  # VDN-style [E, T]
    np.testing.assert_allclose(np.asarray(y_mixed), EXPECTED, rtol=1e-6)
    # the padded step is excluded from the loss, whatever its prediction
    q_taken = jnp.asarray(EXPECTED).at[0, 2].set(1e6).at[1, 0].add(1.0)
    loss = qlearning.masked_td_loss(q_taken, y_mixed, MASK)
    np.testing.assert_allclose(float(loss), 1.0 / 5.0, rtol=1e-6)


def test_td_lambda_hand_computed():
    y = np.asarray(per_episode_targets(lam=0.5)[..., 0])
    g2 = 6.4
    g1 = 1.0 + GAMMA * (0.5 * 2.0 + 0.5 * g2)
    g0 = GAMMA * (0.5 * 7.0 + 0.5 * g1)
    np.testing.assert_allclose(y[1], [g0, g1, g2], rtol=1e-6)
    g0_ep0 = 1.0 + GAMMA * (0.5 * 30.0 + 0.5 * 2.0)  # terminated t1 is a pure reward
    np.testing.assert_allclose(y[0], [g0_ep0, 2.0, 0.0], rtol=1e-6)


@pytest.mark.parametrize("vary", SHAPES)
@settings(max_examples=20, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_td_lambda_zero_equals_one_step(vary, data, seed):
    t = size(data, vary, st.integers(1, 8), 6)
    rng = np.random.default_rng(seed)
    r, v = rng.normal(size=(2, t, N)).astype(np.float32)
    length = int(rng.integers(1, t + 1))
    mask = np.arange(t) < length
    term = (np.arange(t) == length - 1) & (rng.random() < 0.5)
    one_step = np.where(mask[:, None], r + GAMMA * (1 - term[:, None]) * v, 0.0)
    y = qlearning.td_lambda_targets(r, term, mask, v, GAMMA, 0.0)
    np.testing.assert_allclose(np.asarray(y), one_step, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("state_norm", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_qmixer_monotonic_and_vdn_sum(seed, state_norm):
    k_init, k_q, k_s, k_p = jax.random.split(jax.random.key(seed), 4)
    n, s = 5, 7
    qs = 3.0 * jax.random.normal(k_q, (4, 6, n))
    state = 5.0 * jax.random.normal(k_s, (4, 6, s))
    mixer = mixers.QMixer(state_norm=state_norm)
    params = mixer.init(k_init, qs, state)
    leaves, tree = jax.tree.flatten(params)
    noise = jax.random.split(k_p, len(leaves))
    params = jax.tree.unflatten(
        tree, [x + jax.random.normal(k, x.shape) for x, k in zip(leaves, noise, strict=True)]
    )
    q_tot = mixer.apply(params, qs, state)
    assert q_tot.shape == (4, 6)
    assert params["params"]["hyper_w1_1"]["kernel"].shape == (64, n * 32)
    grads = jax.grad(lambda q: mixer.apply(params, q, state).sum())(qs)
    assert bool(jnp.all(grads >= 0.0)) and bool(jnp.any(grads > 0.0))

    vdn = mixers.VDNMixer()
    np.testing.assert_allclose(vdn.apply({}, qs, state), qs.sum(-1), rtol=1e-6)


def test_soft_update():
    target = {"w": jnp.zeros(3)}
    online = {"w": jnp.ones(3)}
    np.testing.assert_allclose(qlearning.soft_update(target, online, 0.25)["w"], 0.25)


@pytest.mark.parametrize(
    ("tau", "interval", "updates", "expected"),
    [
        (None, 3, 1, 0.0),  # hard copies on update numbers 3, 6, ...: not after the 1st
        (None, 3, 2, 0.0),
        (None, 3, 3, 1.0),
        (None, 3, 4, 0.0),
        (None, 3, 6, 1.0),
        (None, 1, 1, 1.0),  # every update
        (0.25, 3, 1, 0.25),  # Polyak: 0.25 * online + 0.75 * target, whatever the interval
        (0.25, 3, 3, 0.25),
    ],
)
def test_update_target_hard_every_interval_or_polyak(tau, interval, updates, expected):
    """Target 0, online 1: `update_target` after update number `updates` (counted from 1)."""
    target = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    online = {"w": jnp.ones(3), "b": jnp.ones(())}
    new = qlearning.update_target(target, online, jnp.asarray(updates), tau, interval)
    for leaf in jax.tree.leaves(new):
        np.testing.assert_allclose(np.asarray(leaf), expected)


def test_rmsprop_steps_as_pymarls_torch_rmsprop():
    """pymarl's RMSprop (torch: alpha 0.99, eps 1e-5 added to the root, square average from 0),
    by hand over three steps; small gradients are where eps inside the root would differ."""
    from marl.algorithms.qlearner import QConfig, make_optimizer

    cfg = QConfig(optimizer="rmsprop", lr=5e-4)
    tx = make_optimizer(cfg)
    params = {"w": jnp.zeros(2)}
    opt_state, v = tx.init(params), np.zeros(2)
    for g in ([1e-3, -2e-4], [5e-4, 1e-4], [-1e-3, 3e-4]):
        g = np.asarray(g)
        updates, opt_state = tx.update({"w": jnp.asarray(g, jnp.float32)}, opt_state, params)
        v = 0.99 * v + 0.01 * g**2
        np.testing.assert_allclose(updates["w"], -5e-4 * g / (np.sqrt(v) + 1e-5), rtol=1e-4)


def test_annealed_learning_rate_follows_the_runs_updates():
    """The rate's share falls linearly over the run's gradient steps (a replay learner counts
    its warm-up updates, so it is 0 at the end), and without the run's length it stays whole."""
    from marl.learning.schedule import linear_decay, scaled

    train_steps, total = 2, 4 * 2  # 4 updates of 2 gradient steps
    shares = [
        float(linear_decay(jnp.asarray(u * train_steps + i), total))
        for u in range(5)
        for i in (0, 1)
    ]
    assert shares == pytest.approx([1, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8, 0, 0])
    updates = {"w": jnp.ones(3)}
    assert scaled(updates, jnp.asarray(6), total)["w"].tolist() == [0.25] * 3
    assert scaled(updates, jnp.asarray(6), None) is updates


def test_annealed_rate_is_optax_linear_schedule_bit_for_bit():
    """The PPO family's rate is the one rule too, and equals the optax schedule it replaced."""
    import optax

    from marl.learning.schedule import learning_rate

    ours, theirs = learning_rate(2e-3, True, 997), optax.linear_schedule(2e-3, 0.0, 997)
    counts = jnp.arange(0, 1100, dtype=jnp.int32)
    assert np.array_equal(np.asarray(jax.vmap(ours)(counts)), np.asarray(jax.vmap(theirs)(counts)))
    assert learning_rate(2e-3, False, 997) == 2e-3 and learning_rate(2e-3, True, None) == 2e-3


def test_annealed_learner_stops_moving_at_the_runs_end():
    """End to end: with anneal_lr over `total_updates` updates, the parameters move while the
    run lasts (after the buffer's warm-up) and not once its updates are spent."""
    import marl

    env = marl.make("particle/simple")
    cfg = {
        "num_envs": 2,
        "rollout_length": 25,
        "buffer_size": 16,
        "batch_size": 4,
        "hidden": (8,),
        "gru_hidden": 8,
        "anneal_lr": True,
        "unroll_buckets": 1,  # one unroll length: the rate, not the buckets, is under test
    }
    train = marl.algorithm("iql")(env, cfg, total_updates=6)
    state, step = jax.jit(train.init)(jax.random.PRNGKey(0)), jax.jit(train.step)
    moved = []
    for _ in range(8):
        before = train.params(state)
        state, metrics = step(state)
        delta = jax.tree.map(
            lambda a, b: float(jnp.max(jnp.abs(a - b))), before, train.params(state)
        )
        moved.append((float(metrics["learning"]), max(jax.tree.leaves(delta))))
    assert [m[0] for m in moved] == [0, 1, 1, 1, 1, 1, 1, 1]  # 4 episodes after update 2
    assert all(d > 0 for _, d in moved[1:6])
    assert moved[6][1] == moved[7][1] == 0.0  # updates 7 and 8: the run's 6 are spent


def test_td_lambda_truncated_episode_before_padding_bootstraps_from_v_alone():
    """Lambda 0.5, gamma 0.9, a 2-step truncated episode padded to 3 steps, rewards 1, next
    values 2, 4 (99 on the padding): the last real step is one-step, 1 + 0.9 * 4 = 4.6 (no
    lambda share of the padding's zero); g0 = 1 + 0.9 * (0.5 * 2 + 0.5 * 4.6) = 3.97."""
    y = qlearning.td_lambda_targets(
        jnp.array([1.0, 1.0, 7.0]),
        jnp.zeros(3, bool),
        jnp.array([True, True, False]),
        jnp.array([2.0, 4.0, 99.0]),
        GAMMA,
        0.5,
    )
    np.testing.assert_allclose(np.asarray(y), [3.97, 4.6, 0.0], rtol=1e-6)


def test_mixer_init_scale_makes_every_mixer_layer_orthogonal_with_that_gain():
    """JaxMARL's MIXER_INIT_SCALE: each kernel's singular values equal the gain."""
    from marl.algorithms.mixers import QMixer

    qs, state = jnp.ones((4, 3)), jnp.ones((4, 10))
    params = QMixer(8, 16, 2, init_scale=0.001).init(jax.random.key(0), qs, state)["params"]
    kernels = {name: p["kernel"] for name, p in params.items()}
    assert sorted(kernels) == [
        "hyper_b1", "hyper_w1_0", "hyper_w1_1", "hyper_w2_0", "hyper_w2_1", "v_0", "v_1",
    ]  # fmt: skip
    for k in kernels.values():
        np.testing.assert_allclose(np.linalg.svd(np.asarray(k), compute_uv=False), 0.001, rtol=1e-4)
    default = QMixer(8, 16, 2).init(jax.random.key(0), qs, state)["params"]
    assert np.abs(default["hyper_w1_0"]["kernel"]).max() > 0.01  # flax's default: not scaled


def test_torch_mixer_init_is_pymarls_uniform_with_biases():
    """mixer_init=torch: every kernel and bias uniform in +-1/sqrt(fan_in) (torch.nn.Linear's
    default, pymarl's QMixer), the same parameter names as flax's init, and a smaller start."""
    from marl.algorithms.mixers import QMixer

    qs, state = jnp.ones((4, 3)), jnp.full((4, 100), 0.5)
    torch = QMixer(32, 64, 2, init_kind="torch").init(jax.random.key(0), qs, state)["params"]
    flax = QMixer(32, 64, 2).init(jax.random.key(0), qs, state)["params"]
    assert jax.tree.structure(torch) == jax.tree.structure(flax)
    for name, layer in torch.items():
        bound = 1 / np.sqrt(layer["kernel"].shape[0])
        for leaf in (layer["kernel"], layer["bias"]):
            assert np.abs(leaf).max() <= bound
            assert np.abs(leaf).max() > 0.9 * bound, name  # uniform over the whole range
        assert np.any(layer["bias"] != 0)

    def gain(params):  # sum over agents of dQ_tot / dQ_i at the start
        return float(jnp.sum(jax.grad(lambda q: QMixer(32, 64, 2).apply(
            {"params": params}, q, state[0]))(jnp.full((3,), 5.0))))  # fmt: skip

    assert gain(torch) < 0.5 * gain(flax)
    with pytest.raises(ValueError, match="mixer_init must be flax or torch"):
        QMixer(init_kind="xavier").init(jax.random.key(0), qs, state)


def test_radam_is_an_optimizer_choice():
    import optax

    import marl
    from marl.algorithms import qmix
    from marl.algorithms.qlearner import QConfig, make_optimizer

    params = {"w": jnp.arange(3.0)}
    grads = {"w": jnp.array([0.3, -1.0, 2.0])}
    got = make_optimizer(QConfig(optimizer="radam", lr=0.1, max_grad_norm=10.0))
    want = optax.radam(0.1)
    adam = optax.adam(0.1)
    g_state, w_state, a_state = got.init(params), want.init(params), adam.init(params)
    for _ in range(3):
        g, g_state = got.update(grads, g_state, params)
        w, w_state = want.update(grads, w_state, params)
        a, a_state = adam.update(grads, a_state, params)
    np.testing.assert_allclose(g["w"], w["w"], rtol=1e-6)
    assert not np.allclose(g["w"], a["w"])  # RAdam's first steps are not Adam's
    env = marl.make("particle/spread")
    with pytest.raises(ValueError, match="adam, rmsprop or radam"):
        qmix.make_train(env, {"optimizer": "sgd"})
    with pytest.raises(ValueError, match="mixer_init_scale must be null or a positive number"):
        qmix.make_train(env, {"mixer_init_scale": -1})
    with pytest.raises(ValueError, match="mixer_init must be flax or torch"):
        qmix.make_train(env, {"mixer_init": "xavier"})
