"""particle/crypto: Alice sends Bob an encrypted message; Eve listens in."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..world import make_world

DIM_C = 4
NUM_LANDMARKS = 2  # landmark i's colour is the one-hot vector e_i of width DIM_C


class Crypto(ParticleEnv):
    """Covert communication (mpe2 simple_crypto_v3). Nobody moves; everybody speaks.

    Agents: eve_0 (adversary), bob_0, alice_0 (speaker); groups "adversary", "good".
    Observation: eve [4] Alice's word; bob [8] key, Alice's word; alice [8] goal colour, key.
    Padded to 8. Goal and key are one-hot colours of two landmarks drawn at reset.
    Actions: Discrete(4) (word = one-hot) or Box([0, 1], (4,)) (word = the vector).
    Reward: eve `-|c_eve - goal|^2`; bob and alice `|c_eve - goal|^2 - |c_bob - goal|^2`, a
    term counting only when that listener said something non-zero.
    Metrics: `bob_error`, `eve_error` (squared error of their last words).

    Constructor:
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """

    def __init__(
        self, continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
    ):
        world = make_world(
            agent_size=[0.05] * 3,
            landmark_size=[0.05] * NUM_LANDMARKS,
            agent_collide=False,
            landmark_collide=False,
            agent_movable=False,
            silent=False,
            dim_c=DIM_C,
        )
        self._setup(
            "particle/crypto",
            world,
            ["eve_0", "bob_0", "alice_0"],
            {"adversary": [0], "good": [1, 2]},
            [4, 8, 8],
            continuous_actions,
            episode_limit,
            ("bob_error", "eve_error"),
        )

    def sample(self, key):
        k_goal, k_key, k_pos = jax.random.split(key, 3)
        task = {
            "goal": jax.random.randint(k_goal, (), 0, NUM_LANDMARKS),
            "key": jax.random.randint(k_key, (), 0, NUM_LANDMARKS),
        }
        pos = jax.random.uniform(k_pos, (3 + NUM_LANDMARKS, 2), minval=-1.0, maxval=1.0)
        return pos, task

    def observations(self, s: ParticleState):
        dtype = s.comm.dtype
        goal = jax.nn.one_hot(s.task["goal"], DIM_C, dtype=dtype)
        key = jax.nn.one_hot(s.task["key"], DIM_C, dtype=dtype)
        alice_word = s.comm[2]
        eve = jnp.pad(alice_word, (0, DIM_C))
        bob = jnp.concatenate([key, alice_word])
        alice = jnp.concatenate([goal, key])
        return jnp.stack([eve, bob, alice])

    def _errors(self, s: ParticleState):
        """Squared error of eve's and bob's words, and whether each said anything."""
        goal = jax.nn.one_hot(s.task["goal"], DIM_C, dtype=s.comm.dtype)
        err = jnp.sum((s.comm[:2] - goal) ** 2, axis=-1)
        spoke = jnp.any(s.comm[:2] != 0, axis=-1)
        return err, spoke

    def rewards(self, s: ParticleState):
        err, spoke = self._errors(s)
        eve = jnp.where(spoke[0], err[0], 0.0)
        bob = jnp.where(spoke[1], err[1], 0.0)
        return jnp.stack([-eve, eve - bob, eve - bob])

    def metrics(self, s: ParticleState):
        err, _ = self._errors(s)
        return {"eve_error": err[0], "bob_error": err[1]}
