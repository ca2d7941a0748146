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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train, seed_params
from marl.learning import interrupt
from marl.learning.checkpoint import SegmentCheckpoints, stack_history, template, unstack
from marl.learning.evaluation import evaluate
from marl.learning.memory import check_run_fits
from marl.learning.training import (
    ABSOLUTE_SALT,
    EVAL_SALT,
    Diverged,
    RunResult,
    RunSettings,
    fetch,
    finite_params,
    held_by,
    init_seeds,
    non_finite,
    seed_sharding,
    segment_program,
)
from marl.learning.xla import warn_if_unsafe

Array = jax.Array


def _fmt_time(sec: float) -> str:
    sec = int(max(sec, 0))
    return f"{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


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
    with interrupt.deferred():  # Ctrl-C stops at a safe point (under the command line)
        loop.start(devices, init_inputs)  # every seed's state: fresh and evaluated, or resumed
        loop.compile()  # the segment program
        interrupt.check()
        for k in range(loop.done + 1, loop.num_segments + 1):
            loop.segment(k)  # train, check, evaluate, keep the best, checkpoint, log
            interrupt.check()
    return loop.finish()  # final and best parameters, the absolute metric, timings


@dataclass(frozen=True)
class _Programs:
    """A run's programs, each compiled once for its (env, learner, shapes)."""

    segment: jax.stages.Wrapped  # `segment_program`: (state) -> (state, metric means)
    finite: Callable[[Any], Array]  # [seeds] every parameter finite
    evaluate: Callable[[Any], dict[str, Array]]  # greedy episodes on the evaluation keys
    select: Callable[[Any, Any, Array], Any]  # where(better, params, best), best donated
    absolute: Callable[[Any], dict[str, Array]]  # the best parameters on the absolute keys


def _programs(env: MultiAgentEnv, train: Train, settings: RunSettings, length: int) -> _Programs:
    root = jax.random.key(settings.seed)
    eval_key = jax.random.fold_in(root, EVAL_SALT)

    def evaluate_all(state: Any) -> dict[str, Array]:
        params = seed_params(train, state)
        return jax.vmap(lambda p: evaluate(env, train.policy, p, eval_key, settings.eval_episodes))(
            params
        )

    def select(best: Any, state: Any, better: Array) -> Any:
        def pick(new: Array, old: Array) -> Array:
            return jnp.where(better.reshape(better.shape + (1,) * (new.ndim - 1)), new, old)

        return jax.tree.map(pick, seed_params(train, state), best)

    def absolute_all(params: Any) -> dict[str, Array]:
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
        held = held_by(devices, s.seeds, self.train.num_envs)
        check_run_fits(self.env, self.train, like, s.seeds, episodes, held)
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
            raise Diverged(steps, (self.settings.first_seed + np.flatnonzero(bad)).tolist(), what)
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
