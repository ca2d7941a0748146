"""Grid family: multi-agent pathfinding on a grid as POGEMA defines it (Skrynnik et al.,
POGEMA 1.4), equal to pogema step for step.

A task is `GridMAPF` composed of parts: the instances (`RandomMaps`, `MapPool`, `Instances`),
the `Collision` rule (priority, block_both, soft), the `OnTarget` mode (finish, nothing,
restart) and the observation `Window`. Each registered id is a preset (`presets.PRESETS`):
data naming those parts, every field of which can be overridden (`env.kwargs.collision=soft`,
`env.kwargs.maps.density=0.2`).
"""

from marl.core.config_parts import ConfigPart

from .collision import MOVES, RULES, Collision
from .env import GridMAPF, GridState
from .maps import Instances, MapPool, RandomMaps, components, parse_grid, place
from .observation import Window, global_state
from .targets import METRICS, MODES, OnTarget

# The family's behaviour version: bump it in the same commit as any change to what an env of
# this family returns for given keys and actions (tests/test_env_versions.py).
BEHAVIOUR_VERSION = "4"

# The task's parts as config nodes (`env=grid/random20 env.collision=soft`): the constructor
# keywords each part is built from (a preset's map set stays `env.kwargs.maps`)
CONFIG_PARTS = {
    "generator": ConfigPart(("num_agents",)),
    "collision": ConfigPart(choice="collision"),
    "on_target": ConfigPart(choice="on_target"),
    "observer": ConfigPart(("obs_radius", "neighbour_radius")),
    "reward": ConfigPart(choice="reward"),
}

__all__ = [
    "BEHAVIOUR_VERSION",
    "METRICS",
    "MODES",
    "MOVES",
    "RULES",
    "Collision",
    "GridMAPF",
    "GridState",
    "Instances",
    "MapPool",
    "OnTarget",
    "RandomMaps",
    "Window",
    "components",
    "global_state",
    "parse_grid",
    "place",
]
