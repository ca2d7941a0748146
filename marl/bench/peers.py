"""The peers measured beside marl's envs (`marl bench ENV --vs jaxmarl|camar`): the same task
built in JaxMARL or CAMAR, timed by the method of `marl.bench.envs`, and the side-by-side
table of `marl bench ENV`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.bench.envs import (
    bench_env,
    burn_in_calls,
    measure_program,
    random_valid_actions,
    throughput_record,
)
from marl.core.env import MultiAgentEnv
from marl.core.registry import env_kwargs as env_kwargs_of
from marl.core.registry import make
from marl.core.spaces import Discrete
from marl.interop.jaxmarl import JAXMARL_NAMES, import_jaxmarl

JAXMARL_SMAX_MAPS = (
    "3m",
    "8m",
    "25m",
    "5m_vs_6m",
    "10m_vs_11m",
    "27m_vs_30m",
    "2s3z",
    "3s5z",
    "3s5z_vs_3s6z",
    "3s_vs_5z",
    "6h_vs_8z",
)
SMAX = "HeuristicEnemySMAX"


def jaxmarl_name(name: str) -> str:
    """JaxMARL's registry name for a marl id (JaxMARL names pass through); combat maps run on
    JaxMARL's `HeuristicEnemySMAX` with the map's scenario (`smax_map`)."""
    if "/" not in name:
        return name
    if smax_map(name) is not None:
        return SMAX
    if name not in JAXMARL_NAMES:
        known = [*sorted(JAXMARL_NAMES), *(f"combat/{m}" for m in JAXMARL_SMAX_MAPS)]
        raise KeyError(f"no JaxMARL counterpart for {name!r}; known: {', '.join(known)}")
    return JAXMARL_NAMES[name]


def smax_map(name: str) -> str | None:
    """The SMAC map name of a combat id JaxMARL's SMAX has, else None."""
    family, _, scenario = name.partition("/")
    return scenario if family == "combat" and scenario in JAXMARL_SMAX_MAPS else None


JAXMARL_KEYWORDS = {
    "num_good": "num_good_agents",
    "num_obstacles": "num_obs",
    "episode_limit": "max_steps",
}


