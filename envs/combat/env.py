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

from .dynamics import CombatDynamics
from .enemies import CombatOpponent, HeuristicOpponent, opponent_part
from .features import METRICS, SIDES, in_sight, outcome_metrics
from .heuristic import ATTACK_MODES, initial_memory
from .observation import CombatObserver
from .reward import REWARD_PARTS, REWARDS, CombatReward, SmacReward
from .scenarios import BattleGenerator
from .state import CombatState
from .units import FIRST_ATTACK, STATS, STOP

__all__ = ["METRICS", "Combat", "CombatState", "outcome_metrics"]


class Combat(MultiAgentEnv[CombatState]):
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
        nearest: None (the SMAX view of every unit) or k: a local, MAgent-style view of the k
            nearest teammates and k nearest foes (`observation.py`).
        see_enemy_actions: also observe what SMAX's benchmark configuration shows (JaxMARL's
            `see_enemy_actions=True`, with the weapon cooldowns SMAX always shows): each seen
            foe's last action and each seen unit's weapon cooldown (`observation.py`).
        time_in_state: append t / episode_limit to the state and end battles at the limit as
            terminated (`EnvSpec.time_limit_terminal`); default: no time in the state, and the
            limit truncates (SMAC's and pymarl's rule; learners bootstrap).
        reward: "smac" (one team reward) or "magent" (each unit its own; `reward.py`).
        name: the registry id.

    The keywords build the battle's parts (`from_parts` takes them built), each a frozen
    dataclass called with the state and its own settings: the generator (`BattleGenerator`:
    the armies, their start, the map), the dynamics (`CombatDynamics`: SMAX's sub-steps of
    movement and fire), the opponent (`HeuristicOpponent`, `SelfPlayOpponent`,
    `PolicyOpponent`), the reward (`SmacReward`, `MagentReward`) and the observer
    (`CombatObserver`: observations, available actions, state, metrics; `observation.py` lays
    out every feature); the viewer is a module (`viewer_module`). `reset` draws a start from
    the generator; `step` has the opponent act, the dynamics move the world, then the reward
    and the observer read the transition.

    Actions: Discrete(5 + M), int32 [N]: 0 north (+y), 1 east (+x), 2 south, 3 west, 4 stop,
    5 + k attack enemy k. Unavailable actions are harmless (an out-of-range attack does
    nothing; dead units do nothing). Terminated when a side is eliminated. Metrics ([] float32):
    won (all enemies dead, an ally alive), lost (all allies dead, an enemy alive), allies_alive
    (fraction), enemies_killed (fraction), damage_dealt (fraction of the enemies' total health).

    Self-play: agents are the N allies then the M enemies (groups "allies", "enemies");
    actions Discrete(5 + max(N, M)) [N + M], each side in its own, mirrored view; observations
    padded to the larger side (`spec.obs_sizes`), available actions to 5 + max(N, M)
    (`action_sizes`); padded actions do nothing. Each side is paid its reward. An enemy sees
    exactly what an ally sees on the mirrored M-vs-N map (`opponents.mirror_env`), so a policy
    trained as the allies there drives the enemies here.

    Policy: the agents are the allies as in heuristic mode; each step the env calls
    `enemy_policy.act(enemy_params, obs, avail, carry, t == 0, key, enemy_greedy)` on the
    enemies' view; the carry lives in `CombatState.enemy_carry` (its `initial_carry()` at
    reset).

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
        enemies_part = opponent_part(
            opponent, attack_mode, enemy_shoots, enemy_policy, enemy_params, enemy_greedy
        )
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; valid: {', '.join(REWARDS)}")
        generator = BattleGenerator.from_teams(allies, enemies, race, start_positions, map_size)
        view = (nearest, see_enemy_actions, time_in_state, episode_limit)
        self._assemble(generator, REWARD_PARTS[reward](), enemies_part, *view, name)
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
        observer's settings and the limit as in the keyword constructor. The dynamics and the
        observer are sized from the generator. `Combat(**keywords)` builds the same parts."""
        env = cls.__new__(cls)
        opponent = HeuristicOpponent() if opponent is None else opponent
        reward = SmacReward() if reward is None else reward
        view = (nearest, see_enemy_actions, time_in_state, episode_limit)
        env._assemble(generator, reward, opponent, *view, name)
        env.attack_mode = getattr(opponent, "attack_mode", "closest")
        if viewer is not None:
            env.viewer_module = viewer
        return env

    def _assemble(
        self,
        generator: BattleGenerator,
        reward: CombatReward,
        opponent: CombatOpponent,
        nearest: int | None,
        see_enemy_actions: bool,
        time_in_state: bool,
        episode_limit: int,
        name: str,
    ) -> None:
        """Hold the parts, the dynamics and the observer sized from the generator (the
        observer's agents: the allies, and the enemies in self-play)."""
        n, m, size = generator.num_allies, generator.num_enemies, float(generator.map_size)
        self.generator, self.reward, self.opponent = generator, reward, opponent
        self.dynamics = CombatDynamics(n, m, size, kill_credit=reward.per_unit)
        self.observer = CombatObserver(
            num_allies=n,
            num_enemies=m,
            map_size=size,
            nearest=None if nearest is None else int(nearest),
            see_enemy_actions=bool(see_enemy_actions),
            time_in_state=bool(time_in_state),
            episode_limit=int(episode_limit),
            self_play=opponent.kind == "self_play",
        )
        self.spec = self._make_spec(name)

    def _make_spec(self, name: str) -> EnvSpec:
        obs, n, m = self.observer, self.num_allies, self.num_enemies
        groups: tuple[AgentGroup, ...] = (AgentGroup("allies", tuple(range(n))),)
        names = tuple(f"ally_{i}" for i in range(n))
        sizes = {s: (obs.obs_width(s), FIRST_ATTACK + obs.slots(s)[1]) for s in SIDES}
        per_agent = [sizes["allies"]] * n
        # SMAC's team reward: one for all the allies, or one per side in self-play
        rewards: dict[str, Any] = {"shared_reward": self.reward.shared}
        if obs.self_play:
            groups += (AgentGroup("enemies", tuple(range(n, n + m))),)
            names += tuple(f"enemy_{k}" for k in range(m))
            per_agent += [sizes["enemies"]] * m
            rewards = {"team_rewards": SIDES if self.reward.shared else ()}
        return EnvSpec(
            name=name,
            num_agents=obs.num_agents,
            obs_dim=obs.obs_dim,
            state_dim=obs.state_dim,
            action_space=Discrete(obs.action_dim),
            groups=groups,
            agent_names=names,
            episode_limit=obs.episode_limit,
            metric_names=METRICS,
            lower_is_better=("lost",),
            headline_metric="won",
            state_bounded=True,
            time_limit_terminal=obs.time_in_state,
            obs_sizes=tuple(width for width, _ in per_agent),
            action_sizes=tuple(actions for _, actions in per_agent),
            **rewards,
        )

    # --- the battle's sizes and views (the parts') --------------------------------------------
    @property
    def num_allies(self) -> int:
        return self.generator.num_allies

    @property
    def num_enemies(self) -> int:
        return self.generator.num_enemies

    @property
    def map_size(self) -> float:
        return self.observer.map_size

    @property
    def nearest(self) -> int | None:
        return self.observer.nearest

    @property
    def see_enemy_actions(self) -> bool:
        return self.observer.see_enemy_actions

    @property
    def time_in_state(self) -> bool:
        return self.observer.time_in_state

    def slots(self, side: str = "allies") -> tuple[int, int]:
        """(teammates, foes) a unit of `side` observes (`CombatObserver.slots`)."""
        return self.observer.slots(side)

    def obs_width(self, side: str = "allies") -> int:
        """Observation width of a unit of `side` (unpadded)."""
        return self.observer.obs_width(side)

    def view(self, state: CombatState, side: str = "allies") -> tuple[jax.Array, jax.Array]:
        """One side's observations and available actions (`CombatObserver.view`)."""
        return self.observer.view(state, side)

    # --- reset and step -----------------------------------------------------------------------
    def reset(self, key: jax.Array) -> tuple[CombatState, TimeStep]:
        pos, unit_type = self.generator(key)
        health = jnp.asarray(STATS.health)[unit_type]
        pos = self.dynamics.separate(pos, unit_type, health > 0)
        u = self.num_allies + self.num_enemies
        state = CombatState(
            pos=pos,
            health=health,
            cooldown=jnp.zeros((u,), jnp.float32),
            unit_type=unit_type,
            last_action=jnp.full((u,), STOP, jnp.int32),
            enemy_memory=initial_memory(pos[self.num_allies :], self.map_size),
            t=jnp.zeros((), jnp.int32),
            enemy_carry=self.opponent.initial_carry(),
        )
        return state, self.observe(state)

    def step_env(
        self, key: jax.Array, state: CombatState, actions: jax.Array
    ) -> tuple[CombatState, TimeStep]:
        key_enemy, key_world = jax.random.split(key)
        n, observer = self.num_allies, self.observer
        actions = jnp.clip(actions.astype(jnp.int32), 0, self.spec.action_dim - 1)
        sizes = jnp.asarray(self.spec.action_sizes)
        actions = jnp.where(actions < sizes, actions, STOP)  # padded actions: stop
        ally_actions = observer.attack_targets(state, actions[:n], "allies")
        enemy_actions, memory, carry = self.opponent.act(key_enemy, state, actions, observer)
        world = jnp.concatenate([ally_actions, enemy_actions])
        after, shots, kills = self.dynamics(key_world, state, world)
        after = after.replace(enemy_memory=memory, enemy_carry=carry)
        reward = self.reward(state, after, world, shots, kills, n, observer.self_play)
        terminated = ~jnp.any(after.alive[:n]) | ~jnp.any(after.alive[n:])
        return after, observer(after, state.t + 1, reward, terminated)

    def observe(self, state: CombatState) -> TimeStep:
        """The TimeStep agents see in `state` (reward 0, not terminated)."""
        zeros = jnp.zeros((self.spec.num_agents,), jnp.float32)
        return self.observer(state, state.t, zeros, jnp.zeros((), bool))

    def metrics(self, state: CombatState) -> dict[str, jax.Array]:
        """The task metrics of `state` ([] float32 each), from the allies' side."""
        return self.observer.metrics(state)

    # --- neighbours, contests, frames ---------------------------------------------------------
    def neighbourhood(self, state: CombatState) -> jax.Array:
        """Living teammates within each living agent's sight range (those it observes)."""
        return super().neighbourhood(state) * in_sight(state, slice(0, self.spec.num_agents))

    def enemy_neighbourhood(self, state: CombatState) -> jax.Array:
        """`[M, M]`: `neighbourhood` for the enemies (what a mean-field `enemy_policy` gets)."""
        return self.observer.enemy_neighbourhood(state)

    @property
    def contest(self) -> bool:
        """Self-play battles are contests: each team a side."""
        return self.observer.self_play

    @property
    def mirrored_sides(self) -> bool:
        """Self-play between the same armies (drawn per episode with a race: the enemies
        mirror the allies' types): either side's policy can drive the other."""
        n, m, types = self.num_allies, self.num_enemies, self.generator.unit_types
        same = n == m and (types is None or list(types[:n]) == list(types[n:]))
        return self.observer.self_play and same

    def contest_score(self, episode: dict[str, jax.Array]) -> jax.Array:
        """The allies' score: the side with more units alive at the end wins (eliminating the
        other side, or holding more at the time limit, as MAgent's battle counts), equal
        numbers draw."""
        allies = jnp.round(episode["allies_alive"] * self.num_allies)
        enemies = jnp.round((1.0 - episode["enemies_killed"]) * self.num_enemies)
        return 0.5 + 0.5 * jnp.sign(allies - enemies)

    def render_frame(self, state: CombatState) -> dict[str, Any]:
        """What `viewer.py` draws: positions, radii, teams, health fractions, liveness, and
        `target` [U] int: whom each unit attacked in the step that led to `state`, else -1
        (`CombatDynamics.attacks`)."""
        unit_type = np.asarray(state.unit_type)
        return {
            "pos": np.asarray(state.pos),
            "radius": STATS.radius[unit_type],
            "team": (np.arange(unit_type.size) >= self.num_allies).astype(int),
            "health": np.asarray(state.health) / STATS.health[unit_type],
            "alive": np.asarray(state.alive),
            "target": self.dynamics.attacks(state),
            "map_size": self.map_size,
        }
