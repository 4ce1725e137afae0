"""Adam and RMSprop with the same math as ``torch.optim``'s, minus a start-up cost acframe cannot afford;
and RMSprop with TensorFlow 1.x's semantics (``RMSpropTF``), which Atari A2C baselines were tuned with.

``torch.optim.Adam.step`` imports ``torch._dynamo`` on its first call (to place a graph break for
``torch.compile``), and ``Optimizer.zero_grad`` & co. do the same to mark themselves uncompilable: more than
2 s of start-up on these 2-core machines — half of a whole CartPole run. These classes subclass
``torch.optim.Optimizer`` (param groups, state dicts, schedulers and hooks work as usual) and implement
``step`` with ``torch._foreach_*`` kernels directly. The update is the textbook one, identical to
``torch.optim`` with its defaults (no weight decay, no amsgrad, no momentum, not centered); a test checks
that they produce the same parameters step for step.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, List, Optional, Tuple

import torch

from .utils import skip_dynamo_import


def _with_grads(optimizer: torch.optim.Optimizer, group: dict, *buffers: str) -> Tuple[List, List, List]:
    """The group's parameters that have gradients, their gradients and states (zeroed ``buffers`` on first use),
    with each state's ``step`` counter advanced by one."""
    params = [p for p in group['params'] if p.grad is not None]
    states = [optimizer.state[p] for p in params]
    for p, state in zip(params, states):
        if not state:
            state['step'] = torch.tensor(0.0)
            for name in buffers:
                state[name] = torch.zeros_like(p, memory_format=torch.preserve_format)
    if params:
        torch._foreach_add_([s['step'] for s in states], 1.0)
    return params, [p.grad for p in params], states


class Adam(torch.optim.Optimizer):
    """Adam (Kingma & Ba 2015): ``m ← β1 m + (1−β1) g``, ``v ← β2 v + (1−β2) g²``,
    ``θ ← θ − lr · m̂ / (√v̂ + eps)`` with bias-corrected ``m̂ = m / (1−β1^t)``, ``v̂ = v / (1−β2^t)``."""

    #: the per-parameter statistics ``step`` keeps besides its ``step`` counter
    state_buffers: Tuple[str, ...] = ('exp_avg', 'exp_avg_sq')

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        skip_dynamo_import()
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params, grads, states = _with_grads(self, group, *self.state_buffers)
            if not params:
                continue
            beta1, beta2 = group['betas']
            exp_avgs = [s['exp_avg'] for s in states]
            exp_avg_sqs = [s['exp_avg_sq'] for s in states]
            steps = [float(s['step']) for s in states]  # per parameter: one may have skipped updates
            torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
            denominators = torch._foreach_sqrt(exp_avg_sqs)
            torch._foreach_div_(denominators, [math.sqrt(1 - beta2 ** t) for t in steps])
            torch._foreach_add_(denominators, group['eps'])
            torch._foreach_addcdiv_(params, exp_avgs, denominators, [-group['lr'] / (1 - beta1 ** t) for t in steps])
        return loss


class RMSprop(torch.optim.Optimizer):
    """RMSprop (Tieleman & Hinton 2012): ``v ← α v + (1−α) g²``, ``θ ← θ − lr · g / (√v + eps)``."""

    #: the squared-gradient average before the first update
    initial_square_avg = 0.0
    #: the per-parameter statistics ``step`` keeps besides its ``step`` counter
    state_buffers: Tuple[str, ...] = ('square_avg',)

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8) -> None:
        skip_dynamo_import()
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    @staticmethod
    def denominators(square_avgs: List[torch.Tensor], eps: float) -> List[torch.Tensor]:
        """``√v + eps``, per parameter."""
        denominators = torch._foreach_sqrt(square_avgs)
        torch._foreach_add_(denominators, eps)
        return denominators

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params, grads, states = _with_grads(self, group, *self.state_buffers)
            if not params:
                continue
            square_avgs = [s['square_avg'] for s in states]
            if self.initial_square_avg:
                for state, square_avg in zip(states, square_avgs):
                    if float(state['step']) == 1.0:  # the parameter's first update
                        square_avg.fill_(self.initial_square_avg)
            alpha = group['alpha']
            torch._foreach_mul_(square_avgs, alpha)
            torch._foreach_addcmul_(square_avgs, grads, grads, 1 - alpha)
            torch._foreach_addcdiv_(params, grads, self.denominators(square_avgs, group['eps']), -group['lr'])
        return loss


class RMSpropTF(RMSprop):
    """RMSprop as TensorFlow 1.x's ``tf.train.RMSPropOptimizer`` computes it (the optimizer of OpenAI Baselines'
    A2C and of the RL Zoo's Atari A2C, SB3's ``RMSpropTFLike``): ``v₀ = 1``, ``v ← α v + (1−α) g²``,
    ``θ ← θ − lr · g / √(v + eps)``.

    Two differences from ``RMSprop``: ``eps`` is added *inside* the root, so with ``eps=1e-5`` the denominator
    never falls below √1e-5 ≈ 3.2e-3 (PyTorch's RMSprop lets it fall to 1e-5: steps up to ~300× larger where
    gradients are tiny), and the squared-gradient average starts at ones, so the first steps are small
    instead of ``lr / √(1−α)``-sized.
    """

    initial_square_avg = 1.0

    @staticmethod
    def denominators(square_avgs: List[torch.Tensor], eps: float) -> List[torch.Tensor]:
        """``√(v + eps)``, per parameter."""
        denominators = torch._foreach_add(square_avgs, eps)
        torch._foreach_sqrt_(denominators)
        return denominators


def share_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """Put every statistic of ``optimizer`` (one of the classes above) in shared memory, as A3C's shared RMSprop and
    Adam do: each parameter's state — its ``step`` counter and ``state_buffers`` — is created now where it does not
    exist yet (as the first ``step`` would: zeros), then moved to shared memory in place, so processes forked
    afterwards update one set of statistics (and one step count per parameter) with the parameters they share.

    Call it again after ``load_state_dict`` (which replaces the state tensors) and before forking.
    """
    buffers = getattr(optimizer, 'state_buffers', None)
    if buffers is None:
        raise TypeError(f"{type(optimizer).__name__} is not one of acframe.optim's optimizers (Adam, RMSprop, "
                        f"RMSpropTF), whose statistics can be shared")
    for group in optimizer.param_groups:
        for p in group['params']:
            state = optimizer.state[p]
            if not state:
                state['step'] = torch.tensor(0.0)
                for name in buffers:
                    state[name] = torch.zeros_like(p, memory_format=torch.preserve_format)
            for name, value in state.items():
                if isinstance(value, torch.Tensor):
                    value.share_memory_()
