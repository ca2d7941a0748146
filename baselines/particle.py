"""Scripted particle (MPE) policies: hand-written controllers that read only each agent's own
observation (decentralised), jittable and vectorised over agents, for discrete and continuous
actions. They are the upper anchors of the per-task normalised score.

Movement is a PD controller on the agent's known dynamics (accel 5, damping 0.25, dt 0.1): the
desired acceleration `kp * delta - kd * vel` (delta: target relative position) is matched by the
nearest of the five discrete accelerations (no-op, -x, +x, -y, +y), or clipped into the
continuous action `u = (a2 - a1, a4 - a3)`.

`particle/spread` (and the good team of `particle/adversary`) sends agents to landmarks by the
assignment minimising the total squared agent-landmark distance, which every agent computes
identically from its own observation (brute force over assignments when there are at most
`MAX_PERMUTATIONS`, else greedy followed by pairwise swaps); it is fixed at the episode's first
step and kept in the policy carry. Spread agents park on their landmarks moved apart just enough
not to collide with each other (`separate`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import EnvSpec, MultiAgentEnv
from marl.core.learner import Policy

Array = jax.Array

ACCEL = 5.0  # the particle scenarios' default action force (mass 1)
DAMPING = 0.25
DT = 0.1
SPREAD_AGENT_SIZE = 0.15  # particle/spread agent radius: agents collide closer than 0.3
# extra gap kept between parked spread agents (discrete moves settle less precisely)
SPREAD_CLEARANCE = {True: 0.05, False: 0.01}
# The assignment minimises the summed squared distance: the reward sums distances over time, and
# the time to travel grows with the distance, so long trips cost about quadratically. On spread
# (320 episodes) this beat the plain distance sum by 3-6% of the team return.
SPREAD_COST_POWER = 2.0
MAX_PERMUTATIONS = 720  # brute-force assignment up to this many candidates (6 agents)
# the five discrete moves as unit accelerations
MOVES = np.array([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]], np.float32)


@dataclass(frozen=True)
class Gains:
    """PD gains of the movement controller: desired acceleration `kp * delta - kd * vel`."""

    kp: float = 80.0
    kd: float = 18.0


class NoScriptedPolicy(KeyError):
    """No scripted policy exists for an environment id (the message lists those that do)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# --- movement ---------------------------------------------------------------------------------
def move(delta: Array, vel: Array, gains: Gains, discrete: bool) -> Array:
    """Movement actions towards `delta` [..., 2] given velocity `vel` [..., 2].

    Returns int32 [...] (the discrete move whose acceleration is nearest the desired one) or
    float32 [..., 5] (the continuous movement vector in [0, 1]).
    """
    want = gains.kp * delta - gains.kd * vel
    if discrete:
        err = jnp.sum((want[..., None, :] - ACCEL * jnp.asarray(MOVES)) ** 2, axis=-1)
        return jnp.argmin(err, axis=-1).astype(jnp.int32)
    c = jnp.clip(want / ACCEL, -1.0, 1.0)
    pos, neg = jnp.maximum(c, 0.0), jnp.maximum(-c, 0.0)
    zero = jnp.zeros_like(c[..., 0])
    return jnp.stack([zero, neg[..., 0], pos[..., 0], neg[..., 1], pos[..., 1]], axis=-1)


def estimate_velocity(rel: Array, prev_rel: Array, prev_u: Array, start: Array) -> Array:
    """Own velocity from two successive relative positions of a fixed landmark.

    MPE integrates `p' = p + v dt; v' = (1 - damping) v + u dt` (mass 1), so the velocity now is
    `(1 - damping) (prev_rel - rel) / dt + prev_u dt`, exactly while nothing collides. Zero at
    an episode's start (agents start at rest).
    """
    vel = (1.0 - DAMPING) * (prev_rel - rel) / DT + prev_u * DT
    return jnp.where(start, 0.0, vel)


def _acceleration(actions: Array, discrete: bool) -> Array:
    """The acceleration [..., 2] that movement actions produce."""
    if discrete:
        return ACCEL * jnp.asarray(MOVES)[actions]
    return ACCEL * jnp.stack(
        [actions[..., 2] - actions[..., 1], actions[..., 4] - actions[..., 3]], axis=-1
    )


