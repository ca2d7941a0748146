"""marl.core.wrappers: AutoReset, EpisodeStatistics and the JaxMARL adapters (both ways).

The particle/spread rollouts are compiled once per module (jit of vmap of lax.scan) and shared;
JaxMARL tests are skipped when jaxmarl is not installed.
"""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments.spaces import Discrete as GymnaxDiscrete

import marl
from marl.core.spaces import Discrete
from marl.core.testing import check_env
from marl.core.wrappers import EPISODE_METRICS, AutoReset, EpisodeStatistics
from marl.interop.jaxmarl import JaxMARLToMarl

T = 60  # steps per rollout: two full spread episodes (25 steps) and part of a third
B = 3  # parallel environments (vmap)
LIMIT = 25


def _close(a, b, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=0)


# --- shared particle/spread rollout ------------------------------------------------------------


@pytest.fixture(scope="module")
def spread():
    return marl.make("particle/spread")


@pytest.fixture(scope="module")
def rollout(spread):
    """EpisodeStatistics(AutoReset(spread)) and the bare env, same actions and keys, B x T."""
    wrapped = EpisodeStatistics(AutoReset(spread))

    def run(key):
        k_reset, k_steps, k_act = jax.random.split(key, 3)
        actions = jax.random.randint(k_act, (T, spread.spec.num_agents), 0, 5)
        keys = jax.random.split(k_steps, T)
        state0, ts0 = wrapped.reset(k_reset)

        def body(carry, x):  # the TimeStep rides in the carry: reset/step structures must match
            state, _ = carry
            state, ts = wrapped.step(x[0], state, x[1])
            return (state, ts), (state, ts)

        _, (states, tss) = jax.lax.scan(body, (state0, ts0), (keys, actions))

        def bare_body(state, x):
            state, ts = spread.step(x[0], state, x[1])
            return state, (state, ts)

        bare_state0, _ = spread.reset(k_reset)
        _, (bare_states, bare) = jax.lax.scan(
            bare_body, bare_state0, (keys[:LIMIT], actions[:LIMIT])
        )
        observed = jax.vmap(spread.observe)(states.env_state).obs  # obs of each returned state
        return ts0, states, tss, bare_states, bare, observed

    out = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(0), B))
    return wrapped, out


def test_autoreset_reset_fills_final_fields(rollout):
    _, (ts0, _, tss, _, _, _) = rollout
    _close(ts0.final_obs, ts0.obs)
    _close(ts0.final_state, ts0.state)
    assert jax.tree.structure(ts0) == jax.tree.structure(jax.tree.map(lambda x: x[:, 0], tss))
    assert tss.obs.shape == (B, T, 3, 18) and tss.final_obs.shape == (B, T, 3, 18)
    assert tss.reward.dtype == jnp.float32 and tss.truncated.dtype == jnp.bool_


def test_spread_episodes_last_exactly_25_steps(rollout):
    _, (_, states, tss, _, _, _) = rollout
    expected = np.zeros(T, bool)
    expected[[LIMIT - 1, 2 * LIMIT - 1]] = True  # the 25th and 50th steps end episodes
    for b in range(B):
        np.testing.assert_array_equal(np.asarray(tss.truncated[b]), expected)
        np.testing.assert_array_equal(np.asarray(tss.done[b]), expected)
    assert not bool(jnp.any(tss.terminated))
    t = np.asarray(states.env_state.t)
    np.testing.assert_array_equal(t, np.broadcast_to((np.arange(T) + 1) % LIMIT, (B, T)))


def test_autoreset_keeps_true_final_obs_at_truncation(rollout, spread):
    _, (_, states, tss, bare_states, bare, observed) = rollout
    last = LIMIT - 1
    # before the end the wrapped env is the bare env, and final_obs == obs
    _close(tss.obs[:, :last], bare.obs[:, :last])
    _close(tss.final_obs[:, :last], tss.obs[:, :last])
    _close(tss.reward[:, :LIMIT], bare.reward)
    # at truncation: final_obs/final_state are the bare env's 25th observation and state ...
    _close(tss.final_obs[:, last], bare.obs[:, last])
    _close(tss.final_state[:, last], bare.state[:, last])
    assert bool(jnp.all(bare.truncated[:, last]))
    # ... while obs is not: it is a new episode's first observation
    assert float(jnp.min(jnp.abs(tss.obs[:, last] - bare.obs[:, last]).max(axis=(1, 2)))) > 1e-3
    new_state = jax.tree.map(lambda x: x[:, last], states.env_state)
    assert bool(jnp.all(new_state.t == 0))
    _close(observed[:, last], tss.obs[:, last])  # consistent with the returned state
    _close(tss.obs[:, last, :, :2], 0.0)  # velocities are zero at reset
    assert float(jnp.abs(bare_states.vel[:, last]).max()) > 0.0  # not at the bare env's end


