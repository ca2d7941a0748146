"""marl's learners against JaxMARL's own baseline scripts on MPE simple spread, in one process.

    python scripts/jaxmarl_compare.py --jaxmarl PATH_TO_JAXMARL_CHECKOUT --algos ippo,mappo,qmix \
        --seeds 3 --budget 2e6 [--out results/fidelity/jaxmarl_spread.json]

JaxMARL side: `make_train` is imported from the unmodified checkout's `baselines/` scripts
(`IPPO/ippo_ff_mpe.py`, `MAPPO/mappo_rnn_mpe.py`, `QLearning/qmix_rnn.py`) with their own YAML
configs; only TOTAL_TIMESTEPS, NUM_SEEDS and WandB are overridden (a recording stand-in module
is their `wandb`: no W&B run; QMIX's WANDB_MODE is 'offline' so that its per-update metrics,
which its `train` does not return, reach the stand-in). Seeds run one after another, the
sides alternating (JaxMARL seed i, then marl's, so that load on the machine falls on both),
`jax.jit(make_train(config))(key)` each (a vmap over seeds deadlocks XLA's CPU backend in
batched QR). marl side: the registry's
`ippo`, `mappo`, `qmix` on `particle/spread`, configured from the same YAML values (printed as
a mapping, with the settings marl cannot express), one jitted scan over all updates per seed.

Both are compiled before timing (`.lower(key).compile()`), so wall time and env steps/s count
training only. Training-episode returns are put in one unit, per agent per 25-step episode
(JaxMARL's MPE episodes have 26 steps and its MPELogWrapper reports rewards x num_agents), on a
common grid of env steps; the final return is the mean over the last 5% of training. Writes a
JSON record and a markdown table next to it. Verdicts follow the project's rule: overlapping
95% intervals are level; with fewer than 5 seeds a side a gap is a lean, not a result.
`--merge RECORD --out RECORD` on one record judges its verdicts again without training.

Feeds `results/fidelity/jaxmarl_spread.json` and `.md` (the JaxMARL section of
`results/fidelity.md` quotes them).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib.util
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import types
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from marl.learning.xla import configure_xla

configure_xla()  # marl's XLA CPU flags (the CLI's), before JAX starts a backend

import jax  # noqa: E402
import numpy as np  # noqa: E402

import marl  # noqa: E402
from marl.learning.training import probe_learner  # noqa: E402
from marl.results.files import write_json  # noqa: E402
from marl.results.report import MIN_SEEDS  # noqa: E402
from marl.results.stats import mean_ci  # noqa: E402
from marl.run.train.provenance import versions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "particle/spread"
PEER_ENV = "MPE_simple_spread_v3"
MARL_EPISODE = 25  # marl's particle episodes (mpe2's max_cycles)
PEER_EPISODE = 26  # JaxMARL's MPE: done when step >= 25, checked before the step counter moves
START = time.perf_counter()

PEERS: dict[str, dict[str, Any]] = {
    "ippo": {
        "script": "baselines/IPPO/ippo_ff_mpe.py",
        "configs": ["baselines/IPPO/config/ippo_ff_mpe.yaml"],
    },
    "mappo": {
        "script": "baselines/MAPPO/mappo_rnn_mpe.py",
        "configs": ["baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml"],
    },
    "qmix": {  # hydra: config.yaml with `+alg=ql_rnn_mpe`, run by the QMIX entry point
        "script": "baselines/QLearning/qmix_rnn.py",
        "configs": [
            "baselines/QLearning/config/config.yaml",
            "baselines/QLearning/config/alg/ql_rnn_mpe.yaml",
        ],
    },
}

# How each side's training return becomes "per agent per 25-step episode".
PEER_METRIC = {
    "ippo": "out['metrics']['returned_episode_returns'] per update: MPELogWrapper's last "
    "finished episode return (rewards x num_agents), held and averaged over every step and "
    "agent of the rollout (the first update counts 25 steps of 0 before an episode ends)",
    "mappo": "wandb.log 'returns' per update (its train() returns no metrics): the held "
    "returned_episode_returns at the rollout's last step, mean over agents",
    "qmix": "wandb.log returned_episode_returns / returned_episode per update (its train() "
    "returns no metrics; WANDB_MODE 'offline' makes it call the stand-in): each update resets "
    "its envs and plays one 26-step episode, so the held value is 0 except on the last step, "
    "and the ratio is the mean return of the update's episodes",
}
CONVERSION = (
    f"JaxMARL: value / num_agents * {MARL_EPISODE}/{PEER_EPISODE} (MPELogWrapper multiplies "
    "each agent's reward by num_agents; episodes of 26 steps scaled to 25 at their mean "
    "reward per step); marl: train/return_mean (team return / num_agents of the episodes "
    "ending in each update), unchanged"
)

UNEXPRESSED_PPO = [
    "Time limit: JaxMARL's GAE treats the episode's end (a time limit) as termination, no "
    "bootstrap at the 26th step; marl bootstraps truncated episodes from the true final "
    "observation (no switch): marl's value targets near an episode's end are higher (less "
    "negative)",
    "Advantages: JaxMARL normalises them per minibatch, marl over each update's whole batch",
    "Episode length: JaxMARL's MPE episodes are 26 steps, marl's 25 (returns converted "
    "x25/26; JaxMARL spends 4% of its env steps on the extra step)",
    "LR annealing: JaxMARL lowers the rate once per update, marl at every gradient step "
    "(same linear decay)",
    "Initialisation gains and the per-update io_callback (wandb.log, a no-op here) inside "
    "JaxMARL's timed program are the peer's own",
]
UNEXPRESSED = {
    "ippo": [
        "One optimiser: JaxMARL's IPPO trains actor and critic (separate torsos) with one Adam, "
        "loss actor + VF_COEF*value - ENT_COEF*entropy and one joint gradient-norm clip "
        "(MAX_GRAD_NORM over both); marl has an Adam and a clip per network and no VF_COEF "
        "(with Adam a constant loss scale matters only through the clip: marl's critic is "
        "clipped on its own, its actor is not shrunk by large critic gradients)",
        "Minibatches: JaxMARL's feed-forward IPPO shuffles single (step, agent) samples into "
        "its 4 minibatches; marl splits over environments (4 of 16 envs' whole 128-step "
        "rollouts per minibatch): more correlated minibatches in marl",
        *UNEXPRESSED_PPO,
    ],
    "mappo": [
        "Critic agent ids: JaxMARL's central critic sees only the world state (the agents' "
        "concatenated observations, as marl's state), one value for all agents although "
        "their rewards differ (own collisions); marl refuses critic_agent_id=false where "
        "rewards differ and appends one-hot ids (3 inputs) to its critic",
        "VF_COEF: JaxMARL scales the critic loss by 0.5 before its own 0.5 gradient clip; "
        "marl does not scale it (Adam is invariant to the scale, the clip is not: marl's "
        "critic is clipped relatively earlier)",
        "Minibatches: JaxMARL splits over the 48 (agent, env) sequences (12 per minibatch), "
        "marl over environments (4 of 16 envs, all agents, per minibatch)",
        "ACTIVATION 'tanh' in the YAML is unused by JaxMARL's MAPPO (ReLU hard-coded in "
        "ActorRNN/CriticRNN): marl uses relu to match the code; JaxMARL's post-GRU layer "
        "has orthogonal gain 2, marl's sqrt(2)",
        *UNEXPRESSED_PPO,
    ],
    "qmix": [
        "LEARNING_STARTS: JaxMARL takes no gradient step before 10,000 env steps; marl starts "
        "once its buffer holds batch_size (32) episodes (800 steps), ~9,000 steps earlier",
        "Initialisation: JaxMARL's agent network is orthogonal with gain 1, marl's uses its "
        "own initialisation (the mixer's MIXER_INIT_SCALE is expressed: mixer_init_scale)",
        "LR decay: JaxMARL's schedule counts optimiser steps, which start only after "
        "LEARNING_STARTS, so it ends near LR*10,000/budget; marl decays over all updates to 0",
        "Steps per update: both play 8 whole episodes and take 1 gradient step per update, "
        "but JaxMARL's episodes have 26 steps (208 env steps per update, the 26th transition "
        "dropped from the loss) and marl's 25 (200): for one env-step budget marl makes 4% "
        "more updates, and TARGET_UPDATE_INTERVAL (in updates) is 41,600 env steps in "
        "JaxMARL, 40,000 in marl; both bootstrap at every trained transition",
        "Global reward: JaxMARL's CTRolloutManager sums the agents' rewards, marl's mixer "
        "takes their mean: expressed as reward_scale = num_agents",
        "JaxMARL's timed training program includes its own greedy tests "
        "(TEST_DURING_TRAINING: 512 episodes every 5% of updates); marl's has none",
    ],
}


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - START:8.1f}s] {msg}", flush=True)


# --- JaxMARL side ------------------------------------------------------------------------------


class WandbStandIn(types.ModuleType):
    """The `wandb` the peer's scripts import: `init`/`finish` do nothing, `log` records.

    JaxMARL's MAPPO reports its training returns only through `wandb.log`; recording them
    keeps its code as it is. Installed in `sys.modules` before a peer script is imported, so
    no real W&B run can start (WandB off), whether or not wandb is installed.
    """

    def __init__(self) -> None:
        super().__init__("wandb")
        self.records: list[dict[str, float]] = []

    def init(self, *args: Any, **kwargs: Any) -> None:
        return None

    def finish(self, *args: Any, **kwargs: Any) -> None:
        return None

    def log(self, data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        row = {}
        for k, v in data.items():
            a = np.asarray(v)
            if a.size == 1 and a.dtype.kind in "biuf":
                row[k] = float(a)
        self.records.append(row)


WANDB = WandbStandIn()


def git(path: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def provenance(path: Path, files: list[str]) -> dict[str, Any]:
    """The checkout's commit and, per file used, whether it equals that commit's blob."""
    commit = git(path, "rev-parse", "HEAD")
    record: dict[str, Any] = {
        "path": str(path),
        "commit": commit,
        "commit_date": git(path, "log", "-1", "--format=%cI") if commit else None,
        "tree_clean": None if commit is None else git(path, "status", "--porcelain") == "",
        "files": {},
    }
    for f in files:
        data = (path / f).read_bytes()
        entry: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest()}
        if commit:
            entry["unmodified"] = git(path, "hash-object", f) == git(path, "rev-parse", f"HEAD:{f}")
        record["files"][f] = entry
    return record


def load_peer(path: Path, algo: str) -> types.ModuleType:
    """Import the peer's baseline script from its file (WandB served by the stand-in)."""
    sys.modules["wandb"] = WANDB
    script = path / PEERS[algo]["script"]
    spec = importlib.util.spec_from_file_location(f"jaxmarl_baseline_{algo}", script)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {script}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_config(path: Path, algo: str, budget: int, seeds: int) -> dict[str, Any]:
    """The peer's YAML config as its `main` builds it, with only the budget, the number of
    seeds and WandB (the stand-in, recording) overridden."""
    from omegaconf import OmegaConf

    files = PEERS[algo]["configs"]
    cfg = OmegaConf.to_container(OmegaConf.load(path / files[0]), resolve=True)
    if algo == "qmix":  # `+alg=ql_rnn_mpe`, merged as qmix_rnn.single_run merges it
        cfg["alg"] = OmegaConf.to_container(OmegaConf.load(path / files[1]), resolve=True)
        cfg = {**cfg, **cfg["alg"]}
    # WandB off: the stand-in module; qmix_rnn reports only when WANDB_MODE != "disabled"
    mode = "offline" if algo == "qmix" else "disabled"
    cfg.update(TOTAL_TIMESTEPS=budget, NUM_SEEDS=seeds, WANDB_MODE=mode)
    return cfg


