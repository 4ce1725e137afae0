"""Generalized State-Dependent Exploration (gSDE; Raffin, Kober & Stulp 2021, "Smooth Exploration for Robotic
Reinforcement Learning"; Stable-Baselines3's ``use_sde``).

Instead of independent noise every step, the exploration noise of a Gaussian policy is a linear function of
the actor's last hidden features ``φ(s)`` (``(N, L)``, taken without gradient):

    ε(s) = φ(s)ᵀ W,        W ∈ R^{L×D},  W_ij ~ N(0, σ_ij²),  σ = exp(log_std)  (a learned ``(L, D)`` parameter)

and the action is ``a = μ(s) + ε(s)``. ``W`` is held fixed for ``sde_sample_freq`` env steps, so consecutive
actions of one env explore smoothly. For a given ``W`` drawn at random, the action at ``s`` is Gaussian with
mean ``μ(s)`` and per-dimension variance

    σ_j(s)² = Σ_i φ_i(s)² σ_ij²                                           (``sde_std``: sqrt of that + eps)

which is the distribution whose log-probability (summed over the ``D`` action dims) the policy gradient uses.

* ``sde_std`` / ``sde_noise``: the math, pure functions (shapes in their docstrings).
* ``StateDependentNoise``: the collect mode's exploration matrices, one ``W`` per collector env, redrawn every
  ``sample_freq`` calls (env steps) from the model's current ``log_std``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import torch

#: added to σ_j(s)² before the square root (SB3's ``StateDependentNoiseDistribution.epsilon``)
SDE_EPS = 1e-6


def sde_std(latent: torch.Tensor, log_std: torch.Tensor, eps: float = SDE_EPS) -> torch.Tensor:
    """The per-dimension std of gSDE's action ``σ_j(s) = sqrt(Σ_i φ_i(s)² exp(log_std_ij)² + eps)``.

    Args:
        latent: ``φ(s)`` ``(N, L)``, the actor's last hidden features (the caller detaches them).
        log_std: ``(L, D)``, the log of the std of each entry of the exploration matrix ``W``.
    Returns:
        ``(N, D)``.
    """
    return (latent.pow(2) @ log_std.exp().pow(2) + eps).sqrt()


def sde_noise(latent: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The exploration noise ``ε_n = φ(s_n)ᵀ W_n`` of every row with its own matrix.

    Args:
        latent: ``φ(s)`` ``(N, L)``.
        weights: ``W`` ``(N, L, D)``, one exploration matrix per row (per collector env).
    Returns:
        ``(N, D)``.
    """
    return torch.bmm(latent.unsqueeze(1), weights).squeeze(1)


def draw_exploration_matrices(model: torch.nn.Module, envs: int) -> torch.Tensor:
    """``envs`` exploration matrices ``W`` ``(envs, L, D)``, ``W_ij ~ N(0, exp(log_std_ij)²)`` with the model's current
    ``sde_log_std`` ``(L, D)`` (one draw of the torch RNG of its device)."""
    std = model.sde_log_std.detach().exp()
    return torch.randn((envs,) + tuple(std.shape), dtype=std.dtype, device=std.device) * std


class StateDependentNoise:
    """The exploration matrices of the collector envs: ``W_n ~ N(0, exp(log_std)²)`` for every env ``n``, redrawn
    every ``sample_freq`` calls of ``__call__`` (one call per env step of all envs) and whenever the number of
    envs changes. ``log_std`` is read from the model at each redraw, so it follows the weights the collect mode
    is given (serial or parallel actors). ``reset`` forces a redraw at the next call."""

    def __init__(self, model: torch.nn.Module, sample_freq: int) -> None:
        self._model = model
        self.sample_freq = int(sample_freq)
        self.weights: Optional[torch.Tensor] = None
        self._steps = 0

    def reset(self) -> None:
        self.weights = None

    def state_dict(self) -> Dict[str, Any]:
        """The current matrices and where the redraw schedule stands (plain data, for an exact resume)."""
        return {'weights': None if self.weights is None else self.weights.cpu().clone(), 'steps': self._steps}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        weights = state['weights']  # saved on the CPU (checkpoints are): back to the model's device
        self.weights = None if weights is None else weights.to(self._model.sde_log_std.device)
        self._steps = int(state['steps'])

    def __call__(self, latent: torch.Tensor) -> torch.Tensor:
        """The noise ``ε`` ``(N, D)`` for the latent features ``(N, L)`` of the envs' current observations."""
        if self.weights is None or self.weights.shape[0] != latent.shape[0] or self._steps % self.sample_freq == 0:
            self.weights = draw_exploration_matrices(self._model, latent.shape[0])
            self._steps = 0
        self._steps += 1
        return sde_noise(latent, self.weights)
