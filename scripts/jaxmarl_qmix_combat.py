"""JaxMARL's own QMIX and VDN trained on marl's combat/5m_vs_6m: an outside learner on marl's env.

    python scripts/jaxmarl_qmix_combat.py --jaxmarl PATH_TO_JAXMARL_CHECKOUT --algos qmix,vdn \
        --seeds 5 --budget 2e6 [--set HIDDEN_SIZE=64 ...] \
        [--out results/fidelity/jaxmarl_qmix_combat.json] [--merge OTHER_RECORD.json ...]

Issue 77's experiment (b): marl's QMIX stays in charge-and-die on combat/5m_vs_6m where marl's
VDN and IQL leave it. If JaxMARL's QMIX, another implementation of the same update, does the
same against JaxMARL's VDN on the same env, the cause lies in QMIX on this task, not in marl's
learner; if JaxMARL's QMIX leaves charge-and-die where marl's does not, marl's learner is
suspect.

JaxMARL side: `make_train` of the unmodified checkout's `baselines/QLearning/qmix_rnn.py` and
`vdn_rnn.py`, configured by its `config.yaml` and `alg/ql_rnn_smax.yaml` (the settings JaxMARL
trains SMAX with: 16 envs x 128 steps per update, 8 gradient steps on 32 sampled 128-step
chunks, GRU 512, Adam 5e-5, one-step double-Q targets, target copy every 10 updates, mixer
gain 0.001), overriding only the budget, one seed per program (its vmap over seeds deadlocks
this CPU's batched QR), W&B (a recording stand-in: its per-update metrics reach us only
through `wandb.log`), `REW_SCALE` 1 (marl's combat reward is already SMAC's scale; JaxMARL
scales SMAX's by 10 to reach it), and what `--set` names. The env is marl's, seen through
`marl.interop.jaxmarl.MarlToJaxMARL`, with the two things JaxMARL's `CTRolloutManager` reads
from an SMAX env: `obs["world_state"]` (marl's global state, the mixer's input) and a name
containing "smax" (so that it takes the team reward of one agent, the state and the available
actions from the env). Each battle's win is marl's own `won` metric, passed through `infos`
(JaxMARL's `SMAXLogWrapper` infers a win from reward >= 1, which marl's reward scale breaks).

A seed "leaves charge-and-die" when a greedy test (JaxMARL's own: 512 envs x 128 steps every
5% of updates) wins at least half its battles, the criterion of results/fidelity.md's SMAC
section. Writes a JSON record (per seed: the greedy test curve, timings; the checkout's commit
and file hashes) and prints a table.

Feeds `results/fidelity.md` (the SMAC section's "Localising QMIX's failure") and its record
`results/fidelity/jaxmarl_qmix_combat.json`.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

from marl.learning.xla import configure_xla

configure_xla()  # marl's XLA CPU flags (the CLI's), before JAX starts a backend
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the JaxMARL comparison's pieces

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jaxmarl_compare import WANDB, provenance  # noqa: E402

import marl  # noqa: E402
from marl.results.files import write_json  # noqa: E402
from marl.run.train.provenance import versions  # noqa: E402

SCRIPTS = {"qmix": "baselines/QLearning/qmix_rnn.py", "vdn": "baselines/QLearning/vdn_rnn.py"}
CONFIGS = [
    "baselines/QLearning/config/config.yaml",
    "baselines/QLearning/config/alg/ql_rnn_smax.yaml",
]
START = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - START:8.1f}s] {msg}", flush=True)


def smax_like(env_id: str) -> Any:
    """marl's env with JaxMARL's API and what `CTRolloutManager` reads from an SMAX env, in
    JaxMARL's `LogWrapper` (its episode returns; the battle's `won` is marl's, in `infos`)."""
    from jaxmarl.wrappers.baselines import LogWrapper

    from marl.interop.jaxmarl import MarlToJaxMARL

    class SmaxLike(MarlToJaxMARL):
        @property
        def name(self) -> str:
            return f"{env_id} (smax-like)"  # CTRolloutManager's SMAX branch keys on "smax"

        def reset(self, key: jax.Array) -> tuple[dict, Any]:
            obs, state = super().reset(key)
            return {**obs, "world_state": state.global_state}, state

        def step_env(self, key, state, actions):  # noqa: ANN001, ANN201
            obs, state, rewards, dones, infos = super().step_env(key, state, actions)
            return {**obs, "world_state": state.global_state}, state, rewards, dones, infos

        def get_avail_actions(self, state: Any) -> dict:
            return {a: v.astype(jnp.float32) for a, v in super().get_avail_actions(state).items()}

    return LogWrapper(SmaxLike(marl.make(env_id)))


