"""`marl list` builds no environment and imports no JAX: the built-in ids' facts come from the
catalog's table, which this file holds to the envs themselves; learners' text from their
source."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from marl import cli
from marl.core import registry
from marl.run.train import catalog


def builtin_ids() -> list[str]:
    """The registered ids whose constructor is marl's own."""
    return [i for i in registry.list_envs() if catalog._marls_own(registry._ENVS[i], "marl.envs")]


def test_every_built_in_id_has_its_facts_and_nothing_else_does():
    assert set(catalog.BUILTIN_FACTS) == set(builtin_ids())
    assert len(catalog.BUILTIN_FACTS) > 40 and set(catalog.NEEDS) <= set(catalog.BUILTIN_FACTS)


@pytest.mark.parametrize("env_id", sorted(catalog.BUILTIN_FACTS))
def test_the_facts_are_the_built_envs(env_id):
    needs = catalog.NEEDS.get(env_id)
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{env_id} needs {needs}")
    spec = registry.make(env_id).spec
    built = (spec.num_agents, catalog.describe_space(spec.action_space), spec.episode_limit)
    assert catalog.BUILTIN_FACTS[env_id] == built


@pytest.fixture
def no_building(monkeypatch):
    """Every way to build an env or import a learner failing; the built-ins unresolved (as
    in a fresh process, whatever earlier tests of this one resolved)."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"marl list built or imported {args}")

    for group, table in (("marl.envs", "_ENVS"), ("marl.algorithms", "_ALGORITHMS")):
        fresh = {ep.name: ep.value for ep in registry._BUILTINS if ep.group == group}
        monkeypatch.setattr(registry, table, {**getattr(registry, table), **fresh})

    monkeypatch.setattr(registry, "make", refuse)
    monkeypatch.setattr(registry, "load_attr", refuse)
    monkeypatch.setattr(registry, "algorithm", refuse)


def test_marl_list_builds_no_env_and_imports_no_learner(no_building, capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if "/" in line[:30]}
    for env_id, (agents, actions, limit) in catalog.BUILTIN_FACTS.items():
        if env_id not in catalog.NEEDS:
            assert rows[env_id] == [str(agents), *actions.split(), str(limit)], env_id
    assert "IPPO (de Witt et al. 2020)" in out


def test_a_learner_not_imported_yet_is_described_from_its_source(monkeypatch):
    monkeypatch.setitem(registry._ALGORITHMS, "qmix", "marl.algorithms.qmix:make_train")
    monkeypatch.setattr(registry, "algorithm", lambda name: pytest.fail("imported"))
    assert catalog.describe_algorithm("qmix").startswith("QMIX (Rashid et al. 2018")


def test_marl_list_imports_no_jax_nor_any_env_or_learner_module():
    code = (
        "import json, sys; from marl import cli; cli.main(['list']); "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jax', 'flax', 'optax', 'gymnax') or m.startswith(('marl.envs.', 'marl.algorithms.')))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "particle/spread" in done.stdout and "qmix" in done.stdout
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_a_resolved_built_in_keeps_its_facts(monkeypatch):
    from marl.envs.particle.scenarios.spread import Spread

    monkeypatch.setitem(registry._ENVS, "particle/spread", Spread)  # as `make` leaves it
    monkeypatch.setattr(registry, "make", lambda *a, **k: pytest.fail("built"))
    assert catalog.env_facts("particle/spread") == ("3", "Discrete(5)", "25")


def test_an_id_registered_over_a_built_in_is_built(monkeypatch):
    from marl.envs.particle.scenarios.spread import Spread

    monkeypatch.setattr(registry, "_ENVS", dict(registry._ENVS))
    registry.register("particle/spread", lambda: Spread(num_agents=5), overwrite=True)
    assert catalog.env_facts("particle/spread") == ("5", "Discrete(5)", "25")


def test_a_missing_optional_package_is_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jaxmarl" else real(name, *a)
    )
    monkeypatch.setitem(registry._ENVS, "jaxmarl/smax", "marl.envs.jaxmarl_smax:JaxMARLSMAX")
    assert catalog.env_facts("jaxmarl/smax") == ("-", "unavailable: needs jaxmarl", "-")


LEARNERS = {"ippo": "ippo:make_train", "qmix": "qmix:make_train", "il": "mfq:make_train_il",
            "decpomfc": "decpomfc:make_train", "teams": "teams:make_train"}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_a_learners_text_read_from_source_is_the_imported_ones(name):
    path = f"marl.algorithms.{LEARNERS[name]}"
    static = catalog._first_paragraph(catalog._source_doc(path), 90)
    make_train = registry.load_attr(path)
    module = sys.modules[make_train.__module__]
    own = make_train.__name__ == "make_train"
    doc = (module.__doc__ if own else None) or make_train.__doc__ or ""
    assert static == catalog._first_paragraph(doc, 90) and static
