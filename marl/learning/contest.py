"""Contests: two policies meet in one two-sided environment, each playing one side.

A contest env (`env.contest`: combat with `opponent=self_play`, particle `adversary`) has two
agent groups and scores a finished episode for group 0 (`env.contest_score`: 1 a win, 0.5 a
draw, 0 a loss). `play` puts policy A against policy B on fixed evaluation keys, once in each
seat, inside one compiled program; `marl.run.saved.crossplay` plays every pair of saved runs, every
seed against every seed, and `marl.results.ratings` turns the scores into ratings.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.learning.evaluation import evaluate

Array = jax.Array


class NotAContest(ValueError):
    """An environment with no two sides to score (see `MultiAgentEnv.contest`)."""


def check_contest(env: MultiAgentEnv) -> None:
    """NotAContest, in one line, unless `env` is a two-sided task that scores its episodes."""
    if not env.contest:
        raise NotAContest(
            f"{env.spec.name} is not a contest: cross-play needs two sides and a score "
            "(combat with env.kwargs.opponent=self_play, particle/adversary)"
        )


def versus(first: Policy, second: Policy, first_agents: np.ndarray) -> Policy:
    """`first` acting for the agents where `first_agents` ([N] bool) is True, `second` for the
    others, in one environment; parameters `(first_params, second_params)`.

    Each policy sees every agent's observation and keeps its own carry; only its own side's
    actions are taken. Their random keys follow the side, not the argument order (the policy
    of group 0's side draws from the first half of the split), so swapping who plays which side
    on the same keys replays the same games with the sides' roles exchanged.
    """
    if first.privileged or second.privileged:
        raise NotAContest("a privileged policy reads the whole state: it cannot take a side")
    mask = jnp.asarray(first_agents, bool)
    first_is_g0 = bool(np.asarray(first_agents)[0])  # agent 0 is in group 0

    def initial_carry() -> Any:
        return first.initial_carry(), second.initial_carry()

    def act(
        params: Any,
        obs: Array,
        avail: Array,
        carry: Any,
        start: Array,
        key: Array,
        greedy: Any,
        neighbours: Array | None = None,
    ) -> tuple[Array, Any]:
        k_g0, k_g1 = jax.random.split(key)
        keys = (k_g0, k_g1) if first_is_g0 else (k_g1, k_g0)
        out = []
        for policy, p, c, k in zip((first, second), params, carry, keys, strict=True):
            extra = {"neighbours": neighbours} if policy.neighbourhood else {}
            out.append(policy.act(p, obs, avail, c, start, k, greedy, **extra))
        (a, ca), (b, cb) = out
        pick = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(pick, a, b), (ca, cb)

    return Policy(initial_carry, act, neighbourhood=first.neighbourhood or second.neighbourhood)


def play(
    env: MultiAgentEnv,
    a: Policy,
    a_params: Any,
    b: Policy,
    b_params: Any,
    key: Array,
    num_episodes: int,
) -> Array:
    """[2, num_episodes] float32: A's score in each episode against B (1 win, 0.5 draw, 0
    loss), row 0 with A as the env's group 0 and row 1 with A as group 1, both rows on the
    episodes of `key` (greedy actions, as the evaluation protocol plays)."""
    check_contest(env)
    g0 = np.asarray(env.spec.agent_group) == 0
    as_g0 = evaluate(env, versus(a, b, g0), (a_params, b_params), key, num_episodes)
    as_g1 = evaluate(env, versus(b, a, g0), (b_params, a_params), key, num_episodes)
    return jnp.stack([env.contest_score(as_g0), 1.0 - env.contest_score(as_g1)])
