"""`check_env`: how a user who adds an environment learns that it keeps the contract.

It checks jit and vmap of reset/step, shapes and dtypes against the spec, zero padding,
observations inside their space, no NaN/inf, determinism for a fixed key, that available-action
masks are sane and respected, that a state declared bounded stays bounded, that step does not
retrace, and that episodes are truncated at exactly `spec.episode_limit` steps unless they
terminate first.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import STATE_BOUND, EnvSpec, MultiAgentEnv, TimeStep
from marl.core.spaces import Box, Discrete, sample_actions

# The code generation every rollout fingerprint compiles with (CPU; other backends ignore it):
# LLVM at level 0 (the test suite's) and XLA's fusion emitters (its default), fixed per program
# so that a fingerprint reads the same under any XLA_FLAGS.
FINGERPRINT_CODEGEN = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": True}


class EnvCheckError(AssertionError):
    """An environment broke the contract; the message says where."""


def _fail(env: MultiAgentEnv, msg: str) -> None:
    raise EnvCheckError(f"{env.spec.name}: {msg}")


def _check(env: MultiAgentEnv, cond: Any, msg: str) -> None:
    if not bool(cond):
        _fail(env, msg)


def check_spec(env: MultiAgentEnv) -> None:
    """The spec is complete and self-consistent."""
    spec = getattr(env, "spec", None)
    if not isinstance(spec, EnvSpec):
        raise EnvCheckError(f"{type(env).__name__}: `spec` must be an EnvSpec, got {spec!r}")
    _check(env, isinstance(spec.action_space, (Discrete, Box)), "action_space must be Discrete/Box")
    _check(env, spec.obs_dim > 0 and spec.state_dim > 0, "obs_dim and state_dim must be > 0")
    _check(env, all(0 < k <= spec.action_dim for k in spec.action_sizes), "bad action_sizes")
    _check(env, all(0 < k <= spec.obs_dim for k in spec.obs_sizes), "bad obs_sizes")


def check_timestep(env: MultiAgentEnv, ts: TimeStep, batch: tuple[int, ...] = ()) -> None:
    """Shapes, dtypes, padding, finiteness and mask sanity of one (possibly batched) TimeStep."""
    spec = env.spec
    n = spec.num_agents
    a = spec.action_dim
    expected = {
        "obs": ((*batch, n, spec.obs_dim), jnp.float32),
        "state": ((*batch, spec.state_dim), jnp.float32),
        "avail_actions": ((*batch, n, a), jnp.bool_),
        "reward": ((*batch, n), jnp.float32),
        "terminated": (batch, jnp.bool_),
        "truncated": (batch, jnp.bool_),
        "alive": ((*batch, n), jnp.bool_),
    }
    for name, (shape, dtype) in expected.items():
        x = getattr(ts, name)
        _check(env, x.shape == shape, f"TimeStep.{name} has shape {x.shape}, expected {shape}")
        _check(env, x.dtype == dtype, f"TimeStep.{name} has dtype {x.dtype}, expected {dtype}")
    _check(
        env,
        set(ts.metrics) == set(spec.metric_names),
        f"metrics {sorted(ts.metrics)} differ from spec.metric_names {sorted(spec.metric_names)}",
    )
    for k, v in ts.metrics.items():
        _check(env, v.shape == batch, f"metric {k!r} has shape {v.shape}, expected {batch}")
        _check(env, jnp.issubdtype(v.dtype, jnp.floating), f"metric {k!r} must be float")
        _check(env, np.all(np.isfinite(np.asarray(v))), f"metric {k!r} is not finite")
    for name in ("obs", "state", "reward"):
        _check(env, np.all(np.isfinite(np.asarray(getattr(ts, name)))), f"{name} has NaN/inf")
    if spec.state_bounded:
        worst = float(np.max(np.abs(np.asarray(ts.state)), initial=0.0))
        _check(
            env,
            worst <= STATE_BOUND,
            f"spec.state_bounded, but a state feature reaches {worst:.3g} (> {STATE_BOUND})",
        )
    obs = np.asarray(ts.obs)
    for i, size in enumerate(spec.obs_sizes):
        zero = np.all(obs[..., i, size:] == 0)
        _check(env, zero, f"agent {i}: obs padding past {size} is not zero")
    avail = np.asarray(ts.avail_actions)
    for i, size in enumerate(spec.action_sizes):
        masked = not np.any(avail[..., i, size:])
        _check(env, masked, f"agent {i}: padded actions marked available")
    _check(env, np.all(avail.any(axis=-1)), "an agent has no available action")
    _check(
        env,
        not np.any(np.asarray(ts.terminated) & np.asarray(ts.truncated)),
        "terminated and truncated are both set",
    )


def _where(e: AssertionError) -> str:
    """The first line of chex's message, which names the differing leaf."""
    return str(e).split("failed:", 1)[-1].strip().splitlines()[0].rstrip(": ")


