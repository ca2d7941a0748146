"""Environment throughput, measured the same way for marl and its peers (`marl.bench.peers`).

The method (both sides, same process): `jax.jit` of a function that runs `lax.scan` over
`steps` steps of `num_envs` parallel environments (`vmap` of the step), with uniformly random
valid actions and auto-reset, each side through its own API: marl's `AutoReset.step_batch`
(resets computed on steps where an episode ended), JaxMARL's `step` (which computes a reset
every step), CAMAR's `step` plus a reset like marl's (CAMAR's step does not reset). Tracing,
lowering and compiling it is reported as `compile_s`, XLA's estimate of its peak memory as
`memory_bytes`; the throughput comes from the best of `repeats` calls after a warm-up call,
each timed to `block_until_ready`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv, TimeStep
from marl.core.registry import make
from marl.core.spaces import Discrete, sample_actions
from marl.core.wrappers import AutoReset

__all__ = ["bench_env", "burn_in_calls", "peak_bytes", "random_valid_actions"]


def random_valid_actions(key: jax.Array, space: Any, avail_actions: jax.Array) -> jax.Array:
    """Uniformly random valid joint action, drawn the cheap way for throughput benchmarks.

    Discrete: one uniform number per agent picks the k-th available action (k uniform below
    their count): the same distribution as `marl.core.spaces.sample_actions`, whose Gumbel draw per
    action costs more than a particle step on a CPU, but a different random stream (so the
    anchors and tests built on `sample_actions` keep theirs). Continuous: `sample_actions`.
    """
    if not isinstance(space, Discrete):
        return sample_actions(key, space, avail_actions)
    counts = jnp.cumsum(avail_actions.astype(jnp.int32), axis=-1)  # [N, A]
    total = counts[:, -1]
    u = jax.random.uniform(key, total.shape)
    k = jnp.minimum((u * total).astype(jnp.int32), jnp.maximum(total - 1, 0))
    # the index of the k-th available action: how many positions have at most k before them
    return jnp.sum(counts <= k[:, None], axis=-1).astype(jnp.int32)


def with_final(ts: TimeStep) -> TimeStep:
    """`ts` with its `final_*` fields filled, so a scan carry keeps one structure."""
    if ts.final_obs is None:
        ts = ts.replace(final_obs=ts.obs)
    if ts.final_state is None:
        ts = ts.replace(final_state=ts.state)
    if ts.final_avail is None:
        ts = ts.replace(final_avail=ts.avail_actions)
    if ts.final_alive is None:
        ts = ts.replace(final_alive=ts.alive)
    return ts


def measure_program(
    fn: Callable[[Any], Any], carry: Any, repeats: int, burn_in: int = 1, chain: bool = True
) -> tuple[float, float, int]:
    """(compile seconds, best of `repeats` timed calls, XLA's peak memory estimate in bytes).

    `fn` maps a scan carry to the carry after its steps. It is jitted, lowered and compiled
    explicitly (the compile time excludes running it); `burn_in` untimed calls (at least one)
    carry the envs into steady state, then each timed call continues from the last carry and
    runs to `block_until_ready`. A scan that started from fresh resets would time episodes
    that had not yet ended (no resets), flattering whichever side resets only when needed.
    `chain=False`: every call starts from the given carry (`fn` returns something else).
    """
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(carry).compile()
    compile_s = time.perf_counter() - t0
    start = carry
    for _ in range(max(burn_in, 1)):
        out = jax.block_until_ready(compiled(carry))
        carry = out if chain else start
    best = float("inf")
    for _ in range(max(repeats, 1)):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(carry))
        best = min(best, time.perf_counter() - t0)
        carry = out if chain else start
    return compile_s, best, peak_bytes(compiled)


def burn_in_calls(episode_limit: int | None, steps: int) -> int:
    """Untimed calls of `steps` steps that cover one episode limit (every env has ended an
    episode by then, so resets run at their steady-state rate)."""
    return max(1, math.ceil((episode_limit or 0) / steps))


def peak_bytes(compiled: Any) -> int:
    """XLA's estimate of a compiled program's peak device memory: arguments + outputs +
    temporaries - aliased buffers (0 when the backend does not report it)."""
    stats = compiled.memory_analysis()
    if stats is None:
        return 0
    return int(
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
    )


def throughput_record(
    name: str, num_agents: int, num_envs: int, steps: int, measured: tuple[float, float, int]
) -> dict[str, Any]:
    compile_s, best, memory = measured
    sps = num_envs * steps / best
    return {
        "env": name,
        "num_envs": num_envs,
        "steps": steps,
        "num_agents": num_agents,
        "compile_s": compile_s,
        "run_s": best,
        "memory_bytes": memory,
        "steps_per_s": sps,
        "agent_steps_per_s": sps * num_agents,
        "device": jax.devices()[0].platform,
    }


def bench_env(
    env: str | MultiAgentEnv,
    num_envs: int = 64,
    steps: int = 1000,
    seed: int = 0,
    *,
    repeats: int = 3,
    steady: bool = True,
    **env_kwargs: Any,
) -> dict[str, Any]:
    """Throughput of a marl environment (an id built with `env_kwargs`, or an env).

    `steady=False`: time from fresh resets (one warm-up call instead of one episode limit of
    untimed steps). Returns a dict: env, num_envs, steps, num_agents, compile_s (trace, lower,
    compile), run_s (best timed call), memory_bytes (XLA's peak estimate), steps_per_s
    (= num_envs * steps / run_s), agent_steps_per_s, device.
    """
    if isinstance(env, str):
        env = make(env, **env_kwargs)
    elif env_kwargs:
        raise TypeError("env_kwargs apply only when `env` is an id")
    spec = env.spec
    wrapped = AutoReset(env)
    v_reset = jax.vmap(wrapped.reset)
    v_step = wrapped.step_batch  # resets computed on the steps where an episode ended
    v_sample = jax.vmap(lambda k, avail: random_valid_actions(k, spec.action_space, avail))

    def body(carry, _):
        state, ts, key = carry
        key, key_act, key_step = jax.random.split(key, 3)
        actions = v_sample(jax.random.split(key_act, num_envs), ts.avail_actions)
        state, ts = v_step(jax.random.split(key_step, num_envs), state, actions)
        return (state, with_final(ts), key), None

    def run(carry):  # the whole TimeStep is carried, so no output is dead code
        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    key_reset, key_run = jax.random.split(jax.random.PRNGKey(seed))
    state, ts = jax.jit(v_reset)(jax.random.split(key_reset, num_envs))
    carry = jax.block_until_ready((state, with_final(ts), key_run))
    burn_in = burn_in_calls(spec.episode_limit if steady else None, steps)
    measured = measure_program(run, carry, repeats, burn_in)
    return throughput_record(spec.name, spec.num_agents, num_envs, steps, measured)


# combat ids whose SMAC map JaxMARL's HeuristicEnemySMAX has (`map_name_to_scenario`)
