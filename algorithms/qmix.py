"""QMIX (Rashid et al. 2018; pymarl/pymarl2): a monotonic mixer of the agents' values whose
weights come from hypernetworks of the global state.

Owns only its mixer (and the mixer's three keys); everything else is the shared value-based
learner (`qlearner.py`).
"""

from __future__ import annotations

from typing import Any

from marl.env import MultiAgentEnv
from marl.learner import Train

from .mixers import QMixer
from .qlearner import ACTION_KINDS, QConfig, check_team
from .qlearner import make_train as _make_q

__all__ = ["ACTION_KINDS", "MIXER_DEFAULTS", "make_train"]

# pymarl: mixing_embed_dim 32, hypernet_layers 2, hypernet_embed 64; plus a layer norm of the
# state (see `QMixer.state_norm`)
MIXER_DEFAULTS: dict[str, int | bool] = {
    "mixing_embed_dim": 32,
    "hypernet_embed": 64,
    "hypernet_layers": 2,
    "state_norm": True,
}


def make_train(
    env: MultiAgentEnv, cfg: dict[str, Any] | None = None, total_updates: int | None = None
) -> Train:
    """QMIX on `env` (one cooperative team); `cfg` overrides `QConfig` and mixer fields."""
    check_team(env, "qmix")
    cfg = dict(cfg or {})
    mix = {k: type(v)(cfg.pop(k, v)) for k, v in MIXER_DEFAULTS.items()}
    mixer = QMixer(
        mix["mixing_embed_dim"], mix["hypernet_embed"], mix["hypernet_layers"], mix["state_norm"]
    )
    return _make_q(env, QConfig.from_dict(cfg, tuple(MIXER_DEFAULTS)), total_updates, mixer=mixer)
