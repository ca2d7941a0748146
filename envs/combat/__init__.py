"""Combat family: SMAX-style unit battles (SMAC maps and SMACv2-style generated battles).

A battle is composed of parts (`Combat.from_parts`): a scenario generator (`BattleGenerator`:
the armies, their start, the map), a reward (`SmacReward`, `MagentReward`), an opponent
(`HeuristicOpponent`, `SelfPlayOpponent`, `PolicyOpponent`) and a viewer (`viewer.py`).

Each registered id is `Combat` with a map's keywords bound (`scenarios.scenario_kwargs`);
every keyword can still be overridden, e.g. `marl.make("combat/3m", allies="64m",
enemies="64m")`, and `combat/custom` is `Combat` itself.
"""

from functools import partial

from .enemies import HeuristicOpponent, PolicyOpponent, SelfPlayOpponent
from .env import Combat, CombatState
from .heuristic import ATTACK_MODES, HeuristicMemory, heuristic_actions, initial_memory
from .reward import MagentReward, SmacReward
from .scenarios import LARGE_MAPS, SMAC_MAPS, SMACV2_MAPS, BattleGenerator, scenario_kwargs
from .units import STATS, UNIT_NAMES, UnitStats, parse_composition

# The family's behaviour version: bump it in the same commit as any change to what an env of
# this family returns for given keys and actions (records name it; the leaderboard refuses to
# rank cells of one task made on different versions; tests/test_env_versions.py pins a golden
# rollout per family to it).
BEHAVIOUR_VERSION = "1"


def scenario(map_name: str) -> partial:
    """The constructor of `combat/<map_name>`: `Combat` with the map's keywords as defaults."""
    return partial(Combat, **scenario_kwargs(map_name), name=f"combat/{map_name}")


# One constructor per registered id (marl/core/registry.py points at these).
make_3m = scenario("3m")
make_8m = scenario("8m")
make_25m = scenario("25m")
make_5m_vs_6m = scenario("5m_vs_6m")
make_8m_vs_9m = scenario("8m_vs_9m")
make_10m_vs_11m = scenario("10m_vs_11m")
make_27m_vs_30m = scenario("27m_vs_30m")
make_2s3z = scenario("2s3z")
make_3s5z = scenario("3s5z")
make_3s5z_vs_3s6z = scenario("3s5z_vs_3s6z")
make_3s_vs_5z = scenario("3s_vs_5z")
make_6h_vs_8z = scenario("6h_vs_8z")
make_smacv2_5_units = scenario("smacv2_5_units")
make_smacv2_10_units = scenario("smacv2_10_units")
make_smacv2_20_units = scenario("smacv2_20_units")
make_smacv2_10_vs_11 = scenario("smacv2_10_vs_11")
make_smacv2_20_vs_23 = scenario("smacv2_20_vs_23")
make_64m_vs_64m = scenario("64m_vs_64m")
make_battle64 = scenario("battle64")

__all__ = [
    "ATTACK_MODES",
    "LARGE_MAPS",
    "SMAC_MAPS",
    "SMACV2_MAPS",
    "STATS",
    "UNIT_NAMES",
    "BattleGenerator",
    "Combat",
    "CombatState",
    "HeuristicMemory",
    "HeuristicOpponent",
    "MagentReward",
    "PolicyOpponent",
    "SelfPlayOpponent",
    "SmacReward",
    "UnitStats",
    "heuristic_actions",
    "initial_memory",
    "parse_composition",
    "scenario",
    "scenario_kwargs",
]
