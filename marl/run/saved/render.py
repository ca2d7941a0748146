"""Play an episode and save it as a GIF with the environment family's viewer.

`render_episode` is generic; `save_gif` draws with the env's viewer (`viewer_module`, e.g.
`marl.envs.particle.viewer`): the viewer's own `save_gif` if it has one, else its
`draw_frame`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.baselines.random import random_policy
from marl.core.animation import write_gif
from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.core.wrappers import env_hook
from marl.learning.acting import Acting, policy_actions, rollout

__all__ = ["render_episode", "save_gif", "viewer", "write_gif"]


def render_episode(
    env: MultiAgentEnv,
    key: jax.Array,
    steps: int | None = None,
    trained: tuple[Policy, Any] | None = None,
) -> list[Any]:
    """States of one episode: the reset state, then one per step.

    Plays `steps` steps (default `spec.episode_limit`) or until the episode ends, whichever
    comes first, with `trained` = (a `marl.core.learner.Policy`, its parameters for one seed)
    acting greedily; by default `marl.baselines.random_policy` (random valid actions).
    """
    policy, params = (random_policy(env), None) if trained is None else trained
    steps = env.spec.episode_limit if steps is None else steps

    def act(c: Acting, key: jax.Array) -> tuple[jax.Array, Any]:
        return policy_actions(
            env, policy, params, c.env_state, c.timestep, c.carry, c.start, key, True
        )

    def record(c: Acting, ts, actions, carry, nts) -> tuple[Acting, Any]:
        return c.replace(carry=carry, start=jnp.zeros((), bool)), (c.env_state, nts.done)

    @jax.jit
    def play(key: jax.Array) -> tuple[Any, Any, jax.Array]:
        key, key_reset = jax.random.split(key)
        state, ts = env.reset(key_reset)
        carry = policy.initial_carry()
        init = Acting(state, ts, key, carry, jnp.ones((), bool))
        end, (acted_in, done) = rollout(env.step, init, steps, act, record)
        return acted_in, end.env_state, done

    acted_in, last, done = play(key)
    done = np.asarray(done)
    played = int(np.argmax(done)) + 1 if done.any() else steps
    following = [jax.tree.map(lambda x, t=t: x[t], acted_in) for t in range(1, played)]
    after = last if played == steps else jax.tree.map(lambda x: x[played], acted_in)
    return [jax.tree.map(lambda x: x[0], acted_in), *following, after]


def viewer(env: MultiAgentEnv) -> Any:
    """The viewer module of `env` (its class's `viewer_module` hook)."""
    path = env_hook(env, "viewer_module")
    if path is None:
        raise NotImplementedError(
            f"no viewer for {env.spec.name!r}: its class sets no viewer_module (a module with "
            "draw_frame(ax, frame, title))"
        )
    return importlib.import_module(path)


def save_gif(env: MultiAgentEnv, states: list[Any], path: str | Path, fps: int = 10) -> Path:
    """Draw `states` (e.g. from `render_episode`) with the family viewer into a GIF at `path`
    (its directory is created)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    view = viewer(env)
    frames = [env.render_frame(s) for s in states]
    titles = [f"{env.spec.name}  t={k}" for k in range(len(states))]
    if hasattr(view, "save_gif"):  # a viewer with its own framing (e.g. combat's view box)
        return view.save_gif(frames, path, fps=fps, titles=titles)
    return write_gif(frames, path, view.draw_frame, fps=fps, titles=titles)