def _assert_trees_equal(env: MultiAgentEnv, a: Any, b: Any, what: str) -> None:
    """Equal structure and values, bit for bit (PRNG keys by their data, NaN equal to NaN)."""
    try:
        chex.assert_trees_all_equal(a, b)
    except AssertionError as e:
        _fail(env, f"{what}: not deterministic ({_where(e)})")


def _assert_trees_close(env: MultiAgentEnv, one: Any, batched: Any, what: str) -> None:
    try:
        chex.assert_trees_all_close(one, batched, rtol=1e-5, atol=1e-5)
    except AssertionError as e:
        _fail(env, f"{what} differs from the unbatched call ({_where(e)})")


def _wild_actions(key: jax.Array, spec: Any, avail: jax.Array) -> jax.Array:
    """Actions of the right shape that defy the mask: an unavailable index of a Discrete space
    for every agent that has one (any index otherwise), values around 3x past a Box's bounds."""
    space = spec.action_space
    if isinstance(space, Discrete):
        unavailable = ~avail
        pick = jnp.where(jnp.any(unavailable, axis=-1, keepdims=True), unavailable, True)
        return jax.random.categorical(key, jnp.where(pick, 0.0, -jnp.inf), axis=-1)
    low, high = jnp.broadcast_to(space.low, space.shape), jnp.broadcast_to(space.high, space.shape)
    bounded = jnp.isfinite(low) & jnp.isfinite(high)
    mid = jnp.where(bounded, (low + high) / 2, 0.0)
    half = jnp.where(bounded, (high - low) / 2, 1.0)
    noise = jax.random.normal(key, (spec.num_agents, *space.shape))
    return (mid + 3.0 * half * noise).astype(space.dtype)