def peer_curve(algo: str, out: Any, records: list[dict[str, float]], cfg: dict) -> np.ndarray:
    """Per-update training return in the peer's own unit (team sum, 26-step episodes)."""
    if algo == "ippo":
        return np.asarray(out["metrics"]["returned_episode_returns"], np.float64)
    name = "returns" if algo == "mappo" else "returned_episode_returns"
    rows = sorted((r for r in records if name in r), key=lambda r: r["env_step"])
    if len(rows) != cfg["NUM_UPDATES"]:
        raise RuntimeError(f"{algo} logged {len(rows)} updates, expected {cfg['NUM_UPDATES']}")
    ret = np.asarray([r[name] for r in rows], np.float64)
    if algo == "mappo":
        return ret
    frac = np.asarray([r["returned_episode"] for r in rows], np.float64)
    return np.where(frac > 0, ret / np.maximum(frac, 1e-12), np.nan)


def run_peer(
    module: types.ModuleType, algo: str, cfg: dict, key: jax.Array, tag: str
) -> dict[str, Any]:
    """One seed of the peer's `make_train`: compile, then time the training call."""
    cfg = copy.deepcopy(cfg)  # make_train writes its derived values into it
    if algo == "qmix":
        env, _ = module.env_from_config(copy.deepcopy(cfg))
        train = module.make_train(cfg, env)
    else:
        train = module.make_train(cfg)
    t0 = time.perf_counter()
    compiled = jax.jit(train).lower(key).compile()
    compile_s = time.perf_counter() - t0
    log(f"{tag}: compiled in {compile_s:.1f}s, training {cfg['NUM_UPDATES']} updates")
    WANDB.records.clear()
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(key))
    jax.effects_barrier()  # every per-update callback (the stand-in's wandb.log) has run
    train_s = time.perf_counter() - t0
    per_update = peer_curve(algo, out, WANDB.records, cfg)
    n = int(cfg["NUM_UPDATES"])
    return {
        "updates": n,
        "steps_per_update": cfg["NUM_STEPS"] * cfg["NUM_ENVS"],
        "compile_s": compile_s,
        "train_s": train_s,
        "raw": per_update,
        "derived": {k: cfg[k] for k in ("NUM_UPDATES", "NUM_ACTORS", "MINIBATCH_SIZE") if k in cfg},
    }


