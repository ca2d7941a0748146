"""`PPOConfig`: the hyperparameters of the PPO family (IPPO, MAPPO, HAPPO), defaults from the
shipped `marl/conf/algo/mappo.yaml`, with the checks of its own values."""

from __future__ import annotations

from dataclasses import dataclass

from marl.learning.learner_config import LearnerConfig, defaults_from
from marl.learning.message_passing import ABLATIONS, AGGREGATES
from marl.learning.networks import ACTION_STDS


@dataclass(frozen=True)
@defaults_from("mappo")
class PPOConfig(LearnerConfig):
    """Hyperparameters of IPPO / MAPPO / HAPPO (every one is a config value). The defaults are
    MAPPO's shipped ones, `marl/conf/algo/mappo.yaml` (where each is explained), so Python and
    `marl train` build the same learner."""

    critic: str  # "local" (IPPO: own observation) or "central" (global state)
    num_envs: int  # parallel environments per seed
    rollout_length: int  # steps per environment per update
    epochs: int  # passes over the rollout per update
    num_minibatches: int  # minibatches per epoch (split over environments)
    lr: float  # actor learning rate (Adam)
    critic_lr: float  # critic learning rate (Adam)
    anneal_lr: bool  # linear decay to 0 over the run (needs total_updates)
    gamma: float  # discount
    gae_lambda: float  # GAE lambda
    clip_eps: float  # PPO ratio clip
    value_clip_eps: float | None  # value clip around the old prediction (None: off)
    ent_coef: float  # entropy bonus
    max_grad_norm: float  # gradient-norm clip per network (per actor parameter set)
    value_norm: bool  # normalise value targets (running mean/std)
    huber_delta: float | None  # Huber value loss (None: squared error)
    hidden: tuple[int, ...]  # MLP widths (first is the GRU's input encoder)
    activation: str
    recurrent: bool  # GRU torso in actor and critic
    gru_hidden: int
    layer_norm: bool
    feature_norm: bool  # layer norm of the network inputs
    parameter_sharing: str  # "all", "group" (per agent group) or "none"
    agent_id: bool  # append a one-hot agent id to network inputs
    # agent ids in the critic's input: None follows `agent_id`, and adds them to a central
    # critic whenever the agents' rewards can differ (`critic_needs_ids`); False is refused there
    critic_agent_id: bool | None
    reward_scale: float
    advantage_norm: bool
    action_std: str  # Box actions: "exp" (std = exp(p)) or "harl" (HARL's bounded sigmoid std)
    torso: str  # actor torso: "mlp" or "graph" (marl.learning.message_passing.GraphActor)
    graph_rounds: int  # graph torso: message rounds
    graph_message_dim: int  # graph torso: units per message
    graph_aggregate: str  # graph torso: "mean", "sum" or "max" over the agents heard
    graph_signal: bool  # graph torso: binary messages
    graph_ablation: str | None  # graph torso: None, "zero" or "shuffle" (evaluation studies)

    def checks(self) -> dict[str, tuple[bool, str]]:
        """Checks of its own (the shared ones: `LearnerConfig`)."""
        return {
            "critic": (self.critic in ("central", "local"), "central or local"),
            "action_std": (self.action_std in ACTION_STDS, " or ".join(ACTION_STDS)),
            "torso": (self.torso in ("mlp", "graph"), "mlp or graph"),
            "graph_rounds": (self.graph_rounds >= 1, "a positive integer"),
            "graph_message_dim": (self.graph_message_dim >= 1, "a positive integer"),
            "graph_aggregate": (self.graph_aggregate in AGGREGATES, ", ".join(AGGREGATES)),
            "graph_ablation": (
                self.graph_ablation is None or self.graph_ablation in ABLATIONS,
                f"null, {' or '.join(ABLATIONS)}",
            ),
            "num_minibatches": (
                self.num_minibatches >= 1 and self.num_envs % self.num_minibatches == 0,
                f"a divisor of num_envs ({self.num_envs})",
            ),
        }