# --- assignment -------------------------------------------------------------------------------
def assign(agents: Array, landmarks: Array, power: float = SPREAD_COST_POWER) -> Array:
    """Agent -> landmark assignment minimising the total `distance ** power`.

    agents [N, 2] and landmarks [M, 2] in any common frame. Returns int32 [N]: each agent's
    landmark, distinct, or -1 for agents left over when N > M. The result is invariant to a
    translation of the frame, so every agent can compute it in its own frame.
    """
    n, m = agents.shape[0], landmarks.shape[0]
    sq = jnp.sum((agents[:, None, :] - landmarks[None, :, :]) ** 2, axis=-1)
    cost = sq if power == 2 else sq ** (0.5 * power)
    k = max(n, m)
    if math.perm(k, n) <= MAX_PERMUTATIONS:
        cols = np.array(list(itertools.permutations(range(k), n)), np.int32).reshape(-1, n)
        padded = jnp.pad(cost, ((0, 0), (0, k - m)))  # free "no landmark" columns
        total = jnp.sum(padded[np.arange(n)[None, :], cols], axis=-1)
        best = jnp.asarray(cols)[jnp.argmin(total)]
        return jnp.where(best < m, best, -1).astype(jnp.int32)
    return _swap_improve(cost, _greedy(cost))


def _greedy(cost: Array) -> Array:
    """Repeatedly match the closest free agent-landmark pair. Returns int32 [N] (-1 unmatched)."""
    n, m = cost.shape

    def body(_, c):
        left, out = c
        j, k = jnp.unravel_index(jnp.argmin(left), (n, m))
        return left.at[j, :].set(jnp.inf).at[:, k].set(jnp.inf), out.at[j].set(k)

    _, out = jax.lax.fori_loop(0, min(n, m), body, (cost, jnp.full((n,), -1, jnp.int32)))
    return out


def _swap_improve(cost: Array, target: Array, rounds: int | None = None) -> Array:
    """Apply the best improving swap of two agents' landmarks, `rounds` times (default N)."""
    n, m = cost.shape
    padded = jnp.pad(cost, ((0, 0), (0, 1)))  # column m: no landmark, cost 0
    rounds = n if rounds is None else rounds

    def body(_, t):
        col = jnp.where(t < 0, m, t)
        own = padded[jnp.arange(n), col]  # [N]
        cross = padded[:, col]  # [N, N]: agent a at b's landmark
        gain = own[:, None] + own[None, :] - cross - cross.T
        a, b = jnp.unravel_index(jnp.argmax(gain), (n, n))
        better = gain[a, b] > 1e-6
        swapped = t.at[a].set(t[b]).at[b].set(t[a])
        return jnp.where(better, swapped, t)

    return jax.lax.fori_loop(0, rounds, body, target)


def _with_self(others: Array, index: Array) -> Array:
    """[K+1, 2] positions in global order from the K others' relative positions (in global
    order without self) and self at the origin at `index`."""
    k = others.shape[0]
    if k == 0:
        return jnp.zeros((1, 2), others.dtype)
    j = jnp.arange(k + 1)
    slot = jnp.clip(j - (j > index), 0, k - 1)
    return jnp.where((j == index)[:, None], 0.0, others[slot])


def _spread_layout(spec: EnvSpec) -> tuple[int, int]:
    n = spec.num_agents
    m = (spec.obs_sizes[0] - 4 - 4 * (n - 1)) // 2
    return n, m


def _spread_row(o: Array, i: Array, n: int, m: int) -> Array:
    """[N] the full assignment agent i computes from its spread observation `o` alone."""
    lm = o[4 : 4 + 2 * m].reshape(m, 2)
    others = o[4 + 2 * m : 4 + 2 * m + 2 * (n - 1)].reshape(n - 1, 2)
    return assign(_with_self(others, i), lm)


def spread_assignments(obs: Array, num_landmarks: int) -> Array:
    """[N, N] int32: row i is the whole assignment agent i computes from `obs[i]` alone
    (particle/spread observations [N, obs_dim]); the rows agree when the agents agree."""
    n = obs.shape[0]
    return jax.vmap(lambda o, i: _spread_row(o, i, n, num_landmarks))(obs, jnp.arange(n))