def test_episode_statistics_match_independent_sums(rollout, spread):
    wrapped, (ts0, _, tss, _, _, _) = rollout
    assert wrapped.spec.metric_names == spread.spec.metric_names + EPISODE_METRICS
    assert set(tss.metrics) == set(wrapped.spec.metric_names) == set(ts0.metrics)
    for name in EPISODE_METRICS:
        _close(ts0.metrics[name], 0.0)
        assert tss.metrics[name].shape == (B, T) and tss.metrics[name].dtype == jnp.float32
    r = np.asarray(tss.reward, np.float64)  # [B, T, N]
    ep1 = r[:, :LIMIT].sum(axis=(1, 2))
    ep2 = r[:, LIMIT : 2 * LIMIT].sum(axis=(1, 2))
    ret = np.asarray(tss.metrics["episode/return"])
    done = np.asarray(tss.metrics["episode/done"])
    np.testing.assert_array_equal(done, np.asarray(tss.done, np.float32))
    _close(ret[:, : LIMIT - 1], 0.0)  # no episode finished yet
    np.testing.assert_allclose(ret[:, LIMIT - 1], ep1, rtol=1e-5)
    held = ret[:, LIMIT : 2 * LIMIT - 1]  # between episode ends the last return is held
    np.testing.assert_allclose(held, np.broadcast_to(ep1[:, None], held.shape), rtol=1e-5)
    np.testing.assert_allclose(ret[:, 2 * LIMIT - 1], ep2, rtol=1e-5)
    np.testing.assert_allclose(tss.metrics["episode/return_mean"][:, LIMIT - 1], ep1 / 3, rtol=1e-5)
    length = np.asarray(tss.metrics["episode/length"])
    _close(length[:, [LIMIT - 1, 2 * LIMIT - 1]], float(LIMIT))
    _close(length[:, : LIMIT - 1], 0.0)
    assert not np.allclose(ep1, ep2)  # the two episodes differ, so the check above has teeth
    # task metrics pass through untouched
    assert "landmark_distance" in tss.metrics and tss.metrics["landmark_distance"].shape == (B, T)


# --- a small JaxMARL-style env (no jaxmarl needed) ----------------------------------------------


class FakeJaxMARLEnv:
    """Two heterogeneous agents with JaxMARL's dict API.

    Agent "a": obs [3], Discrete(4); agent "b": obs [5], Discrete(2), dies on step 2 (its done
    becomes True) and may use action 0 only before. The episode ends when "a" plays 3
    (termination) or, like Overcooked, when the incremented step count reaches max_steps (every
    agent's done is then True).
    """

    agents = ("a", "b")

    def __init__(self, max_steps: int | None = 6):
        if max_steps is not None:
            self.max_steps = max_steps
        self._spaces = {"a": GymnaxDiscrete(4), "b": GymnaxDiscrete(2)}

    def action_space(self, agent):
        return self._spaces[agent]

    def get_obs(self, s):
        t = s["t"].astype(jnp.float32)
        return {"a": jnp.full((3,), 1.0 + t), "b": jnp.arange(5.0) + 10.0 * t}

    def reset(self, key):
        s = {"t": jnp.zeros((), jnp.int32), "x": jax.random.uniform(key)}
        return self.get_obs(s), s

    def step_env(self, key, s, actions):
        t = s["t"] + 1
        s = {"t": t, "x": s["x"]}
        end = actions["a"] == 3
        if hasattr(self, "max_steps"):
            end = end | (t >= self.max_steps)
        dones = {"a": end, "b": end | (t >= 2), "__all__": end}
        rewards = {"a": actions["a"].astype(jnp.float32), "b": 10.0 * actions["b"]}
        return self.get_obs(s), s, rewards, dones, {}

    def get_avail_actions(self, s):
        return {"a": jnp.ones(4, bool), "b": jnp.array([s["t"] < 2, True])}


