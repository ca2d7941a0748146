"""A saved run restored: a run directory's environment, learner and parameters, to evaluate or
watch.

`marl eval RUN_DIR` re-evaluates the saved parameters of every seed (`--algo KEY=VALUE`: act
with a learner value changed, e.g. an ablation of the graph torso); `marl render ENV --params
RUN_DIR` plays one episode with a seed's trained policy. Both rebuild the run from its
`config.yaml` (the resolved config) and read `best_params.msgpack` (each seed's best evaluated
parameters, those the absolute metric scores) or `params.msgpack` (the final ones), either
gzipped (`.msgpack.gz`), or where only that is kept, the half-precision copy
(`best_params.f16.msgpack.gz`, `compact`), widened back to the learner's precision.

A run folder is data: its env and learner come from registered ids only (an import path in
its config.yaml only if `allow` names it, from the command line), and an interpolation
(`${...}`) in it is refused, never resolved.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization
from omegaconf import OmegaConf

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train, seed_params
from marl.core.registry import files_are_data
from marl.learning.evaluation import evaluate
from marl.learning.training import init_seeds
from marl.results.files import GZ, read_bytes, read_yaml
from marl.run.errors import ConfigError
from marl.run.saved.compact import half_name
from marl.run.train.config import RunConfig
from marl.run.train.resolve import resolve
from marl.run.train.settings import check_literal

PARAMS = {"best": "best_params.msgpack", "final": "params.msgpack"}


def params_file(path: str | Path, which: str = "best") -> Path | None:
    """The file holding the run's `which` parameters: the full-precision one (plain or
    gzipped), else its half-precision copy; None when the run kept none."""
    name = PARAMS[which]
    for kept in (name, name + GZ, half_name(name)):
        if (Path(path) / kept).is_file():
            return Path(path) / kept
    return None


class SavedRunError(ValueError):
    """A directory that is not a finished run, or parameters that do not fit its learner."""


@dataclass
class SavedRun:
    path: Path
    run: RunConfig
    env: MultiAgentEnv
    train: Train
    params: Any  # [seeds, ...]

    @property
    def seeds(self) -> int:
        return int(jax.tree.leaves(self.params)[0].shape[0])

    def seed_params(self, k: int) -> Any:
        """The parameters of seed `k` (no seed axis)."""
        if not 0 <= k < self.seeds:
            raise SavedRunError(f"seed index {k} out of range: the run has {self.seeds} seeds")
        return jax.tree.map(lambda x: x[k], self.params)


def run_config(
    path: str | Path, allow: Sequence[str] = (), algo: Mapping[str, Any] | None = None
) -> RunConfig:
    """The resolved `marl.run.train.config.RunConfig` of the run directory `path` (its config.yaml;
    no parameters needed); `allow`: import paths the user trusts (`--allow-import`); `algo`:
    learner values to act with in place of the trained ones (evaluation studies, e.g. the
    graph torso's `graph_ablation`; the parameters must still fit)."""
    cfg_path = Path(path) / "config.yaml"
    if not cfg_path.is_file():
        raise SavedRunError(f"{path} is not a run directory (no config.yaml)")
    try:
        data = read_yaml(cfg_path)
    except (OSError, ValueError) as e:
        raise SavedRunError(str(e)) from None
    if not isinstance(data, dict):
        raise SavedRunError(f"{cfg_path}: expected a mapping, got {type(data).__name__}")
    data.pop("derived", None)
    if algo:
        if not isinstance(data.get("algo"), dict):
            raise SavedRunError(f"{cfg_path}: no algo section to set {', '.join(algo)} in")
        unknown = sorted(set(algo) - set(data["algo"]) - {"name"})
        if unknown or "name" in algo:
            raise SavedRunError(
                f"{', '.join(unknown or ['name'])}: not a value of the run's learner to change "
                f"(valid: {', '.join(k for k in data['algo'] if k != 'name')})"
            )
        data["algo"] = {**data["algo"], **algo}
    try:
        check_literal(data)
        with files_are_data(allow):
            return resolve(OmegaConf.create(data))
    except ConfigError as e:
        raise SavedRunError(f"{cfg_path}: {e}") from None


def load(
    path: str | Path,
    which: str = "best",
    allow: Sequence[str] = (),
    algo: Mapping[str, Any] | None = None,
) -> SavedRun:
    """The run in `path` with its `which` ("best" or "final") parameters of every seed;
    `allow`: import paths in its config the user trusts, `algo`: learner values to act with
    (`run_config`)."""
    path = Path(path)
    if which not in PARAMS:
        raise SavedRunError(f"unknown parameters {which!r}; valid: {', '.join(PARAMS)}")
    params_path = params_file(path, which)
    run = run_config(path, allow, algo)
    if params_path is None:
        raise SavedRunError(
            f"{path} has no {PARAMS[which]} (unfinished, or a record kept without its parameters)"
        )
    env, train = run.env, run.train  # built by `run_config`, under `allow`
    keys = jax.random.split(jax.random.key(0), run.settings.seeds)
    like = jax.eval_shape(lambda k: seed_params(train, init_seeds(train, k)), keys)
    try:
        raw = serialization.msgpack_restore(read_bytes(params_path))
    except (ValueError, TypeError, EOFError, OSError, zlib.error, RecursionError) as e:
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise SavedRunError(f"{params_path}: not a parameters file (truncated?): {first}") from None
    try:
        params = serialization.from_state_dict(like, raw)
    except (KeyError, ValueError, TypeError) as e:
        raise SavedRunError(f"{params_path} does not fit {run.algo} on {run.env_id}: {e}") from None
    got = [x.shape for x in jax.tree.leaves(params)]
    want = [x.shape for x in jax.tree.leaves(like)]
    if got != want:
        raise SavedRunError(f"{params_path}: parameter shapes {got} differ from the learner's")
    params = jax.tree.map(_widen, params, like)  # a float16 copy acts in the learner's dtype
    return SavedRun(path, run, env, train, params)


def _widen(x: Any, like: Any) -> Any:
    x = np.asarray(x)
    return x.astype(like.dtype) if x.dtype != like.dtype and x.dtype.kind == "f" else x


def evaluate_saved(saved: SavedRun, episodes: int, seed: int, which: str) -> dict[str, list[float]]:
    """Play `episodes` greedy episodes of every seed's parameters from `key(seed)`; prints a
    line per metric (mean ± std over seeds) and returns metric -> per-seed means."""
    env, policy = saved.env, saved.train.policy
    key = jax.random.key(seed)
    results = jax.device_get(
        jax.jit(jax.vmap(lambda p: evaluate(env, policy, p, key, episodes)))(saved.params)
    )
    print(
        f"{saved.run.env_id} {saved.run.algo}: {saved.seeds} seeds x {episodes} episodes, "
        f"{which} parameters of {saved.path}"
    )
    summary = {}
    for name, values in sorted(results.items()):
        per_seed = np.asarray(values, np.float64).mean(axis=-1)
        summary[name] = per_seed.tolist()
        spread = per_seed.std(ddof=1) if len(per_seed) > 1 else 0.0
        print(f"  {name:<24} {per_seed.mean():12.4f} ± {spread:.4f} (mean ± std over seeds)")
    return summary
