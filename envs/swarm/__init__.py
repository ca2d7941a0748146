"""Swarm family: collective behaviour of many permutation-invariant agents that see only their
neighbourhood, rewarded by an order parameter of the whole swarm (the tasks of "Learning
Decentralized Partially Observable Mean Field Control for Artificial Collective Behavior",
Cui, Hauck, Fabian, Koeppl, ICLR 2024): aggregation, Vicsek alignment and Kuramoto
synchronisation. Any N from a handful to thousands (`num_agents=`); a step is O(N).

A swarm is composed of parts (`Swarm.from_parts`), each a frozen dataclass called with the
state and its own settings: a generator (`generator.py`: `Scatter`, `Headings`,
`Oscillators`), the dynamics (`dynamics.py`: `AggregationDynamics`, `VicsekDynamics`,
`KuramotoDynamics`), a reward, the task's order parameter (`reward.py`: `Cohesion`,
`Polarisation`, `Synchrony`), an observer (`observation.py`: `SwarmObserver`, on the cell
`Grid` of `field.py`) and a viewer (`viewer.py`). `Aggregation`, `Vicsek` and `Kuramoto`
(`tasks.py`), the registered constructors, build the parts from flat keywords.
"""

from marl.core.config_parts import ConfigPart

from .dynamics import AggregationDynamics, KuramotoDynamics, SwarmDynamics, VicsekDynamics
from .env import Swarm, SwarmState
from .field import KERNELS, Grid
from .generator import Headings, Oscillators, Scatter
from .observation import SwarmObserver
from .reward import Cohesion, OrderReward, Polarisation, Synchrony
from .tasks import Aggregation, Kuramoto, Vicsek

# The family's behaviour version: bump it in the same commit as any change to what an env of
# this family returns for given keys and actions (records name it; the leaderboard refuses to
# rank cells of one task made on different versions; tests/test_env_versions.py pins a golden
# rollout per family to it).
BEHAVIOUR_VERSION = "1"

# A swarm's parts as config nodes (`env=swarm/vicsek env.generator.num_agents=500
# env.observer.kernel=box`): the constructor keywords each part is built from
CONFIG_PARTS = {
    "generator": ConfigPart(("num_agents", "omega_std")),
    "dynamics": ConfigPart(
        ("speed", "max_turn", "noise", "coupling", "max_control", "dt", "diffusion")
    ),
    "reward": ConfigPart(("action_cost",)),
    "observer": ConfigPart(("cells", "window", "kernel")),
}

__all__ = [
    "KERNELS",
    "Aggregation",
    "AggregationDynamics",
    "Cohesion",
    "Grid",
    "Headings",
    "Kuramoto",
    "KuramotoDynamics",
    "OrderReward",
    "Oscillators",
    "Polarisation",
    "Scatter",
    "Swarm",
    "SwarmDynamics",
    "SwarmObserver",
    "SwarmState",
    "Synchrony",
    "Vicsek",
    "VicsekDynamics",
]
