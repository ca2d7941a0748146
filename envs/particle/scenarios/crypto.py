"""particle/crypto: Alice sends Bob an encrypted message; Eve listens in."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Draw, Scatter
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import make_world

DIM_C = 4
NUM_LANDMARKS = 2  # landmark i's colour is the one-hot vector e_i of width DIM_C


@dataclass(frozen=True)
class CryptoObserver(ParticleObserver):
    """Eve: Alice's word (4); Bob: the key, Alice's word (8); Alice: the goal, the key (8)."""

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        return (4, 8, 8)

    def __call__(self, s: ParticleState) -> jax.Array:
        dtype = s.comm.dtype
        goal = jax.nn.one_hot(s.task["goal"], DIM_C, dtype=dtype)
        key = jax.nn.one_hot(s.task["key"], DIM_C, dtype=dtype)
        alice_word = s.comm[2]
        eve = jnp.pad(alice_word, (0, DIM_C))
        bob = jnp.concatenate([key, alice_word])
        alice = jnp.concatenate([goal, key])
        return jnp.stack([eve, bob, alice])


@dataclass(frozen=True)
class CryptoReward(ParticleReward):
    """Eve `-|c_eve - goal|^2`; Bob and Alice `|c_eve - goal|^2 - |c_bob - goal|^2` (a term
    counting only when that listener spoke); metrics `bob_error`, `eve_error`."""

    metric_names = ("bob_error", "eve_error")

    def _errors(self, s: ParticleState) -> tuple[jax.Array, jax.Array]:
        """Squared error of eve's and bob's words, and whether each said anything."""
        goal = jax.nn.one_hot(s.task["goal"], DIM_C, dtype=s.comm.dtype)
        err = jnp.sum((s.comm[:2] - goal) ** 2, axis=-1)
        spoke = jnp.any(s.comm[:2] != 0, axis=-1)
        return err, spoke

    def __call__(self, s: ParticleState) -> jax.Array:
        err, spoke = self._errors(s)
        eve = jnp.where(spoke[0], err[0], 0.0)
        bob = jnp.where(spoke[1], err[1], 0.0)
        return jnp.stack([-eve, eve - bob, eve - bob])

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        err, _ = self._errors(s)
        return {"eve_error": err[0], "bob_error": err[1]}


def Crypto(
    continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
) -> ParticleEnv:
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
    world = make_world(
        agent_size=[0.05] * 3,
        landmark_size=[0.05] * NUM_LANDMARKS,
        agent_collide=False,
        landmark_collide=False,
        agent_movable=False,
        silent=False,
        dim_c=DIM_C,
    )
    groups = (AgentGroup("adversary", (0,)), AgentGroup("good", (1, 2)))
    draws = (Draw("goal", NUM_LANDMARKS), Draw("key", NUM_LANDMARKS))
    return ParticleEnv(
        Scatter(world, ("eve_0", "bob_0", "alice_0"), groups, draws=draws),
        ParticleDynamics(world, bool(continuous_actions)),
        CryptoReward(),
        CryptoObserver(),
        episode_limit=episode_limit,
        name="particle/crypto",
    )
