"""Transfer evaluation: a trained policy played on other environments (zero-shot).

A protocol may list `transfer` targets, each `{name, id, kwargs}`. After training, each seed's
best evaluated parameters (those of the absolute metric; the final ones without it) play
`absolute_episodes` greedy episodes on every target, on fixed keys, and the per-episode values
go to `transfer.json` in the run directory (`marl.run.folder.RunDir.finish` writes it). The
pathfinding evaluation tiers are protocol presets built on it (`protocol=pathfinding_medium`,
`pathfinding_hard`).

The run's learner is rebuilt on each target with its hyperparameters, once, when the run is
resolved (`resolve.resolve`, which refuses a target it cannot play): its parameters must have
the same shapes as the trained ones, i.e. the policy's inputs may not depend on what differs
(an agent-id one-hot depends on the agent count: set `algo.agent_id=false`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from marl.learning.evaluation import evaluate
from marl.run.train.config import BuiltTarget, RunConfig, TransferTarget

if TYPE_CHECKING:
    from marl.core.env import MultiAgentEnv
    from marl.core.learner import Train

TRANSFER_SALT = 0x7A45


class TransferError(ValueError):
    """A transfer target the trained policy cannot play; one line naming why."""


def parse_targets(entries: Sequence[Any] | None) -> tuple[TransferTarget, ...]:
    """`protocol.transfer` (a list of `{name, id, kwargs}` mappings) -> targets; names unique."""
    out: list[TransferTarget] = []
    for k, entry in enumerate(entries or ()):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise TransferError(
                f"protocol.transfer[{k}] must be a mapping with an id, got {entry!r}"
            )
        unknown = sorted(set(entry) - {"name", "id", "kwargs"})
        if unknown:
            raise TransferError(
                f"protocol.transfer[{k}] has unknown key(s) {', '.join(unknown)}; "
                "valid: name, id, kwargs"
            )
        name = str(entry.get("name") or entry["id"])
        if any(t.name == name for t in out):
            raise TransferError(f"protocol.transfer has two targets named {name!r}")
        out.append(TransferTarget(name, entry["id"], dict(entry.get("kwargs") or {})))
    return tuple(out)


def _param_shapes(train: Train) -> Any:
    state = jax.eval_shape(train.init, jax.random.key(0))
    return jax.tree.map(lambda x: (x.shape, x.dtype), train.params(state))


def build_targets(
    run: RunConfig,
    make_env: Callable[[str, dict[str, Any]], MultiAgentEnv],
    make_train: Callable[..., Train],
) -> tuple[BuiltTarget, ...]:
    """Each of `run.transfer`'s environments (`make_env(id, kwargs)`) with the run's learner
    rebuilt on it (`make_train`, the run's hyperparameters and total updates); TransferError
    when the trained parameters (`run.train`'s) cannot drive it (nothing is compiled: shapes
    come from `jax.eval_shape`)."""
    expected = _param_shapes(run.train)
    out = []
    for target in run.transfer:
        try:
            env = make_env(target.env_id, dict(target.env_kwargs))
        except ValueError as e:
            raise TransferError(f"transfer target {target.name}: {e}") from None
        train = make_train(env, dict(run.algo_cfg), run.total_updates)
        if _param_shapes(train) != expected:
            raise TransferError(
                f"transfer target {target.name}: the {run.algo} parameters trained on "
                f"{run.env_id} do not fit {target.env_id} (observation, action or agent-count "
                "dependent inputs differ; with a different agent count set algo.agent_id=false)"
            )
        out.append(BuiltTarget(target, env, train))
    return tuple(out)


def play_targets(
    run: RunConfig, params: Any, log: Callable[[str], None] = print
) -> dict[str, dict[str, Any]]:
    """After training: each seed's `params` ([seeds, ...]) played on every target of the run
    (`evaluate_transfer`, `absolute_episodes` episodes, else `eval_episodes`) and summed up in
    one line per target; the results, which the run directory keeps as `transfer.json`."""
    s = run.settings
    episodes = s.absolute_episodes or s.eval_episodes
    log(f"transfer: {len(run.transfer)} targets x {episodes} episodes per seed")
    results = evaluate_transfer(run, params, episodes)
    for line in summary(results, s.metric):
        log(line)
    return results


def evaluate_transfer(run: RunConfig, params: Any, episodes: int) -> dict[str, dict[str, Any]]:
    """Play `episodes` greedy episodes of each seed's `params` ([seeds, ...]) on every target
    of the run (`run.targets`, built by `build_targets`).

    Returns `{name: {"id", "kwargs", "episodes", "metrics": {metric: [seeds][episodes]}}}`.
    """
    key = jax.random.fold_in(jax.random.key(run.settings.seed), TRANSFER_SALT)
    out = {}
    for target, env, train in run.targets:

        def play(p, env=env, train=train):
            return evaluate(env, train.policy, p, key, episodes)

        values = jax.jit(jax.vmap(play))(params)
        out[target.name] = {
            **target.to_dict(),
            "episodes": episodes,
            "metrics": {k: np.asarray(v).tolist() for k, v in values.items()},
        }
    return out


def summary(results: dict[str, dict[str, Any]], metric: str) -> list[str]:
    """One line per target: the mean of `metric` over episodes, then over seeds (± std)."""
    lines = []
    for name, r in results.items():
        per_seed = np.asarray(r["metrics"][metric]).mean(axis=-1)
        std = per_seed.std(ddof=1) if len(per_seed) > 1 else 0.0
        lines.append(
            f"transfer {name} ({r['id']}): {metric} {per_seed.mean():.3f} ± {std:.3f} "
            f"over {len(per_seed)} seeds x {r['episodes']} episodes"
        )
    return lines
