"""`marl train`: the Hydra config tree, its validation, the run directory, and `marl list`."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from flax import serialization
from omegaconf import OmegaConf

import marl
from marl import cli
from marl.algorithms.ppo import PPOConfig
from marl.core import registry
from marl.core.config_parts import part_nodes
from marl.core.registry import env_kwargs, list_algorithms, list_envs
from marl.run.errors import ConfigError
from marl.run.train.compose import compose, group_options
from marl.run.train.resolve import resolve

TINY = [
    "env=particle/simple",
    "algo=ippo",
    "seeds=2",
    "budget=4096",
    "algo.num_envs=4",
    "algo.rollout_length=16",
    "protocol.eval_episodes=4",
]
PPO_FIELDS = {f.name for f in dataclasses.fields(PPOConfig)}
CONF = str(Path(marl.__file__).parent / "conf")
ROOT = Path(__file__).resolve().parents[1]


def read_conf(relative: str) -> str:
    with open(f"{CONF}/{relative}") as f:
        return f.read()


# --- the config tree --------------------------------------------------------------------------
def test_defaults_compose_and_resolve():
    run = resolve(compose([]))
    assert (run.env_id, run.algo) == ("particle/spread", "mappo")
    s = run.settings
    assert (s.seeds, s.budget, s.seed, s.eval_interval, s.eval_episodes) == (
        10,
        2_000_000,
        0,
        None,
        32,
    )
    assert isinstance(s.budget, int)
    assert run.env_kwargs == {} and run.name is None and str(run.out) == "runs"
    assert run.algo_cfg["critic"] == "central" and run.algo_cfg["recurrent"] is False
    assert run.env_steps >= s.budget and run.num_segments in (20, 21)


def test_overrides_reach_env_learner_and_settings():
    overrides = ["env=particle/spread", "algo=ippo", "seeds=3", "budget=2.5e4", "algo.lr=1e-3"]
    overrides += ["env.kwargs.num_agents=5", "protocol.eval_interval=5000", "name=mine"]
    cfg = compose(overrides)
    assert cfg.algo.lr == pytest.approx(1e-3) and cfg.env.kwargs.num_agents == 5
    run = resolve(cfg)
    assert run.env_kwargs == {"num_agents": 5}
    assert run.algo == "ippo" and run.algo_cfg["critic"] == "local"
    assert run.algo_cfg["lr"] == pytest.approx(1e-3)
    assert (run.settings.seeds, run.settings.budget, run.settings.eval_interval) == (
        3,
        25_000,
        5000,
    )
    assert run.name == "mine"
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.algo = "mappo"  # derived values live in a frozen object


def commented(algo: str) -> tuple[dict, list[str]]:
    """Learner `algo`'s keys with the learner it inherits merged in (as Hydra composes them),
    and every key line of the files it reads (each must carry a comment)."""
    from marl.conf import algo_bases, algo_values

    lines = [
        line
        for name in algo_bases(algo)
        for line in read_conf(f"algo/{name}.yaml").splitlines()
        if line and not line.startswith(("#", "defaults:", "  - "))
    ]
    return dict(algo_values(algo)), lines


@pytest.mark.parametrize("algo", ["ippo", "mappo", "happo"])
def test_algo_yaml_sets_every_ppo_field_with_a_comment(algo):
    data, lines = commented(algo)
    assert data["name"] == algo
    assert set(data) - {"name"} == PPO_FIELDS
    for line in lines:
        assert re.search(r"\S\s+#\s+\S", line), f"{algo}.yaml: no comment on {line!r}"


@pytest.mark.parametrize("algo", ["iql", "vdn", "qmix"])
def test_value_based_yaml_sets_every_field_with_a_comment(algo):
    from marl.algorithms.qlearner import QConfig
    from marl.algorithms.qmix import MIXER_KEYS

    data, lines = commented(algo)
    assert data.pop("name") == algo
    fields = {f.name for f in dataclasses.fields(QConfig)}
    assert set(data) == fields | (set(MIXER_KEYS) if algo == "qmix" else set())
    for line in lines:
        assert re.search(r"\S\s+#\s+\S", line), f"{algo}.yaml: no comment on {line!r}"


@pytest.mark.parametrize("algo", ["mfq", "mfac", "il", "decpomfc"])
def test_mean_field_yaml_sets_every_field_with_a_comment(algo):
    from marl.algorithms.decpomfc import DecPOMFCConfig
    from marl.algorithms.mfac import MFACConfig
    from marl.algorithms.mfq import MFQConfig

    config = {"mfq": MFQConfig, "mfac": MFACConfig, "il": MFQConfig, "decpomfc": DecPOMFCConfig}
    config = config[algo]
    data, lines = commented(algo)
    assert data.pop("name") == algo
    assert set(data) == {f.name for f in dataclasses.fields(config)}
    for line in lines:
        assert re.search(r"\S\s+#\s+\S", line), f"{algo}.yaml: no comment on {line!r}"


@pytest.mark.parametrize(
    ("variant", "base", "own"),
    [
        ("mappo", "ippo", {"critic"}),
        ("happo", "mappo", {"critic", "parameter_sharing", "agent_id", "critic_agent_id"}),
        ("vdn", "iql", {"td_lambda"}),
        ("il", "mfq", {"mean_action"}),
    ],
)
def test_learner_variants_inherit_their_base_and_set_only_what_differs(variant, base, own):
    """A variant's file names its base in Hydra's defaults list and sets its name and the keys
    it changes; `marl train algo=<variant>` composes the same keys as the file reader."""
    data = yaml.safe_load(read_conf(f"algo/{variant}.yaml"))
    assert data.pop("defaults") == [base, "_self_"]
    assert set(data) == {"name", *own}
    composed = compose([f"algo={variant}"])["algo"]
    assert OmegaConf.to_container(composed) == commented(variant)[0]


def test_resolved_configs_are_those_saved_before_the_yaml_moved():
    """Env nodes generated from the registry and learner variants by inheritance compose the
    configs the shipped yaml files composed (tests/data/resolved_configs.json, saved before
    the change), keys in the same order."""
    saved = json.loads((ROOT / "tests" / "data" / "resolved_configs.json").read_text())
    for command, config in saved.items():
        got = OmegaConf.to_container(compose(command.split()), resolve=True)
        env = got["env"]  # since saved, a node per part of the env's family (test_env_parts)
        parts = {k: env.pop(k) for k in list(env) if k not in ("id", "kwargs")}
        assert parts == part_nodes(env["id"]), command
        assert json.dumps(got) == json.dumps(config), command


@pytest.mark.integration
def test_real_value_based_learners_refuse_continuous_actions_and_mixed_teams(capsys, tmp_path):
    with pytest.raises(ConfigError, match="qmix acts only in discrete action spaces"):
        resolve(compose(["algo=qmix", "env.kwargs.continuous_actions=true"]))
    assert cli.main(["train", "env=particle/tag", "algo=vdn", f"out={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "vdn mixes the values of one cooperative team" in err and "\n" not in err


def test_mappo_defaults_are_the_documented_mpe_settings():
    """JaxMARL's MPE MAPPO rollout and learning rate, MAPPO's MPE network width and epochs."""
    m = commented("mappo")[0]
    assert (m["lr"], m["num_envs"], m["rollout_length"]) == (2e-3, 16, 128)
    assert (m["epochs"], m["num_minibatches"], m["clip_eps"], m["ent_coef"]) == (10, 2, 0.2, 0.01)
    assert m["hidden"] == [64, 64]
    assert m["recurrent"] is False
    i = commented("ippo")[0]
    assert {k: v for k, v in i.items() if m[k] != v} == {"name": "ippo", "critic": "local"}
    h = commented("happo")[0]
    assert (h["lr"], h["epochs"], h["num_minibatches"], h["ent_coef"]) == (2e-3, 10, 2, 0.01)
    assert (h["huber_delta"], h["max_grad_norm"], h["parameter_sharing"]) == (None, 0.5, "none")


@pytest.mark.parametrize("algo", ["mappo", "qmix", "mfq", "mfac", "decpomfc"])
def test_config_defaults_are_the_shipped_yaml_typed(algo):
    """Learner defaults live in one place: a config dataclass's defaults are its learner's
    shipped yaml, each value of its field's type (`1e5` in yaml would be a string)."""
    from marl.algorithms.decpomfc import DecPOMFCConfig
    from marl.algorithms.mfac import MFACConfig
    from marl.algorithms.mfq import MFQConfig
    from marl.algorithms.qlearner import QConfig
    from marl.algorithms.qmix import MIXER_KEYS
    from marl.learning.learner_config import shipped

    config = {"mappo": PPOConfig, "qmix": QConfig, "mfq": MFQConfig, "mfac": MFACConfig}
    config = {**config, "decpomfc": DecPOMFCConfig}[algo]
    data = {k: v for k, v in shipped(algo).items() if k not in MIXER_KEYS}
    assert config.from_dict(data) == config() == config(**data)


