"""particle/tag and particle/world_comm against mpe2 1.1.1, step for step.

Episodes are played in JAX x64 mode so marl's physics follows mpe2's float64 arithmetic and
the only differences left are the final float32 casts (atol 1e-5). Besides mpe2's own random
resets, `placed` starts episodes from hand-placed states (agents inside forests, adversaries
next to their prey) so the forest visibility rule and the catch rewards are exercised.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_reference import REFERENCE, make_pair, play_episode

ATOL = 1e-5

TAG_KWARGS = [{}, {"num_good": 2, "num_adversaries": 4, "num_obstacles": 3}]
WORLD_COMM_KWARGS = [
    {},
    {"num_good": 3, "num_adversaries": 2, "num_obstacles": 2, "num_food": 3, "num_forests": 1},
]

Place = Callable[[object, np.random.Generator], None]


# --- reusable helpers ----------------------------------------------------------------------
def scenario_class(env_id: str):
    """mpe2's `Scenario` class behind a marl particle id."""
    module = REFERENCE[env_id][0].rsplit("_v", 1)[0]
    return importlib.import_module(f"mpe2.{module}.{module}").Scenario


@contextlib.contextmanager
def placed(env_id: str, place: Place | None) -> Iterator[None]:
    """Within this block mpe2's reset of `env_id` is followed by `place(world, np_random)`,
    which may move entities; `play_episode` then copies the placed state into marl."""
    if place is None:
        yield
        return
    cls = scenario_class(env_id)
    original = cls.reset_world

    def reset_world(self, world, np_random):
        original(self, world, np_random)
        place(world, np_random)

    cls.reset_world = reset_world
    try:
        yield
    finally:
        cls.reset_world = original


def place_in_forests(world, rng: np.random.Generator) -> None:
    """world_comm: drop about two thirds of the agents inside a random forest (some forests
    moved to overlap the first), so agents share, split or straddle forests."""
    forests = world.forests
    if not forests:
        return
    for f in forests[1:]:
        if rng.uniform() < 0.5:
            f.state.p_pos = forests[0].state.p_pos + rng.uniform(-0.35, 0.35, 2)
    for agent in world.agents:
        if rng.uniform() < 2 / 3:
            f = forests[rng.integers(len(forests))]
            agent.state.p_pos = f.state.p_pos + rng.uniform(-0.2, 0.2, 2)


def place_near_prey(world, rng: np.random.Generator) -> None:
    """tag / world_comm: put every adversary just around a random good agent."""
    good = [a for a in world.agents if not a.adversary]
    for agent in world.agents:
        if agent.adversary:
            prey = good[rng.integers(len(good))]
            agent.state.p_pos = prey.state.p_pos + rng.uniform(-0.15, 0.15, 2)


def random_actions(spec, rng: np.random.Generator, continuous: bool) -> np.ndarray:
    """The joint action `play_episode` draws from `rng` (same order, same calls)."""
    if continuous:
        return rng.uniform(0, 1, size=(spec.num_agents, spec.action_dim)).astype(np.float32)
    return np.array([rng.integers(k) for k in spec.action_sizes], np.int32)


def coverage(
    env_id: str, continuous: bool, seed: int, place: Place | None = None, **kwargs
) -> dict[str, float]:
    """Replay marl's side of `play_episode(env_id, continuous, seed)` and count what it hit:
    summed metrics over steps, and for world_comm agent-steps in a forest and hidden pairs."""
    with jax.enable_x64(True):
        return _coverage(env_id, continuous, seed, place, **kwargs)


def _coverage(env_id, continuous, seed, place, **kwargs):
    env, ref = make_pair(env_id, continuous, **kwargs)
    with placed(env_id, place):
        ref.reset(seed=seed)
    pos = np.stack([e.state.p_pos for e in ref.unwrapped.world.entities])
    state = env.initial_state(jnp.asarray(pos), {})
    step = jax.jit(env.step)
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    for _ in range(env.spec.episode_limit):
        acts = random_actions(env.spec, rng, continuous)
        state, ts = step(jax.random.key(0), state, jnp.asarray(acts))
        for k, v in ts.metrics.items():
            out[k] = out.get(k, 0.0) + float(v)
        if hasattr(env.observer, "visible"):
            inside, seen = env.observer.visible(state)
            out["in_forest"] = out.get("in_forest", 0.0) + float(jnp.sum(jnp.any(inside, 1)))
            out["hidden"] = out.get("hidden", 0.0) + float(jnp.sum(~seen))
    return out


def check(env_id: str, continuous: bool, seed: int, place: Place | None = None, **kwargs):
    """play_episode under x64 (optionally from a placed state); returns the Comparison."""
    with jax.enable_x64(True), placed(env_id, place):
        cmp = play_episode(env_id, continuous, seed, ATOL, **kwargs)
    assert cmp.steps == 25 and cmp.values > 0
    return cmp


# --- tests --------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", TAG_KWARGS, ids=["default", "2g4a3o"])
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_tag_matches_mpe2(continuous, kwargs):
    check("particle/tag", continuous, 0, **kwargs)
    check("particle/tag", continuous, 1, place_near_prey, **kwargs)


@pytest.mark.parametrize("kwargs", WORLD_COMM_KWARGS, ids=["default", "3g2a2o3f1w"])
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_world_comm_matches_mpe2(continuous, kwargs):
    check("particle/world_comm", continuous, 0, **kwargs)
    check("particle/world_comm", continuous, 1, place_in_forests, **kwargs)


def test_placed_states_cover_catches_and_forests():
    tag = coverage("particle/tag", False, 1, place_near_prey)
    assert tag["catches"] > 0
    wc = coverage("particle/world_comm", True, 1, place_in_forests)
    assert wc["in_forest"] > 0 and wc["hidden"] > 0


def test_spec_layout():
    tag = make_pair("particle/tag", False, **TAG_KWARGS[1])[0].spec
    assert tag.agent_names[:4] == tuple(f"adversary_{i}" for i in range(4))
    assert tag.obs_sizes == (4 + 6 + 10 + 4,) * 4 + (4 + 6 + 10 + 2,) * 2
    wc = make_pair("particle/world_comm", False)[0].spec
    assert wc.obs_sizes == (34,) * 4 + (28,) * 2
    assert wc.action_sizes == (20, 5, 5, 5, 5, 5)
    assert [g.name for g in wc.groups] == ["leader", "adversary", "good"]
    wc = make_pair("particle/world_comm", True)[0].spec
    assert wc.action_sizes == (9, 5, 5, 5, 5, 5)
