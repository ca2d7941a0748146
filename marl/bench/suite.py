"""`marl bench --suite`: every environment family, every learner's training loop, agent scaling.

Three parts, each a list of measurements made the way `marl.bench.envs` makes them (a compiled
`lax.scan`, timed to `block_until_ready` in steady state after untimed calls, compile time
and XLA's peak memory estimate reported apart):

    envs      each family's representative tasks at 1, 64, 1,024 and 4,096 parallel envs, with
              random valid actions and auto-reset, next to the peer's version of the task
              (JaxMARL's MPE and SMAX, CAMAR) measured in the same process;
    train     each learner's whole training step (rollout + update, `train.step` under `vmap`
              over seeds) on a representative task, and where its time goes: the same batch
              of envs stepped with random actions ("env"), stepped by the learner's policy
              ("env + policy"), and the rest of the training step ("update", by subtraction);
    scaling   steps/s and compile time against the number of agents (3 to 1,000) per family,
              on envs whose world grows with the agent count (`scaled_env`).

`run_suite` prints each row as it is measured and returns the records; `markdown` renders them
for `results/bench.md`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from marl.bench import envs as bench
from marl.bench import peers
from marl.bench.suite_tables import (
    ENV_HEADERS,
    PARTS,
    SCALING_HEADERS,
    TRAIN_HEADERS,
    Printer,
    env_row,
    machine,
    scaling_row,
    train_row,
)
from marl.core.env import MultiAgentEnv
from marl.core.learner import seed_params
from marl.core.registry import make
from marl.core.wrappers import AutoReset
from marl.learning import training
from marl.learning.acting import Acting, batch_step, policy_actions, rollout

NUM_ENVS = (1, 64, 1024, 4096)
SCALING_AGENTS = (3, 10, 30, 100, 300, 1000)
Array = jax.Array


# --- environments ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvCase:
    """One task of the environment part.

    work: env steps per timed call; each call runs `work // num_envs` steps per env, clamped to
    [min_steps, max_steps] (slow tasks get short scans so 4,096 envs stay affordable).
    """

    env_id: str
    peer: str | None  # "jaxmarl", "camar" or None (no peer has the task)
    work: int
    max_steps: int = 1000
    min_steps: int = 5
    kwargs: dict[str, Any] = field(default_factory=dict)
    steady: bool = True  # time in steady state (see `marl.bench.envs._measure`)

    def steps(self, num_envs: int) -> int:
        return max(self.min_steps, min(self.max_steps, self.work // num_envs))


ENV_CASES = (
    EnvCase("particle/spread", "jaxmarl", 1_000_000),
    EnvCase("particle/tag", "jaxmarl", 1_000_000),
    EnvCase("combat/3m", "jaxmarl", 200_000, max_steps=500),
    EnvCase("combat/2s3z", "jaxmarl", 100_000, max_steps=500),
    EnvCase("combat/27m_vs_30m", "jaxmarl", 10_000, max_steps=100),
    # random agents almost never arrive (2%), so every episode runs to the 128-step limit and
    # all envs reset together: a window from fresh resets has the steady rate within 5/128,
    # and an episode of burn-in would cost CAMAR (~200 steps/s) 45 minutes at 4,096 envs
    EnvCase("pathfinding/random_grid", "camar", 5_000, max_steps=100, steady=False),
    EnvCase("cleanup/comm", None, 100_000, max_steps=200),
)


def bench_env_case(case: EnvCase, num_envs: int, repeats: int, vs: bool) -> dict[str, Any]:
    """marl's and (if `vs` and the task has one) the peer's throughput at `num_envs`."""
    steps = case.steps(num_envs)
    out: dict[str, Any] = {
        "marl": bench.bench_env(
            case.env_id, num_envs, steps, repeats=repeats, steady=case.steady, **case.kwargs
        )
    }
    if vs and case.peer is not None:
        peer = peers.bench_camar if case.peer == "camar" else peers.bench_jaxmarl
        out[case.peer] = peer(
            case.env_id, num_envs, steps, repeats=repeats, steady=case.steady, **case.kwargs
        )
        out["ratio"] = out["marl"]["steps_per_s"] / out[case.peer]["steps_per_s"]
    return out


# --- training -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainCase:
    """One learner's training loop on a task: `marl train` overrides (env=..., algo=...)."""

    label: str
    overrides: tuple[str, ...]


# JaxMARL's published MAPPO-RNN MPE settings (16 envs x 128 steps, layers of 128 around a GRU
# of 128, 4 epochs x 4 minibatches), for a figure beside JaxMARL's own script's
JAXMARL_MAPPO_MPE = (
    "algo.num_envs=16",
    "algo.rollout_length=128",
    "algo.recurrent=true",
    "algo.hidden=[128,128]",
    "algo.gru_hidden=128",
    "algo.epochs=4",
    "algo.num_minibatches=4",
)