# --- marl side ---------------------------------------------------------------------------------


def marl_config(algo: str, peer: dict, budget: int, n_agents: int) -> tuple[dict, list[list]]:
    """marl's learner config from the peer's values -> (config, [peer key, value, marl key,
    value] rows); every field marl would otherwise default differently is set explicitly."""
    rows: list[list] = []

    def put(peer_key: str, marl_key: str, value: Any) -> None:
        rows.append([peer_key, peer.get(peer_key, "(code)"), marl_key, value])

    if algo in ("ippo", "mappo"):
        rec = algo == "mappo"
        put("LR", "lr", peer["LR"])
        put("LR", "critic_lr", peer["LR"])
        put("NUM_ENVS", "num_envs", peer["NUM_ENVS"])
        put("NUM_STEPS", "rollout_length", peer["NUM_STEPS"])
        put("UPDATE_EPOCHS", "epochs", peer["UPDATE_EPOCHS"])
        put("NUM_MINIBATCHES", "num_minibatches", peer["NUM_MINIBATCHES"])
        put("GAMMA", "gamma", peer["GAMMA"])
        put("GAE_LAMBDA", "gae_lambda", peer["GAE_LAMBDA"])
        clip = peer["CLIP_EPS"] / n_agents if peer.get("SCALE_CLIP_EPS") else peer["CLIP_EPS"]
        put("CLIP_EPS", "clip_eps", clip)
        put("CLIP_EPS", "value_clip_eps", clip)  # the peer clips values by CLIP_EPS too
        put("ENT_COEF", "ent_coef", peer["ENT_COEF"])
        put("MAX_GRAD_NORM", "max_grad_norm", peer["MAX_GRAD_NORM"])
        put("ANNEAL_LR", "anneal_lr", bool(peer["ANNEAL_LR"]))
        if rec:  # ActorRNN/CriticRNN: Dense(FC) relu, GRU, Dense(GRU_HIDDEN_DIM) relu, head
            put("ACTIVATION", "activation", "relu")
            put("FC_DIM_SIZE", "hidden", [peer["FC_DIM_SIZE"], peer["GRU_HIDDEN_DIM"]])
            put("GRU_HIDDEN_DIM", "gru_hidden", peer["GRU_HIDDEN_DIM"])
            put("(ActorRNN)", "recurrent", True)
        else:  # ActorCritic: two 64-wide layers in each torso
            put("ACTIVATION", "activation", peer["ACTIVATION"])
            put("(ActorCritic)", "hidden", [64, 64])
            put("(ActorCritic)", "recurrent", False)
        put("(no value normalisation)", "value_norm", False)
        put("(obs without agent ids)", "agent_id", False)
        # None: none for IPPO's local critic; MAPPO's central critic must take them here
        put("(critic without agent ids)", "critic_agent_id", None)
        put("(one network for all agents)", "parameter_sharing", "all")
        put("(advantages normalised)", "advantage_norm", True)
        put("(squared value error)", "huber_delta", None)
        put("(no layer norm)", "layer_norm", False)
        put("(no input norm)", "feature_norm", False)
        put("(raw rewards)", "reward_scale", 1.0)
    else:
        put("NUM_ENVS", "num_envs", peer["NUM_ENVS"])
        put("NUM_STEPS", "rollout_length", MARL_EPISODE)  # one whole episode per env
        put("NUM_EPOCHS", "train_steps", peer["NUM_EPOCHS"])
        put("BUFFER_SIZE", "buffer_size", peer["BUFFER_SIZE"])
        put("BUFFER_BATCH_SIZE", "batch_size", peer["BUFFER_BATCH_SIZE"])
        put("HIDDEN_SIZE", "hidden", [peer["HIDDEN_SIZE"]])
        put("HIDDEN_SIZE", "gru_hidden", peer["HIDDEN_SIZE"])
        put("(RNNQNetwork)", "recurrent", True)
        put("(RNNQNetwork)", "activation", "relu")
        put("MIXER_EMBEDDING_DIM", "mixing_embed_dim", peer["MIXER_EMBEDDING_DIM"])
        put("MIXER_HYPERNET_HIDDEN_DIM", "hypernet_embed", peer["MIXER_HYPERNET_HIDDEN_DIM"])
        put("(HyperNetwork)", "hypernet_layers", 2)
        put("(no state norm)", "state_norm", False)
        put("MIXER_INIT_SCALE", "mixer_init_scale", peer["MIXER_INIT_SCALE"])
        put("EPS_START", "epsilon_start", peer["EPS_START"])
        put("EPS_FINISH", "epsilon_end", peer["EPS_FINISH"])
        put("EPS_DECAY", "epsilon_steps", int(peer["EPS_DECAY"] * budget))
        put("TARGET_UPDATE_INTERVAL", "target_update_interval", peer["TARGET_UPDATE_INTERVAL"])
        put("TAU", "tau", None if peer["TAU"] == 1 else peer["TAU"])
        put("LR", "lr", peer["LR"])
        put("LR_LINEAR_DECAY", "anneal_lr", bool(peer["LR_LINEAR_DECAY"]))
        put("(radam)", "optimizer", "radam")
        put("MAX_GRAD_NORM", "max_grad_norm", peer["MAX_GRAD_NORM"])
        put("GAMMA", "gamma", peer["GAMMA"])
        put("(one-step targets)", "td_lambda", 0.0)
        put("(double Q)", "double_q", True)
        put("(CTRolloutManager agent ids)", "agent_id", True)
        put("(no last action)", "last_action", False)
        put("(global reward = sum)", "reward_scale", float(n_agents))
        put("(raw rewards)", "standardise_rewards", False)
        put("(one network for all agents)", "parameter_sharing", "all")
        put("(no layer norm)", "layer_norm", False)
        put("(no input norm)", "feature_norm", False)
        put("(fixed-length episodes)", "pack_episodes", 1)
    return {r[2]: r[3] for r in rows}, rows


