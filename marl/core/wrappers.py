"""Environment wrappers: auto-reset and episode statistics (JaxMARL adapters: `marl.interop`).

- `AutoReset(env)`: starts a new episode inside `step` when one ends, keeping the true final
  observation in `TimeStep.final_obs` / `final_state` so truncated episodes bootstrap from it.
- `EpisodeStatistics(env)`: adds `episode/*` metrics (return, mean return, length, done).
- `CommonReward(env)`: every agent paid the team's mean reward (EPyMARL's `common_reward`).

All wrappers are pure and jittable; branching on traced values is done with `lax.select` over
pytrees, so a wrapped step is one straight-line program (no host syncs).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from marl.core.env import MultiAgentEnv, PRNGKey, TimeStep

Array = jax.Array

__all__ = [
    "EPISODE_METRICS",
    "AutoReset",
    "CommonReward",
    "EpisodeStatistics",
    "Wrapper",
    "tree_select",
]

EPISODE_METRICS = ("episode/return", "episode/return_mean", "episode/length", "episode/done")


def tree_select(pred: Array, on_true: Any, on_false: Any) -> Any:
    """Leafwise `pred ? on_true : on_false` for two pytrees of equal structure ([] bool pred)."""
    return jax.tree.map(
        lambda a, b: jax.lax.select(jnp.broadcast_to(pred, jnp.shape(a)), a, b), on_true, on_false
    )


class Wrapper(MultiAgentEnv):
    """Base of marl-to-marl wrappers: holds the inner env as `env` and shares its spec."""

    def __init__(self, env: MultiAgentEnv):
        self.env = env
        self.spec = env.spec

    @property
    def unwrapped(self) -> MultiAgentEnv:
        """The innermost environment."""
        env = self.env
        while isinstance(env, Wrapper):
            env = env.env
        return env

    def reset(self, key: PRNGKey) -> tuple[Any, TimeStep]:
        return self.env.reset(key)

    def step_env(self, key: PRNGKey, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        return self.env.step_env(key, state, actions)

    def step(self, key: PRNGKey, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        return self.env.step(key, state, actions)

    def inner_state(self, state: Any) -> Any:
        """The inner env's state inside this wrapper's `state` (the same object by default)."""
        return state

    def neighbourhood(self, state: Any) -> Array:
        return self.env.neighbourhood(self.inner_state(state))

    @property
    def contest(self) -> bool:
        return self.env.contest

    def contest_score(self, episode: dict[str, Array]) -> Array:
        return self.env.contest_score(episode)

    def render_frame(self, state: Any) -> dict[str, Any]:  # pragma: no cover - delegation
        return self.env.render_frame(self.inner_state(state))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"


class CommonReward(Wrapper):
    """Every agent's reward replaced by the mean of the team's (EPyMARL's `common_reward` with
    mean scalarisation), on a cooperative env whose agents are paid their own rewards
    (pathfinding: each its progress, goal and collisions). What HAPPO, VDN and QMIX train on
    anyway (they learn one team value of the mean reward), given to any learner, so that the
    cost of the shared signal can be measured apart from the learner
    (results/fidelity.md, CommonReward). The spec says `shared_reward=True`."""

    def __init__(self, env: MultiAgentEnv):
        if not env.spec.cooperative:
            raise ValueError(
                f"CommonReward averages one team's rewards; {env.spec.name} has "
                f"{len(env.spec.groups)} groups that are not one cooperative team"
            )
        super().__init__(env)
        self.spec = dataclasses.replace(env.spec, shared_reward=True)

    @staticmethod
    def _common(ts: TimeStep) -> TimeStep:
        return ts.replace(reward=jnp.broadcast_to(jnp.mean(ts.reward), ts.reward.shape))

    def step_env(self, key: PRNGKey, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        state, ts = self.env.step_env(key, state, actions)
        return state, self._common(ts)

    def step(self, key: PRNGKey, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        state, ts = self.env.step(key, state, actions)
        return state, self._common(ts)


# --- auto-reset --------------------------------------------------------------------------------


class AutoReset(Wrapper):
    """Starts a new episode inside `step` when the current one ends.

    `step(key, state, actions)` steps the inner env with `key` unchanged (so a wrapped and a bare
    env take identical transitions) and, when the inner TimeStep is done (`terminated |
    truncated`), resets with `jax.random.fold_in(key, RESET_SALT)`. It returns:

        state:                      the new episode's first state if done, else the next state;
        obs, state, avail_actions,
        alive:                      the new episode's first step if done, else the next step;
        reward, terminated,
        truncated, metrics:         the transition just taken (the finished episode's last one);
        final_obs [N, obs_dim],
        final_state [state_dim],
        final_avail [N, A],
        final_alive [N]:            the true last observation / global state / available
                                    actions / living agents of the transition just taken (equal
                                    to obs / state / avail / alive when not done). Bootstrap
                                    truncated episodes from these.

    `reset` sets `final_obs = obs` (and likewise state, avail, alive), so reset and step return
    the same TimeStep pytree structure (a valid `lax.scan` carry). The reset is computed every
    step and selected leafwise (`lax.select`), as JaxMARL and gymnax do; no host sync.
    """

    RESET_SALT = 0x5EED

    def reset(self, key: PRNGKey) -> tuple[Any, TimeStep]:
        state, ts = self.env.reset(key)
        return state, ts.replace(
            final_obs=ts.obs,
            final_state=ts.state,
            final_avail=ts.avail_actions,
            final_alive=ts.alive,
        )

    def step(self, key: PRNGKey, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        next_state, ts = self.env.step(key, state, actions)
        reset_state, first = self.env.reset(jax.random.fold_in(key, self.RESET_SALT))
        done = ts.done
        keep = (first.obs, first.state, first.avail_actions, first.alive)
        cont = (ts.obs, ts.state, ts.avail_actions, ts.alive)
        first_step = tree_select(done, keep, cont)
        return tree_select(done, reset_state, next_state), _continued(ts, first_step)

    def step_batch(self, keys: PRNGKey, states: Any, actions: Array) -> tuple[Any, TimeStep]:
        """`vmap(step)`, with the batch's resets computed only on steps where an episode ended.

        Envs started together with fixed-length episodes (every particle task) all end on the
        same step, so most steps skip the reset. The branch is a real one only when the
        predicate is the same for the whole program: under `marl.learning.runner`'s vmap over
        seeds it is reduced over the seed axis (`seed_max`); elsewhere, an outer vmap turns it
        into a select of both branches (still equal to `vmap(step)`).
        """
        from marl.core.learner import seed_max

        next_states, ts = self.env.step_batch(keys, states, actions)
        done = ts.done  # [B]

        def with_resets(_: None) -> tuple[Any, Any]:
            reset_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, self.RESET_SALT)
            reset_states, first = jax.vmap(self.env.reset)(reset_keys)
            select = jax.vmap(tree_select)
            keep = (first.obs, first.state, first.avail_actions, first.alive)
            cont = (ts.obs, ts.state, ts.avail_actions, ts.alive)
            return select(done, reset_states, next_states), select(done, keep, cont)

        def without(_: None) -> tuple[Any, Any]:
            return next_states, (ts.obs, ts.state, ts.avail_actions, ts.alive)

        any_done = seed_max(jnp.any(done).astype(jnp.int32)) > 0
        states, first = jax.lax.cond(any_done, with_resets, without, None)
        return states, _continued(ts, first)


def _continued(ts: TimeStep, first: tuple[Array, Array, Array, Array]) -> TimeStep:
    """`ts` (the transition just taken) seen from the step after: `first` = (obs, state,
    avail_actions, alive) of the next episode's first step where it ended, else `ts`'s own;
    the true last ones kept in the `final_*` fields."""
    obs, gstate, avail, alive = first
    return ts.replace(
        obs=obs,
        state=gstate,
        avail_actions=avail,
        alive=alive,
        final_obs=ts.obs,
        final_state=ts.state,
        final_avail=ts.avail_actions,
        final_alive=ts.alive,
    )


# --- episode statistics ------------------------------------------------------------------------


class EpisodeStatsState(struct.PyTreeNode):
    """State of `EpisodeStatistics`.

    env_state:        the inner env's state.
    episode_return:   [N] float32 per-agent return of the running episode.
    episode_length:   [] int32 steps of the running episode.
    returned_return:  [N] float32 per-agent return of the last finished episode (0 before any).
    returned_length:  [] int32 length of the last finished episode (0 before any).
    """

    env_state: Any
    episode_return: Array
    episode_length: Array
    returned_return: Array
    returned_length: Array

    @property
    def t(self) -> Array:
        """The inner state's step count."""
        return self.env_state.t


class EpisodeStatistics(Wrapper):
    """Adds episode statistics to every TimeStep's `metrics` (usually around `AutoReset`).

    Metrics added (each [] float32), on top of the inner env's task metrics (left untouched):
        episode/return:       team return of the last finished episode: the sum over agents
                              and over its steps of `reward`.
        episode/return_mean:  the same averaged over agents (sum over steps, mean over agents).
        episode/length:       number of steps of the last finished episode.
        episode/done:         1.0 on the step that ends an episode, else 0.0.

    On the step where `episode/done` is 1 the values describe the episode that just ended; on
    other steps they hold the last finished episode's values (0 before any), like JaxMARL's
    `LogWrapper` `returned_episode_returns`. `reset` sets them all to 0. Average them over steps
    with `episode/done` as weight. The spec's `metric_names` gain these four names. Works under
    jit and vmap (the running sums live in `EpisodeStatsState`).
    """

    def __init__(self, env: MultiAgentEnv):
        super().__init__(env)
        names = tuple(m for m in env.spec.metric_names if m not in EPISODE_METRICS)
        self.spec = dataclasses.replace(env.spec, metric_names=names + EPISODE_METRICS)

    def inner_state(self, state: EpisodeStatsState) -> Any:
        return state.env_state

    def _metrics(self, ts: TimeStep, ret: Array, length: Array, done: Array) -> dict[str, Array]:
        n = self.spec.num_agents
        team = jnp.sum(ret)
        return {
            **ts.metrics,
            "episode/return": team,
            "episode/return_mean": team / n,
            "episode/length": length.astype(jnp.float32),
            "episode/done": done.astype(jnp.float32),
        }

    def reset(self, key: PRNGKey) -> tuple[EpisodeStatsState, TimeStep]:
        env_state, ts = self.env.reset(key)
        n = self.spec.num_agents
        zeros, zero = jnp.zeros((n,), jnp.float32), jnp.zeros((), jnp.int32)
        state = EpisodeStatsState(env_state, zeros, zero, zeros, zero)
        return state, ts.replace(metrics=self._metrics(ts, zeros, zero, jnp.zeros((), bool)))

    def step(
        self, key: PRNGKey, state: EpisodeStatsState, actions: Array
    ) -> tuple[EpisodeStatsState, TimeStep]:
        env_state, ts = self.env.step(key, state.env_state, actions)
        return self._count(state, env_state, ts)

    def step_batch(
        self, keys: PRNGKey, states: EpisodeStatsState, actions: Array
    ) -> tuple[EpisodeStatsState, TimeStep]:
        env_states, ts = self.env.step_batch(keys, states.env_state, actions)
        return jax.vmap(self._count)(states, env_states, ts)

    def _count(
        self, state: EpisodeStatsState, env_state: Any, ts: TimeStep
    ) -> tuple[EpisodeStatsState, TimeStep]:
        """The statistics after the inner transition to (`env_state`, `ts`)."""
        done = ts.done
        ret = state.episode_return + ts.reward.astype(jnp.float32)
        length = state.episode_length + 1
        returned_return = jnp.where(done, ret, state.returned_return)
        returned_length = jnp.where(done, length, state.returned_length)
        state = EpisodeStatsState(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, ret),
            episode_length=jnp.where(done, 0, length),
            returned_return=returned_return,
            returned_length=returned_length,
        )
        metrics = self._metrics(ts, returned_return, returned_length, done)
        return state, ts.replace(metrics=metrics)

    def step_env(self, key: PRNGKey, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        raise NotImplementedError("EpisodeStatistics counts in `step`; call `step`")

    def render_frame(self, state: EpisodeStatsState) -> dict[str, Any]:  # pragma: no cover
        return self.env.render_frame(state.env_state)


def training_env(env: MultiAgentEnv) -> MultiAgentEnv:
    """Training view of an env: auto-reset (true final obs kept) and episode statistics.

    Refuses an env already wrapped so: a second AutoReset would report the next episode's
    first observation as the final one, and truncated episodes would bootstrap from it.
    """
    inner: Any = env
    while isinstance(inner, Wrapper):
        if isinstance(inner, (AutoReset, EpisodeStatistics)):
            raise ValueError(
                f"learners wrap the bare env themselves; got one already in "
                f"{type(inner).__name__} (pass marl.make(...) or its .unwrapped)"
            )
        inner = inner.env
    return EpisodeStatistics(AutoReset(env))


def episode_metrics(metrics: dict[str, Array]) -> dict[str, Array]:
    """Average the `episode/*` statistics of a rollout over the episodes that ended in it.

    `metrics` holds `[T, B]` leaves from `EpisodeStatistics` (`episode/done` marks the steps
    that ended an episode); returns `train/episodes` and one `train/<name>` per statistic.
    """
    done = metrics["episode/done"]
    count = jnp.sum(done)
    out = {"train/episodes": count}
    for k, v in metrics.items():
        if k != "episode/done":
            out[f"train/{k.removeprefix('episode/')}"] = jnp.sum(v * done) / jnp.maximum(count, 1)
    return out


def env_hook(env: MultiAgentEnv, name: str) -> str | None:
    """The import path the bare env's class gives for the hook `name` (`viewer_module`,
    `reference_policy`), looked up through any wrappers; None when it sets none."""
    inner = env.unwrapped if isinstance(env, Wrapper) else env
    return getattr(inner, name)  # the class's, or one an env composed of parts was given
