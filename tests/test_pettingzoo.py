"""marl's envs under PettingZoo's API, checked by PettingZoo's own tests (`pettingzoo.test`)."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

import marl  # noqa: E402
from marl.core.wrappers import AutoReset  # noqa: E402
from marl.interop.pettingzoo import MarlParallelEnv, aec_env, parallel_env, vector_env  # noqa: E402

# one map of every family in the default suite; every other registered env under -m slow
DEFAULT = [
    "particle/speaker_listener",  # heterogeneous agents: unpadded spaces
    "combat/3m",  # units die and leave `agents`; action masks
    "pathfinding/random_grid",
    "cleanup/comm",
    "swarm/vicsek",
]
OTHERS = [e for e in marl.list_envs() if e not in DEFAULT and not e.endswith("/custom")]
CYCLES = 40


def check_all(env_id: str) -> None:
    env = marl.make(env_id)  # one env object: the adapters below share its compiled step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PettingZoo's advice on unbounded spaces
        parallel_api_test(MarlParallelEnv(env), num_cycles=CYCLES)
        api_test(aec_env(env), num_cycles=CYCLES // 4)
        parallel_seed_test(lambda: MarlParallelEnv(env), num_cycles=CYCLES // 4)
        seed_test(lambda: aec_env(env), num_cycles=CYCLES // 4)


@pytest.mark.parametrize("env_id", DEFAULT)
def test_pettingzoos_own_tests_pass(env_id):
    check_all(env_id)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", OTHERS)
def test_pettingzoos_own_tests_pass_on_every_env(env_id):
    check_all(env_id)


def test_steps_equal_marls_own_step_for_step():
    """Same keys and actions: the adapter's observations and rewards are marl's step."""
    env = marl.make("combat/3m")
    pz = MarlParallelEnv(env)
    obs, _ = pz.reset(seed=7)
    key = jax.random.key(7)
    key, sub = jax.random.split(key)
    state, ts = env.reset(sub)
    rng = np.random.default_rng(0)
    for _ in range(30):
        if not pz.agents:
            break
        for a in pz.agents:
            i = pz.possible_agents.index(a)
            np.testing.assert_array_equal(obs[a], np.asarray(ts.obs[i, : env.spec.obs_sizes[i]]))
        avail = np.asarray(ts.avail_actions)
        acts = np.array([rng.choice(np.flatnonzero(row)) for row in avail], np.int32)
        obs, rew, term, trunc, _ = pz.step(
            {a: acts[pz.possible_agents.index(a)] for a in pz.agents}
        )
        key, sub = jax.random.split(key)
        state, ts = env.step(sub, state, jax.numpy.asarray(acts))
        for a, r in rew.items():
            assert r == pytest.approx(float(ts.reward[pz.possible_agents.index(a)]), abs=0)
            assert term[a] == (
                bool(ts.terminated) or not bool(ts.alive[pz.possible_agents.index(a)])
            )


def test_a_dead_unit_terminates_and_leaves_agents():
    pz = parallel_env("combat/3m")
    rng = np.random.default_rng(1)
    for seed in range(20):
        pz.reset(seed=seed)
        while pz.agents:
            before = list(pz.agents)
            masks = {a: pz._mask(pz.possible_agents.index(a)) for a in before}
            actions = {a: int(rng.choice(np.flatnonzero(masks[a]))) for a in before}
            _, _, term, trunc, _ = pz.step(actions)
            gone = [a for a in before if term[a] and pz.agents]
            if gone:  # a unit died while the battle goes on
                assert set(pz.agents) == set(before) - set(gone)
                assert all(pz.observation_space(a) is not None for a in gone)
                return
    pytest.fail("no unit died mid-battle in 20 random battles")


def test_action_masks_in_infos_or_in_the_observation():
    pz = parallel_env("combat/3m")
    obs, infos = pz.reset(seed=0)
    a = pz.agents[0]
    assert infos[a]["action_mask"].dtype == np.int8
    assert infos[a]["action_mask"].shape == (pz.action_space(a).n,)
    pz = parallel_env("combat/3m", action_mask="obs")
    obs, infos = pz.reset(seed=0)
    assert set(obs[a]) == {"observation", "action_mask"}
    assert pz.observation_space(a).contains(obs[a])


def test_heterogeneous_agents_are_unpadded():
    pz = parallel_env("particle/speaker_listener")
    obs, _ = pz.reset(seed=0)
    sizes = {a: obs[a].shape[0] for a in pz.agents}
    assert len(set(sizes.values())) == 2
    assert all(pz.observation_space(a).shape == (k,) for a, k in sizes.items())


def test_render_returns_a_frame_from_the_viewer():
    pz = parallel_env("combat/3m", render_mode="rgb_array")
    pz.reset(seed=0)
    frame = pz.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    assert frame.std() > 0  # something was drawn


def test_make_with_the_pettingzoo_api():
    pz = marl.make("particle/spread", api="pettingzoo")
    assert isinstance(pz, MarlParallelEnv)
    assert pz.possible_agents == ["agent_0", "agent_1", "agent_2"]
    with pytest.raises(ValueError, match="api"):
        marl.make("particle/spread", api="gym")


def test_vector_env_equals_the_vmapped_autoreset_step():
    env = marl.make("combat/3m")
    vec = vector_env("combat/3m", num_envs=4)
    obs, infos = vec.reset(seed=3)
    assert obs.shape == (4, 3, env.spec.obs_dim)
    wrapped = AutoReset(env)
    key = jax.random.key(3)
    key, sub = jax.random.split(key)
    reset, step = jax.jit(jax.vmap(wrapped.reset)), jax.jit(jax.vmap(wrapped.step))
    state, ts = reset(jax.random.split(sub, 4))
    np.testing.assert_array_equal(obs, np.asarray(ts.obs))
    for _ in range(5):
        acts = np.argmax(infos["action_mask"], axis=-1).astype(np.int32)
        obs, rew, term, trunc, infos = vec.step(acts)
        key, sub = jax.random.split(key)
        state, ts = step(jax.random.split(sub, 4), state, jax.numpy.asarray(acts))
        np.testing.assert_array_equal(obs, np.asarray(ts.obs))
        np.testing.assert_array_equal(rew, np.asarray(ts.reward))
        assert term.shape == trunc.shape == (4, 3)


def test_the_guides_pytorch_loop_runs():
    """docs/pages/guides/pettingzoo.md's PyTorch example, run as written (where torch is in)."""
    pytest.importorskip("torch")
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs/pages/guides/pettingzoo.md").read_text()
    block = next(b for b in text.split("```python\n")[1:] if "import torch" in b)
    exec(compile(block.split("```")[0], "pettingzoo.md", "exec"), {})


