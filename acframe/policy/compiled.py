"""``policy.learn.compile``: the learn step's forward and loss through ``torch.compile``, for every policy.

One learn step is a policy's ``_forward_learn(batch)``: the model's forward on the batch, the targets and the
losses, then ``Policy._learn_step`` (backward, the gradient clip, the optimizer step, the step's info as floats).
With ``policy.learn.compile`` set to a mode, ``compiled_forward_learn`` hands the whole ``_forward_learn`` to
TorchDynamo with ``_learn_step`` excluded (``torch.compiler.disable``): the forward and the losses become compiled
graphs (inductor; AOTAutograd compiles their backward too, which ``loss.backward()`` then runs), and the optimizer
step, the non-finite guard and the ``.item()`` calls stay eager, as in the plain update. Code Dynamo cannot trace
(a data-dependent branch such as "is any step truncated", boolean-mask indexing, numpy statistics)
runs eagerly between graphs (a graph break), so every policy, feed-forward or recurrent, learns the same numbers.
A recurrent model's unroll (``policy.model.rnn``) is left eager on purpose: its loop runs over the steps where some
episode starts in the batch (``RecurrentCore.unroll``), data that would make Dynamo recompile for every new batch;
only the losses on its outputs are compiled.

The batch is a treetensor tree, which Dynamo cannot trace (its attribute access is compiled Cython): the step is
given a ``LearnBatch``, a plain ``dict`` of the same leaves with attribute access, instead.

Random numbers drawn inside the step (ACER's a' ~ π on continuous actions) come from torch's generator as in eager
mode (inductor's ``fallback_random``), so the compiled update equals the eager one (tests/test_compiled_learn.py).

Modes: ``'default'`` (inductor), ``'max-autotune-no-cudagraphs'``; ``'reduce-overhead'`` and ``'max-autotune'`` add
CUDA graphs and need ``policy.cuda`` (refused otherwise). On the CPU inductor builds C++ kernels: a C++ compiler
must be on the PATH (refused otherwise).
"""
from __future__ import annotations

import shutil
from typing import Any, Callable, Dict, Mapping

import torch

from ..data.tree import is_leaf
from ..errors import ConfigError

#: the values of ``policy.learn.compile``: 'off' (eager) or a ``torch.compile`` mode
COMPILE_MODES = ('off', 'default', 'reduce-overhead', 'max-autotune-no-cudagraphs', 'max-autotune')
#: the modes that capture CUDA graphs: GPU only
CUDA_GRAPH_MODES = ('reduce-overhead', 'max-autotune')


def compile_mode(cfg: Any) -> str:
    """``policy.learn.compile`` of ``cfg`` (``cfg.policy``), ``'off'`` when the key is absent."""
    return str(cfg.get('learn', {}).get('compile', 'off'))


def check_compile(cfg: Any) -> None:
    """A one-line ``ConfigError`` when ``policy.learn.compile`` (``cfg`` is ``cfg.policy``) cannot work here: a CUDA-graph
    mode without ``policy.cuda``, or inductor on the CPU without a C++ compiler."""
    mode = compile_mode(cfg)
    if mode == 'off':
        return
    if mode not in COMPILE_MODES:  # (compile_config's rule refuses it first; a config built by hand reaches here)
        raise ConfigError(f"policy.learn.compile = {mode!r} is not one of {', '.join(map(repr, COMPILE_MODES))}")
    if mode in CUDA_GRAPH_MODES and not cfg.get('cuda'):
        raise ConfigError(f"policy.learn.compile = {mode!r} captures CUDA graphs, which need policy.cuda=True; on the "
                          f"CPU use policy.learn.compile='default' (or 'off')")
    if not cfg.get('cuda') and not any(shutil.which(cc) for cc in ('g++', 'c++', 'clang++')):
        raise ConfigError(f"policy.learn.compile = {mode!r}: on the CPU torch.compile builds C++ kernels and no C++ "
                          f"compiler (g++, c++ or clang++) is on the PATH; install one or set policy.learn.compile='off'")


class LearnBatch(dict):
    """A batch's leaves as a plain ``dict`` (nested for subtrees) with attribute access, ``batch.obs``, and slicing of
    every leaf, ``batch[1:]``: what a policy's ``_forward_learn`` reads of a treetensor batch, in a form Dynamo traces."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return dict.__getitem__(self, key)
        return LearnBatch({k: v[key] for k, v in self.items()})


def learn_batch(tree: Any) -> Any:
    """A treetensor batch (or a dict of tensors) as a ``LearnBatch``; a tensor as it is."""
    if is_leaf(tree) or not (isinstance(tree, Mapping) or hasattr(tree, 'items')):
        return tree
    return LearnBatch({k: learn_batch(v) for k, v in tree.items()})


def grad_boundary(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` itself; in a compiled learn step, a graph break there, so that ``tensor`` enters the next graph as an
    input. ``torch.autograd.grad`` with respect to an intermediate tensor (ACER's trust region differentiates each
    step's loss by the distribution statistics, ``rl_utils.grad_wrt_stats``) needs it: inside one compiled graph an
    intermediate has no gradient of its own, and the gradient would silently be None (zeros)."""
    if torch.compiler.is_compiling():
        torch._dynamo.graph_break()
    return tensor


def compiled_forward_learn(policy: Any, mode: str) -> Callable[[Any], Dict[str, float]]:
    """``policy._forward_learn`` with its forward and losses compiled by ``torch.compile(mode=mode)`` (see the module
    docstring); ``policy._learn_step`` (backward, clip, optimizer step) stays eager."""
    import torch._inductor.config as inductor_config

    check_compile(policy._cfg)
    inductor_config.fallback_random = True  # random ops draw from torch's generator, as the eager update's do
    policy._learn_step = torch.compiler.disable(policy._learn_step)  # (the instance's: eager, a graph break)
    if policy._recurrent:  # the unroll's loop runs over the steps where episodes start in this batch: eager
        policy._evaluate_unroll = torch.compiler.disable(policy._evaluate_unroll)
    compiled = torch.compile(policy._forward_learn, mode=mode)

    def forward_learn(batch: Any) -> Dict[str, float]:
        return compiled(learn_batch(batch))

    return forward_learn
