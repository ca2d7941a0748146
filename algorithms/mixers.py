"""Value-decomposition mixers: VDN (sum) and QMIX (monotonic hypernetwork mixer, pymarl).

Call: `(agent_qs [..., N], state [..., S]) -> q_tot [...]`.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

Array = jax.Array


class VDNMixer(nn.Module):
    """`Q_tot = sum_i Q_i`; the state is ignored."""

    @nn.compact
    def __call__(self, agent_qs: Array, state: Array | None = None) -> Array:
        return jnp.sum(agent_qs, axis=-1)


class QMixer(nn.Module):
    """pymarl QMIX: `Q_tot = elu(q |W1| + b1) |W2| + V(s)`, weights from state hypernetworks.

    |W1| [N, embed] and |W2| [embed, 1] come from `hypernet_layers`-deep hypernetworks of the
    state (hidden `hypernet_embed`), b1 [embed] from a linear layer, V(s) from a 2-layer MLP.
    Absolute weights make `Q_tot` monotonic in every `Q_i`. `state_norm` layer-normalises the
    state before the hypernetworks (not in pymarl, whose SMAC states lie in [-1, 1]): on states
    with unbounded features (particle positions) the raw hypernetworks blow the mixed values up.
    The QMIX learner turns it on only for envs whose `EnvSpec.state_bounded` is False.
    `init_scale`: every layer's kernel orthogonal with this gain (JaxMARL's MIXER_INIT_SCALE,
    0.001: a near-constant mixer at the start); None: `init_kind`, "flax" (LeCun normal kernels,
    zero biases) or "torch" (pymarl's and pymarl2's: torch.nn.Linear's default, kernels and
    biases uniform in +-1/sqrt(fan_in), which starts the mixer at about 1/6 of flax's gain on
    combat's states).
    """

    embed_dim: int = 32
    hypernet_embed: int = 64
    hypernet_layers: int = 2
    state_norm: bool = False
    init_scale: float | None = None
    init_kind: str = "flax"

    def _dense(self, x: Array, width: int, name: str) -> Array:
        if self.init_scale is not None:
            init = nn.initializers.orthogonal(self.init_scale)
            return nn.Dense(width, kernel_init=init, name=name)(x)
        if self.init_kind == "torch":
            bound = 1.0 / float(x.shape[-1]) ** 0.5

            def uniform(key, shape, dtype=jnp.float32):
                return jax.random.uniform(key, shape, dtype, -bound, bound)

            return nn.Dense(width, kernel_init=uniform, bias_init=uniform, name=name)(x)
        if self.init_kind != "flax":
            raise ValueError(f"mixer_init must be flax or torch, got {self.init_kind!r}")
        return nn.Dense(width, name=name)(x)

    def _hyper(self, state: Array, out: int, name: str) -> Array:
        if self.hypernet_layers == 1:
            return self._dense(state, out, f"{name}_0")
        if self.hypernet_layers != 2:
            raise ValueError("hypernet_layers must be 1 or 2")
        h = nn.relu(self._dense(state, self.hypernet_embed, f"{name}_0"))
        return self._dense(h, out, f"{name}_1")

    @nn.compact
    def __call__(self, agent_qs: Array, state: Array) -> Array:
        n = agent_qs.shape[-1]
        lead = agent_qs.shape[:-1]
        state = jnp.broadcast_to(state, lead + state.shape[-1:]).astype(jnp.float32)
        if self.state_norm:
            state = nn.LayerNorm(name="state_norm")(state)
        w1 = jnp.abs(self._hyper(state, n * self.embed_dim, "hyper_w1"))
        w1 = w1.reshape(lead + (n, self.embed_dim))
        b1 = self._dense(state, self.embed_dim, "hyper_b1")
        w2 = jnp.abs(self._hyper(state, self.embed_dim, "hyper_w2"))  # [..., embed]
        v = self._dense(state, self.embed_dim, "v_0")
        v = self._dense(nn.relu(v), 1, "v_1")[..., 0]
        hidden = nn.elu(jnp.einsum("...n,...ne->...e", agent_qs, w1) + b1)
        return jnp.sum(hidden * w2, axis=-1) + v
