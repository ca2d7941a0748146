"""`marl crossplay`: saved policies of different runs meet head to head.

Every pair of players plays on fixed evaluation keys, every seed against every seed, each pair
in both seats (`marl.learning.contest.play`); the scores become a win/draw/loss table, a score
matrix and Bradley-Terry ratings with bootstrap intervals over seeds
(`marl.results.ratings`), written as `crossplay.json` (and `crossplay.png`, the matrix) in
`<out>/<family>/<task>/`, where the leaderboard's competitive section reads them.

A player is a finished run directory (every seed's final parameters, or with `--best` its best
evaluated ones) or a reference policy of the task, `scripted` or `random` (one "seed"). Final is
the default because a contest run is trained and evaluated against itself: its evaluation return
measures how the two sides fare against each other, not a side's strength, and can peak before
either side has learned (on battle64 MF-AC's best parameters came from steps 0 to 2e5 of 8e5).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.results.files import write_json
from marl.results.protocol import split_env_id, task_name
from marl.results.ratings import crossplay_table
from marl.run.errors import UsageError

RECORD = "crossplay.json"
FIGURE = "crossplay.png"
REFERENCES = ("scripted", "random")


@dataclass
class Player:
    name: str
    source: str  # a run directory, or "scripted" / "random"
    algo: str
    policy: Policy
    params: Any  # [seeds, ...]
    seeds: int


@dataclass
class Task:
    env_id: str
    kwargs: dict[str, Any]

    @property
    def name(self) -> str:
        """`family/task[non-default keywords]`, as records and run folders name it."""
        from marl.core.registry import env_kwargs

        family, _ = split_env_id(self.env_id)
        return f"{family}/{task_name(self.env_id, self.kwargs, env_kwargs(self.env_id))}"


def parse_task(text: str) -> Task:
    """`"combat/3m[opponent=self_play]"` -> Task("combat/3m", {"opponent": "self_play"})."""
    m = re.fullmatch(r"([^\[\]]+)(?:\[(.*)\])?", text.strip())
    if m is None:
        raise UsageError(f"task {text!r}: expected family/name[key=value,...]")
    kwargs = {}
    for item in filter(None, (m.group(2) or "").split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"task {text!r}: {item!r} is not key=value")
        kwargs[key.strip()] = yaml.safe_load(value)
    return Task(m.group(1), kwargs)


def _reference(name: str, env: MultiAgentEnv) -> Player:
    from marl.baselines import NoScriptedPolicy, random_policy, scripted_policy

    try:
        policy = scripted_policy(env) if name == "scripted" else random_policy(env)
    except NoScriptedPolicy as e:
        raise UsageError(str(e)) from None
    return Player(name, name, name, policy, jnp.zeros((1,)), 1)


def _warn_initial_best(run_dir: Path) -> None:
    """A warning on stderr where a seed's best evaluation is its initial parameters: in
    self-play the evaluation return scores the run against itself, so it can peak before
    either side has learned (the default, final parameters, avoids it)."""
    from marl.results.protocol import META

    meta = run_dir / META
    steps = json.loads(meta.read_text()).get("best_step") if meta.is_file() else None
    untrained = [k for k, step in enumerate(steps or ()) if step == 0]
    if untrained:
        print(
            f"warning: {run_dir}: seed(s) {', '.join(map(str, untrained))} evaluated best at "
            "step 0 and play their initial parameters (a self-play return does not rank a "
            "side's strength; without --best the trained ones play)",
            file=sys.stderr,
        )


def load_players(
    sources: list[str], task: str | None = None, which: str = "final", allow: Sequence[str] = ()
):
    """(the contest env, its Task, the players) from run directories and reference names;
    `task` is needed only when every player is a reference; `allow`: import paths the user
    trusts in the runs' configs. Runs of different tasks, or of a task that is not a contest,
    are refused in one line."""
    from marl.core.registry import RegistryError
    from marl.learning.contest import NotAContest, check_contest
    from marl.run.saved.restore import SavedRunError, load
    from marl.run.train.lookup import make_env

    if len(sources) < 2:
        raise UsageError("crossplay needs at least two players (run directories or references)")
    runs, tasks = {}, {}
    for src in sources:
        if src in REFERENCES:
            continue
        try:
            saved = load(src, which, allow)
        except SavedRunError as e:
            raise UsageError(str(e)) from None
        runs[src] = saved
        tasks[src] = Task(saved.run.env_id, dict(saved.run.env_kwargs))
        if which == "best":
            _warn_initial_best(Path(saved.path))
    if task is not None:
        tasks["--task"] = parse_task(task)
    names = {src: t.name for src, t in tasks.items()}
    if len(set(names.values())) > 1:
        listed = "; ".join(f"{src}: {name}" for src, name in names.items())
        raise UsageError(f"players of different tasks cannot meet: {listed}")
    if not tasks:
        raise UsageError(
            "only reference players: name the task with --task (e.g. "
            "'combat/3m[opponent=self_play]')"
        )
    the_task = next(iter(tasks.values()))
    try:
        env = (
            next(iter(runs.values())).env
            if runs
            else make_env(the_task.env_id, dict(the_task.kwargs))
        )
        check_contest(env)
    except (NotAContest, RegistryError, TypeError, ValueError) as e:
        raise UsageError(str(e)) from None
    players, seen = [], {}
    for src in sources:
        if src in REFERENCES:
            player = _reference(src, env)
        else:
            saved = runs[src]
            algo = saved.run.record_algo
            player = Player(
                algo, str(saved.path), algo, saved.train.policy, saved.params, saved.seeds
            )
        seen[player.name] = seen.get(player.name, 0) + 1
        if seen[player.name] > 1:  # two runs of one learner: name them by their folder
            player.name = f"{player.name}#{seen[player.name]}"
        players.append(player)
    return env, the_task, players


def play_pair(env: MultiAgentEnv, a: Player, b: Player, key: jax.Array, episodes: int):
    """[seeds_a, seeds_b, 2, episodes]: A's score in every game against B (seat 0: A plays
    group 0), every seed of A against every seed of B on the same episode keys."""
    from marl.learning.contest import play

    def one(pa, pb):
        return play(env, a.policy, pa, b.policy, pb, key, episodes)

    program = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))
    return np.asarray(jax.device_get(program(a.params, b.params)), np.float64)


def crossplay(
    env: MultiAgentEnv,
    task: Task,
    players: list[Player],
    episodes: int = 32,
    seed: int = 0,
    which: str = "final",
    reps: int = 1000,
    log=print,
) -> dict[str, Any]:
    """Play every pair of `players` (see the module docstring); returns the record."""
    key = jax.random.key(seed)
    n = len(players)
    scores, pairs = {}, []
    for i in range(n):
        for j in range(i + 1, n):
            a, b = players[i], players[j]
            games = play_pair(env, a, b, key, episodes)
            per_seed = games.mean(axis=(2, 3))
            scores[(i, j)] = per_seed
            pairs.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "score": per_seed.tolist(),
                    "score_by_seat": games.mean(axis=(0, 1, 3)).tolist(),
                    "win": float(np.mean(games == 1.0)),
                    "draw": float(np.mean(games == 0.5)),
                    "loss": float(np.mean(games == 0.0)),
                    "games": int(games.size),
                }
            )
            log(
                f"{a.name} vs {b.name}: {a.seeds} x {b.seeds} seeds x 2 seats x {episodes} "
                f"episodes: win {pairs[-1]['win']:.2f}, draw {pairs[-1]['draw']:.2f}, "
                f"loss {pairs[-1]['loss']:.2f}"
            )
    seeds = [p.seeds for p in players]
    table = crossplay_table(scores, seeds, games=2 * episodes, reps=reps, seed=seed)
    return {
        "task": task.name,
        "env_id": task.env_id,
        "env_kwargs": task.kwargs,
        "groups": [g.name for g in env.spec.groups],
        "protocol": {"episodes": episodes, "seed": seed, "params": which, "greedy": True},
        "players": [
            {"name": p.name, "source": p.source, "algo": p.algo, "seeds": p.seeds} for p in players
        ],
        "pairs": pairs,
        "matrix": {
            k.removeprefix("matrix_") if k != "matrix" else "score": _nan_list(v)
            for k, v in table.items()
            if k.startswith("matrix")
        },
        "ratings": [
            {
                "name": p.name,
                "elo": float(table["elo"][k]),
                "low": float(table["elo_low"][k]),
                "high": float(table["elo_high"][k]),
            }
            for k, p in enumerate(players)
        ],
        "bootstrap": {"reps": reps, "level": 0.95, "resampled": "each player's seeds"},
    }


def _nan_list(a: np.ndarray) -> list:
    return [[None if np.isnan(x) else float(x) for x in row] for row in np.asarray(a)]


def record_dir(out: Path, task: Task) -> Path:
    return Path(out) / task.name


def write_record(record: dict[str, Any], folder: Path, command: str) -> list[Path]:
    """crossplay.json (with the command that regenerates it) and crossplay.png."""
    from marl.results.contests import head_to_head_figure

    folder.mkdir(parents=True, exist_ok=True)
    record = {**record, "command": command}
    write_json(folder / RECORD, record)
    head_to_head_figure(record, folder / FIGURE)
    return [folder / RECORD, folder / FIGURE]


def rating_lines(record: dict[str, Any]) -> list[str]:
    """The ratings, best first, as printed lines."""
    rows = sorted(record["ratings"], key=lambda r: -r["elo"])
    width = max(len(r["name"]) for r in rows)
    return [
        f"  {r['name']:<{width}}  Elo {r['elo']:+7.1f}  [{r['low']:+.1f}, {r['high']:+.1f}]"
        for r in rows
    ]


def score_lines(record: dict[str, Any]) -> list[str]:
    """Each pair's mean score (a draw counting half) with its bootstrap interval, as printed
    lines (`marl.results.contests.pair_scores`), first player first."""
    from marl.results.contests import pair_scores

    pairs = [(f"{a} vs {b}", *rest) for a, b, *rest in pair_scores(record)]
    width = max((len(p[0]) for p in pairs), default=0)
    return [
        f"  {p:<{width}}  {point:.3f}  [{low:.3f}, {high:.3f}]" for p, point, low, high in pairs
    ]