def jaxmarl_kwargs(name: str, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Translate marl constructor keywords to those of JaxMARL's `name` (or a marl id's peer).

    Actions are discrete unless `continuous_actions=True` (JaxMARL's `action_type`, set
    explicitly since some JaxMARL MPE envs default to continuous). Other keywords are renamed by
    `JAXMARL_KEYWORDS` or passed through when JaxMARL's constructor has the same name; a keyword
    with no counterpart raises ValueError.
    """
    jaxmarl = import_jaxmarl()
    if smax_map(name) is not None:
        if env_kwargs:
            raise ValueError(f"--vs jaxmarl compares {name} at its defaults only (no --set)")
        from jaxmarl.environments.smax import map_name_to_scenario

        # the map's episode limit, and SMAX's extra observations off as in marl's default
        return {
            "scenario": map_name_to_scenario(smax_map(name)),
            "max_steps": make(name).spec.episode_limit,
            "see_enemy_actions": False,
        }
    marl_id, name = name, jaxmarl_name(name)
    accepted = set()
    for klass in type(jaxmarl.make(name)).__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            accepted |= set(inspect.signature(init).parameters) - {"self", "args", "kwargs"}
    out: dict[str, Any] = {}
    continuous = bool(env_kwargs.get("continuous_actions", False))
    if "action_type" in accepted:
        out["action_type"] = "Continuous" if continuous else "Discrete"
    elif continuous:
        raise ValueError(f"JaxMARL's {name} has no action_type keyword")
    for key, value in env_kwargs.items():
        if key == "continuous_actions":
            continue
        target = JAXMARL_KEYWORDS.get(key, key)
        if target not in accepted:
            raise ValueError(f"JaxMARL's {name} has no counterpart of the keyword {key!r}")
        out[target] = value
    # marl's scenarios that tie their landmarks to the agents (num_landmarks=None) do so too
    tied = "/" in marl_id and env_kwargs_of(marl_id).get("num_landmarks", 0) is None
    if tied and "num_agents" in env_kwargs and "num_landmarks" not in env_kwargs:
        out["num_landmarks"] = env_kwargs["num_agents"]
    return out


def bench_jaxmarl(
    name: str,
    num_envs: int = 64,
    steps: int = 1000,
    seed: int = 0,
    *,
    repeats: int = 3,
    steady: bool = True,
    **env_kwargs: Any,
) -> dict[str, Any]:
    """Throughput of JaxMARL's env `name` (or of the counterpart of a marl id), same method.

    The peer gets the harness marl gets: its `step_env` with resets computed only on the steps
    where an episode ended (JaxMARL's own `step` computes a reset every step), and one joint
    draw of random valid actions (available actions read from the env where it has them, as
    SMAX does). `env_kwargs` use marl's names (`continuous_actions`, `episode_limit`, or
    keywords the JaxMARL constructor shares); a marl id whose counterpart observes differently
    (another agent or landmark count) raises ValueError. Returns the same dict as `bench_env`.
    """
    jaxmarl = import_jaxmarl()
    jm_name = jaxmarl_name(name)
    env = jaxmarl.make(jm_name, **jaxmarl_kwargs(name, env_kwargs))
    if name.startswith("particle/"):  # MPE: the very same task on both sides
        _check_same_task(name, env_kwargs, env)
    if smax_map(name) is not None:
        jm_name = f"{SMAX}:{smax_map(name)}"
    agents = list(env.agents)
    sample = _jaxmarl_sampler(env, agents)
    v_reset = jax.vmap(env.reset)
    v_step = jax.vmap(env.step_env)

    def body(carry, _):
        obs, state, _, _, _, key = carry
        key, key_act, key_step, key_reset = jax.random.split(key, 4)
        actions = jax.vmap(sample)(jax.random.split(key_act, num_envs), state)
        obs, state, reward, dones, info = v_step(
            jax.random.split(key_step, num_envs), state, actions
        )
        done = dones["__all__"]

        def with_resets(obs_state):
            first = v_reset(jax.random.split(key_reset, num_envs))

            def pick(a, b):
                return jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b)

            return jax.tree.map(pick, first, obs_state)

        # resets computed only on steps where an episode ended, as marl's AutoReset.step_batch
        obs, state = jax.lax.cond(jnp.any(done), with_resets, lambda x: x, (obs, state))
        return (obs, state, reward, dones, info, key), None

    def run(carry):
        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    key_reset, key_run = jax.random.split(jax.random.PRNGKey(seed))
    obs, state = jax.jit(v_reset)(jax.random.split(key_reset, num_envs))
    # rewards, dones and infos start as zeros shaped like a step's, so the whole step output
    # is carried (nothing it computes is dropped as dead code, as on the marl side).
    keys = jax.random.split(key_run, num_envs)
    shapes = jax.eval_shape(v_step, keys, state, jax.vmap(sample)(keys, state))
    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes[2:])
    carry = jax.block_until_ready((obs, state, *zeros, key_run))
    burn_in = burn_in_calls(getattr(env, "max_steps", None) if steady else None, steps)
    measured = measure_program(run, carry, repeats, burn_in)
    return throughput_record(jm_name, len(agents), num_envs, steps, measured)


def _jaxmarl_sampler(env: Any, agents: list[str]) -> Callable[[jax.Array, Any], dict]:
    """`sample(key, state) -> {agent: action}`: uniformly random valid actions, one draw for
    all agents where their spaces allow (as `random_valid_actions` on marl's side)."""
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv as JaxMARLEnv

    spaces = [env.action_space(a) for a in agents]
    sizes = {getattr(sp, "n", None) for sp in spaces}
    masked = type(env).get_avail_actions is not JaxMARLEnv.get_avail_actions
    if len(sizes) == 1 and None not in sizes:
        space = Discrete(sizes.pop())

        def sample(key: jax.Array, state: Any) -> dict:
            if masked:
                avail = env.get_avail_actions(state)
                mask = jnp.stack([avail[a] for a in agents]).astype(bool)
            else:
                mask = jnp.ones((len(agents), space.n), bool)
            actions = random_valid_actions(key, space, mask)
            return {a: actions[i] for i, a in enumerate(agents)}

        return sample

    def sample_each(key: jax.Array, state: Any) -> dict:  # mixed or continuous spaces
        keys = jax.random.split(key, len(agents))
        return {a: sp.sample(k) for a, sp, k in zip(agents, spaces, keys, strict=True)}

    return sample_each


def _check_same_task(name: str, env_kwargs: dict[str, Any], peer: Any) -> None:
    """Refuse a JaxMARL counterpart that is not the same task: agent count and per-agent
    observation sizes must match marl's."""
    mine = make(name, **env_kwargs).spec
    theirs = [int(np.prod(peer.observation_space(a).shape)) for a in peer.agents]
    ours = [int(size) for size in mine.obs_sizes]
    if mine.num_agents != len(theirs) or sorted(ours) != sorted(theirs):
        raise ValueError(
            f"JaxMARL's counterpart of {name} {env_kwargs or ''} is another task: observation "
            f"sizes {sorted(theirs)} against marl's {sorted(ours)}"
        )


# --- CAMAR ----------------------------------------------------------------------------------

# marl pathfinding id -> CAMAR map generator of the same task
CAMAR_MAPS = {"pathfinding/random_grid": "random_grid"}
# marl keyword -> CAMAR random_grid keyword
CAMAR_MAP_KEYWORDS = {
    "height": "num_rows",
    "width": "num_cols",
    "density": "obstacle_density",
    "num_agents": "num_agents",
}


def camar_kwargs(name: str, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """`camar_v0` keywords for the CAMAR counterpart of a marl pathfinding id: the id's
    defaults and `env_kwargs` (map size, density, agent count, episode limit) carried over, the
    rest at CAMAR's defaults. KeyError when CAMAR has no counterpart, ValueError for a keyword
    it cannot take."""
    if name not in CAMAR_MAPS:
        raise KeyError(f"CAMAR has no counterpart of {name!r}; benchable: {', '.join(CAMAR_MAPS)}")
    from marl.envs.pathfinding import SCENARIOS

    settings = {**SCENARIOS[name.split("/")[1]], **env_kwargs}
    out: dict[str, Any] = {"map_generator": CAMAR_MAPS[name], "map_kwargs": {}}
    for key, value in settings.items():
        if key == "map":
            continue
        if key == "episode_limit":
            out["max_steps"] = int(value)
        elif key in CAMAR_MAP_KEYWORDS:
            out["map_kwargs"][CAMAR_MAP_KEYWORDS[key]] = value
        elif key in env_kwargs:
            raise ValueError(
                f"CAMAR's {CAMAR_MAPS[name]} has no counterpart of the keyword {key!r}"
            )
    return out


def bench_camar(
    name: str,
    num_envs: int = 64,
    steps: int = 1000,
    seed: int = 0,
    *,
    repeats: int = 3,
    steady: bool = True,
    **env_kwargs: Any,
) -> dict[str, Any]:
    """Throughput of CAMAR's counterpart of a marl pathfinding id, same method as `bench_env`.

    CAMAR's `step` does not reset; as on the marl side (`AutoReset.step_batch`), resets are
    computed on the steps where an episode ended and selected there. Actions are uniform in
    [-1, 1]. Returns the same dict as `bench_env` (env: "camar_v0:<map>").
    """
    from camar import camar_v0

    env = camar_v0(**camar_kwargs(name, env_kwargs))
    n = env.num_agents
    v_reset = jax.vmap(env.reset)
    v_step = jax.vmap(env.step)

    def body(carry, _):
        obs, state, reward, done, key = carry
        key, key_act, key_step, key_reset = jax.random.split(key, 4)
        actions = jax.random.uniform(key_act, (num_envs, n, 2), minval=-1.0, maxval=1.0)
        obs, state, reward, done, _ = v_step(jax.random.split(key_step, num_envs), state, actions)

        def with_resets(obs_state):
            obs, state = obs_state
            first_obs, first = v_reset(jax.random.split(key_reset, num_envs))

            def pick(a, b):
                return jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b)

            return pick(first_obs, obs), jax.tree.map(pick, first, state)

        # resets computed only on steps where an episode ended, as marl's AutoReset.step_batch
        obs, state = jax.lax.cond(jnp.any(done), with_resets, lambda x: x, (obs, state))
        return (obs, state, reward, done, key), None

    def run(carry):
        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    key_reset, key_run = jax.random.split(jax.random.PRNGKey(seed))
    obs, state = jax.jit(v_reset)(jax.random.split(key_reset, num_envs))
    carry = (obs, state, jnp.zeros((num_envs, n, 1)), jnp.zeros((num_envs,), bool), key_run)
    jax.block_until_ready(carry)
    burn_in = burn_in_calls(env.max_steps if steady else None, steps)
    measured = measure_program(run, carry, repeats, burn_in)
    return throughput_record(f"camar_v0:{CAMAR_MAPS[name]}", n, num_envs, steps, measured)


def bench_table(
    env: MultiAgentEnv,
    env_id: str,
    sizes: Sequence[int],
    steps: int,
    seed: int,
    repeats: int,
    vs: str | None = None,
    peer_name: str = "",
    kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """`marl bench ENV`: steps/s at each number of envs, printed as a table as they come, with
    the peer `vs` (jaxmarl or camar, built with the same `kwargs`) measured beside; returns
    one record per size."""
    from marl.results.tables import format_row
    from marl.run.train.catalog import describe_space

    kwargs = kwargs or {}
    spec = env.spec
    head = f"{spec.name}: {spec.num_agents} agents, {describe_space(spec.action_space)}"
    head += f", {steps} steps per env, best of {repeats}"
    head += f"; jax {jax.__version__} on {jax.devices()[0].platform}"
    if vs:
        head += f"; vs {vs} {peer_name}"
    print(head, flush=True)
    headers = ["num_envs", "marl steps/s", "marl agent-steps/s", "compile s"]
    if vs:
        headers += [f"{vs} steps/s", f"{vs} compile s", f"marl/{vs}"]
    widths = [max(len(h), 10) for h in headers]
    print(format_row(headers, widths))
    print(format_row(["-" * w for w in widths], widths), flush=True)
    records = []
    for n in sizes:
        mine = bench_env(env, n, steps, seed, repeats=repeats)
        row = [
            str(n),
            f"{mine['steps_per_s']:,.0f}",
            f"{mine['agent_steps_per_s']:,.0f}",
            f"{mine['compile_s']:.2f}",
        ]
        record = {"marl": mine}
        if vs:
            peer_bench = bench_camar if vs == "camar" else bench_jaxmarl
            peer = peer_bench(env_id, n, steps, seed, repeats=repeats, **kwargs)
            ratio = mine["steps_per_s"] / peer["steps_per_s"]
            row += [f"{peer['steps_per_s']:,.0f}", f"{peer['compile_s']:.2f}", f"{ratio:.2f}"]
            record[vs] = peer
        print(format_row(row, widths), flush=True)
        records.append(record)
    return records
