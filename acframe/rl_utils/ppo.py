"""PPO's loss terms (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"), as pure functions.

Every function works elementwise on a minibatch of N transitions (shape ``(N,)``; any shape works as long
as all arguments share it) and reduces with the mean over its elements. The advantages ``A_t`` and the
value targets ``R_t`` come from :func:`acframe.rl_utils.gae` on the rollout, before it is cut into minibatches.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch


class PPOPolicyLoss(NamedTuple):
    """The clipped surrogate loss and two diagnostics of how far the policy moved."""

    #: ``−L^CLIP``: the negated clipped surrogate objective (minimise it), with gradient.
    loss: torch.Tensor
    #: ``mean((r_t − 1) − log r_t)``, an estimate of KL(π_old || π) (Schulman's k3 estimator), no gradient.
    approx_kl: torch.Tensor
    #: Fraction of transitions whose ratio lies outside ``[1 − ε, 1 + ε]``, no gradient.
    clip_fraction: torch.Tensor


def ppo_policy_loss(
    log_prob: torch.Tensor,
    log_prob_old: torch.Tensor,
    advantages: torch.Tensor,
    clip_ratio: float,
) -> PPOPolicyLoss:
    """The clipped surrogate objective of PPO (eq. 7 of the paper), negated to be minimised.

    ``r_t(θ) = π_θ(a_t|s_t) / π_θold(a_t|s_t) = exp(log_prob − log_prob_old)``,
    ``L^CLIP(θ) = Ê_t[ min(r_t(θ) Â_t, clip(r_t(θ), 1 − ε, 1 + ε) Â_t) ]``.

    Args:
        log_prob: ``(N,)`` ``log π_θ(a_t|s_t)`` with the current weights (with gradient).
        log_prob_old: ``(N,)`` ``log π_θold(a_t|s_t)`` of the weights that collected the rollout.
        advantages: ``(N,)`` ``Â_t`` (normalised or not: the caller decides).
        clip_ratio: ``ε`` > 0.

    Returns:
        ``PPOPolicyLoss(loss = −L^CLIP, approx_kl, clip_fraction)``.
    """
    log_ratio = log_prob - log_prob_old
    ratio = log_ratio.exp()
    surrogate = ratio * advantages
    clipped_surrogate = ratio.clamp(1.0 - clip_ratio, 1.0 + clip_ratio) * advantages
    loss = -torch.min(surrogate, clipped_surrogate).mean()
    with torch.no_grad():
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clip_fraction = ((ratio - 1.0).abs() > clip_ratio).float().mean()
    return PPOPolicyLoss(loss, approx_kl, clip_fraction)


def ppo_value_loss(
    values: torch.Tensor,
    values_old: torch.Tensor,
    returns: torch.Tensor,
    value_clip_ratio: Optional[float] = None,
) -> torch.Tensor:
    """The squared-error value loss, optionally with PPO's value clipping.

    Without clipping: ``Ê_t[(V_θ(s_t) − R_t)²]``. With ``value_clip_ratio = ε_v`` (the clipped value loss of
    the OpenAI baselines PPO2 implementation, SB3's ``clip_range_vf``):
    ``V^clip_t = V_θold(s_t) + clip(V_θ(s_t) − V_θold(s_t), −ε_v, ε_v)`` and
    ``Ê_t[max((V_θ(s_t) − R_t)², (V^clip_t − R_t)²)]``.

    Args:
        values: ``(N,)`` ``V_θ(s_t)`` with the current weights (with gradient).
        values_old: ``(N,)`` ``V_θold(s_t)`` of the weights that computed the targets.
        returns: ``(N,)`` value targets ``R_t`` (GAE's λ-returns ``Â_t + V_θold(s_t)``).
        value_clip_ratio: ``ε_v`` > 0 in the units of the values, or None for no clipping.

    Returns:
        the scalar loss, with gradient.
    """
    error = (values - returns).pow(2)
    if value_clip_ratio is None:
        return error.mean()
    clipped_values = values_old + (values - values_old).clamp(-value_clip_ratio, value_clip_ratio)
    return torch.max(error, (clipped_values - returns).pow(2)).mean()