TRAIN_CASES = (
    TrainCase("ippo", ("env=particle/spread", "algo=ippo")),
    TrainCase("mappo", ("env=particle/spread", "algo=mappo")),
    TrainCase("mappo[jaxmarl-mpe]", ("env=particle/spread", "algo=mappo", *JAXMARL_MAPPO_MPE)),
    TrainCase("happo", ("env=particle/spread", "algo=happo")),
    TrainCase("iql", ("env=combat/3m", "algo=iql")),
    TrainCase("vdn", ("env=combat/3m", "algo=vdn")),
    TrainCase("qmix", ("env=combat/3m", "algo=qmix")),
    TrainCase("il", ("env=combat/battle64", "algo=il")),
    TrainCase("mfq", ("env=combat/battle64", "algo=mfq")),
    TrainCase("mfac", ("env=combat/battle64", "algo=mfac")),
)


def _policy_rollout(env: MultiAgentEnv, policy: Any, params: Any, num_envs: int, steps: int):
    """(function, carry): `steps` steps of `num_envs` auto-resetting envs acted in by `policy`
    (sampling, not greedy), as a training rollout acts; the function maps the carry on."""
    wrapped = AutoReset(env)

    def one(state, ts, h, start, key):
        return policy_actions(wrapped, policy, params, state, ts, h, start, key, False)

    def act(c: Acting, key: Array) -> tuple[Array, Any]:
        keys = jax.random.split(key, num_envs)
        return jax.vmap(one)(c.env_state, c.timestep, c.carry, c.start, keys)

    def record(c: Acting, ts, actions, h, nts) -> tuple[Acting, None]:
        return c.replace(carry=h, start=nts.done), None

    def run(carry):
        return rollout(batch_step(wrapped, num_envs), carry, steps, act, record)[0]

    key_reset, key_run = jax.random.split(jax.random.PRNGKey(1))
    state, ts = jax.jit(jax.vmap(wrapped.reset))(jax.random.split(key_reset, num_envs))
    h = jax.vmap(lambda _: policy.initial_carry())(jnp.arange(num_envs))
    return run, Acting(state, ts, key_run, h, jnp.ones((num_envs,), bool))


def training_program(train: Any, seeds: int, updates: int) -> tuple[Callable[[Any], Any], Any]:
    """(function, initial state): `updates` updates of `seeds` seeds vmapped over the seed axis,
    as `marl.learning.runner` runs them, and the initialised training state (seeds from key 0)."""
    keys = jax.random.split(jax.random.key(0), seeds)
    return training.updates(train, updates), training.init_seeds(train, keys)


