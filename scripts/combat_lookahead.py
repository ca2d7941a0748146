"""How winnable is a combat map? One-step rollout planning over a trained policy (a probe, not a
learner, not a test).

    python scripts/combat_lookahead.py results/runs/combat/3m/mappo/<run> --seed 0 --battles 200

Each step of a battle the planner takes the trained (base) policy's greedy joint action, every
joint action that differs from it in one agent, and "all agents attack enemy k" for each k; it
plays each candidate `--rollouts` times in the simulator (the same random draws for every
candidate), each followed by `--horizon` greedy steps of the base policy, and acts on the best
mean score (won + 0.05 x return). This is policy improvement by rollouts (Bertsekas): with enough
rollouts it does at least as well as the base policy, so its win rate bounds from below what the
map allows. The planner reads the whole state and simulates the heuristic enemy, so no
decentralised policy can copy it; `--plan-within D` keeps the base policy's actions until an
ally and an enemy are closer than D (the sight range, 9 for marines: planning only from what
the agents can first see). Base and planner play the same starts; the script prints both win
rates and how often the planner left the base action, by step.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any, NamedTuple

from marl.learning.xla import configure_xla

configure_xla()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from marl.core.env import MultiAgentEnv  # noqa: E402
from marl.core.learner import Policy  # noqa: E402
from marl.envs.combat.units import FIRST_ATTACK, pairwise_offsets  # noqa: E402


class Planner(NamedTuple):
    """Jitted pieces: plan(key, state, ts, carry) -> (joint action, candidate index (0: the
    base action), new carry); base(key, ts, carry) -> (joint action, new carry); the env's
    step and reset. `plan` None: the base policy alone."""

    plan: Any
    base: Any
    step: Any
    reset: Any


def make_planner(
    env: MultiAgentEnv, policy: Policy, params: Any, rollouts: int, horizon: int
) -> Planner:
    """The rollout planner over `policy` with `params` on a combat env (discrete actions)."""
    n, a = env.spec.num_agents, env.spec.action_dim
    start = jnp.array(False)

    def act(ts: Any, carry: Any, key: jax.Array) -> tuple[jax.Array, Any]:
        return policy.act(params, ts.obs, ts.avail_actions, carry, start, key, True)

    def follow(key: jax.Array, state: Any, ts: Any, carry: Any) -> tuple[jax.Array, jax.Array]:
        """`horizon` greedy base-policy steps; (won, return) from here on."""

        def body(c: tuple, k: jax.Array) -> tuple[tuple, None]:
            state, ts, carry, done, ret, won = c
            actions, carry = act(ts, carry, k)
            state, nxt = env.step(k, state, actions)
            ret = ret + jnp.where(done, 0.0, nxt.reward[0])
            won = jnp.where(done, won, nxt.metrics["won"])
            done = done | nxt.terminated | nxt.truncated
            return (state, nxt, carry, done, ret, won), None

        done = ts.terminated | ts.truncated
        c0 = (state, ts, carry, done, jnp.zeros(()), ts.metrics["won"])
        (*_, ret, won), _ = jax.lax.scan(body, c0, jax.random.split(key, horizon))
        return won, ret

    def candidates(base: jax.Array) -> jax.Array:
        """[1 + n a + (a - FIRST_ATTACK), n]: base, one-agent deviations, all attack k."""
        dev = jnp.broadcast_to(base, (n, a, n))
        rows, cols = jnp.arange(n)[:, None], jnp.arange(a)[None, :]
        dev = dev.at[rows, cols, rows].set(jnp.broadcast_to(cols, (n, a)))
        focus = jnp.broadcast_to(jnp.arange(FIRST_ATTACK, a)[:, None], (a - FIRST_ATTACK, n))
        return jnp.concatenate([base[None], dev.reshape(n * a, n), focus]).astype(jnp.int32)

    @jax.jit
    def plan(key: jax.Array, state: Any, ts: Any, carry: Any) -> tuple[jax.Array, ...]:
        k_act, k_roll = jax.random.split(key)
        base, new_carry = act(ts, carry, k_act)
        options = candidates(base)

        def score(joint: jax.Array, k: jax.Array) -> jax.Array:
            k1, k2 = jax.random.split(k)
            s1, ts1 = env.step(k1, state, joint)
            won, ret = follow(k2, s1, ts1, new_carry)
            return won + 0.05 * (ret + ts1.reward[0])

        keys = jax.random.split(k_roll, rollouts)  # common random numbers across candidates
        scores = jax.vmap(lambda j: jax.vmap(lambda k: score(j, k))(keys).mean())(options)
        best = jnp.argmax(scores)
        return options[best], best, new_carry

    @jax.jit
    def base_action(key: jax.Array, ts: Any, carry: Any) -> tuple[jax.Array, Any]:
        return act(ts, carry, key)

    return Planner(plan, base_action, jax.jit(env.step), jax.jit(env.reset))


def closest_gap(env: MultiAgentEnv, state: Any) -> float:
    """Smallest distance between a living agent and a living enemy."""
    n, alive = env.spec.num_agents, state.health > 0
    _, _, gap = pairwise_offsets(state.pos[:n], state.pos[n:])
    return float(jnp.where(alive[:n, None] & alive[n:][None], gap, jnp.inf).min())


def play_battle(
    env: MultiAgentEnv,
    policy: Policy,
    planner: Planner,
    key: jax.Array,
    plan_within: float = float("inf"),
) -> tuple[float, list[int]]:
    """One battle from `reset(key)`, the planner acting (the base policy alone if
    `planner.plan` is None). Returns (won, the steps at which the planner left the base action)."""
    plan, base_action, step, reset = planner
    state, ts = reset(key)
    carry, k, deviated = policy.initial_carry(), jax.random.fold_in(key, 1), []
    for t in range(env.spec.episode_limit):
        k, k_act, k_step = jax.random.split(k, 3)
        if plan is not None and closest_gap(env, state) < plan_within:
            actions, index, carry = plan(k_act, state, ts, carry)
            if int(index) != 0:
                deviated.append(t)
        else:
            actions, carry = base_action(k_act, ts, carry)
        state, ts = step(k_step, state, actions)
        if bool(ts.terminated | ts.truncated):
            break
    return float(ts.metrics["won"]), deviated


def main() -> None:
    from marl.run import saved

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--seed", type=int, default=0, help="seed index in the run")
    parser.add_argument("--which", default="best", choices=sorted(saved.PARAMS))
    parser.add_argument("--battles", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=48)
    parser.add_argument("--horizon", type=int, default=20)
    parser.add_argument("--plan-within", type=float, default=float("inf"))
    parser.add_argument("--key", type=int, default=1234, help="PRNG seed of the battles")
    args = parser.parse_args()
    run = saved.load(args.run_dir, args.which)
    env, policy = run.env, run.train.policy
    planner = make_planner(env, policy, run.seed_params(args.seed), args.rollouts, args.horizon)
    won: dict[str, list[float]] = {"base": [], "planner": []}
    deviations: Counter[int] = Counter()
    key, t0 = jax.random.key(args.key), time.time()
    print(f"{run.run.env_id} {run.run.algo} seed {args.seed} ({args.which} parameters)")
    for b in range(args.battles):
        key, k_battle = jax.random.split(key)
        won["base"].append(play_battle(env, policy, planner._replace(plan=None), k_battle)[0])
        result, deviated = play_battle(env, policy, planner, k_battle, args.plan_within)
        won["planner"].append(result)
        deviations.update(deviated)
        if (b + 1) % 20 == 0 or b + 1 == args.battles:
            rates = ", ".join(f"{m} {np.mean(w):.1%}" for m, w in won.items())
            print(f"{b + 1} battles: won {rates} ({time.time() - t0:.0f} s)", flush=True)
    by_step = ", ".join(f"t={t}: {c}" for t, c in sorted(deviations.items()) if c)
    print(f"planner left the base action {sum(deviations.values())} times ({by_step})")


if __name__ == "__main__":
    main()
