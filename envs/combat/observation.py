"""What a battle's agents observe: `CombatObserver`, the observer part of `Combat`.

Observation of an ally [14 + 15 (N - 1) + 12 M] float32, all zero for a dead unit:
    own (14): health fraction, cooldown fraction, x / W, y / H, type one-hot (6), last action
        (4: move x, move y, attacking, (target + 1) / M, 0 when not attacking);
    each other ally j != i, in index order (15): visible, dx / sight, dy / sight,
        distance / sight, health fraction, type one-hot (6), last action (4);
    each enemy k (12): visible, dx / sight, dy / sight, distance / sight, health fraction,
        attackable (in attack range), type one-hot (6).
    A unit is visible if both live and it is within the observer's sight range; invisible ones
    are all zeros.
With `see_enemy_actions`, after those blocks [(N - 1) + 5 M more]: each other ally's cooldown
    fraction (1), then each enemy's last action (4, as above, its target counted among the
    allies: (target + 1) / N) and cooldown fraction (1); zeros where invisible.
Available actions [N, 5 + M]: stop always; moves if alive; attack k if alive and enemy k is
    visible and within attack range.
State [10 U + 4 N (+ 1)] float32: per unit (allies then enemies) health fraction, cooldown
    fraction, x / W, y / H, type one-hot (zeros when dead); the allies' last actions (4 each,
    zeros when dead); t / episode_limit with `time_in_state`. In self-play [14 U (+ 1)]: every
    unit's last action (world frame).

The enemies' view is the allies' layout with the sides swapped and the map mirrored across
x = W / 2: enemy k is "own unit k", ally j its foe j (attack 5 + j), x / W reads 1 - x / W, dx
reads -dx and moves 1 and 3 mean west and east: what an ally sees on the mirrored M-vs-N map.

Local view (`nearest=k`): each unit observes only its min(k, N - 1) nearest teammates and
min(k, M) nearest foes, nearest first (visible ones before the invisible zeros), with the
per-unit features above: obs [N, 14 + 15 min(k, N - 1) + 12 min(k, M)], actions
Discrete(5 + min(k, M)), attack 5 + j targeting the foe in slot j of the unit's observation at
the step's start (`attack_targets`). The observation then stops growing with the battle's size
(`combat/battle64`); the state and the last-action features stay in world terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import TimeStep

from .features import (
    ACTION_FEATURES,
    ALLY_FEATURES,
    ENEMY_FEATURES,
    OWN_FEATURES,
    SEEN_ALLY_FEATURES,
    SEEN_ENEMY_FEATURES,
    SIDES,
    UNIT_STATE_FEATURES,
    action_features,
    foe_features,
    in_sight,
    obs_size,
    others,
    outcome_metrics,
    pad_to,
    unit_features,
    visibility,
)
from .state import CombatState
from .units import FIRST_ATTACK, NUM_UNIT_TYPES, STATS, STOP

__all__ = ["CombatObserver", "foe_features", "obs_size"]


@dataclass(frozen=True)
class CombatObserver:
    """What the agents of a battle of `num_allies` N and `num_enemies` M units on a map of
    side `map_size` observe (the module docstring has the layout): every unit or the `nearest`
    few, SMAX's extra features with `see_enemy_actions`, t / `episode_limit` in the state with
    `time_in_state`; with `self_play` the enemies are agents too (after the allies, each side
    in its own view, padded to the wider)."""

    num_allies: int
    num_enemies: int
    map_size: float = 32.0
    nearest: int | None = None
    see_enemy_actions: bool = False
    time_in_state: bool = False
    episode_limit: int = 60
    self_play: bool = False

    def __post_init__(self) -> None:
        if self.nearest is not None and int(self.nearest) < 1:
            raise ValueError(f"nearest must be None or >= 1, got {self.nearest}")

    # --- sizes --------------------------------------------------------------------------------
    @property
    def num_agents(self) -> int:
        return self.num_allies + self.num_enemies if self.self_play else self.num_allies

    def slots(self, side: str = "allies") -> tuple[int, int]:
        """(teammates, foes) a unit of `side` observes: all of them, or the `nearest` few."""
        own, foes = (
            (self.num_allies, self.num_enemies)
            if side == "allies"
            else (self.num_enemies, self.num_allies)
        )
        if self.nearest is None:
            return own - 1, foes
        return min(self.nearest, own - 1), min(self.nearest, foes)

    def obs_width(self, side: str = "allies") -> int:
        """Observation width of a unit of `side` (unpadded)."""
        mates, foes = self.slots(side)
        width = OWN_FEATURES + ALLY_FEATURES * mates + ENEMY_FEATURES * foes
        if self.see_enemy_actions:
            width += SEEN_ALLY_FEATURES * mates + SEEN_ENEMY_FEATURES * foes
        return width

    def agent_sides(self) -> tuple[str, ...]:
        """The side of each agent kind: the allies, then the enemies in self-play."""
        return SIDES if self.self_play else SIDES[:1]

    @property
    def obs_dim(self) -> int:
        return max(self.obs_width(side) for side in self.agent_sides())

    @property
    def action_dim(self) -> int:
        return FIRST_ATTACK + max(self.slots(side)[1] for side in self.agent_sides())

    @property
    def state_dim(self) -> int:
        units = UNIT_STATE_FEATURES * (self.num_allies + self.num_enemies)
        return units + int(self.time_in_state) + ACTION_FEATURES * self.num_agents

    # --- what agents see ----------------------------------------------------------------------
    def __call__(
        self, state: CombatState, t: jax.Array, reward: jax.Array, terminated: jax.Array
    ) -> TimeStep:
        """The agents' TimeStep in `state` after step `t` (`truncated` False)."""
        obs, avail = self.agent_views(state)
        return TimeStep(
            obs=obs,
            state=self.global_state(state, t),
            avail_actions=avail,
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=state.alive[: self.num_agents],
            metrics=self.metrics(state),
        )

    def metrics(self, state: CombatState) -> dict[str, jax.Array]:
        """The task metrics of `state` ([] float32 each), from the allies' side."""
        n = self.num_allies
        enemy_max = jnp.asarray(STATS.health)[state.unit_type[n:]]
        damage = 1.0 - jnp.sum(state.health[n:]) / jnp.sum(enemy_max)
        return {**outcome_metrics(state.alive, n), "damage_dealt": damage.astype(jnp.float32)}

    def view(self, state: CombatState, side: str = "allies") -> tuple[jax.Array, jax.Array]:
        """One side's observations [K, obs_width(side)] and available actions [K, 5 + F]:
        "allies" as laid out above, "enemies" the same with the sides swapped and the map
        mirrored (what an ally sees on the mirrored map)."""
        if side not in SIDES:
            raise ValueError(f"side must be 'allies' or 'enemies', got {side!r}")
        n, m = self.num_allies, self.num_enemies
        mirror = side == "enemies"
        k, f = (m, n) if mirror else (n, m)
        arrays: tuple[jax.Array, ...] = (
            state.pos,
            state.health,
            state.cooldown,
            state.unit_type,
            state.last_action,
        )
        if mirror:  # own side first, x reflected
            arrays = tuple(jnp.concatenate([x[n:], x[:n]]) for x in arrays)
            pos = arrays[0] * jnp.array([-1.0, 1.0]) + jnp.array([self.map_size, 0.0])
            arrays = (pos, *arrays[1:])
        pos, health, cooldown, unit_type, last = arrays
        u = n + m
        alive = health > 0
        unit = unit_features(pos, health, cooldown, unit_type, self.map_size)
        last_action = action_features(last[:k], f, mirror) * alive[:k, None]
        dx, dy, distance, sight, visible = visibility(pos, alive, unit_type, k)  # [K, U]
        reach = jnp.asarray(STATS.attack_range)[unit_type[:k]][:, None]
        in_range = visible & (distance < reach)
        geometry = jnp.stack(
            [
                visible,
                dx / sight,
                dy / sight,
                distance / sight,
                jnp.broadcast_to(unit[:, 0], (k, u)),
            ],
            axis=-1,
        )  # [K, U, 5]
        type_onehot = jnp.broadcast_to(unit[None, :, 4:], (k, u, NUM_UNIT_TYPES))
        mate_action = jnp.broadcast_to(last_action[None], (k, k, ACTION_FEATURES))
        mate_parts = [geometry[:, :k], type_onehot[:, :k], mate_action]
        foe_parts = [geometry[:, k:], in_range[:, k:, None], type_onehot[:, k:]]
        if self.see_enemy_actions:  # SMAX's extra features, split off again below
            cool = jnp.broadcast_to(unit[None, :, 1:2], (k, u, 1))
            foe_action = action_features(last[k:], k, mirror) * alive[k:, None]
            mate_parts.append(cool[:, :k])
            foe_parts += [jnp.broadcast_to(foe_action[None], (k, f, ACTION_FEATURES)), cool[:, k:]]
        mates = jnp.concatenate(mate_parts, axis=-1)
        mates = mates * (visible[:, :k] & ~np.eye(k, dtype=bool))[..., None]
        foes = jnp.concatenate(foe_parts, axis=-1) * visible[:, k:, None]
        attackable = in_range[:, k:]
        if self.nearest is None:  # every teammate and foe, in index order
            mates = mates[np.arange(k)[:, None], others(k)]
        else:  # the nearest few, nearest first
            mate_slot, foe_slot = self._slot_indices(distance, visible, side)
            mates = jnp.take_along_axis(mates, mate_slot[..., None], axis=1)
            foes = jnp.take_along_axis(foes, foe_slot[..., None], axis=1)
            attackable = jnp.take_along_axis(attackable, foe_slot, axis=1)
        own = jnp.concatenate([unit[:k], last_action], axis=1)
        blocks = [own, mates[..., :ALLY_FEATURES], foes[..., :ENEMY_FEATURES]]
        blocks += [mates[..., ALLY_FEATURES:], foes[..., ENEMY_FEATURES:]]  # empty unless seen
        obs = jnp.concatenate([b.reshape(k, -1) for b in blocks], axis=1)
        avail = jnp.concatenate(
            [jnp.broadcast_to(alive[:k, None], (k, STOP)), jnp.ones((k, 1), bool), attackable],
            axis=1,
        )
        return obs.astype(jnp.float32), avail

    def agent_views(self, state: CombatState) -> tuple[jax.Array, jax.Array]:
        """Observations [num_agents, obs_dim] and available actions [num_agents, action_dim]."""
        obs, avail = self.view(state, "allies")
        if not self.self_play:
            return obs, avail
        enemy_obs, enemy_avail = self.view(state, "enemies")
        d, a = self.obs_dim, self.action_dim
        obs = jnp.concatenate([pad_to(obs, d), pad_to(enemy_obs, d)])
        return obs, jnp.concatenate([pad_to(avail, a), pad_to(enemy_avail, a)])

    def global_state(self, state: CombatState, t: jax.Array) -> jax.Array:
        """[state_dim] unit features, the agents' last actions (world frame)[, t / limit]."""
        n, m = self.num_allies, self.num_enemies
        alive = state.alive[:, None]
        unit = unit_features(
            state.pos, state.health, state.cooldown, state.unit_type, self.map_size
        )
        last = action_features(state.last_action[:n], m) * alive[:n]
        if self.self_play:
            enemy_last = action_features(state.last_action[n:], n) * alive[n:]
            last = jnp.concatenate([last, enemy_last])
        parts = [unit.reshape(-1), last.reshape(-1)]
        if self.time_in_state:
            parts.append((t / self.episode_limit)[None])
        return jnp.concatenate(parts).astype(jnp.float32)

    def enemy_neighbourhood(self, state: CombatState) -> jax.Array:
        """`[M, M]` living teammates within each living enemy's sight range (what a
        mean-field enemy policy averages)."""
        n, m = self.num_allies, self.num_enemies
        return in_sight(state, slice(n, n + m)) * (1.0 - jnp.eye(m))

    # --- local view ---------------------------------------------------------------------------
    def _slot_indices(
        self, distance: jax.Array, visible: jax.Array, side: str
    ) -> tuple[jax.Array, jax.Array]:
        """Local view: [K, mates] teammate and [K, foes] foe indices of each unit's slots,
        nearest visible first (then the invisible ones, zeros in the observation), from its
        side's own-first `distance` and `visible` [K, U]."""
        k = distance.shape[0]
        mates, foes = self.slots(side)
        far = jnp.where(visible, distance, jnp.inf)
        far = far.at[:, :k].set(jnp.where(np.eye(k, dtype=bool), jnp.inf, far[:, :k]))
        # top_k of -distance: nearest first; ties (all the invisible) in index order
        mate_slot = jax.lax.top_k(-far[:, :k], mates)[1] if mates else jnp.zeros((k, 0), int)
        foe_slot = jax.lax.top_k(-far[:, k:], foes)[1]
        return mate_slot, foe_slot

    def attack_targets(self, state: CombatState, actions: jax.Array, side: str) -> jax.Array:
        """A side's actions with attack slots (local view: 5 + j, the j-th foe it observed at
        the step's start) turned into foe indices (5 + foe), as the world reads them."""
        if self.nearest is None:
            return actions
        n = self.num_allies
        k = n if side == "allies" else self.num_enemies

        def own_first(x: jax.Array) -> jax.Array:
            return x if side == "allies" else jnp.concatenate([x[n:], x[:n]])

        pos, alive, unit_type = (own_first(x) for x in (state.pos, state.alive, state.unit_type))
        *_, distance, _, visible = visibility(pos, alive, unit_type, k)
        _, foe_slot = self._slot_indices(distance, visible, side)
        slot = jnp.clip(actions - FIRST_ATTACK, 0, foe_slot.shape[1] - 1)
        target = jnp.take_along_axis(foe_slot, slot[:, None], axis=1)[:, 0]
        return jnp.where(actions >= FIRST_ATTACK, FIRST_ATTACK + target, actions)
