"""marl's tasks in the PyTorch and JAX clients researchers use, without glue: TorchRL's batched
env (`marl.interop.torchrl`), TorchRL's own PettingZoo wrapper, skrl and BenchMARL.

The clients are extras (torch is heavy): `pip install -e ".[clients]"`, then
`pytest tests/test_clients.py -m "slow or not slow"`. Without them these tests skip."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl.core.wrappers import AutoReset

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from torchrl.envs.utils import check_env_specs  # noqa: E402

from marl.interop.torchrl import MarlTorchEnv  # noqa: E402

FAMILIES = [
    "particle/spread",
    "particle/speaker_listener",  # two groups of different sizes
    "combat/3m",  # units die: masks
    "pathfinding/random_grid",  # continuous actions
    "cleanup/comm",
    "swarm/vicsek",
    "grid/random8",
]


@pytest.mark.parametrize("env_id", FAMILIES)
def test_torchrls_check_env_specs_passes(env_id):
    env = MarlTorchEnv(env_id, 4)
    check_env_specs(env, seed=0)
    data = env.rollout(8, break_when_any_done=False)
    assert data.batch_size == (4, 8)
    assert set(env.group_map) == {g.name for g in env.marl_spec.groups}


def _zero_actions(env, td):
    for name in env.group_map:
        td.set((name, "action"), env.full_action_spec[name, "action"].zero())
    return td


def test_steps_equal_marls_batched_autoreset_step():
    """Same keys and actions: observations, rewards, masks and ends are marl's own step's, the
    true last observation where an episode ends, the next one's first after the reset."""
    b, steps = 6, 80
    env = MarlTorchEnv("combat/3m", b, seed=3)
    marl_env = AutoReset(marl.make("combat/3m"))
    key, sub = jax.random.split(jax.random.key(3))
    state, ts = jax.vmap(marl_env.reset)(jax.random.split(sub, b))
    td = env.reset()
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(steps):
        np.testing.assert_array_equal(td["allies", "observation"].numpy(), np.asarray(ts.obs))
        np.testing.assert_array_equal(td["allies", "mask"].numpy(), np.asarray(ts.alive))
        avail = np.asarray(ts.avail_actions)
        acts = np.array([[rng.choice(np.flatnonzero(r)) for r in env_rows] for env_rows in avail])
        td.set(("allies", "action"), torch.as_tensor(acts, dtype=torch.int64))
        out, td = env.step_and_maybe_reset(td)
        key, sub = jax.random.split(key)
        state, ts = marl_env.step_batch(jax.random.split(sub, b), state, jnp.asarray(acts))
        nxt = out["next"]
        np.testing.assert_array_equal(nxt["allies", "observation"].numpy(), ts.final_obs)
        np.testing.assert_array_equal(nxt["allies", "reward"].numpy()[..., 0], ts.reward)
        np.testing.assert_array_equal(nxt["terminated"].numpy()[:, 0], ts.terminated)
        np.testing.assert_array_equal(nxt["allies", "mask"].numpy(), ts.final_alive)
        ended += int(np.sum(ts.done))
    assert ended > 0  # some battles ended: the partial resets were exercised


def test_a_masked_out_action_is_taken_as_the_first_allowed_one():
    env = MarlTorchEnv("combat/3m", 2)
    td = env.reset()
    mask = td["allies", "action_mask"]
    assert not mask.all()  # some action is masked out
    forbidden = (~mask).to(torch.int64).argmax(-1)
    first = mask.to(torch.int64).argmax(-1)
    a = env.step(_zero_actions(env, td).set(("allies", "action"), forbidden))
    b = MarlTorchEnv("combat/3m", 2)
    same = b.step(_zero_actions(b, b.reset()).set(("allies", "action"), first))
    torch.testing.assert_close(
        a["next", "allies", "observation"], same["next", "allies", "observation"]
    )


