"""The learner contract: what `make_train(env, cfg)` returns and what a policy is.

```python
train = algorithm.make_train(env, cfg)
state = train.init(key)                 # params, optimisers, env states, buffers
state, metrics = train.step(state)      # one update (rollout + learn), jittable
params = train.params(state)            # what acting needs
policy = train.policy                   # Policy: acts from params, for one environment
```

The runner (`marl.training`) vmaps `init`/`step` over seeds and scans `step` over updates; the
evaluator knows a learner only through `Policy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

Array = jax.Array
Params = Any
Carry = Any


class Policy(NamedTuple):
    """How a learner acts in ONE environment (vmap it for a batch).

    initial_carry(): the recurrent state at an episode start (a dummy for feed-forward).
    act(params, obs [N, obs_dim], avail [N, A], carry, start [] bool, key, greedy) ->
        (actions [N] int32 or [N, d] float32 within the action space, carry).
        `start` is True on an episode's first step (recurrent policies reset there).
    """

    initial_carry: Callable[[], Carry]
    act: Callable[..., tuple[Array, Carry]]


class Train(NamedTuple):
    """A learner bound to an environment and a config (see module docstring)."""

    init: Callable[[Array], Any]
    step: Callable[[Any], tuple[Any, dict[str, Array]]]
    params: Callable[[Any], Params]
    policy: Policy
    steps_per_update: int  # environment steps consumed by one `step` (all parallel envs)
