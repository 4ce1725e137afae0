"""Action distributions over the policy heads' outputs, as light tensor math.

The collector samples from these every env step, so they avoid ``torch.distributions`` (argument
validation and object set-up cost more than the math for small batches).  All methods are batched over
any leading dims; ``log_prob`` and ``entropy`` sum over action dimensions.
"""
from __future__ import annotations

import math
from typing import Dict, Sequence

import torch
import torch.nn.functional as F

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class Categorical:
    """One categorical over ``logits (..., A)``; actions are int64 ``(...)``."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits
        self._log_probs = None

    @property
    def log_probs(self) -> torch.Tensor:
        """log π(·) over the actions (computed on first use: sampling does not need it)."""
        if self._log_probs is None:
            self._log_probs = F.log_softmax(self.logits, dim=-1)
        return self._log_probs

    def sample(self) -> torch.Tensor:
        # Gumbel-max: argmax(logits + Gumbel noise) is a sample of the categorical (an exponential draw of exactly 0
        # would be an infinite noise that a masked logit could win with: clamped to the smallest positive value)
        noise = torch.empty_like(self.logits).exponential_().clamp_(min=torch.finfo(self.logits.dtype).tiny).log_()
        return (self.logits - noise).argmax(dim=-1)

    def mode(self) -> torch.Tensor:
        return self.logits.argmax(dim=-1)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.log_probs.exp() * self.log_probs).sum(-1)

    def kl(self, other: 'Categorical') -> torch.Tensor:
        """KL(self || other), summed over actions."""
        return (self.log_probs.exp() * (self.log_probs - other.log_probs)).sum(-1)


class MultiCategorical:
    """Independent categoricals, one per MultiDiscrete dimension; ``logits (..., sum(nvec))``, actions ``(..., D)``."""

    def __init__(self, logits: torch.Tensor, nvec: Sequence[int]) -> None:
        self.nvec = list(nvec)
        self.parts = [Categorical(part) for part in torch.split(logits, self.nvec, dim=-1)]

    def sample(self) -> torch.Tensor:
        return torch.stack([p.sample() for p in self.parts], dim=-1)

    def mode(self) -> torch.Tensor:
        return torch.stack([p.mode() for p in self.parts], dim=-1)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        return sum(p.log_prob(action[..., i]) for i, p in enumerate(self.parts))

    def entropy(self) -> torch.Tensor:
        return sum(p.entropy() for p in self.parts)

    def kl(self, other: 'MultiCategorical') -> torch.Tensor:
        return sum(p.kl(q) for p, q in zip(self.parts, other.parts))


class DiagGaussian:
    """Independent normals with mean ``mu (..., D)`` and std ``sigma (..., D)``."""

    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor) -> None:
        self.mu, self.sigma = mu, sigma

    def sample(self) -> torch.Tensor:
        return self.mu + self.sigma * torch.randn_like(self.mu)

    def rsample(self) -> torch.Tensor:
        return self.sample()

    def mode(self) -> torch.Tensor:
        return self.mu

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        z = (action - self.mu) / self.sigma
        return (-0.5 * z * z - self.sigma.log() - _LOG_SQRT_2PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (0.5 + _LOG_SQRT_2PI + self.sigma.log()).sum(-1)

    def kl(self, other: 'DiagGaussian') -> torch.Tensor:
        var_ratio = (self.sigma / other.sigma) ** 2
        t1 = ((self.mu - other.mu) / other.sigma) ** 2
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log()).sum(-1)


#: the logit an illegal action gets (``mask_logits``): finite, so ``0 · log π`` of an illegal action is 0, never NaN
MASKED_LOGIT = -1e9


def mask_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits (..., A)`` with the entries where ``mask (..., A)`` is 0 (illegal actions) set to ``MASKED_LOGIT``.

    The categorical of the result gives illegal actions probability 0 (they are never sampled nor the mode), its
    ``log_prob`` and ``entropy`` are over the legal actions only (``π log π`` of an illegal action is ``0 · (−1e9)
    = 0``), and no gradient reaches the masked entries. A MultiDiscrete mask is the dimensions' masks concatenated,
    like the logits. A row with no legal action is refused before it gets here (``envs.masks.ActionMaskCheck``).
    """
    fill = max(MASKED_LOGIT, torch.finfo(logits.dtype).min / 4)  # (float16's range ends at -65504)
    return logits.masked_fill(mask.to(device=logits.device) == 0, fill)


def make_distribution(stats: Dict[str, torch.Tensor], action_space: str, nvec: Sequence[int] = ()):
    """The distribution for the actor's output ``stats`` ({'logit'} or {'mu', 'sigma'})."""
    if action_space == 'discrete':
        return Categorical(stats['logit'])
    if action_space == 'continuous':
        return DiagGaussian(stats['mu'], stats['sigma'])
    if action_space == 'multi_discrete':
        return MultiCategorical(stats['logit'], nvec)
    raise ValueError(f"unknown action_space '{action_space}'")
