"""What a trained combat policy does, step by step: for studying seeds that win and seeds that
get stuck (passive or charge-and-die). Not a test; a reading of a saved run.

    python scripts/combat_behaviour.py results/runs/combat/3m/qmix/<run> --seed 4 --which final

Plays `--episodes` greedy battles of one seed and prints the win rate, the mean battle length
and, at a few steps, the share of living allies taking each action (the four moves, stop,
attack), the fraction of battles still running and the mean positions of both teams. Then
its targeting (`targeting`): how often it attacks the weakest attackable foe, and its win rate
when every attack it chooses goes to that foe instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from marl.learning.xla import configure_xla

configure_xla()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from marl.core.env import MultiAgentEnv  # noqa: E402
from marl.core.learner import Policy  # noqa: E402
from marl.envs.combat.observation import foe_features  # noqa: E402
from marl.envs.combat.units import FIRST_ATTACK  # noqa: E402
from marl.learning.evaluation import evaluate  # noqa: E402

ACTIONS = ("north", "east", "south", "west", "stop", "attack")  # combat's layout, 5+k: attack k


def behaviour(
    env: MultiAgentEnv, policy: Policy, params: Any, key: jax.Array, episodes: int
) -> dict[str, np.ndarray]:
    """Greedy battles of `policy` on a combat env (heuristic enemies).

    Returns numpy arrays: won [E] and length [E] per battle; running [T] the fraction of battles
    not over before step t; actions [T, 6] the share of living allies in running battles taking
    each of ACTIONS at step t (NaN once every battle is over); ally_pos [T, 2] and enemy_pos
    [T, 2] the mean position of each team's living units in running battles.
    """
    n, limit = env.spec.num_agents, env.spec.episode_limit

    def record(state: Any, actions: jax.Array) -> dict[str, jax.Array]:
        alive = state.health > 0
        return dict(actions=jnp.minimum(actions, len(ACTIONS) - 1), alive=alive, pos=state.pos)

    played = jax.jit(lambda k: evaluate(env, policy, params, k, episodes, trace=record))(key)
    played = jax.tree.map(np.asarray, played)
    seen = played["trace"]
    running = np.arange(limit)[None] < played["length"][:, None]  # [E, T]
    acting = seen["alive"][..., :n] & running[..., None]  # [E, T, N]
    counts = np.stack([(seen["actions"] == a) & acting for a in range(len(ACTIONS))], -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = counts.sum((0, 2)) / acting.sum((0, 2))[:, None]

        def team_mean(units: slice) -> np.ndarray:
            live = seen["alive"][..., units] & running[..., None]
            pos = seen["pos"][..., units, :] * live[..., None]
            return pos.sum((0, 2)) / live.sum((0, 2))[:, None]

        ally_pos, enemy_pos = team_mean(slice(0, n)), team_mean(slice(n, None))
    return dict(
        won=played["won"],
        length=played["length"],
        running=running.mean(0),
        actions=share,
        ally_pos=ally_pos,
        enemy_pos=enemy_pos,
    )


def lowest_health_target(env: MultiAgentEnv, obs: jax.Array, avail: jax.Array) -> jax.Array:
    """[N] int32 the attack action on each agent's attackable foe with the least health
    fraction (ties: the closest), from its own observation (meaningless if none is)."""
    mates, foes = env.slots("allies")
    seen = foe_features(obs, mates, foes)
    score = seen[..., 4] + 1e-3 * seen[..., 3]  # health fraction, then distance / sight
    attackable = avail[..., FIRST_ATTACK : FIRST_ATTACK + foes]
    return FIRST_ATTACK + jnp.argmin(jnp.where(attackable, score, jnp.inf), axis=-1)


def targeting(
    env: MultiAgentEnv, policy: Policy, params: Any, key: jax.Array, episodes: int
) -> dict[str, float]:
    """How a combat policy (acting on observations) picks its targets, in greedy battles.

    Returns `focus`: the share of its attacks on the attackable foe with the least health, over
    the `attacks` it made with two or more foes attackable at different health; `won`: its win
    rate; `won_lowest`: the win rate of the same policy, same battles, with each attack it
    chooses redirected to `lowest_health_target` (moves, stops and its carry untouched).
    """
    if policy.privileged:
        raise ValueError("targeting reads a policy acting on observations, not on the state")
    mates, foes = env.slots("allies")

    def record(state: Any, actions: jax.Array) -> dict[str, jax.Array]:
        ts = env.observe(state)
        attackable = ts.avail_actions[:, FIRST_ATTACK : FIRST_ATTACK + foes]
        health = jnp.where(attackable, foe_features(ts.obs, mates, foes)[..., 4], jnp.inf)
        ordered = jnp.sort(health, axis=-1)
        low, second = ordered[:, 0], ordered[:, 1]
        counted = (actions >= FIRST_ATTACK) & (second < jnp.inf) & (second > low + 1e-6)
        lowest = lowest_health_target(env, ts.obs, ts.avail_actions)
        return dict(counted=counted, on_lowest=counted & (actions == lowest))

    def redirected(p, obs, avail, carry, start, k, greedy, **extra):
        actions, carry = policy.act(p, obs, avail, carry, start, k, greedy, **extra)
        lowest = lowest_health_target(env, obs, avail)
        return jnp.where(actions >= FIRST_ATTACK, lowest, actions), carry

    played = jax.jit(lambda k: evaluate(env, policy, params, k, episodes, trace=record))(key)
    played = jax.tree.map(np.asarray, played)
    running = (np.arange(env.spec.episode_limit)[None] < played["length"][:, None])[..., None]
    counted = int((played["trace"]["counted"] & running).sum())
    on_lowest = int((played["trace"]["on_lowest"] & running).sum())
    override = policy._replace(act=redirected)
    won_lowest = jax.jit(lambda k: evaluate(env, override, params, k, episodes)["won"])(key)
    return dict(
        focus=on_lowest / max(counted, 1),
        attacks=counted,
        won=float(played["won"].mean()),
        won_lowest=float(np.mean(won_lowest)),
    )


def table(result: dict[str, np.ndarray], steps: list[int]) -> str:
    """The per-step reading of `behaviour` as text, at the given steps while battles run."""
    lines = [
        f"won {result['won'].mean():.1%} of {result['won'].size} battles, "
        f"mean length {result['length'].mean():.1f} steps",
        f"{'t':>3} {'running':>7}  " + " ".join(f"{a:>6}" for a in ACTIONS) + "   allies (x, y)"
        "   enemies (x, y)",
    ]
    for t in steps:
        if t >= result["running"].size or result["running"][t] == 0:
            break
        (ax, ay), (ex, ey) = result["ally_pos"][t], result["enemy_pos"][t]
        lines.append(
            f"{t:>3} {result['running'][t]:>7.2f}  "
            + " ".join(f"{s:>6.2f}" for s in result["actions"][t])
            + f"   ({ax:5.1f}, {ay:5.1f})   ({ex:5.1f}, {ey:5.1f})"
        )
    return "\n".join(lines)


def main() -> None:
    from marl.run import saved

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--seed", type=int, default=0, help="seed index in the run")
    parser.add_argument("--which", default="best", choices=sorted(saved.PARAMS))
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--key", type=int, default=7, help="PRNG seed of the battles")
    args = parser.parse_args()
    run = saved.load(args.run_dir, args.which)
    played = (run.env, run.train.policy, run.seed_params(args.seed), jax.random.key(args.key))
    result = behaviour(*played, args.episodes)
    print(f"{run.run.env_id} {run.run.algo} seed {args.seed} ({args.which} parameters)")
    print(table(result, [0, 2, 4, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 59]))
    aim = targeting(*played, args.episodes)
    print(
        f"targeting: {aim['focus']:.1%} of {aim['attacks']} attacks with a choice of foes at "
        f"different health go to the weakest; every attack redirected to the weakest (ties: "
        f"the closest) wins {aim['won_lowest']:.1%} (as it plays: {aim['won']:.1%})"
    )


if __name__ == "__main__":
    main()
