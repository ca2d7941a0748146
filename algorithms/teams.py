"""One learner per side of a contest, trained together: e.g. MF-Q's army against IL's.

`algo=teams` with `side0: {name: mfq, ...}` and `side1: {name: il, ...}` (each side's learner
and its settings over that learner's shipped defaults) builds both learners, each on its own
side of the env (`marl.learning.sides.SideView`), where the other side is played by the other
learner's current policy (acting as it does while training: sampling, not greedy). One update
updates each learner on rollouts of its own environments, the one with the shorter rollout
several times (`balance`), so both take about as many env steps and the run's are the sum of
both learners' (`steps_per_update`). Evaluation, the saved parameters and
cross-play see one policy of the whole env (`sides.joined`): side 0's learner for group 0, side
1's for group 1. Training metrics are each learner's own, prefixed `side0/` and `side1/`.

Any learner may take a side, e.g. `side0: {name: ippo}` against `side1: {name: iql}` on
particle/adversary; each sees its side as a cooperative team of its own agents, with the env's
global state and metrics (the latter from group 0's point of view, as in the env).
"""

from __future__ import annotations

from typing import Any

import jax
from flax import struct

from marl.core.env import MultiAgentEnv
from marl.core.learner import Train
from marl.core.registry import algorithm
from marl.learning.learner_config import shipped
from marl.learning.sides import SideView, check_two_sides, joined
from marl.learning.training import probe_learner

SIDES = ("side0", "side1")


class TeamsState(struct.PyTreeNode):
    """Both learners' states (side 0's, side 1's)."""

    sides: tuple[Any, Any]


def side_configs(cfg: dict[str, Any] | None) -> tuple[tuple[str, dict[str, Any]], ...]:
    """`((learner, settings) of side 0, of side 1)` from `{side0: {name, ...}, side1: ...}`
    (a side it does not name: the shipped one's), or a one-line ValueError naming what is
    missing or unknown."""
    cfg = {**shipped("teams"), **(cfg or {})}
    cfg.pop("name", None)
    unknown = sorted(set(cfg) - set(SIDES))
    if unknown:
        raise ValueError(f"unknown teams key(s) {', '.join(unknown)}; valid: side0, side1")
    out = []
    for side in SIDES:
        settings = dict(cfg.get(side) or {})
        name = settings.pop("name", None)
        if not isinstance(name, str):
            raise ValueError(f"teams: {side}.name must name a learner (e.g. algo.{side}.name=mfq)")
        if name == "teams":
            raise ValueError(f"teams: {side} cannot be teams itself")
        out.append((name, settings))
    return tuple(out)


def label(cfg: dict[str, Any] | None) -> str:
    """How records name a teams run: its sides' learners, `side0+side1` (e.g. `mfq+il`)."""
    return "+".join(name for name, _ in side_configs(cfg))


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """Side 0's and side 1's learners (`cfg`: `{side0: {name, ...}, side1: {name, ...}}`)
    trained against each other on the contest `env`; a side `cfg` does not name is the shipped
    one's (`marl/conf/algo/teams.yaml`: MF-Q against IL)."""
    check_two_sides(env, "teams")
    sides = side_configs(cfg)
    builders = [algorithm(name) for name, _ in sides]

    def build(side: int, opponent: Any, params: Any) -> Train:
        name, settings = sides[side]
        try:
            return builders[side](SideView(env, side, opponent, params), settings, total_updates)
        except (TypeError, ValueError, KeyError) as e:
            raise ValueError(f"{SIDES[side]} ({name}): {e}") from None

    # a learner's policy depends on its side's spec and settings, not on its opponent
    policies = (build(0, None, None).policy, build(1, None, None).policy)
    learners = (build(0, policies[1], None), build(1, policies[0], None))

    def init(key: jax.Array) -> TeamsState:
        k0, k1 = jax.random.split(key)
        return TeamsState((learners[0].init(k0), learners[1].init(k1)))

    def params(state: TeamsState) -> tuple[Any, Any]:
        return learners[0].params(state.sides[0]), learners[1].params(state.sides[1])

    repeats = balance(learners[0].steps_per_update, learners[1].steps_per_update)

    def step(state: TeamsState) -> tuple[TeamsState, dict[str, jax.Array]]:
        current = params(state)
        out, metrics = [], {}
        for side in (0, 1):  # each against the other's parameters before this update
            train = build(side, policies[1 - side], current[1 - side])
            new, m = jax.lax.scan(
                lambda s, _, train=train: train.step(s), state.sides[side], None, repeats[side]
            )
            out.append(new)
            metrics.update({f"{SIDES[side]}/{k}": v.mean(0) for k, v in m.items()})
        return TeamsState(tuple(out)), metrics

    return Train(
        init=init,
        step=step,
        params=params,
        policy=joined(env.spec, *policies),
        steps_per_update=sum(
            r * t.steps_per_update for r, t in zip(repeats, learners, strict=True)
        ),
        # one env batch to split over devices only where both sides step the same number
        num_envs=learners[0].num_envs if learners[0].num_envs == learners[1].num_envs else 0,
    )


def balance(first: int, second: int) -> tuple[int, int]:
    """Updates of each learner per teams update, so both take about as many env steps: the one
    with the shorter rollout repeats its update `round(longer / shorter)` times (IPPO's 2,048
    steps against IQL's 64: 1 and 32)."""
    if first >= second:
        return 1, max(1, round(first / second))
    return max(1, round(second / first)), 1


def steps_per_update(env: MultiAgentEnv, cfg: dict[str, Any] | None = None) -> int:
    """Env steps one teams update takes, as `make_train`'s Train says, without building it:
    each side's update, the shorter repeated (`balance`), summed."""
    check_two_sides(env, "teams")
    steps = [
        _side_steps(env, side, name, settings)
        for side, (name, settings) in enumerate(side_configs(cfg))
    ]
    repeats = balance(*steps)
    return sum(r * s for r, s in zip(repeats, steps, strict=True))


def _side_steps(env: MultiAgentEnv, side: int, name: str, settings: dict[str, Any]) -> int:
    """Env steps one update of side `side`'s learner takes: what the learner says
    (`make_train.steps_per_update`), or for one that says nothing, its Train built to read it."""
    make = algorithm(name)
    view = SideView(env, side, None, None)
    said = getattr(make, "steps_per_update", None)
    try:
        return (
            said(view, settings)
            if said is not None
            else probe_learner(make, view, settings).steps_per_update
        )
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"{SIDES[side]} ({name}): {e}") from None


make_train.label = label  # records name a teams run by its sides' learners
make_train.steps_per_update = steps_per_update  # the run's length hangs on it (`marl train`)