def test_a_config_field_the_yaml_does_not_set_fails_at_import():
    from marl.learning.learner_config import LearnerConfig, defaults_from

    with pytest.raises(TypeError, match="mfac.yaml sets no not_a_field"):

        @dataclasses.dataclass(frozen=True)
        @defaults_from("mfac")
        class Broken(LearnerConfig):
            gamma: float
            not_a_field: int


@pytest.mark.parametrize("algo", ["ippo", "mappo", "happo", "iql", "vdn", "qmix", "il"])
def test_python_learners_read_their_own_yaml(algo, monkeypatch):
    """`marl.algorithm(name)(env)` takes its defaults from `marl/conf/algo/<name>.yaml`: a value
    changed there reaches the config the learner builds from Python."""
    import importlib

    from marl.algorithms.mfq import MFQConfig
    from marl.algorithms.qlearner import QConfig
    from marl.learning.learner_config import shipped

    module = importlib.import_module(f"marl.algorithms.{'mfq' if algo == 'il' else algo}")
    monkeypatch.setattr(
        module, "shipped", lambda name: {**shipped(name), "gamma": 0.5} if name == algo else None
    )
    built = []
    for cls in (PPOConfig, QConfig, MFQConfig):
        monkeypatch.setattr(cls, "checks", lambda self: built.append(self) or {})
    family = {"il": "combat/battle64", "ippo": "particle/spread", "mappo": "particle/spread"}
    marl.algorithm(algo)(marl.make(family.get(algo, "combat/3m")))
    assert built and built[-1].gamma == 0.5


