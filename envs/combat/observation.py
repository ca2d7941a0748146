"""What combat's units observe: the feature layout (`obs_size`, `foe_features`), each side's
view of the battle (`CombatView.view`: own features, teammates and foes, all of them or the
nearest few) and the global state; the `Combat` env mixes it in."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .state import CombatState
from .units import FIRST_ATTACK, MOVE_VECTORS, NUM_UNIT_TYPES, STATS, STOP, pairwise_offsets

ACTION_FEATURES = 4  # last action: move x, move y, attacking, (target + 1) / foes
OWN_FEATURES = 4 + NUM_UNIT_TYPES + ACTION_FEATURES
ALLY_FEATURES = 5 + NUM_UNIT_TYPES + ACTION_FEATURES
ENEMY_FEATURES = 6 + NUM_UNIT_TYPES
UNIT_STATE_FEATURES = 4 + NUM_UNIT_TYPES
SEEN_ALLY_FEATURES = 1  # see_enemy_actions: a teammate's cooldown fraction
SEEN_ENEMY_FEATURES = ACTION_FEATURES + 1  # see_enemy_actions: a foe's last action, cooldown


def obs_size(num_own: int, num_foes: int) -> int:
    """Observation width of a unit with `num_own - 1` teammates and `num_foes` foes."""
    return OWN_FEATURES + ALLY_FEATURES * (num_own - 1) + ENEMY_FEATURES * num_foes


def foe_features(obs: jax.Array, mates: int, foes: int) -> jax.Array:
    """The foe blocks `[..., foes, ENEMY_FEATURES]` of observations `[..., obs_size]` of units
    with `mates` teammate and `foes` foe slots (`Combat.slots`): per foe visible, dx / sight,
    dy / sight, distance / sight, health fraction, attackable, type one-hot (zeros if unseen)."""
    start = OWN_FEATURES + ALLY_FEATURES * mates
    block = obs[..., start : start + ENEMY_FEATURES * foes]
    return block.reshape(*obs.shape[:-1], foes, ENEMY_FEATURES)


def _others(k: int) -> np.ndarray:
    """[k, k - 1] the teammates of each of k units, in index order."""
    return np.array([[j for j in range(k) if j != i] for i in range(k)], int).reshape(k, k - 1)


def _sight(
    pos: jax.Array, alive: jax.Array, unit_type: jax.Array, k: int
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """What the first k units see of all U: dx, dy, distance, sight [K, 1], visible [K, U]."""
    dx, dy, distance = pairwise_offsets(pos[:k], pos)
    sight = jnp.asarray(STATS.sight_range)[unit_type[:k]][:, None]
    visible = alive[:k, None] & alive[None, :] & (distance < sight)
    return dx, dy, distance, sight, visible


def _in_sight(state: CombatState, units: slice) -> jax.Array:
    """`[K, K]` float32 over the `units`: 1 where both live and the column's unit is within
    the row's sight range."""
    pos, alive = state.pos[units], state.health[units] > 0
    sight = jnp.asarray(STATS.sight_range)[state.unit_type[units]][:, None]
    _, _, d = pairwise_offsets(pos, pos)  # not norm(axis=-1): ~25x slower on CPU at 128 units
    return ((d < sight) & alive[:, None] & alive[None, :]).astype(jnp.float32)


