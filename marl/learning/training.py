"""The run loop: seeds vmapped in one program, updates scanned in segments, evaluation between.

```
init:     jit(lax.map(train.init))(seed keys)                    once
segment:  jit(scan(vmap(train.step, axis_name=SEED_AXIS)))  `updates_per_segment` updates, donated
evaluate: jit(vmap(evaluate))(params)  greedy episodes on fixed keys, after every segment
select:   jit(where(score > best, params, best))   each seed's best evaluated parameters
absolute: jit(vmap(evaluate))(best params)   `absolute_episodes` episodes on other fixed keys
```

No Python loop runs per update, and each function compiles once for a given (env, learner,
shapes). Between segments the host only logs progress and stores evaluation results. `run`
reads in the order it runs: start (every seed initialised, then resumed from a checkpoint or
evaluated at step 0), compile, one `segment` after another (updates, divergence check,
evaluation, best parameters, hooks, checkpoint, progress line), finish (absolute metric).

The absolute metric (Gorsane et al. 2022) re-evaluates each seed's best evaluated parameters
(highest mean of `settings.metric` over the evaluation episodes; the earliest on ties) on
`absolute_episodes` fresh episodes, on keys disjoint from both the training and the periodic
evaluation keys, so the selection does not bias the score it reports.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.learner import SEED_AXIS, Train, seed_params
from marl.learning.checkpoint import SegmentCheckpoints, stack_history, template, unstack
from marl.learning.evaluation import evaluate
from marl.learning.memory import check_run_fits
from marl.learning.xla import warn_if_unsafe

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
        if total is not None and name.startswith("train/") and name != "train/episodes":
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


def segment_program(train: Train, length: int) -> Callable[[Any], tuple[Any, dict[str, Array]]]:
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


def _held_by(devices: Sequence[jax.Device] | None) -> list[jax.Device]:
    """This process's devices of the run (`seed_sharding`'s), or the default one alone."""
    run = _run_devices() if devices is None else devices
    mine = [d for d in run if d.process_index == jax.process_index()]
    return mine if len(mine) > 1 else jax.local_devices()[:1]


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


def _fmt_time(sec: float) -> str:
    sec = int(max(sec, 0))
    return f"{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


def learner_for(
    make_train: Callable[..., Train],
    env: MultiAgentEnv,
    cfg: Any,
    settings: RunSettings,
) -> Train:
    """`make_train(env, cfg, total_updates)` with `settings`' total updates, as `marl train`
    builds it: an annealed learning rate reaches 0 at the run's end."""
    steps = probe_learner(make_train, env, cfg).steps_per_update
    return make_train(env, cfg, settings.total_updates(steps))