def test_torchrls_pettingzoo_wrapper_with_the_flags_for_agents_that_die():
    """TorchRL's documented flags for agents that drop out (`use_mask`, `done_on_any=False`)
    and the adapter's `keep_dead` (TorchRL reads every agent's observation and info): it sends
    dead units' actions, which the adapter ignores, and a death no longer ends the episode."""
    pytest.importorskip("pettingzoo")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    from marl.interop.pettingzoo import MarlParallelEnv

    env = PettingZooWrapper(
        MarlParallelEnv("combat/3m", keep_dead=True),
        use_mask=True,
        done_on_any=False,
        categorical_actions=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env_specs(env, seed=0)
        lengths, deaths = [], 0
        for seed in range(6):
            env.set_seed(seed)
            data = env.rollout(200, break_when_any_done=True)
            lengths.append(data.batch_size[0])
            masks = data["next", "ally", "mask"]  # TorchRL groups agents by name: ally_0, ...
            deaths += int((~masks[-1]).sum())
    assert deaths > 0 and max(lengths) > 10  # units died mid-battle; battles went on


@pytest.mark.slow
def test_skrls_ippo_trains_on_the_pettingzoo_adapter():
    pytest.importorskip("skrl")
    from skrl import config

    config.jax.backend = "jax"
    from skrl.envs.wrappers.jax import wrap_env
    from skrl.memories.jax import RandomMemory
    from skrl.multi_agents.jax.ippo import IPPO, IPPO_CFG
    from skrl.trainers.jax import SequentialTrainer
    from skrl.utils.model_instantiators.jax import categorical_model, deterministic_model

    env = wrap_env(marl.make("particle/spread", api="pettingzoo"), wrapper="pettingzoo")
    net = [{"name": "net", "input": "OBSERVATIONS", "layers": [32], "activations": "tanh"}]
    models, memories = {}, {}
    for a in env.possible_agents:
        spaces = {
            "observation_space": env.observation_spaces[a],
            "action_space": env.action_spaces[a],
            "device": env.device,
        }
        models[a] = {
            "policy": categorical_model(**spaces, network=net, output="ACTIONS"),
            "value": deterministic_model(**spaces, network=net, output="ONE"),
        }
        for m in models[a].values():
            m.init_state_dict(role="")
        memories[a] = RandomMemory(memory_size=16, num_envs=env.num_envs, device=env.device)
    none = {a: {} for a in env.possible_agents}  # skrl 2.1.1 refuses its own empty defaults
    cfg = IPPO_CFG(
        rollouts=16,
        learning_epochs=2,
        mini_batches=2,
        learning_rate_scheduler_kwargs=dict(none),
        observation_preprocessor_kwargs=dict(none),
        state_preprocessor_kwargs=dict(none),
        value_preprocessor_kwargs=dict(none),
    )
    cfg.experiment.write_interval = 0
    cfg.experiment.checkpoint_interval = 0
    agent = IPPO(
        possible_agents=env.possible_agents,
        models=models,
        memories=memories,
        observation_spaces=env.observation_spaces,
        state_spaces=env.state_spaces,
        action_spaces=env.action_spaces,
        device=env.device,
        cfg=cfg,
    )
    before = jax.tree.leaves(models["agent_0"]["policy"].state_dict.params)[0].copy()
    trainer = {"timesteps": 48, "headless": True, "disable_progressbar": True}
    SequentialTrainer(env=env, agents=agent, cfg=trainer).train()
    after = jax.tree.leaves(models["agent_0"]["policy"].state_dict.params)[0]
    assert not np.allclose(before, after)  # it updated its policy


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["particle/spread", "combat/3m"])
def test_benchmarls_mappo_runs_on_the_shipped_task_class(env_id, tmp_path):
    pytest.importorskip("benchmarl")
    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models import MlpConfig

    from marl.interop.benchmarl import task

    cfg = ExperimentConfig.get_from_yaml()
    cfg.max_n_iters = 1
    cfg.on_policy_collected_frames_per_batch = 400
    cfg.on_policy_n_envs_per_worker = 8
    cfg.on_policy_n_minibatch_iters = 1
    cfg.on_policy_minibatch_size = 200
    cfg.evaluation = False
    cfg.loggers = []
    cfg.render = False
    cfg.create_json = False
    cfg.checkpoint_at_end = False
    cfg.save_folder = str(tmp_path)
    cfg.prefer_continuous_actions = False
    for k in ("train_device", "sampling_device", "buffer_device"):
        setattr(cfg, k, "cpu")
    exp = Experiment(
        task=task(env_id),
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        seed=0,
        config=cfg,
    )
    exp.run()
    assert exp.n_iters_performed == 1 and exp.total_frames >= 400