class CombatView:
    """The observation half of `Combat` (a mixin: reads the env's sizes and settings)."""

    def _action_features(
        self, last_action: jax.Array, num_foes: int, mirror: bool = False
    ) -> jax.Array:
        """[K, 4] compact last actions: move direction, attacking flag, (target + 1) / foes."""
        attacking = last_action >= FIRST_ATTACK
        target = jnp.where(attacking, (last_action - STOP) / num_foes, 0.0)
        move = jnp.asarray(MOVE_VECTORS)[jnp.minimum(last_action, STOP)]
        if mirror:
            move = move * jnp.array([-1.0, 1.0])
        return jnp.concatenate([move, attacking[:, None], target[:, None]], axis=1)

    def _unit_features(
        self, pos: jax.Array, health: jax.Array, cooldown: jax.Array, unit_type: jax.Array
    ) -> jax.Array:
        """[U, 4 + T] health, cooldown, position, type of every unit (zeros when dead)."""
        max_health = jnp.asarray(STATS.health)[unit_type]
        cool = jnp.clip(cooldown / jnp.asarray(STATS.cooldown)[unit_type], 0.0, 1.0)
        unit = jnp.concatenate(
            [
                jnp.stack([health / max_health, cool], axis=1),
                pos / self.map_size,
                jax.nn.one_hot(unit_type, NUM_UNIT_TYPES, dtype=jnp.float32),
            ],
            axis=1,
        )
        return unit * (health > 0)[:, None]

    def view(self, state: CombatState, side: str = "allies") -> tuple[jax.Array, jax.Array]:
        """One side's observations [K, obs_size(K, F)] and available actions [K, 5 + F].

        "allies": the layout of the class doc; "enemies": the same with the sides swapped and
        the map mirrored across x = W / 2 (what an ally sees on the mirrored map).
        """
        if side not in ("allies", "enemies"):
            raise ValueError(f"side must be 'allies' or 'enemies', got {side!r}")
        n, m = self.num_allies, self.num_enemies
        mirror = side == "enemies"
        k, f = (m, n) if mirror else (n, m)
        arrays = (state.pos, state.health, state.cooldown, state.unit_type, state.last_action)
        if mirror:  # own side first, x reflected
            arrays = tuple(jnp.concatenate([x[n:], x[:n]]) for x in arrays)
            pos = arrays[0] * jnp.array([-1.0, 1.0]) + jnp.array([self.map_size, 0.0])
            arrays = (pos, *arrays[1:])
        pos, health, cooldown, unit_type, last = arrays
        u = n + m
        alive = health > 0
        unit = self._unit_features(pos, health, cooldown, unit_type)
        last_action = self._action_features(last[:k], f, mirror) * alive[:k, None]
        dx, dy, distance, sight, visible = _sight(pos, alive, unit_type, k)  # [K, U]
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
            foe_action = self._action_features(last[k:], k, mirror) * alive[k:, None]
            mate_parts.append(cool[:, :k])
            foe_parts += [jnp.broadcast_to(foe_action[None], (k, f, ACTION_FEATURES)), cool[:, k:]]
        mates = jnp.concatenate(mate_parts, axis=-1)
        mates = mates * (visible[:, :k] & ~np.eye(k, dtype=bool))[..., None]
        foes = jnp.concatenate(foe_parts, axis=-1) * visible[:, k:, None]
        attackable = in_range[:, k:]
        if self.nearest is None:  # every teammate and foe, in index order
            mates = mates[np.arange(k)[:, None], self._others[int(mirror)]]
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

    def _attack_targets(self, state: CombatState, actions: jax.Array, side: str) -> jax.Array:
        """Local view: a side's actions with attack slots (5 + j: the j-th foe it observed at
        the step's start) turned into foe indices (5 + foe), as the world reads them."""
        if self.nearest is None:
            return actions
        n = self.num_allies
        k = n if side == "allies" else self.num_enemies

        def own_first(x: jax.Array) -> jax.Array:
            return x if side == "allies" else jnp.concatenate([x[n:], x[:n]])

        pos, alive, unit_type = (own_first(x) for x in (state.pos, state.alive, state.unit_type))
        *_, distance, _, visible = _sight(pos, alive, unit_type, k)
        _, foe_slot = self._slot_indices(distance, visible, side)
        slot = jnp.clip(actions - FIRST_ATTACK, 0, foe_slot.shape[1] - 1)
        target = jnp.take_along_axis(foe_slot, slot[:, None], axis=1)[:, 0]
        return jnp.where(actions >= FIRST_ATTACK, FIRST_ATTACK + target, actions)

    def _agent_views(self, state: CombatState) -> tuple[jax.Array, jax.Array]:
        """Observations [num_agents, obs_dim] and available actions [num_agents, A]."""
        obs, avail = self.view(state, "allies")
        if self.opponent != "self_play":
            return obs, avail
        enemy_obs, enemy_avail = self.view(state, "enemies")
        d, a = self.spec.obs_dim, self.spec.action_dim

        def pad(x: jax.Array, width: int) -> jax.Array:
            return jnp.pad(x, ((0, 0), (0, width - x.shape[1])))

        obs = jnp.concatenate([pad(obs, d), pad(enemy_obs, d)])
        return obs, jnp.concatenate([pad(avail, a), pad(enemy_avail, a)])

    def _global_state(self, state: CombatState, t: jax.Array) -> jax.Array:
        """[state_dim] unit features, the agents' last actions (world frame)[, t / limit]."""
        n, m = self.num_allies, self.num_enemies
        alive = state.alive[:, None]
        unit = self._unit_features(state.pos, state.health, state.cooldown, state.unit_type)
        last = self._action_features(state.last_action[:n], m) * alive[:n]
        if self.opponent == "self_play":
            enemy_last = self._action_features(state.last_action[n:], n) * alive[n:]
            last = jnp.concatenate([last, enemy_last])
        parts = [unit.reshape(-1), last.reshape(-1)]
        if self.time_in_state:
            parts.append((t / self.spec.episode_limit)[None])
        return jnp.concatenate(parts).astype(jnp.float32)