# --- policies ---------------------------------------------------------------------------------
def _gather2(flat: Array, index: Array) -> Array:
    """Pair `index` of a flat [..., 2K] vector; zeros where index < 0."""
    pairs = flat.reshape(*flat.shape[:-1], -1, 2)
    got = jnp.take_along_axis(pairs, jnp.maximum(index, 0)[..., None, None], axis=-2)[..., 0, :]
    return jnp.where((index >= 0)[..., None], got, 0.0)


def separate(targets: Array, min_dist: float, iters: int = 8) -> Array:
    """Move targets [K, 2] apart until no two are closer than `min_dist` (symmetric pairwise
    pushes, `iters` rounds), so agents parked on nearby landmarks do not collide."""
    k = targets.shape[0]
    if k < 2:
        return targets
    off = jnp.asarray(~np.eye(k, dtype=bool))

    def body(_, t):
        diff = t[:, None, :] - t[None, :, :]
        d = jnp.sqrt(jnp.sum(diff**2, axis=-1) + 1e-12)
        push = jnp.where(off, jnp.maximum(min_dist - d, 0.0), 0.0)
        return t + 0.5 * jnp.sum((push / d)[..., None] * diff, axis=1)

    return jax.lax.fori_loop(0, iters, body, targets)


def _spread(spec: EnvSpec, gains: Gains, clearance: float | None = None) -> Policy:
    """Each agent carries the whole assignment it computed at the start ([N] per agent), and
    steers to its landmark, moved apart from the other targets by `2 * size + clearance`."""
    n, m = _spread_layout(spec)
    discrete = spec.discrete
    clearance = SPREAD_CLEARANCE[discrete] if clearance is None else clearance
    min_dist = 2 * SPREAD_AGENT_SIZE + clearance

    def initial_carry() -> Array:
        return jnp.full((n, n), -1, jnp.int32)

    def delta(o: Array, i: Array, plan: Array) -> Array:
        lm = o[4 : 4 + 2 * m].reshape(m, 2)
        agents = _with_self(o[4 + 2 * m : 4 + 2 * m + 2 * (n - 1)].reshape(n - 1, 2), i)
        targets = jnp.where((plan >= 0)[:, None], lm[jnp.maximum(plan, 0)], agents)
        return separate(targets, min_dist)[i]

    def act(
        params: Any, obs: Array, avail: Array, carry: Any, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Any]:
        idx = jnp.arange(n)
        plan = jnp.where(start, spread_assignments(obs, m), carry)
        d = jax.vmap(delta)(obs, idx, plan)
        return move(d, obs[:, :2], gains, discrete), plan

    return Policy(initial_carry, act)


def _simple(spec: EnvSpec, gains: Gains) -> Policy:
    """Straight to the landmark."""
    discrete = spec.discrete

    def act(
        params: Any, obs: Array, avail: Array, carry: Any, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Any]:
        return move(obs[:, 2:4], obs[:, :2], gains, discrete), carry

    return Policy(_no_carry, act)


def _decode(word: Array, landmark_rel: Array) -> Array:
    """Relative position of the landmark a word names (argmax); the landmarks' mean when
    silent (the first step), which minimises the expected squared distance."""
    pairs = landmark_rel.reshape(-1, 2)
    k = pairs.shape[0]
    idx = jnp.argmax(word[:k])
    return jnp.where(jnp.any(word != 0), pairs[idx], jnp.mean(pairs, axis=0))


def _speaker_listener(spec: EnvSpec, gains: Gains) -> Policy:
    """Speaker: says the goal's index (argmax of the goal colour). Listener: goes to the
    landmark the word names."""
    discrete = spec.discrete
    width = spec.action_dim

    def act(
        params: Any, obs: Array, avail: Array, carry: Any, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Any]:
        goal = jnp.argmax(obs[0, :3])
        listener = obs[1]
        mv = move(_decode(listener[8:11], listener[2:8]), listener[:2], gains, discrete)
        if discrete:
            return jnp.stack([goal, mv]).astype(jnp.int32), carry
        word = jnp.pad(jax.nn.one_hot(goal, 3), (0, width - 3))
        return jnp.stack([word, mv]).astype(jnp.float32), carry

    return Policy(_no_carry, act)


