"""On-policy return and advantage targets: n-step returns (A3C/A2C), GAE, time-limit folding.

All tensors are time-major: per-step quantities are ``(T, B)`` (T steps of B envs) and
``bootstrap_value`` is ``(B,)``, the value ``V(x_T)`` of the state after the last step.

**Per-step discounts.** Every function takes ``discounts`` ``(T, B)`` with
``discounts[t] = gamma_t = gamma * (1 - done_t)``. A zero discount ends the recursion at that step:
nothing after it (the next episode, the bootstrap value) leaks into the targets before it.

**Termination is not truncation.** When an episode *terminates* at step t, the future is worth 0:
``done_t = terminated_t`` and ``r_t`` is used as is. When it is *truncated* by a time limit at step
t, the future is worth ``V(x'_{t+1})``, the value of the final observation the env returned before
its reset -- but the next entry of the segment is already the reset observation of a new episode.
acframe bootstraps truncation by folding, with :func:`fold_truncation`:

1. set the discount to 0 at the truncated step,
   ``discounts = gamma * (1 - (terminated | truncated))``, which cuts the recursion at the episode
   boundary exactly as a termination does;
2. fold the bootstrap into that step's reward, ``r_t <- r_t + gamma * V(final_obs_t)``.

Then every target sees, at the truncated step, ``r_t + gamma * V(final_obs_t) + 0 * (...)``, which is
exactly the correct one-step bootstrap, and the steps before it discount it as usual
(e.g. ``R_{t-1} = r_{t-1} + gamma (r_t + gamma V(final_obs_t))``). The same folded rewards and
discounts work unchanged in :func:`gae`, :func:`nstep_return`, ``vtrace`` and ``retrace``.
"""

from __future__ import annotations

import torch

from ._checks import check_time_major
from .scan import reverse_scan


def nstep_return(rewards: torch.Tensor, discounts: torch.Tensor, bootstrap_value: torch.Tensor) -> torch.Tensor:
    """Discounted returns bootstrapped at the segment end (the A3C / A2C target).

    ``R_t = r_t + gamma_t R_{t+1}``, ``R_T = V(x_T)``, i.e.
    ``R_t = sum_{k=t}^{T-1} (prod_{i=t}^{k-1} gamma_i) r_k + (prod_{i=t}^{T-1} gamma_i) V(x_T)``:
    step t uses a (T - t)-step return.

    Args:
        rewards: ``(T, B)`` ``r_t``.
        discounts: ``(T, B)`` ``gamma_t = gamma * (1 - done_t)``.
        bootstrap_value: ``(B,)`` ``V(x_T)``.

    Returns:
        ``(T, B)`` returns ``R_t``, without gradient.
    """
    check_time_major(bootstrap_value, rewards=rewards, discounts=discounts)
    with torch.no_grad():
        return reverse_scan(rewards, discounts, bootstrap_value)


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    discounts: torch.Tensor,
    lambda_: float,
) -> torch.Tensor:
    """Generalized advantage estimation (Schulman et al. 2016, eq. 16) with per-step discounts.

    ``delta_t = r_t + gamma_t V(x_{t+1}) - V(x_t)`` (``V(x_T)`` = ``bootstrap_value``),
    ``A_t = delta_t + gamma_t lambda A_{t+1}``, ``A_T = 0``, i.e.
    ``A_t = sum_{k>=t} (prod_{i=t}^{k-1} gamma_i lambda) delta_k``.
    ``lambda = 1`` gives ``nstep_return - values``; ``lambda = 0`` the one-step TD error.
    The value target is ``A_t + V(x_t)`` (the lambda-return).

    Args:
        rewards: ``(T, B)`` ``r_t``.
        values: ``(T, B)`` ``V(x_t)``.
        bootstrap_value: ``(B,)`` ``V(x_T)``.
        discounts: ``(T, B)`` ``gamma_t = gamma * (1 - done_t)``.
        lambda_: the GAE ``lambda`` in [0, 1].

    Returns:
        ``(T, B)`` advantages ``A_t``, without gradient.
    """
    check_time_major(bootstrap_value, rewards=rewards, values=values, discounts=discounts)
    with torch.no_grad():
        values_next = torch.cat([values[1:], bootstrap_value.unsqueeze(0)], dim=0)
        deltas = rewards + discounts * values_next - values
        return reverse_scan(deltas, discounts * lambda_, torch.zeros_like(bootstrap_value))


def fold_truncation(
    rewards: torch.Tensor,
    truncated: torch.Tensor,
    final_values: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """Fold the time-limit bootstrap into the reward of each truncated step.

    Returns ``r_t + gamma * V(final_obs_t)`` where ``truncated_t``, and ``r_t`` elsewhere. Use it with
    ``discounts = gamma * (1 - (terminated | truncated))`` (see the module docstring): the pair gives
    every target the exact one-step bootstrap ``r_t + gamma V(final_obs_t)`` at the truncated step and
    stops the recursion at the episode boundary.

    Args:
        rewards: ``(T, B)`` ``r_t``.
        truncated: ``(T, B)`` bool (or 0/1) -- the episode was cut by a time limit at step t and did
            *not* terminate (pass ``truncated & ~terminated``: a terminated step is never bootstrapped).
        final_values: ``(T, B)`` ``V(final_obs_t)``, the value of the observation the env returned at
            step t before its autoreset. Only read where ``truncated``; other entries may be anything
            (even NaN).
        gamma: the scalar discount factor.

    Returns:
        ``(T, B)`` rewards with the bootstrap folded in, without gradient.
    """
    check_time_major(None, rewards=rewards, truncated=truncated, final_values=final_values)
    with torch.no_grad():
        return torch.where(truncated.bool(), rewards + gamma * final_values, rewards)


def normalize_advantages(advantages: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(A - mean(A)) / (std(A) + eps)`` over every element of a batch (``policy.learn.adv_norm``).

    ``advantages``: any shape, e.g. ``(T, B)`` or ``(N,)``; ``std`` is the unbiased sample std. A batch of one
    element has no spread to normalize by and is returned as it is.
    """
    if advantages.numel() <= 1:
        return advantages
    return (advantages - advantages.mean()) / (advantages.std() + eps)