def load_peer(path: Path, algo: str) -> Any:
    """Import the peer's baseline script from its file (W&B served by the stand-in)."""
    import importlib.util

    sys.modules["wandb"] = WANDB
    spec = importlib.util.spec_from_file_location(f"jaxmarl_{algo}", path / SCRIPTS[algo])
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path / SCRIPTS[algo]}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_config(path: Path, budget: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """JaxMARL's SMAX config as its `single_run` merges it, with the budget, one seed, the
    recording W&B stand-in, marl's reward scale and `overrides`."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(path / CONFIGS[0]), resolve=True)
    cfg["alg"] = OmegaConf.to_container(OmegaConf.load(path / CONFIGS[1]), resolve=True)
    cfg = {**cfg, **cfg["alg"]}
    cfg.update(TOTAL_TIMESTEPS=budget, NUM_SEEDS=1, WANDB_MODE="offline", REW_SCALE=1.0)
    cfg.update(overrides)
    return cfg


def train_seed(module: Any, cfg: dict, env: Any, seed: int, tag: str) -> dict[str, Any]:
    """One seed: compile, train, and read the greedy tests from the recorded `wandb.log` rows."""
    cfg = copy.deepcopy(cfg)  # make_train writes its derived values into it
    key = jax.random.PRNGKey(seed)
    t0 = time.perf_counter()
    compiled = jax.jit(module.make_train(cfg, env)).lower(key).compile()
    compile_s = time.perf_counter() - t0
    log(f"{tag}: compiled in {compile_s:.1f}s, training {cfg['NUM_UPDATES']} updates")
    WANDB.records.clear()
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(key))
    jax.effects_barrier()  # every per-update callback (the stand-in's wandb.log) has run
    train_s = time.perf_counter() - t0
    rows = sorted(WANDB.records, key=lambda r: r["update_steps"])
    every = int(cfg["NUM_UPDATES"] * cfg["TEST_INTERVAL"])
    tests = [r for r in rows if int(r["update_steps"]) % every == 0]  # a fresh greedy test
    curve = [
        {
            "env_step": int(r["env_step"]),
            "won": r.get("test_won"),
            "return": r.get("test_returned_episode_returns"),
            "length": r.get("test_returned_episode_lengths"),
        }
        for r in tests
    ]
    train_won = [r.get("won") for r in rows]
    log(f"{tag}: {train_s:.0f}s; greedy won " + " ".join(f"{c['won']:.2f}" for c in curve))
    return {
        "seed": seed,
        "compile_s": compile_s,
        "train_s": train_s,
        "steps_per_s": cfg["NUM_UPDATES"] * cfg["NUM_STEPS"] * cfg["NUM_ENVS"] / train_s,
        "greedy": curve,
        "best_won": max((c["won"] for c in curve if c["won"] is not None), default=None),
        "final_won": curve[-1]["won"] if curve else None,
        "train_won_last_5pct": float(np.nanmean(train_won[-max(1, len(train_won) // 20) :])),
    }


def kept_seeds(path: Path, record: dict[str, Any], done: set | None = None) -> set:
    """The (learner, seed) runs a call with the same settings wrote to `path`, added to
    `record` unless `done` already holds them: `--out`'s (a stopped study goes on where it
    stopped) and `--merge`'s (seeds trained by another process). Other settings: an error."""
    done = set() if done is None else done
    if not path.exists():
        return set()
    before = json.loads(path.read_text())
    for key in ("env", "budget", "overrides"):
        if before.get(key) != record[key]:
            raise SystemExit(f"{path} holds another study ({key}: {before.get(key)!r}); move it")
    added = set()
    for algo, entry in before.get("algos", {}).items():
        if algo not in record["algos"]:
            continue
        if entry.get("config") != record["algos"][algo]["config"]:
            raise SystemExit(f"{path} trained {algo} with another config; move it")
        for run in entry["seeds"]:
            if (algo, int(run["seed"])) not in done | added:
                record["algos"][algo]["seeds"].append(run)
                added.add((algo, int(run["seed"])))
    if added:
        log(f"{path}: {len(added)} seed run(s) kept from an earlier call")
    return added


