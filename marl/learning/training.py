"""What a run is made of: its settings (`RunSettings`), its result (`RunResult`), and the
programs and helpers the runner (`marl.learning.runner.run`) puts together.

```
init:     jit(lax.map(train.init))(seed keys)                    once (`init_seeds`)
segment:  jit(scan(vmap(train.step, axis_name=SEED_AXIS)))  `updates_per_segment` updates,
          donated (`segment_program`), returning each seed's metric means (`segment_means`)
```

Seeds are placed over devices by `seed_sharding` and read back by `fetch`; a segment whose
parameters or losses are not finite stops the run (`non_finite`, `Diverged`). `learner_for`
builds a learner with the run's length, as `marl train` does.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.learner import SEED_AXIS, Train

Array = jax.Array

EVAL_SALT = 0xE7A1  # evaluation keys: fold_in(root, EVAL_SALT), disjoint from training keys
ABSOLUTE_SALT = 0xAB50  # absolute-metric keys: fold_in(root, ABSOLUTE_SALT)


class Diverged(RuntimeError):
    """A run whose parameters or losses turned non-finite; stopped at a segment boundary."""

    def __init__(self, step: int, seeds: Sequence[int], what: str):
        self.step, self.seeds, self.what = int(step), [int(s) for s in seeds], what
        super().__init__(
            f"non-finite {what} at step {self.step:,} in seed(s) {', '.join(map(str, self.seeds))}"
        )


def non_finite(params_ok: np.ndarray, metrics: dict[str, np.ndarray]) -> tuple[np.ndarray, str]:
    """([seeds] bool: diverged, what) from each seed's all-finite parameters flag and the
    segment's metrics, of which the losses (a `loss*` part in the name) must be finite."""
    bad, what = ~np.asarray(params_ok, bool), ["parameters"] if not np.all(params_ok) else []
    for name, value in sorted(metrics.items()):
        if any(part.startswith("loss") for part in name.split("/")):
            wrong = ~np.isfinite(np.asarray(value, np.float64))
            if wrong.any():
                bad, what = bad | wrong.reshape(bad.shape), [*what, name]
    return bad, " and ".join(what[:3])


def finite_params(params: Any) -> Array:
    """[seeds] whether every parameter of each seed is finite (one reduction per leaf)."""
    leaves = [x for x in jax.tree.leaves(params) if jnp.issubdtype(x.dtype, jnp.inexact)]
    ok = [jnp.all(jnp.isfinite(x.reshape(x.shape[0], -1)), axis=1) for x in leaves]
    return jnp.stack(ok).all(axis=0) if ok else jnp.ones((), bool)


