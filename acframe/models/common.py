"""Building blocks shared by the model templates."""
from __future__ import annotations

from typing import Sequence

import torch.nn as nn

ACTIVATIONS = {'tanh': nn.Tanh, 'relu': nn.ReLU, 'elu': nn.ELU}


def mlp(in_size: int, hidden_sizes: Sequence[int], activation: str = 'tanh') -> nn.Sequential:
    """Linear + activation for each hidden size (an empty list gives the identity)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"policy.model.activation '{activation}' is not one of {sorted(ACTIVATIONS)}")
    layers = []
    size = in_size
    for hidden in hidden_sizes:
        layers += [nn.Linear(size, hidden), ACTIVATIONS[activation]()]
        size = hidden
    return nn.Sequential(*layers)


def init_orthogonal(module: nn.Module, gain: float, last_gain: float = None) -> None:
    """Orthogonal weights and zero biases for every Linear and Conv2d in ``module``; ``last_gain`` for the last one."""
    linears = [m for m in module.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    for i, layer in enumerate(linears):
        g = last_gain if (last_gain is not None and i == len(linears) - 1) else gain
        nn.init.orthogonal_(layer.weight, gain=g)
        nn.init.zeros_(layer.bias)
