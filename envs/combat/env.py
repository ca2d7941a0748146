"""`Combat`: SMAX-style unit battles; the allies are agents, the enemies scripted (heuristic),
agents too (self-play) or driven by a given policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.learner import Policy
from marl.core.spaces import Discrete

from .dynamics import SUBSTEP_TIME, SUBSTEPS, CombatDynamics
from .enemies import (
    CombatOpponent,
    HeuristicOpponent,
    opponent_part,
)
from .heuristic import ATTACK_MODES, initial_memory
from .observation import (
    ACTION_FEATURES,
    ALLY_FEATURES,
    ENEMY_FEATURES,
    OWN_FEATURES,
    SEEN_ALLY_FEATURES,
    SEEN_ENEMY_FEATURES,
    UNIT_STATE_FEATURES,
    CombatView,
    _in_sight,
    _others,
)
from .reward import REWARD_PARTS, REWARDS, CombatReward, SmacReward
from .scenarios import BattleGenerator, team_types
from .state import CombatState
from .units import FIRST_ATTACK, STATS, STOP

METRICS = ("won", "lost", "allies_alive", "enemies_killed", "damage_dealt")


def outcome_metrics(alive: jax.Array, num_allies: int) -> dict[str, jax.Array]:
    """A battle's outcome from the allies' side, [] float32 each, from `alive` ([U] bool, allies
    first): won (all enemies dead and an ally alive; mutual destruction is no win), lost,
    allies_alive and enemies_killed (fractions)."""
    allies, enemies = jnp.any(alive[:num_allies]), jnp.any(alive[num_allies:])
    values = {
        "won": ~enemies & allies,
        "lost": ~allies & enemies,
        "allies_alive": jnp.mean(alive[:num_allies]),
        "enemies_killed": jnp.mean(~alive[num_allies:]),
    }
    return {k: v.astype(jnp.float32) for k, v in values.items()}


class Combat(CombatView, CombatDynamics, MultiAgentEnv[CombatState]):
    """SMAX-style battle on a continuous square map: N ally units against M enemy units.

    Constructor:
        allies: SMAC shorthand ("3s5z", "64m") or unit names; with `race`, a unit count.
        enemies: likewise; None mirrors `allies`.
        race: None (fixed types) or a key of `units.RACE_WEIGHTS` ("protoss", "terran",
            "zerg", "any"): types drawn per episode as SMACv2 (enemies mirror the allies' types,
            extra enemies drawn from the same weights).
        start_positions: "lines" (SMAC/SMAX), "reflect", "surround", "smacv2" (`scenarios`).
        attack_mode: how a heuristic enemy picks a new target in range: "closest", "random",
            "weakest".
        enemy_shoots: False makes the heuristic enemies move but never attack.
        episode_limit: steps before truncation (SMAC's per-map limits in `scenarios`).
        map_size: side of the map (SMAX: 32).
        opponent: who drives the enemies: "heuristic" (`heuristic.py`), "self_play" (they are
            agents too) or "policy" (`enemy_policy`).
        enemy_policy: a `marl.core.learner.Policy` acting for the M enemies (opponent "policy").
        enemy_params: its parameters (any pytree, e.g. a learner's trained actor parameters).
        enemy_greedy: the enemy policy acts greedily (else it samples).
        nearest: None (the SMAX view of every unit, above) or k: a local, MAgent-style view
            of the k nearest teammates and k nearest foes (see below).
        see_enemy_actions: also observe what SMAX's benchmark configuration shows (JaxMARL's
            `see_enemy_actions=True`, with the weapon cooldowns SMAX always shows): each seen
            foe's last action and each seen unit's weapon cooldown (see below).
        time_in_state: append t / episode_limit to the state and end battles at the limit as
            terminated (`EnvSpec.time_limit_terminal`); default: no time in the state, and the
            limit truncates (SMAC's and pymarl's rule; learners bootstrap).
        reward: "smac" (one team reward) or "magent" (each unit its own; see Reward below).
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
    With `see_enemy_actions`, after those blocks [(N - 1) + 5 M more]: each other ally's
        cooldown fraction (1), then each enemy's last action (4, as above, its target counted
        among the allies: (target + 1) / N) and cooldown fraction (1); zeros where invisible.
    State [10 U + 4 N (+ 1)] float32: per unit (allies then enemies) health fraction, cooldown
        fraction, x / W, y / H, type one-hot (zeros when dead); the allies' last actions (4
        each, zeros when dead); t / episode_limit with `time_in_state`.

    Reward [N] (the same for every ally): SMAC's, damage dealt to enemies + 10 per kill + 200
    on the winning step, times 20 / (total enemy health + 10 M + 200), so a perfect episode
    returns 20. With `reward="magent"` each unit earns its own instead, as in MAgent's battle
    (Yang et al. 2018): -0.005 a step, -0.1 for an attack action, +0.2 when it fires at a foe,
    +5 a kill, -0.1 on death (`spec.shared_reward` is then False). Terminated when a side is
    eliminated. Metrics ([] float32): won (all enemies
    dead, an ally alive), lost (all allies dead, an enemy alive), allies_alive (fraction),
    enemies_killed (fraction), damage_dealt (fraction of the enemies' total health).

    The enemies' view (self-play and policy modes) is the allies' layout above with the sides
    swapped and the map mirrored across x = W / 2: enemy k is "own unit k", the other enemies
    are its teammates, ally j is its foe j (attack 5 + j), x / W reads 1 - x / W, dx reads -dx
    and moves 1 and 3 mean west and east. So an enemy of an N-vs-M map sees exactly what an
    ally sees on the mirrored M-vs-N map (`opponents.mirror_env`): a policy trained as the
    allies there drives the enemies here. Obs [M, 14 + 15 (M - 1) + 12 N], avail [M, 5 + N].

    Self-play: agents are the N allies then the M enemies (groups "allies", "enemies");
    actions Discrete(5 + max(N, M)) [N + M], each side in its own view; observations padded to
    the larger side (`spec.obs_sizes`), available actions to 5 + max(N, M) (`action_sizes`);
    padded actions do nothing. Rewards: allies as above, enemies the mirror (damage dealt to
    the allies, 10 per ally killed, 200 on the enemies' win, scaled by the allies' totals).
    State [14 U (+ 1)]: the unit features, every unit's last action (world frame)[, t / limit].
    Metrics as above, from the allies' side.

    Local view (`nearest=k`): each unit observes only its min(k, N - 1) nearest teammates and
    min(k, M) nearest foes, nearest first (visible ones before invisible ones, which are zeros),
    with the per-unit features above; attack action 5 + j targets the foe in slot j of the
    unit's observation at the step's start. Obs [N, 14 + 15 min(k, N - 1) + 12 min(k, M)],
    actions Discrete(5 + min(k, M)). The observation and the network then stop growing with
    the battle's size (`combat/battle64`); the state and last-action features stay in world
    terms.

    Policy: the agents are the allies as in heuristic mode (same spec); each step the env
    calls `enemy_policy.act(enemy_params, obs, avail, carry, t == 0, key, enemy_greedy)` on
    the enemies' view; the carry lives in `CombatState.enemy_carry` (its `initial_carry()`
    at reset).

    Example:
        >>> env = marl.make("combat/3m")
        >>> state, ts = env.reset(jax.random.key(0))
        >>> ts.obs.shape, ts.avail_actions.shape    # (3, 80), (3, 8)
    """

    viewer_module = "marl.envs.combat.viewer"
    reference_policy = "marl.baselines.combat:focus_fire_policy"

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
        opponent: str = "heuristic",
        enemy_policy: Policy | None = None,
        enemy_params: Any = None,
        enemy_greedy: bool = True,
        nearest: int | None = None,
        see_enemy_actions: bool = False,
        time_in_state: bool = False,
        reward: str = "smac",
        name: str = "combat/custom",
    ):
        if attack_mode not in ATTACK_MODES:
            raise ValueError(
                f"unknown attack_mode {attack_mode!r}; valid: {', '.join(ATTACK_MODES)}"
            )
        if map_size <= 0:
            raise ValueError(f"map_size must be > 0, got {map_size}")
        if nearest is not None and int(nearest) < 1:
            raise ValueError(f"nearest must be None or >= 1, got {nearest}")
        enemies_part = opponent_part(
            opponent, attack_mode, enemy_shoots, enemy_policy, enemy_params, enemy_greedy
        )
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; valid: {', '.join(REWARDS)}")
        ally_types = team_types(allies, race, "allies")
        enemy_types = team_types(allies if enemies is None else enemies, race, "enemies")
        generator = BattleGenerator(
            num_allies=len(ally_types),
            num_enemies=len(enemy_types),
            unit_types=None if race is not None else ally_types + enemy_types,
            race=race,
            start_positions=start_positions,
            map_size=float(map_size),
        )
        self._setup(
            generator,
            REWARD_PARTS[reward](),
            enemies_part,
            nearest=nearest,
            see_enemy_actions=see_enemy_actions,
            time_in_state=time_in_state,
            episode_limit=episode_limit,
            name=name,
        )
        self.attack_mode = attack_mode  # what `opponents.mirror_env` gives the mirrored map

    @classmethod
    def from_parts(
        cls,
        generator: BattleGenerator,
        reward: CombatReward | None = None,
        opponent: CombatOpponent | None = None,
        *,
        nearest: int | None = None,
        see_enemy_actions: bool = False,
        time_in_state: bool = False,
        episode_limit: int = 60,
        viewer: str | None = None,
        name: str = "combat/custom",
    ) -> Combat:
        """A battle composed of parts: `generator` (a `BattleGenerator`: the armies, their start
        and the map), `reward` (`SmacReward()`, the default, or `MagentReward()`), `opponent`
        (`HeuristicOpponent()`, the default, `SelfPlayOpponent()` or `PolicyOpponent(policy,
        params)`) and `viewer` (a viewer module's path; default `viewer_module`); the
        observation options and the limit as in the keyword constructor. `Combat(**keywords)`
        builds the same parts from its flat keywords."""
        if nearest is not None and int(nearest) < 1:
            raise ValueError(f"nearest must be None or >= 1, got {nearest}")
        env = cls.__new__(cls)
        env._setup(
            generator,
            SmacReward() if reward is None else reward,
            HeuristicOpponent() if opponent is None else opponent,
            nearest=nearest,
            see_enemy_actions=see_enemy_actions,
            time_in_state=time_in_state,
            episode_limit=episode_limit,
            name=name,
        )
        env.attack_mode = getattr(env.enemies, "attack_mode", "closest")
        if viewer is not None:
            env.viewer_module = viewer
        return env

    def _setup(
        self,
        generator: BattleGenerator,
        reward: CombatReward,
        enemies: CombatOpponent,
        nearest: int | None,
        see_enemy_actions: bool,
        time_in_state: bool,
        episode_limit: int,
        name: str,
    ) -> None:
        """Every attribute of the env, from its parts."""
        self.generator, self.reward, self.enemies = generator, reward, enemies
        self.opponent = enemies.kind  # "heuristic", "self_play" or "policy"
        n, m = generator.num_allies, generator.num_enemies
        self.num_allies, self.num_enemies = n, m
        types = generator.unit_types
        # the same armies (drawn per episode with `race`: the enemies mirror the allies' types)
        self._same_armies = n == m and (types is None or list(types[:n]) == list(types[n:]))
        self.nearest = None if nearest is None else int(nearest)
        self.see_enemy_actions = bool(see_enemy_actions)
        self.time_in_state = bool(time_in_state)
        self.map_size = float(generator.map_size)
        self._others = (_others(n), _others(m))  # each side's teammates of each unit
        # whom attack action 5 + k of unit u hits: enemy N + k for allies, ally k for enemies
        self._target_offset = np.array([n] * n + [0] * m, np.int32)
        self.spec = self._make_spec(name, int(episode_limit))

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

    def _make_spec(self, name: str, episode_limit: int) -> EnvSpec:
        n, m = self.num_allies, self.num_enemies
        units = UNIT_STATE_FEATURES * (n + m) + int(self.time_in_state)
        timing = {"time_limit_terminal": self.time_in_state}
        ally_foes, enemy_foes = self.slots("allies")[1], self.slots("enemies")[1]
        if self.opponent != "self_play":
            return EnvSpec(
                name=name,
                num_agents=n,
                obs_dim=self.obs_width("allies"),
                state_dim=units + ACTION_FEATURES * n,
                action_space=Discrete(FIRST_ATTACK + ally_foes),
                groups=(AgentGroup("allies", tuple(range(n))),),
                agent_names=tuple(f"ally_{i}" for i in range(n)),
                episode_limit=episode_limit,
                metric_names=METRICS,
                lower_is_better=("lost",),
                headline_metric="won",
                state_bounded=True,
                shared_reward=self.reward.shared,  # SMAC's team reward
                **timing,
            )
        obs_sizes = (self.obs_width("allies"),) * n + (self.obs_width("enemies"),) * m
        return EnvSpec(
            name=name,
            num_agents=n + m,
            obs_dim=max(obs_sizes),
            state_dim=units + ACTION_FEATURES * (n + m),
            action_space=Discrete(FIRST_ATTACK + max(ally_foes, enemy_foes)),
            groups=(
                AgentGroup("allies", tuple(range(n))),
                AgentGroup("enemies", tuple(range(n, n + m))),
            ),
            agent_names=tuple(f"ally_{i}" for i in range(n))
            + tuple(f"enemy_{k}" for k in range(m)),
            episode_limit=episode_limit,
            metric_names=METRICS,
            lower_is_better=("lost",),
            headline_metric="won",
            state_bounded=True,
            # SMAC's team reward, one per side (the sides' differ)
            team_rewards=("allies", "enemies") if self.reward.shared else (),
            **timing,
            obs_sizes=obs_sizes,
            action_sizes=(FIRST_ATTACK + ally_foes,) * n + (FIRST_ATTACK + enemy_foes,) * m,
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
            enemy_carry=self.enemies.initial_carry(),
        )
        return state, self.observe(state)

    def step_env(
        self, key: jax.Array, state: CombatState, actions: jax.Array
    ) -> tuple[CombatState, TimeStep]:
        key_enemy, key_world = jax.random.split(key)
        n = self.num_allies
        agent_actions = jnp.clip(actions.astype(jnp.int32), 0, self.spec.action_dim - 1)
        sizes = jnp.asarray(self.spec.action_sizes)
        agent_actions = jnp.where(agent_actions < sizes, agent_actions, STOP)  # padding: stop
        ally_actions = self._attack_targets(state, agent_actions[:n], "allies")
        enemy_actions, memory, carry = self.enemies.act(self, key_enemy, state, agent_actions)
        all_actions = jnp.concatenate([ally_actions, enemy_actions])
        pos, health, cooldown, shots, kills = self.simulate(key_world, state, all_actions)
        after = state.replace(
            pos=pos,
            health=health,
            cooldown=cooldown,
            last_action=all_actions,
            enemy_memory=memory,
            enemy_carry=carry,
        )
        reward, terminated = self._outcome(state, after, all_actions, shots, kills)
        ts = self._timestep(after, state.t + 1, reward, terminated)
        return after, ts

    def _outcome(
        self,
        before: CombatState,
        after: CombatState,
        actions: jax.Array,
        shots: jax.Array,
        kills: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        """The agents' rewards [num_agents] of the transition (the reward part's) and whether
        the battle is over."""
        n = self.num_allies
        self_play = self.opponent == "self_play"
        reward = self.reward(before, after, actions, shots, kills, n, self_play)
        terminated = ~jnp.any(after.alive[:n]) | ~jnp.any(after.alive[n:])
        return reward, terminated

    # --- what agents see ------------------------------------------------------------------
    def metrics(self, state: CombatState) -> dict[str, jax.Array]:
        """The task metrics of `state` ([] float32 each), from the allies' side."""
        n = self.num_allies
        enemy_max = jnp.asarray(STATS.health)[state.unit_type[n:]]
        damage = 1.0 - jnp.sum(state.health[n:]) / jnp.sum(enemy_max)
        return {**outcome_metrics(state.alive, n), "damage_dealt": damage.astype(jnp.float32)}

    def _timestep(
        self, state: CombatState, t: jax.Array, reward: jax.Array, terminated: jax.Array
    ) -> TimeStep:
        obs, avail = self._agent_views(state)
        return TimeStep(
            obs=obs,
            state=self._global_state(state, t),
            avail_actions=avail,
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            alive=state.alive[: self.spec.num_agents],
            metrics=self.metrics(state),
        )

    def observe(self, state: CombatState) -> TimeStep:
        """The TimeStep agents see in `state` (reward 0, not terminated)."""
        zeros = jnp.zeros((self.spec.num_agents,), jnp.float32)
        return self._timestep(state, state.t, zeros, jnp.zeros((), bool))

    @property
    def contest(self) -> bool:
        """Self-play battles are contests: each team a side."""
        return self.opponent == "self_play"

    @property
    def mirrored_sides(self) -> bool:
        """Self-play between the same armies: either side's policy can drive the other."""
        return self.opponent == "self_play" and self._same_armies

    def contest_score(self, episode: dict[str, jax.Array]) -> jax.Array:
        """The allies' score: the side with more units alive at the end wins (eliminating the
        other side, or holding more at the time limit, as MAgent's battle counts), equal
        numbers draw."""
        allies = jnp.round(episode["allies_alive"] * self.num_allies)
        enemies = jnp.round((1.0 - episode["enemies_killed"]) * self.num_enemies)
        return 0.5 + 0.5 * jnp.sign(allies - enemies)

    def neighbourhood(self, state: CombatState) -> jax.Array:
        """Living teammates within each living agent's sight range (those it observes)."""
        return super().neighbourhood(state) * _in_sight(state, slice(0, self.spec.num_agents))

    def enemy_neighbourhood(self, state: CombatState) -> jax.Array:
        """`[M, M]`: `neighbourhood` for the enemies (what a mean-field `enemy_policy` gets)."""
        m = self.num_enemies
        seen = _in_sight(state, slice(self.num_allies, self.num_allies + m))
        return seen * (1.0 - jnp.eye(m))

    def render_frame(self, state: CombatState) -> dict[str, Any]:
        """What `viewer.py` draws: positions, radii, teams, health fractions, liveness, and
        `target` [U] int: whom each unit attacked in the step that led to `state` (its last
        action an attack on a unit within its reach, allowing for the target's move), else -1.
        """
        unit_type = np.asarray(state.unit_type)
        pos = np.asarray(state.pos)
        last = np.asarray(state.last_action)
        u = unit_type.size
        attacking = last >= FIRST_ATTACK
        target = np.clip(last - FIRST_ATTACK + self._target_offset, 0, u - 1)
        distance = np.linalg.norm(pos[target] - pos, axis=1)
        slack = STATS.velocity[unit_type[target]] * SUBSTEPS * SUBSTEP_TIME
        near = distance < STATS.attack_range[unit_type] + slack
        return {
            "pos": pos,
            "radius": STATS.radius[unit_type],
            "team": (np.arange(u) >= self.num_allies).astype(int),
            "health": np.asarray(state.health) / STATS.health[unit_type],
            "alive": np.asarray(state.alive),
            "target": np.where(attacking & near, target, -1),
            "map_size": self.map_size,
        }
