"""particle/speaker_listener: a static speaker tells a listener which landmark to reach."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..env import DEFAULT_EPISODE_LIMIT, ParticleEnv, ParticleState
from ..world import make_world

LANDMARK_COLOURS = [[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]]
DIM_C = 3


class SpeakerListener(ParticleEnv):
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

    def __init__(
        self, continuous_actions: bool = False, episode_limit: int = DEFAULT_EPISODE_LIMIT
    ):
        world = make_world(
            agent_size=[0.075, 0.075],
            landmark_size=[0.04] * 3,
            agent_collide=False,
            landmark_collide=False,
            agent_movable=[False, True],
            silent=[False, True],
            dim_c=DIM_C,
        )
        self._setup(
            "particle/speaker_listener",
            world,
            ["speaker_0", "listener_0"],
            {"speaker": [0], "listener": [1]},
            [3, 11],
            continuous_actions,
            episode_limit,
            ("distance",),
            cooperative=True,  # both agents receive the listener's reward
            shared_reward=True,
        )

    def sample(self, key):
        k_goal, k_pos = jax.random.split(key)
        goal = jax.random.randint(k_goal, (), 0, 3)
        pos = jax.random.uniform(k_pos, (5, 2), minval=-1.0, maxval=1.0)
        return pos, {"goal": goal}

    def observations(self, s: ParticleState):
        pos = s.pos
        colour = jnp.asarray(LANDMARK_COLOURS, pos.dtype)[s.task["goal"]]
        speaker = jnp.pad(colour, (0, 8))
        listener = jnp.concatenate([s.vel[1], (pos[2:5] - pos[1]).reshape(-1), s.comm[0]])
        return jnp.stack([speaker, listener])

    def _distance2(self, s: ParticleState):
        return jnp.sum((s.pos[1] - s.pos[2 + s.task["goal"]]) ** 2)

    def rewards(self, s: ParticleState):
        return jnp.full(2, -self._distance2(s))

    def metrics(self, s: ParticleState):
        return {"distance": jnp.sqrt(self._distance2(s))}
