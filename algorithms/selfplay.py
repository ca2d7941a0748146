"""Mirror self-play, the way mfrl (Yang et al. 2018's code) trains its battle armies.

In a contest (`env.contest`: two sides, each an agent group) with one parameter set per side
(`parameter_sharing: group`), `self_play: both` trains each side's parameters on that side's
own samples: two armies learning against each other. `self_play: mirror` trains side 0 only;
side 1 plays an earlier copy of side 0, refreshed after every episode that side 0 wins on
reward (its units' summed reward over the episode above side 1's):

    opponent <- (1 - keep) * learner + keep * opponent        (mfrl: keep = 0.01)

(mfrl's `Runner.run`: the opponent's variables are assigned after each round in which the
main model's total reward is the larger; only the main model stores transitions and trains.)
Here the opponent starts as a copy of the learner, an update refreshes it once for each
episode it saw won, and evaluation and the saved parameters put the learner on both sides
(`mirrored`), so a mirror run's army is one parameter set.

Shapes: `B` environments, `N` agents; parameters stacked per set on a leading axis (set 0
side 0, set 1 side 1: `marl.learning.networks.AgentParams`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.learning.networks import AgentParams

Array = jax.Array

SELF_PLAY = ("both", "mirror")


class Rounds(struct.PyTreeNode):
    """Episodes the learner won on reward since the opponent's last refresh."""

    returns: Array  # [B, 2] each side's summed reward over the running episode
    won: Array  # [] int32 finished episodes with side 0's sum above side 1's


def check_mirror(env: MultiAgentEnv, sets: AgentParams, learner: str) -> None:
    """ValueError in one line unless `env` is a contest between mirror-image sides
    (`env.mirrored_sides`), each with its own parameter set (`parameter_sharing: group`)."""
    if not env.mirrored_sides:
        raise ValueError(
            f"{learner}: self_play=mirror needs a contest between mirror-image sides (combat "
            f"with env.kwargs.opponent=self_play and the same armies); {env.spec.name} is not one"
        )
    sides = np.asarray(env.spec.agent_group)
    if sets.num_sets != 2 or not np.array_equal(sets.index, sides):
        raise ValueError(
            f"{learner}: self_play=mirror needs one parameter set per side "
            "(algo.parameter_sharing=group)"
        )


def init_rounds(num_envs: int) -> Rounds:
    return Rounds(jnp.zeros((num_envs, 2)), jnp.zeros((), jnp.int32))


def tally(rounds: Rounds, reward: Array, alive: Array, done: Array, side: Array) -> Rounds:
    """Add one env step: `reward`, `alive` [B, N] (the agents that acted), `done` [B], `side`
    [N] (0 or 1). A finished episode counts as won when side 0's sum is the larger."""
    r = reward * alive
    returns = rounds.returns + jnp.stack(
        [jnp.sum(r * (side == 0), axis=-1), jnp.sum(r * (side == 1), axis=-1)], axis=-1
    )
    won = done & (returns[:, 0] > returns[:, 1])
    return Rounds(
        returns=jnp.where(done[:, None], 0.0, returns),
        won=rounds.won + jnp.sum(won).astype(jnp.int32),
    )


def refresh(params: Any, rounds: Rounds, keep: float) -> tuple[Any, Rounds]:
    """Set 1 <- set 0 + (set 1 - set 0) keep^k for the k episodes won since the last refresh
    (k soft copies in one); the tally of won episodes starts again."""
    factor = jnp.asarray(keep, jnp.float32) ** rounds.won.astype(jnp.float32)

    def one(p: Array) -> Array:
        opponent = p[0] + (p[1] - p[0]) * factor.astype(p.dtype)
        return p.at[1].set(jnp.where(rounds.won > 0, opponent, p[1]))  # none won: unchanged

    return jax.tree.map(one, params), rounds.replace(won=jnp.zeros_like(rounds.won))


def mirrored(params: Any) -> Any:
    """The learner's parameters on both sides (set 1 replaced by set 0)."""
    return jax.tree.map(lambda p: p.at[1].set(p[0]), params)


def config_checks(self_play: str, mirror_keep: float) -> dict[str, tuple[bool, str]]:
    """The `LearnerConfig.checks` entries of the two settings."""
    return {
        "self_play": (self_play in SELF_PLAY, " or ".join(SELF_PLAY)),
        "mirror_keep": (0.0 <= mirror_keep < 1.0, "in [0, 1)"),
    }


class SelfPlay:
    """A learner's self-play on `env`: `mode` "both" (every agent's samples train; nothing
    else changes) or "mirror" (above). The learner calls `start` on its initial parameters,
    `record` on every env step, `update` after every update, weights its losses by
    `learners`, and saves `saved(params)`."""

    def __init__(self, env: MultiAgentEnv, sets: AgentParams, learner: str, mode: str, keep: float):
        self.mirror = mode == "mirror"
        if self.mirror:
            check_mirror(env, sets, learner)
        self.keep = keep
        self.side = jnp.asarray(np.asarray(env.spec.agent_group))
        # [N] float32: 1 for the agents whose samples train (side 0 only when mirrored)
        self.learners = (self.side == 0 if self.mirror else jnp.ones_like(self.side, bool)).astype(
            jnp.float32
        )

    def start(self, params: Any) -> Any:
        """Initial parameters: the opponent starts as a copy of the learner."""
        return mirrored(params) if self.mirror else params

    def record(self, rounds: Rounds, reward: Array, alive: Array, done: Array) -> Rounds:
        """`tally` one env step (mirror only)."""
        return tally(rounds, reward, alive, done, self.side) if self.mirror else rounds

    def update(self, params: Any, rounds: Rounds) -> tuple[Any, Rounds, dict[str, Array]]:
        """After an update: one soft copy for each episode won since the last (mirror only),
        and its metric `self_play/refreshes`."""
        if not self.mirror:
            return params, rounds, {}
        metrics = {"self_play/refreshes": rounds.won.astype(jnp.float32)}
        params, rounds = refresh(params, rounds, self.keep)
        return params, rounds, metrics

    def saved(self, params: Any) -> Any:
        """The parameters a run saves and evaluates: the learner on both sides when mirrored."""
        return mirrored(params) if self.mirror else params
