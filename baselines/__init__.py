"""Non-learned reference policies (random, scripted) and the anchor scores that normalise
per-task results: `normalised = (score - random) / (reference - random)`, the reference being
the task's scripted policy.

Scripted policies: particle scenarios (`baselines.particle`), focus fire on combat battles
(`baselines.combat`), the wavefront planner on pathfinding maps (`baselines.pathfinding`),
POGEMA's A* agent on grid maps (`baselines.grid`) and go-to-nearest-plastic on cleanup seas
(`baselines.cleanup`); the last three are privileged: they read the environment state."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.core.registry import load_attr
from marl.core.wrappers import env_hook
from marl.learning.evaluation import evaluate

from .cleanup import greedy_policy
from .combat import focus_fire_policy
from .grid import astar_policy
from .particle import Gains, NoScriptedPolicy, scripted_ids
from .pathfinding import PlannerGains, planner_policy
from .random import random_policy

__all__ = [
    "Gains",
    "NoScriptedPolicy",
    "PlannerGains",
    "anchor_scores",
    "astar_policy",
    "focus_fire_policy",
    "greedy_policy",
    "planner_policy",
    "random_policy",
    "scripted_ids",
    "scripted_policy",
]


def scripted_policy(env: MultiAgentEnv, gains: Gains | None = None) -> Policy:
    """The scripted reference policy of `env`: the env class's `reference_policy` hook (focus
    fire on combat battles, the planner on pathfinding maps, greedy collection at sea, the
    particle scenario's controller), built with `gains` where given. NoScriptedPolicy (a
    KeyError) when the env has none."""
    path = env_hook(env, "reference_policy")
    if path is None:
        raise NoScriptedPolicy(f"{env.spec.name} has no scripted reference policy")
    factory = load_attr(path)
    return factory(env) if gains is None else factory(env, gains)


def anchor_scores(
    env: MultiAgentEnv, num_episodes: int = 320, key: jax.Array | None = None
) -> dict[str, float | None]:
    """Mean team return of the random and the scripted policy over `num_episodes` episodes
    (`marl.learning.evaluation.evaluate`, jitted; both on the same episode keys): the lower and
    upper anchors of the task's normalised score.

    Returns {"random": float, "reference": the scripted policy's, or None when `env` has no
    scripted policy}.
    """
    key = jax.random.key(0) if key is None else key

    def mean_return(policy) -> float:
        run = jax.jit(lambda k: jnp.mean(evaluate(env, policy, None, k, num_episodes)["return"]))
        return float(run(key))

    try:
        scripted = scripted_policy(env)
    except NoScriptedPolicy:
        scripted = None
    return {
        "random": mean_return(random_policy(env)),
        "reference": None if scripted is None else mean_return(scripted),
    }
