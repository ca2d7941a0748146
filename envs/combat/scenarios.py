"""Battle scenarios: the generator part of `Combat` (`BattleGenerator`: SMACv2-style battle
starts) and the registered maps as data (`PRESETS`: each map's `Combat` keywords, from the SMAC,
SMACv2 and large-battle tables).

A battle start is unit positions `[N + M, 2]` (allies first) and unit types `[N + M]`. Types
are fixed by a composition ("3s5z") or drawn per episode from a race's weights (SMACv2);
positions come from one of the start modes:

- "lines":    SMAX's SMAC maps: allies around (W/4, H/2), enemies around (3W/4, H/2), each
              unit offset by U(-2, 2) per axis.
- "reflect":  SMACv2: allies uniform on the left half; enemy k mirrors ally k across x = W/2;
              enemies beyond the allies' count are uniform on the right half.
- "surround": SMACv2: one team (a fair coin picks which) around the centre (U(-2, 2) noise);
              the other split at random among 4 groups, each on the segment between the centre
              and a map corner (uniform along it), U(-2, 2) noise per unit.
- "smacv2":   "surround" or "reflect", 50/50, per episode.

Positions are clipped into the map `[0, W] x [0, H]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .units import parse_composition, race_weights

START_MODES = ("lines", "reflect", "surround", "smacv2")
START_NOISE = 2.0  # SMAX: each unit starts within U(-2, 2) per axis of its team's point
NUM_SURROUND_GROUPS = 4


@dataclass(frozen=True)
class SmacMap:
    """A SMAC map: team compositions in SMAC shorthand and the episode limit (SMAC's)."""

    allies: str
    enemies: str
    episode_limit: int


SMAC_MAPS: dict[str, SmacMap] = {
    "3m": SmacMap("3m", "3m", 60),
    "8m": SmacMap("8m", "8m", 120),
    "25m": SmacMap("25m", "25m", 150),
    "5m_vs_6m": SmacMap("5m", "6m", 70),
    "8m_vs_9m": SmacMap("8m", "9m", 120),
    "10m_vs_11m": SmacMap("10m", "11m", 150),
    "27m_vs_30m": SmacMap("27m", "30m", 180),
    "2s3z": SmacMap("2s3z", "2s3z", 120),
    "3s5z": SmacMap("3s5z", "3s5z", 150),
    "3s5z_vs_3s6z": SmacMap("3s5z", "3s6z", 170),
    "3s_vs_5z": SmacMap("3s", "5z", 250),
    "6h_vs_8z": SmacMap("6h", "8z", 150),
}

# SMACv2-style generated battles: (allies, enemies). SMACv2's `10gen_*` maps have limit 200.
SMACV2_MAPS: dict[str, tuple[int, int]] = {
    "smacv2_5_units": (5, 5),
    "smacv2_10_units": (10, 10),
    "smacv2_20_units": (20, 20),
    "smacv2_10_vs_11": (10, 11),
    "smacv2_20_vs_23": (20, 23),
}
SMACV2_EPISODE_LIMIT = 200

# Many-agent battles (MAgent's battle, 64 vs 64 on a 40 x 40 map, built from combat units):
# the mean-field learners' benchmark.
LARGE_MAPS: dict[str, dict[str, Any]] = {
    "64m_vs_64m": {
        "allies": "64m",
        "enemies": "64m",
        "episode_limit": 200,
        "start_positions": "reflect",
        "map_size": 40.0,
    },
    # the same battle with a local, MAgent-style view: the 8 nearest teammates and foes
    "battle64": {
        "allies": "64m",
        "enemies": "64m",
        "episode_limit": 200,
        "start_positions": "reflect",
        "map_size": 40.0,
        "nearest": 8,
    },
}
SMACV2_RACE = "any"  # JaxMARL's smacv2_* draw (uniform over the six types)


# Every registered map as data: its `Combat` keywords (`combat/<map>` is `Combat` with them bound)
PRESETS: dict[str, dict[str, Any]] = {
    **{
        name: {"allies": m.allies, "enemies": m.enemies, "episode_limit": m.episode_limit}
        for name, m in SMAC_MAPS.items()
    },
    **{
        name: {
            "allies": n,
            "enemies": m,
            "race": SMACV2_RACE,
            "start_positions": "smacv2",
            "episode_limit": SMACV2_EPISODE_LIMIT,
        }
        for name, (n, m) in SMACV2_MAPS.items()
    },
    **LARGE_MAPS,
}


def scenario_kwargs(map_name: str) -> dict[str, Any]:
    """`Combat` constructor keywords of a registered map ("3m", "smacv2_10_vs_11")."""
    if map_name not in PRESETS:
        raise ValueError(f"unknown map {map_name!r}; valid: {', '.join(PRESETS)}")
    return dict(PRESETS[map_name])


def team_types(units: str | int | Sequence[str], race: str | None, side: str) -> tuple[int, ...]:
    """The fixed types of a team (race None) or, with a race (types drawn per episode), one
    placeholder type per unit."""
    if race is None:
        if isinstance(units, int):
            raise ValueError(
                f"{side}={units} is a count: give a race (types drawn per episode) or a "
                f"composition such as '{units}m'"
            )
        return parse_composition(units)
    if not isinstance(units, int) or units < 1:
        raise ValueError(f"with race={race!r}, {side} must be a unit count >= 1, got {units!r}")
    return (0,) * units


def line_positions(key: jax.Array, n: int, m: int, map_size: float) -> jax.Array:
    """[n + m, 2] SMAX's SMAC start: two groups facing each other across the map centre."""
    centre_y = map_size / 2
    anchors = np.array([[map_size / 4, centre_y]] * n + [[3 * map_size / 4, centre_y]] * m)
    noise = jax.random.uniform(key, (n + m, 2), minval=-START_NOISE, maxval=START_NOISE)
    return jnp.asarray(anchors, jnp.float32) + noise


def reflect_positions(key: jax.Array, n: int, m: int, map_size: float) -> jax.Array:
    """[n + m, 2] SMACv2 "reflect": allies on the left half, enemies mirror them."""
    k_ally, k_extra = jax.random.split(key)
    half = np.array([map_size / 2, map_size], np.float32)
    allies = jax.random.uniform(k_ally, (n, 2)) * half
    mirrored = allies[: min(n, m)] * jnp.array([-1.0, 1.0]) + jnp.array([map_size, 0.0])
    extra = jax.random.uniform(k_extra, (max(m - n, 0), 2)) * half + jnp.array([half[0], 0.0])
    return jnp.concatenate([allies, mirrored, extra])


def surround_positions(key: jax.Array, n: int, m: int, map_size: float) -> jax.Array:
    """[n + m, 2] SMACv2 "surround": one team at the centre, the other in 4 outer groups."""
    k_side, k_t, k_group, k_noise = jax.random.split(key, 4)
    u = n + m
    centre = jnp.full((2,), map_size / 2, jnp.float32)
    corners = jnp.array([[0.0, 0.0], [0.0, map_size], [map_size, 0.0], [map_size, map_size]])
    t = jax.random.uniform(k_t, (NUM_SURROUND_GROUPS, 1))
    group_pos = t * centre + (1.0 - t) * corners
    group = jax.random.randint(k_group, (u,), 0, NUM_SURROUND_GROUPS)
    allies_inside = jax.random.bernoulli(k_side)
    is_ally = jnp.arange(u) < n
    inside = is_ally == allies_inside
    anchor = jnp.where(inside[:, None], centre, group_pos[group])
    noise = jax.random.uniform(k_noise, (u, 2), minval=-START_NOISE, maxval=START_NOISE)
    return anchor + noise


def start_positions(key: jax.Array, mode: str, n: int, m: int, map_size: float) -> jax.Array:
    """[n + m, 2] start positions of `mode` (see the module docstring), inside the map."""
    if mode == "lines":
        pos = line_positions(key, n, m, map_size)
    elif mode == "reflect":
        pos = reflect_positions(key, n, m, map_size)
    elif mode == "surround":
        pos = surround_positions(key, n, m, map_size)
    elif mode == "smacv2":
        k_coin, k_surround, k_reflect = jax.random.split(key, 3)
        pos = jnp.where(
            jax.random.bernoulli(k_coin),
            surround_positions(k_surround, n, m, map_size),
            reflect_positions(k_reflect, n, m, map_size),
        )
    else:
        raise ValueError(f"unknown start_positions {mode!r}; valid: {', '.join(START_MODES)}")
    return jnp.clip(pos, 0.0, map_size)


def draw_unit_types(key: jax.Array, n: int, m: int, race: str | None) -> jax.Array:
    """[n + m] int32 SMACv2 team draw: allies i.i.d. from the race's weights; enemy k < n has
    ally k's type (mirrored teams); enemies beyond n are drawn from the same weights."""
    k_ally, k_extra = jax.random.split(key)
    logits = jnp.log(jnp.asarray(race_weights(race)))
    allies = jax.random.categorical(k_ally, logits, shape=(n,))
    extra = jax.random.categorical(k_extra, logits, shape=(max(m - n, 0),))
    return jnp.concatenate([allies, allies[: min(n, m)], extra]).astype(jnp.int32)


@dataclass(frozen=True)
class BattleGenerator:
    """Draws the start of a battle: `generator(key) -> (positions [U, 2], types [U] int32)`.

    Attributes:
        num_allies, num_enemies: N and M (U = N + M, allies first).
        unit_types: fixed types of the U units, or None to draw them per episode (`race`).
        race: key of `units.RACE_WEIGHTS` used when `unit_types` is None.
        start_positions: one of START_MODES.
        map_size: side of the square map.
    """

    num_allies: int
    num_enemies: int
    unit_types: tuple[int, ...] | None
    race: str | None
    start_positions: str
    map_size: float

    def __post_init__(self) -> None:
        if self.map_size <= 0:
            raise ValueError(f"map_size must be > 0, got {self.map_size}")
        if self.start_positions not in START_MODES:
            raise ValueError(
                f"unknown start_positions {self.start_positions!r}; valid: {', '.join(START_MODES)}"
            )
        if self.unit_types is None:
            race_weights(self.race)  # raises on an unknown race
        elif len(self.unit_types) != self.num_allies + self.num_enemies:
            raise ValueError("unit_types needs one entry per unit")

    @classmethod
    def from_teams(
        cls,
        allies: str | int | Sequence[str] = "3m",
        enemies: str | int | Sequence[str] | None = None,
        race: str | None = None,
        start_positions: str = "lines",
        map_size: float = 32.0,
    ) -> BattleGenerator:
        """The generator of `Combat`'s keywords: teams in SMAC shorthand ("3s5z") or unit
        names, `enemies` None mirroring `allies`; with a `race`, unit counts (types drawn per
        episode)."""
        ally_types = team_types(allies, race, "allies")
        enemy_types = team_types(allies if enemies is None else enemies, race, "enemies")
        return cls(
            num_allies=len(ally_types),
            num_enemies=len(enemy_types),
            unit_types=None if race is not None else ally_types + enemy_types,
            race=race,
            start_positions=start_positions,
            map_size=float(map_size),
        )

    def __call__(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        k_pos, k_types = jax.random.split(key)
        n, m = self.num_allies, self.num_enemies
        pos = start_positions(k_pos, self.start_positions, n, m, self.map_size)
        if self.unit_types is None:
            types = draw_unit_types(k_types, n, m, self.race)
        else:
            types = jnp.asarray(self.unit_types, jnp.int32)
        return pos.astype(jnp.float32), types
