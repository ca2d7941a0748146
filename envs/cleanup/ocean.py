"""The sea: analytic surface currents and a fixed-capacity pool of drifting plastic.

Currents are divergence-free fields from stream functions `psi(x, y, t)` (`u = dpsi/dy`,
`v = -dpsi/dx`), scaled so the fastest water moves at most `speed` per step:

- "calm": no current;
- "uniform": a constant drift of `speed` toward `direction` (radians);
- "gyres": a steady cellular flow of `gyres = (nx, ny)` counter-rotating gyres,
  `psi = sin(pi nx x / L) sin(pi ny y / L)`;
- "double_gyre": Shadden et al.'s time-periodic double gyre (two gyres whose dividing line
  sways with amplitude `epsilon` and angular frequency `omega` per step), on `[0, L]^2`.

Plastic lives in `capacity` slots with an alive mask (static shapes). Sources (river mouths)
emit pieces at a rate; pieces drift with the current plus diffusion; pieces leaving the sea
are removed (counted) or held at the shore. Vessels collect pieces in reach, each piece going
to the nearest vessel (`squared_distances`, `nearest_claims`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

Array = jax.Array

CURRENTS = ("calm", "uniform", "gyres", "double_gyre")


def current_at(
    kind: str,
    pos: Array,
    t: Array,
    size: float,
    speed: float,
    direction: float = 0.0,
    gyres: tuple[int, int] = (2, 2),
    epsilon: float = 0.25,
    omega: float = 2 * math.pi / 100,
) -> Array:
    """Water velocity `[..., 2]` (distance per step) at positions `pos [..., 2]`, step `t`."""
    x, y = pos[..., 0] / size, pos[..., 1] / size  # in [0, 1]
    if kind == "calm":
        return jnp.zeros_like(pos)
    if kind == "uniform":
        vec = jnp.array([math.cos(direction), math.sin(direction)], pos.dtype) * speed
        return jnp.broadcast_to(vec, pos.shape)
    if kind == "gyres":
        nx, ny = gyres
        ax, ay = jnp.pi * nx * x, jnp.pi * ny * y
        u = ny * jnp.sin(ax) * jnp.cos(ay)
        v = -nx * jnp.cos(ax) * jnp.sin(ay)
        return jnp.stack([u, v], -1) * (speed / max(nx, ny))
    if kind == "double_gyre":
        # Shadden, Lekien & Marsden (2005) on X = 2x in [0, 2], Y = y in [0, 1]
        e = epsilon * jnp.sin(omega * t)
        big_x = 2.0 * x
        f = e * big_x**2 + (1.0 - 2.0 * e) * big_x
        dfdx = 2.0 * e * big_x + 1.0 - 2.0 * e
        u = -jnp.pi * jnp.sin(jnp.pi * f) * jnp.cos(jnp.pi * y)
        v = jnp.pi * jnp.cos(jnp.pi * f) * jnp.sin(jnp.pi * y) * dfdx
        # dX/dt = 2 dx/dt: x moves half as fast in [0, 1]; |v| <= pi (1 + 2 epsilon), so the
        # fastest water moves at most `speed` (exactly `speed` at the sway's extremes)
        return jnp.stack([u / 2.0, v], -1) * (speed / (jnp.pi * (1.0 + 2.0 * epsilon)))
    raise ValueError(f"unknown current {kind!r}; valid: {', '.join(CURRENTS)}")


def spawn(alive: Array, pos: Array, requests: Array, where: Array) -> tuple[Array, Array, Array]:
    """Put the `requests [R]` (bool) pieces at `where [R, 2]` into free slots, in order.

    Returns the new `alive [P]`, `pos [P, 2]` and the number spawned (requests beyond the free
    slots are dropped and not counted).
    """
    free = jnp.logical_not(alive)
    free_rank = jnp.cumsum(free) - 1  # k-th free slot has rank k
    wanted = jnp.cumsum(requests)  # running count of requests
    total = wanted[-1] if requests.shape[0] else jnp.zeros((), jnp.int32)
    gets = free & (free_rank < total)
    which = jnp.searchsorted(wanted, free_rank + 1, side="left")  # request of that rank
    which = jnp.clip(which, 0, max(requests.shape[0] - 1, 0))
    new_pos = jnp.where(gets[:, None], where[which], pos)
    return alive | gets, new_pos, jnp.sum(gets).astype(jnp.int32)


def into_sea(pos: Array, size: float) -> Array:
    """`pos` folded back into the sea `[0, size]^2` (reflected at the coast): pieces scattered
    around a coastal source or a patch start in the water, not on or past the coast line, where
    the next step's drift would remove them before anyone could reach them."""
    folded = size - jnp.abs(size - jnp.abs(pos))
    return jnp.clip(folded, 0.0, size)


def density(pos: Array, alive: Array, size: float, cells: int) -> Array:
    """`[cells, cells]` counts of alive pieces per grid cell (row = y)."""
    idx = jnp.clip(jnp.floor(pos / size * cells).astype(jnp.int32), 0, cells - 1)
    flat = idx[:, 1] * cells + idx[:, 0]
    grid = jnp.zeros(cells * cells, jnp.float32).at[flat].add(alive.astype(jnp.float32))
    return grid.reshape(cells, cells)


def gini(x: Array) -> Array:
    """Gini coefficient of non-negative values (0: equal; 0 when all are 0)."""
    n = x.shape[0]
    total = jnp.sum(x)
    diffs = jnp.sum(jnp.abs(x[:, None] - x[None, :]))
    return jnp.where(total > 0, diffs / (2.0 * n * jnp.maximum(total, 1e-9)), 0.0)


def squared_distances(a: Array, b: Array) -> Array:
    """[A, B] squared distances between points a [A, 2] and b [B, 2] (per coordinate: XLA's
    CPU backend reduces a trailing axis of 2 several times slower)."""
    dx = a[:, 0:1] - b[None, :, 0]
    dy = a[:, 1:2] - b[None, :, 1]
    return dx * dx + dy * dy


def nearest_claims(masked: Array, reach: Array) -> Array:
    """[P, N] bool: each row's smallest entry of `masked` among `reach` (the lowest index on
    ties), none for a row without reach. The same as `one_hot(argmin)`, by min reductions
    (argmin is several times slower on XLA's CPU backend)."""
    n = masked.shape[1]
    claim = reach & (masked == jnp.min(masked, axis=1, keepdims=True))
    index = jnp.arange(n)
    first = jnp.min(jnp.where(claim, index, n), axis=1, keepdims=True)
    return claim & (index == first)
