"""Who drives the enemies of a battle: the opponent parts of `Combat`.

Each part says what the M enemies do in a step, from the battle's state, the agents' actions
and the battle's observer part (the enemies' view, the local view's attack slots):
`act(key, state, agent_actions, observer) -> (enemy actions [M] int32 in the world frame, the
heuristic's memory, the enemy policy's carry)`.

- `HeuristicOpponent(attack_mode, shoots)`: SMAX's scripted enemies (`heuristic.py`);
- `SelfPlayOpponent()`: the enemies are agents too, acting in their mirrored view;
- `PolicyOpponent(policy, params, greedy)`: a `marl.core.learner.Policy` acts for them from
  their mirrored view (a policy trained as the allies of the mirrored map, `opponents.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from marl.core.learner import Policy

from .heuristic import ATTACK_MODES, heuristic_actions
from .observation import CombatObserver
from .state import CombatState
from .units import FIRST_ATTACK

OPPONENTS = ("heuristic", "self_play", "policy")
EAST, WEST = 1, 3  # the move actions a side's mirrored view swaps


def mirror_moves(actions: jax.Array) -> jax.Array:
    """Swap east and west moves (an involution between a side's view and the world)."""
    return jnp.where((actions == EAST) | (actions == WEST), EAST + WEST - actions, actions)


@dataclass(frozen=True)
class HeuristicOpponent:
    """SMAX's scripted enemies: each attacks a target in range (picked by `attack_mode`:
    "closest", "random" or "weakest") or moves toward the allies; `shoots=False` makes them
    move but never attack."""

    attack_mode: str = "closest"
    shoots: bool = True
    kind: ClassVar[str] = "heuristic"

    def __post_init__(self) -> None:
        if self.attack_mode not in ATTACK_MODES:
            raise ValueError(
                f"unknown attack_mode {self.attack_mode!r}; valid: {', '.join(ATTACK_MODES)}"
            )

    def initial_carry(self) -> None:
        return None

    def act(
        self,
        key: jax.Array,
        state: CombatState,
        agent_actions: jax.Array,
        observer: CombatObserver,
    ) -> tuple[jax.Array, Any, Any]:
        n = observer.num_allies
        actions, memory = heuristic_actions(
            key,
            state.enemy_memory,
            state.pos[n:],
            state.unit_type[n:],
            state.alive[n:],
            state.pos[:n],
            state.health[:n],
            state.alive[:n],
            self.attack_mode,
            self.shoots,
        )
        return actions, memory, state.enemy_carry


@dataclass(frozen=True)
class SelfPlayOpponent:
    """The enemies are agents too (after the allies), each acting in its mirrored view."""

    kind: ClassVar[str] = "self_play"

    def initial_carry(self) -> None:
        return None

    def act(
        self,
        key: jax.Array,
        state: CombatState,
        agent_actions: jax.Array,
        observer: CombatObserver,
    ) -> tuple[jax.Array, Any, Any]:
        n = observer.num_allies
        actions = mirror_moves(observer.attack_targets(state, agent_actions[n:], "enemies"))
        return actions, state.enemy_memory, state.enemy_carry


@dataclass(frozen=True, eq=False)
class PolicyOpponent:
    """A policy acting for the enemies from their mirrored view: each step
    `policy.act(params, obs, avail, carry, t == 0, key, greedy)`, its carry kept in
    `CombatState.enemy_carry` (`policy.initial_carry()` at reset)."""

    policy: Policy
    params: Any = None  # any pytree, e.g. a learner's trained actor parameters
    greedy: bool = True  # act greedily (else sample)
    kind: ClassVar[str] = "policy"

    def __post_init__(self) -> None:
        policy = self.policy
        if not (
            callable(getattr(policy, "act", None))
            and callable(getattr(policy, "initial_carry", None))
        ):
            raise TypeError(f"enemy_policy must be a marl.core.learner.Policy, got {policy!r}")

    def initial_carry(self) -> Any:
        return self.policy.initial_carry()

    def act(
        self,
        key: jax.Array,
        state: CombatState,
        agent_actions: jax.Array,
        observer: CombatObserver,
    ) -> tuple[jax.Array, Any, Any]:
        obs, avail = observer.view(state, "enemies")
        start = state.t == 0
        policy = self.policy
        extra = {"neighbours": observer.enemy_neighbourhood(state)} if policy.neighbourhood else {}
        actions, carry = policy.act(
            self.params, obs, avail, state.enemy_carry, start, key, self.greedy, **extra
        )
        foes = observer.slots("enemies")[1]
        actions = jnp.clip(jnp.asarray(actions, jnp.int32), 0, FIRST_ATTACK + foes - 1)
        actions = mirror_moves(observer.attack_targets(state, actions, "enemies"))
        return actions, state.enemy_memory, carry


CombatOpponent = HeuristicOpponent | SelfPlayOpponent | PolicyOpponent


def opponent_part(
    opponent: str,
    attack_mode: str = "closest",
    enemy_shoots: bool = True,
    enemy_policy: Policy | None = None,
    enemy_params: Any = None,
    enemy_greedy: bool = True,
) -> CombatOpponent:
    """The part `Combat`'s flat opponent keywords name; inconsistent ones are refused in one
    line naming the valid choices."""
    if opponent not in OPPONENTS:
        raise ValueError(f"unknown opponent {opponent!r}; valid: {', '.join(OPPONENTS)}")
    if opponent == "policy" and enemy_policy is None:
        raise ValueError("opponent='policy' needs enemy_policy (a marl.core.learner.Policy)")
    if opponent != "policy" and enemy_policy is not None:
        raise ValueError(f"enemy_policy is only used with opponent='policy', not {opponent!r}")
    part: CombatOpponent
    if opponent == "policy":
        assert enemy_policy is not None
        part = PolicyOpponent(enemy_policy, enemy_params, bool(enemy_greedy))  # checks the type
    if opponent != "heuristic" and not enemy_shoots:
        raise ValueError("enemy_shoots=False only applies to opponent='heuristic'")
    if opponent == "self_play":
        part = SelfPlayOpponent()
    elif opponent == "heuristic":
        part = HeuristicOpponent(attack_mode, bool(enemy_shoots))
    return part
