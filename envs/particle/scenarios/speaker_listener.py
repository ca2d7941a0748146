"""particle/speaker_listener: a static speaker tells a listener which landmark to reach."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from marl.core.env import AgentGroup

from ..dynamics import ParticleDynamics
from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv
from ..generator import Draw, Scatter
from ..parts import ParticleObserver, ParticleReward
from ..state import ParticleState
from ..world import make_world

LANDMARK_COLOURS = [[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]]
DIM_C = 3


@dataclass(frozen=True)
class SpeakerListenerObserver(ParticleObserver):
    """Speaker: the goal landmark's colour (3); listener: velocity, landmark relative
    positions (6), the speaker's word (3)."""

    @property
    def obs_sizes(self) -> tuple[int, ...]:
        return (3, 11)

    def __call__(self, s: ParticleState) -> jax.Array:
        pos = s.pos
        colour = jnp.asarray(LANDMARK_COLOURS, pos.dtype)[s.task["goal"]]
        speaker = jnp.pad(colour, (0, 8))
        listener = jnp.concatenate([s.vel[1], (pos[2:5] - pos[1]).reshape(-1), s.comm[0]])
        return jnp.stack([speaker, listener])


@dataclass(frozen=True)
class SpeakerListenerReward(ParticleReward):
    """Both agents: `-d(listener, goal)^2`; metric `distance`."""

    metric_names = ("distance",)
    cooperative = True  # both agents receive the listener's reward

    @property
    def shared(self) -> bool:
        return True

    def _distance2(self, s: ParticleState) -> jax.Array:
        return jnp.sum((s.pos[1] - s.pos[2 + s.task["goal"]]) ** 2)

    def __call__(self, s: ParticleState) -> jax.Array:
        return jnp.full(2, -self._distance2(s))

    def metrics(self, s: ParticleState) -> dict[str, jax.Array]:
        return {"distance": jnp.sqrt(self._distance2(s))}


def SpeakerListener(
    continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
) -> ParticleEnv:
    """Cooperative communication (mpe2 simple_speaker_listener_v4). Heterogeneous agents.

    Agents: speaker_0 (cannot move, speaks 3 words) and listener_0 (moves, silent); groups
    "speaker" and "listener".
    Observation: speaker [3] the goal landmark's colour; listener [11] velocity, landmark
    relative positions (6), the speaker's word (3). Padded to 11.
    Actions: speaker Discrete(3) / Box(3,); listener Discrete(5) / Box(5,); padded to 5 with
    the speaker's extra actions masked out in `avail_actions`.
    Reward (shared): `-d(listener, goal)^2`. Metric `distance`: `d(listener, goal)`.

    Constructor:
        continuous_actions: Box(0, 1, (d,)) actions instead of Discrete.
        episode_limit: steps until the episode is truncated.
    """
    world = make_world(
        agent_size=[0.075, 0.075],
        landmark_size=[0.04] * 3,
        agent_collide=False,
        landmark_collide=False,
        agent_movable=[False, True],
        silent=[False, True],
        dim_c=DIM_C,
    )
    groups = (AgentGroup("speaker", (0,)), AgentGroup("listener", (1,)))
    return ParticleEnv(
        Scatter(world, ("speaker_0", "listener_0"), groups, draws=(Draw("goal", 3),)),
        ParticleDynamics(world, bool(continuous_actions)),
        SpeakerListenerReward(),
        SpeakerListenerObserver(),
        episode_limit=episode_limit,
        name="particle/speaker_listener",
    )
