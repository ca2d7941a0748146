"""`QConfig`: the hyperparameters shared by the value-based learners (IQL, VDN, QMIX), defaults
from the shipped `marl/conf/algo/qmix.yaml`, with the checks of its own values."""

from __future__ import annotations

from dataclasses import dataclass

from marl.learning.learner_config import LearnerConfig, defaults_from


@dataclass(frozen=True)
@defaults_from("qmix")
class QConfig(LearnerConfig):
    """Hyperparameters shared by IQL, VDN and QMIX: the shipped `marl/conf/algo/{vdn,qmix}.yaml`
    defaults (pymarl2's tuned QMIX with pymarl's batch of 32; each explained there), so Python
    and `marl train` build the same learner; IQL's own default is one-step targets."""

    num_envs: int  # parallel environments per seed (pymarl2: batch_size_run 8)
    rollout_length: int  # steps per environment per update
    train_steps: int  # gradient steps per update
    buffer_size: int  # episodes kept in the replay buffer
    batch_size: int  # episodes per gradient step (pymarl: 32; pymarl2: 128)
    lr: float  # learning rate
    anneal_lr: bool  # linear decay to 0 over the run's updates (needs total_updates)
    optimizer: str  # "adam" (pymarl2), "rmsprop" (pymarl: alpha 0.99, eps 1e-5), "radam" (JaxMARL)
    max_grad_norm: float  # global gradient-norm clip
    gamma: float  # discount
    td_lambda: float  # TD(lambda) targets (0: one-step)
    double_q: bool  # argmax by the online network, value by the target network
    epsilon_start: float  # exploration at step 0
    epsilon_end: float  # exploration after `epsilon_steps` (and when not greedy)
    epsilon_steps: int  # env steps (per seed) over which epsilon is annealed
    target_update_interval: int  # updates between hard target copies (~200 episodes)
    tau: float | None  # Polyak rate per update instead of hard copies (None: hard)
    hidden: tuple[int, ...]  # MLP widths (the first feeds the GRU when recurrent)
    activation: str
    recurrent: bool  # GRU agent (pymarl's RNN agent)
    gru_hidden: int  # GRU state size
    layer_norm: bool
    feature_norm: bool  # layer norm of the network inputs
    parameter_sharing: str  # "all", "group" (one network per agent group) or "none"
    agent_id: bool  # one-hot agent id input
    last_action: bool  # one-hot previous action input (zeros at an episode's start)
    reward_scale: float  # multiply rewards before computing targets
    standardise_rewards: bool  # targets from (r - running mean) / running std
    unroll_buckets: int  # unroll lengths: the row length split evenly into this many
    pack_episodes: int  # episodes laid end to end per unrolled row (same loss, less padding)

    def checks(self) -> dict[str, tuple[bool, str]]:
        """Checks of its own (the shared ones: `LearnerConfig`)."""
        return {
            "optimizer": (self.optimizer in ("adam", "rmsprop", "radam"), "adam, rmsprop or radam"),
            "num_envs": (1 <= self.num_envs <= self.buffer_size, "in 1 .. buffer_size"),
            "td_lambda": (0.0 <= self.td_lambda <= 1.0, "in [0, 1]"),
            "target_update_interval": (self.target_update_interval >= 1, "a positive integer"),
            "tau": (self.tau is None or 0.0 < self.tau <= 1.0, "null or in (0, 1]"),
            "unroll_buckets": (self.unroll_buckets >= 1, "a positive integer"),
            "pack_episodes": (
                self.pack_episodes >= 1 and self.batch_size % self.pack_episodes == 0,
                "a positive divisor of batch_size",
            ),
        }