def _reference(spec: EnvSpec, gains: Gains) -> Policy:
    """Each agent says the index of the landmark the other must reach (argmax of the colour it
    sees) and goes to the landmark the other names."""
    discrete = spec.discrete
    dim_c = 10

    def act(
        params: Any, obs: Array, avail: Array, carry: Any, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Any]:
        word = jnp.argmax(obs[:, 8:11], axis=-1)  # the landmark the other agent must reach
        delta = jax.vmap(_decode)(obs[:, 11 : 11 + dim_c], obs[:, 2:8])
        mv = move(delta, obs[:, :2], gains, discrete)
        if discrete:
            return (mv + 5 * word).astype(jnp.int32), carry
        return jnp.concatenate([mv, jax.nn.one_hot(word, dim_c)], axis=-1), carry

    return Policy(_no_carry, act)


def _push(spec: EnvSpec, gains: Gains) -> Policy:
    """Good agent: to its goal. Adversary (goal unknown): to the landmark nearest the agent."""
    discrete = spec.discrete

    def act(
        params: Any, obs: Array, avail: Array, carry: Any, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Any]:
        adv, agent = obs[0], obs[1]
        lm = adv[2:6].reshape(2, 2)
        to_agent = adv[6:8]
        guess = jnp.argmin(jnp.sum((lm - to_agent) ** 2, axis=-1))
        delta = jnp.stack([lm[guess], agent[2:4]])
        vel = jnp.stack([adv[:2], agent[:2]])
        return move(delta, vel, gains, discrete), carry

    return Policy(_no_carry, act)


def _adversary(spec: EnvSpec, gains: Gains) -> Policy:
    """Good agents cover every landmark (min-distance assignment, so one sits on the goal);
    the adversary goes to its nearest landmark. The observations hold no velocity, so each
    agent estimates its own from how landmark 0 moved relative to it (kept in the carry)."""
    n = spec.num_agents
    g = n - 1  # good agents, as many as landmarks
    discrete = spec.discrete

    def initial_carry() -> dict[str, Array]:
        return {
            "target": jnp.full((n,), -1, jnp.int32),
            "rel": jnp.zeros((n, 2), jnp.float32),
            "u": jnp.zeros((n, 2), jnp.float32),
        }

    def good_target(o: Array, k: Array) -> Array:
        lm = o[2 : 2 + 2 * g].reshape(g, 2)
        rest = o[2 + 2 * g : 2 + 2 * g + 2 * (n - 1)].reshape(n - 1, 2)[1:]  # other goods
        return assign(_with_self(rest, k), lm)[k]

    def act(
        params: Any, obs: Array, avail: Array, carry: Any, start: Array, key: Array, greedy: Any
    ) -> tuple[Array, Any]:
        lm_adv = obs[0, : 2 * g].reshape(g, 2)
        adv_target = jnp.argmin(jnp.sum(lm_adv**2, axis=-1))
        goods = jax.vmap(good_target)(obs[1:], jnp.arange(g))
        target = jnp.where(start, jnp.concatenate([adv_target[None], goods]), carry["target"])
        lm = jnp.concatenate([obs[:1, : 2 * g], obs[1:, 2 : 2 + 2 * g]])  # [N, 2g]
        rel0 = lm[:, :2]
        vel = estimate_velocity(rel0, carry["rel"], carry["u"], start)
        mv = move(_gather2(lm, target), vel, gains, discrete)
        carry = {"target": target, "rel": rel0, "u": _acceleration(mv, discrete)}
        if not discrete:
            mv = mv.astype(jnp.float32)
        return mv, carry

    return Policy(initial_carry, act)


def _no_carry() -> Array:
    return jnp.zeros((), jnp.int32)


_SCRIPTED: dict[str, Callable[[EnvSpec, Gains], Policy]] = {
    "particle/simple": _simple,
    "particle/spread": _spread,
    "particle/speaker_listener": _speaker_listener,
    "particle/reference": _reference,
    "particle/push": _push,
    "particle/adversary": _adversary,
}


def scripted_ids() -> list[str]:
    """Environment ids that have a scripted policy, sorted."""
    return sorted(_SCRIPTED)


def scripted_policy(env: MultiAgentEnv, gains: Gains | None = None) -> Policy:
    """The scripted policy of `env` (by `env.spec.name`); `params` is ignored (pass None).

    Raises NoScriptedPolicy (a KeyError) naming the ids that have one.
    """
    name = env.spec.name
    if name not in _SCRIPTED:
        raise NoScriptedPolicy(
            f"no scripted policy for {name!r}; scripted: {', '.join(scripted_ids())}"
        )
    return _SCRIPTED[name](env.spec, gains or Gains())
