"""marl's grid family equals pogema 1.4.0 step for step: on the same instance (map, starts,
goals) and actions, every step's cells, goals, who is on the grid, observations, rewards and
terminations, and the episode's metrics, for every collision system and on-target mode, on
random, crowded and hand-built episodes (a swap, a chain into vacated cells, contention for
one cell, a rotation).

pogema cannot share an environment with jax (it pins numpy <= 1.26), so its episodes are
recorded by scripts/pogema_reference.py in an interpreter of its own: tests/data/
pogema_golden.npz in the default suite; with MARL_POGEMA_PYTHON set to such an interpreter,
fresh seeds played live (more of them under -m slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from marl.envs.grid import GridMAPF, Instances
from marl.envs.grid.sets import pogema_set

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "pogema_golden.npz"
POGEMA_NAMES = {"CSR": "csr", "ISR": "isr", "ep_length": "ep_length", "SoC": "soc",
                "makespan": "makespan", "avg_throughput": "avg_throughput"}  # fmt: skip


def load(path: Path) -> list[dict]:
    data = np.load(path)
    index = json.loads(bytes(data["index"]).decode())
    out = []
    for i, meta in enumerate(index):
        ep = {k[len(f"e{i}_") :]: data[k] for k in data.files if k.startswith(f"e{i}_")}
        out.append({**meta, **ep})
    return out


_ENVS: dict[tuple, tuple[GridMAPF, Any, Any]] = {}


def _env(ep: dict) -> tuple[GridMAPF, Any, Any]:
    """The env of `ep`'s setting, its jitted `reset_to` and step, one per setting (episodes of
    a case share the compiled programs)."""
    grid, starts, goals = ep["grid"], ep["starts"], ep["goals"]
    key = (ep["rule"], ep["mode"], int(ep["radius"]), int(ep["limit"]), grid.shape, goals.shape)
    key += (ep.get("set"),)
    if key not in _ENVS:
        maps = Instances(grid[None], starts[None], goals[None])
        env = GridMAPF(
            maps=pogema_set(ep["set"]) if ep.get("set") else maps,
            collision=ep["rule"],
            on_target=ep["mode"],
            obs_radius=int(ep["radius"]),
            num_agents=len(starts),
            episode_limit=int(ep["limit"]),
        )
        _ENVS[key] = env, jax.jit(env.reset_to), jax.jit(env.step)
    return _ENVS[key]


def replay(ep: dict) -> list[str]:
    """Play `ep`'s actions in marl; every difference from pogema's record, as lines."""
    env, reset_to, step = _env(ep)
    if ep.get("set"):  # the set's own arrays: a smaller map inside a larger grid, its size
        sets, i, k = pogema_set(ep["set"]), ep["instance"], len(ep["starts"])
        state, ts = reset_to(sets.maps[i], sets.starts[i, :k], sets.goals[i, :k], sets.sizes[i])
    else:
        state, ts = reset_to(ep["grid"], ep["starts"], ep["goals"])
    r, n = env.r, env.num_agents
    wrong: list[str] = []

    def compare(k: int, state, ts) -> None:
        where = f"{ep['rule']}/{ep['mode']}/{ep['name']} step {k}"
        pos = np.asarray(state.pos) - r
        if not np.array_equal(pos, ep["pos"][k]):
            wrong.append(f"{where}: cells {pos.tolist()} != {ep['pos'][k].tolist()}")
        goal = np.asarray(state.goal) - r
        if not np.array_equal(goal, ep["goal"][k]):
            wrong.append(f"{where}: goals {goal.tolist()} != {ep['goal'][k].tolist()}")
        if not np.array_equal(np.asarray(state.active), ep["active"][k]):
            wrong.append(f"{where}: on the grid {np.asarray(state.active)} != {ep['active'][k]}")
        bits = np.packbits(np.asarray(ts.obs).astype(bool), axis=1)
        if not np.array_equal(bits, ep["obs"][k]):
            wrong.append(f"{where}: observations differ")

    compare(0, state, ts)
    steps = len(ep["reward"])
    for k in range(steps):
        state, ts = step(jax.random.key(k), state, jnp.asarray(ep["actions"][k], jnp.int32))
        compare(k + 1, state, ts)
        where = f"{ep['rule']}/{ep['mode']}/{ep['name']} step {k + 1}"
        if not np.array_equal(np.asarray(ts.reward), ep["reward"][k]):
            wrong.append(f"{where}: rewards {np.asarray(ts.reward)} != {ep['reward'][k]}")
        if ep["mode"] == "finish":  # pogema's per-agent terminated: on the goal
            mine = np.all(np.asarray(state.pos) == np.asarray(state.goal), axis=-1)
        else:
            mine = np.full(n, bool(ts.terminated))
        if not np.array_equal(mine, ep["terminated"][k]):
            wrong.append(f"{where}: terminated {mine} != {ep['terminated'][k]}")
        ended = bool(ep["terminated"][k].all() or ep["truncated"][k].all())
        if bool(ts.done) != ended:
            wrong.append(f"{where}: the episode ended: {bool(ts.done)} in marl, {ended} in pogema")
        if wrong:
            return wrong
    for name, value in ep["metrics"].items():
        ours = float(ts.metrics[POGEMA_NAMES[name]])
        if not np.isclose(ours, value, rtol=1e-6):
            wrong.append(f"{ep['rule']}/{ep['mode']}/{ep['name']}: {name} {ours} != {value}")
    return wrong


def _check(episodes: list[dict]) -> None:
    wrong = [line for ep in episodes for line in replay(ep)]
    assert not wrong, "\n".join(wrong[:20])


def test_golden_episodes_cover_every_rule_and_mode():
    episodes = load(GOLDEN)
    cases = {(e["rule"], e["mode"]) for e in episodes}
    assert len(cases) == 9
    names = {e["name"] for e in episodes}
    assert {"swap", "chain", "contend", "rotation", "into_waiter"} <= names
    # the records exercise what the rules decide: blocked moves, arrivals, new goals
    assert any((e["reward"] > 0).any() for e in episodes if e["mode"] == "restart")
    assert any(e["metrics"].get("CSR") == 1.0 for e in episodes)


# the default suite: one crowded random episode and the hand-built ones of every rule and mode
QUICK = ("crowded0", "swap", "contend", "rotation")


@pytest.mark.parametrize("rule", ["priority", "block_both", "soft"])
def test_equals_pogema_step_for_step(rule):
    _check([e for e in load(GOLDEN) if e["rule"] == rule and e["name"] in QUICK])


def test_published_instance_sets_equal_pogema():
    episodes = [e for e in load(GOLDEN) if e.get("set")]
    assert {e["set"] for e in episodes} == {"random", "mazes", "warehouse", "movingai"}
    sets = {e["set"]: pogema_set(e["set"]) for e in episodes}
    # some maps sit inside a larger array: the frame and the free cells beyond are checked
    assert any((s.sizes[e["instance"]] < s.maps.shape[1:]).any() for e in episodes
               for s in [sets[e["set"]]])  # fmt: skip
    _check(episodes)


@pytest.mark.slow
def test_equals_pogema_on_every_golden_episode():
    _check(load(GOLDEN))


def _live(tmp_path: Path, seed: int, per_case: int) -> list[dict]:
    python = os.environ.get("MARL_POGEMA_PYTHON")
    if not python:
        pytest.skip("MARL_POGEMA_PYTHON (an interpreter with pogema 1.4.0) not set")
    out = tmp_path / "live.npz"
    script = ROOT / "scripts" / "pogema_reference.py"
    cmd = [python, str(script), "--seed", str(seed), "--episodes", str(per_case), "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return load(out)


def test_equals_live_pogema_on_fresh_seeds(tmp_path):
    _check(_live(tmp_path, seed=int.from_bytes(os.urandom(2), "little") + 1, per_case=1))


@pytest.mark.slow
def test_equals_live_pogema_full_sweep(tmp_path):
    _check(_live(tmp_path, seed=12345, per_case=8))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
