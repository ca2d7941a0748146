"""One name per thing: each type, function and helper defined once, where the layers put it."""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("marl", "envs", "algorithms", "baselines")


def _definitions(name: str, folders: tuple[str, ...] = PACKAGES) -> list[str]:
    """The file of every module-level class, function or assignment called `name`."""
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                names = []
                if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                    names = [node.name]
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names = [node.target.id]
                if name in names:
                    found.append(str(path.relative_to(ROOT)))
    return found


def test_one_policy_type():
    """`marl.core.learner.Policy` is the only Policy: the renderer acts through it too."""
    assert _definitions("Policy") == ["marl/core/learner.py"]


def test_one_random_policy():
    assert _definitions("random_policy") == ["baselines/random.py"]


def test_the_renderer_plays_the_random_baseline_by_default():
    """`render_episode` without a trained policy plays `marl.baselines.random_policy` (the
    lower anchor's policy), the same episode as when it is passed explicitly."""
    import marl
    from marl.baselines import random_policy
    from marl.run.render import render_episode

    env = marl.make("particle/spread")
    key = jax.random.key(3)
    default = render_episode(env, key, steps=4)
    explicit = render_episode(env, key, steps=4, trained=(random_policy(env), None))
    assert len(default) == len(explicit) == 5
    for a, b in zip(default, explicit, strict=True):
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
