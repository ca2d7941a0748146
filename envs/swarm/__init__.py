"""Swarm family: collective behaviour of many permutation-invariant agents that see only their
neighbourhood, rewarded by an order parameter of the whole swarm (the tasks of "Learning
Decentralized Partially Observable Mean Field Control for Artificial Collective Behavior",
Cui, Hauck, Fabian, Koeppl, ICLR 2024): aggregation, Vicsek alignment and Kuramoto
synchronisation. Any N from a handful to thousands (`num_agents=`); a step is O(N).
"""

from .env import Aggregation, Kuramoto, Swarm, SwarmState, Vicsek
from .field import KERNELS

# The family's behaviour version: bump it in the same commit as any change to what an env of
# this family returns for given keys and actions (records name it; the leaderboard refuses to
# rank cells of one task made on different versions; tests/test_env_versions.py pins a golden
# rollout per family to it).
BEHAVIOUR_VERSION = "1"

__all__ = ["KERNELS", "Aggregation", "Kuramoto", "Swarm", "SwarmState", "Vicsek"]