def table(record: dict[str, Any], reached: float) -> str:
    """Per learner: each seed's best and final greedy win rate, the final greedy battles' mean
    length (charge-and-die: 13-17 steps, all lost), and the seeds reaching `reached`."""
    lines = [
        "| learner | seeds | best greedy won per seed | final greedy won | final battle length "
        f"| seeds reaching {reached} |",
        "|---|---|---|---|---|---|",
    ]
    for algo, entry in record["algos"].items():
        runs = entry["seeds"]
        best = [r["best_won"] for r in runs]
        hits = sum(b is not None and b >= reached for b in best)
        cells = (
            " ".join(f"{b:.2f}" for b in best),
            " ".join(f"{r['final_won']:.2f}" for r in runs),
            " ".join(f"{r['greedy'][-1]['length']:.0f}" for r in runs),
        )
        lines.append(f"| {algo} | {len(runs)} | {' | '.join(cells)} | {hits} of {len(runs)} |")
    return "\n".join(lines)


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jaxmarl", type=Path, required=True, help="a JaxMARL checkout (c793d09)")
    ap.add_argument("--algos", default="qmix,vdn")
    ap.add_argument("--env", default="combat/5m_vs_6m")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--budget", type=float, default=2e6)
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a JaxMARL config value (e.g. HIDDEN_SIZE=64)",
    )
    ap.add_argument("--reached", type=float, default=0.5, help="greedy win rate that counts")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--merge",
        type=Path,
        action="append",
        default=[],
        metavar="RECORD",
        help="add the seeds of a record with the same settings (another process's --out)",
    )
    args = ap.parse_args(argv)
    overrides = dict(kv.split("=", 1) for kv in args.set)
    overrides = {k: parse_value(v) for k, v in overrides.items()}
    algos = args.algos.split(",")
    env = smax_like(args.env)
    record: dict[str, Any] = {
        "env": args.env,
        "budget": int(args.budget),
        "overrides": overrides,
        "peer": provenance(args.jaxmarl, [*(SCRIPTS[a] for a in algos), *CONFIGS]),
        "versions": versions(),
        "command": " ".join(sys.argv),
        "algos": {},
    }
    modules = {algo: load_peer(args.jaxmarl, algo) for algo in algos}
    cfg = peer_config(args.jaxmarl, int(args.budget), overrides)  # the same for every learner
    for algo in algos:
        record["algos"][algo] = {"config": cfg, "seeds": []}
    missing = [path for path in args.merge if not path.exists()]
    if missing:
        raise SystemExit(f"no such record: {missing[0]}")
    done = kept_seeds(args.out, record) if args.out is not None else set()
    for other in args.merge:
        done |= kept_seeds(other, record, done)
    for entry in record["algos"].values():
        entry["seeds"].sort(key=lambda run: int(run["seed"]))
    if args.out is not None and args.merge:
        write_json(args.out, record)
    for seed in range(args.seed, args.seed + args.seeds):  # learners alternate, seed by seed
        for algo in algos:
            if (algo, seed) in done:
                continue
            run = train_seed(modules[algo], cfg, env, seed, f"{algo} seed {seed}")
            record["algos"][algo]["seeds"].append(run)
            record["algos"][algo]["seeds"].sort(key=lambda run: int(run["seed"]))
            if args.out is not None:  # each seed as it lands
                write_json(args.out, record)
    print(table(record, args.reached))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
