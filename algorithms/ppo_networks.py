"""The PPO family's networks: actor and critic modules with their parameter sets, the inputs
they see (agent ids, the critic's global state), and acting from the actor (`make_policy`).
"""

from __future__ import annotations

import copy
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marl.core.env import MultiAgentEnv
from marl.core.learner import Policy
from marl.learning.message_passing import GraphActor, MessagePassing
from marl.learning.networks import Actor, AgentParams, Critic, agent_ids

from .ppo_config import PPOConfig

Array = jax.Array


def critic_needs_ids(cfg: PPOConfig, spec) -> bool:
    """A critic shared by all agents on the global state returns one value for all of them
    unless told which agent it values: wrong wherever their returns can differ (rewards not
    shared: pathfinding pays each agent its own, tag and adversary have teams)."""
    return cfg.critic == "central" and not spec.shared_reward


def critic_agent_ids(cfg: PPOConfig, spec, team: bool = False) -> bool:
    """Whether the critic's input carries one-hot agent ids (see `PPOConfig.critic_agent_id`);
    `team`: HAPPO's team value V(s) of the mean reward, which never takes them."""
    if team:
        return False
    if cfg.critic_agent_id is None:
        return cfg.agent_id or critic_needs_ids(cfg, spec)
    if critic_needs_ids(cfg, spec) and not cfg.critic_agent_id:
        raise ValueError(
            f"critic_agent_id=false: a central critic without agent ids gives every agent of "
            f"{spec.name} one value, but their rewards differ (set critic_agent_id=true or null)"
        )
    return bool(cfg.critic_agent_id)


