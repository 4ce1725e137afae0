"""V-trace off-policy value targets and policy-gradient advantages (IMPALA).

Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted Actor-Learner
Architectures", section 4.1, eq. (1). Notation, for one segment ``t = 0 .. T-1`` of one env:

* ``rho_t = min(rho_bar, pi(a_t|x_t) / mu(a_t|x_t))``    truncated importance weight
* ``c_t   = lambda * min(c_bar, pi(a_t|x_t) / mu(a_t|x_t))``   trace coefficient
* ``delta_t V = rho_t (r_t + gamma_t V(x_{t+1}) - V(x_t))``   importance-weighted TD error
* ``v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t V``       (eq. 1)

computed with the equivalent reverse recursion
``v_s - V(x_s) = delta_s V + gamma_s c_s (v_{s+1} - V(x_{s+1}))``, ``v_T = V(x_T)``.

``gamma_t`` is the *per-step* discount ``gamma * (1 - terminated_t)``: a terminal step cuts both the
bootstrap and the trace. Time-limit truncation is handled by the caller, see
:func:`acframe.rl_utils.returns.fold_truncation`.
"""

from __future__ import annotations

from collections import namedtuple

import torch

from ._checks import check_time_major, clip_max
from .scan import reverse_scan

VTraceReturns = namedtuple("VTraceReturns", ["vs", "pg_advantages"])
VTraceReturns.__doc__ = """V-trace outputs, both ``(T, B)`` and without gradient.

vs: the V-trace value targets ``v_s`` (regress ``V(x_s)`` towards them).
pg_advantages: ``min(pg_rho_bar, rho_s) (r_s + gamma_s v_{s+1} - V(x_s))``; the policy loss is
    ``-(pg_advantages * log pi(a_s|x_s))``.
"""


def vtrace(
    log_rhos: torch.Tensor,
    discounts: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    lambda_: float = 1.0,
    rho_clip: float | None = 1.0,
    c_clip: float | None = 1.0,
    pg_rho_clip: float | None = 1.0,
) -> VTraceReturns:
    """V-trace targets ``v_s`` and policy-gradient advantages (Espeholt et al. 2018, eq. 1 and sec. 4.2).

    Args:
        log_rhos: ``(T, B)`` ``log pi(a_t|x_t) - log mu(a_t|x_t)``, target over behaviour policy.
        discounts: ``(T, B)`` per-step discount ``gamma_t = gamma * (1 - terminated_t)``.
        rewards: ``(T, B)`` ``r_t``.
        values: ``(T, B)`` ``V(x_t)`` under the current value function.
        bootstrap_value: ``(B,)`` ``V(x_T)``, the value of the state after the last step.
        lambda_: ``lambda`` in ``c_t = lambda * min(c_bar, rho_t)`` (1.0 in the paper).
        rho_clip: ``rho_bar``, clip of the weight on the TD errors; None or inf: no clipping.
        c_clip: ``c_bar``, clip of the trace coefficients; None or inf: no clipping.
        pg_rho_clip: clip of the weight on the policy-gradient advantage; None or inf: no clipping.

    Returns:
        ``VTraceReturns(vs, pg_advantages)``, both ``(T, B)``, computed without gradient:
        ``pg_advantages_s = min(pg_rho_bar, rho_s) (r_s + gamma_s v_{s+1} - V(x_s))`` with
        ``v_T = bootstrap_value``.
    """
    check_time_major(
        bootstrap_value, log_rhos=log_rhos, discounts=discounts, rewards=rewards, values=values
    )
    with torch.no_grad():
        rhos = torch.exp(log_rhos)
        clipped_rhos = clip_max(rhos, rho_clip)
        cs = lambda_ * clip_max(rhos, c_clip)
        values_next = torch.cat([values[1:], bootstrap_value.unsqueeze(0)], dim=0)  # V(x_{t+1})
        deltas = clipped_rhos * (rewards + discounts * values_next - values)

        # Reverse scan: acc_t = v_t - V(x_t) = delta_t + gamma_t c_t acc_{t+1}, acc_T = 0.
        vs_minus_values = reverse_scan(deltas, discounts * cs, torch.zeros_like(bootstrap_value))
        vs = values + vs_minus_values

        vs_next = torch.cat([vs[1:], bootstrap_value.unsqueeze(0)], dim=0)  # v_{t+1}, v_T = V(x_T)
        pg_advantages = clip_max(rhos, pg_rho_clip) * (rewards + discounts * vs_next - values)
    return VTraceReturns(vs=vs.detach(), pg_advantages=pg_advantages.detach())
