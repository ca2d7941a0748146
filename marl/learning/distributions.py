"""Action distributions with masks, as the policy heads return them: a categorical over
logits whose unavailable actions hold `NEG_INF`, and a diagonal Gaussian that ignores padded
action dimensions. Both are pytrees, so vmap can return them."""

from __future__ import annotations

import distrax
import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array

NEG_INF = -1e9  # logit of an unavailable action


class MaskedCategorical(struct.PyTreeNode):
    """Categorical over `[..., A]` logits; unavailable actions already hold `NEG_INF`.

    Build with `MaskedCategorical.create(logits, avail)`. A pytree, so vmap can return it.
    """

    logits: Array

    @classmethod
    def create(cls, logits: Array, avail: Array) -> MaskedCategorical:
        return cls(jnp.where(avail, logits, NEG_INF))

    def sample(self, key: Array) -> Array:
        return jax.random.categorical(key, self.logits, axis=-1).astype(jnp.int32)

    def mode(self) -> Array:
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)

    def log_prob(self, action: Array) -> Array:
        logp = jax.nn.log_softmax(self.logits, axis=-1)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> Array:
        p = jax.nn.softmax(self.logits, axis=-1)
        logp = jax.nn.log_softmax(self.logits, axis=-1)
        return -jnp.sum(jnp.where(p > 0, p * logp, 0.0), axis=-1)


class MaskedDiagGaussian(struct.PyTreeNode):
    """Diagonal Gaussian over `[..., d]`; dims where `mask` is False are ignored (padding)."""

    mean: Array
    log_std: Array
    mask: Array

    @classmethod
    def create(cls, mean: Array, log_std: Array, mask: Array) -> MaskedDiagGaussian:
        return cls(mean, jnp.broadcast_to(log_std, mean.shape), mask)

    def _normal(self) -> distrax.Normal:
        return distrax.Normal(self.mean, jnp.exp(self.log_std))

    def sample(self, key: Array) -> Array:
        return jnp.where(self.mask, self._normal().sample(seed=key), 0.0)

    def mode(self) -> Array:
        return jnp.where(self.mask, self.mean, 0.0)

    def log_prob(self, action: Array) -> Array:
        return jnp.sum(jnp.where(self.mask, self._normal().log_prob(action), 0.0), axis=-1)

    def entropy(self) -> Array:
        return jnp.sum(jnp.where(self.mask, self._normal().entropy(), 0.0), axis=-1)


Distribution = MaskedCategorical | MaskedDiagGaussian