def test_resolve_derives_and_builds_once_and_replace_keeps_the_config_true(tmp_path):
    """The resolved run carries its task, folder, record name, env and learner (the learner
    built for the run's total updates); its config (config.yaml's) follows a replaced field
    instead of keeping the value it was first read with."""
    run = resolve(
        compose([*TINY, "env.kwargs.continuous_actions=true", f"out={tmp_path}", "name=a"])
    )
    assert run.task == "simple[continuous_actions=true]"
    assert run.parent == tmp_path / "particle" / run.task / "ippo"
    assert run.folder == run.parent / "a" and run.record_algo == "ippo"
    assert run.train.steps_per_update == 64
    assert run.env.spec.name == "particle/simple" and not run.env.spec.discrete
    assert run.config["name"] == "a" and run.config["derived"]["total_updates"] == 66
    renamed = dataclasses.replace(run, name="b")
    assert renamed.config["name"] == "b" and renamed.folder == run.parent / "b"
    assert renamed.env is run.env and renamed.train is run.train  # nothing built again


def test_every_registered_env_has_a_generated_node_and_no_yaml():
    """Env nodes are generated from the registry (`{id, kwargs: {}}` and a node per part): no
    env yaml ships, and `env=ID env.kwargs.x=...` composes for every id."""
    assert group_options("env") == []
    for env_id in list_envs():
        assert OmegaConf.to_container(compose([f"env={env_id}"])["env"]) == {
            "id": env_id,
            "kwargs": {},
            **part_nodes(env_id),
        }
    env = compose(["env=combat/3m", "env.kwargs.opponent=self_play"])["env"]
    assert env["kwargs"] == {"opponent": "self_play"}


@pytest.mark.integration
def test_every_built_in_keyword_is_documented_and_shown_by_train_help(capsys):
    """Each constructor keyword of a built-in env (but `name`) has a note in its class
    docstring's `Constructor:` section, and `marl train env=ID --help` lists it with the
    constructor's default."""
    from marl.run.train.catalog import keyword_notes

    for env_id in list_envs():
        notes = keyword_notes(registry.env_factory(env_id))
        missing = sorted(set(env_kwargs(env_id)) - set(notes) - {"name"})
        assert not missing, f"{env_id}: no Constructor note for {missing}"
    with pytest.raises(SystemExit):
        cli.main(["train", "env=cleanup/comm", "--help"])
    out = capsys.readouterr().out
    assert "env.current.gyres=[2,2]" in out and "env.observer.communication=true" in out
    assert "env.current.current_speed=0.05" in out and "fastest water, per step" in out
    assert "env.kwargs.episode_limit=200" in out  # a keyword no part holds


def test_every_top_level_and_protocol_key_has_a_comment():
    for name in ("config.yaml", "protocol/default.yaml"):
        for line in read_conf(name).splitlines():
            if re.match(r"^\w+:", line) and not line.startswith("defaults:"):
                assert re.search(r"\S\s+#\s+\S", line), f"{name}: no comment on {line!r}"