def _play(env, actions):
    """Play `actions` [T, N] step by step; returns the list of TimeSteps after reset."""
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    out = [ts]
    step = jax.jit(env.step)
    for a in actions:
        state, ts = step(jax.random.key(1), state, jnp.asarray(a, jnp.int32))
        out.append(ts)
    return out


def test_jaxmarl_to_marl_pads_and_masks_heterogeneous_agents():
    env = JaxMARLToMarl(FakeJaxMARLEnv())
    s = env.spec
    assert s.name == "jaxmarl/FakeJaxMARLEnv" and s.agent_names == ("a", "b")
    assert (s.obs_dim, s.obs_sizes, s.state_dim) == (5, (3, 5), 8)
    assert isinstance(s.action_space, Discrete) and s.action_space.n == 4
    assert s.action_sizes == (4, 2)
    assert s.episode_limit == 6 and [g.name for g in s.groups] == ["agent"]
    ts = _play(env, [[0, 1], [2, 1]])
    _close(ts[0].obs, [[1, 1, 1, 0, 0], [0, 1, 2, 3, 4]])
    _close(ts[0].state, [1, 1, 1, 0, 1, 2, 3, 4])
    np.testing.assert_array_equal(ts[0].avail_actions, [[1, 1, 1, 1], [1, 1, 0, 0]])
    np.testing.assert_array_equal(ts[2].avail_actions, [[1, 1, 1, 1], [0, 1, 0, 0]])
    _close(ts[1].reward, [0.0, 10.0])
    _close(ts[2].reward, [2.0, 10.0])
    np.testing.assert_array_equal([t.alive.tolist() for t in ts], [[1, 1], [1, 1], [1, 0]])


def test_jaxmarl_to_marl_time_limit_is_truncation_and_terminal_is_termination():
    env = JaxMARLToMarl(FakeJaxMARLEnv(max_steps=6))
    ts = _play(env, [[0, 1]] * 6)
    assert [bool(t.truncated) for t in ts] == [False] * 6 + [True]
    assert not any(bool(t.terminated) for t in ts)
    # the env's clock marked every agent done; that does not kill agent "a"
    np.testing.assert_array_equal(ts[-1].alive, [True, False])
    ts = _play(env, [[0, 1], [3, 1]])
    assert bool(ts[2].terminated) and not bool(ts[2].truncated)
    assert not bool(ts[1].done)
    # a shorter limit than the env's own
    short = JaxMARLToMarl(FakeJaxMARLEnv(max_steps=6), episode_limit=3)
    ts = _play(short, [[0, 1]] * 3)
    assert bool(ts[3].truncated) and not bool(ts[2].done)
    with pytest.raises(ValueError, match="exceeds"):
        JaxMARLToMarl(FakeJaxMARLEnv(max_steps=6), episode_limit=7)
    with pytest.raises(ValueError, match="episode_limit"):
        JaxMARLToMarl(FakeJaxMARLEnv(max_steps=None))
    no_clock = JaxMARLToMarl(FakeJaxMARLEnv(max_steps=None), episode_limit=2)
    ts = _play(no_clock, [[3, 1]])
    assert bool(ts[1].terminated)


def test_autoreset_on_termination_keeps_terminal_obs():
    env = AutoReset(JaxMARLToMarl(FakeJaxMARLEnv()))
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    step = jax.jit(env.step)
    state, ts = step(jax.random.key(1), state, jnp.array([0, 1]))
    state, ts = step(jax.random.key(2), state, jnp.array([3, 1]))
    assert bool(ts.terminated) and not bool(ts.truncated)
    _close(ts.final_obs[0, :3], 3.0)  # the terminal observation, at t = 2
    _close(ts.obs[0, :3], 1.0)  # the next episode's first observation, t = 0
    assert int(state.t) == 0
    np.testing.assert_array_equal(ts.alive, [True, True])  # the new episode's
    _close(ts.reward, [3.0, 10.0])  # the transition just taken