def marl_program(train: Any, updates: int) -> Callable[[jax.Array], dict[str, jax.Array]]:
    """init + all updates of one seed in one program (as the peer's `train`), returning the
    per-update training-return metrics."""
    keep = ("train/return_mean", "train/episodes")

    def fn(key: jax.Array) -> dict[str, jax.Array]:
        def body(state: Any, _: None) -> tuple[Any, dict[str, jax.Array]]:
            state, metrics = train.step(state)
            return state, {k: metrics[k] for k in keep}

        _, metrics = jax.lax.scan(body, train.init(key), None, length=updates)
        return metrics

    return fn


def run_marl(make: Callable, env: Any, cfg: dict, budget: int, key: jax.Array, tag: str) -> dict:
    steps_per_update = probe_learner(make, env, cfg).steps_per_update
    updates = budget // steps_per_update
    train = make(env, cfg, updates)
    t0 = time.perf_counter()
    compiled = jax.jit(marl_program(train, updates)).lower(key).compile()
    compile_s = time.perf_counter() - t0
    log(f"{tag}: compiled in {compile_s:.1f}s, training {updates} updates")
    t0 = time.perf_counter()
    out = jax.device_get(jax.block_until_ready(compiled(key)))
    train_s = time.perf_counter() - t0
    episodes = np.asarray(out["train/episodes"], np.float64)
    ret = np.asarray(out["train/return_mean"], np.float64)
    return {
        "updates": updates,
        "steps_per_update": steps_per_update,
        "compile_s": compile_s,
        "train_s": train_s,
        "raw": np.where(episodes > 0, ret, np.nan),
        "weights": episodes,
    }


