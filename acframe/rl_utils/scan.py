"""The reverse-time scan every return/target recursion in rl_utils is built on."""
from __future__ import annotations

import torch


def reverse_scan(inputs: torch.Tensor, coefficients: torch.Tensor, initial: torch.Tensor) -> torch.Tensor:
    """``out_t = inputs_t + coefficients_t * out_{t+1}`` for t = T-1 … 0, with ``out_T = initial``.

    Args:
        inputs: ``(T, B)``.
        coefficients: ``(T, B)`` (e.g. ``gamma_t``, ``gamma_t * lambda`` or ``gamma_t * c_t``).
        initial: ``(B,)``.

    Returns:
        ``(T, B)``. One fused ``addcmul`` per step, written in place: vectorized over B, a Python loop over T only.
    """
    out = torch.empty_like(inputs)
    following = initial
    for t in range(inputs.shape[0] - 1, -1, -1):
        torch.addcmul(inputs[t], coefficients[t], following, out=out[t])
        following = out[t]
    return out