def test_autoreset_keeps_the_terminal_avail_actions_and_state():
    """Termination at t=2: final_avail is agent b's mask then, [0, 1] (action 0 only before
    t=2), and final_state starts with a's obs 1 + 2 = 3; avail/state are the reset's ([1, 1], 1)."""
    env = AutoReset(JaxMARLToMarl(FakeJaxMARLEnv()))
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    step = jax.jit(env.step)
    state, ts = step(jax.random.key(1), state, jnp.array([0, 1]))
    state, ts = step(jax.random.key(2), state, jnp.array([3, 1]))
    assert bool(ts.done)
    np.testing.assert_array_equal(ts.final_avail, [[1, 1, 1, 1], [0, 1, 0, 0]])
    np.testing.assert_array_equal(ts.avail_actions, [[1, 1, 1, 1], [1, 1, 0, 0]])
    _close(ts.final_state, [3, 3, 3, 20, 21, 22, 23, 24])
    _close(ts.state, [1, 1, 1, 0, 1, 2, 3, 4])


def test_episode_metrics_average_only_the_steps_that_ended_an_episode():
    """[T=2, B=2] with episodes ending at (0, 1) and (1, 0): return (7 + 9) / 2 = 8, length
    (20 + 30) / 2 = 25, not the mean over all four steps; no ended episode gives 0, not NaN."""
    from marl.core.wrappers import episode_metrics

    done = jnp.array([[0.0, 1.0], [1.0, 0.0]])
    metrics = {
        "episode/done": done,
        "episode/return": jnp.array([[5.0, 7.0], [9.0, 100.0]]),
        "episode/length": jnp.array([[3.0, 20.0], [30.0, 40.0]]),
    }
    out = episode_metrics(metrics)
    assert set(out) == {"train/episodes", "train/return", "train/length"}
    _close(out["train/episodes"], 2.0)
    _close(out["train/return"], 8.0)
    _close(out["train/length"], 25.0)
    none = episode_metrics({k: v if k != "episode/done" else 0 * v for k, v in metrics.items()})
    _close(none["train/episodes"], 0.0)
    _close(none["train/return"], 0.0)


