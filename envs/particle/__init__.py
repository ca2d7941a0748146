"""Particle family: the Multi-Agent Particle Environments (MPE) on agent-axis arrays.

A particle task is a `ParticleEnv` composed of parts (`ParticleEnv.from_parts`), each a
frozen dataclass called with the state and its own settings, never the env:

- generator (`generator.Scatter`): the world (`world.World`: the entities' static
  properties), the agents' names and groups, and the start (positions, task draws);
- dynamics (`dynamics.ParticleDynamics`): mpe2's physics: actions, forces, contacts,
  integration;
- reward (a scenario's `parts.ParticleReward`): rewards and task metrics of a state;
- observer (a scenario's `parts.ParticleObserver`): every agent's observation;
- viewer (`viewer.py`, a module path): draws `ParticleEnv.render_frame`.

A step reads: the dynamics move the world, the reward and the observer read the state
reached. Each scenario (`scenarios/<name>.py`, mpe2's nine) holds its reward and observer and
its keyword constructor (`Spread`, `Tag`, ...: what the registry names), which builds the
parts from flat keywords, e.g. `marl.make("particle/spread", num_agents=5)`.
"""

from marl.core.config_parts import ConfigPart

from .dynamics import ParticleDynamics
from .env import ParticleEnv, ParticleState
from .generator import Draw, Scatter
from .parts import ParticleObserver, ParticleReward
from .scenarios.adversary import Adversary, AdversaryObserver, AdversaryReward
from .scenarios.crypto import Crypto, CryptoObserver, CryptoReward
from .scenarios.push import Push, PushObserver, PushReward
from .scenarios.reference import Reference, ReferenceObserver, ReferenceReward
from .scenarios.simple import Simple, SimpleObserver, SimpleReward
from .scenarios.speaker_listener import (
    SpeakerListener,
    SpeakerListenerObserver,
    SpeakerListenerReward,
)
from .scenarios.spread import Spread, SpreadObserver, SpreadReward, make_spread50
from .scenarios.tag import Tag, TagObserver, TagReward
from .scenarios.world_comm import WorldComm, WorldCommObserver, WorldCommReward
from .world import World, make_world

# The family's behaviour version: bump it in the same commit as any change to what an env of
# this family returns for given keys and actions (records name it; the leaderboard refuses to
# rank cells of one task made on different versions; tests/test_env_versions.py pins a golden
# rollout per family to it).
BEHAVIOUR_VERSION = "1"

# A scenario's parts as config nodes (`env=particle/spread env.generator.num_agents=5
# env.reward.local_ratio=0`): the constructor keywords each part is built from, where the
# scenario takes them
CONFIG_PARTS = {
    "generator": ConfigPart(
        (
            "num_agents",
            "num_landmarks",
            "num_good",
            "num_adversaries",
            "num_obstacles",
            "num_food",
            "num_forests",
            "arena",
        )
    ),
    "dynamics": ConfigPart(("continuous_actions",)),
    "reward": ConfigPart(("local_ratio",)),
}

__all__ = [
    "Adversary",
    "AdversaryObserver",
    "AdversaryReward",
    "Crypto",
    "CryptoObserver",
    "CryptoReward",
    "Draw",
    "ParticleDynamics",
    "ParticleEnv",
    "ParticleObserver",
    "ParticleReward",
    "ParticleState",
    "Push",
    "PushObserver",
    "PushReward",
    "Reference",
    "ReferenceObserver",
    "ReferenceReward",
    "Scatter",
    "Simple",
    "SimpleObserver",
    "SimpleReward",
    "SpeakerListener",
    "SpeakerListenerObserver",
    "SpeakerListenerReward",
    "Spread",
    "SpreadObserver",
    "SpreadReward",
    "Tag",
    "TagObserver",
    "TagReward",
    "World",
    "WorldComm",
    "WorldCommObserver",
    "WorldCommReward",
    "make_spread50",
    "make_world",
]
