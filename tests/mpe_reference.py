"""Play PettingZoo's MPE (`mpe2`) and marl's particle scenarios side by side.

The reference episode starts from mpe2's own random reset; its world (positions, velocities,
words and task: goals, keys) is copied into a marl state, then both are stepped with the same
actions for a whole episode and everything an agent sees is compared.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

import marl

# marl id -> (mpe2 module, {marl kwarg: mpe2 kwarg})
REFERENCE = {
    "particle/simple": ("simple_v3", {}),
    "particle/spread": ("simple_spread_v3", {"num_agents": "N", "local_ratio": "local_ratio"}),
    "particle/adversary": ("simple_adversary_v3", {"num_good": "N"}),
    "particle/tag": (
        "simple_tag_v3",
        {
            "num_good": "num_good",
            "num_adversaries": "num_adversaries",
            "num_obstacles": "num_obstacles",
        },
    ),
    "particle/push": ("simple_push_v3", {}),
    "particle/reference": ("simple_reference_v3", {"local_ratio": "local_ratio"}),
    "particle/speaker_listener": ("simple_speaker_listener_v4", {}),
    "particle/crypto": ("simple_crypto_v3", {}),
    "particle/world_comm": (
        "simple_world_comm_v3",
        {
            "num_good": "num_good",
            "num_adversaries": "num_adversaries",
            "num_obstacles": "num_obstacles",
            "num_food": "num_food",
            "num_forests": "num_forests",
        },
    ),
}


def _landmark_index(world, entity) -> int:
    for i, lm in enumerate(world.landmarks):
        if lm is entity:
            return i
    raise ValueError("entity is not a landmark")


def _color_index(world, color) -> int:
    for i, lm in enumerate(world.landmarks):
        if np.array_equal(lm.color, color):
            return i
    raise ValueError("no landmark has that colour")


def reference_task(env_id: str, world) -> dict[str, np.ndarray]:
    """The task marl keeps in `ParticleState.task`, read off an mpe2 world."""
    agents = world.agents
    if env_id in ("particle/adversary", "particle/push"):
        return {"goal": np.int32(_landmark_index(world, agents[0].goal_a))}
    if env_id == "particle/reference":
        return {"goal": np.array([_landmark_index(world, a.goal_b) for a in agents], np.int32)}
    if env_id == "particle/speaker_listener":
        return {"goal": np.int32(_landmark_index(world, agents[0].goal_b))}
    if env_id == "particle/crypto":
        return {
            "goal": np.int32(_landmark_index(world, agents[0].goal_a)),
            "key": np.int32(_color_index(world, agents[2].key)),
        }
    return {}


@dataclass
class Comparison:
    """What one side-by-side episode compared."""

    steps: int = 0
    values: int = 0  # number of scalar values compared
    max_error: dict[str, float] = field(default_factory=dict)

    def check(self, name: str, ours, theirs, atol: float) -> None:
        ours = np.asarray(ours, dtype=np.float64)
        theirs = np.asarray(theirs, dtype=np.float64)
        assert ours.shape == theirs.shape, f"{name}: shape {ours.shape} vs {theirs.shape}"
        err = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
        self.max_error[name] = max(self.max_error.get(name, 0.0), err)
        self.values += ours.size
        assert err <= atol, f"{name}: max abs error {err:.3g} > {atol} at step {self.steps}"


def make_pair(env_id: str, continuous: bool, **kwargs):
    """(marl env, mpe2 parallel env) for the same scenario and arguments."""
    module, names = REFERENCE[env_id]
    ref_kwargs = {names[k]: v for k, v in kwargs.items()}
    ref = importlib.import_module(f"mpe2.{module}").parallel_env(
        continuous_actions=continuous, max_cycles=25, **ref_kwargs
    )
    ours = marl.make(env_id, continuous_actions=continuous, **kwargs)
    return ours, ref


def play_episode(
    env_id: str,
    continuous: bool,
    seed: int,
    atol: float = 1e-5,
    reuse: dict | None = None,
    **kwargs,
) -> Comparison:
    """Play one whole episode in both and compare obs, rewards, terminations, truncations.

    `reuse`: a dict kept across calls with the same arguments (seeds of one case): marl's env
    and its compiled functions are built on the first call and kept, so each compiles once."""
    env, ref = make_pair(env_id, continuous, **kwargs)
    if reuse is None:
        reuse = {}
    env, step, start, observe = reuse.setdefault(
        "marl", (env, jax.jit(env.step), jax.jit(env.initial_state), jax.jit(env.observe))
    )
    spec = env.spec
    names = list(spec.agent_names)
    ref_obs, _ = ref.reset(seed=seed)
    assert list(ref.possible_agents) == names, f"agent order {ref.possible_agents} vs {names}"
    world = ref.unwrapped.world
    pos = np.stack([e.state.p_pos for e in world.entities])
    state = start(jnp.asarray(pos), reference_task(env_id, world))
    ts = observe(state)
    cmp = Comparison()

    def compare_obs(ts, ref_obs):
        for i, name in enumerate(names):
            k = spec.obs_sizes[i]
            cmp.check(f"obs[{name}]", ts.obs[i, :k], ref_obs[name], atol)
            cmp.check(f"obs_pad[{name}]", ts.obs[i, k:], np.zeros(spec.obs_dim - k), 0.0)

    compare_obs(ts, ref_obs)
    rng = np.random.default_rng(seed)
    for _ in range(spec.episode_limit):
        cmp.steps += 1
        if continuous:
            acts = rng.uniform(0, 1, size=(spec.num_agents, spec.action_dim)).astype(np.float32)
            ref_acts = {n: acts[i, : spec.action_sizes[i]] for i, n in enumerate(names)}
        else:
            acts = np.array(
                [rng.integers(spec.action_sizes[i]) for i in range(len(names))], np.int32
            )
            ref_acts = {n: int(acts[i]) for i, n in enumerate(names)}
        state, ts = step(jax.random.key(0), state, jnp.asarray(acts))
        ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(ref_acts)
        compare_obs(ts, ref_obs)
        cmp.check("reward", ts.reward, [ref_rew[n] for n in names], atol)
        cmp.check("terminated", [bool(ts.terminated)] * len(names), [ref_term[n] for n in names], 0)
        cmp.check("truncated", [bool(ts.truncated)] * len(names), [ref_trunc[n] for n in names], 0)
        if bool(ts.terminated) or bool(ts.truncated):
            break
    assert not ref.agents, "mpe2 episode still running after marl's ended"
    return cmp
