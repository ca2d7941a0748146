"""Each env family's behaviour version is pinned by golden rollouts: what its envs return for
fixed keys and random actions (`marl.core.testing.rollout_fingerprint`) may change only with
its `BEHAVIOUR_VERSION`. Regenerate with `python scripts/golden_rollouts.py --write` in the
commit that bumps the version."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import pytest

from marl.core.registry import env_version, list_envs, make
from marl.core.testing import fingerprint_difference, rollout_fingerprint

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden_rollouts.json").read_text())
FIRST = [(family, entry["envs"] and next(iter(entry["envs"]))) for family, entry in GOLDEN.items()]
REST = [(f, e) for f, entry in GOLDEN.items() for e in list(entry["envs"])[1:]]


def test_every_registered_family_is_pinned():
    families = {env_id.split("/")[0] for env_id in list_envs()}
    assert families <= set(GOLDEN), f"no golden rollout for {sorted(families - set(GOLDEN))}"


def _check(family: str, env_id: str) -> None:
    if family == "jaxmarl":
        pytest.importorskip("jaxmarl")
    golden = GOLDEN[family]
    version = env_version(env_id)
    assert version == golden["version"], (
        f"{family}'s BEHAVIOUR_VERSION is {version} but the golden rollouts pin "
        f"{golden['version']}: run python scripts/golden_rollouts.py --write"
    )
    diff = fingerprint_difference(golden["envs"][env_id], rollout_fingerprint(make(env_id)))
    assert diff is None, (
        f"{env_id} returns something else than at {family} version {version} ({diff}): bump "
        f"BEHAVIOUR_VERSION in envs/{family} and run python scripts/golden_rollouts.py "
        "--write (or undo the change)"
    )


@pytest.mark.parametrize("family,env_id", FIRST)
def test_golden_rollout(family, env_id):
    _check(family, env_id)


@pytest.mark.slow
@pytest.mark.parametrize("family,env_id", REST)
def test_golden_rollout_other_maps(family, env_id):
    _check(family, env_id)


def test_a_changed_step_breaks_the_fingerprint():
    """The check can fail: combat/3m with every reward scaled by 1.01 (and, separately, its
    first two agents' observations swapped) no longer matches its golden rollout."""
    env = make("combat/3m")
    golden = GOLDEN["combat"]["envs"]["combat/3m"]

    class Scaled(type(env)):
        def step_env(self, key, state, actions):
            state, ts = super().step_env(key, state, actions)
            return state, ts.replace(reward=ts.reward * 1.01)

    class Swapped(type(env)):
        def step_env(self, key, state, actions):
            state, ts = super().step_env(key, state, actions)
            return state, ts.replace(obs=ts.obs[jnp.array([1, 0, 2])])

    for cls in (Scaled, Swapped):
        changed = cls.__new__(cls)
        changed.__dict__.update(env.__dict__)
        assert fingerprint_difference(golden, rollout_fingerprint(changed)) is not None
