"""Steps per second of marl's PettingZoo adapter on one env, beside marl's native batched step.

    python scripts/pettingzoo_speed.py                       # combat/3m, 256 envs
    python scripts/pettingzoo_speed.py --env particle/spread --num-envs 1024 --vs-mpe2
    python scripts/pettingzoo_speed.py --adapters 500       # memory of built-and-dropped adapters
    python scripts/pettingzoo_speed.py --env particle/spread --num-envs 1024 --torchrl

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
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import marl
from marl.core.wrappers import AutoReset
from marl.interop.pettingzoo import MarlParallelEnv, MarlVectorEnv


def parallel_rate(env, seconds: float) -> float:
    return pz_rate(MarlParallelEnv(env), seconds)


def pz_rate(pz, seconds: float) -> float:
    """Steps per second of a PettingZoo ParallelEnv, first allowed (or 0) action each."""
    pz.reset(seed=0)
    steps, start = 0, None
    while start is None or time.perf_counter() - start < seconds:
        if not pz.agents:
            pz.reset()
        if hasattr(pz, "_mask"):
            masks = {a: pz._mask(pz.possible_agents.index(a)) for a in pz.agents}
            pz.step({a: int(np.argmax(m)) for a, m in masks.items()})
        else:
            pz.step({a: 0 for a in pz.agents})
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


def torchrl_rate(env, num_envs: int, seconds: float) -> float:
    from marl.interop.torchrl import MarlTorchEnv

    trl = MarlTorchEnv(env, num_envs)
    td = trl.reset()

    def act(td):
        for name in trl.group_map:
            td.set((name, "action"), trl.full_action_spec[name, "action"].zero())
        return td

    for _ in range(3):  # compile
        _, td = trl.step_and_maybe_reset(act(td))
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, td = trl.step_and_maybe_reset(act(td))
        calls += 1
    return calls * num_envs / (time.perf_counter() - start)


def versus_mpe2(env, seconds: float, rounds: int = 3) -> tuple[float, float]:
    """marl's ParallelEnv and mpe2's simple_spread (25 cycles), alternating rounds: the best of
    each (the machine is shared; the best is the least disturbed)."""
    from mpe2 import simple_spread_v3

    ours, theirs = MarlParallelEnv(env), simple_spread_v3.parallel_env(max_cycles=25)
    a, b = [], []
    for _ in range(rounds):
        a.append(pz_rate(ours, seconds / rounds))
        b.append(pz_rate(theirs, seconds / rounds))
    return max(a), max(b)


def memory() -> tuple[int, float]:
    """(memory maps, resident MiB) of this process (Linux)."""
    maps = Path("/proc/self/maps").read_text().count("\n")
    status = Path("/proc/self/status").read_text().splitlines()
    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    return maps, rss / 1024


def adapters(env_id: str, count: int) -> None:
    import gc

    first = None
    for k in range(count):
        pz = MarlParallelEnv(env_id)
        pz.reset(seed=k)
        pz.step({a: 0 for a in pz.agents})
        del pz
        gc.collect()
        if k == 0:
            first = memory()
        if k in (0, count - 1) or (k + 1) % 100 == 0:
            maps, rss = memory()
            print(f"after {k + 1:4d} adapters: {maps} memory maps, {rss:,.0f} MiB resident")
    maps, rss = memory()
    print(f"maps {maps / first[0]:.3f}x and resident {rss / first[1]:.3f}x of the first adapter's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="combat/3m")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--vs-mpe2", action="store_true", help="mpe2's spread beside (spread only)")
    parser.add_argument("--adapters", type=int, help="build and drop this many adapters instead")
    parser.add_argument("--torchrl", action="store_true", help="the batched TorchRL env beside")
    args = parser.parse_args()
    if args.adapters:
        return adapters(args.env, args.adapters)
    env = marl.make(args.env)
    if args.vs_mpe2:
        if args.env != "particle/spread":
            raise SystemExit("--vs-mpe2 compares particle/spread with mpe2's simple_spread")
        ours, theirs = versus_mpe2(env, 2 * args.seconds)
        ratio = ours / theirs
        print(f"ParallelEnv, 1 env: marl {ours:,.0f} steps/s, mpe2 {theirs:,.0f}: {ratio:.2f}x")
    rows = [
        ("PettingZoo ParallelEnv, 1 env", parallel_rate(env, args.seconds)),
        (f"MarlVectorEnv, {args.num_envs} envs", vector_rate(env, args.num_envs, args.seconds)),
    ]
    if args.torchrl:
        rows.append(
            (
                f"TorchRL MarlTorchEnv, {args.num_envs} envs",
                torchrl_rate(env, args.num_envs, args.seconds),
            )
        )
    rows += [
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
