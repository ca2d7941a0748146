"""The shared value-based learner (IQL, VDN, QMIX): episodes as stored, targets, the update."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.algorithms import packing, qlearner, replay
from marl.algorithms.mixers import QMixer, VDNMixer
from marl.core.learner import SEED_AXIS, seed_max
from marl.learning.runner import run
from marl.learning.training import RunSettings

TINY = {
    "num_envs": 4,
    "rollout_length": 16,
    "buffer_size": 64,
    "batch_size": 8,
    "hidden": (16,),
    "gru_hidden": 16,
    "epsilon_steps": 2_000,
    # two unroll lengths keep the seed-agreed branch (lax.switch) at a quarter of the default's
    # compile time; the buckets themselves are tested with their own counts below
    "unroll_buckets": 2,
}


def collected(env_id: str, updates: int = 3, **cfg):
    """A learner's state after `updates` updates with learning off (pure collection)."""
    env = marl.make(env_id)
    train = marl.algorithm("iql")(env, {**TINY, "train_steps": 0, **cfg})
    state = jax.jit(train.init)(jax.random.PRNGKey(0))
    step = jax.jit(train.step)
    for _ in range(updates):
        state, _ = step(state)
    return env, state


def stored(state) -> list:
    n = int(state.buffer.size)
    return [jax.tree.map(lambda x, i=i: np.asarray(x[i]), state.buffer.data) for i in range(n)]


def test_add_masked_writes_the_valid_episodes_in_order_and_wraps():
    buf = replay.init({"x": jnp.zeros(2)}, capacity=4)
    eps = {"x": jnp.arange(8.0).reshape(4, 2)}
    buf = replay.add_masked(buf, eps, jnp.array([False, True, False, True]))
    assert int(buf.size) == 2 and int(buf.pos) == 2
    np.testing.assert_array_equal(buf.data["x"][:2], [[2, 3], [6, 7]])
    buf = replay.add_masked(buf, eps, jnp.array([True, True, True, False]))
    assert int(buf.size) == 4 and int(buf.pos) == 1  # the oldest slot was overwritten
    np.testing.assert_array_equal(buf.data["x"], [[4, 5], [6, 7], [0, 1], [2, 3]])
    buf = replay.add_masked(buf, eps, jnp.zeros(4, bool))
    assert int(buf.size) == 4 and int(buf.pos) == 1


def test_truncated_episodes_are_stored_whole_with_their_final_observation():
    """particle/spread never terminates: every stored episode is exactly the 25-step limit.

    Two updates of 25 steps end every env's episode on an update's last step: the acting
    state is then reset (last action -1, step 0), and the env steps are counted for all envs.
    """
    env, state = collected("particle/spread", updates=2, rollout_length=25)
    episodes = stored(state)
    assert len(episodes) == 8  # the four envs have each finished two 25-step episodes
    limit = env.spec.episode_limit
    assert limit == 25
    for ep in episodes:
        assert ep.filled.all()
        assert not ep.terminated.any()
        assert ep.obs.shape[0] == limit + 1
        # rows are successive observations: the final row is a real observation, not padding
        assert np.abs(ep.obs[limit]).sum() > 0
        assert ep.avail[limit].any(axis=-1).all()
        # ... and the true last one, not the next episode's first: MPE resets velocities
        # (obs[:, :2] in spread) to exactly 0, after 25 random steps they are not
        assert np.abs(ep.obs[limit, :, :2]).sum() > 0
    # the episodes being built restart from row 0 after committing, with no last action
    np.testing.assert_array_equal(np.asarray(state.t), 0)
    np.testing.assert_array_equal(np.asarray(state.last_action), -1)
    assert int(state.env_steps) == 2 * 4 * 25  # updates x num_envs x rollout_length


def test_terminated_episodes_end_at_their_last_real_step():
    """combat/3m with random play: battles end early; padding after the end is masked."""
    env, state = collected("combat/3m", updates=6)
    episodes = stored(state)
    assert episodes, "some battles must have finished"
    actions = env.spec.action_dim
    for ep in episodes:
        length = int(ep.filled.sum())
        assert ep.filled[:length].all() and not ep.filled[length:].any()  # a prefix
        # only the last real step can terminate (a battle won or lost)
        assert not ep.terminated[: length - 1].any() and not ep.terminated[length:].any()
        # every stored action was available when taken
        taken = ep.avail[np.arange(length)[:, None], np.arange(3)[None], ep.actions[:length]]
        assert taken.all() and (ep.actions[:length] < actions).all()
    assert any(ep.terminated.any() for ep in episodes)


