"""`Combat`: SMAX-style unit battles, the allies as agents against a scripted enemy team."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marl.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.spaces import Discrete

from .heuristic import ATTACK_MODES, HeuristicMemory, heuristic_actions, initial_memory
from .scenarios import BattleGenerator
from .units import (
    FIRST_ATTACK,
    MOVE_VECTORS,
    NUM_UNIT_TYPES,
    STATS,
    STOP,
    pairwise_offsets,
    parse_composition,
)

SUBSTEPS = 8  # SMAX world_steps_per_env_step
SUBSTEP_TIME = 1.0 / 16  # SMAX time_per_step (seconds)
REWARD_SCALE = 20.0  # SMAC reward_scale_rate: the most an episode can return
KILL_REWARD = 10.0  # SMAC reward_death_value
WIN_REWARD = 200.0  # SMAC reward_win
ACTION_FEATURES = 4  # last action: move x, move y, attacking, (target + 1) / M
OWN_FEATURES = 4 + NUM_UNIT_TYPES + ACTION_FEATURES
ALLY_FEATURES = 5 + NUM_UNIT_TYPES + ACTION_FEATURES
ENEMY_FEATURES = 6 + NUM_UNIT_TYPES
UNIT_STATE_FEATURES = 4 + NUM_UNIT_TYPES
METRICS = ("won", "lost", "allies_alive", "enemies_killed", "damage_dealt")


class CombatState(struct.PyTreeNode):
    """State of a battle (U = N allies + M enemies, allies first).

    pos:          [U, 2] float32 positions in [0, map_size]^2.
    health:       [U] float32 remaining health (shields included); a unit is alive while > 0.
    cooldown:     [U] float32 seconds until the unit's weapon can fire again (0: ready).
    unit_type:    [U] int32 type ids (`units.UNIT_NAMES`).
    last_action:  [U] int32 each unit's last action (STOP after reset).
    enemy_memory: the scripted enemies' HeuristicMemory ([M] targets, [M, 2] waypoints).
    t:            [] int32 steps taken in this episode.
    """

    pos: jax.Array
    health: jax.Array
    cooldown: jax.Array
    unit_type: jax.Array
    last_action: jax.Array
    enemy_memory: HeuristicMemory
    t: jax.Array

    @property
    def alive(self) -> jax.Array:
        """[U] bool: units with health left."""
        return self.health > 0


def _team(units: str | int | Sequence[str], race: str | None, side: str) -> tuple[int, ...]:
    """The fixed types of a team (race None) or its size (a race draws the types)."""
    if race is None:
        if isinstance(units, int):
            raise ValueError(
                f"{side}={units} is a count: give a race (types drawn per episode) or a "
                f"composition such as '{units}m'"
            )
        return parse_composition(units)
    if not isinstance(units, int) or units < 1:
        raise ValueError(f"with race={race!r}, {side} must be a unit count >= 1, got {units!r}")
    return (0,) * units


class Combat(MultiAgentEnv[CombatState]):
    """SMAX-style battle on a continuous square map: N agent units against M scripted units.

    Constructor:
        allies: SMAC shorthand ("3s5z", "64m") or unit names; with `race`, a unit count.
        enemies: likewise; None mirrors `allies`.
        race: None (fixed types) or a key of `units.RACE_WEIGHTS` ("protoss", "terran",
            "zerg", "any"): types drawn per episode as SMACv2 (enemies mirror the allies' types,
            extra enemies drawn from the same weights).
        start_positions: "lines" (SMAC/SMAX), "reflect", "surround", "smacv2" (`scenarios`).
        attack_mode: how an enemy picks a new target in range: "closest", "random", "weakest".
        enemy_shoots: False makes the enemies move but never attack.
        episode_limit: steps before truncation (SMAC's per-map limits in `scenarios`).
        map_size: side of the map (SMAX: 32).
        name: the registry id.

    Dynamics (SMAX): each step is 8 sub-steps of 1/16 s. In a sub-step every living unit
    moves `velocity / 16` along its direction (clipped into the map) or, attacking, hits its
    target if both live, the distance is below its attack range and its weapon is ready; a hit
    removes `damage` health and resets the cooldown to `cooldown + U(-1/16, 2/16)`, otherwise
    the cooldown runs down by 1/16. Attacks resolve simultaneously from the sub-step's start
    positions; then overlapping living units are pushed apart. Dead units never act or move.

    Actions: Discrete(5 + M), int32 [N]: 0 north (+y), 1 east (+x), 2 south, 3 west, 4 stop,
    5 + k attack enemy k. Available: stop always; moves if alive; attack k if alive, enemy k
    alive and closer than the agent's attack range. Dead agents: stop only. Unavailable
    actions are harmless (an out-of-range attack does nothing; dead units do nothing).

    Observation [N, 14 + 15 (N - 1) + 12 M] float32, all zero for a dead agent:
        own (14): health fraction, cooldown fraction, x / W, y / H, type one-hot (6),
            last action (4: move x, move y, attacking, (target + 1) / M, 0 when not attacking);
        each other ally j != i, in index order (15): visible, dx / sight, dy / sight,
            distance / sight, health fraction, type one-hot (6), last action (4);
        each enemy k (12): visible, dx / sight, dy / sight, distance / sight, health fraction,
            attackable (in attack range), type one-hot (6).
        An ally or enemy is visible if both are alive and it is within the observer's sight
        range; invisible ones are all zeros.
    State [10 U + 4 N + 1] float32: per unit (allies then enemies) health fraction, cooldown
        fraction, x / W, y / H, type one-hot (zeros when dead); the allies' last actions (4
        each, zeros when dead); t / episode_limit.

    Reward [N] (the same for every ally): SMAC's, damage dealt to enemies + 10 per kill + 200
    on the winning step, times 20 / (total enemy health + 10 M + 200), so a perfect episode
    returns 20. Terminated when a side is eliminated. Metrics ([] float32): won (all enemies
    dead, an ally alive), lost (all allies dead, an enemy alive), allies_alive (fraction),
    enemies_killed (fraction), damage_dealt (fraction of the enemies' total health).

    Example:
        >>> env = marl.make("combat/3m")
        >>> state, ts = env.reset(jax.random.key(0))
        >>> ts.obs.shape, ts.avail_actions.shape    # (3, 80), (3, 8)
    """

    def __init__(
        self,
        allies: str | int | Sequence[str] = "3m",
        enemies: str | int | Sequence[str] | None = None,
        race: str | None = None,
        start_positions: str = "lines",
        attack_mode: str = "closest",
        enemy_shoots: bool = True,
        episode_limit: int = 60,
        map_size: float = 32.0,
        name: str = "combat/custom",
    ):
        if attack_mode not in ATTACK_MODES:
            raise ValueError(
                f"unknown attack_mode {attack_mode!r}; valid: {', '.join(ATTACK_MODES)}"
            )
        if map_size <= 0:
            raise ValueError(f"map_size must be > 0, got {map_size}")
        ally_types = _team(allies, race, "allies")
        enemy_types = _team(allies if enemies is None else enemies, race, "enemies")
        n, m = len(ally_types), len(enemy_types)
        self.num_allies, self.num_enemies = n, m
        self.attack_mode = attack_mode
        self.enemy_shoots = bool(enemy_shoots)
        self.map_size = float(map_size)
        self.generator = BattleGenerator(
            num_allies=n,
            num_enemies=m,
            unit_types=None if race is not None else ally_types + enemy_types,
            race=race,
            start_positions=start_positions,
            map_size=self.map_size,
        )
        # ally i's view of the other allies, in index order: [N, N - 1]
        self._other_allies = np.array([[j for j in range(n) if j != i] for i in range(n)], int)
        self._other_allies = self._other_allies.reshape(n, n - 1)
        # whom attack action 5 + k of unit u hits: enemy N + k for allies, ally k for enemies
        self._target_offset = np.array([n] * n + [0] * m, np.int32)
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=OWN_FEATURES + ALLY_FEATURES * (n - 1) + ENEMY_FEATURES * m,
            state_dim=UNIT_STATE_FEATURES * (n + m) + ACTION_FEATURES * n + 1,
            action_space=Discrete(FIRST_ATTACK + m),
            groups=(AgentGroup("allies", tuple(range(n))),),
            agent_names=tuple(f"ally_{i}" for i in range(n)),
            episode_limit=int(episode_limit),
            metric_names=METRICS,
        )

    # --- reset and step ----------------------------------------------------------------------
    def reset(self, key: jax.Array) -> tuple[CombatState, TimeStep]:
        pos, unit_type = self.generator(key)
        health = jnp.asarray(STATS.health)[unit_type]
        pos = self._separate(pos, unit_type, health > 0)
        u = self.num_allies + self.num_enemies
        state = CombatState(
            pos=pos,
            health=health,
            cooldown=jnp.zeros((u,), jnp.float32),
            unit_type=unit_type,
            last_action=jnp.full((u,), STOP, jnp.int32),
            enemy_memory=initial_memory(pos[self.num_allies :], self.map_size),
            t=jnp.zeros((), jnp.int32),
        )
        return state, self.observe(state)

    def step_env(
        self, key: jax.Array, state: CombatState, actions: jax.Array
    ) -> tuple[CombatState, TimeStep]:
        key_enemy, key_world = jax.random.split(key)
        n = self.num_allies
        alive = state.alive
        enemy_actions, memory = heuristic_actions(
            key_enemy,
            state.enemy_memory,
            state.pos[n:],
            state.unit_type[n:],
            alive[n:],
            state.pos[:n],
            state.health[:n],
            alive[:n],
            self.attack_mode,
            self.enemy_shoots,
        )
        ally_actions = jnp.clip(actions.astype(jnp.int32), 0, self.spec.action_dim - 1)
        all_actions = jnp.concatenate([ally_actions, enemy_actions])
        pos, health, cooldown = self.simulate(key_world, state, all_actions)
        after = state.replace(
            pos=pos,
            health=health,
            cooldown=cooldown,
            last_action=all_actions,
            enemy_memory=memory,
        )
        reward, terminated = self._outcome(state, after)
        ts = self._timestep(after, state.t + 1, reward, terminated)
        return after, ts

    # --- dynamics -------------------------------------------------------------------------
    def _separate(self, pos: jax.Array, unit_type: jax.Array, alive: jax.Array) -> jax.Array:
        """Push overlapping living units apart (SMAX): each moves half the pair's overlap."""
        radius = jnp.asarray(STATS.radius)[unit_type]
        dx, dy, dist = pairwise_offsets(pos, pos)  # [U, U]: from unit i to unit j
        dist = dist + jnp.eye(pos.shape[0]) + 1e-6
        overlap = jax.nn.relu((radius[:, None] + radius[None, :]) / dist - 1.0)
        overlap = jnp.where(alive[:, None] & alive[None, :], overlap, 0.0)
        push = jnp.stack([jnp.sum(dx * overlap, axis=1), jnp.sum(dy * overlap, axis=1)], axis=1)
        pushed = pos - 0.5 * push
        return jnp.clip(jnp.where(alive[:, None], pushed, pos), 0.0, self.map_size)

    def simulate(
        self, key: jax.Array, state: CombatState, actions: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """The world's SUBSTEPS sub-steps under `actions` [U] int32 of every unit (allies then
        enemies, each in the agents' action layout). Returns pos [U, 2], health [U], cooldown [U].
        """
        unit_type = state.unit_type
        u = unit_type.shape[0]
        step = jnp.asarray(STATS.velocity)[unit_type][:, None] * SUBSTEP_TIME
        reach = jnp.asarray(STATS.attack_range)[unit_type]
        damage = jnp.asarray(STATS.damage)[unit_type]
        base_cooldown = jnp.asarray(STATS.cooldown)[unit_type]
        velocity = jnp.asarray(MOVE_VECTORS)[jnp.minimum(actions, STOP)] * step  # [U, 2]
        attacking = actions >= FIRST_ATTACK
        target = jnp.where(attacking, actions - FIRST_ATTACK + self._target_offset, 0)
        target = jnp.clip(target, 0, u - 1)
        jitter = jax.random.uniform(
            key, (SUBSTEPS, u), minval=-SUBSTEP_TIME, maxval=2 * SUBSTEP_TIME
        )

        def substep(carry, jitter_t):
            pos, health, cooldown = carry
            alive = health > 0
            to_target = pos[target] - pos
            distance = jnp.sqrt(to_target[:, 0] ** 2 + to_target[:, 1] ** 2)
            fires = attacking & alive & alive[target] & (distance < reach) & (cooldown <= 0)
            hits = jnp.zeros((u,), health.dtype).at[target].add(jnp.where(fires, damage, 0.0))
            health = jnp.maximum(health - hits, 0.0)
            cooldown = jnp.where(
                fires, base_cooldown + jitter_t, jnp.maximum(cooldown - SUBSTEP_TIME, 0.0)
            )
            moved = jnp.where(alive[:, None], pos + velocity, pos)
            moved = jnp.clip(moved, 0.0, self.map_size)
            pos = self._separate(moved, unit_type, health > 0)
            return (pos, health, cooldown), None

        carry = (state.pos, state.health, state.cooldown)
        (pos, health, cooldown), _ = jax.lax.scan(substep, carry, jitter)
        return pos, health, cooldown

    def _outcome(self, before: CombatState, after: CombatState) -> tuple[jax.Array, jax.Array]:
        """SMAC's scaled reward of the transition and whether the battle is over."""
        n = self.num_allies
        enemy_max = jnp.sum(jnp.asarray(STATS.health)[after.unit_type[n:]])
        damage = jnp.sum(before.health[n:] - after.health[n:])
        kills = jnp.sum(before.alive[n:] & ~after.alive[n:])
        won = self._won(after) & jnp.any(before.alive[n:])  # the bonus once, on the win
        raw = damage + KILL_REWARD * kills + WIN_REWARD * won
        max_raw = enemy_max + KILL_REWARD * self.num_enemies + WIN_REWARD
        reward = raw * (REWARD_SCALE / max_raw)
        terminated = ~jnp.any(after.alive[:n]) | ~jnp.any(after.alive[n:])
        return jnp.full((n,), reward, jnp.float32), terminated

    def _won(self, state: CombatState) -> jax.Array:
        n = self.num_allies
        return ~jnp.any(state.alive[n:]) & jnp.any(state.alive[:n])

    # --- what agents see ------------------------------------------------------------------
    def metrics(self, state: CombatState) -> dict[str, jax.Array]:
        """The task metrics of `state` ([] float32 each)."""
        n = self.num_allies
        alive = state.alive
        enemy_max = jnp.asarray(STATS.health)[state.unit_type[n:]]
        lost = ~jnp.any(alive[:n]) & jnp.any(alive[n:])
        values = {
            "won": self._won(state),
            "lost": lost,
            "allies_alive": jnp.mean(alive[:n]),
            "enemies_killed": jnp.mean(~alive[n:]),
            "damage_dealt": 1.0 - jnp.sum(state.health[n:]) / jnp.sum(enemy_max),
        }
        return {k: v.astype(jnp.float32) for k, v in values.items()}

    def _action_features(self, last_action: jax.Array) -> jax.Array:
        """[K, 4] compact last actions: move direction, attacking flag, (target + 1) / M."""
        attacking = last_action >= FIRST_ATTACK
        target = jnp.where(attacking, (last_action - STOP) / self.num_enemies, 0.0)
        move = jnp.asarray(MOVE_VECTORS)[jnp.minimum(last_action, STOP)]
        return jnp.concatenate([move, attacking[:, None], target[:, None]], axis=1)

    def _unit_features(self, state: CombatState) -> tuple[jax.Array, jax.Array]:
        """[U, 4 + T] health, cooldown, position, type of every unit (zeros when dead), and
        [N, 4] the allies' last actions (zeros when dead)."""
        n = self.num_allies
        unit_type = state.unit_type
        alive = state.alive[:, None]
        health = state.health / jnp.asarray(STATS.health)[unit_type]
        cooldown = jnp.clip(state.cooldown / jnp.asarray(STATS.cooldown)[unit_type], 0.0, 1.0)
        unit = jnp.concatenate(
            [
                jnp.stack([health, cooldown], axis=1),
                state.pos / self.map_size,
                jax.nn.one_hot(unit_type, NUM_UNIT_TYPES, dtype=jnp.float32),
            ],
            axis=1,
        )
        last_action = self._action_features(state.last_action[:n])
        return unit * alive, last_action * alive[:n]

    def _observations(
        self, state: CombatState, unit: jax.Array, last_action: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """Observations [N, obs_dim] and available actions [N, 5 + M] (layouts: class doc)."""
        n, u = self.num_allies, self.num_allies + self.num_enemies
        alive = state.alive
        dx, dy, distance = pairwise_offsets(state.pos[:n], state.pos)  # [N, U]
        sight = jnp.asarray(STATS.sight_range)[state.unit_type[:n]][:, None]
        reach = jnp.asarray(STATS.attack_range)[state.unit_type[:n]][:, None]
        visible = alive[:n, None] & alive[None, :] & (distance < sight)
        in_range = visible & (distance < reach)
        geometry = jnp.stack(
            [
                visible,
                dx / sight,
                dy / sight,
                distance / sight,
                jnp.broadcast_to(unit[:, 0], (n, u)),
            ],
            axis=-1,
        )  # [N, U, 5]
        type_onehot = jnp.broadcast_to(unit[None, :, 4:], (n, u, NUM_UNIT_TYPES))
        ally_action = jnp.broadcast_to(last_action[None], (n, n, ACTION_FEATURES))
        allies = jnp.concatenate([geometry[:, :n], type_onehot[:, :n], ally_action], axis=-1)
        allies = (allies * visible[:, :n, None])[np.arange(n)[:, None], self._other_allies]
        enemies = jnp.concatenate(
            [geometry[:, n:], in_range[:, n:, None], type_onehot[:, n:]], axis=-1
        )
        enemies = enemies * visible[:, n:, None]
        own = jnp.concatenate([unit[:n], last_action], axis=1)
        obs = jnp.concatenate([own, allies.reshape(n, -1), enemies.reshape(n, -1)], axis=1)
        avail = jnp.concatenate(
            [jnp.broadcast_to(alive[:n, None], (n, STOP)), jnp.ones((n, 1), bool), in_range[:, n:]],
            axis=1,
        )
        return obs, avail

    def _timestep(
        self, state: CombatState, t: jax.Array, reward: jax.Array, terminated: jax.Array
    ) -> TimeStep:
        unit, last_action = self._unit_features(state)
        obs, avail = self._observations(state, unit, last_action)
        global_state = jnp.concatenate(
            [unit.reshape(-1), last_action.reshape(-1), (t / self.spec.episode_limit)[None]]
        )
        return TimeStep(
            obs=obs.astype(jnp.float32),
            state=global_state.astype(jnp.float32),
            avail_actions=avail,
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=state.alive[: self.num_allies],
            metrics=self.metrics(state),
        )

    def observe(self, state: CombatState) -> TimeStep:
        """The TimeStep agents see in `state` (reward 0, not terminated)."""
        return self._timestep(
            state, state.t, jnp.zeros((self.num_allies,), jnp.float32), jnp.zeros((), bool)
        )

    def render_frame(self, state: CombatState) -> dict[str, Any]:
        """Positions, radii, teams, health fractions and liveness, for a viewer."""
        unit_type = np.asarray(state.unit_type)
        return {
            "pos": np.asarray(state.pos),
            "radius": STATS.radius[unit_type],
            "team": (np.arange(unit_type.size) >= self.num_allies).astype(int),
            "health": np.asarray(state.health) / STATS.health[unit_type],
            "alive": np.asarray(state.alive),
            "map_size": self.map_size,
        }
