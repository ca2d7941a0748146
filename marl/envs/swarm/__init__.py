"""Swarm family: collective behaviour of many permutation-invariant agents that see only their
neighbourhood, rewarded by an order parameter of the whole swarm (the tasks of "Learning
Decentralized Partially Observable Mean Field Control for Artificial Collective Behavior",
Cui, Hauck, Fabian, Koeppl, ICLR 2024): aggregation, Vicsek alignment and Kuramoto
synchronisation. Any N from a handful to thousands (`num_agents=`); a step is O(N).
"""

from .env import Aggregation, Kuramoto, Swarm, SwarmState, Vicsek
from .field import KERNELS

__all__ = ["KERNELS", "Aggregation", "Kuramoto", "Swarm", "SwarmState", "Vicsek"]
