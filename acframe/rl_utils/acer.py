"""ACER terms, batched over time-major ``(T, B)`` segments.

Wang et al. 2017, "Sample Efficient Actor-Critic with Experience Replay" (ICLR), with notation:

* ``pi`` the current policy, ``mu`` the behaviour policy that chose the replayed actions,
  ``rho_t = pi(a_t|x_t) / mu(a_t|x_t)`` the importance weight of the taken action,
* ``Q(x, a)`` the critic, ``V(x) = E_{a~pi} Q(x, a)`` (``sum_a pi(a|x) Q(x, a)`` for discrete actions),
* ``gamma_t = gamma * (1 - done_t)`` the per-step discount (see :mod:`acframe.rl_utils.returns` for
  how a time-limit truncation is folded into the reward),
* ``c`` the importance-weight truncation threshold of the policy gradient (``c_bar``; 10 in the paper),
* ``phi`` the *distribution statistics* the policy network outputs (logits for a categorical policy,
  e.g. mean (and log-std) for a Gaussian), and ``phi_avg`` those of the average policy network.

What the module provides, in the order a learner uses it:

1. :func:`truncated_trace` -- ``c_t = min(1, rho_t^(1/d))``, the Retrace coefficient.
2. :func:`retrace` -- the Retrace target ``Q_ret`` (alg. 2); :func:`q_opc` -- ``Q_opc`` (c = 1);
   :func:`acer_value_target` -- the target of ``V`` for continuous actions (sec. 4).
3. :func:`acer_policy_loss_discrete` / :func:`acer_policy_loss_continuous` -- per-step policy losses
   whose gradients are the ACER truncated-importance-sampling gradient with bias correction (eq. 9).
4. Efficient trust region (sec. 3.3): :func:`discrete_kl` (``D_KL[f(phi_avg) || f(phi)]``),
   :func:`grad_wrt_stats` (per-step gradients w.r.t. ``phi`` by autograd), :func:`trust_region_projection`
   (eq. 12), and :func:`acer_trust_region_loss` which chains them into a surrogate loss to backprop.

Targets (``retrace``, ``q_opc``, ``acer_value_target``, ``truncated_trace``, the projection) are computed without gradient.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._checks import check_time_major
from .scan import reverse_scan


# ---------------------------------------------------------------------------------------------------------
# Retrace
# ---------------------------------------------------------------------------------------------------------


def truncated_trace(rho: torch.Tensor, action_dim: int = 1) -> torch.Tensor:
    """Truncated Retrace coefficient ``c_t = min(1, rho_t^(1/d))``, without gradient.

    ``d = 1`` for discrete actions (``min(1, rho_t)``, Wang et al. eq. 5 with lambda = 1); for a
    ``d``-dimensional continuous action ACER uses the ``d``-th root (sec. 5) so that the product of
    ``d`` per-dimension likelihood ratios does not vanish the trace.

    Args:
        rho: ``(T, B)`` importance weights ``pi(a_t|x_t) / mu(a_t|x_t)`` (not log).
        action_dim: ``d``, the dimension of the action; 1 for discrete actions.

    Returns:
        ``(T, B)`` trace coefficients ``c_t`` in [0, 1].
    """
    if action_dim < 1:
        raise ValueError(f"action_dim must be >= 1; got {action_dim}")
    with torch.no_grad():
        if action_dim != 1:
            rho = rho.pow(1.0 / action_dim)
        return torch.clamp(rho, max=1.0)


def retrace(
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    q_taken: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    c: torch.Tensor,
) -> torch.Tensor:
    """Retrace target ``Q_ret`` of ACER (Wang et al. 2017, eq. 5 and alg. 2), without gradient.

    Definition (``V(x_T)`` = ``bootstrap_value``, the trace term dropped at the last step):

        ``Q_ret_t = r_t + gamma_t [c_{t+1} (Q_ret_{t+1} - Q(x_{t+1}, a_{t+1})) + V(x_{t+1})]``,
        ``Q_ret_{T-1} = r_{T-1} + gamma_{T-1} V(x_T)``.

    Alg. 2 computes it by the reverse scan below; acframe runs the equivalent linear scan
    ``Q_ret_t = r_t + gamma_t (V(x_{t+1}) - c_{t+1} Q(x_{t+1}, a_{t+1})) + gamma_t c_{t+1} Q_ret_{t+1}``
    (one fused step per t, :func:`~acframe.rl_utils.scan.reverse_scan`)::

        Q_ret <- V(x_T)
        for t = T-1 .. 0:
            Q_ret <- r_t + gamma_t Q_ret;  out_t = Q_ret
            Q_ret <- c_t (Q_ret - Q(x_t, a_t)) + V(x_t)

    Special cases (useful to read the estimator):

    * ``c = 0``: ``Q_ret_t = r_t + gamma_t V(x_{t+1})``, the one-step TD target.
    * ``c = 1`` (on-policy, ``rho = 1``; also :func:`q_opc`): the ``c`` factors drop out and
      ``Q_ret_t = R_t - sum_{k=t+1}^{T-1} (prod_{i=t}^{k-1} gamma_i) (Q(x_k, a_k) - V(x_k))`` where
      ``R_t`` is :func:`~acframe.rl_utils.returns.nstep_return`. Each correction term
      ``Q(x_k, a_k) - V(x_k)`` has zero mean for ``a_k ~ pi`` (since ``V = E_pi Q``) and is zero when
      ``Q(x_k, a_k) = V(x_k)``: then ``Q_ret`` is exactly the n-step return.

    Args:
        rewards: ``(T, B)`` ``r_t``.
        discounts: ``(T, B)`` ``gamma_t = gamma * (1 - done_t)``.
        q_taken: ``(T, B)`` ``Q(x_t, a_t)`` of the taken (replayed) actions.
        values: ``(T, B)`` ``V(x_t) = E_{a~pi} Q(x_t, a)``.
        bootstrap_value: ``(B,)`` ``V(x_T)`` (0 where the segment ends in a termination -- or rely on
            the zero discount there).
        c: ``(T, B)`` trace coefficients ``c_t``, usually :func:`truncated_trace` of ``rho_t``.

    Returns:
        ``(T, B)`` ``Q_ret_t``.
    """
    check_time_major(
        bootstrap_value, rewards=rewards, discounts=discounts, q_taken=q_taken, values=values, c=c
    )
    with torch.no_grad():
        # As one linear reverse scan Q_ret_t = u_t + gamma_t c_{t+1} Q_ret_{t+1}, with
        # u_t = r_t + gamma_t (V(x_{t+1}) - c_{t+1} Q(x_{t+1}, a_{t+1})) and V(x_T) = bootstrap, c_T = 0.
        next_values = torch.cat([values[1:], bootstrap_value.unsqueeze(0)])
        next_c = torch.cat([c[1:], torch.zeros_like(c[:1])])
        next_q = torch.cat([q_taken[1:], torch.zeros_like(q_taken[:1])])
        inputs = rewards + discounts * (next_values - next_c * next_q)
        return reverse_scan(inputs, discounts * next_c, torch.zeros_like(bootstrap_value))


def q_opc(
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    q_taken: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
) -> torch.Tensor:
    """``Q_opc`` (Wang et al. 2017, sec. 5): :func:`retrace` with every ``c_t = 1``, without gradient.

    ``Q_opc_t = r_t + gamma_t [Q_opc_{t+1} - Q(x_{t+1}, a_{t+1}) + V(x_{t+1})]``. The paper uses it in
    place of ``Q_ret`` in the policy gradient for continuous actions (ChainerRL's ``use_Q_opc``); the
    critic is still trained towards ``Q_ret``. Shapes as in :func:`retrace`; returns ``(T, B)``.
    """
    return retrace(rewards, discounts, q_taken, values, bootstrap_value, c=torch.ones_like(rewards))


def acer_value_target(
    rho: torch.Tensor,
    q_ret: torch.Tensor,
    q_taken: torch.Tensor,
    values: torch.Tensor,
) -> torch.Tensor:
    """Target of ``V(x_t)`` for ACER's continuous critic (Wang et al. 2017, sec. 4), without gradient.

        ``V_target_t = min(1, rho_t) (Q_ret_t - Q(x_t, a_t)) + V(x_t)``

    With a stochastic dueling network ``Q`` and ``V`` come from separate heads; this target trains ``V`` with
    the Retrace correction of the taken action, truncated at 1 (the paper uses ``min(1, rho)`` here, not the
    ``d``-th root of the trace).

    Args:
        rho: ``(T, B)`` importance weights ``pi(a_t|x_t) / mu(a_t|x_t)``.
        q_ret: ``(T, B)`` the Retrace target :func:`retrace`.
        q_taken: ``(T, B)`` ``Q(x_t, a_t)``.
        values: ``(T, B)`` ``V(x_t)``.

    Returns:
        ``(T, B)`` ``V_target_t``.
    """
    check_time_major(None, rho=rho, q_ret=q_ret, q_taken=q_taken, values=values)
    with torch.no_grad():
        return torch.clamp(rho, max=1.0) * (q_ret - q_taken) + values


# ---------------------------------------------------------------------------------------------------------
# Policy gradient with truncated importance sampling and bias correction (eq. 9)
# ---------------------------------------------------------------------------------------------------------


def _check_c_bar(c_bar: float | None) -> None:
    if c_bar is not None and not c_bar > 0:
        raise ValueError(f"c_bar (the importance-weight truncation threshold) must be > 0 or None; got {c_bar}")


def acer_policy_loss_discrete(
    log_probs: torch.Tensor,
    behaviour_probs: torch.Tensor,
    actions: torch.Tensor,
    q_values: torch.Tensor,
    values: torch.Tensor,
    q_ret: torch.Tensor,
    c_bar: float | None = 10.0,
) -> torch.Tensor:
    """Per-step ACER policy loss for a categorical policy, with the bias correction summed exactly.

    ``rho_t(b) = pi(b|x_t) / mu(b|x_t)``, ``c = c_bar``. The loss ``L_t`` is built so that (rhos, pi
    in the weights, Q, V and Q_ret all treated as constants)

        ``-grad L_t = min(c, rho_t(a_t)) grad log pi(a_t|x_t) (Q_ret_t - V(x_t))``
        ``          + sum_b [1 - c / rho_t(b)]_+ pi(b|x_t) grad log pi(b|x_t) (Q(x_t, b) - V(x_t))``

    which is eq. 9 of Wang et al. with the expectation over ``b ~ pi`` taken in closed form (the
    discrete case of sec. 3.2). The weight of the correction is computed as
    ``[1 - c/rho(b)]_+ pi(b) = [pi(b) - c mu(b)]_+`` (no division; 0 where ``pi(b) = 0``). The
    expectation of the whole estimator over ``a_t ~ mu`` is the on-policy gradient
    ``sum_a pi(a) grad log pi(a) (Q(a) - V)``: it is unbiased for any ``c``.

    Args:
        log_probs: ``(T, B, A)`` ``log pi(.|x_t)`` of the current policy, *with* gradient (e.g.
            ``log_softmax(logits)``).
        behaviour_probs: ``(T, B, A)`` ``mu(.|x_t)``, the behaviour policy's probabilities (detached).
            ``mu(a_t|x_t) > 0`` is required for the taken actions.
        actions: ``(T, B)`` int64 taken actions ``a_t``.
        q_values: ``(T, B, A)`` ``Q(x_t, .)`` (detached inside).
        values: ``(T, B)`` ``V(x_t) = sum_b pi(b|x_t) Q(x_t, b)`` (detached inside).
        q_ret: ``(T, B)`` the target for the taken action: ``Q_ret`` from :func:`retrace` (or ``Q_opc``).
        c_bar: truncation threshold ``c``; None: no truncation and no correction (plain importance
            sampling, ``rho_t(a_t) grad log pi(a_t) (Q_ret_t - V)``).

    Returns:
        ``(T, B)`` per-step loss ``L_t``; reduce it (``.mean()``) or hand it to
        :func:`acer_trust_region_loss`.
    """
    _check_c_bar(c_bar)
    check_time_major(None, actions=actions, values=values, q_ret=q_ret)
    if not (log_probs.shape[:2] == actions.shape and log_probs.shape == behaviour_probs.shape == q_values.shape):
        raise ValueError(
            "log_probs, behaviour_probs and q_values must all be (T, B, A) with (T, B) = actions.shape "
            f"{tuple(actions.shape)}; got {tuple(log_probs.shape)}, {tuple(behaviour_probs.shape)}, "
            f"{tuple(q_values.shape)}"
        )
    with torch.no_grad():
        probs = log_probs.exp()
        mu = behaviour_probs.detach()
        index = actions.long().unsqueeze(-1)
        rho_taken = probs.gather(-1, index).squeeze(-1) / mu.gather(-1, index).squeeze(-1)
        advantage_ret = q_ret - values  # Q_ret_t - V(x_t)
        advantages_all = q_values - values.unsqueeze(-1)  # Q(x_t, b) - V(x_t)
    log_prob_taken = log_probs.gather(-1, index).squeeze(-1)
    if c_bar is None:
        return -(rho_taken * log_prob_taken * advantage_ret)
    with torch.no_grad():
        truncated_weight = torch.clamp(rho_taken, max=c_bar)  # min(c, rho_t(a_t))
        correction_weights = torch.clamp(probs - c_bar * mu, min=0.0)  # [1 - c/rho(b)]_+ pi(b)
    truncated_term = truncated_weight * log_prob_taken * advantage_ret
    correction_term = (correction_weights * log_probs * advantages_all).sum(-1)
    return -(truncated_term + correction_term)


def acer_policy_loss_continuous(
    log_prob_taken: torch.Tensor,
    log_prob_sampled: torch.Tensor,
    rho_taken: torch.Tensor,
    rho_sampled: torch.Tensor,
    q_ret_minus_v: torch.Tensor,
    q_sampled_minus_v: torch.Tensor,
    c_bar: float | None = 10.0,
) -> torch.Tensor:
    """Per-step ACER policy loss for a continuous policy, with a one-sample bias correction (eq. 9).

    With ``a'_t ~ pi(.|x_t)`` one action sampled from the *current* policy,
    ``rho_t = pi(a_t|x_t) / mu(a_t|x_t)`` and ``rho'_t = pi(a'_t|x_t) / mu(a'_t|x_t)``:

        ``-grad L_t = min(c, rho_t) grad log pi(a_t|x_t) (Q_ret_t - V(x_t))``
        ``          + [1 - c / rho'_t]_+ grad log pi(a'_t|x_t) (Q(x_t, a'_t) - V(x_t))``

    The second term is a one-sample estimate of ``E_{a'~pi}[...]``, so the whole estimator remains
    unbiased in expectation over ``a_t ~ mu``, ``a'_t ~ pi``. The paper uses ``Q_opc`` (:func:`q_opc`)
    in place of ``Q_ret`` here.

    Args:
        log_prob_taken: ``(T, B)`` ``log pi(a_t|x_t)``, with gradient.
        log_prob_sampled: ``(T, B)`` ``log pi(a'_t|x_t)``, with gradient w.r.t. the policy but *not*
            through ``a'_t`` (sample with ``.sample()``, not ``.rsample()``, or detach ``a'_t``).
        rho_taken: ``(T, B)`` ``rho_t`` (detached inside).
        rho_sampled: ``(T, B)`` ``rho'_t`` (detached inside).
        q_ret_minus_v: ``(T, B)`` ``Q_ret_t - V(x_t)`` (or ``Q_opc_t - V(x_t)``), detached inside.
        q_sampled_minus_v: ``(T, B)`` ``Q(x_t, a'_t) - V(x_t)``, detached inside.
        c_bar: truncation threshold ``c``; None: no truncation and no correction.

    Returns:
        ``(T, B)`` per-step loss ``L_t``.
    """
    _check_c_bar(c_bar)
    check_time_major(
        None,
        log_prob_taken=log_prob_taken,
        log_prob_sampled=log_prob_sampled,
        rho_taken=rho_taken,
        rho_sampled=rho_sampled,
        q_ret_minus_v=q_ret_minus_v,
        q_sampled_minus_v=q_sampled_minus_v,
    )
    rho_taken = rho_taken.detach()
    q_ret_minus_v = q_ret_minus_v.detach()
    if c_bar is None:
        return -(rho_taken * log_prob_taken * q_ret_minus_v)
    with torch.no_grad():
        truncated_weight = torch.clamp(rho_taken, max=c_bar)
        # [1 - c/rho']_+ ; rho' = 0 gives 1 - inf -> 0.
        correction_weight = torch.clamp(1.0 - c_bar / rho_sampled, min=0.0)
    truncated_term = truncated_weight * log_prob_taken * q_ret_minus_v
    correction_term = correction_weight * log_prob_sampled * q_sampled_minus_v.detach()
    return -(truncated_term + correction_term)


# ---------------------------------------------------------------------------------------------------------
# Efficient trust region (sec. 3.3)
# ---------------------------------------------------------------------------------------------------------


def discrete_kl(avg_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """``D_KL[f(phi_avg) || f(phi)]`` for categorical policies given by logits, per step.

    ``sum_b pi_avg(b) (log pi_avg(b) - log pi(b))`` with ``pi = softmax(logits)``. Gradient flows to
    ``logits`` only (``avg_logits`` is detached); that gradient is ``k = softmax(logits) -
    softmax(avg_logits)``, the ``k`` of eq. 12 -- obtain it with :func:`grad_wrt_stats`.

    Args:
        avg_logits: ``(..., A)`` logits ``phi_avg`` of the average policy network.
        logits: ``(..., A)`` logits ``phi`` of the current policy.

    Returns:
        ``(...)`` KL divergences (``(T, B)`` for ``(T, B, A)`` inputs).
    """
    avg_log_probs = F.log_softmax(avg_logits.detach(), dim=-1)
    log_probs = F.log_softmax(logits, dim=-1)
    return (avg_log_probs.exp() * (avg_log_probs - log_probs)).sum(-1)


def grad_wrt_stats(per_step: torch.Tensor, stats: torch.Tensor) -> torch.Tensor:
    """Per-step gradients ``d per_step[t, b] / d stats[t, b, :]``, detached, by one autograd call.

    Requires that ``per_step[t, b]`` depend on ``stats`` only through ``stats[t, b, :]`` (true of the
    per-step ACER losses and KLs): then the gradient of ``per_step.sum()`` is the stack of the per-step
    gradients. ``stats`` is the policy's distribution-statistics tensor ``phi`` -- a network output
    (non-leaf is fine) that ``per_step`` was computed from. The graph is retained, so the network can
    be backpropagated afterwards.

    Use it for eq. 12: ``g = -grad_wrt_stats(policy_loss, phi)`` (the gradient of the objective, which is
    ``-L``) and ``k = grad_wrt_stats(kl, phi)`` with ``kl = D_KL[f(phi_avg) || f(phi)]``.
    For several statistics (e.g. a Gaussian's mean and log-std) concatenate them into one ``phi``
    tensor and split it before building the distribution.

    Args:
        per_step: ``(T, B)`` per-step scalars computed from ``stats``.
        stats: ``(T, B, S)`` distribution statistics.

    Returns:
        ``(T, B, S)`` gradients, without gradient.
    """
    if per_step.shape != stats.shape[:-1]:
        raise ValueError(
            f"per_step must be stats.shape[:-1] = {tuple(stats.shape[:-1])}; got {tuple(per_step.shape)}"
        )
    (grad,) = torch.autograd.grad(per_step.sum(), stats, retain_graph=True, allow_unused=True)
    if grad is None:  # per_step does not depend on stats
        return torch.zeros_like(stats).detach()
    return grad.detach()


def trust_region_projection(g: torch.Tensor, k: torch.Tensor, delta: float) -> torch.Tensor:
    """Efficient trust-region projection (Wang et al. 2017, eq. 12), per step, without gradient.

    Solves ``min_z 1/2 ||g - z||^2  s.t.  k . z <= delta`` in closed form:

        ``z* = g - max(0, (k . g - delta) / ||k||^2) k``

    where ``g`` is the gradient of the policy *objective* w.r.t. the distribution statistics ``phi``
    and ``k = grad_phi D_KL[f(phi_avg) || f(phi)]``. After the projection the linearised KL change
    ``k . z* <= delta`` (with equality when the constraint was active); when ``k . g <= delta`` the
    constraint is inactive and ``z* = g`` unchanged. Where ``k = 0``, ``z* = g``.

    Args:
        g: ``(..., S)`` objective gradients w.r.t. ``phi`` (e.g. ``(T, B, S)``).
        k: ``(..., S)`` KL gradients w.r.t. ``phi``, same shape as ``g``.
        delta: the trust-region bound ``delta`` (>= 0; 1 in ChainerRL's default).

    Returns:
        ``(..., S)`` projected gradients ``z*``; dot products run over the last dimension only.
    """
    if g.shape != k.shape:
        raise ValueError(f"g and k must have the same shape; got {tuple(g.shape)} and {tuple(k.shape)}")
    with torch.no_grad():
        g = g.detach()
        k = k.detach()
        k_dot_g = (k * g).sum(-1, keepdim=True)
        k_dot_k = (k * k).sum(-1, keepdim=True)
        scale = torch.clamp((k_dot_g - delta) / k_dot_k.clamp_min(torch.finfo(k.dtype).tiny), min=0.0)
        scale = torch.where(k_dot_k > 0, scale, torch.zeros_like(scale))
        return g - scale * k


def acer_trust_region_loss(
    policy_loss: torch.Tensor,
    kl: torch.Tensor,
    stats: torch.Tensor,
    delta: float,
) -> torch.Tensor:
    """Surrogate per-step loss whose gradient w.r.t. ``stats`` is ``-z*`` (ACER's trust-region update).

    ``g = -d policy_loss / d phi``, ``k = d kl / d phi`` (per step, :func:`grad_wrt_stats`),
    ``z* = trust_region_projection(g, k, delta)``, and the returned ``L^TR_t = -z*_t . phi_t`` (``z*``
    constant). Backpropagating ``L^TR`` through the network gives ``-(d phi / d theta)^T z*``, i.e. the
    parameter update of sec. 3.3 (ascent along ``z*``). Add the entropy bonus outside, as ChainerRL does.

    Args:
        policy_loss: ``(T, B)`` per-step loss computed from ``stats`` (e.g.
            :func:`acer_policy_loss_discrete` of ``log_softmax(stats)``).
        kl: ``(T, B)`` ``D_KL[f(phi_avg) || f(phi)]`` computed from ``stats`` (e.g. :func:`discrete_kl`).
        stats: ``(T, B, S)`` ``phi``, the distribution statistics output by the policy network.
        delta: the trust-region bound.

    Returns:
        ``(T, B)`` surrogate loss, with gradient to ``stats`` (and thus the network).
    """
    g = -grad_wrt_stats(policy_loss, stats)
    k = grad_wrt_stats(kl, stats)
    z = trust_region_projection(g, k, delta)
    return -(z * stats).sum(-1)
