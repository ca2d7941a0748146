"""Cost of one value-based learner update (64 env steps + one gradient step) against how the
sampled episodes are unrolled: one episode per row (`pack_episodes 1`) or several laid end to
end, and the unroll buckets. Not a test; a measurement for choosing defaults.

    python scripts/qlearner_update_cost.py --env combat/3m --algo qmix --seeds 2 \
        --lengths 12:30 --timeouts 0.03 --packs 1,2,4 --buckets 4,8

The replay buffer is filled with synthetic episodes whose lengths are drawn uniformly from
`--lengths lo:hi`, a fraction `--timeouts` of them lasting the whole episode limit (the mix a
learner's buffer holds late in training: short battles, the odd timeout). Every combination is
timed on the same buffer, with the seeds vmapped as in `marl train`.
"""

from __future__ import annotations

import argparse
import time

from marl.learning.xla import configure_xla

configure_xla()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import marl  # noqa: E402
from marl.core.learner import SEED_AXIS  # noqa: E402
from marl.learning.training import init_seeds  # noqa: E402
from marl.run import config  # noqa: E402


def synthetic_buffer(buffer, lengths: np.ndarray, key):
    """The buffer filled to capacity with random episodes of the given lengths."""
    data = buffer.data
    c, t = data.filled.shape
    filled = jnp.arange(t)[None] < jnp.asarray(lengths)[:, None]
    rows = jnp.arange(t + 1)[None] <= jnp.asarray(lengths)[:, None]
    k_obs, k_state, k_act, k_rew = jax.random.split(key, 4)

    def fill(x, k, mask):
        noise = jax.random.normal(k, x.shape, jnp.float32)
        return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 2)), noise, 0.0)

    data = data.replace(
        obs=fill(data.obs, k_obs, rows),
        state=fill(data.state, k_state, rows),
        avail=jnp.ones_like(data.avail),
        actions=jnp.where(
            filled[..., None],
            jax.random.randint(k_act, data.actions.shape, 0, data.avail.shape[-1]),
            0,
        ),
        rewards=fill(data.rewards, k_rew, filled),
        terminated=filled & (jnp.arange(t)[None] == jnp.asarray(lengths)[:, None] - 1),
        filled=filled,
    )
    return buffer.replace(data=data, size=jnp.asarray(c, jnp.int32), pos=jnp.zeros((), jnp.int32))


def time_updates(env_id, algo, overrides, seeds, lengths, repeats):
    run = config.resolve(config.compose([f"env={env_id}", f"algo={algo}", *overrides]))
    _, train = config.build(run)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    state = init_seeds(train, keys)
    buffers = jax.vmap(lambda b, k: synthetic_buffer(b, lengths, k))(
        state.buffer, jax.random.split(jax.random.PRNGKey(1), seeds)
    )
    state = state.replace(buffer=buffers)
    # donated, as in `marl train`: without it every update copies the whole replay buffer
    step = jax.jit(jax.vmap(train.step, axis_name=SEED_AXIS), donate_argnums=0)
    t0 = time.perf_counter()
    state, m = step(state)
    jax.block_until_ready(m)
    compile_s = time.perf_counter() - t0
    unrolls = []
    t0 = time.perf_counter()
    for _ in range(repeats):
        state, m = step(state)
        unrolls.append(m["unroll_steps"][0])  # no host sync inside the timed loop
    jax.block_until_ready(m)
    per_update = (time.perf_counter() - t0) / repeats
    unroll = float(np.mean(jax.device_get(unrolls)))
    return compile_s, per_update, unroll, train.steps_per_update, run.algo_cfg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="combat/3m")
    p.add_argument("--algo", default="qmix")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--lengths", default="12:30", help="lo:hi, uniform episode lengths")
    p.add_argument("--timeouts", type=float, default=0.03, help="fraction at the limit")
    p.add_argument("--packs", default="1,2,4")
    p.add_argument("--buckets", default="4")
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--buffer-size", type=int, default=1000)
    args = p.parse_args()

    env = marl.make(args.env)
    limit = env.spec.episode_limit
    lo, hi = (int(x) for x in args.lengths.split(":"))
    rng = np.random.default_rng(0)
    lengths = rng.integers(lo, hi + 1, args.buffer_size)
    lengths[rng.random(args.buffer_size) < args.timeouts] = limit
    lengths = np.minimum(lengths, limit)
    print(
        f"{args.env} {args.algo}, {args.seeds} seeds; episode lengths {lo}-{hi}, "
        f"{args.timeouts:.0%} at the limit {limit} (mean {lengths.mean():.1f})"
    )
    print(
        "| pack | buckets | unroll steps | rows x steps | ms / update | env steps/s | compile s |"
    )
    print("|---|---|---|---|---|---|---|")
    base = None
    for pack in (int(x) for x in args.packs.split(",")):
        for buckets in (int(x) for x in args.buckets.split(",")):
            overrides = [
                f"algo.pack_episodes={pack}",
                f"algo.unroll_buckets={buckets}",
                f"algo.buffer_size={args.buffer_size}",
            ]
            c, per, unroll, spu, cfg = time_updates(
                args.env, args.algo, overrides, args.seeds, lengths, args.repeats
            )
            rows = cfg["batch_size"] // pack
            rate = args.seeds * spu / per
            base = base or rate
            print(
                f"| {pack} | {buckets} | {unroll:.0f} | {rows} x {unroll:.0f} | "
                f"{per * 1e3:.1f} | {rate:,.0f} ({rate / base:.2f}x) | {c:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
