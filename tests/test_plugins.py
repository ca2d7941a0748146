"""Extension without editing marl: a throwaway package's env and learner reach `marl list` and
`marl train` through entry points, and through their import paths with no registration."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
import yaml

from marl import cli
from marl.core import registry

ENV = '''
import jax
import jax.numpy as jnp
from flax import struct

from marl import AgentGroup, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Discrete


class RaceState(struct.PyTreeNode):
    target: jax.Array
    t: jax.Array


class Race(MultiAgentEnv[RaceState]):
    """Every agent is rewarded for choosing the number it sees."""

    reference_policy = "racepkg.policies:oracle"

    def __init__(self, num_agents: int = 2, num_choices: int = 3, episode_limit: int = 8):
        self.k = num_choices
        self.spec = EnvSpec(
            name="mine/race", num_agents=num_agents, obs_dim=num_choices,
            state_dim=num_choices, action_space=Discrete(num_choices),
            groups=(AgentGroup("agent", tuple(range(num_agents))),),
            agent_names=tuple(f"agent_{i}" for i in range(num_agents)),
            episode_limit=episode_limit,
        )

    def _ts(self, state, reward):
        n, seen = self.spec.num_agents, jax.nn.one_hot(state.target, self.k)
        return TimeStep(
            obs=jnp.tile(seen, (n, 1)), state=seen, avail_actions=jnp.ones((n, self.k), bool),
            reward=reward, terminated=jnp.zeros((), bool), truncated=jnp.zeros((), bool),
            alive=jnp.ones((n,), bool), metrics={},
        )

    def reset(self, key):
        state = RaceState(jax.random.randint(key, (), 0, self.k), jnp.zeros((), jnp.int32))
        return state, self._ts(state, jnp.zeros(self.spec.num_agents))

    def step_env(self, key, state, actions):
        reward = (actions == state.target).astype(jnp.float32)
        state = state.replace(target=jax.random.randint(key, (), 0, self.k))
        return state, self._ts(state, reward)
'''

POLICIES = '''
import jax.numpy as jnp

from marl.core.learner import Policy


def oracle(env):
    """Choose the number seen: the best score, the anchor's reference."""
    act = lambda params, obs, avail, carry, start, key, greedy: (
        jnp.argmax(obs, -1).astype(jnp.int32), carry)
    return Policy(initial_carry=lambda: None, act=act)
'''

LEARNER = '''
import marl


def make_train(env, cfg=None, total_updates=None):
    """Tiny IPPO: IPPO with small layers."""
    return marl.algorithm("ippo")(env, {**(cfg or {}), "hidden": [16]}, total_updates)
'''

ENTRY_POINTS = """
[marl.envs]
mine/race = racepkg.race:Race

[marl.algorithms]
tiny-ippo = racepkg.learner:make_train
"""

SHORT = ["seeds=1", "budget=1024", "algo.num_envs=4", "algo.rollout_length=16",
         "protocol.eval_episodes=2", "protocol.absolute_episodes=2",
         "checkpoint=false"]  # fmt: skip


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """`racepkg` on sys.path with a dist-info naming its entry points, as `pip install`
    would leave it; the registry's tables restored afterwards."""
    pkg = tmp_path / "site" / "racepkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "race.py").write_text(textwrap.dedent(ENV))
    (pkg / "policies.py").write_text(textwrap.dedent(POLICIES))
    (pkg / "learner.py").write_text(textwrap.dedent(LEARNER))
    info = tmp_path / "site" / "racepkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: racepkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(registry, "_ENVS", dict(registry._ENVS))
    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    yield tmp_path
    for name in [m for m in sys.modules if m == "racepkg" or m.startswith("racepkg.")]:
        del sys.modules[name]


@pytest.mark.integration
def test_an_installed_packages_env_and_learner_are_listed_and_trained(plugin, capsys):
    assert cli.main(["list", "--family", "mine"]) == 0
    out = capsys.readouterr().out
    assert "mine/race" in out and "tiny-ippo" in out and "Tiny IPPO" in out
    runs = plugin / "runs"
    args = ["train", "env=mine/race", "algo=tiny-ippo", f"out={runs}", "name=ep", *SHORT]
    assert cli.main(args) == 0
    meta = json.loads((runs / "mine/race/tiny-ippo/ep/meta.json").read_text())
    assert meta["finished"] and meta["anchors"]["reference"] is not None  # the oracle's hook
    assert meta["anchors"]["reference"] > meta["anchors"]["random"]
    # every hyperparameter of the plugin learner is recorded, not only its name
    saved = yaml.safe_load((runs / "mine/race/tiny-ippo/ep/config.yaml").read_text())
    hyper = saved["derived"]["hyperparameters"]
    assert hyper["hidden"] == [16] and hyper["num_envs"] == 4 and "lr" in hyper
    assert meta["config"]["derived"]["hyperparameters"] == hyper


@pytest.mark.integration
@pytest.mark.slow
def test_import_paths_train_without_any_registration(plugin, capsys):
    runs = plugin / "runs"
    env, algo = "racepkg.race:Race", "racepkg.learner:make_train"
    args = ["train", f"env={env}", f"algo={algo}", "env.kwargs.num_agents=3", f"out={runs}",
            "name=path", *SHORT]  # fmt: skip
    assert cli.main(args) == 0
    run = runs / "racepkg.race" / "Race[num_agents=3]" / "racepkg.learner.make_train" / "path"
    record = json.loads((run / "record.json").read_text())
    assert list(record) == ["racepkg.race"]
    assert cli.main(["train", "env=racepkg.race:Nope", f"out={runs}", *SHORT]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("marl: error: cannot import environment 'racepkg.race:Nope'")
    assert len(err.splitlines()) == 1
