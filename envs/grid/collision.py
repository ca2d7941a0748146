"""How agents' moves resolve on the grid: POGEMA's three collision systems, as one part.

Every rule takes the padded obstacle grid, the agents' cells, their wanted cells (a cell plus
the move of the action: wait, up, down, left, right) and which agents are active (visible on
the grid), and returns the cells they occupy after the step. Inactive agents (an agent that
reached its goal under `on_target="finish"`) neither move nor block.

- ``priority`` (POGEMA's default): agents move one after another in index order; an agent
  moves when its wanted cell is free of obstacles and of agents at that moment, so an agent
  may step into a cell a lower-index agent has just left, but not one a higher-index agent
  has yet to leave. A `lax.scan` over the agents, as POGEMA's loop.
- ``block_both``: an agent moves when no agent stands on its wanted cell and no other agent
  wants it; nobody follows anybody, swaps and contests block every agent involved.
- ``soft``: moves resolve together: a move into an obstacle reverts; two agents swapping
  cells both revert; where several agents want one cell, the lowest-index one keeps its move
  and the others revert, unless an agent stays on that cell, when all revert; an agent that
  reverts stays, so the moves into its cell revert in turn (to a fixed point). Chains into
  vacated cells and rotations move. This is the outcome of POGEMA's sequential procedure
  (first-come reverts in reverse index order, with its cascades), computed in parallel.

Each rule also returns the agents' grid as POGEMA leaves it, which its observations read.
Under ``soft`` POGEMA moves the agents one after another without checks (each clears its old
cell, then marks its new one), so in a chain the cell an agent entered is cleared by the agent
that left it: the grid misses the agents that followed another. marl keeps that grid (the last
write to each cell, in index order), so observations equal POGEMA's.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

Array = jax.Array

# POGEMA's MOVES: wait, up (-x), down (+x), left (-y), right (+y); x is the row
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
RULES = ("priority", "block_both", "soft")


@dataclass(frozen=True)
class Collision:
    """The collision rule: ``priority``, ``block_both`` or ``soft`` (module docstring)."""

    rule: str = "priority"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown collision rule {self.rule!r}; valid: {', '.join(RULES)}")

    def __call__(
        self, obstacles: Array, pos: Array, actions: Array, active: Array
    ) -> tuple[Array, Array]:
        """([N, 2] int32 cells after the step, [Hp, Wp] bool the agents' grid as POGEMA leaves
        it). `obstacles` [Hp, Wp] bool (the padded grid), `pos` [N, 2] int32, `actions` [N]
        int32 in 0..4, `active` [N] bool."""
        want = pos + jnp.asarray(MOVES, jnp.int32)[actions]
        if self.rule == "priority":
            new = _priority(obstacles, pos, want, active)
        elif self.rule == "block_both":
            new = _block_both(obstacles, pos, want, active)
        else:
            new = _soft(obstacles, pos, want, active)
            return new, _written(obstacles.shape, pos, new, active)
        return new, occupancy(obstacles.shape, new, active)


def occupancy(shape: tuple[int, ...], pos: Array, active: Array) -> Array:
    """[Hp, Wp] bool: the cells of the active agents."""
    return jnp.zeros(shape, bool).at[pos[:, 0], pos[:, 1]].max(active)


def _written(shape: tuple[int, ...], old: Array, new: Array, active: Array) -> Array:
    """The grid after each active agent, in index order, cleared its old cell and marked its
    new one (POGEMA's `move_without_checks`): each cell holds its last write."""
    h, w = shape
    n = old.shape[0]
    i = jnp.arange(n, dtype=jnp.int32)
    cells = jnp.concatenate([_flat(old, w), _flat(new, w)])
    when = jnp.concatenate([2 * i, 2 * i + 1])  # a clear, then a mark
    when = jnp.where(jnp.concatenate([active, active]), when, -1)
    last = jnp.full(h * w, -1, jnp.int32).at[cells].max(when)
    return ((last >= 0) & (last % 2 == 1)).reshape(h, w)


def _flat(cells: Array, width: int) -> Array:
    return cells[..., 0] * width + cells[..., 1]


def _priority(obstacles: Array, pos: Array, want: Array, active: Array) -> Array:
    h, w = obstacles.shape
    occupied = jnp.zeros(h * w, bool).at[_flat(pos, w)].max(active)
    wall = obstacles.reshape(-1)

    def one(occ: Array, agent: tuple[Array, Array, Array]) -> tuple[Array, Array]:
        here, there, on = agent
        a, b = _flat(here, w), _flat(there, w)
        go = on & ~wall[b] & ~occ[b]
        occ = occ.at[a].set(occ[a] & ~go).at[b].set(occ[b] | go)
        return occ, jnp.where(go, there, here)

    _, new = jax.lax.scan(one, occupied, (pos, want, active))
    return new


def _block_both(obstacles: Array, pos: Array, want: Array, active: Array) -> Array:
    h, w = obstacles.shape
    a, b = _flat(pos, w), _flat(want, w)
    occupied = jnp.zeros(h * w, bool).at[a].max(active)
    claims = jnp.zeros(h * w, jnp.int32).at[b].add(active.astype(jnp.int32))
    go = active & ~occupied[b] & (claims[b] < 2) & ~obstacles.reshape(-1)[b]
    return jnp.where(go[:, None], want, pos)


def _soft(obstacles: Array, pos: Array, want: Array, active: Array) -> Array:
    h, w = obstacles.shape
    n = pos.shape[0]
    a, b = _flat(pos, w), _flat(want, w)
    index = jnp.arange(n)
    moving = active & (a != b) & ~obstacles.reshape(-1)[b]
    # a swap: i wants j's cell and j wants i's (both moving): both revert
    at = jnp.full(h * w, n, jnp.int32).at[jnp.where(active, a, h * w)].set(index, mode="drop")
    other = at[b]  # the active agent standing on i's wanted cell (n: none)
    swapped = (other < n) & (b[jnp.minimum(other, n - 1)] == a) & moving[jnp.minimum(other, n - 1)]
    moving = moving & ~swapped

    def revert(moving: Array) -> Array:
        stays = active & ~moving
        stayed_on = jnp.zeros(h * w, bool).at[a].max(stays)
        first = (
            jnp.full(h * w, n, jnp.int32).at[jnp.where(moving, b, h * w)].min(index, mode="drop")
        )
        return moving & ~stayed_on[b] & (first[b] == index)

    def changed(c: tuple[Array, Array]) -> Array:
        return jnp.any(c[0] != c[1])

    def body(c: tuple[Array, Array]) -> tuple[Array, Array]:
        return c[1], revert(c[1])

    _, moving = jax.lax.while_loop(changed, body, (moving, revert(moving)))
    return jnp.where(moving[:, None], want, pos)