@dataclass(frozen=True)
class RunSettings:
    """How long to train and how to evaluate (the protocol's numbers)."""

    seeds: int = 10
    budget: int = 2_000_000  # environment steps per seed
    eval_interval: int | None = None  # env steps between evaluations (None: see below)
    num_evaluations: int = 20  # evaluations after step 0 when eval_interval is None
    eval_episodes: int = 32
    seed: int = 0  # root seed; seed k trains from split(key(seed), seeds)[k]
    # A part of a longer run (`part=a:b`): these `seeds` are seeds first.. of a `seeds_of`-seed
    # run, trained from the keys that run gives them (`marl merge` joins the parts).
    first_seed: int = 0
    seeds_of: int | None = None
    absolute_episodes: int = 320  # episodes re-evaluating each seed's best parameters (0: off)
    metric: str = "return"  # evaluation metric that selects the best parameters

    def seed_keys(self, root: jax.Array) -> jax.Array:
        """`[seeds]` training keys: `split(root, seeds_of or seeds)[first_seed:][:seeds]`."""
        keys = jax.random.split(root, self.seeds_of or self.seeds)
        return keys[self.first_seed : self.first_seed + self.seeds]

    def interval(self) -> int:
        return int(self.eval_interval or max(1, self.budget // self.num_evaluations))

    def schedule(self, steps_per_update: int) -> tuple[int, int]:
        """(updates per segment, segments): evaluation every `interval()` env steps rounded to
        whole updates; the budget rounded up to whole segments."""
        per_segment = max(1, round(self.interval() / steps_per_update))
        num_segments = max(1, math.ceil(self.budget / (per_segment * steps_per_update)))
        return per_segment, num_segments

    def total_updates(self, steps_per_update: int) -> int:
        """Updates per seed over the whole run: what `make_train(env, cfg, total_updates)`
        anneals learning rates over (as `marl train` passes it)."""
        per_segment, num_segments = self.schedule(steps_per_update)
        return per_segment * num_segments


def segment_means(metrics: dict[str, Array]) -> dict[str, Array]:
    """One value per seed from a segment's `[updates, seeds]` training metrics.

    Episode statistics (`train/<name>` from `marl.core.wrappers.episode_metrics`, which are already
    averages over the episodes that ended in one update) are averaged over the segment's
    episodes, weighted by `train/episodes`: a plain mean over updates would count the updates
    in which no episode ended as zeros (with 64-step updates and 25-step episodes, a return
    reported at a third of its value); NaN for a seed none of whose episodes ended in the
    segment (there is no such statistic to report). `train/episodes` and every other metric:
    mean over updates.
    """
    episodes = metrics.get("train/episodes")
    total = None if episodes is None else jnp.sum(episodes, axis=0)
    out = {}
    for name, x in metrics.items():
        if (
            total is not None
            and episodes is not None
            and name.startswith("train/")
            and name != "train/episodes"
        ):
            mean = jnp.sum(x * episodes, axis=0) / jnp.maximum(total, 1)
            out[name] = jnp.where(total > 0, mean, jnp.nan)
        else:
            out[name] = jnp.mean(x, axis=0)
    return out


@dataclass
class RunResult:
    """What a run produced (host numpy arrays, seeds on the leading axis)."""

    steps: list[int] = field(default_factory=list)  # env steps per seed at each evaluation
    evaluations: list[dict[str, np.ndarray]] = field(default_factory=list)  # [seeds, episodes]
    train_metrics: list[dict[str, np.ndarray]] = field(default_factory=list)  # [seeds]
    final_state: Any = None
    params: Any = None  # acting parameters at the end, [seeds, ...]
    wall_time: float = 0.0  # seconds, over every process of a resumed run (to its last segment)
    compile_time: float = 0.0  # start-up: init, first evaluation and segment compilation
    steps_per_second: float = 0.0  # env steps per second over all seeds, excluding compile
    best_step: np.ndarray | None = None  # [seeds] env steps of each seed's best evaluation
    best_score: np.ndarray | None = None  # [seeds] its mean `settings.metric`
    best_params: Any = None  # [seeds, ...] the parameters evaluated there
    absolute: dict[str, np.ndarray] | None = None  # [seeds, absolute_episodes] per metric

    def curve(self, metric: str = "return") -> np.ndarray:
        """[evaluations, seeds] mean over episodes of `metric` at each evaluation."""
        return np.stack([e[metric].mean(axis=-1) for e in self.evaluations])


def init_seeds(train: Train, keys: Array) -> Any:
    """Every seed's first state from its key (leaves `[seeds, ...]`), compiled: a `lax.map`
    of `train.init`, not a vmap, because batched QR (orthogonal initialisation) can deadlock
    XLA's CPU backend (seen at 10 seeds of PPO on particle/spread)."""
    return jax.jit(lambda k: jax.lax.map(train.init, k))(keys)


def updates(train: Train, length: int) -> Callable[[Any], tuple[Any, dict[str, Array]]]:
    """`state -> (state, metrics [length, seeds])`: `length` updates of every seed, a scan of
    `vmap(train.step)` over the seed axis (`SEED_AXIS`, so `seed_max` agrees across seeds)."""

    def many(state: Any) -> tuple[Any, dict[str, Array]]:
        def body(s: Any, _: Any) -> tuple[Any, dict[str, Array]]:
            return jax.vmap(train.step, axis_name=SEED_AXIS)(s)

        return jax.lax.scan(body, state, None, length=length)

    return many


def segment_program(train: Train, length: int) -> jax.stages.Wrapped:
    """The runner's segment: `length` updates of every seed (`updates`), jitted with the state
    donated (its buffers are reused, a replay learner's GBs not copied), returning the state
    and each seed's metric means (`segment_means`). `marl benchmark measure` times this."""

    def segment(state: Any) -> tuple[Any, dict[str, Array]]:
        state, metrics = updates(train, length)(state)
        return state, segment_means(metrics)

    return jax.jit(segment, donate_argnums=0)


def seed_sharding(
    seeds: int,
    devices: Sequence[jax.Device] | None = None,
    log: Callable[[str], None] = print,
    num_envs: int = 0,
) -> Callable[[Any], Any]:
    """A function placing a pytree with seeds on its leading axis: split over `devices`
    (default: every device of the run, all hosts' in a multi-host run) when there are several
    and they divide `seeds`; else, where they divide the learner's `num_envs`, each seed's
    environments split over them (`marl.learning.sharding.env_sharding`); else left where it
    is. Programs called on sharded inputs run partitioned (jit follows the input sharding)."""
    devices = list(_run_devices() if devices is None else devices)
    if len(devices) < 2:
        return lambda tree: tree
    if seeds % len(devices):
        from marl.learning.sharding import env_sharding

        by_envs = env_sharding(num_envs, devices, log)
        if by_envs is not None:
            return by_envs
        log(f"{seeds} seeds do not divide over {len(devices)} devices: running on one")
        return lambda tree: tree
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), (SEED_AXIS,))
    split, whole = (
        NamedSharding(mesh, PartitionSpec(SEED_AXIS)),
        NamedSharding(mesh, PartitionSpec()),
    )
    log(f"{seeds} seeds sharded over {len(devices)} devices ({devices[0].platform})")

    def place(tree: Any) -> Any:
        # empty arrays stay replicated, as XLA returns them; a jitted identity with output
        # shardings also builds global arrays across hosts, where device_put cannot
        shardings = jax.tree.map(lambda x: split if x.size else whole, tree)
        return jax.jit(lambda t: t, out_shardings=shardings)(tree)

    return place


