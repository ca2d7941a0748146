"""Acting in environments: the one rollout loop every learner, the evaluator, bench and render
run, and a `Policy`'s decision in one environment.

```python
state, outs = rollout(batch_step(env, num_envs), state, length, act, record)
```

`state` is any pytree with the fields `env_state`, `timestep` and `key` (a learner's own state,
or a small carry) and a `replace` method (`flax.struct`). Each step splits the key in three
(the next key, the policy's, the envs'), asks `act(state, key)` for the actions (and anything
the learner wants to keep from acting, `aux`), steps the environments, and hands the step to
`record(state, ts, actions, aux, next_ts)`: `state` already carries the new env state, time
step and key, `ts` is the time step acted in. `record` returns the next state and the step's
output (stacked over the steps by `lax.scan`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import jax
from flax import struct

from marl.core.env import MultiAgentEnv, TimeStep
from marl.core.learner import Policy

Array = jax.Array
S = TypeVar("S")
StepFn = Callable[[Array, Any, Array], tuple[Any, TimeStep]]
ActFn = Callable[[S, Array], tuple[Array, Any]]
RecordFn = Callable[[S, TimeStep, Array, Any, TimeStep], tuple[S, Any]]


class Acting(struct.PyTreeNode):
    """A rollout carry for a `Policy` acting alone (bench, render): envs, key, its carry."""

    env_state: Any
    timestep: TimeStep
    key: Array
    carry: Any  # the policy's recurrent carry
    start: Array  # the next step begins an episode


def batch_step(env: MultiAgentEnv, num_envs: int) -> StepFn:
    """Step `num_envs` environments on a leading axis, each with its own key split from one."""

    def step(key: Array, state: Any, actions: Array) -> tuple[Any, TimeStep]:
        return env.step_batch(jax.random.split(key, num_envs), state, actions)

    return step


def rollout(step: StepFn, state: S, length: int, act: ActFn, record: RecordFn) -> tuple[S, Any]:
    """`length` steps of acting then stepping (module docstring) -> (state, stacked outputs)."""

    def body(s: Any, _: Any) -> tuple[Any, Any]:
        key, k_act, k_env = jax.random.split(s.key, 3)
        ts = s.timestep
        actions, aux = act(s, k_act)
        env_state, nts = step(k_env, s.env_state, actions)
        return record(s.replace(env_state=env_state, timestep=nts, key=key), ts, actions, aux, nts)

    return jax.lax.scan(body, state, None, length=length)


def policy_actions(
    env: MultiAgentEnv,
    policy: Policy,
    params: Any,
    state: Any,
    ts: TimeStep,
    carry: Any,
    start: Array,
    key: Array,
    greedy: Any,
) -> tuple[Array, Any]:
    """`policy`'s actions in one (bare) environment: it sees the observations (the env state
    when `privileged`) and, when it asks, the env's neighbourhood of `state`."""
    seen = state if policy.privileged else ts.obs
    extra = {"neighbours": env.neighbourhood(state)} if policy.neighbourhood else {}
    return policy.act(params, seen, ts.avail_actions, carry, start, key, greedy, **extra)
