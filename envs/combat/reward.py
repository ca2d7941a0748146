"""A battle's rewards, the reward parts of `Combat`: each called with the transition (the
states before and after, the units' actions and what they did) and the battle's sizes.

`SmacReward` (reward "smac"), [N] the same for every ally: SMAC's, damage dealt to the enemies
+ 10 per kill + 200 on the winning step, times 20 / (total enemy health + 10 M + 200), so a
perfect episode returns 20; in self-play the enemies get the mirror. `MagentReward` (reward
"magent"), each unit its own, as in MAgent's battle (Yang et al. 2018): -0.005 a step, -0.1
for an attack action, +0.2 when it fires at a foe, +5 a kill, -0.1 on death
(`spec.shared_reward` is then False).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp

from .state import CombatState
from .units import FIRST_ATTACK, STATS

REWARD_SCALE = 20.0  # SMAC reward_scale_rate: the most an episode can return
KILL_REWARD = 10.0  # SMAC reward_death_value
WIN_REWARD = 200.0  # SMAC reward_win
# MAgent's battle (python/magent/builtin/config/battle.py), each unit its own reward: step_reward,
# attack_penalty (any attack), the attack-on-a-foe rule, kill_reward, dead_penalty
MAGENT = {"step": -0.005, "attack": -0.1, "hit": 0.2, "kill": 5.0, "dead": -0.1}


def side_reward(before: CombatState, after: CombatState, own: slice, foe: slice) -> jax.Array:
    """[] SMAC's scaled reward of one side: damage dealt, kills, the win bonus."""
    foe_max = jnp.sum(jnp.asarray(STATS.health)[after.unit_type[foe]])
    damage = jnp.sum(before.health[foe] - after.health[foe])
    kills = jnp.sum(before.alive[foe] & ~after.alive[foe])
    # the bonus once, on the win: the foes were alive before, none is now, one of us is
    won = jnp.any(before.alive[foe]) & ~jnp.any(after.alive[foe]) & jnp.any(after.alive[own])
    raw = damage + KILL_REWARD * kills + WIN_REWARD * won
    max_raw = foe_max + KILL_REWARD * after.unit_type[foe].shape[0] + WIN_REWARD
    return raw * (REWARD_SCALE / max_raw)


def unit_reward(
    before: CombatState,
    after: CombatState,
    actions: jax.Array,
    shots: jax.Array,
    kills: jax.Array,
) -> jax.Array:
    """[U] MAgent battle's reward of each unit (its `battle.py` config): -0.005 a step, -0.1
    for an attack action, +0.2 when it fires at a foe, +5 a kill (shared by the sub-step's
    shooters of that foe), -0.1 on death; 0 once dead."""
    was_alive = before.alive
    died = was_alive & ~after.alive
    r = (
        MAGENT["step"]
        + MAGENT["attack"] * (actions >= FIRST_ATTACK)
        + MAGENT["hit"] * jnp.minimum(shots, 1.0)
        + MAGENT["kill"] * kills
        + MAGENT["dead"] * died
    )
    return jnp.where(was_alive, r, 0.0).astype(jnp.float32)


@dataclass(frozen=True)
class SmacReward:
    """SMAC's team reward (the reward part of `Combat`): every agent of a side gets the side's
    `side_reward`; in self-play the enemies get the mirror (their damage dealt, kills and win,
    scaled by the allies' totals)."""

    name: ClassVar[str] = "smac"
    shared: ClassVar[bool] = True  # one reward for the whole team (`EnvSpec.shared_reward`)
    per_unit: ClassVar[bool] = False  # needs no per-unit kill credit from the dynamics

    def __call__(
        self,
        before: CombatState,
        after: CombatState,
        actions: jax.Array,
        shots: jax.Array,
        kills: jax.Array,
        num_allies: int,
        self_play: bool,
    ) -> jax.Array:
        """[N] (or [N + M] in self-play) float32 rewards of the transition."""
        n = num_allies
        m = after.unit_type.shape[0] - n
        allies, enemies = slice(0, n), slice(n, n + m)
        reward = jnp.full((n,), side_reward(before, after, allies, enemies), jnp.float32)
        if self_play:
            mirror = side_reward(before, after, enemies, allies)
            reward = jnp.concatenate([reward, jnp.full((m,), mirror, jnp.float32)])
        return reward


@dataclass(frozen=True)
class MagentReward:
    """MAgent battle's reward, each unit its own (`unit_reward`): the reward part of `Combat`
    for battles scored per unit (`reward="magent"`)."""

    name: ClassVar[str] = "magent"
    shared: ClassVar[bool] = False
    per_unit: ClassVar[bool] = True  # the dynamics credits each kill to its shooters

    def __call__(
        self,
        before: CombatState,
        after: CombatState,
        actions: jax.Array,
        shots: jax.Array,
        kills: jax.Array,
        num_allies: int,
        self_play: bool,
    ) -> jax.Array:
        """[N] (or [N + M] in self-play) float32 rewards of the transition."""
        agents = after.unit_type.shape[0] if self_play else num_allies
        return unit_reward(before, after, actions, shots, kills)[:agents]


CombatReward = SmacReward | MagentReward
REWARDS = ("smac", "magent")
REWARD_PARTS: dict[str, type[SmacReward] | type[MagentReward]] = {
    "smac": SmacReward,
    "magent": MagentReward,
}