def check_env(
    env: MultiAgentEnv, key: jax.Array | None = None, num_episodes: int = 2, batch: int = 4
) -> dict[str, int]:
    """Check that `env` keeps the marl environment contract; raise EnvCheckError if not.

    Args:
        env: the environment (bare, not auto-reset wrapped).
        key: PRNG key (default `jax.random.key(0)`).
        num_episodes: episodes played with random valid actions.
        batch: number of environments in the vmap checks.

    Returns:
        Counts of what was checked: {"steps": ..., "episodes": ..., "traces": ...}.
    """
    check_spec(env)
    spec = env.spec
    key = jax.random.key(0) if key is None else key
    traces = {"reset": 0, "step": 0}

    def reset(k: jax.Array) -> tuple[Any, TimeStep]:
        traces["reset"] += 1
        return env.reset(k)

    def step(k: jax.Array, s: Any, a: jax.Array) -> tuple[Any, TimeStep]:
        traces["step"] += 1
        return env.step(k, s, a)

    reset_j, step_j = jax.jit(reset), jax.jit(step)

    @jax.jit  # the episode loop's keys and actions, in one small program
    def random_actions(k: jax.Array, avail: jax.Array) -> tuple[jax.Array, ...]:
        k, k_a, k_s = jax.random.split(k, 3)
        return k, k_s, sample_actions(k_a, spec.action_space, avail)

    @jax.jit  # a batch: reset, random actions, step, vmapped in one program
    def batch_check(k: jax.Array) -> tuple[Any, ...]:
        keys = jax.random.split(k, batch)
        sb, tsb = jax.vmap(env.reset)(keys)
        ab = jax.vmap(lambda k, av: sample_actions(k, spec.action_space, av))(
            keys, tsb.avail_actions
        )
        return keys[1], tsb, ab, jax.vmap(env.step)(keys, sb, ab)[1]

    # determinism and shapes of reset
    k_reset, k_act, k_step, k_batch, k_eps = jax.jit(lambda k: tuple(jax.random.split(k, 5)))(key)
    s0, ts0 = reset_j(k_reset)
    s0b, ts0b = reset_j(k_reset)
    _assert_trees_equal(env, (s0, ts0), (s0b, ts0b), "reset")
    check_timestep(env, ts0)
    _check(env, np.all(np.asarray(ts0.reward) == 0), "reset reward must be 0")
    _check(env, not bool(ts0.terminated) and not bool(ts0.truncated), "reset TimeStep is done")
    _check(env, int(s0.t) == 0, "reset state must have t == 0")

    # mean-field neighbourhood: [N, N] non-negative weights, nobody its own neighbour
    nbhd = np.asarray(jax.jit(env.neighbourhood)(s0))
    n = spec.num_agents
    _check(env, nbhd.shape == (n, n), f"neighbourhood shape {nbhd.shape}, expected {(n, n)}")
    _check(env, bool(np.all(np.isfinite(nbhd)) and np.all(nbhd >= 0)), "neighbourhood weights")
    _check(env, bool(np.all(np.diag(nbhd) == 0)), "an agent is its own neighbour")

    # determinism of step
    a0, wild = jax.jit(
        lambda k, av: (sample_actions(k, spec.action_space, av), _wild_actions(k, spec, av))
    )(k_act, ts0.avail_actions)
    out1, out2 = step_j(k_step, s0, a0), step_j(k_step, s0, a0)
    _assert_trees_equal(env, out1, out2, "step")
    check_timestep(env, out1[1])
    # any action of the space keeps the contract: the mask ignored (an exploring or buggy policy)
    # and continuous values past the bounds (a Gaussian policy's raw sample) are handled
    check_timestep(env, step_j(k_step, s0, wild)[1])
    # a stepped state steps again with the same program (no retracing on what step returns)
    step_j(k_step, out1[0], a0)

    # whole episodes: truncation at exactly the episode limit unless terminated
    steps = 0
    fold_in = jax.jit(jax.random.fold_in)
    for ep in range(num_episodes):
        k_ep = fold_in(k_eps, ep)
        s, ts = reset_j(k_ep)
        for t in range(1, spec.episode_limit + 1):
            k_ep, k_s, a = random_actions(k_ep, ts.avail_actions)
            s, ts = step_j(k_s, s, a)
            steps += 1
            check_timestep(env, ts)
            _check(env, int(s.t) == t, f"state.t is {int(s.t)} after {t} steps")
            r = np.asarray(ts.reward)
            if spec.shared_reward:
                _check(env, bool(np.all(r == r[0])), f"shared_reward, but step {t} pays {r}")
            for name in spec.team_rewards:
                side = r[list(spec.group(name).agents)]
                ok = bool(np.all(side == side[0]))
                _check(env, ok, f"team reward of {name}, but step {t} pays it {side}")
            done = bool(ts.terminated) or bool(ts.truncated)
            if t < spec.episode_limit:
                _check(env, not bool(ts.truncated), f"truncated at step {t} < limit")
            else:
                _check(env, done, f"episode not over at the limit {spec.episode_limit}")
                _check(
                    env, bool(ts.truncated) != bool(ts.terminated), "limit: exactly one end flag"
                )
                _check(
                    env,
                    bool(ts.terminated) or not spec.time_limit_terminal,
                    "time_limit_terminal, but the limit truncated",
                )
            if done:
                break
    _check(env, traces["step"] == 1, f"step traced {traces['step']} times (retracing)")
    _check(env, traces["reset"] == 1, f"reset traced {traces['reset']} times (retracing)")

    # vmap over a batch agrees with the single-env result (element 1 against the programs above)
    key_1, tsb, ab, tsb2 = batch_check(k_batch)
    check_timestep(env, tsb, (batch,))
    check_timestep(env, tsb2, (batch,))
    s_one, ts_one = reset_j(key_1)
    second = lambda tree: jax.tree.map(lambda x: np.asarray(x)[1], tree)  # noqa: E731
    _assert_trees_close(env, ts_one, second(tsb), "vmap(reset)")
    _, ts_one = step_j(key_1, s_one, np.asarray(ab)[1])
    _assert_trees_close(env, ts_one, second(tsb2), "vmap(step)")
    return {"steps": steps, "episodes": num_episodes, "traces": traces["step"]}


