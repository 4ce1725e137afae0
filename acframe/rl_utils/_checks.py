"""Shape checks shared by the rl_utils functions (private)."""

from __future__ import annotations

import torch


def check_time_major(bootstrap_value: torch.Tensor | None = None, **per_step: torch.Tensor) -> tuple[int, int]:
    """Check that every ``per_step`` tensor is ``(T, B)`` and ``bootstrap_value`` is ``(B,)``.

    Returns ``(T, B)``. Raises ``ValueError`` naming the first argument whose shape is wrong.
    """
    names = list(per_step)
    first = per_step[names[0]]
    if first.dim() != 2:
        raise ValueError(f"{names[0]} must be time-major (T, B); got shape {tuple(first.shape)}")
    shape = first.shape
    for name in names[1:]:
        if per_step[name].shape != shape:
            raise ValueError(
                f"{name} must have the same (T, B) shape as {names[0]} {tuple(shape)}; "
                f"got {tuple(per_step[name].shape)}"
            )
    if bootstrap_value is not None and bootstrap_value.shape != shape[1:]:
        raise ValueError(
            f"bootstrap_value must be (B,) = {tuple(shape[1:])}, the value of the state after the last step; "
            f"got {tuple(bootstrap_value.shape)}"
        )
    return shape[0], shape[1]


def clip_max(x: torch.Tensor, clip: float | None) -> torch.Tensor:
    """``min(clip, x)``; ``clip`` None or +inf means no clipping."""
    if clip is None or clip == float("inf"):
        return x
    return torch.clamp(x, max=clip)
