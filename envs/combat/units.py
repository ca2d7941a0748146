"""Unit types and their stats (JaxMARL SMAX 0.2.0, `smax_env.py` defaults) as arrays, the unit
action layout, and the pairwise geometry every module shares.

Shields are folded into health, as in SMAX. Distances are in map units, times in seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

UNIT_NAMES: tuple[str, ...] = ("marine", "marauder", "stalker", "zealot", "zergling", "hydralisk")
NUM_UNIT_TYPES = len(UNIT_NAMES)

# SMAC map names abbreviate units: "3s5z" (stalkers, zealots), "6h_vs_8z", "2c_vs_64zg".
SHORTHANDS: dict[str, str] = {
    "m": "marine",
    "M": "marauder",
    "s": "stalker",
    "z": "zealot",
    "zg": "zergling",
    "h": "hydralisk",
}

# SMACv2 `team_gen` weights per race. Each race's third unit (protoss colossus, terran
# medivac, zerg baneling; weight 0.1) is not modelled, so the two remaining 0.45 weights
# renormalise to 0.5 each. "any" is JaxMARL's smacv2_* draw: uniform over all six types.
RACE_WEIGHTS: dict[str, dict[str, float]] = {
    "protoss": {"stalker": 0.45, "zealot": 0.45},
    "terran": {"marine": 0.45, "marauder": 0.45},
    "zerg": {"zergling": 0.45, "hydralisk": 0.45},
    "any": {name: 1.0 for name in UNIT_NAMES},
}


@dataclass(frozen=True)
class UnitStats:
    """Per-type stats, each a float32 array [NUM_UNIT_TYPES] indexed by unit type id."""

    velocity: np.ndarray  # map units per second
    damage: np.ndarray  # health removed per attack
    attack_range: np.ndarray  # an attack needs centre distance < attack_range
    sight_range: np.ndarray  # units farther than this are not observed
    radius: np.ndarray  # collision radius (units are pushed apart on overlap)
    health: np.ndarray  # maximum health, shields included
    cooldown: np.ndarray  # seconds between attacks (before jitter)


def _f32(*values: float) -> np.ndarray:
    out = np.asarray(values, np.float32)
    out.setflags(write=False)
    return out


STATS = UnitStats(
    velocity=_f32(3.15, 2.25, 4.13, 3.15, 4.13, 3.15),
    damage=_f32(9.0, 10.0, 13.0, 8.0, 5.0, 12.0),
    attack_range=_f32(5.0, 6.0, 6.0, 2.0, 2.0, 5.0),
    sight_range=_f32(9.0, 10.0, 10.0, 9.0, 8.0, 9.0),
    radius=_f32(0.375, 0.5625, 0.625, 0.5, 0.375, 0.625),
    health=_f32(45.0, 125.0, 160.0, 150.0, 35.0, 80.0),
    cooldown=_f32(0.61, 1.07, 1.87, 0.86, 0.5, 0.59),
)


def unit_type(name: str) -> int:
    """Type id of a unit name ("marine") or shorthand ("m")."""
    name = SHORTHANDS.get(name, name)
    if name not in UNIT_NAMES:
        raise ValueError(f"unknown unit {name!r}; valid: {', '.join(UNIT_NAMES)} or {SHORTHANDS}")
    return UNIT_NAMES.index(name)


_GROUP = re.compile(r"(\d+)(zg|[mMszh])")


def parse_composition(units: str | Sequence[str]) -> tuple[int, ...]:
    """Unit type ids of a team, from SMAC shorthand ("3s5z", "64m") or a sequence of names.

    Shorthand letters: m marine, M marauder, s stalker, z zealot, zg zergling, h hydralisk.
    """
    if isinstance(units, str):
        if not units or _GROUP.sub("", units):
            raise ValueError(
                f"cannot read team {units!r}: write counts and unit letters like '3s5z' or "
                f"'64m' ({', '.join(f'{k}={v}' for k, v in SHORTHANDS.items())})"
            )
        types = [unit_type(letter) for n, letter in _GROUP.findall(units) for _ in range(int(n))]
    else:
        types = [unit_type(name) for name in units]
    if not types:
        raise ValueError(f"team {units!r} has no units")
    return tuple(types)


def race_weights(race: str | None) -> np.ndarray:
    """[NUM_UNIT_TYPES] float32 probabilities of drawing each unit type for `race`."""
    if race not in RACE_WEIGHTS:
        raise ValueError(f"unknown race {race!r}; valid: {', '.join(RACE_WEIGHTS)}")
    w = np.zeros(NUM_UNIT_TYPES, np.float32)
    for name, weight in RACE_WEIGHTS[race].items():
        w[unit_type(name)] = weight
    return w / w.sum()


# Action layout of every unit (SMAX's): 0-3 move north/east/south/west, 4 stop, 5 + k attack
# the opposing unit k. MOVE_VECTORS[a] is the unit direction of action a (zero for a >= STOP).
NUM_MOVES = 4
STOP = 4
FIRST_ATTACK = 5
MOVE_VECTORS = _f32(0, 1, 1, 0, 0, -1, -1, 0, 0, 0).reshape(5, 2)


def pairwise_offsets(src: jax.Array, dst: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Offsets dx, dy [K, F] from each of K points `src` [K, 2] to each of F points `dst`
    [F, 2], and their lengths [K, F]. Kept as separate x/y planes: a trailing axis of size 2
    (`jnp.linalg.norm(..., axis=-1)`) runs several times slower on CPU."""
    dx = dst[None, :, 0] - src[:, None, 0]
    dy = dst[None, :, 1] - src[:, None, 1]
    return dx, dy, jnp.sqrt(dx * dx + dy * dy)