def rollout_fingerprint(env: MultiAgentEnv, steps: int = 100, seed: int = 0) -> dict[str, list]:
    """A fingerprint of what `env` returns: `steps` steps of uniformly random valid actions
    from `jax.random.key(seed)`, episodes reset as they end; for every returned field
    (observations, state, available actions, rewards, ends, alive, each metric) and step, two
    checksums: the sum of its values and their sum weighted by a fixed pattern (which a
    permutation changes). Compared within a tolerance (`fingerprint_difference`), so a change
    of reduction order alone keeps it; a golden fingerprint per env family pins its
    `BEHAVIOUR_VERSION` (tests/test_env_versions.py). Compiled with `FINGERPRINT_CODEGEN`
    whatever XLA_FLAGS say: an event on a threshold (a collision, a death) can flip between
    code generators, and a fingerprint must not depend on the caller's flags."""
    from marl.core.wrappers import AutoReset

    wrapped = AutoReset(env)
    spec = env.spec

    def sums(x: jax.Array) -> jax.Array:
        x = jnp.ravel(x).astype(jnp.float32)
        w = jnp.sin(jnp.arange(x.size, dtype=jnp.float32) * 0.7) + 1.5
        return jnp.stack([jnp.sum(x), jnp.sum(x * w)])

    def fields(ts: TimeStep) -> dict[str, jax.Array]:
        out = {
            "obs": ts.obs,
            "state": ts.state,
            "avail_actions": ts.avail_actions,
            "reward": ts.reward,
            "terminated": ts.terminated,
            "truncated": ts.truncated,
            "alive": ts.alive,
        }
        out.update({f"metrics.{k}": v for k, v in ts.metrics.items()})
        return {k: sums(v) for k, v in out.items()}

    def body(carry: tuple[Any, TimeStep], key: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
        state, ts = carry
        k_act, k_step = jax.random.split(key)
        actions = sample_actions(k_act, spec.action_space, ts.avail_actions)
        state, ts = wrapped.step(k_step, state, actions)
        return (state, ts), fields(ts)

    @partial(jax.jit, compiler_options=FINGERPRINT_CODEGEN)
    def run(key: jax.Array) -> dict[str, jax.Array]:
        k_reset, k_steps = jax.random.split(key)
        first = wrapped.reset(k_reset)
        _, out = jax.lax.scan(body, first, jax.random.split(k_steps, steps))
        start = fields(first[1])
        return {k: jnp.concatenate([start[k][None], v]) for k, v in out.items()}

    return {
        k: np.asarray(v, np.float64).round(6).tolist() for k, v in run(jax.random.key(seed)).items()
    }


def fingerprint_difference(
    golden: dict[str, list], now: dict[str, list], rtol: float = 1e-4, atol: float = 1e-4
) -> str | None:
    """The first place two `rollout_fingerprint`s differ beyond the tolerance, in words; None
    where they agree."""
    if sorted(golden) != sorted(now):
        return f"fields {sorted(golden)} became {sorted(now)}"
    for key in sorted(golden):
        a, b = np.asarray(golden[key]), np.asarray(now[key])
        if a.shape != b.shape:
            return f"{key}: shape {a.shape} became {b.shape}"
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol)
        if bad.any():
            t = int(np.argwhere(bad)[0][0])
            return f"{key} at step {t}: checksums {a[t].tolist()} became {b[t].tolist()}"
    return None