@pytest.mark.parametrize(
    "env_id", ["particle/spread", "combat/3m", "cleanup/comm", "pathfinding/random_grid",
               "swarm/vicsek"],
)  # fmt: skip
def test_every_family_renders_the_mode_it_advertises(env_id):
    """`render_mode="rgb_array"` (in `metadata`) raised TypeError on every particle env: the
    particle viewer took its arena size where the contract puts the title."""
    from marl.interop.pettingzoo import parallel_env

    env = parallel_env(env_id, render_mode="rgb_array")
    assert "rgb_array" in env.metadata["render_modes"]
    env.reset(seed=0)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    assert frame.std() > 0  # something was drawn


@pytest.mark.parametrize(
    "action, error",
    [(9, ValueError), (-1, ValueError), (np.nan, ValueError), (1.0, ValueError),
     (True, ValueError), ("1", ValueError), (None, KeyError)],
)  # fmt: skip
def test_invalid_discrete_actions_are_refused(action, error):
    """Out of range, NaN, a float, a bool, a string, a missing agent: refused, not taken."""
    env = parallel_env("particle/spread")
    env.reset(seed=0)
    first, *rest = env.agents
    actions = {a: 0 for a in rest}
    if action is not None:
        actions[first] = action
    with pytest.raises(error):
        env.step(actions)


def test_a_masked_out_action_is_taken_as_an_allowed_one_and_said():
    env = parallel_env("combat/3m")
    _, infos = env.reset(seed=0)
    agent = env.agents[0]
    masked = int(np.flatnonzero(infos[agent]["action_mask"] == 0)[0])
    actions = {a: int(np.flatnonzero(infos[a]["action_mask"])[0]) for a in env.agents}
    actions[agent] = masked
    _, _, _, _, infos = env.step(actions)
    assert infos[agent]["masked_action"] == masked