# --- curves, statistics, output ----------------------------------------------------------------


def on_grid(ends: np.ndarray, values: np.ndarray, weights: np.ndarray, grid: np.ndarray) -> list:
    """Mean of the updates ending in the window (g - w, g] before each grid point g, w = the
    grid spacing or one update, whichever is longer (None where no update ended there)."""
    width = max(float(grid[0]), float(ends[0]))
    out = []
    for g in grid:
        sel = (ends > g - width) & (ends <= g) & np.isfinite(values) & (weights > 0)
        out.append(float(np.average(values[sel], weights=weights[sel])) if sel.any() else None)
    return out


def summarise_seed(run: dict, scale: float, grid: np.ndarray, final_frac: float) -> dict:
    values = run["raw"] * scale
    weights = run.get("weights", np.ones_like(values))
    ends = (np.arange(run["updates"]) + 1) * run["steps_per_update"]
    total = int(ends[-1])
    valid = np.isfinite(values) & (weights > 0)
    last = valid & (ends > (1 - final_frac) * total)
    if not last.any():  # no episode ended in the tail: the last update where one did
        last = valid & (np.arange(len(ends)) == np.flatnonzero(valid)[-1])
    steps_s = total / run["train_s"]
    return {
        "updates": run["updates"],
        "env_steps": total,
        "steps_per_update": run["steps_per_update"],
        "compile_s": round(run["compile_s"], 2),
        "train_s": round(run["train_s"], 3),
        "s_per_update": run["train_s"] / run["updates"],
        "steps_per_s": steps_s,
        "final_return": float(np.average(values[last], weights=weights[last])),
        "final_updates": int(last.sum()),
        "curve": on_grid(ends, values, weights, grid),
    }


