"""Particle rewards and metrics on hand-placed states, with hand-computed values: the parts
the mpe2 comparison (tests/test_particle_fidelity.py) cannot see (metrics, which mpe2 has
not) or rarely reaches (the out-of-arena penalty's cap, silent speakers)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import marl
from marl.envs.particle.observe import bound_penalty


def test_bound_penalty_by_hand():
    """Per axis |x| < 0.9: 0; 0.9 <= |x| < 1: 10 (|x| - 0.9); |x| >= 1: min(exp(2|x| - 2), 10).
    (0.5, -0.95) -> 0 + 0.5; (1.5, -3) -> e + 10 (exp(4) = 54.6 is capped at 10)."""
    pos = jnp.array([[0.5, -0.95], [1.5, -3.0]])
    np.testing.assert_allclose(np.asarray(bound_penalty(pos)), [0.5, np.e + 10.0], rtol=1e-6)


def tag_state(env):
    """Tag, 3 adversaries (size 0.075), 2 good agents (size 0.05), 2 obstacles: adversaries 0
    and 1 touch good agent 0 at (0.95, 0), adversary 2 touches good agent 1 at (-0.3, 0.3)."""
    pos = [
        [1.05, 0.0],  # adversary 0: 0.1 from good 0 (< 0.125)
        [0.95, 0.12],  # adversary 1: 0.12 from good 0
        [-0.3, 0.37],  # adversary 2: 0.07 from good 1
        [0.95, 0.0],  # good 0: 0.05 past the 0.9 line in x
        [-0.3, 0.3],  # good 1
        [-0.5, -0.5],  # obstacles, away from everyone
        [0.0, -0.7],
    ]
    return env.initial_state(jnp.asarray(pos, jnp.float32), {})


def test_tag_rewards_and_catches_by_hand():
    """3 colliding (good, adversary) pairs: every adversary gets the team's 3 x 10 = 30;
    good 0 (two catchers, 0.05 out of bounds in x) -20 - 0.5, good 1 -10; catches 3."""
    env = marl.make("particle/tag", num_good=2, num_adversaries=3, num_obstacles=2)
    s = tag_state(env)
    np.testing.assert_allclose(
        np.asarray(env.rewards(s)), [30.0, 30.0, 30.0, -20.5, -10.0], rtol=1e-5
    )
    assert float(env.metrics(s)["catches"]) == 3.0


def test_crypto_silent_eve_is_not_scored():
    """Eve said nothing (all-zero word): her error counts 0, not |goal|^2 = 1; Bob said
    (0, 0.5, 0, 0) for goal 1: error 0.25. Rewards: eve -0, alice and bob 0 - 0.25."""
    env = marl.make("particle/crypto")
    s = env.initial_state(jnp.zeros((5, 2)), {"goal": 1, "key": 0})
    s = s.replace(comm=s.comm.at[1].set(jnp.array([0.0, 0.5, 0.0, 0.0])))
    np.testing.assert_allclose(np.asarray(env.rewards(s)), [0.0, -0.25, -0.25], atol=1e-7)
    m = env.metrics(s)
    np.testing.assert_allclose([float(m["eve_error"]), float(m["bob_error"])], [1.0, 0.25])


def test_adversary_distances_by_hand():
    """Goal landmark 1 (entity 4) at the origin; adversary at (0.3, 0.4) is 0.5 from it, the
    good agents 1.0 and 0.2: good_distance 0.2 (the nearest), adversary_distance 0.5; rewards
    adversary -0.5, good agents 0.5 - 0.2 = 0.3."""
    env = marl.make("particle/adversary")
    pos = [[0.3, 0.4], [0.6, 0.8], [0.0, -0.2], [0.7, -0.7], [0.0, 0.0]]
    s = env.initial_state(jnp.asarray(pos, jnp.float32), {"goal": jnp.asarray(1)})
    m = env.metrics(s)
    np.testing.assert_allclose([float(m["good_distance"]), float(m["adversary_distance"])],
                               [0.2, 0.5], rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(np.asarray(env.rewards(s)), [-0.5, 0.3, 0.3], rtol=1e-5)


def test_push_distances_by_hand():
    """Goal landmark 0 (entity 2) at the origin; adversary at (0, 0.3), agent at (0.6, 0.8):
    agent_distance 1.0, adversary_distance 0.3; rewards adversary 1.0 - 0.3, agent -1.0."""
    env = marl.make("particle/push")
    pos = [[0.0, 0.3], [0.6, 0.8], [0.0, 0.0], [-0.5, 0.5]]
    s = env.initial_state(jnp.asarray(pos, jnp.float32), {"goal": jnp.asarray(0)})
    m = env.metrics(s)
    np.testing.assert_allclose([float(m["agent_distance"]), float(m["adversary_distance"])],
                               [1.0, 0.3], rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(np.asarray(env.rewards(s)), [0.7, -1.0], rtol=1e-5)


def test_reference_distance_by_hand():
    """Goals [1, 0]: agent 0 names landmark 1 (1, 0.2), which agent 1 at (1, 0) is 0.2 from;
    agent 1 names landmark 0 (0, 0.5), agent 0 at the origin is 0.5 from it. distance = mean
    0.35; rewards (local_ratio 0.5) 0.5 r_i + 0.5 mean(r) = [-0.275, -0.425]."""
    env = marl.make("particle/reference")
    pos = [[0.0, 0.0], [1.0, 0.0], [0.0, 0.5], [1.0, 0.2], [-1.0, -1.0]]
    s = env.initial_state(jnp.asarray(pos, jnp.float32), {"goal": jnp.array([1, 0])})
    np.testing.assert_allclose(float(env.metrics(s)["distance"]), 0.35, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(env.rewards(s)), [-0.275, -0.425], rtol=1e-5)


def test_a_spread_composed_of_parts_plays_as_its_keywords():
    """`ParticleEnv.from_parts` with the parts `Spread(...)` builds gives the same spec and the
    same steps; the parts are frozen dataclasses holding their own settings."""
    import dataclasses

    import jax

    from marl.core.env import AgentGroup
    from marl.envs.particle import (
        ParticleDynamics,
        ParticleEnv,
        Scatter,
        SpreadObserver,
        SpreadReward,
        make_world,
    )

    keywords = marl.make("particle/spread", num_agents=4, local_ratio=0.2)
    world = make_world(
        agent_size=[0.15] * 4,
        landmark_size=[0.05] * 4,
        agent_collide=True,
        landmark_collide=False,
        dim_c=2,
    )
    names = tuple(f"agent_{i}" for i in range(4))
    env = ParticleEnv.from_parts(
        Scatter(world, names, (AgentGroup("agent", (0, 1, 2, 3)),)),
        ParticleDynamics(world),
        SpreadReward(world, 0.2),
        SpreadObserver(4, 4),
        viewer="marl.envs.particle.viewer",
        name="particle/spread",
    )
    assert env.spec == keywords.spec
    with np.testing.assert_raises(dataclasses.FrozenInstanceError):
        env.reward.local_ratio = 0.5
    key = jax.random.key(0)
    (s1, t1), (s2, t2) = keywords.reset(key), env.reset(key)
    for i in range(5):
        actions = jax.random.randint(jax.random.key(i), (4,), 0, 5)
        (s1, t1), (s2, t2) = keywords.step(key, s1, actions), env.step(key, s2, actions)
        for a, b in zip(jax.tree.leaves(t1), jax.tree.leaves(t2), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