def bench_training(
    overrides: Iterable[str], seeds: int = 1, work: int = 20_000, repeats: int = 2
) -> dict[str, Any]:
    """Throughput of one learner's training loop and where its time goes.

    The training program is a `lax.scan` over U updates of `vmap(train.step)` over `seeds`
    seeds, U the least number of updates covering `work` env steps per seed. Next to it, at the
    same batch (seeds x num_envs envs) and number of env steps: random actions ("env") and the
    learner's policy acting ("env + policy"). Returns steps_per_s (env steps, all seeds),
    agent_steps_per_s, compile_s, memory_bytes, and seconds per call of each part:
    train_s, env_s, policy_s (env + policy), with the shares env / policy forward / update.
    """
    from marl.run.train.compose import compose
    from marl.run.train.resolve import resolve

    run = resolve(compose([*overrides, f"seeds={seeds}"]))
    env, train = run.env, run.train
    per_update = train.steps_per_update  # env steps per update, all parallel envs of a seed
    num_envs = int(run.algo_cfg.get("num_envs", 1))
    updates = max(1, math.ceil(work / per_update))
    many, state = training_program(train, seeds, updates)
    compile_s, train_s, memory = bench.measure_program(many, state, repeats, chain=False)
    env_steps = updates * per_update  # per seed
    batch = seeds * num_envs
    steps_per_env = max(1, env_steps // num_envs)
    env_s = bench.bench_env(env, batch, steps_per_env, repeats=repeats)["run_s"]
    params = jax.tree.map(lambda x: x[0], seed_params(train, state))
    fn, carry = _policy_rollout(env, train.policy, params, batch, steps_per_env)
    burn_in = bench.burn_in_calls(env.spec.episode_limit, steps_per_env)  # as bench_env's
    _, policy_s, _ = bench.measure_program(fn, carry, repeats, burn_in)
    sps = seeds * env_steps / train_s
    return {
        "env": run.env_id,
        "algo": run.algo,
        "seeds": seeds,
        "num_envs": num_envs,
        "updates": updates,
        "env_steps_per_update": per_update,
        "num_agents": env.spec.num_agents,
        "steps_per_s": sps,
        "agent_steps_per_s": sps * env.spec.num_agents,
        "compile_s": compile_s,
        "memory_bytes": memory,
        "train_s": train_s,
        "env_s": env_s,
        "policy_s": policy_s,
        "share_env": min(env_s, train_s) / train_s,
        "share_policy": max(policy_s - env_s, 0.0) / train_s,
        "share_update": max(train_s - policy_s, 0.0) / train_s,
    }


# --- agent scaling --------------------------------------------------------------------------

SCALING_FAMILIES = ("particle", "combat", "pathfinding", "cleanup", "swarm")


def scaled_env(family: str, n: int) -> MultiAgentEnv:
    """A task of `family` with `n` agents whose world grows so the density stays that of the
    family's standard task: particle spread (arena side ~ sqrt(n / 3)), an n-vs-n marine battle
    (the 8 nearest units seen beyond 8 a side; map side ~ sqrt(n)), a random pathfinding grid
    (the free cells per agent of random_grid), an ocean (the vessels and plastic per area of
    cleanup/comm) and a Vicsek swarm on the unit torus (the mean-field limit: the world stays,
    the swarm grows denser)."""
    if n < 1:
        raise ValueError(f"agent count must be >= 1, got {n}")
    if family == "particle":
        return make("particle/spread", num_agents=n, arena=math.sqrt(n / 3))
    if family == "combat":
        return make(
            "combat/custom",
            allies=f"{n}m",
            enemies=f"{n}m",
            start_positions="reflect",
            map_size=max(32.0, 5.0 * math.sqrt(n)),
            nearest=8 if n > 8 else None,
            episode_limit=200,
        )
    if family == "pathfinding":
        side = max(12, int(math.ceil(math.sqrt(n * 12.5))))
        return make("pathfinding/random_grid", num_agents=n, height=side, width=side, num_maps=16)
    if family == "cleanup":
        scale = math.sqrt(n / 4)
        return make(
            "cleanup/custom",
            num_vessels=n,
            size=10.0 * scale,
            capacity=16 * n,
            initial_plastic=8 * n,
            num_sources=max(2, n // 2),
            patches=max(3, n // 2),
            grid=max(16, int(16 * scale)),
            port=(5.0 * scale, 0.0),
            neighbours=6,
        )
    if family == "swarm":
        return make("swarm/vicsek", num_agents=max(n, 2))
    raise ValueError(f"unknown family {family!r}; valid: {', '.join(SCALING_FAMILIES)}")


def bench_scaling(
    family: str, n: int, agent_batch: int = 1024, steps: int = 50, repeats: int = 2
) -> dict[str, Any]:
    """Env steps/s and compile time of `scaled_env(family, n)` at about `agent_batch` agents in
    flight (max(1, agent_batch // n) parallel envs), `steps` steps per timed call."""
    env = scaled_env(family, n)
    num_envs = max(1, agent_batch // n)
    # from fresh resets, one warm-up call: marl against itself across N (no peer to be fair
    # to), as the committed table was measured; an episode of burn-in at N = 1,000 costs minutes
    record = bench.bench_env(env, num_envs, steps, repeats=repeats, steady=False)
    return {"family": family, **record}


# --- the whole suite ------------------------------------------------------------------------


def run_suite(
    parts: Iterable[str] = PARTS,
    vs: bool = False,
    num_envs: Iterable[int] = NUM_ENVS,
    repeats: int = 2,
    seeds: int = 1,
    agents: Iterable[int] = SCALING_AGENTS,
    families: Iterable[str] = SCALING_FAMILIES,
    env_cases: Iterable[EnvCase] = ENV_CASES,
    train_cases: Iterable[TrainCase] = TRAIN_CASES,
    train_work: int = 20_000,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Measure the chosen `parts` of the suite, printing each row; returns the records."""
    parts = list(parts)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown suite part(s) {', '.join(unknown)}; valid: {', '.join(PARTS)}")
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "vs": vs,
        "repeats": repeats,
    }
    if "envs" in parts:
        table = Printer(
            "environments (random valid actions, auto-reset)",
            ENV_HEADERS,
            [24, 8, 5, 12, 13, 9, 10, 26, 12, 14, 9],
        )
        out["envs"] = []
        for case in env_cases:
            for n in num_envs:
                rec = {
                    "case": case.env_id,
                    "peer": case.peer,
                    **bench_env_case(case, n, repeats, vs),
                }
                out["envs"].append(rec)
                table.row(env_row(rec))
    if "train" in parts:
        table = Printer(
            f"training loops ({seeds} seed(s) vmapped; shares of a training step)",
            TRAIN_HEADERS,
            [18, 16, 12, 9, 13, 9, 10, 16, 5, 8, 8],
        )
        out["train"] = []
        for case in train_cases:
            rec = bench_training(case.overrides, seeds=seeds, work=train_work, repeats=repeats)
            out["train"].append({"label": case.label, "overrides": list(case.overrides), **rec})
            table.row(train_row(case.label, rec))
    if "scaling" in parts:
        table = Printer(
            "agent scaling (about 1,024 agents in flight: max(1, 1024 // N) envs)",
            SCALING_HEADERS,
            [11, 6, 8, 10, 13, 9, 10],
        )
        out["scaling"] = []
        for family in families:
            for n in agents:
                rec = bench_scaling(family, n, repeats=repeats)
                out["scaling"].append(rec)
                table.row(scaling_row(rec))
    out["wall_s"] = time.perf_counter() - t0
    log(f"\nsuite done in {out['wall_s'] / 60:.1f} min")
    return out
