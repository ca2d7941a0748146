"""Compile time of `jit(vmap(step))` against the number of agents (agent axis, not a dict).

    python scripts/compile_scaling.py [--env particle/spread] [--agents 3,10,50,200]

Prints, per agent count, the seconds to lower and compile one batched step and the ratio to
the smallest count. Each compile is timed in a fresh trace (no cache hits).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import marl
from marl.runtime import configure_xla


def compile_seconds(env_id: str, num_agents: int, num_envs: int, repeats: int = 3) -> float:
    """Best-of-`repeats` wall time to trace, lower and compile the batched step."""
    kwarg = {"particle/tag": "num_adversaries", "particle/adversary": "num_good"}.get(
        env_id, "num_agents"
    )
    env = marl.make(env_id, **{kwarg: num_agents})
    keys = jax.random.split(jax.random.key(0), num_envs)
    state, ts = jax.vmap(env.reset)(keys)
    actions = jnp.zeros((num_envs, *env.spec.action_shape), env.spec.action_space.dtype)
    best = float("inf")
    for _ in range(repeats):
        fn = jax.jit(jax.vmap(lambda k, s, a: env.step(k, s, a)))  # new function: no cache
        start = time.perf_counter()
        fn.lower(keys, state, actions).compile()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    configure_xla()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="particle/spread")
    parser.add_argument("--agents", default="3,10,50,200")
    parser.add_argument("--num-envs", type=int, default=64)
    args = parser.parse_args()
    counts = [int(x) for x in args.agents.split(",")]
    base = None
    print(f"{'agents':>7} {'compile s':>10} {'ratio':>7}   ({args.env}, {args.num_envs} envs)")
    for n in counts:
        sec = compile_seconds(args.env, n, args.num_envs)
        base = base or sec
        print(f"{n:>7} {sec:>10.3f} {sec / base:>7.2f}")


if __name__ == "__main__":
    main()