def test_team_loss_matches_a_hand_computed_vdn_example():
    """One-step VDN targets with a terminated last step, padding masked, on hand values."""
    env = marl.make("particle/spread")
    cfg = qlearner.QConfig(**{**TINY, "td_lambda": 0.0, "double_q": True, "gamma": 0.5})
    nets = qlearner.QNetworks(env, cfg)
    spec = env.spec
    ep = jax.tree.map(lambda x: x[:1], qlearner.empty_episodes(spec, 1))
    q = jnp.zeros((1, spec.episode_limit + 1, spec.num_agents, spec.action_dim))
    # Q-values chosen by hand: agent i's value of action a at step t is t + 0.1 a + i
    t = jnp.arange(spec.episode_limit + 1)[:, None, None]
    q = q + t + 0.1 * jnp.arange(spec.action_dim) + jnp.arange(spec.num_agents)[:, None]
    ep = ep.replace(
        avail=jnp.ones_like(ep.avail).at[:, 2, :, -1].set(False),  # at t=2 the last is off
        actions=jnp.zeros_like(ep.actions).at[:, 0].set(1),
        rewards=jnp.ones_like(ep.rewards),
        terminated=jnp.zeros_like(ep.terminated).at[:, 1].set(True),
        filled=jnp.zeros_like(ep.filled).at[:, :2].set(True),
    )
    nets.episode_q = lambda params, episodes, resets=None: q  # the network's output, fixed by hand
    loss, m = qlearner.td_loss(nets, VDNMixer(), cfg, (None, {}), (None, {}), ep)
    n, a = spec.num_agents, spec.action_dim
    ids = sum(range(n))
    # step 0: chosen sum_i (0 + 0.1 + i); target 1 + 0.5 * sum_i (1 + 0.1 (a-1) + i)
    chosen0, target0 = n * 0.1 + ids, 1 + 0.5 * (n * (1 + 0.1 * (a - 1)) + ids)
    # step 1 terminated: chosen sum_i (1 + 0 + i); target 1
    chosen1, target1 = n * 1.0 + ids, 1.0
    expected = ((chosen0 - target0) ** 2 + (chosen1 - target1) ** 2) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(m["q/target"]) == pytest.approx((target0 + target1) / 2, rel=1e-5)


def hand_episode(spec, steps: int):
    """One blank episode of `spec` whose first `steps` steps are real, reward 1, truncated."""
    ep = jax.tree.map(lambda x: x[:1], qlearner.empty_episodes(spec, 1))
    return ep.replace(
        avail=jnp.ones_like(ep.avail),
        rewards=jnp.ones_like(ep.rewards),
        filled=jnp.zeros_like(ep.filled).at[:, :steps].set(True),
    )


@pytest.mark.parametrize(("double_q", "expected"), [(True, 1.0), (False, 6.0)])
def test_double_q_picks_the_next_action_by_the_online_network(double_q, expected):
    """Online Q = [1, 0, ..] and target Q = [0, 10, ..] in every state, r = 1, gamma 0.5, one
    truncated step: double Q takes the target's value of the online argmax, 1 + 0.5 * 0 = 1;
    plain max takes the target's own max, 1 + 0.5 * 10 = 6 (per agent, independent learner)."""
    env = marl.make("particle/spread")
    spec = env.spec
    cfg = qlearner.QConfig(**{**TINY, "td_lambda": 0.0, "double_q": double_q, "gamma": 0.5})
    nets = qlearner.QNetworks(env, cfg)
    shape = (1, spec.episode_limit + 1, spec.num_agents, spec.action_dim)
    q = {
        "online": jnp.zeros(shape).at[..., 0].set(1.0),
        "target": jnp.zeros(shape).at[..., 1].set(10.0),
    }
    nets.episode_q = lambda params, episodes, resets=None: q[params]  # fixed by hand
    ep = hand_episode(spec, 1)
    _, m = qlearner.td_loss(nets, None, cfg, ("online", {}), ("target", {}), ep)
    assert float(m["q/target"]) == pytest.approx(expected, rel=1e-6)


class StateMixer:
    """A stand-in mixer: `sum_i q_i + state[0]`."""

    def apply(self, params, agent_qs, state):
        return jnp.sum(agent_qs, axis=-1) + state[..., 0]