def probe_learner(make_train: Callable[..., Train], env: MultiAgentEnv, cfg: Any) -> Train:
    """`make_train(env, cfg)` built only to read its shapes and `steps_per_update` (nothing is
    compiled; its warning that annealing cannot act without the run's length is muted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_train(env, cfg)


def run(
    env: MultiAgentEnv,
    train: Train,
    settings: RunSettings,
    log: Callable[[str], None] | None = print,
    on_evaluation: Callable[[int, dict[str, np.ndarray]], None] | None = None,
    checkpoints: SegmentCheckpoints | None = None,
    on_train_metrics: Callable[[int, dict[str, np.ndarray]], None] | None = None,
    devices: Sequence[jax.Device] | None = None,
    init_inputs: Any = None,
) -> RunResult:
    """Train `settings.seeds` seeds of `train` on `env` for `settings.budget` env steps each.

    Evaluates the greedy policy at step 0 and every `settings.interval()` env steps (rounded
    to whole updates; the budget is rounded up to whole segments). With `checkpoints`, every
    segment is saved there and a run that finds a saved segment continues after it (its
    evaluations so far are replayed through `on_evaluation`), giving the same result as an
    uninterrupted run. `on_train_metrics(step, metrics)` gets each segment's training metrics
    (per seed, means over its updates) just before that segment's `on_evaluation`.

    The seeds are sharded over `devices` (default: all local devices) when there are several
    and they divide the number of seeds; each device then trains and evaluates its share of
    the seeds, with the same results as on one device (`seed_sharding`). `init_inputs`
    replaces the seed keys given to `train.init` (leaves `[settings.seeds, ...]`; a vectorised
    hyperparameter sweep passes keys and values, `marl.learning.hyper`).
    """
    warn_if_unsafe()
    say = log or (lambda _: None)
    loop = _Loop(env, train, settings, say, on_evaluation, on_train_metrics, checkpoints)
    loop.start(devices, init_inputs)  # every seed's state: fresh and evaluated, or resumed
    loop.compile()  # the segment program
    for k in range(loop.done + 1, loop.num_segments + 1):
        loop.segment(k)  # train, check, evaluate, keep the best, checkpoint, log
    return loop.finish()  # final and best parameters, the absolute metric, timings


@dataclass(frozen=True)
class _Programs:
    """A run's programs, each compiled once for its (env, learner, shapes)."""

    segment: Callable[[Any], tuple[Any, dict[str, Array]]]  # `segment_program`
    finite: Callable[[Any], Array]  # [seeds] every parameter finite
    evaluate: Callable[[Any], dict[str, Array]]  # greedy episodes on the evaluation keys
    select: Callable[[Any, Any, Array], Any]  # where(better, params, best), best donated
    absolute: Callable[[Any], dict[str, Array]]  # the best parameters on the absolute keys


def _programs(env: MultiAgentEnv, train: Train, settings: RunSettings, length: int) -> _Programs:
    root = jax.random.key(settings.seed)
    eval_key = jax.random.fold_in(root, EVAL_SALT)

    def evaluate_all(state):
        params = seed_params(train, state)
        return jax.vmap(lambda p: evaluate(env, train.policy, p, eval_key, settings.eval_episodes))(
            params
        )

    def select(best, state, better):
        def pick(new, old):
            return jnp.where(better.reshape(better.shape + (1,) * (new.ndim - 1)), new, old)

        return jax.tree.map(pick, seed_params(train, state), best)

    def absolute_all(params):
        key = jax.random.fold_in(root, ABSOLUTE_SALT)
        n = settings.absolute_episodes
        return jax.vmap(lambda p: evaluate(env, train.policy, p, key, n))(params)

    return _Programs(
        segment=segment_program(train, length),
        finite=jax.jit(lambda s: finite_params(seed_params(train, s))),
        evaluate=jax.jit(evaluate_all),
        select=jax.jit(select, donate_argnums=0),
        absolute=jax.jit(absolute_all),
    )


@dataclass
class _Best:
    """Each seed's best evaluated parameters so far, their score and their step."""

    params: Any  # [seeds, ...]
    score: np.ndarray  # [seeds] mean of `settings.metric` over the evaluation episodes
    step: np.ndarray  # [seeds] env steps