class Networks:
    """Actor and critic modules with their parameter sets, and how inputs are built.

    `team_critic`: one team value V(s) (HAPPO), never given agent ids.

    `death_mask` [N]: an agent paid its side's team reward (`EnvSpec.team_reward`) earns on
    past its death to the episode's end, so its critic sees MAPPO's death mask after it dies: a
    zero input beside its agent id (Yu et al. 2022, "death masking"). Not for HAPPO's team
    critic, whose N equal outputs are one V(s).

    `torso="graph"`: the actor is a `GraphActor`, message passing over the agents the env's
    `neighbourhood` links (`links`), then the MLP actor on each agent's observation beside its
    torso features; it sees all agents at once, so it needs one actor parameter set."""

    def __init__(
        self,
        env: MultiAgentEnv,
        cfg: PPOConfig,
        actor_sharing: str | None = None,
        team_critic: bool = False,
    ):
        spec = env.spec
        self.spec, self.cfg = spec, cfg
        n = spec.num_agents
        self.id_dim = n if cfg.agent_id else 0
        self.critic_id_dim = n if critic_agent_ids(cfg, spec, team_critic) else 0
        self.actor = Actor(
            spec.action_dim,
            spec.discrete,
            cfg.hidden,
            cfg.activation,
            cfg.recurrent,
            cfg.gru_hidden,
            cfg.layer_norm,
            feature_norm=cfg.feature_norm,
            std=cfg.action_std,
        )
        self.critic = Critic(
            cfg.hidden,
            cfg.activation,
            cfg.recurrent,
            cfg.gru_hidden,
            cfg.layer_norm,
            feature_norm=cfg.feature_norm,
        )
        groups = spec.agent_group
        self.actor_sets = AgentParams.sharing(actor_sharing or cfg.parameter_sharing, groups)
        self.graph = cfg.torso == "graph"
        if self.graph:
            if self.actor_sets.num_sets != 1:
                raise ValueError(
                    f"torso=graph passes messages between all of {spec.name}'s agents in one "
                    f"actor: set parameter_sharing=all (it gives {self.actor_sets.num_sets} "
                    "actor parameter sets)"
                )
            torso = MessagePassing(
                cfg.hidden[0],
                cfg.graph_message_dim,
                cfg.graph_rounds,
                cfg.graph_aggregate,
                cfg.graph_signal,
                cfg.activation,
                cfg.graph_ablation,
            )
            self.actor = GraphActor(torso, self.actor)
        # the critic is shared by all agents (agent ids tell them apart), as in MAPPO
        self.critic_sets = AgentParams.sharing("all", groups)
        self.actor_dim = spec.obs_dim + self.id_dim
        base = spec.state_dim if cfg.critic == "central" else spec.obs_dim
        if cfg.critic not in ("central", "local"):
            raise ValueError(f"critic {cfg.critic!r} unknown; valid: central, local")
        self.critic_dim = base + self.critic_id_dim
        self.hidden_dim = cfg.gru_hidden if cfg.recurrent else 1
        self.death_mask = spec.team_reward & (not team_critic)

    def one_agent(self) -> Networks:
        """These networks with one actor parameter set for one agent: for applying the actor
        to one agent's slice of a rollout (`[T, B, 1, ...]`) with that agent's set alone."""
        solo = copy.copy(self)
        solo.actor_sets = AgentParams(np.zeros(1, np.int32))
        return solo

    # inputs -----------------------------------------------------------------------------
    def actor_input(self, obs: Array) -> Array:
        """[..., N, obs_dim] -> [..., N, obs_dim + id]."""
        return self._with_ids(obs) if self.id_dim else obs

    def _with_ids(self, x: Array) -> Array:
        ids = agent_ids(self.spec.num_agents, x.shape[:-1], x.ndim - 2)
        return jnp.concatenate([x, ids], axis=-1)

    def critic_input(self, obs: Array, state: Array, alive: Array | None = None) -> Array:
        """Central: global state [..., S] broadcast to agents; local: own observation; zeros
        for the agents not `alive` [..., N] where the critic death-masks (`death_mask`); then
        the agent ids where the critic takes them."""
        n = self.spec.num_agents
        if self.cfg.critic == "central":
            x = jnp.broadcast_to(state[..., None, :], (*state.shape[:-1], n, state.shape[-1]))
        else:
            x = obs
        if self.death_mask.any() and alive is not None:
            keep = alive | ~jnp.asarray(self.death_mask)
            x = jnp.where(keep[..., None], x, jnp.zeros_like(x))
        return self._with_ids(x) if self.critic_id_dim else x

    # init -------------------------------------------------------------------------------
    def init(self, key: Array) -> tuple[Any, Any]:
        ka, kc = jax.random.split(key)
        h = jnp.zeros((1, self.hidden_dim))
        resets = jnp.zeros((1, 1), bool)
        avail = jnp.ones((1, 1, self.spec.action_dim), bool)

        def init_actor(k):
            if self.graph:
                n = self.spec.num_agents
                x, adj = jnp.zeros((1, 1, n, self.actor_dim)), jnp.ones((1, 1, n, n), bool)
                r, a = jnp.zeros((1, 1, n), bool), jnp.ones((1, 1, n, self.spec.action_dim), bool)
                return self.actor.init(k, jnp.zeros((1, n, self.hidden_dim)), x, adj, r, a)
            return self.actor.init(k, h, jnp.zeros((1, 1, self.actor_dim)), resets, avail)

        def init_critic(k):
            return self.critic.init(k, h, jnp.zeros((1, 1, self.critic_dim)), resets)

        return self.actor_sets.init(init_actor, ka), self.critic_sets.init(init_critic, kc)

    def links(self, env: MultiAgentEnv, states: Any) -> Array | None:
        """The graph torso's links [B, N, N] in a batch of env `states` (receiver i hears
        sender j where `env.neighbourhood` weighs j for i); None without it."""
        return jax.vmap(env.neighbourhood)(states) > 0 if self.graph else None

    # apply over agents: inputs [T, B, N, ...], carries [B, N, H] -------------------------
    def actor_apply(self, params, carry, x, resets, avail, adj=None):
        """-> (carry [B, N, H], dist with leaves [T, B, N, ...]); `adj` [T, B, N, N]: the
        graph torso's links (`links`)."""
        resets = jnp.broadcast_to(resets[..., None], x.shape[:-1])
        if self.graph:
            if adj is None:
                raise ValueError("the graph torso acts on the env's links: pass adj=")
            one = jax.tree.map(lambda p: p[0], params)  # the one parameter set
            return self.actor.apply(one, carry, x, adj, resets, avail)
        return self.actor_sets.apply(
            self.actor.apply,
            params,
            carry,
            x,
            resets,
            avail,
            in_axes=(1, 2, 2, 2),
            out_axes=(1, 2),
        )

    def critic_apply(self, params, carry, x, resets):
        """-> (carry [B, N, H], value [T, B, N])."""
        return self.critic_sets.apply(
            self.critic.apply,
            params,
            carry,
            x,
            jnp.broadcast_to(resets[..., None], x.shape[:-1]),
            in_axes=(1, 2, 2),
            out_axes=(1, 2),
        )


def env_actions(spec, actions: Array) -> Array:
    """Clip continuous samples into the action space's bounds (discrete: unchanged)."""
    if spec.discrete:
        return actions
    return jnp.clip(actions, spec.action_space.low, spec.action_space.high)


def make_policy(nets: Networks) -> Policy:
    """Acting in one environment from actor parameters (with the graph torso the evaluator
    passes the env's `neighbours=`: `Policy.neighbourhood`)."""
    n = nets.spec.num_agents

    def initial_carry():
        return jnp.zeros((n, nets.hidden_dim))

    def act(params, obs, avail, carry, start, key, greedy, neighbours=None):
        x = nets.actor_input(obs)[None, None]  # [1, 1, N, D]
        adj = None if neighbours is None else (neighbours > 0)[None, None]
        carry, dist = nets.actor_apply(
            params, carry[None], x, jnp.reshape(start, (1, 1)), avail[None, None], adj
        )
        sample = jax.lax.cond(greedy, lambda: dist.mode(), lambda: dist.sample(key))
        return env_actions(nets.spec, sample[0, 0]), carry[0]

    return Policy(initial_carry, act, neighbourhood=nets.graph)