@pytest.mark.integration
def test_importing_the_adapters_does_not_import_jaxmarl():
    code = (
        "import sys, marl.interop.jaxmarl as j; assert 'jaxmarl' not in sys.modules; "
        "assert callable(j.JaxMARLToMarl)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    import marl.interop.jaxmarl as w

    with pytest.raises(AttributeError):
        _ = w.NoSuchWrapper


# --- against JaxMARL itself ---------------------------------------------------------------------


def test_jaxmarl_simple_spread_as_marl_env():
    jaxmarl = pytest.importorskip("jaxmarl")
    jenv = jaxmarl.make("MPE_simple_spread_v3")
    env = JaxMARLToMarl(jenv)
    s = env.spec
    assert s.name == "jaxmarl/SimpleSpreadMPE" and s.num_agents == 3
    assert (s.obs_dim, s.state_dim, s.episode_limit) == (18, 54, 25)
    assert isinstance(s.action_space, Discrete) and s.action_space.n == 5

    wrapped = AutoReset(env)

    def run(key):
        """Rollout through AutoReset, and JaxMARL's own step_env with the same keys/actions."""
        state, ts = wrapped.reset(key)

        def body(carry, k):
            state, ts = carry
            k_act, k_step = jax.random.split(k)
            actions = marl.core.spaces.sample_actions(k_act, s.action_space, ts.avail_actions)
            state, ts = wrapped.step(k_step, state, actions)
            return (state, ts), (ts, actions, k_step)

        tss, actions, keys = jax.lax.scan(body, (state, ts), jax.random.split(key, 30))[1]

        def jbody(jstate, x):
            act = dict(zip(jenv.agents, x[1], strict=True))
            obs, jstate, rew, dones, _ = jenv.step_env(x[0], jstate, act)
            return jstate, (obs, rew, dones)

        jobs0, jstate = jenv.reset(key)
        return ts, jobs0, tss, jax.lax.scan(jbody, jstate, (keys[:LIMIT], actions[:LIMIT]))[1]

    ts0, jobs0, tss, (jobs, jrew, jdones) = jax.jit(jax.vmap(run))(
        jax.random.split(jax.random.key(4), 2)
    )
    assert tss.obs.shape == (2, 30, 3, 18) and tss.state.shape == (2, 30, 54)
    assert tss.reward.shape == (2, 30, 3) and tss.avail_actions.shape == (2, 30, 3, 5)
    done_at = [np.flatnonzero(np.asarray(d)).tolist() for d in tss.truncated]
    assert done_at == [[LIMIT - 1], [LIMIT - 1]]
    assert not bool(jnp.any(tss.terminated)) and bool(jnp.all(jnp.isfinite(tss.obs)))
    assert not bool(jnp.any(jdones["__all__"]))  # JaxMARL's MPE itself would run a 26th step
    # row for row what JaxMARL's own env returns, the true final observation included
    for i, a in enumerate(jenv.agents):
        _close(ts0.obs[:, i], jobs0[a])
        _close(tss.final_obs[:, :LIMIT, i], jobs[a])
        _close(tss.reward[:, :LIMIT, i], jrew[a])
    _close(tss.final_state[:, :LIMIT], jnp.concatenate([jobs[a] for a in jenv.agents], axis=-1))
    assert bool(jnp.all(tss.reward < 0))  # spread's distance penalty


def test_marl_spread_in_a_jaxmarl_loop(spread):
    pytest.importorskip("jaxmarl")
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv as JaxMARLEnv
    from jaxmarl.environments.spaces import Discrete as JDiscrete
    from jaxmarl.wrappers.baselines import LogWrapper

    from marl.interop.jaxmarl import MarlToJaxMARL

    jenv = MarlToJaxMARL(spread)
    assert isinstance(jenv, JaxMARLEnv)
    assert jenv.num_agents == 3 and jenv.agents == ["agent_0", "agent_1", "agent_2"]
    assert (
        isinstance(jenv.action_space("agent_1"), JDiscrete) and jenv.action_space("agent_1").n == 5
    )
    assert jenv.observation_space("agent_0").shape == (18,)
    assert jenv.agent_classes == {"agent": jenv.agents}

    env = LogWrapper(jenv)  # JaxMARL's own logging wrapper on top

    def run(key):
        """A JaxMARL-style loop (dict actions, `step` with auto-reset), and the bare marl env
        fed the same actions and keys."""
        k_reset, k_loop = jax.random.split(key)
        obs0, state0 = env.reset(k_reset)
        first = (obs0, jenv.world_state(state0.env_state), jenv.get_avail_actions(state0.env_state))

        def body(carry, k):
            obs, state = carry
            k_act, k_step = jax.random.split(k)
            ks = jax.random.split(k_act, env.num_agents)
            actions = {a: env.action_space(a).sample(ks[i]) for i, a in enumerate(env.agents)}
            obs, state, rew, dones, infos = env.step(k_step, state, actions)
            return (obs, state), (obs, rew, dones, infos, actions, k_step)

        loop = jax.lax.scan(body, (obs0, state0), jax.random.split(k_loop, 30))[1]
        actions, step_keys = loop[4], loop[5]
        acts = jnp.stack([actions[a] for a in jenv.agents], axis=1).astype(jnp.int32)  # [30, 3]
        split = jax.vmap(jax.random.split)(step_keys)  # MarlToJaxMARL.step splits its key
        bare_step = lambda s, x: (lambda out: (out[0], out[1]))(spread.step(x[0], s, x[1]))
        bare_state, bare_ts0 = spread.reset(k_reset)
        bare = jax.lax.scan(bare_step, bare_state, (split[:LIMIT, 0], acts[:LIMIT]))[1]
        reset_obs = jenv.reset(split[LIMIT - 1, 1])[0]
        return first, bare_ts0, loop, bare, reset_obs

    first, bare_ts0, loop, bare, reset_obs = jax.jit(run)(jax.random.key(6))
    (obs0, world0, avail0), (obs, rew, dones, infos, _, _) = first, loop
    for i, a in enumerate(jenv.agents):
        _close(obs0[a], bare_ts0.obs[i])
    _close(world0, bare_ts0.state)
    assert avail0["agent_2"].shape == (5,) and bool(jnp.all(avail0["agent_2"]))

    expected = np.zeros(30, bool)
    expected[LIMIT - 1] = True
    np.testing.assert_array_equal(dones["__all__"], expected)
    np.testing.assert_array_equal(dones["agent_0"], expected)
    assert infos["truncated"].shape == (30, 3) and bool(jnp.all(infos["truncated"][LIMIT - 1]))
    assert not bool(jnp.any(infos["terminated"]))
    # the obs dict holds the marl obs rows; rewards match
    for i, a in enumerate(jenv.agents):
        assert obs[a].shape == (30, 18)
        _close(obs[a][: LIMIT - 1], bare.obs[: LIMIT - 1, i])
        _close(rew[a][:LIMIT], bare.reward[:, i])
    # after the 25th step the obs is the reset obs of the split key, not the final one
    for i, a in enumerate(jenv.agents):
        _close(obs[a][LIMIT - 1], reset_obs[a])
        assert not np.allclose(obs[a][LIMIT - 1], bare.obs[LIMIT - 1, i])
    # LogWrapper's episode return agrees with the summed rewards
    ret = infos["returned_episode_returns"][LIMIT - 1]
    np.testing.assert_allclose(ret, bare.reward.sum(axis=0), rtol=1e-5)


def test_marl_to_jaxmarl_continuous_and_round_trip():
    pytest.importorskip("jaxmarl")
    from jaxmarl.environments.spaces import Box as JBox

    from marl.interop.jaxmarl import MarlToJaxMARL

    cont = marl.make("particle/spread", continuous_actions=True)
    jenv = MarlToJaxMARL(cont)
    space = jenv.action_space("agent_0")
    assert isinstance(space, JBox) and space.shape == (5,) and (space.low, space.high) == (0, 1)
    key = jax.random.key(7)
    obs, state = jenv.reset(key)
    acts = jax.random.uniform(key, (3, 5))
    obs, state, rew, dones, _ = jenv.step_env(key, state, dict(zip(jenv.agents, acts, strict=True)))
    s, _ = cont.reset(key)
    _, ts = cont.step(key, s, acts)
    for i, a in enumerate(jenv.agents):
        _close(obs[a], ts.obs[i])
        _close(rew[a], ts.reward[i])
    assert not bool(dones["__all__"])

    # marl -> JaxMARL -> marl gives back the env's spec and transitions, truncation included
    spread = marl.make("particle/spread")
    back = JaxMARLToMarl(MarlToJaxMARL(spread))
    for f in ("num_agents", "obs_dim", "state_dim", "action_dim", "obs_sizes", "episode_limit"):
        assert getattr(back.spec, f) == getattr(spread.spec, f), f
    assert back.spec.discrete
    assert back.spec.groups == spread.spec.groups

    def play(env, key):
        acts = jax.random.randint(key, (LIMIT, 3), 0, 5)
        state, _ = env.reset(key)
        step = lambda s, a: (lambda out: (out[0], out[1]))(env.step(key, s, a))
        return jax.lax.scan(step, state, acts)[1]

    a, b = jax.jit(lambda k: (play(back, k), play(spread, k)))(key)
    for f in ("obs", "state", "reward", "avail_actions", "alive", "terminated", "truncated"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), atol=1e-6, err_msg=f)
    assert bool(a.truncated[-1]) and not bool(jnp.any(a.truncated[:-1]))
    # continuous actions too: the mask marks each agent's real dimensions, [N, action_dim]
    cont = marl.make("particle/spread", continuous_actions=True)
    back = JaxMARLToMarl(MarlToJaxMARL(cont))
    _, ts = back.reset(key)
    np.testing.assert_array_equal(ts.avail_actions, cont.reset(key)[1].avail_actions)
    check_env(back, num_episodes=1)


