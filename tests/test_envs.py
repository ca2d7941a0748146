"""Every registered environment keeps the contract (`marl.core.testing.check_env`)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shapes import SHAPES, size

import marl
from marl.core.testing import EnvCheckError, check_env

# A fixed list, not a random pick: every particle id, a representative few of every other
# family (tests/test_<family>.py checks the rest: check_env compiles ~50 programs per id), and
# non-default counts where an env has them.
FAMILY_CORE = {"combat": ("combat/3m", "combat/2s3z", "combat/smacv2_5_units", "combat/custom")}
MORE_CASES = [
    ("combat/5m_vs_6m", {"nearest": 2, "opponent": "self_play"}),  # local view, both sides
]
CASES = [
    (env_id, {})
    for env_id in marl.list_envs()
    if env_id.startswith("particle/") or env_id in FAMILY_CORE.get(env_id.split("/")[0], ())
] + [
    ("particle/spread", {"num_agents": 1}),
    ("particle/spread", {"num_agents": 7, "num_landmarks": 4}),
    ("particle/adversary", {"num_good": 3}),
    ("particle/tag", {"num_good": 3, "num_adversaries": 1, "num_obstacles": 0}),
    (
        "particle/world_comm",
        {"num_good": 1, "num_adversaries": 2, "num_food": 1, "num_forests": 1, "num_obstacles": 0},
    ),
]
# Non-default counts run under -m slow, but for the one-agent edge case: the fidelity test
# plays other counts of spread, adversary, tag and world_comm against mpe2 by default.

# Particle scenarios share one continuous-action path (the base env's), and
# tests/test_particle_fidelity.py plays every scenario's continuous actions against mpe2: the
# default run checks the contract with continuous actions on two scenarios, `-m slow` on all.
CONTINUOUS_CORE = ("particle/spread", "particle/world_comm")
CHECK_CASES = [
    pytest.param(
        e,
        k,
        continuous,
        id=f"{e}-{k}-{'continuous' if continuous else 'discrete'}",
        marks=[pytest.mark.slow]
        if (continuous and (k or e not in CONTINUOUS_CORE))
        or (e.startswith("particle/") and k and k != {"num_agents": 1})
        else [],
    )
    for e, k in [*CASES, *MORE_CASES]
    for continuous in ((False, True) if e.startswith("particle/") else (False,))
]


@pytest.mark.parametrize("env_id,kwargs,continuous", CHECK_CASES)
def test_check_env(env_id, kwargs, continuous):
    if env_id.startswith("particle/"):
        kwargs = {**kwargs, "continuous_actions": continuous}
    report = check_env(marl.make(env_id, **kwargs), num_episodes=1)
    assert report["steps"] >= 1


def test_check_env_compiles_a_handful_of_programs():
    """The episode loop samples and steps with programs compiled once, not op by op: the old
    eager loop compiled 88 programs for particle/spread (one per primitive and shape)."""
    import logging

    compiled: list[str] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Compiling"):
                compiled.append(record.getMessage().split(" with ")[0])

    handler, logger = Count(), logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            check_env(marl.make("particle/spread", episode_limit=7), num_episodes=2)
    finally:
        logger.removeHandler(handler)
    assert len(compiled) <= 12, compiled


def rebuilt(cls, env):
    """`env` as an instance of `cls` (a subclass of its class overriding a method), with the
    same parts and settings."""
    changed = cls.__new__(cls)
    changed.__dict__.update(env.__dict__)
    return changed


def test_check_env_catches_a_broken_env():
    """check_env must fail on an env that breaks the contract (here: NaN rewards)."""
    env = marl.make("particle/simple")

    class Broken(type(env)):
        def step_env(self, key, state, actions):
            state, ts = super().step_env(key, state, actions)
            return state, ts.replace(reward=ts.reward * jnp.nan)

    with pytest.raises(EnvCheckError, match="NaN"):
        check_env(rebuilt(Broken, env))


def test_check_env_catches_wrong_episode_length():
    env = marl.make("particle/spread", episode_limit=3)

    class OffByOne(type(env)):
        def step(self, key, state, actions):  # JaxMARL's defect: one step too many
            state, ts = super().step(key, state, actions)
            return state, ts.replace(truncated=state.t >= self.spec.episode_limit + 1)

    with pytest.raises(EnvCheckError, match="limit"):
        check_env(rebuilt(OffByOne, env), num_episodes=1)


def test_check_env_names_what_is_not_deterministic():
    """A step that reads the host's state (here fresh noise on the rewards) fails the
    determinism check, which names the field that differs."""
    env = marl.make("particle/simple")

    class Noisy(type(env)):
        def step(self, key, state, actions):
            state, ts = super().step(key, state, actions)
            shape = jax.ShapeDtypeStruct(ts.reward.shape, jnp.float32)
            noise = jax.pure_callback(lambda: np.random.rand(*shape.shape).astype("f4"), shape)
            return state, ts.replace(reward=ts.reward + noise)

    with pytest.raises(EnvCheckError, match=r"step: not deterministic \(.*reward"):
        check_env(rebuilt(Noisy, env))


@pytest.mark.parametrize("continuous", [False, True])
def test_check_env_catches_an_env_broken_by_unmasked_actions(continuous):
    """Policies explore past the mask and Gaussian samples leave the bounds: an env whose step
    breaks on such an action (here NaN rewards) fails check_env, though every masked or
    in-bounds action would pass."""
    env = marl.make("particle/speaker_listener", continuous_actions=continuous)

    class Fragile(type(env)):
        def step(self, key, state, actions):
            state, ts = super().step(key, state, actions)
            if continuous:
                wild = jnp.any(jnp.abs(actions) > 1.0)
            else:
                wild = jnp.any(~ts.avail_actions[jnp.arange(2), actions])  # speaker's 3 of 5
            return state, ts.replace(reward=jnp.where(wild, jnp.nan, ts.reward))

    with pytest.raises(EnvCheckError, match="NaN"):
        check_env(rebuilt(Fragile, env), num_episodes=1)


def test_check_env_holds_a_bounded_state_to_its_claim():
    """An env declaring `state_bounded` fails check_env once a state feature leaves the bound;
    combat and pathfinding declare it and keep it (checked with the other CASES); particle
    (raw positions) and cleanup (plastic counts per cell) do not."""
    assert marl.make("combat/3m").spec.state_bounded
    assert marl.make("pathfinding/random_grid").spec.state_bounded
    assert not marl.make("particle/spread").spec.state_bounded
    assert not marl.make("cleanup/comm").spec.state_bounded
    env = marl.make("particle/spread", episode_limit=3)

    class Claims(type(env)):
        def _timestep(self, s, reward, terminated):
            ts = super()._timestep(s, reward, terminated)
            return ts.replace(state=ts.state * 0 + 2.5)

    claims = rebuilt(Claims, env)
    claims.spec = dataclasses.replace(env.spec, state_bounded=True)
    with pytest.raises(EnvCheckError, match="state_bounded"):
        check_env(claims, num_episodes=1)


@pytest.mark.parametrize("vary", SHAPES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_tag_invariants_over_counts_and_actions(vary, data, seed):
    """Hypothesis over constructor arguments and actions: shapes follow the counts, rewards of
    adversaries are equal (shared catch reward) and agents never exceed their max speed."""
    num_good = size(data, vary, st.integers(1, 4), 1)
    num_adversaries = size(data, vary, st.integers(1, 4), 3)
    num_obstacles = size(data, vary, st.integers(0, 3), 2)
    env = marl.make(
        "particle/tag",
        num_good=num_good,
        num_adversaries=num_adversaries,
        num_obstacles=num_obstacles,
    )
    n = num_good + num_adversaries
    assert env.spec.num_agents == n
    assert env.spec.obs_sizes[0] == 4 + 2 * num_obstacles + 2 * (n - 1) + 2 * num_good

    def play(key):  # 10 random steps in one compiled program (eager steps cost more)
        state, _ = env.reset(key)
        actions = jax.random.randint(jax.random.fold_in(key, 1), (10, n), 0, 5)

        def body(state, a):
            state, ts = env.step(key, state, a)
            return state, (state.vel[:n], ts.reward, ts.obs)

        return jax.lax.scan(body, state, actions)[1]

    vel, rewards, obs = jax.jit(play)(jax.random.key(seed))
    speed = np.linalg.norm(np.asarray(vel), axis=-1)
    assert np.all(speed <= np.asarray(env.world.max_speed[:n]) + 1e-5)
    r = np.asarray(rewards)
    assert np.allclose(r[:, :num_adversaries], r[:, :1])
    assert np.all(np.isfinite(np.asarray(obs)))


@pytest.mark.parametrize("vary", SHAPES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), local_ratio=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1))
def test_spread_invariants(vary, data, local_ratio, seed):
    """Spread: rewards are never positive; the shared part is common to all agents; landmarks
    never move; observation width follows the agent count."""
    num_agents = size(data, vary, st.integers(1, 8), 3)
    continuous = size(data, vary, st.booleans(), False)
    env = marl.make(
        "particle/spread",
        num_agents=num_agents,
        local_ratio=local_ratio,
        continuous_actions=continuous,
    )
    assert env.spec.obs_dim == 4 + 2 * num_agents + 4 * (num_agents - 1)

    def play(key):  # 5 random steps in one compiled program (eager steps cost more)
        state, ts = env.reset(key)

        def body(carry, t):
            state, ts = carry
            a = marl.core.spaces.sample_actions(
                jax.random.fold_in(key, t), env.spec.action_space, ts.avail_actions
            )
            state, ts = env.step(key, state, a)
            return (state, ts), (ts.reward, ts.metrics["collisions"])

        (last, _), out = jax.lax.scan(body, (state, ts), jnp.arange(5))
        return state.pos[num_agents:], last.pos[num_agents:], out

    landmarks0, landmarks, (rewards, collisions) = jax.jit(play)(jax.random.key(seed))
    r = np.asarray(rewards)
    assert np.all(r <= 1e-6)
    # with no collisions every agent gets the same (shared) reward
    calm = np.asarray(collisions) == 0
    assert np.allclose(r[calm], r[calm][:, :1], atol=1e-5)
    assert np.array_equal(np.asarray(landmarks), np.asarray(landmarks0))


def test_spread_counts_each_colliding_pair_once():
    """Spread with agents 0 and 1 overlapping (0.1 apart, sizes 0.15) and agent 2 alone: one
    colliding pair; landmarks at (0, 0.5), (0.1, 0), (1, 1) are 0.5, 0 and 0 from their nearest
    agents, so the rewards are 0.5 * -1 + 0.5 * -0.5 = -0.75 (agents 0, 1) and -0.25 (agent 2).
    A no-op step from rest keeps the positions (position moves first, with velocity 0)."""
    env = marl.make("particle/spread", num_agents=3)
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    pos = [[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [0.0, 0.5], [0.1, 0.0], [1.0, 1.0]]
    state = state.replace(pos=jnp.asarray(pos, state.pos.dtype), vel=jnp.zeros_like(state.vel))
    next_state, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.zeros(3, jnp.int32))
    np.testing.assert_allclose(next_state.pos, state.pos)
    assert float(ts.metrics["collisions"]) == 1.0
    np.testing.assert_allclose(ts.reward, [-0.75, -0.75, -0.25], rtol=1e-6)
    np.testing.assert_allclose(float(ts.metrics["landmark_distance"]), 0.5, rtol=1e-6)
    assert float(env.observe(state).metrics["collisions"]) == 1.0


# --- one time-limit rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "kwargs", "base"),
    [
        ("combat/3m", {"enemy_shoots": False}, 10 * 6 + 4 * 3),
        ("pathfinding/random_grid", {"num_agents": 2, "state_map": False}, 10 * 2),
    ],
)
def test_time_in_the_state_makes_the_limit_terminal(env_id, kwargs, base):
    """By default the state carries no time and the limit truncates (the learners
    bootstrap); with `time_in_state` the state ends with t / limit and the limit terminates
    the episode (time-aware values), so no learner bootstraps from a state no sample trains."""
    limit = 5
    for timed in (False, True):
        env = marl.make(env_id, episode_limit=limit, time_in_state=timed, **kwargs)
        assert env.spec.state_dim == base + int(timed)
        assert env.spec.time_limit_terminal is timed
        spec = env.spec
        dtype = jnp.int32 if spec.discrete else jnp.float32
        stop = jnp.full(spec.action_shape, 4 if env_id.startswith("combat") else 0, dtype)

        def play(env=env, stop=stop):  # the episode in one compiled program
            state, ts = jax.jit(env.reset)(jax.random.key(0))

            def body(carry, t):
                state, ts = carry
                seen = (ts.done, ts.state[-1])
                state, ts = env.step(jax.random.key(t), state, stop)
                return (state, ts), seen

            (_, last), (done, clock) = jax.lax.scan(body, (state, ts), jnp.arange(limit))
            return last, done, clock

        last, done, clock = jax.jit(play)()
        assert not np.asarray(done).any()
        if timed:
            np.testing.assert_allclose(np.asarray(clock), np.arange(limit) / limit, rtol=1e-6)
        assert bool(last.terminated) is timed and bool(last.truncated) is not timed


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("combat/3m", {"enemy_shoots": False}),
        pytest.param(
            "pathfinding/random_grid", {"num_agents": 2, "state_map": False}, marks=pytest.mark.slow
        ),
    ],
)
def test_a_timed_state_keeps_the_contract(env_id, kwargs):
    """check_env holds a time-aware env to its claim that the limit terminates (one family by
    default: the claim is checked by the same code for every env)."""
    check_env(marl.make(env_id, episode_limit=5, time_in_state=True, **kwargs))


def test_check_env_holds_an_env_to_its_shared_reward_claim():
    """reference pays each agent half its own reward: declaring it shared is caught."""
    env = marl.make("particle/reference")
    env.spec = dataclasses.replace(env.spec, shared_reward=True)
    with pytest.raises(EnvCheckError, match="shared_reward"):
        check_env(env, num_episodes=1)