class _Loop:
    """One call of `run`: its programs, the seeds' state, their best parameters, the result so
    far and the clocks; one method per step of the run, in the order they run."""

    def __init__(
        self,
        env: MultiAgentEnv,
        train: Train,
        settings: RunSettings,
        say: Callable[[str], None],
        on_evaluation: Callable[[int, dict[str, np.ndarray]], None] | None,
        on_train_metrics: Callable[[int, dict[str, np.ndarray]], None] | None,
        checkpoints: SegmentCheckpoints | None,
    ):
        self.env, self.train, self.settings, self.say = env, train, settings, say
        self.on_evaluation, self.on_train_metrics = on_evaluation, on_train_metrics
        self.checkpoints = checkpoints
        self.per_segment, self.num_segments = settings.schedule(train.steps_per_update)
        self.programs = _programs(env, train, settings, self.per_segment)
        self.lower = settings.metric in env.spec.lower_is_better  # e.g. pathfinding's flowtime
        self.result = RunResult()
        self.best: _Best | None = None
        self.state: Any = None
        self.compiled: Callable[[Any], tuple[Any, dict[str, Array]]] | None = None
        self.done = 0  # segments finished before this call (a resumed run's)
        self.train_time = 0.0
        self.prior_wall = 0.0  # wall time of the processes before a resume, to their last segment
        self.t0 = self.loop_start = 0.0

    def start(self, devices: Sequence[jax.Device] | None, init_inputs: Any) -> None:
        """Initialise every seed (`init_seeds`, placed by `seed_sharding`), then continue
        after a saved segment or evaluate step 0."""
        self.t0 = time.perf_counter()
        root, s = jax.random.key(self.settings.seed), self.settings  # sizes refused up front
        like = jax.eval_shape(s.seed_keys, root) if init_inputs is None else init_inputs
        episodes = max(s.eval_episodes, s.absolute_episodes)
        check_run_fits(self.env, self.train, like, s.seeds, episodes, _held_by(devices))
        place = seed_sharding(s.seeds, devices, self.say, self.train.num_envs)
        keys = self.settings.seed_keys(root)
        inputs = keys if init_inputs is None else init_inputs
        # wait for init before dispatching anything that reads its result
        self.state = jax.block_until_ready(place(init_seeds(self.train, inputs)))
        saved = None if self.checkpoints is None else self.checkpoints.latest()
        if saved is None:
            self._evaluate_first()
        else:
            self._resume(saved, place)

    def compile(self) -> None:
        """Compile the segment; the start-up (init, first evaluation, compile) is timed."""
        self.compiled = self.programs.segment.lower(self.state).compile()
        self.result.compile_time = time.perf_counter() - self.t0
        self._log_start()
        self.loop_start = time.perf_counter()

    def _evaluate_first(self) -> None:
        first = fetch(self.programs.evaluate(self.state))
        self._track(0, first)
        self._record(0, first)

    def _resume(self, saved: int, place: Callable[[Any], Any]) -> None:
        """Continue after segment `saved`: its state, best parameters and history restored
        (its evaluations replayed through `on_evaluation`)."""
        assert self.checkpoints is not None
        like = template(self.state)
        # never hold the fresh state beside the restored one (a replay buffer: GBs)
        self.state = None
        best_like = jax.eval_shape(self.train.params, like)
        state, best, history = self.checkpoints.restore(saved, like, best_like)
        self.state, best = place(state), place(best)
        self.result.steps = [int(x) for x in history["steps"]]
        self.result.evaluations = unstack(history["evaluations"])
        self.result.train_metrics = unstack(history["train_metrics"])
        self.best = _Best(best, history["best_score"], history["best_step"])
        self.train_time = float(history["train_time"])
        self.prior_wall = float(history.get("wall_time", 0.0))  # absent from older checkpoints
        self.done = saved
        if self.on_evaluation:
            for step, evals in zip(self.result.steps, self.result.evaluations, strict=True):
                self.on_evaluation(step, evals)

    def segment(self, k: int) -> None:
        """Segment `k`: its updates, stopped before a non-finite policy is evaluated, selected
        or checkpointed (`Diverged`); then its evaluation, best parameters, hooks, checkpoint
        and progress line."""
        assert self.compiled is not None
        start = time.perf_counter()
        self.state, metrics = self.compiled(self.state)
        metrics = fetch(metrics)
        self.train_time += time.perf_counter() - start
        steps = k * self.per_segment * self.train.steps_per_update
        bad, what = non_finite(fetch(self.programs.finite(self.state)), metrics)
        if bad.any():
            raise Diverged(steps, self.settings.first_seed + np.flatnonzero(bad), what)
        evals = fetch(self.programs.evaluate(self.state))
        self._track(steps, evals)
        self._record(steps, evals, metrics)
        self._checkpoint(k)
        self._log_segment(k, steps, evals)

    def _track(self, steps: int, evals: dict[str, np.ndarray]) -> None:
        """Keep each seed's parameters where this evaluation beats its best (the earliest on
        ties)."""
        metric = self.settings.metric
        if metric not in evals:
            valid = ", ".join(sorted(evals))
            raise ValueError(f"protocol metric {metric!r} is not evaluated; valid: {valid}")
        score = np.asarray(evals[metric]).mean(axis=-1)
        if self.best is None:  # zeros, not the state's own buffers: the state is donated later
            self.best = _Best(
                params=jax.tree.map(jnp.zeros_like, seed_params(self.train, self.state)),
                score=np.full_like(score, np.inf if self.lower else -np.inf),
                step=np.zeros(score.shape, np.int64),
            )
        best = self.best
        better = score < best.score if self.lower else score > best.score
        best.params = self.programs.select(best.params, self.state, jnp.asarray(better))
        best.score = np.where(better, score, best.score)
        best.step = np.where(better, steps, best.step)

    def _record(
        self, steps: int, evals: dict[str, np.ndarray], metrics: dict | None = None
    ) -> None:
        """Add an evaluation (and its segment's training metrics) to the result and the hooks."""
        self.result.steps.append(steps)
        self.result.evaluations.append(evals)
        if metrics is not None:
            self.result.train_metrics.append(metrics)
            if self.on_train_metrics:
                self.on_train_metrics(steps, metrics)
        if self.on_evaluation:
            self.on_evaluation(steps, evals)

    def _checkpoint(self, k: int) -> None:
        """Save segment `k`: the state, the best parameters and the history so far."""
        if self.checkpoints is None:
            return
        assert self.best is not None
        r = self.result
        history = stack_history(
            r.steps,
            r.evaluations,
            r.train_metrics,
            best_score=self.best.score,
            best_step=self.best.step,
            train_time=self.train_time,
            wall_time=self.prior_wall + time.perf_counter() - self.t0,
        )
        self.checkpoints.save(k, self.state, self.best.params, history)

    def _log_start(self) -> None:
        spu, per_segment = self.train.steps_per_update, self.per_segment
        resumed = f"; resumed after segment {self.done}" if self.done else ""
        self.say(
            f"{self.env.spec.name}: {self.settings.seeds} seeds x "
            f"{self.num_segments * per_segment * spu:,} steps, "
            f"{self.num_segments} segments of {per_segment} updates x {spu} steps "
            f"(compiled in {self.result.compile_time:.1f}s); eval return at 0: "
            f"{self.result.evaluations[0]['return'].mean():.3f}{resumed}"
        )

    def _log_segment(self, k: int, steps: int, evals: dict[str, np.ndarray]) -> None:
        sps = steps * self.settings.seeds / max(self.train_time, 1e-9)
        elapsed = time.perf_counter() - self.loop_start
        eta = (self.num_segments - k) * elapsed / (k - self.done)
        ret = evals["return"].mean(axis=-1)
        self.say(
            f"[{k:>3}/{self.num_segments}] {steps:>11,} steps  {sps:>10,.0f} steps/s  "
            f"ETA {_fmt_time(eta)}  eval return {ret.mean():9.3f} (seeds {ret.min():.2f}"
            f"..{ret.max():.2f})"
        )

    def finish(self) -> RunResult:
        """The final and best parameters, the absolute metric (each seed's best parameters on
        `absolute_episodes` fresh episodes) and the timings."""
        assert self.best is not None
        r, best = self.result, self.best
        r.final_state = self.state
        r.params = fetch(seed_params(self.train, self.state))
        r.best_step, r.best_score = best.step, best.score
        r.best_params = fetch(best.params)
        if self.settings.absolute_episodes > 0:
            r.absolute = fetch(self.programs.absolute(best.params))
            absolute = r.absolute[self.settings.metric].mean(axis=-1)
            self.say(
                f"absolute {self.settings.metric} (best evaluated parameters, "
                f"{self.settings.absolute_episodes} episodes): {absolute.mean():.3f} (seeds "
                f"{absolute.min():.2f}..{absolute.max():.2f}; best at steps "
                f"{', '.join(f'{s:,}' for s in best.step)})"
            )
        r.wall_time = self.prior_wall + time.perf_counter() - self.t0
        r.steps_per_second = r.steps[-1] * self.settings.seeds / max(self.train_time, 1e-9)
        return r
