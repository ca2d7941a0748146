"""Ocean macroplastic cleanup: vessels collect drifting plastic, each rewarded for its own
catch (and, by a dial, the team's), optionally signalling to one another with one bit."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete

from . import ocean
from .observation import NEIGHBOUR_FEATURES, OWN_FEATURES, SIGNAL_FEATURES, CleanupView
from .parts import CleanupReward, Current, Drift, Fleet, Observer, OceanGenerator
from .state import CleanupState

Array = jax.Array

METRICS = (
    "collected_fraction",
    "collected",
    "spawned",
    "floating",
    "removed",
    "catch_per_vessel",
    "gini",
    "collisions_per_vessel",
    "delivered",
)
TURNS = np.array([-1.0, 0.0, 1.0], np.float32)
THROTTLES = np.array([-1.0, 0.0, 1.0], np.float32)


class Cleanup(CleanupView, MultiAgentEnv[CleanupState]):
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
        _check(
            current in ocean.CURRENTS,
            f"unknown current {current!r}; valid: {', '.join(ocean.CURRENTS)}",
        )
        _check(num_vessels >= 1, "num_vessels must be >= 1")
        _check(0.0 <= alpha <= 1.0, f"alpha must be in [0, 1], got {alpha}")
        _check(window % 2 == 1 and window >= 1, f"window must be odd, got {window}")
        _check(capacity >= 1 and initial_plastic <= capacity, "initial_plastic must fit capacity")
        _check(0.0 <= source_rate <= 1.0, "source_rate is a probability per step")
        f = float
        self._setup(
            OceanGenerator(f(size), int(capacity), int(initial_plastic), int(patches),
                           f(patch_std), int(num_sources)),
            Current(current, f(current_speed), f(current_direction), tuple(gyres), f(epsilon),
                    f(omega)),
            Drift(f(source_rate), f(source_spread), f(diffusion), bool(remove_at_boundary)),
            Fleet(f(max_speed), f(accel), f(max_turn), bool(drift_vessels), f(collect_radius),
                  int(hold_capacity), tuple(port), f(port_radius), f(vessel_radius)),
            CleanupReward(f(alpha), f(collision_penalty)),
            Observer(int(grid), int(window), int(neighbours), bool(communication), f(comm_range)),
            num_vessels, discrete_actions, episode_limit, name,
        )  # fmt: skip

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
        """An ocean composed of parts (`parts.py`: `OceanGenerator`, `Current`, `Drift`,
        `Fleet`, `CleanupReward`, `Observer`; defaults for those left out) and a viewer (a
        viewer module's path; default `viewer_module`); the keyword constructor builds the
        same parts from its flat keywords."""
        _check(num_vessels >= 1, "num_vessels must be >= 1")
        env = cls.__new__(cls)
        env._setup(
            generator or OceanGenerator(), current or Current(), drift or Drift(),
            fleet or Fleet(), reward or CleanupReward(), observer or Observer(),
            num_vessels, discrete_actions, episode_limit, name,
        )  # fmt: skip
        if viewer is not None:
            env.viewer_module = viewer
        return env

    def _setup(
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
        """Every attribute of the env, from its parts."""
        self.generator, self.drift, self.fleet = generator, drift, fleet
        self.reward, self.observer = reward, observer
        self.n = int(num_vessels)
        self.size = float(generator.size)
        self.current = current.fields(self.size)  # `ocean.current_at`'s keywords
        self.capacity, self.initial_plastic = generator.capacity, generator.initial_plastic
        self.patches, self.patch_std = generator.patches, generator.patch_std
        self.num_sources, self.source_rate = generator.num_sources, float(drift.source_rate)
        self.source_spread, self.diffusion = float(drift.source_spread), float(drift.diffusion)
        self.remove_at_boundary = bool(drift.remove_at_boundary)
        self.max_speed, self.accel = float(fleet.max_speed), float(fleet.accel)
        self.max_turn, self.drift_vessels = float(fleet.max_turn), bool(fleet.drift_vessels)
        self.collect_radius = float(fleet.collect_radius)
        self.hold_capacity = int(fleet.hold_capacity)
        self.port = jnp.asarray(fleet.port, jnp.float32)
        self.port_radius = float(fleet.port_radius)
        self.vessel_radius = float(fleet.vessel_radius)
        self.collision_penalty = float(reward.collision_penalty)
        self.communication = bool(observer.communication)
        self.comm_range = float(observer.comm_range)
        self.alpha = float(reward.alpha)
        self.discrete = bool(discrete_actions)
        self.grid, self.window = int(observer.grid), int(observer.window)
        self.neighbour_slots = int(observer.neighbours)
        self.k = min(self.neighbour_slots, self.n - 1)
        self.spec = self._make_spec(name, int(episode_limit), self.neighbour_slots)

    def _make_spec(self, name: str, episode_limit: int, neighbours: int) -> EnvSpec:
        n = self.n
        if self.discrete:
            space = Discrete(len(TURNS) * len(THROTTLES) * (2 if self.communication else 1))
        else:
            space = Box(-1.0, 1.0, (3 if self.communication else 2,), jnp.float32)
        obs_dim = OWN_FEATURES + self.window**2 + NEIGHBOUR_FEATURES * neighbours + SIGNAL_FEATURES
        return EnvSpec(
            name=name,
            num_agents=n,
            obs_dim=obs_dim,
            state_dim=6 * n + self.grid**2 + 3,
            action_space=space,
            groups=(AgentGroup("vessels", tuple(range(n))),),
            agent_names=tuple(f"vessel_{i}" for i in range(n)),
            episode_limit=episode_limit,
            metric_names=METRICS,
            lower_is_better=("floating", "collisions_per_vessel"),
            headline_metric="collected_fraction",
            shared_reward=self.alpha == 1.0,
            # observations and state carry t / limit: the limit is part of the task and ends
            # it as a termination (marl's one time-limit rule, `EnvSpec.time_limit_terminal`)
            time_limit_terminal=True,
        )

    # --- reset ---------------------------------------------------------------------------------

    def reset(self, key: Array) -> tuple[CleanupState, TimeStep]:
        state = self.generator(key, self.n)
        return state, self._timestep(state, jnp.zeros(self.n), state.t)

    # --- step ----------------------------------------------------------------------------------

    def _decode(self, actions: Array) -> tuple[Array, Array, Array]:
        """(turn [N] in [-1, 1], throttle [N] in [-1, 1], signal [N] bool)."""
        if self.discrete:
            a = actions.astype(jnp.int32)
            base = a % 9
            signal = (a >= 9) & self.communication
            return jnp.asarray(TURNS)[base // 3], jnp.asarray(THROTTLES)[base % 3], signal
        a = jnp.clip(actions, -1.0, 1.0)
        signal = (a[:, 2] > 0) if self.communication else jnp.zeros(self.n, bool)
        return a[:, 0], a[:, 1], signal

    def _water(self, pos: Array, t: Array) -> Array:
        return ocean.current_at(pos=pos, t=t.astype(jnp.float32), **self.current)

    def step_env(
        self, key: Array, state: CleanupState, actions: Array
    ) -> tuple[CleanupState, TimeStep]:
        k_src, k_where, k_diff = jax.random.split(key, 3)
        n, size = self.n, self.size
        t = state.t
        turn, throttle, signal = self._decode(actions)
        # vessels
        heading = jnp.remainder(state.heading + turn * self.max_turn + jnp.pi, 2 * jnp.pi) - jnp.pi
        speed = jnp.clip(state.speed + throttle * self.accel, 0.0, self.max_speed)
        move = speed[:, None] * jnp.stack([jnp.cos(heading), jnp.sin(heading)], -1)
        if self.drift_vessels:
            move = move + self._water(state.pos, t)
        pos = jnp.clip(state.pos + move, 0.0, size)
        # plastic: sources emit, the water carries, the sea's edge removes
        requests = jax.random.uniform(k_src, (self.num_sources,)) < self.source_rate
        where = state.sources + self.source_spread * jax.random.normal(
            k_where, (self.num_sources, 2)
        )
        where = ocean.into_sea(where, size)
        alive, plastic, new = ocean.spawn(state.alive, state.plastic, requests, where)
        drift = self._water(plastic, t) + self.diffusion * jax.random.normal(k_diff, plastic.shape)
        plastic = plastic + drift * alive[:, None]
        outside = jnp.any((plastic < 0.0) | (plastic > size), axis=-1) & alive
        if self.remove_at_boundary:
            removed_now = jnp.sum(outside).astype(jnp.int32)
            alive = alive & ~outside
        else:
            removed_now = jnp.zeros((), jnp.int32)
            plastic = jnp.clip(plastic, 0.0, size)
        # collection: each piece within reach goes to the nearest vessel with room
        d2 = ocean.squared_distances(plastic, pos)  # [P, N]
        room = (
            jnp.full(n, 2**30, jnp.int32)
            if self.hold_capacity <= 0
            else self.hold_capacity - state.hold
        )
        reach = (d2 < self.collect_radius**2) & alive[:, None] & (room > 0)[None, :]
        claim = ocean.nearest_claims(jnp.where(reach, d2, jnp.inf), reach).astype(jnp.int32)
        if self.hold_capacity > 0:  # a hold fills up: pieces beyond its room stay afloat
            rank = jnp.cumsum(claim, axis=0) - claim  # pieces claimed before this one
            taken = claim * (rank < room[None, :])
        else:
            taken = claim
        got = jnp.sum(taken, axis=0)  # [N] pieces collected this step
        alive = alive & ~jnp.any(taken > 0, axis=1)
        hold = state.hold + got
        if self.hold_capacity > 0:
            at_port = jnp.linalg.norm(pos - self.port, axis=-1) < self.port_radius
            delivered = jnp.sum(jnp.where(at_port, hold, 0))
            hold = jnp.where(at_port, 0, hold)
        else:
            delivered = jnp.zeros((), jnp.int32)
        # collisions between vessels
        gap = jnp.linalg.norm(pos[:, None] - pos[None], axis=-1) + jnp.eye(n) * 1e9
        collided = jnp.any(gap < 2 * self.vessel_radius, axis=1)
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
            spawned=state.spawned + new,
            removed=state.removed + removed_now,
            delivered=state.delivered + delivered.astype(jnp.int32),
        )
        ts = self._timestep(state, reward.astype(jnp.float32), t + 1)
        return state, ts

    def neighbourhood(self, state: CleanupState) -> Array:
        """Vessels within communication range of each other."""
        d = jnp.linalg.norm(state.pos[:, None] - state.pos[None], axis=-1)
        return (super().neighbourhood(state) * (d < self.comm_range)).astype(jnp.float32)

    # --- rendering -----------------------------------------------------------------------------

    def render_frame(self, state: CleanupState) -> dict[str, Any]:
        xs = np.linspace(0.0, self.size, 12)
        gx, gy = np.meshgrid(xs, xs)
        arrows = np.asarray(self._water(jnp.stack([gx, gy], -1), state.t))
        return {
            "size": self.size,
            "pos": np.asarray(state.pos),
            "heading": np.asarray(state.heading),
            "signal": np.asarray(state.signal),
            "catch": np.asarray(state.catch),
            "plastic": np.asarray(state.plastic)[np.asarray(state.alive)],
            "sources": np.asarray(state.sources),
            "current_grid": (gx, gy),
            "current": arrows,
            "collect_radius": self.collect_radius,
            "port": np.asarray(self.port) if self.hold_capacity > 0 else None,
        }


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