def test_marl_to_jaxmarl_infos_carry_the_envs_task_metrics():
    """A JaxMARL baseline reads a battle's outcome from `infos` (marl's `won`, not a reward
    threshold): every metric of the spec, broadcast over agents, equal to marl's step's."""
    pytest.importorskip("jaxmarl")
    from marl.interop.jaxmarl import MarlToJaxMARL

    env = marl.make("combat/3m")
    jenv = MarlToJaxMARL(env)
    key = jax.random.key(3)
    _, state = jenv.reset(key)
    actions = {a: jnp.asarray(1) for a in jenv.agents}
    *_, infos = jenv.step_env(key, state, actions)
    _, ts = env.step(key, env.reset(key)[0], jnp.ones(3, jnp.int32))
    assert set(env.spec.metric_names) <= set(infos)
    for name in env.spec.metric_names:
        assert infos[name].shape == (3,)
        np.testing.assert_allclose(infos[name], np.broadcast_to(ts.metrics[name], (3,)))


# --- batched stepping --------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ["particle/spread", "combat/3m"])
def test_step_batch_equals_vmap_of_step(env_id):
    """AutoReset.step_batch (resets computed only on steps where an episode ended) takes the
    same transitions as vmap(step): synchronised episodes (spread) and staggered ones (3m);
    under a vmap over the seed axis too, where its branch must stay a real `cond`."""
    from marl.core.learner import SEED_AXIS
    from marl.core.spaces import sample_actions

    wrapped = EpisodeStatistics(AutoReset(marl.make(env_id)))
    space = wrapped.spec.action_space
    steps, envs = 40, 4

    def rollout(key, batched: bool):
        state, ts = jax.vmap(wrapped.reset)(jax.random.split(key, envs))

        def body(carry, k):
            state, ts = carry
            k_act, k_step = jax.random.split(k)
            acts = jax.vmap(lambda kk, av: sample_actions(kk, space, av))(
                jax.random.split(k_act, envs), ts.avail_actions
            )
            keys = jax.random.split(k_step, envs)
            step = wrapped.step_batch if batched else jax.vmap(wrapped.step)
            state, ts = step(keys, state, acts)
            return (state, ts), ts

        return jax.lax.scan(body, (state, ts), jax.random.split(key, steps))[1]

    keys = jax.random.split(jax.random.key(3), 2)  # two "seeds"
    seeds = jax.vmap(lambda k: rollout(k, True), axis_name=SEED_AXIS)
    got = jax.jit(seeds)(keys)
    want = jax.jit(jax.vmap(lambda k: rollout(k, False)))(keys)
    assert float(jnp.sum(want.metrics["episode/done"])) > envs  # some episodes ended
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if np.issubdtype(a.dtype, np.floating):  # two programs: XLA may round the last bit
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # apart (~1e-7 seen)
        else:  # dones, steps, availability: exact
            np.testing.assert_array_equal(a, b)
    assert "cond[" in str(jax.make_jaxpr(seeds)(keys))  # a real branch, not a select