# --- errors: one line naming the valid choices, exit code 2, nothing compiled -----------------
@pytest.mark.integration
@pytest.mark.parametrize(
    "override, needles",
    [
        ("env=particle/nope", ["unknown environment 'particle/nope'", "particle/spread"]),
        (
            "algo=nope",
            ["unknown algorithm 'nope'", "il, ippo, iql, mappo, mfac, mfq, qmix, teams, vdn"],
        ),
        ("algo.lrr=1e-3", ["lrr", "valid:", "critic_lr", "num_envs"]),
        ("env.kwargs.num_agent=5", ["num_agent", "valid:", "num_agents=3"]),
        ("protocol=nope", ["unknown protocol 'nope'", "default"]),
        ("protocol.eval_intreval=5", ["protocol.eval_intreval", "protocol.eval_interval"]),
        ("sedd=3", ["'sedd'", "seeds", "budget"]),
        ("budget=0", ["budget must be a positive integer"]),
        ("budget=1.5", ["budget must be a positive integer"]),
        ("seeds=-2", ["seeds must be a positive integer"]),
        ("protocol.eval_episodes=0", ["protocol.eval_episodes must be a positive integer"]),
        ("algo.critic=nope", ["critic='nope'", "central or local"]),
        ("env.kwargs.num_agents=0", ["num_agents must be >= 1"]),
        ("name=a/b", ["name must be one directory name"]),
        ("label=qmix/fast", ["label must be a non-empty name without ',' or '/'"]),
        ("protocol.metric=won", ["protocol.metric 'won'", "valid: return, length, collisions"]),
        ("protocol.absolute_episodes=-1", ["protocol.absolute_episodes must be an integer >= 0"]),
        ("protocol.num_evaluations=0", ["protocol.num_evaluations must be a positive integer"]),
    ],
)
def test_mistakes_exit_2_with_one_line(override, needles, capsys, tmp_path):
    code = cli.main(["train", "env=particle/spread", override, f"out={tmp_path}"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("marl: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err
    assert not any(tmp_path.iterdir()), "no run directory for a rejected config"


def test_value_based_learner_on_continuous_actions_is_refused(monkeypatch):
    def make_train(env, cfg=None, total_updates=None):
        raise AssertionError("never built: rejected before")

    make_train.action_kinds = ("discrete",)  # what the learner says of itself
    monkeypatch.setitem(registry._ALGORITHMS, "fakeq", make_train)
    with pytest.raises(ConfigError, match="fakeq acts only in discrete action spaces.*continuous"):
        resolve(compose(["algo=fakeq", "env.kwargs.continuous_actions=true"]))


COUNTED = [o if o != "algo=ippo" else "algo=counted" for o in TINY]


def _counted_ippo(monkeypatch, says: bool, size=None) -> list:
    """Register `counted`: IPPO, noting the run length of each build; it says its update's
    size (IPPO's, or `size`) when `says`."""
    ippo, built = registry.algorithm("ippo"), []

    def counted(env, cfg=None, total_updates=None):
        built.append(total_updates)
        return ippo(env, cfg, total_updates)

    if says:
        counted.steps_per_update = ippo.steps_per_update if size is None else lambda e, c: size
    monkeypatch.setitem(registry._ALGORITHMS, "counted", counted)
    return built


def test_a_learner_that_says_its_update_size_is_built_once(monkeypatch):
    built = _counted_ippo(monkeypatch, says=True)
    run = resolve(compose(COUNTED))
    assert built == [run.total_updates] and run.steps_per_update == 64


def test_a_learner_that_does_not_say_is_built_first_to_read_it(monkeypatch):
    built = _counted_ippo(monkeypatch, says=False)
    run = resolve(compose(COUNTED))
    assert built == [None, run.total_updates] and run.steps_per_update == 64


def test_a_learner_whose_train_says_another_update_size_is_refused(monkeypatch):
    _counted_ippo(monkeypatch, says=True, size=7)
    with pytest.raises(ConfigError, match="says steps_per_update=64, where it says 7"):
        resolve(compose(COUNTED))


def test_every_built_in_learner_says_its_update_size():
    for name in list_algorithms():
        assert callable(getattr(registry.algorithm(name), "steps_per_update", None)), name


@pytest.mark.integration
def test_dry_run_prints_the_resolved_config(capsys, tmp_path):
    assert cli.main(["train", "--dry-run", *TINY, "budget=1e4", f"out={tmp_path}"]) == 0
    out = capsys.readouterr().out
    printed = yaml.safe_load(out.rsplit("\n", 2)[0])
    assert printed["budget"] == 10_000 and printed["algo"]["num_envs"] == 4
    assert printed["derived"]["steps_per_update"] == 64
    assert "particle/simple with ippo: 2 seeds" in out
    assert not any(tmp_path.iterdir())


@pytest.mark.integration
def test_existing_run_name_is_refused_before_training(capsys, tmp_path):
    (tmp_path / "particle" / "simple" / "ippo" / "taken").mkdir(parents=True)
    assert cli.main(["train", *TINY, f"out={tmp_path}", "name=taken"]) == 2
    assert "run directory exists" in capsys.readouterr().err


# --- help and list ----------------------------------------------------------------------------
@pytest.mark.integration
def test_train_help_lists_groups_options_and_keys(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for needle in ["env=particle/spread", "particle/world_comm", "algo=mappo", "happo, il, ippo"]:
        assert needle in out
    for needle in ["seeds=10", "budget=2e6", "protocol.eval_episodes=32", "env.kwargs.", "lr"]:
        assert needle in out


@pytest.mark.integration
def test_list_adds_an_algorithms_section(capsys):
    assert cli.main(["list", "--family", "particle"]) == 0
    out = capsys.readouterr().out
    table, _, algos = out.partition("\nalgorithms:\n")
    assert "particle/spread" in table
    names = [line.split()[0] for line in algos.splitlines() if line.strip()]
    assert names == list_algorithms()
    assert "IPPO" in algos and "MAPPO" in algos


# --- a tiny end-to-end run --------------------------------------------------------------------
# 4 evaluations, not the default 20 (each one a segment, an evaluation and a checkpoint), and a
# short absolute metric: what the run directory holds does not depend on how many
RUN = [*TINY, "protocol.num_evaluations=4", "protocol.absolute_episodes=8"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The tiny run twice (same seed), sharing a persistent compilation cache so the second
    one does not compile again: (stdout of the first, run directories)."""
    import jax
    from jax._src import compilation_cache

    root = tmp_path_factory.mktemp("runs")
    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    saved = {n: getattr(jax.config, n) for n in names}
    jax.config.update(names[0], str(root / "xla-cache"))
    jax.config.update(names[1], 0.0)
    compilation_cache.reset_cache()
    outputs, dirs = [], []
    try:
        for k in range(2):
            label = ["label=ippo-twin"] if k else []  # the same run under its own name
            with contextlib.redirect_stdout(io.StringIO()) as out:
                assert cli.main(["train", *RUN, *label, f"out={root / str(k)}"]) == 0
            outputs.append(out.getvalue())
            (run_dir,) = (root / str(k) / "particle" / "simple" / "ippo").iterdir()
            dirs.append(run_dir)
    finally:
        for n, v in saved.items():
            jax.config.update(n, v)
        compilation_cache.reset_cache()
    return outputs[0], dirs


@pytest.mark.integration
def test_run_writes_the_run_directory(runs):
    out, (run_dir, _) = runs
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "best_params.msgpack",
        "config.yaml",
        "final.json",
        "meta.json",
        "metrics.jsonl",
        "params.msgpack",
        "record.json",
    ]
    assert str(run_dir) in out and "final return" in out
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["env"]["id"] == "particle/simple" and config["algo"]["name"] == "ippo"
    assert config["budget"] == 4096 and config["algo"]["rollout_length"] == 16
    derived = config["derived"]

    record = json.loads((run_dir / "record.json").read_text())
    runs = record["particle"]["simple"]["ippo"]
    assert sorted(runs) == ["run_0", "run_1"]
    for run in runs.values():
        steps = [run[f"step_{k}"]["step_count"] for k in range(len(run) - 1)]
        assert steps[0] == 0 and steps == sorted(set(steps))
        assert len(steps) == derived["evaluations"] and steps[-1] == derived["env_steps"]
        assert all(len(run[f"step_{k}"]["episode_return"]) == 4 for k in range(len(steps)))
        assert (
            len(run["absolute_metrics"]["episode_return"])
            == config["protocol"]["absolute_episodes"]
        )
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["finished"] and meta["protocol"]["version"] == "1"
    assert len(meta["train_metrics"]) == derived["evaluations"] - 1
    assert meta["anchors"]["random"] < meta["anchors"]["reference"]
    assert meta["versions"]["jax"] and meta["steps_per_second"] > 0
    # the code it ran (this checkout's commit, or the installed version) and the env's version
    assert meta["code"].get("commit") or meta["code"].get("version")
    assert meta["env_version"] == {"family": "particle", "version": "1"}
    assert meta["lower_is_better"] == []  # particle/simple: higher is better throughout

    final = json.loads((run_dir / "final.json").read_text())
    assert math.isfinite(final["return_mean"]) and math.isfinite(final["return_std"])
    last = len(runs["run_0"]) - 2
    assert final["final"]["return"] == pytest.approx(
        [np.mean(runs[r][f"step_{last}"]["episode_return"]) for r in ("run_0", "run_1")]
    )
    assert final["absolute"]["return"] == pytest.approx(
        [np.mean(runs[r]["absolute_metrics"]["episode_return"]) for r in ("run_0", "run_1")]
    )
    assert final["return_mean"] == pytest.approx(np.mean(final["final"]["return"]))
    assert final["env_steps"] == derived["env_steps"]
    assert final["wall_time"] > 0 and final["steps_per_second"] > 0
    assert final["versions"]["jax"] and final["device"]["platform"]
    assert final["code"] == meta["code"] and final["env_version"] == meta["env_version"]

    params = serialization.msgpack_restore((run_dir / "params.msgpack").read_bytes())
    leaves = [np.asarray(x) for x in _leaves(params)]
    assert leaves and all(x.shape[0] == 2 and np.isfinite(x).all() for x in leaves)


def _leaves(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    else:
        yield tree


@pytest.mark.integration
def test_run_is_deterministic(runs):
    """The same run twice (same root seed): every evaluation, the final and the best
    parameters bit for bit (the runner's determinism; tests/test_training.py's direct check of
    it runs with -m slow)."""
    _, (first, second) = runs

    def returns(run_dir, algo):
        return json.loads((run_dir / "record.json").read_text())["particle"]["simple"][algo]

    assert returns(first, "ippo") == returns(second, "ippo-twin")  # label names the algorithm
    config = yaml.safe_load((second / "config.yaml").read_text())
    assert config["label"] == "ippo-twin" and config["algo"]["name"] == "ippo"
    final = [json.loads((d / "final.json").read_text()) for d in (first, second)]
    assert final[0]["final"] == final[1]["final"]
    assert final[0]["absolute"] == final[1]["absolute"]
    for saved in ("params.msgpack", "best_params.msgpack"):
        assert (first / saved).read_bytes() == (second / saved).read_bytes()


def test_protocol_fallbacks_and_run_names_that_leave_the_parent_are_refused():
    """A protocol without num_evaluations / absolute_episodes gets the documented 20 / 320;
    name=.. (the parent directory) is refused like a name with '/'."""
    run = resolve(compose([*TINY, "~protocol.num_evaluations", "~protocol.absolute_episodes"]))
    assert (run.settings.num_evaluations, run.settings.absolute_episodes) == (20, 320)
    for bad in ("..", "."):
        with pytest.raises(ConfigError, match="name must be one directory name"):
            resolve(compose([*TINY, f"name={bad}"]))


def test_timestamped_run_directories_of_one_second_get_numbered_suffixes(tmp_path):
    """Three runs claimed at 2026-01-02 03:04:05 get 20260102-030405, -2 and -3."""
    from datetime import datetime

    from marl.run.folder.claiming import _mkdir

    now = datetime(2026, 1, 2, 3, 4, 5)
    got = [_mkdir(tmp_path / "p", None, now).name for _ in range(3)]
    assert got == ["20260102-030405", "20260102-030405-2", "20260102-030405-3"]
    with pytest.raises(FileExistsError):
        _mkdir(tmp_path / "p", "20260102-030405-2", now)


@pytest.mark.parametrize(
    "override, needle",
    [
        ("label='a,b'", "label must be a non-empty name without ',' or '/', got 'a,b'"),
        ("seeds=true", "seeds must be a positive integer, got True"),
        ("resume=1", "resume must be true or false, got 1"),
        ("checkpoint=0", "checkpoint must be true or false, got 0"),
    ],
)
def test_bools_are_not_counts_and_labels_take_no_comma(override, needle):
    """true is no seed count and 1 / 0 are no flags (Python's True == 1 notwithstanding); a
    label with ',' would split in the comma-separated lists of reports."""
    with pytest.raises(ConfigError) as err:
        resolve(compose([*TINY, override]))
    assert needle in str(err.value)
