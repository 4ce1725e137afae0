"""Pure functions on time-major ``(T, B)`` tensors: returns, GAE, V-trace, Retrace, ACER and PPO terms.

Conventions shared by every function here:

* per-step quantities are ``(T, B)``; ``bootstrap_value`` is ``(B,)``, ``V(x_T)`` after the last step;
* ``discounts`` is ``(T, B)``, ``gamma * (1 - done_t)`` -- never a scalar gamma plus a done mask;
  time-limit truncation is bootstrapped with :func:`fold_truncation` (see :mod:`.returns`);
* targets are returned without gradient.
"""

from acframe.rl_utils.acer import (
    acer_policy_loss_continuous,
    acer_policy_loss_discrete,
    acer_trust_region_loss,
    acer_value_target,
    discrete_kl,
    grad_wrt_stats,
    q_opc,
    retrace,
    truncated_trace,
    trust_region_projection,
)
from acframe.rl_utils.ppo import PPOPolicyLoss, ppo_policy_loss, ppo_value_loss
from acframe.rl_utils.returns import fold_truncation, gae, normalize_advantages, nstep_return
from acframe.rl_utils.vtrace import VTraceReturns, vtrace

__all__ = [
    "VTraceReturns",
    "vtrace",
    "gae",
    "normalize_advantages",
    "nstep_return",
    "fold_truncation",
    "truncated_trace",
    "retrace",
    "q_opc",
    "acer_value_target",
    "acer_policy_loss_discrete",
    "acer_policy_loss_continuous",
    "discrete_kl",
    "grad_wrt_stats",
    "trust_region_projection",
    "acer_trust_region_loss",
    "PPOPolicyLoss",
    "ppo_policy_loss",
    "ppo_value_loss",
]
