"""Steps per second of marl's PettingZoo adapter on one env, beside marl's native batched step.

    python scripts/pettingzoo_speed.py                       # combat/3m, 256 envs
    python scripts/pettingzoo_speed.py --env particle/spread --num-envs 1024

Three rows, env steps per second (one step of every agent counts once): the `ParallelEnv`
(one env, dicts in and out, a host round trip per step), the vectorised form (`MarlVectorEnv`,
one jitted vmapped step per call, NumPy out) and marl's own step (the same vmapped step, 100
steps per call inside `lax.scan`, nothing leaves the device). Actions are the first available
one of each agent (the adapter's cost, not a policy's). Compile time is left out.

Feeds the PettingZoo adapter note of `results/bench.md` (its figures and command).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import marl
from marl.core.wrappers import AutoReset
from marl.interop.pettingzoo import MarlParallelEnv, MarlVectorEnv


def parallel_rate(env, seconds: float) -> float:
    pz = MarlParallelEnv(env)
    pz.reset(seed=0)
    steps, start = 0, None
    while start is None or time.perf_counter() - start < seconds:
        if not pz.agents:
            pz.reset()
        masks = {a: pz._mask(pz.possible_agents.index(a)) for a in pz.agents}
        pz.step({a: int(np.argmax(m)) for a, m in masks.items()})
        if start is None:  # the first step compiled
            start = time.perf_counter()
        else:
            steps += 1
    return steps / (time.perf_counter() - start)


def vector_rate(env, num_envs: int, seconds: float) -> float:
    vec = MarlVectorEnv(env, num_envs)
    _, infos = vec.reset(seed=0)
    vec.step(np.argmax(infos["action_mask"], -1))  # compile
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, _, _, infos = vec.step(np.argmax(infos["action_mask"], -1))
        calls += 1
    return calls * num_envs / (time.perf_counter() - start)


def native_rate(env, num_envs: int, seconds: float, length: int = 100) -> float:
    wrapped = AutoReset(env)
    step = jax.vmap(wrapped.step)

    @jax.jit
    def run(key, state, ts):
        def body(carry, k):
            state, ts = carry
            acts = jnp.argmax(ts.avail_actions, -1).astype(jnp.int32)
            return step(jax.random.split(k, num_envs), state, acts), None

        (state, ts), _ = jax.lax.scan(body, (state, ts), jax.random.split(key, length))
        return state, ts

    state, ts = jax.vmap(wrapped.reset)(jax.random.split(jax.random.key(0), num_envs))
    state, ts = jax.block_until_ready(run(jax.random.key(1), state, ts))  # compile
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state, ts = jax.block_until_ready(run(jax.random.key(calls), state, ts))
        calls += 1
    return calls * length * num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="combat/3m")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    env = marl.make(args.env)
    rows = [
        ("PettingZoo ParallelEnv, 1 env", parallel_rate(env, args.seconds)),
        (f"MarlVectorEnv, {args.num_envs} envs", vector_rate(env, args.num_envs, args.seconds)),
        (
            f"marl native (lax.scan), {args.num_envs} envs",
            native_rate(env, args.num_envs, args.seconds),
        ),
    ]
    native = rows[-1][1]
    print(f"{args.env} on {jax.devices()[0].platform}: env steps per second")
    print("| form | steps/s | of native |")
    print("|---|---|---|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} | {rate / native:.4f} |")


if __name__ == "__main__":
    main()
