"""marl's grid family against pogema, stepped in one run: env steps per second at 1, 64 and
1,024 parallel envs with 64, 256 and 1,024 agents, and marl's ratio to pogema.

pogema runs in an interpreter of its own (it pins numpy <= 1.26.4; scripts/pogema_reference.py
says how to make one), started from this script in the same run, and is stepped the way its
users step it: one `pogema_v0` env per process, a Python list of envs stepped one after the
other for K parallel envs (so its rate per env step does not depend on K; measured at 1 and
64), each reset when its episode ends. marl's side is `GridMAPF` under `jit(vmap(step))`
on random actions, auto-reset included, observations consumed (summed, so none is
optimised away), compile excluded (printed apart), timed over one whole episode (each env
resets once; the best of the runs that fill 3 s). Episodes of 64 steps on both sides;
POGEMA's defaults otherwise: priority collisions, finish on target, observation radius 5,
random maps at density 0.3, 64 x 64 cells (room for 1,024 start-goal pairs). The last
column bounds the ratio on the machine: a program that does nothing but write and read each
step's float32 observations (3 x 11 x 11 per agent), against pogema. `--on-target restart`
times lifelong MAPF on both sides instead (an agent on its goal draws a new one; pogema's
`on_target='restart'`).

    python scripts/bench_pogema.py --pogema .venv-pogema/bin/python
    python scripts/bench_pogema.py --pogema .venv-pogema/bin/python --agents 64 --envs 1 64
    python scripts/bench_pogema.py --pogema .venv-pogema/bin/python --on-target restart

Feeds `results/bench.md` (its grid table, with the command and the machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

POGEMA_SIDE = r"""
import json, sys, time
import numpy as np
from pogema import GridConfig, pogema_v0
agents, envs, steps, size = (int(a) for a in sys.argv[1:5])
on_target = sys.argv[5]
pool = [pogema_v0(GridConfig(num_agents=agents, size=size, density=0.3, seed=i,
                             max_episode_steps=64, on_target=on_target)) for i in range(envs)]
for e in pool:
    e.reset()
rng = np.random.default_rng(0)
acts = [rng.integers(5, size=agents).tolist() for _ in range(steps)]
start = time.perf_counter()
for t in range(steps):
    for e in pool:
        obs, reward, terminated, truncated, info = e.step(list(acts[t]))
        if all(terminated) or all(truncated):
            e.reset()
print(json.dumps({"steps_per_s": steps * envs / (time.perf_counter() - start)}))
"""


def pogema_rate(
    python: str, agents: int, envs: int, steps: int, size: int, on_target: str = "finish"
) -> float:
    out = subprocess.run(
        [python, "-c", POGEMA_SIDE, str(agents), str(envs), str(steps), str(size), on_target],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"])


def best_seconds(call, fill: float = 3.0) -> float:
    """The fastest of the calls `call(i)` (i = 1, 2, ...) that fill `fill` seconds, after one
    untimed warm call (`call(0)`)."""
    call(0)
    best, spent, i = float("inf"), 0.0, 1
    while spent < fill:
        t0 = time.perf_counter()
        call(i)
        took = time.perf_counter() - t0
        best, spent, i = min(best, took), spent + took, i + 1
    return best


def marl_rate(
    agents: int, envs: int, steps: int, size: int, on_target: str = "finish"
) -> tuple[float, float]:
    """(env steps per second, compile seconds) of `GridMAPF` under jit(vmap(step))."""
    import jax
    import jax.numpy as jnp

    from marl.core.wrappers import AutoReset
    from marl.envs.grid import GridMAPF, RandomMaps

    grid = GridMAPF(
        maps=RandomMaps(size, size, 0.3), num_agents=agents, episode_limit=64, on_target=on_target
    )
    env = AutoReset(grid)
    keys = jax.random.split(jax.random.key(0), envs)
    states, _ = jax.jit(jax.vmap(env.reset))(keys)

    def run(states, key):
        def one(c, k):
            s, total = c
            ka, ks = jax.random.split(k)
            acts = jax.random.randint(ka, (envs, agents), 0, 5)
            s, ts = env.step_batch(jax.random.split(ks, envs), s, acts)
            return (s, total + ts.reward.sum() + ts.obs.sum()), None

        (states, total), _ = jax.lax.scan(
            one, (states, jnp.float32(0)), jax.random.split(key, steps)
        )
        return states, total

    t0 = time.perf_counter()
    program = jax.jit(run).lower(states, jax.random.key(1)).compile()
    compile_s = time.perf_counter() - t0
    carry = [states]

    def call(i: int) -> None:
        carry[0], total = program(carry[0], jax.random.key(i))
        jax.block_until_ready(total)

    return steps * envs / best_seconds(call), compile_s


def floor_rate(agents: int, envs: int, steps: int, obs_dim: int) -> float:
    """Env steps per second of a program that only writes and reads each step's float32
    observations [envs, agents, obs_dim]: the memory traffic any env with POGEMA's
    observation pays, so `floor_rate / pogema` bounds the ratio reachable on this machine."""
    import jax
    import jax.numpy as jnp

    def run(obs):
        def one(c, _):
            obs, total = c
            obs = obs * 0.5 + 1.0
            return (obs, total + obs.sum()), None

        return jax.lax.scan(one, (obs, jnp.float32(0)), None, length=steps)[0][1]

    program = jax.jit(run).lower(jnp.zeros((envs, agents, obs_dim), jnp.float32)).compile()
    obs = jnp.zeros((envs, agents, obs_dim), jnp.float32)
    return steps * envs / best_seconds(lambda i: jax.block_until_ready(program(obs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pogema", required=True, help="an interpreter with pogema 1.4.0")
    ap.add_argument("--agents", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--envs", type=int, nargs="+", default=[1, 64, 1024])
    ap.add_argument("--size", type=int, default=64, help="map side, cells")
    ap.add_argument("--budget", type=float, default=2e5, help="pogema's agent-steps, each count")
    ap.add_argument(
        "--on-target", choices=("finish", "restart"), default="finish", help="restart: lifelong"
    )
    args = ap.parse_args()
    print(
        "| agents | envs | marl steps/s | compile s | pogema steps/s | marl/pogema "
        "| observation-write bound |"
    )
    print("|---|---|---|---|---|---|---|")
    for agents in args.agents:
        peer_steps = max(5, int(args.budget / agents))
        peer = pogema_rate(args.pogema, agents, 1, peer_steps, args.size, args.on_target)
        for envs in args.envs:
            ours, compile_s = marl_rate(agents, envs, 64, args.size, args.on_target)
            bound = floor_rate(agents, envs, 64, 3 * 11**2)
            print(
                f"| {agents:,} | {envs:,} | {ours:,.0f} | {compile_s:.1f} | {peer:,.1f} | "
                f"{ours / peer:,.1f} | {bound / peer:,.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