def spread_over(
    seeds: int, devices: Sequence[jax.Device] | None = None, num_envs: int = 0
) -> list[jax.Device]:
    """The devices a run's state spreads over, as `seed_sharding` places it: every device of
    the run where they divide the seeds or else the learner's `num_envs`; one device where
    nothing is split (the default one, or the only one given)."""
    from marl.learning.sharding import envs_divide

    devices = list(_run_devices() if devices is None else devices)
    n = len(devices)
    if n > 1 and (seeds % n == 0 or envs_divide(num_envs, n)):
        return devices
    return devices[:1] if n == 1 else jax.local_devices()[:1]


def held_by(
    devices: Sequence[jax.Device] | None, seeds: int, num_envs: int = 0
) -> list[jax.Device]:
    """This process's share of the devices the run's state spreads over (`spread_over`): what
    a size check may count on (a run left on one device has that device's memory, however many
    the host has)."""
    spread = spread_over(seeds, devices, num_envs)
    mine = [d for d in spread if d.process_index == jax.process_index()]
    return mine or jax.local_devices()[:1]


def _run_devices() -> list[jax.Device]:
    """The devices a run spreads its seeds over: this host's, or every host's once
    `jax.distributed` is initialised (`distributed=true`)."""
    return jax.devices() if jax.process_count() > 1 else jax.local_devices()


def fetch(tree: Any) -> Any:
    """Device arrays to host numpy: `device_get`, or an all-gather across hosts."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        return multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)


def learner_for(
    make_train: Callable[..., Train],
    env: MultiAgentEnv,
    cfg: Any,
    settings: RunSettings,
) -> Train:
    """`make_train(env, cfg, total_updates)` with `settings`' total updates, as `marl train`
    builds it: an annealed learning rate reaches 0 at the run's end. Built once where the
    learner says its update size (`make_train.steps_per_update(env, cfg)`)."""
    declared = getattr(make_train, "steps_per_update", None)
    if callable(declared):
        steps = int(declared(env, cfg))
    else:  # a learner that does not say: built a first time to read it
        steps = probe_learner(make_train, env, cfg).steps_per_update
    return make_train(env, cfg, settings.total_updates(steps))


def probe_learner(make_train: Callable[..., Train], env: MultiAgentEnv, cfg: Any) -> Train:
    """`make_train(env, cfg)` built only to read its shapes and `steps_per_update` (nothing is
    compiled; its warning that annealing cannot act without the run's length is muted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_train(env, cfg)