@pytest.mark.parametrize("bad", [[np.nan, 0.0], [0.0], [0.0, 0.0, 0.0], [5.0, 0.0]])
def test_invalid_continuous_actions_are_refused(bad):
    env = parallel_env("particle/spread", continuous_actions=True)
    env.reset(seed=0)
    space = env.action_space(env.agents[0])
    actions = {a: np.zeros(space.shape, np.float32) for a in env.agents}
    actions[env.agents[0]] = (
        np.asarray(bad + [0.0] * (space.shape[0] - 2), np.float32)
        if len(bad) == 2
        else np.asarray(bad, np.float32)
    )
    with pytest.raises(ValueError):
        env.step(actions)


def test_the_spaces_dicts_clients_read():
    """skrl reads `observation_spaces` / `action_spaces`, as every env PettingZoo builds has."""
    env = parallel_env("particle/speaker_listener")
    assert set(env.observation_spaces) == set(env.action_spaces) == set(env.possible_agents)
    for a in env.possible_agents:
        assert env.observation_spaces[a] == env.observation_space(a)
        assert env.action_spaces[a] == env.action_space(a)


def test_actions_of_agents_gone_are_ignored_and_strangers_refused():
    """TorchRL sends an action for every agent of a group, dead units included."""
    env = parallel_env("combat/3m")
    rng = np.random.default_rng(0)
    for seed in range(20):
        _, infos = env.reset(seed=seed)
        while env.agents:
            before = list(env.agents)
            actions = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in before}
            gone = [a for a in env.possible_agents if a not in before]
            if gone:  # a dead unit's action rides along, as TorchRL sends it
                actions.update({a: 0 for a in gone})
                _, _, term, _, _ = env.step(actions)
                assert set(term) == set(before)
                with pytest.raises(KeyError, match="the env does not have"):
                    env.step({**{a: 0 for a in env.agents}, "ally_9": 0})
                return
            _, _, _, _, infos = env.step(actions)
    pytest.fail("no unit died in 20 random battles")


@pytest.mark.parametrize("env_id", ["particle/spread", "combat/3m"])
def test_pettingzoos_max_cycles_test_passes(env_id):
    from pettingzoo.test import max_cycles_test

    from marl.interop.pettingzoo import env_module

    max_cycles_test(env_module(env_id))
    env = parallel_env(env_id, max_cycles=2)
    env.reset(seed=0)
    acts = {a: 0 for a in env.agents}
    env.step(acts)
    _, _, term, trunc, _ = env.step({a: 0 for a in env.agents})
    assert all(term[a] or trunc[a] for a in term) and not env.agents
    with pytest.raises(ValueError, match="max_cycles"):
        parallel_env(env_id, max_cycles=0)


def test_a_dropped_adapter_frees_its_env_and_programs():
    """The compiled functions live on the env: nothing module-level keeps either alive."""
    import gc
    import weakref

    env = marl.make("particle/simple")
    pz = MarlParallelEnv(env)
    pz.reset(seed=0)
    pz.step({a: 0 for a in pz.agents})
    again = MarlParallelEnv(env)
    assert again._step is pz._step  # adapters over one env share its programs
    gone = weakref.ref(env)
    del env, pz, again
    gc.collect()
    assert gone() is None


def test_keep_dead_hands_out_every_agent_as_torchrls_wrapper_reads_them():
    env = parallel_env("combat/3m", keep_dead=True)
    rng = np.random.default_rng(2)
    for seed in range(20):
        obs, infos = env.reset(seed=seed)
        while env.agents:
            assert set(obs) == set(infos) == set(env.possible_agents)
            before = list(env.agents)
            acts = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in before}
            obs, rew, term, trunc, infos = env.step(acts)
            assert set(rew) == set(term) == set(trunc) == set(env.possible_agents)
            gone = [a for a in env.possible_agents if a not in before]
            if gone and env.agents:
                assert all(rew[a] == 0.0 and term[a] and not trunc[a] for a in gone)
                return
    pytest.fail("no unit died before another step in 20 random battles")
