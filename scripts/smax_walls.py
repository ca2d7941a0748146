"""Do SMAX's walls decide battles? Plays greedy battles of saved jaxmarl/smax runs and counts
those in which a living unit touches a wall (SMAX kills such units; combat/* clip positions
into the map instead). Not a test; a reading of saved runs.

    python scripts/smax_walls.py results/runs/jaxmarl/smax/qmix/issue6-smax --episodes 500
"""

from __future__ import annotations

import argparse
from typing import Any

from marl.learning.xla import configure_xla

configure_xla()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from marl.learning.evaluation import evaluate  # noqa: E402
from marl.run import saved  # noqa: E402


def wall_gaps(run: saved.SavedRun, episodes: int, key: jax.Array) -> dict[str, np.ndarray]:
    """Greedy battles of every seed of `run` (the same battles for each, one compiled program):
    won [S, E] and each battle's nearest approach of a living unit to a wall [S, E] (0 or
    less: a unit touched one)."""
    env = run.env
    size = jnp.array(env.map_size, jnp.float32)

    def record(state: Any, actions: jax.Array) -> dict[str, jax.Array]:
        world = state.inner.state
        gap = jnp.min(jnp.minimum(world.unit_positions, size - world.unit_positions), axis=-1)
        return dict(gap=jnp.where(world.unit_alive, gap, jnp.inf))

    def play(params: Any) -> dict[str, Any]:
        return evaluate(env, run.train.policy, params, key, episodes, trace=record)

    out = jax.tree.map(np.asarray, jax.jit(jax.vmap(play))(run.params))
    running = np.arange(env.spec.episode_limit)[None, None] < out["length"][..., None]
    gap = np.where(running[..., None], out["trace"]["gap"], np.inf).min(axis=(2, 3))
    return dict(won=out["won"], gap=gap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--which", default="final", choices=sorted(saved.PARAMS))
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--key", type=int, default=7, help="PRNG seed of the battles")
    args = parser.parse_args()
    for run_dir in args.run_dirs:
        run = saved.load(run_dir, args.which)
        if run.run.env_id != "jaxmarl/smax":
            raise SystemExit(f"{run_dir} is a {run.run.env_id} run, not jaxmarl/smax")
        got = wall_gaps(run, args.episodes, jax.random.key(args.key))
        for seed, (won, gap) in enumerate(zip(got["won"], got["gap"], strict=True)):
            print(
                f"{run.run.algo} seed {seed}: won {won.mean():.1%}; battles with a living "
                f"unit on a wall {(gap <= 0).sum()} / {args.episodes}; nearest approach "
                f"{gap.min():.2f}"
            )


if __name__ == "__main__":
    main()