@pytest.mark.parametrize("wrap", [AutoReset, lambda e: EpisodeStatistics(AutoReset(e))])
def test_learners_refuse_an_env_already_wrapped_for_training(wrap):
    """A second AutoReset would hand the next episode's first observation over as the final
    one (truncated episodes would bootstrap from the wrong state): refused, by every learner."""
    env = marl.make("particle/simple")
    for algo in ("ippo", "qmix"):
        with pytest.raises(ValueError, match="wrap the bare env"):
            marl.algorithm(algo)(wrap(env))
    assert marl.algorithm("ippo")(env).steps_per_update > 0


def test_autoreset_keeps_which_agents_were_alive_at_the_end():
    """An episode whose agents all die in step 1 and that runs to its limit (4): at the step
    that ends it, `alive` is the new episode's (all True) and `final_alive` the finished
    one's (all False); within an episode `final_alive` is `alive`."""
    from hand_rollouts import death_env

    env = AutoReset(death_env(num_agents=2, die_at=1))
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    np.testing.assert_array_equal(ts.final_alive, [True, True])
    for t in range(4):
        state, ts = env.step(jax.random.key(t), state, jnp.zeros((2,), jnp.int32))
        if t < 3:
            np.testing.assert_array_equal(ts.final_alive, ts.alive)
    assert bool(ts.truncated)
    np.testing.assert_array_equal(ts.alive, [True, True])
    np.testing.assert_array_equal(ts.final_alive, [False, False])
    np.testing.assert_array_equal(ts.died(jnp.array([True, False])), [True, False])


def test_agent_terminated_under_a_team_reward_and_per_agent_rewards():
    """Agent 0 dies in a step that does not end the episode: under per-agent rewards its
    return ends there (mfrl); under a team reward it does not (only the episode's end does);
    the mean-field learners then train the value on its dead steps too."""
    from marl.algorithms.meanfield import value_samples
    from marl.core.env import TimeStep

    z = jnp.zeros((2, 1))
    ts = TimeStep(
        obs=z, state=z[0], avail_actions=z.astype(bool), reward=z[:, 0],
        terminated=jnp.array(False), truncated=jnp.array(False), alive=jnp.array([False, True]),
        final_alive=jnp.array([False, True]),
    )  # fmt: skip
    before = jnp.array([True, True])
    np.testing.assert_array_equal(ts.agent_terminated(before, team_reward=False), [True, False])
    np.testing.assert_array_equal(ts.agent_terminated(before, team_reward=True), [False, False])
    ended = ts.replace(terminated=jnp.array(True))
    np.testing.assert_array_equal(ended.agent_terminated(before, team_reward=True), [True, True])
    np.testing.assert_array_equal(value_samples(ts.alive, False), [0.0, 1.0])
    np.testing.assert_array_equal(value_samples(ts.alive, True), [1.0, 1.0])