def test_target_mixer_sees_the_next_state():
    """States with state[t] = t and all Q zero, r = 1, gamma 0.5, two truncated steps: the
    target mixer gets s_{t+1}, so targets are 1 + 0.5 * 1 = 1.5 and 1 + 0.5 * 2 = 2 (mean
    1.75; the current state s_t would give 1 and 1.5), and the online mixer gets s_t."""
    env = marl.make("particle/spread")
    spec = env.spec
    cfg = qlearner.QConfig(**{**TINY, "td_lambda": 0.0, "gamma": 0.5})
    nets = qlearner.QNetworks(env, cfg)
    q = jnp.zeros((1, spec.episode_limit + 1, spec.num_agents, spec.action_dim))
    nets.episode_q = lambda params, episodes, resets=None: q
    ep = hand_episode(spec, 2)
    t = jnp.arange(spec.episode_limit + 1, dtype=jnp.float32)
    ep = ep.replace(state=jnp.broadcast_to(t[None, :, None], ep.state.shape))
    loss, m = qlearner.td_loss(nets, StateMixer(), cfg, (None, {}), (None, {}), ep)
    assert float(m["q/target"]) == pytest.approx(1.75, rel=1e-6)
    assert float(m["q/taken"]) == pytest.approx(0.5, rel=1e-6)  # chosen: s_0 = 0, s_1 = 1
    assert float(loss) == pytest.approx((1.5**2 + 1.0**2) / 2, rel=1e-6)


@pytest.mark.integration
@pytest.mark.slow
def test_iql_learns_the_single_agent_task():
    """particle/simple (one agent, one landmark): the greedy return rises well above the start.

    Feed-forward agent: with rewards of -dist^2 (returns near -100) a GRU agent needs far more
    updates to move its bounded hidden state into Q-values of that size.
    """
    env = marl.make("particle/simple")
    cfg = {
        **TINY,
        "num_envs": 8,
        "rollout_length": 5,
        "buffer_size": 500,
        "batch_size": 16,
        "epsilon_steps": 10_000,
        "target_update_interval": 20,
        "recurrent": False,
        "hidden": (32, 32),
    }
    settings = RunSettings(
        seeds=2, budget=40_000, eval_interval=20_000, eval_episodes=8, absolute_episodes=0
    )
    res = run(env, marl.algorithm("iql")(env, cfg), settings, log=None)
    curve = res.curve().mean(axis=1)
    # greedy at the start pushes one way (about -100); reaching the landmark: about -10
    assert curve[-1] > curve[0] + 30 and curve[-1] > -40, curve


def test_unroll_lengths_cover_the_limit():
    assert qlearner.unroll_lengths(60, 4) == (15, 30, 45, 60)
    assert qlearner.unroll_lengths(243, 8) == (31, 61, 92, 122, 152, 183, 213, 243)
    assert qlearner.unroll_lengths(25, 1) == (25,)
    assert qlearner.unroll_lengths(3, 4) == (1, 2, 3)


