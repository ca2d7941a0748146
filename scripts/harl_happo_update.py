"""HAPPO's sequential actor update on one batch, marl's beside HARL's own code (Box actions).

    pip install torch==2.13.0     # HARL's framework (CPU build)
    python scripts/harl_happo_update.py --harl PATH_TO_HARL_CHECKOUT [--task TASK] [--epochs 5]

marl collects one rollout of HAPPO on a continuous task (default: v1's pathfinding cell) and
computes its team advantages; then, agent after agent in one fixed order, marl's
`happo.sequential_update` and HARL's `HAPPO.train` (harl/algorithms/actors/happo.py, fed through
HARL's `OnPolicyActorBuffer`, EP state) update the same actor weights on the same samples, and
the factor is compounded as HARL's `OnPolicyHARunner.train` does. Printed per agent: the largest
difference between the two updated parameter sets (relative to the update's size) and between
the factors the next agent is weighted by.

The networks are made equal: marl's actor with `action_std=harl` (HARL's `DiagGaussian`), HARL's
MLP without the LayerNorm its `MLPLayer` puts after every activation (marl's MLP has none at
v1's settings), one minibatch (HARL shuffles samples, marl environments: the same mean), no
gradient clipping in effect (max_grad_norm large), no learning-rate schedule. What is compared
is the update rule: ratio, clip, factor, entropy, advantage normalisation and the optimiser.
HARL is imported from `--harl` (its `harl.envs` package, which needs every simulator, is not
executed); nothing of it is copied here.

Feeds `results/fidelity.md` (HARL: HAPPO's Box-action update beside HARL's code).
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

from marl.learning.xla import configure_xla

configure_xla()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import marl  # noqa: E402
from marl.algorithms import happo  # noqa: E402
from marl.algorithms.ppo import Networks, collect, make_optimizer  # noqa: E402
from marl.core.wrappers import training_env  # noqa: E402
from marl.run.saved.crossplay import parse_task  # noqa: E402

TASK = "pathfinding/random_grid[density=0.15,num_agents=8]"


class Box:  # what HARL reads of a gym space: its class name and shape
    def __init__(self, dim: int):
        self.shape = (dim,)


def import_harl(path: Path):
    """HARL's HAPPO and actor buffer from a checkout at `path`."""
    sys.path.insert(0, str(path))
    import harl

    envs = types.ModuleType("harl.envs")  # its __init__ imports every simulator's logger
    envs.__path__ = [str(Path(harl.__file__).parent / "envs")]
    sys.modules["harl.envs"] = envs
    from harl.algorithms.actors.happo import HAPPO
    from harl.common.buffers.on_policy_actor_buffer import OnPolicyActorBuffer

    return HAPPO, OnPolicyActorBuffer


def harl_args(cfg, t: int, b: int) -> dict:
    """HARL's model, algorithm and buffer arguments for marl's `cfg`."""
    return {
        "hidden_sizes": list(cfg.hidden),
        "activation_func": cfg.activation,
        "use_feature_normalization": False,
        "initialization_method": "orthogonal_",
        "gain": 0.01,
        "use_naive_recurrent_policy": False,
        "use_recurrent_policy": False,
        "recurrent_n": 1,
        "data_chunk_length": 10,
        "std_x_coef": 1.0,
        "std_y_coef": 0.5,
        "lr": cfg.lr,
        "opti_eps": 1e-5,
        "weight_decay": 0,
        "clip_param": cfg.clip_eps,
        "ppo_epoch": cfg.epochs,
        "actor_num_mini_batch": 1,
        "entropy_coef": cfg.ent_coef,
        "use_max_grad_norm": True,
        "max_grad_norm": cfg.max_grad_norm,
        "use_policy_active_masks": True,
        "action_aggregation": "prod",
        "episode_length": t,
        "n_rollout_threads": b,
    }


def load_weights(actor, params, agent: int) -> None:
    """marl's actor parameters of `agent` into HARL's StochasticPolicy (its MLP's LayerNorms
    replaced by identities)."""
    import torch

    p = jax.tree.map(lambda x: np.asarray(x[agent]), params)["params"]
    fc = actor.base.mlp.fc
    linears = [m for m in fc if isinstance(m, torch.nn.Linear)]
    for i, m in enumerate(fc):
        if isinstance(m, torch.nn.LayerNorm):
            fc[i] = torch.nn.Identity()
    dense = [p["torso"]["MLP_0"][f"Dense_{i}"] for i in range(len(linears))]
    layers = [*zip(linears, dense, strict=True), (actor.act.action_out.fc_mean, p["head"])]
    with torch.no_grad():
        for lin, d in layers:
            lin.weight.copy_(torch.from_numpy(d["kernel"].T.copy()))
            lin.bias.copy_(torch.from_numpy(d["bias"].copy()))
        actor.act.action_out.log_std.copy_(torch.from_numpy(p["log_std"].copy()))


def read_weights(actor) -> list[np.ndarray]:
    """HARL's actor parameters in marl's order: dense kernels and biases, head, log_std."""
    import torch

    lins = [m for m in actor.base.mlp.fc if isinstance(m, torch.nn.Linear)]
    lins.append(actor.act.action_out.fc_mean)
    out = []
    for lin in lins:
        out += [lin.weight.detach().numpy().T, lin.bias.detach().numpy()]
    return [*out, actor.act.action_out.log_std.detach().numpy()]


