"""The value-based learners' agent network: `QNetworks` (the Q-network with its parameter
sets, its inputs and its values over stored episodes) and acting from it (`make_policy`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.learning.networks import AgentParams, QNetwork, agent_ids

from .qlearner_config import QConfig
from .qlearning import epsilon_greedy
from .replay import Episode

Array = jax.Array


class QNetworks:
    """The agent Q-network with its parameter sets, and how its inputs are built."""

    def __init__(self, env: MultiAgentEnv, cfg: QConfig):
        spec = env.spec
        self.spec, self.cfg = spec, cfg
        self.num_actions = spec.action_dim
        self.net = QNetwork(
            hidden=cfg.hidden,
            activation=cfg.activation,
            recurrent=cfg.recurrent,
            gru_hidden=cfg.gru_hidden,
            layer_norm=cfg.layer_norm,
            feature_norm=cfg.feature_norm,
            action_dim=spec.action_dim,
        )
        self.sets = AgentParams.sharing(cfg.parameter_sharing, spec.agent_group)
        n = spec.num_agents
        self.input_dim = (
            spec.obs_dim + (spec.action_dim if cfg.last_action else 0) + (n if cfg.agent_id else 0)
        )
        self.hidden_dim = cfg.gru_hidden if cfg.recurrent else 1

    def inputs(self, obs: Array, last_action: Array) -> Array:
        """`obs [..., N, D]`, `last_action [..., N]` (-1: none) -> agent inputs `[..., N, D']`."""
        parts = [obs]
        if self.cfg.last_action:
            parts.append(jax.nn.one_hot(last_action, self.num_actions, dtype=obs.dtype))
        if self.cfg.agent_id:
            parts.append(agent_ids(self.spec.num_agents, obs.shape[:-1], obs.ndim - 2))
        return jnp.concatenate(parts, axis=-1)

    def init(self, key: Array) -> Any:
        h = jnp.zeros((1, self.hidden_dim))
        x = jnp.zeros((1, 1, self.input_dim))
        resets = jnp.zeros((1, 1), bool)
        return self.sets.init(lambda k: self.net.init(k, h, x, resets), key)

    def apply(self, params: Any, carry: Array, x: Array, resets: Array) -> tuple[Array, Array]:
        """`carry [B, N, H]`, `x [T, B, N, D]`, `resets [T, B]` -> (carry, q [T, B, N, A])."""
        return self.sets.apply(
            self.net.apply,
            params,
            carry,
            x,
            jnp.broadcast_to(resets[..., None], x.shape[:-1]),
            in_axes=(1, 2, 2),
            out_axes=(1, 2),
        )

    def episode_q(self, params: Any, episodes: Episode, resets: Array | None = None) -> Array:
        """Q-values over stored episodes `[E, T+1, ...]` -> `[E, T+1, N, A]`.

        `resets [E, T+1]` marks the rows that start an episode (default: row 0 only; packed
        rows hold several episodes, see `packing`).
        """
        e, t1, n = episodes.obs.shape[:3]
        if resets is None:
            resets = jnp.zeros((e, t1), bool).at[:, 0].set(True)
        prev = jnp.concatenate(
            [jnp.full((e, 1, n), -1, jnp.int32), episodes.actions.astype(jnp.int32)], axis=1
        )[:, :t1]
        prev = jnp.where(resets[..., None], -1, prev)
        x = jnp.swapaxes(self.inputs(episodes.obs, prev), 0, 1)  # [T+1, E, N, D]
        _, q = self.apply(params, jnp.zeros((e, n, self.hidden_dim)), x, resets.T)
        return jnp.swapaxes(q, 0, 1)


def make_policy(nets: QNetworks, epsilon: float) -> Policy:
    """Acting in one environment: greedy, or epsilon-greedy with `epsilon` when not greedy."""
    n = nets.spec.num_agents

    def initial_carry():
        return jnp.zeros((n, nets.hidden_dim)), jnp.full((n,), -1, jnp.int32)

    def act(params, obs, avail, carry, start, key, greedy):
        h, last = carry
        last = jnp.where(start, -1, last)
        x = nets.inputs(obs, last)[None, None]
        h, q = nets.apply(params, h[None], x, jnp.reshape(start, (1, 1)))
        eps = jnp.where(greedy, 0.0, epsilon)
        actions = epsilon_greedy(key, q[0, 0], avail, eps)
        return actions, (h[0], actions)

    return Policy(initial_carry, act)