@pytest.mark.slow  # ~1 min: four learner updates compiled twice
def test_short_unrolls_give_the_same_update_as_the_full_limit():
    """Unrolling only to the longest sampled episode (one bucket for all seeds) changes nothing.

    combat/3m with a 200-step limit: random battles last 17-51 steps, so the learner takes the
    50- or 100-step branch; the parameters match those of always unrolling 200 steps, and of
    packing the sampled episodes 4 to a row.
    """
    env = marl.make("combat/3m", episode_limit=200)
    keys = jax.random.split(jax.random.PRNGKey(1), 2)

    def after(buckets: int, pack: int = 1, updates: int = 4):
        cfg = {**TINY, "rollout_length": 48, "unroll_buckets": buckets, "pack_episodes": pack}
        train = marl.algorithm("vdn")(env, cfg)
        state = jax.jit(lambda k: jax.lax.map(train.init, k))(keys)
        step = jax.jit(jax.vmap(train.step, axis_name=SEED_AXIS))
        unrolled = []
        for _ in range(updates):
            state, m = step(state)
            unrolled.append(np.asarray(m["unroll_steps"]))
        return state.params, np.concatenate(unrolled)

    short, unrolled = after(4)
    full, unrolled_full = after(1)
    assert (unrolled_full == 200).all()
    assert (unrolled < 200).any(), unrolled  # a shorter branch ran ...
    assert (unrolled == unrolled[:, None][:, 0]).all()  # ... the same one for both seeds
    for x, y in zip(jax.tree.leaves(short), jax.tree.leaves(full), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
    packed, unrolled_packed = after(8, pack=4)  # 2 rows of 4 episodes, 803 steps at most
    assert (unrolled_packed < 4 * 201 - 1).any(), unrolled_packed
    for x, y in zip(jax.tree.leaves(packed), jax.tree.leaves(full), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


def test_packed_rows_give_the_same_loss_and_gradient():
    """Several episodes laid end to end in one row: the same TD terms, so the same update
    (the independent learner with 2 episodes a row, the mixed one with 4)."""
    env, state = collected("combat/3m", updates=4)
    spec = env.spec
    cfg = qlearner.QConfig(**TINY)
    nets = qlearner.QNetworks(env, cfg)
    k_net, k_mix, k_sample = jax.random.split(jax.random.PRNGKey(3), 3)
    batch = replay.sample(state.buffer, k_sample, 8)
    lengths = np.asarray(batch.filled.sum(axis=1))
    assert len(set(lengths.tolist())) > 1  # episodes of different lengths
    qmix = QMixer(embed_dim=8, hypernet_embed=16)
    cases = [
        (None, {}, 2),
        (qmix, qmix.init(k_mix, jnp.zeros((1, 3)), jnp.zeros((1, spec.state_dim))), 4),
    ]
    for mixer, mixer_params, k in cases:
        online = (nets.init(k_net), mixer_params)
        target = jax.tree.map(lambda x: 0.9 * x, online)

        @jax.jit
        def loss_and_grad(p, b, resets=None, mixer=mixer, target=target):
            def loss(p):
                return qlearner.td_loss(nets, mixer, cfg, p, target, b, resets)

            return jax.value_and_grad(loss, has_aux=True)(p)

        (ref, m_ref), g_ref = loss_and_grad(online, batch)
        packed, resets = packing.pack(batch, k)
        assert packed.obs.shape[:2] == (8 // k, k * (spec.episode_limit + 1))
        assert int(packed.filled.sum()) == int(lengths.sum())  # every real step, once
        assert int(resets[:, :-1][packed.filled].sum()) == 8  # one start per episode
        (val, m), g = loss_and_grad(online, packed, resets)
        assert float(val) == pytest.approx(float(ref), rel=1e-5)
        assert float(m["q/target"]) == pytest.approx(float(m_ref["q/target"]), rel=1e-5)
        for x, y in zip(jax.tree.leaves(g), jax.tree.leaves(g_ref), strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)
        # without the resets (row starts only; the program compiled above): not the same
        (unreset, _), _ = loss_and_grad(online, packed, jnp.zeros_like(resets).at[:, 0].set(True))
        assert float(unreset) != pytest.approx(float(ref), rel=1e-3)


def test_packing_needs_a_divisor_of_the_batch():
    with pytest.raises(ValueError, match="pack_episodes"):
        qlearner.QConfig(**{**TINY, "pack_episodes": 3})


def test_seed_max_agrees_across_named_seeds_only():
    x = jnp.array([1.0, 5.0, 3.0])
    np.testing.assert_array_equal(jax.vmap(seed_max, axis_name=SEED_AXIS)(x), [5.0, 5.0, 5.0])
    np.testing.assert_array_equal(jax.vmap(seed_max)(x), x)  # no seed axis: per seed


# VDN's sum mixer adds nothing QMIX's run does not exercise: it runs with -m slow
@pytest.mark.integration
@pytest.mark.parametrize("algo", [pytest.param("vdn", marks=pytest.mark.slow), "qmix"])
def test_mixed_learners_run_deterministically(algo):
    env = marl.make("particle/spread")

    def once():
        train = marl.algorithm(algo)(env, TINY)
        return run(
            env,
            train,
            RunSettings(
                seeds=2, budget=512, eval_interval=256, eval_episodes=2, absolute_episodes=0
            ),
            log=None,
        )

    a, b = once(), once()
    assert np.all(np.isfinite(a.curve()))
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        assert np.array_equal(x, y)


def test_mixers_refuse_several_teams_and_continuous_actions():
    with pytest.raises(ValueError, match="qmix mixes the values of one cooperative team"):
        marl.algorithm("qmix")(marl.make("particle/tag"), TINY)
    # heterogeneous groups on one cooperative task are fine
    assert marl.make("particle/speaker_listener").spec.cooperative
    marl.algorithm("vdn")(marl.make("particle/speaker_listener"), TINY)
    with pytest.raises(ValueError, match="need discrete actions"):
        marl.algorithm("iql")(marl.make("particle/spread", continuous_actions=True), TINY)
    with pytest.raises(ValueError, match="unknown QConfig key.*batch_size"):
        marl.algorithm("vdn")(marl.make("particle/spread"), {"batchsize": 3})


@pytest.mark.parametrize(
    ("env_id", "setting", "normed"),
    [
        ("combat/3m", None, False),  # bounded state: pymarl's mixer as it is
        ("particle/spread", None, True),  # raw positions: the layer norm
        ("combat/3m", True, True),
        ("particle/spread", False, False),
    ],
)
def test_qmix_state_norm_follows_the_env_unless_forced(env_id, setting, normed):
    from marl.algorithms.qmix import resolve_state_norm

    env = marl.make(env_id)
    assert resolve_state_norm(setting, env) is normed
    train = marl.algorithm("qmix")(env, {**TINY, "state_norm": setting})
    names = [
        jax.tree_util.keystr(p)
        for p, _ in jax.tree_util.tree_leaves_with_path(
            jax.eval_shape(train.init, jax.random.PRNGKey(0))
        )
    ]
    assert any("state_norm" in name for name in names) is normed


def test_qmix_state_norm_rejects_other_values():
    from marl.algorithms.qmix import resolve_state_norm

    with pytest.raises(ValueError, match="state_norm"):
        resolve_state_norm("yes", marl.make("combat/3m"))


def test_greedy_policy_is_deterministic_and_epsilon_explores():
    """make_policy(nets, epsilon=1): greedy acting takes the same (best available) action
    under every key; non-greedy acting with epsilon 1 is uniform over available actions."""
    env = marl.make("particle/spread")
    nets = qlearner.QNetworks(env, qlearner.QConfig(**TINY))
    params = nets.init(jax.random.key(0))
    policy = qlearner.make_policy(nets, 1.0)
    _, ts = jax.jit(env.reset)(jax.random.key(1))
    avail = jnp.ones_like(ts.avail_actions).at[:, 0].set(False)

    @jax.jit
    def act(key, greedy):
        actions, _ = policy.act(params, ts.obs, avail, policy.initial_carry(), True, key, greedy)
        return actions

    keys = jax.random.split(jax.random.key(2), 40)
    greedy = np.stack([np.asarray(act(k, True)) for k in keys])
    assert (greedy == greedy[0]).all() and (greedy > 0).all()
    explore = np.stack([np.asarray(act(k, False)) for k in keys])
    assert set(explore.ravel().tolist()) == {1, 2, 3, 4}


def test_record_step_scales_rewards():
    """record_step stores reward * reward_scale: rewards [1, -2] at scale 3 are [3, -6]."""
    from types import SimpleNamespace

    env = marl.make("particle/spread", num_agents=2)
    spec = env.spec
    building = qlearner.empty_episodes(spec, 1)
    obs = jnp.zeros((1, 2, spec.obs_dim))
    ts = SimpleNamespace(
        obs=obs, state=jnp.zeros((1, spec.state_dim)), avail_actions=jnp.ones((1, 2, 5), bool)
    )
    nts = SimpleNamespace(
        final_obs=obs,
        final_state=ts.state,
        final_avail=ts.avail_actions,
        reward=jnp.array([[1.0, -2.0]]),
        terminated=jnp.zeros((1,), bool),
    )
    actions = jnp.zeros((1, 2), jnp.int32)
    out = qlearner.record_step(building, jnp.zeros(1, jnp.int32), ts, actions, nts, 3.0)
    np.testing.assert_allclose(np.asarray(out.rewards[0, 0]), [3.0, -6.0])


def test_optimizer_clips_the_global_gradient_norm_before_adam():
    """max_grad_norm 1: a gradient [3, 4] (norm 5) reaches Adam as [0.6, 0.8], so its first
    moment after one step is 0.1 * [0.6, 0.8]."""
    import optax

    tx = qlearner.make_optimizer(qlearner.QConfig(max_grad_norm=1.0))
    params = {"w": jnp.zeros(2)}
    _, opt = tx.update({"w": jnp.array([3.0, 4.0])}, tx.init(params), params)
    mu = optax.tree_utils.tree_get(opt, "mu")
    np.testing.assert_allclose(np.asarray(mu["w"]), [0.06, 0.08], rtol=1e-6)


def test_epsilon_anneals_over_env_steps_of_all_envs():
    """epsilon 1 -> 0 over 64 env steps: one update of 2 envs x 8 steps is 16 env steps, so
    epsilon is 0.75 after it and 0.5 after two."""
    env = marl.make("particle/spread")
    cfg = {**TINY, "num_envs": 2, "rollout_length": 8, "train_steps": 0}
    cfg.update(epsilon_start=1.0, epsilon_end=0.0, epsilon_steps=64)
    train = marl.algorithm("iql")(env, cfg)
    step = jax.jit(train.step)
    state, m1 = step(jax.jit(train.init)(jax.random.key(0)))
    _, m2 = step(state)
    np.testing.assert_allclose([float(m1["epsilon"]), float(m2["epsilon"])], [0.75, 0.5])