def marl_weights(params, agent: int, layers: int) -> list[np.ndarray]:
    p = jax.tree.map(lambda x: np.asarray(x[agent]), params)["params"]
    out = []
    for i in range(layers):
        d = p["torso"]["MLP_0"][f"Dense_{i}"]
        out += [d["kernel"], d["bias"]]
    return [*out, p["head"]["kernel"], p["head"]["bias"], p["log_std"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harl", type=Path, required=True, help="a HARL checkout (PKU-MARL/HARL)")
    ap.add_argument("--task", default=TASK)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import torch

    torch.manual_seed(args.seed)
    HAPPO, Buffer = import_harl(args.harl)

    task = parse_task(args.task)
    env = marl.make(task.env_id, **task.kwargs)
    if env.spec.discrete:
        raise SystemExit(f"{args.task} has discrete actions; this check is for Box actions")
    cfg = happo.config(
        {"action_std": "harl", "epochs": args.epochs, "num_minibatches": 1, "lr": 5e-4}
        | {"anneal_lr": False, "max_grad_norm": 1e9}
    )
    train = happo.make_train(env, cfg)
    nets = Networks(env, cfg, team_critic=True)
    state = jax.jit(train.init)(jax.random.key(args.seed))
    h0 = state.actor_carry
    state, ro, _ = jax.jit(lambda s: collect(nets, training_env(env), cfg, s))(state)
    adv, _ = happo.team_advantages(cfg, state.value_norm, ro)
    team_adv = np.asarray(adv)  # [T, B], before HAPPO's per-agent normalisation
    adv_n = happo.per_agent_normalized(jnp.broadcast_to(adv[..., None], ro.alive.shape), ro.alive)
    n = env.spec.num_agents
    order = jnp.arange(n, dtype=jnp.int32)
    tx = make_optimizer(cfg, cfg.lr, None)
    opt = jax.vmap(tx.init)(state.actor_params)
    new_params, _, factors, _ = jax.jit(
        lambda p, o: happo.sequential_update(
            nets, cfg, tx, p, o, ro, adv_n, h0, order, jax.random.key(1)
        )
    )(state.actor_params, opt)
    factors = np.asarray(factors)  # [N, T, B]: the weight each agent in the order saw

    t, b = ro.alive.shape[:2]
    hargs = harl_args(cfg, t, b)
    obs, actions = np.array(ro.actor_in), np.array(ro.action)  # writable: torch shares them
    alive = np.asarray(ro.alive)
    factor = np.ones((t, b, 1), np.float32)
    layers = len(cfg.hidden)
    print(f"{args.task}: {n} agents, {t} x {b} samples each, {cfg.epochs} epochs, one batch")
    print("| agent | max abs param diff | / max abs update | max rel factor diff (next) |")
    print("|---|---|---|---|")
    worst = 0.0
    for i in range(n):
        algo = HAPPO(hargs, Box(obs.shape[-1]), Box(actions.shape[-1]))
        load_weights(algo.actor, state.actor_params, i)
        buf = Buffer(hargs, Box(obs.shape[-1]), Box(actions.shape[-1]))
        buf.obs[:-1] = obs[:, :, i]
        buf.actions[:] = actions[:, :, i]
        buf.active_masks[:-1] = alive[:, :, i, None]
        flat_obs = torch.from_numpy(obs[:, :, i].reshape(t * b, -1))
        flat_act = torch.from_numpy(actions[:, :, i].reshape(t * b, -1))
        masks = np.ones((t * b, 1), np.float32)
        rnn = np.zeros((t * b, 1, cfg.hidden[-1]), np.float32)

        def log_probs(algo=algo, flat_obs=flat_obs, flat_act=flat_act, masks=masks, rnn=rnn):
            with torch.no_grad():
                lp, _, _ = algo.evaluate_actions(flat_obs, rnn, flat_act, masks, None, None)
            return lp.numpy()

        old = log_probs()
        buf.action_log_probs[:] = old.reshape(t, b, -1)
        buf.update_factor(factor)
        algo.train(buf, team_adv[..., None].copy(), "EP")
        new = log_probs()
        theirs = read_weights(algo.actor)
        ours = marl_weights(new_params, i, layers)
        before = marl_weights(state.actor_params, i, layers)
        diff = max(float(np.max(np.abs(a - c))) for a, c in zip(theirs, ours, strict=True))
        step = max(float(np.max(np.abs(c - z))) for c, z in zip(ours, before, strict=True))
        factor = factor * np.prod(np.exp(new - old), axis=-1).reshape(t, b, 1)
        nxt = factors[i + 1] if i + 1 < n else None
        rel = float(np.max(np.abs(factor[..., 0] - nxt) / np.abs(nxt))) if nxt is not None else 0.0
        worst = max(worst, diff / step)
        print(f"| {i} | {diff:.2e} | {diff / step:.2e} | {rel:.2e} |")
    print(f"largest parameter difference, relative to the update: {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