def side_summary(seeds: list[dict]) -> dict:
    finals = np.asarray([s["final_return"] for s in seeds])
    mean, low, high = mean_ci(finals, reps=10_000)
    return {
        "final_mean": mean,
        "final_ci95": [low, high],
        "steps_per_s": float(np.mean([s["steps_per_s"] for s in seeds])),
        "s_per_update": float(np.mean([s["s_per_update"] for s in seeds])),
    }


def verdict(marl: dict, peer: dict, seeds: int) -> str:
    """The project's rule on two sides' final returns: overlapping 95% intervals are "level";
    apart, the side ahead, said as a lean where fewer than `MIN_SEEDS` seeds a side decide
    nothing (a bootstrap interval over three seeds cannot be wider than their values)."""
    (m_lo, m_hi), (p_lo, p_hi) = marl["final_ci95"], peer["final_ci95"]
    if m_lo <= p_hi and p_lo <= m_hi:
        return "level"
    side = "marl" if m_lo > p_hi else "JaxMARL"
    if seeds < MIN_SEEDS:
        return f"leans {side} ({seeds} seeds a side)"
    return f"{side} ahead"


def markdown(record: dict) -> str:
    n = record["seeds"]
    lines = [
        f"# marl vs JaxMARL baselines on MPE simple spread ({record['budget']:,} env steps, "
        f"{n} seed{'s' * (n > 1)})",
        "",
        f"JaxMARL {record['jaxmarl']['commit'] or 'unknown commit'} (package "
        f"{record['versions']['jaxmarl']}) vs marl {record['versions']['marl']}; "
        f"{record['machine']['summary']}. Training-episode return per agent per "
        f"{MARL_EPISODE}-step episode, mean of the last {record['final_fraction']:.0%} of "
        f"training; 95% bootstrap CI over seeds{' (one seed: the point)' * (n == 1)}. "
        "Verdict: level where the intervals overlap; apart, the side ahead, a lean with fewer "
        f"than {MIN_SEEDS} seeds a side. "
        "Steps/s: env steps per second of the training program, compile excluded.",
        "",
        "| learner | JaxMARL final (95% CI) | marl final (95% CI) | verdict | JaxMARL steps/s "
        "| marl steps/s | marl/JaxMARL | JaxMARL ms/update | marl ms/update |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for algo, rec in record["learners"].items():
        if "summary" not in rec:
            continue
        p, m, s = rec["jaxmarl"]["summary"], rec["marl"]["summary"], rec["summary"]
        lines.append(
            f"| {algo} | {p['final_mean']:.2f} [{p['final_ci95'][0]:.2f}, "
            f"{p['final_ci95'][1]:.2f}] | {m['final_mean']:.2f} [{m['final_ci95'][0]:.2f}, "
            f"{m['final_ci95'][1]:.2f}] | {s['verdict']} | {p['steps_per_s']:,.0f} | "
            f"{m['steps_per_s']:,.0f} | {s['speed_ratio']:.2f} | "
            f"{1e3 * p['s_per_update']:.1f} | {1e3 * m['s_per_update']:.1f} |"
        )
    lines += ["", "JaxMARL settings marl cannot express (what they change):", ""]
    for algo, rec in record["learners"].items():
        lines.append(f"- **{algo}**")
        lines += [f"  - {u}" for u in rec["marl"]["unexpressed"]]
    lines += ["", f"Command: `{record['command']}`", ""]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    devices = [str(d) for d in jax.devices()]
    return {
        "host": platform.node(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "jax_devices": devices,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_average": list(os.getloadavg()),
        "summary": f"{cpu}, {os.cpu_count()} cores, {jax.default_backend()}",
    }


def summarise_sides(rec: dict) -> None:
    """Both sides' summaries over the seeds run so far, the verdict and the speed ratio."""
    ps, ms = side_summary(rec["jaxmarl"]["seeds"]), side_summary(rec["marl"]["seeds"])
    rec["jaxmarl"]["summary"], rec["marl"]["summary"] = ps, ms
    rec["summary"] = {
        "verdict": verdict(ms, ps, min(len(rec["marl"]["seeds"]), len(rec["jaxmarl"]["seeds"]))),
        "speed_ratio": ms["steps_per_s"] / ps["steps_per_s"],
    }


def report(tag: str, seeds: list[dict], seed: dict) -> None:
    """Keep one seed's summary and log it, with the load on the machine while it ran."""
    seed["load_average"] = list(os.getloadavg())
    seeds.append(seed)
    log(
        f"{tag}: {seed['env_steps']:,} steps in {seed['train_s']:.1f}s "
        f"({seed['steps_per_s']:,.0f} steps/s, {1e3 * seed['s_per_update']:.1f} ms/update), "
        f"final return {seed['final_return']:.2f}, load {seed['load_average'][0]:.2f}"
    )


def write(record: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, record)
    out.with_suffix(".md").write_text(markdown(record))


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jaxmarl", type=Path, help="JaxMARL repository checkout (needed to train)")
    p.add_argument("--algos", default="ippo,mappo,qmix", help="comma-separated: ippo,mappo,qmix")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budget", type=float, default=2e6, help="env steps per seed and side")
    p.add_argument("--points", type=int, default=20, help="curve grid points")
    p.add_argument("--final-fraction", type=float, default=0.05, help="tail averaged")
    p.add_argument("--out", type=Path, default=ROOT / "results/fidelity/jaxmarl_spread.json")
    p.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="combine the records of separate runs (one or more learners each, same budget and "
        "seeds) into --out, without training",
    )
    args = p.parse_args(argv)
    if args.merge:
        return args
    if args.jaxmarl is None:
        p.error("--jaxmarl PATH (a JaxMARL repository checkout) is needed to train")
    args.algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    bad = sorted(set(args.algos) - set(PEERS))
    if bad:
        p.error(f"unknown learner(s) {', '.join(bad)}; valid: {', '.join(PEERS)}")
    if not (args.jaxmarl / "baselines").is_dir():
        p.error(f"{args.jaxmarl} has no baselines/ folder (a JaxMARL repository checkout)")
    args.budget = int(args.budget)
    return args


def merge(paths: list[Path], out: Path) -> None:
    """One record (and its table) from several runs' records: their learners side by side,
    each with its own command, machine load and the seeds it ran."""
    records = [json.loads(p.read_text()) for p in paths]
    first = records[0]
    for r in records[1:]:
        for key in ("budget", "seeds", "final_fraction", "env", "unit"):
            if r[key] != first[key]:
                sys.exit(f"jaxmarl_compare --merge: {key} differs: {first[key]!r} vs {r[key]!r}")
    merged = {**first, "learners": {}, "command": "; ".join(r["command"] for r in records)}
    for r in records:
        for algo, rec in r["learners"].items():
            # a learner merged before keeps the command and date of the run that trained it
            merged["learners"][algo] = {
                **rec,
                "command": rec.get("command", r["command"]),
                "created": rec.get("created", r["created"]),
            }
            if "summary" in rec:  # the verdict again, by the current rule
                n = min(len(rec["marl"]["seeds"]), len(rec["jaxmarl"]["seeds"]))
                verdict_now = verdict(rec["marl"]["summary"], rec["jaxmarl"]["summary"], n)
                merged["learners"][algo]["summary"] = {**rec["summary"], "verdict": verdict_now}
    write(merged, out)
    log(f"merged {len(paths)} records into {out} and {out.with_suffix('.md')}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.merge:
        merge(args.merge, args.out)
        return
    path = args.jaxmarl.resolve()
    needs = ["jaxmarl"] + (["flashbax"] if "qmix" in args.algos else [])
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:  # the peer's own requirements (`pip install -e ".[peers]" flashbax==0.1.3`)
        sys.exit(f"jaxmarl_compare: the JaxMARL scripts need {', '.join(missing)}; install them")
    env = marl.make(ENV_ID)
    n_agents = env.spec.num_agents
    scale = (1.0 / n_agents) * MARL_EPISODE / PEER_EPISODE
    grid = np.linspace(args.budget / args.points, args.budget, args.points).round().astype(int)
    files = [f for a in args.algos for f in [PEERS[a]["script"], *PEERS[a]["configs"]]]
    peer_prov = provenance(path, files)
    import jaxmarl  # the installed package the peer's scripts run against

    record: dict[str, Any] = {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "budget": args.budget,
        "seeds": args.seeds,
        "final_fraction": args.final_fraction,
        "env": {"marl": ENV_ID, "jaxmarl": PEER_ENV, "num_agents": n_agents},
        "episode_steps": {"marl": MARL_EPISODE, "jaxmarl": PEER_EPISODE},
        "unit": f"training-episode return per agent per {MARL_EPISODE}-step episode",
        "conversion": CONVERSION,
        "grid": grid.tolist(),
        "jaxmarl": {
            **peer_prov,
            "package_file": jaxmarl.__file__,
            "package_versions": {m: metadata.version(m) for m in needs},
            "wandb": "stand-in module",
        },
        "versions": versions(),
        "machine": machine(),
        "learners": {},
    }
    log(
        f"JaxMARL {peer_prov['commit']} (tree clean: {peer_prov['tree_clean']}), package "
        f"{jaxmarl.__version__} at {Path(jaxmarl.__file__).parent}"
    )
    for algo in args.algos:
        cfg = peer_config(path, algo, args.budget, args.seeds)
        mcfg, rows = marl_config(algo, cfg, args.budget, n_agents)
        log(f"{algo}: JaxMARL {PEERS[algo]['script']} vs marl '{algo}'; mapping:")
        for pk, pv, mk, mv in rows:
            print(f"    {pk:>28} = {pv!s:<10} -> {mk} = {mv}", flush=True)
        print("  not expressible in marl:", flush=True)
        for u in UNEXPRESSED[algo]:
            print(f"    - {u}", flush=True)
        rec = record["learners"][algo] = {
            "jaxmarl": {
                "script": PEERS[algo]["script"],
                "configs": PEERS[algo]["configs"],
                "config": cfg,
                "metric": PEER_METRIC[algo],
                "seed_keys": f"jax.random.split(jax.random.PRNGKey({cfg['SEED']}), {args.seeds})",
                "seeds": [],
            },
            "marl": {
                "learner": algo,
                "env": ENV_ID,
                "config": mcfg,
                "mapping": rows,
                "unexpressed": UNEXPRESSED[algo],
                "seed_keys": f"jax.random.split(jax.random.key(0), {args.seeds})",
                "seeds": [],
            },
        }
        module = load_peer(path, algo)
        make = marl.algorithm(algo)
        peer_keys = jax.random.split(jax.random.PRNGKey(cfg["SEED"]), args.seeds)
        marl_keys = jax.random.split(jax.random.key(0), args.seeds)
        for i in range(args.seeds):  # sides alternate, so any load on the machine hits both
            tag = f"{algo} JaxMARL seed {i + 1}/{args.seeds}"
            run = run_peer(module, algo, cfg, peer_keys[i], tag)
            rec["jaxmarl"]["derived"] = run.pop("derived")
            report(
                tag, rec["jaxmarl"]["seeds"], summarise_seed(run, scale, grid, args.final_fraction)
            )
            tag = f"{algo} marl seed {i + 1}/{args.seeds}"
            run = run_marl(make, env, mcfg, args.budget, marl_keys[i], tag)
            report(tag, rec["marl"]["seeds"], summarise_seed(run, 1.0, grid, args.final_fraction))
            summarise_sides(rec)
            write(record, args.out)  # after every pair of seeds: a killed run keeps them
    table = markdown(record)
    print("\n" + table, flush=True)
    log(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
