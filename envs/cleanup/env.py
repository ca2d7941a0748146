"""Ocean macroplastic cleanup: vessels collect drifting plastic, each rewarded for its own
catch (and, by a dial, the team's), optionally signalling to one another with one bit."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep

from .dynamics import Current, Drift, Fleet, action_space, decode
from .generator import OceanGenerator
from .observation import METRICS, OWN_FEATURES, Observer
from .reward import CleanupReward
from .state import CleanupState

Array = jax.Array

__all__ = ["METRICS", "OWN_FEATURES", "Cleanup", "CleanupState"]

# the keyword constructor's keywords that a part's field takes under another name
RENAMED: dict[type, dict[str, str]] = {
    Current: {"kind": "current", "speed": "current_speed", "direction": "current_direction"}
}
CONVERT = {"float": float, "int": int, "bool": bool, "str": str, "tuple": tuple}


class Cleanup(MultiAgentEnv[CleanupState]):
    """Vessels (agents) sail a square sea `[0, size]^2` collecting plastic that sources emit and
    currents carry. Lengths are in sea units; speeds per step.

    Constructor:
        num_vessels: N.
        size: side of the sea.
        current: "calm", "uniform", "gyres" or "double_gyre" (`ocean.current_at`), with
            current_speed, current_direction (uniform), gyres (nx, ny), epsilon and omega
            (double gyre).
        capacity: plastic slots P (static); pieces beyond it are not spawned (not counted).
        initial_plastic: pieces scattered at reset in `patches` Gaussian patches of std
            `patch_std`.
        num_sources: river mouths on the coast (random places per episode), each emitting a
            piece with probability `source_rate` per step, `source_spread` around it (folded
            into the sea).
        diffusion: std of the random walk added to the drift, per step.
        remove_at_boundary: pieces leaving the sea are removed (counted); else held at the coast.
        max_speed, accel, max_turn: a vessel's top speed, throttle step and turn per step.
        drift_vessels: vessels are carried by the current too.
        collect_radius: a vessel picks up the pieces within it (the nearest vessel with room
            takes a piece).
        hold_capacity: pieces a vessel can carry (0: unlimited); a full vessel unloads at the
            port (`port`, within `port_radius`).
        vessel_radius, collision_penalty: vessels closer than twice the radius collide; each
            colliding vessel loses `collision_penalty` that step.
        communication: each vessel emits one bit per step (an action component) that vessels
            within `comm_range` receive; off: no bit is sent (observation layout unchanged).
        alpha: reward dial, `(1 - alpha) * own catch + alpha * team catch / N` (0: each for
            itself, the paper's; 1: fully shared).
        discrete_actions: Discrete(9) (turn left/straight/right x slow/keep/faster), times 2
            with communication (the bit); else Box(-1, 1, (2,)) (turn, throttle) plus a third
            dimension (bit = value > 0) with communication.
        grid: cells per side of the plastic density grid; window: cells per side of the
            egocentric window each vessel sees (odd).
        neighbours: nearest vessels in the observation.
        episode_limit: the episode's length; observations and state carry t / limit, so
            reaching it terminates the episode (`EnvSpec.time_limit_terminal`).
        current_speed: fastest water, per step.
        current_direction: uniform: radians.
        gyres: gyres: (nx, ny) cells.
        epsilon: double_gyre: sway amplitude.
        omega: double_gyre: rad per step.
        patches: Gaussian patches at reset.
        patch_std: their spread.
        source_rate: chance per source per step of emitting a piece.
        source_spread: spawn spread around a source.
        port: where holds are emptied.
        port_radius: port reach.
        comm_range: signals heard within.
        window: egocentric window cells (odd).

    Observation [N, 11 + window^2 + 7 neighbours + 2]: own x / size, y / size, heading cos and
    sin, speed / max, hold / capacity (0 if unlimited), local current / current_speed (2),
    port offset / size (2), t / limit; the plastic counts of the window x window cells around
    the vessel's cell (world-aligned, / 4, cells outside the sea 0); the nearest vessels'
    offsets / size (2), distance / size, heading cos and sin, in comm range, their last signal
    (0 out of range or without communication); the mean signal and count / N of the vessels
    in range.
    State [6 N + grid^2 + 3]: each vessel's position / size, heading cos and sin, speed / max,
    hold / capacity; the whole density grid / 4; t / limit, floating / P, collected / P.

    Metrics ([] float32, the episode so far): collected_fraction (collected / spawned),
    collected, spawned, floating, removed, catch_per_vessel, gini (of the vessels' catches),
    collisions_per_vessel, delivered. Mass is conserved: spawned = floating + collected +
    removed.

    The keywords build the ocean's parts (`from_parts` takes them built), each a frozen
    dataclass called with the state and its own settings: the generator (`OceanGenerator`),
    the water (`Current`), the plastic's life (`Drift`), the vessels (`Fleet`), the reward
    (`CleanupReward`) and the observer (`Observer`); the viewer is a module (`viewer_module`).
    A step: the fleet sails, the plastic drifts, the fleet collects and unloads, collisions
    are counted, then the reward and the observer read the result.
    """

    viewer_module = "marl.envs.cleanup.viewer"
    reference_policy = "marl.baselines.cleanup:greedy_policy"

    def __init__(
        self,
        num_vessels: int = 4,
        size: float = 10.0,
        current: str = "gyres",
        current_speed: float = 0.05,
        current_direction: float = 0.0,
        gyres: tuple[int, int] = (2, 2),
        epsilon: float = 0.25,
        omega: float = 2 * math.pi / 100,
        capacity: int = 256,
        initial_plastic: int = 96,
        patches: int = 3,
        patch_std: float = 0.8,
        num_sources: int = 2,
        source_rate: float = 0.3,
        source_spread: float = 0.3,
        diffusion: float = 0.01,
        remove_at_boundary: bool = True,
        max_speed: float = 0.25,
        accel: float = 0.05,
        max_turn: float = math.pi / 8,
        drift_vessels: bool = True,
        collect_radius: float = 0.4,
        hold_capacity: int = 0,
        port: tuple[float, float] = (5.0, 0.0),
        port_radius: float = 1.0,
        vessel_radius: float = 0.15,
        collision_penalty: float = 1.0,
        communication: bool = True,
        comm_range: float = 4.0,
        alpha: float = 0.0,
        discrete_actions: bool = True,
        grid: int = 16,
        window: int = 5,
        neighbours: int = 3,
        episode_limit: int = 200,
        name: str = "cleanup/custom",
    ):
        keywords = {k: v for k, v in locals().items() if k != "self"}  # each part reads its own
        _check_vessels(num_vessels)
        parts = (OceanGenerator, Current, Drift, Fleet, CleanupReward, Observer)
        generator, flow, drift, fleet, reward, observer = (part_of(p, keywords) for p in parts)
        self._assemble(
            generator,
            flow,
            drift,
            fleet,
            reward,
            observer,
            num_vessels,
            discrete_actions,
            episode_limit,
            name,
        )

    @classmethod
    def from_parts(
        cls,
        generator: OceanGenerator | None = None,
        current: Current | None = None,
        drift: Drift | None = None,
        fleet: Fleet | None = None,
        reward: CleanupReward | None = None,
        observer: Observer | None = None,
        *,
        num_vessels: int = 4,
        discrete_actions: bool = True,
        episode_limit: int = 200,
        viewer: str | None = None,
        name: str = "cleanup/custom",
    ) -> Cleanup:
        """An ocean composed of parts (`OceanGenerator`, `Current`, `Drift`, `Fleet`,
        `CleanupReward`, `Observer`; defaults for those left out) and a viewer (a viewer
        module's path; default `viewer_module`); the keyword constructor builds the same parts
        from its flat keywords."""
        _check_vessels(num_vessels)
        env = cls.__new__(cls)
        env._assemble(
            generator or OceanGenerator(),
            current or Current(),
            drift or Drift(),
            fleet or Fleet(),
            reward or CleanupReward(),
            observer or Observer(),
            num_vessels,
            discrete_actions,
            episode_limit,
            name,
        )
        if viewer is not None:
            env.viewer_module = viewer
        return env

    def _assemble(
        self,
        generator: OceanGenerator,
        current: Current,
        drift: Drift,
        fleet: Fleet,
        reward: CleanupReward,
        observer: Observer,
        num_vessels: int,
        discrete_actions: bool,
        episode_limit: int,
        name: str,
    ) -> None:
        """Hold the parts, the observer fitted to the ocean, and the spec."""
        self.generator, self.current, self.drift = generator, current, drift
        self.fleet, self.reward = fleet, reward
        self.n, self.discrete = int(num_vessels), bool(discrete_actions)
        self.size = float(generator.size)
        space = action_space(self.discrete, observer.communication)
        n, limit = self.n, int(episode_limit)
        self.spec = EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=observer.obs_dim,
            state_dim=observer.state_dim(n),
            action_space=space,
            groups=(AgentGroup("vessels", tuple(range(n))),),
            agent_names=tuple(f"vessel_{i}" for i in range(n)),
            episode_limit=limit,
            metric_names=METRICS,
            lower_is_better=("floating", "collisions_per_vessel"),
            headline_metric="collected_fraction",
            shared_reward=reward.shared,
            # observations and state carry t / limit: the limit is part of the task and ends
            # it as a termination (marl's one time-limit rule, `EnvSpec.time_limit_terminal`)
            time_limit_terminal=True,
        )
        self.observer = observer.fitted(self.size, limit, self.spec.action_dim, fleet, current)

    # --- the parts' settings that policies read -----------------------------------------------
    @property
    def num_sources(self) -> int:
        return self.generator.num_sources

    @property
    def max_turn(self) -> float:
        return float(self.fleet.max_turn)

    @property
    def vessel_radius(self) -> float:
        return float(self.fleet.vessel_radius)

    @property
    def communication(self) -> bool:
        return bool(self.observer.communication)

    @property
    def comm_range(self) -> float:
        return float(self.observer.comm_range)

    # --- reset and step -----------------------------------------------------------------------
    def reset(self, key: Array) -> tuple[CleanupState, TimeStep]:
        state = self.generator(key, self.n)
        return state, self.observer(state, jnp.zeros(self.n, jnp.float32), state.t)

    def step_env(
        self, key: Array, state: CleanupState, actions: Array
    ) -> tuple[CleanupState, TimeStep]:
        """The vessels sail, the plastic drifts, the vessels collect it and unload at the
        port, collisions are counted; the reward and the observer read the result."""
        turn, throttle, signal = decode(actions, self.discrete, self.communication)
        pos, heading, speed = self.fleet.sail(state, turn, throttle, self.current, self.size)
        plastic, alive, spawned, removed = self.drift(key, state, self.current, self.size)
        got, alive, hold, delivered = self.fleet.collect(state, pos, plastic, alive)
        collided = self.fleet.collisions(pos)
        reward = self.reward(got, collided)
        state = state.replace(
            pos=pos,
            heading=heading,
            speed=speed,
            hold=hold,
            signal=signal,
            catch=state.catch + got,
            collisions=state.collisions + collided.astype(jnp.int32),
            plastic=plastic,
            alive=alive,
            spawned=state.spawned + spawned,
            removed=state.removed + removed,
            delivered=state.delivered + delivered,
        )
        return state, self.observer(state, reward, state.t + 1)

    def neighbourhood(self, state: CleanupState) -> Array:
        """Vessels within communication range of each other."""
        d = jnp.linalg.norm(state.pos[:, None] - state.pos[None], axis=-1)
        return (super().neighbourhood(state) * (d < self.comm_range)).astype(jnp.float32)

    def render_frame(self, state: CleanupState) -> dict[str, Any]:
        """What `viewer.py` draws: the sea, the vessels, the plastic, the sources, the current
        on a 12 x 12 grid and the port (with a hold)."""
        xs = np.linspace(0.0, self.size, 12)
        gx, gy = np.meshgrid(xs, xs)
        arrows = self.current.velocity(jnp.stack([gx, gy], -1), state.t, self.size)
        port = self.fleet.port if self.fleet.hold_capacity > 0 else None
        return {
            "size": self.size,
            "pos": np.asarray(state.pos),
            "heading": np.asarray(state.heading),
            "signal": np.asarray(state.signal),
            "catch": np.asarray(state.catch),
            "plastic": np.asarray(state.plastic)[np.asarray(state.alive)],
            "sources": np.asarray(state.sources),
            "current_grid": (gx, gy),
            "current": np.asarray(arrows),
            "collect_radius": float(self.fleet.collect_radius),
            "port": None if port is None else np.asarray(port, np.float32),
        }


def part_of(part: type, keywords: dict[str, Any]) -> Any:
    """`part` built from the keyword constructor's `keywords` that name its fields (`RENAMED`
    where the names differ), each converted to the field's type; keyword-only fields (those
    the env fills in) are left out."""
    renamed = RENAMED.get(part, {})
    values = {}
    for field in dataclasses.fields(part):
        if not field.kw_only:
            kind = CONVERT[str(field.type).split("[")[0]]
            values[field.name] = kind(keywords[renamed.get(field.name, field.name)])
    return part(**values)


def _check_vessels(num_vessels: int) -> None:
    if num_vessels < 1:
        raise ValueError("num_vessels must be >= 1")
