"""``Policy``: the base class of every algorithm, and its three modes.

A policy owns its model and exposes three narrow views of itself:

* ``learn_mode``   — for the learner: ``forward(batch) -> dict of floats`` (one gradient step), state dicts,
  optimizer, monitor vars, and the on-policy seam ``prepare(rollout) -> plan`` / ``minibatches(plan, start)``
  (the batches of the gradient steps a rollout gets: A2C one, PPO epochs × minibatches) / ``samples(batch)``;
* ``collect_mode`` — for the collector: ``forward(obs) -> {'action', ...}`` (stochastic), ``get_train_sample``,
  ``load_weights``;
* ``eval_mode``    — for the evaluator: ``forward(obs) -> {'action'}`` (deterministic), ``load_weights``.

Only the modes named in ``enable_field`` are initialised (an actor process builds just ``collect``).
Subclasses implement the ``_init_*`` / ``_forward_*`` methods and declare ``config`` (every default with
a one-line comment above it), ``supported_action_spaces`` and ``default_model``.
"""
from __future__ import annotations

import copy
import functools
import math
import multiprocessing
import re
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn as nn

from ..data.tree import flatten_lead, lead_shape, to_device
from ..errors import (CheckpointError, ConfigError, NonFiniteError, PolicyError, UnsupportedSpaceError, call_user_code,
                      describe_raised)
from ..envs.masks import split_action_mask, split_mask_space
from ..models.distributions import make_distribution, mask_logits
from ..models.normalization import share_statistics
from ..models.sde import StateDependentNoise
from ..registry import MODEL_REGISTRY
from ..rl_utils import fold_truncation, normalize_advantages
from ..optim import Adam, RMSprop, RMSpropTF
from ..utils import defining_class, nonfinite_tensor_names
from .compiled import check_compile, compile_mode, compiled_forward_learn


@dataclass(frozen=True)
class LearnNeed:
    """Data a learn mode needs before it can learn, declared by ``Policy.learn_needs`` and checked at start-up
    against the budget by ``acframe.entry.budget.check_learning_budget`` (a run that could never meet it is refused).

    ``scope='budget'``: ``env_steps`` must reach the learner in total before ``lacks`` can happen at all;
    ``scope='rollout'``: every full rollout must hold ``env_steps`` transitions.
    """

    #: env steps (over all collector envs) the learner must have received
    env_steps: int
    #: 'budget' (in total, before the first such update) or 'rollout' (in every full rollout)
    scope: str
    #: the config keys and values that ask for it, e.g. "policy.learn.batch_size=16 unrolls of policy.unroll_len=16 steps"
    wants: str
    #: what the run would make none of, e.g. 'gradient steps'
    lacks: str
    #: how to lower the need, e.g. 'lower policy.learn.batch_size'
    fix: str


def _user_method(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``fn`` (a policy method a user's plugin may override, called once per rollout or segment), whose exception
    from user code is one ``PolicyError`` line naming ``what`` and the user's file and line (as ``_forward_learn``'s);
    acframe's own errors and bugs propagate as they are."""
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return call_user_code(what, fn, *args, **kwargs)
    return guarded


class _Mode:
    """A view of a policy that exposes only the named callables/attributes."""

    def __init__(self, name: str, **members: Any) -> None:
        self._name = name
        self.__dict__.update(members)

    def __repr__(self) -> str:
        members = ', '.join(k for k in self.__dict__ if not k.startswith('_'))
        return f"<{self._name} mode: {members}>"


class Policy:
    """Base class of the algorithms; see the module docstring for the contract."""

    #: algorithm-specific defaults, merged over acframe.config.defaults.POLICY_COMMON
    config: Dict[str, Any] = dict()
    #: action spaces this policy can act in ('discrete', 'continuous', 'multi_discrete')
    supported_action_spaces: Tuple[str, ...] = ('discrete',)
    #: True when the policy can only learn from data collected with its current weights
    on_policy: bool = False
    #: False when ``_forward_learn`` draws no random numbers: its updates may then run in a thread beside the
    #: collector's sampling (``policy.learn.learner_thread``) and stay deterministic
    learn_draws_random: bool = True
    #: True when the policy can train asynchronously (``-m async``, A3C's Hogwild workers; entry/async_training.py): a
    #: learn mode that steps one acframe.optim optimizer (``self._optimizer``) on each worker's own rollout (on-policy) or
    #: on batches from each worker's own replay buffer (off-policy: ChainerRL's async ACER); ``share_memory`` shares the rest
    async_training: bool = False
    #: modes a policy of this class can build
    modes: Tuple[str, ...] = ('learn', 'collect', 'eval')
    #: the default collect forward keeps the actor's distribution statistics in the segment (the behaviour policy
    #: an off-policy correction needs); False keeps only the action (an on-policy learner recomputes them)
    collect_stats: bool = True
    #: True when the learn mode recomputes sequences from the segments' stored recurrent states, so the model may
    #: have a recurrent core (``policy.model.rnn``); other policies refuse one (``check_recurrent``)
    supports_rnn: bool = False
    #: ``acframe -m tune``'s default search space for this policy, ``{config key: spec}`` as ``--space`` takes it
    #: (docs/tuning.md); None: a subclass of a built-in policy searches its base's space, any other policy none
    tune_space: Optional[Dict[str, Any]] = None
    #: what ``get_train_sample`` gives a replay buffer: 'unrolls' (item-major, fixed length: IMPALA's) or 'segments'
    #: (the time-major segment: ACER's trajectories); a buffer class's ``sample_kind`` must agree (``check_buffer_kind``;
    #: None on either side: not checked)
    train_sample_kind: Optional[str] = None

    @classmethod
    def default_config(cls) -> Dict[str, Any]:
        """The policy's ``config``, merged section by section over the ``config`` of each class it inherits from (a
        subclass of ``A2CPolicy`` that declares only its new keys keeps A2C's)."""
        from ..config.compile import deep_merge

        merged: Dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            if isinstance(vars(klass).get('config'), dict):
                deep_merge(merged, copy.deepcopy(vars(klass)['config']), strict=False)
        return merged

    @classmethod
    def train_sample_len(cls, cfg: Any) -> int:
        """Env steps in one train sample, the unit of ``collect.n_sample`` (DI-engine's ``unroll_len``).

        1 (a sample is one transition) unless the policy trains on unrolls; ``cfg`` is ``cfg.policy``.
        """
        return 1

    @classmethod
    def learn_needs(cls, cfg: Any) -> List[LearnNeed]:
        """What the learn mode needs from the collected data before it can learn (``cfg`` is ``cfg.policy``).

        The start-up check refuses a run whose budget can never deliver it. Default: an off-policy policy samples
        ``learn.batch_size`` train samples of ``train_sample_len`` steps from its buffer; an on-policy one learns
        from any rollout. A new algorithm overrides this; the pipelines need no change.
        """
        if cls.on_policy or 'batch_size' not in cfg.learn:
            return []
        size, unroll = int(cfg.learn.batch_size), int(cls.train_sample_len(cfg))
        unit = f"samples of {unroll} steps" if unroll > 1 else "transitions"
        return [LearnNeed(size * unroll, 'budget', f"policy.learn.batch_size={size} {unit} need", 'gradient steps',
                          'lower policy.learn.batch_size')]

    @classmethod
    def batch_unit(cls, cfg: Any) -> int:
        """The samples a learn minibatch (``policy.learn.batch_size``) is a whole number of, in the whole compiled
        ``cfg``: 1 by default; a recurrent PPO's sequence length (its minibatches hold whole sequences). Data-parallel
        ranks split ``batch_size`` in shares of whole units."""
        return 1

    @classmethod
    def check_run_config(cls, cfg: Any) -> None:
        """Refuse, with a one-line ``ConfigError``, what this policy cannot do with the whole compiled ``cfg`` (its
        env and collection sizes included); called by ``create_policy`` before anything is built. Default: a
        recurrent core (``policy.model.rnn``) only where the policy supports one (``check_recurrent``), and a
        ``policy.learn.compile`` mode only where it can work (``compiled.check_compile``)."""
        check_recurrent(cfg.policy, cls)
        check_compile(cfg.policy)
        check_buffer_kind(cfg.policy, cls)

    def __init__(self, cfg: Any, model: Optional[nn.Module] = None, enable_field: Sequence[str] = ('learn', 'collect', 'eval'),
                 init_weights: Optional[Dict[str, torch.Tensor]] = None) -> None:
        self._cfg = cfg
        self._enable_field = tuple(enable_field)
        for field in self._enable_field:
            if field not in self.modes:
                raise ConfigError(f"enable_field '{field}' is not a mode of {type(self).__name__}; its modes are {self.modes}")
        action_space = cfg.model.get('action_space', 'discrete')
        if action_space not in self.supported_action_spaces:
            raise UnsupportedSpaceError(
                f"policy '{cfg.get('type', type(self).__name__)}' does not support {action_space} actions; "
                f"it supports {', '.join(self.supported_action_spaces)}"
            )
        self._action_space = action_space
        check_recurrent(cfg, type(self))
        self._device = torch.device('cuda' if cfg.get('cuda') else 'cpu')
        check_cuda(cfg)
        if model is not None and (type(self)._forward_collect is Policy._forward_collect
                                  or type(self)._forward_eval is Policy._forward_eval):
            _check_model_takes_mode(model)  # (the base class's modes call it with mode=; a class's own may not)
        asked = rnn_type(cfg.model.get('rnn'))
        if model is not None and asked and not getattr(model, 'recurrent', False):  # (it trained feed-forward, unsaid)
            raise ConfigError(f"policy.model.rnn.type='{asked}': the model given ({type(model).__qualname__}) has no "
                              f"recurrent core (its 'recurrent' attribute is not True), and a model given is used as "
                              f"it is; set policy.model.rnn.type=None, or give a recurrent model")
        self._model = (model if model is not None else self._create_model()).to(self._device)
        if init_weights is not None:  # before the modes are set up: what they derive from the model (ACER's average
            self.load_weights(init_weights)  # network, an optimizer's parameters) starts from these weights
        self._nvec = self._multi_discrete_nvec()
        # eval mode: the most likely action (True) or a sampled one, where the policy has policy.eval.deterministic
        self._deterministic_eval = bool(cfg.get('eval', {}).get('deterministic', True))
        self._on_gpu = self._device.type != 'cpu'
        self._sde_noise = self._make_sde_noise() if 'collect' in self._enable_field else None
        # recurrent models (policy.model.rnn): one hidden state per env in the collect and in the eval mode
        self._recurrent = bool(getattr(self._model, 'recurrent', False))
        if self._recurrent:
            self._check_recurrent_model(built=model is None)
        self._collect_states = EnvStates(self._model) if self._recurrent else None
        self._eval_states = EnvStates(self._model) if self._recurrent else None
        if 'learn' in self._enable_field:
            self._check_defines(('_init_learn', '_forward_learn'), 'learn')
        self._check_signatures([f"_{kind}_{field}" for field in self._enable_field if field != 'learn'
                                for kind in ('init', 'forward')])
        for field in self._enable_field:
            getattr(self, f'_init_{field}')()
        if 'learn' in self._enable_field:
            self._check_optimizer()
        if 'learn' in self._enable_field and compile_mode(cfg) != 'off':  # policy.learn.compile (policy/compiled.py)
            self._forward_learn = compiled_forward_learn(self, compile_mode(cfg))

    # ---- what a policy class must define ------------------------------------------------------------
    def _check_defines(self, names: Sequence[str], mode: str) -> None:
        """A ``PolicyError`` naming the first of ``names`` the class leaves to this base class (where it is not
        implemented), with a method of a close name the class defines as the likely misspelling."""
        import difflib

        cls = type(self)
        for name in names:
            if getattr(cls, name) is not getattr(Policy, name):
                continue
            own = [a for klass in cls.__mro__ if klass is not Policy and issubclass(klass, Policy) for a in vars(klass)
                   if callable(vars(klass)[a]) and not hasattr(Policy, a)]  # (the class's own methods)
            close = difflib.get_close_matches(name, own, n=1, cutoff=0.75)
            hint = f" (it defines {close[0]}: a misspelling?)" if close else ''
            raise PolicyError(f"policy '{self._cfg.get('type', cls.__name__)}' ({cls.__module__}.{cls.__qualname__}) "
                              f"does not define {name}{hint}; a policy's {mode} mode defines {' and '.join(names)} "
                              f"(docs/custom_policy.md)")
        self._check_signatures(names)

    #: what acframe passes to each method a policy class may define: ``name(*ARGUMENTS[name])``
    ARGUMENTS = {'_init_learn': (), '_init_collect': (), '_init_eval': (), '_forward_learn': ('batch',),
                 '_forward_collect': ('obs',), '_forward_eval': ('obs',)}

    def _check_signatures(self, names: Sequence[str]) -> None:
        """A ``PolicyError`` naming a method of ``names`` the class defines that cannot be called with the arguments
        acframe passes (``ARGUMENTS``; a wrong signature was a bare TypeError at its first call)."""
        import inspect

        cls = type(self)
        for name in names:
            method = getattr(self, name, None)
            if name not in self.ARGUMENTS or method is None or defining_class(cls, name) is Policy:
                continue
            try:
                inspect.signature(method).bind(*self.ARGUMENTS[name])
            except TypeError:
                wanted = ', '.join(('self',) + self.ARGUMENTS[name])
                raise PolicyError(f"policy '{self._cfg.get('type', cls.__name__)}' ({cls.__module__}.{cls.__qualname__}): "
                                  f"its {name}{inspect.signature(getattr(cls, name))} cannot be called as {name}({wanted}), "
                                  f"as acframe calls it; give it that signature (docs/custom_policy.md)") from None
            except ValueError:  # (no signature to read: a builtin)
                continue

    def _check_optimizer(self) -> None:
        """After ``_init_learn``: the base class's checkpoint (``_state_dict_learn``) and, with ``lr_decay_iters``, its
        learning-rate schedule (``_optimizers``) read ``self._optimizer`` unless the class defines its own."""
        cls = type(self)
        reads = [name for name in ('_state_dict_learn', '_optimizers') if defining_class(cls, name) is Policy
                 and (name != '_optimizers' or self._cfg.get('learn', {}).get('lr_decay_iters', 0))]  # (its reader)
        if reads and not isinstance(getattr(self, '_optimizer', None), torch.optim.Optimizer):
            raise PolicyError(f"policy '{self._cfg.get('type', cls.__name__)}' ({cls.__module__}.{cls.__qualname__}): its "
                              f"_init_learn set no self._optimizer (a torch optimizer, e.g. build_optimizer(params, "
                              f"self._cfg.learn)), which the base class's {' and '.join(reads)} use; set it, or "
                              f"define both for the optimizers you keep (docs/custom_policy.md)")

    # ---- one optimizer step, guarded -----------------------------------------------------------------
    def _optimizer_step(self, optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                        params: Sequence[torch.nn.Parameter], terms: Optional[Mapping[str, Any]] = None) -> float:
        """``backward`` of ``loss``, clip the gradients (``learn.grad_clip_type``), then step — unless the loss or
        the gradient is NaN/inf: then ``learn.on_nonfinite`` decides: 'error' raises ``NonFiniteError`` naming
        it (and those of ``terms``, the loss's named parts, that are NaN/inf), 'skip_update' drops this update
        (weights untouched). Returns the pre-clip gradient norm."""
        learn = self._cfg.learn
        for group in optimizer.param_groups:  # optimizer.zero_grad(set_to_none=True) without its profiler hooks
            for param in group['params']:
                param.grad = None
        loss.backward()
        shared = None  # (with data-parallel learners: every rank's loss summed, so all decide alike below)
        if self._data_parallel is not None:  # parallel.learner_num > 1: every rank steps on the same gradient
            shared = self._data_parallel.reduce_gradients(params, average=learn.get('loss_reduction', 'mean') != 'sum',
                                                          loss=loss)
        if 'grad_clip_value' not in learn:
            raise ConfigError(f"policy '{self._cfg.type}' has no policy.learn.grad_clip_value (the gradient clip threshold; "
                              f"its former name was clip_value): declare it in the policy's config")
        grad_norm = clip_gradients(params, learn.grad_clip_type, learn.grad_clip_value)
        # (the norm is a float: the backward is done, so reading the loss costs no wait; a NaN term without a gradient
        # leaves the gradient finite and the loss NaN)
        value = loss.item()
        if math.isfinite(grad_norm) and math.isfinite(value) and (shared is None or math.isfinite(shared)):
            optimizer.step()
            return grad_norm
        source = (f"the loss is {value}" if not math.isfinite(value) else f"the gradient norm is {grad_norm}"
                  if not math.isfinite(grad_norm) else "another data-parallel rank's loss is not finite")
        numbers = {name: _as_float(term) for name, term in (terms or {}).items()}
        bad = [f"{name}={number}" for name, number in numbers.items() if number is not None and not math.isfinite(number)]
        if bad and not math.isfinite(value):
            source += f" ({', '.join(bad[:4])} among its terms)"
        if learn.get('on_nonfinite', 'error') == 'error':
            raise NonFiniteError(f"{source} (policy '{self._cfg.type}'): the update was not applied; check the env's "
                                 f"rewards/observations and policy.learn.learning_rate, or set "
                                 f"policy.learn.on_nonfinite='skip_update' to drop such updates")
        optimizer.zero_grad(set_to_none=True)
        self.skipped_updates = getattr(self, 'skipped_updates', 0) + 1
        if self.skipped_updates in (1, 10, 100, 1000):
            warnings.warn(f"acframe: {source}; update skipped ({self.skipped_updates} so far; policy.learn.on_nonfinite='skip_update')")
        return grad_norm

    #: the data-parallel group (``parallel.learner_num > 1``, ``entry.data_parallel``) whose ranks all-reduce each
    #: gradient between ``backward`` and the clip, so one optimizer step on every rank sees the whole batch's gradient
    _data_parallel: Any = None

    def use_data_parallel(self, group: Any) -> None:
        """Learn as one rank of ``group`` (``entry.data_parallel.DataParallel``): gradients are all-reduced — averaged
        when the losses are means, summed with ``learn.loss_reduction='sum'`` — before clipping and the step, and
        ``_normalize_advantages`` uses the statistics of the whole batch over the ranks; the running normalization
        statistics (``model.obs_norm``, ``learn.reward_norm``) merge every rank's batch at each update, so every rank
        holds the same."""
        self._data_parallel = group
        share_statistics([self._model, *self._learn_statistics().values()], reduce=group.combine_moments)

    def share_memory(self) -> None:
        """Move the model and the optimizer's statistics to shared memory, in place (``-m async``: processes forked
        afterwards train one model with one optimizer state, A3C's shared RMSprop/Adam). A policy with more
        optimizers than ``self._optimizer`` overrides it. The running normalization statistics (``model.obs_norm``,
        ``learn.reward_norm``) are shared too, each update under one lock (``models.normalization.share_statistics``)."""
        from ..optim import share_optimizer_state

        self._model.share_memory()
        share_optimizer_state(self._optimizer)
        share_statistics([self._model, *self._learn_statistics().values()], lock=multiprocessing.get_context('fork').Lock())

    def _normalize_advantages(self, advantages: torch.Tensor) -> torch.Tensor:
        """``rl_utils.normalize_advantages`` over the whole batch: with data-parallel learners, over every rank's share."""
        if self._data_parallel is not None:
            return self._data_parallel.normalize_advantages(advantages)
        return normalize_advantages(advantages)

    def _mean_over_learners(self, value: Any) -> Any:
        """``value`` (a tensor or a number computed from this learner's batch, e.g. a measured KL) averaged over every
        data-parallel learner (``parallel.learner_num > 1``: each holds an equal share of the batch, so the mean of
        the shares' means is the whole batch's), the same bits on every rank; ``value`` itself with one learner. What a
        policy derives from its batch and keeps (an adaptive coefficient, a schedule) must agree across the ranks, as
        their weights do; under ``-m async`` each worker keeps its own (the checkpoint holds worker 0's). Gradients
        need none of this (``_learn_step`` averages them), nor advantages (``_normalize_advantages``). It is a
        collective: every rank calls it at the same points of its learn mode (not behind a condition of its own
        rank's data, nor in the collect or eval modes, which the ranks do not run in step). The result is detached,
        floating point (an integer statistic's mean is a float)."""
        if self._data_parallel is None:
            return value
        if isinstance(value, torch.Tensor):
            return self._data_parallel.mean(value)
        return self._data_parallel.mean(torch.tensor(float(value), dtype=torch.float64)).item()

    def _learn_step(self, total_loss: torch.Tensor, **terms: Any) -> Dict[str, float]:
        """One guarded step of ``self._optimizer`` on ``total_loss`` over ``self._params`` (``_optimizer_step``;
        the model's parameters when ``_init_learn`` set no ``_params``).

        Returns the step's info for the learner: ``cur_lr``, ``total_loss``, each of ``terms`` (tensors or
        numbers) as a float, and ``grad_norm`` (before clipping).
        """
        if not isinstance(total_loss, torch.Tensor):
            raise PolicyError(f"policy '{self._cfg.get('type', type(self).__name__)}': _learn_step(total_loss) takes the "
                              f"loss tensor (its gradient is what the step follows), got {type(total_loss).__name__}; "
                              f"pass the tensor, not its value")
        if total_loss.numel() != 1:
            raise PolicyError(f"policy '{self._cfg.get('type', type(self).__name__)}': _learn_step(total_loss) takes the "
                              f"loss as one number (a 0-d tensor), got {tuple(total_loss.shape)}; reduce it (e.g. "
                              f".mean() over the batch)")
        params = getattr(self, '_params', None)
        if params is None:
            params = self._params = list(self._model.parameters())
        grad_norm = self._optimizer_step(self._optimizer, total_loss, params, terms)
        info = {'cur_lr': self._optimizer.param_groups[0]['lr'], 'total_loss': total_loss.item()}
        info.update({k: v.item() if isinstance(v, torch.Tensor) else float(v) for k, v in terms.items()})
        info['grad_norm'] = grad_norm
        return info

    def check_finite(self, where: str) -> None:
        """``NonFiniteError`` when a weight or buffer of the model is NaN/inf (``where`` says when it was found)."""
        bad = nonfinite_tensor_names(self._model.state_dict())
        if bad:
            raise NonFiniteError(f"the model's {', '.join(bad[:4])} hold NaN/inf at {where}; a run never trains on or "
                                 f"saves non-finite weights")

    # ---- model -------------------------------------------------------------------------------------
    def default_model(self) -> Tuple[str, Dict[str, Any]]:
        """``(registered model name, extra kwargs)`` of the model this policy builds by default."""
        return 'vac', {}

    def _create_model(self) -> nn.Module:
        import inspect

        name, extra = self.default_model()
        kwargs = dict(extra)
        kwargs.update({k: v for k, v in dict(self._cfg.model).items() if k != 'type'})
        name = self._cfg.model.get('type', name)
        model_cls = MODEL_REGISTRY.get(name)
        try:  # (a class's parameters without self; a factory function's own)
            params = dict(inspect.signature(model_cls).parameters)
        except (TypeError, ValueError):
            params = dict(inspect.signature(model_cls.__init__).parameters)
        takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
        if not takes_any:
            # what acframe fills from the env (fill_model_spaces): action_space only says what action_shape is for, and
            # a model may do without it; obs_shape and action_shape it must take
            if 'action_space' not in params:
                kwargs.pop('action_space', None)
            lacking = [key for key in ('obs_shape', 'action_shape') if key not in params]
            if lacking:
                takes = ', '.join(p for p in params if p != 'self') or 'nothing'
                raise ConfigError(f"model '{name}' ({getattr(model_cls, '__module__', '?')}."
                                  f"{getattr(model_cls, '__qualname__', name)}) takes no {' and no '.join(lacking)}: a "
                                  f"model's constructor takes obs_shape and action_shape, which acframe fills from the "
                                  f"env, as keyword arguments (docs/custom_policy.md); it takes: {takes}")
        if 'rnn' in kwargs and not rnn_type(kwargs['rnn']) and 'rnn' not in params:
            kwargs.pop('rnn')  # the declared default (feed-forward) of a policy whose model has no recurrent core
        elif 'rnn' in kwargs and 'rnn' not in params and getattr(model_cls, 'recurrent', None) is True:
            dropped = " (its **kwargs would drop it)" if takes_any else ''
            raise ConfigError(f"policy.model.rnn.type='{rnn_type(kwargs['rnn'])}' asks for acframe's recurrent core, and "
                              f"model '{name}' is recurrent of its own and takes no rnn{dropped}; set "
                              f"policy.model.rnn.type=None (policy.model.rnn.seq_len and burn_in still cut its "
                              f"sequences)")
        elif 'rnn' in kwargs and 'rnn' not in params and not takes_any:
            default = self.default_model()[0]
            use = f"policy.model.type='{default}' (this policy's default) or " if default != name else ""
            raise ConfigError(f"policy.model.rnn.type='{rnn_type(kwargs['rnn'])}': model '{name}' has no recurrent core; "
                              f"use {use}a model whose constructor takes rnn, or set policy.model.rnn.type=None")
        if isinstance(kwargs.get('rnn'), Mapping):
            from ..registry import closest
            declared = type(self).default_config().get('model', {}).get('rnn')  # (the learn mode's: seq_len, burn_in)
            known = RNN_MODEL_KEYS + tuple(k for k in (declared if isinstance(declared, Mapping) else {})
                                           if k not in RNN_MODEL_KEYS)
            for key in kwargs['rnn']:
                if key not in known:  # (checked here too: a policy that does not declare the block, compile passes on)
                    hint = closest(key, known, cutoff=0.6)
                    raise ConfigError(f"unknown config key 'policy.model.rnn.{key}'" + (
                        f"; did you mean 'policy.model.rnn.{hint}'?" if hint else f"; valid keys: {', '.join(known)}"))
            kwargs['rnn'] = {k: kwargs['rnn'][k] for k in RNN_MODEL_KEYS if k in kwargs['rnn']}
        if not takes_any:
            from ..config.foreign_names import foreign_name_message
            from ..registry import closest
            for key in kwargs:
                if key not in params:
                    foreign = foreign_name_message(f'policy.model.{key}', key)
                    hint = (f'rnn.{key}' if key in RNN_MODEL_KEYS + ('seq_len', 'burn_in') and 'rnn' in params
                            else RNN_ALIASES.get(key) if 'rnn' in params and key in RNN_ALIASES
                            else closest(key, params, cutoff=0.6))  # (a recurrent core's key one level too high)
                    extra_hint = (f": {foreign}" if foreign else f"; did you mean 'policy.model.{hint}'?" if hint
                                  else f"; valid keys: {', '.join(p for p in params if p != 'self')}")
                    raise ConfigError(f"unknown config key 'policy.model.{key}' for model '{name}'{extra_hint}")
        self._check_model_memory(name, lambda: model_cls(**kwargs))
        try:
            model = model_cls(**kwargs)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"policy.model: cannot build model '{name}': {describe_raised(exc)}") from exc
        base_modes = (type(self)._forward_collect is Policy._forward_collect
                      or type(self)._forward_eval is Policy._forward_eval)  # (which call it with mode=)
        _check_model_takes_mode(model, f"model '{name}'", needs_mode=base_modes)  # (as a model given as model= is)
        for key, attribute, what in (('obs_norm', 'obs_normalizer', 'an obs_normalizer'), ('use_sde', 'use_sde', 'use_sde')):
            if kwargs.get(key) and not getattr(model, attribute, None):  # (taken through **kwargs and dropped)
                raise ConfigError(f"policy.model.{key}=True: model '{name}' was built without {what} (the attribute "
                                  f"the policy reads: docs/custom_policy.md); give it one, or set "
                                  f"policy.model.{key}=False")
        asked = rnn_type(kwargs.get('rnn'))
        if asked and not getattr(model, 'recurrent', False):  # (it took rnn through **kwargs and dropped it)
            raise ConfigError(f"policy.model.rnn.type='{asked}': model '{name}' was built without a recurrent core "
                              f"(its 'recurrent' attribute is not True); give it one (docs/custom_policy.md, "
                              f"\"A recurrent form\") or set policy.model.rnn.type=None")
        return model

    def _check_recurrent_model(self, built: bool = True) -> None:
        """A ``ConfigError`` naming the model when it says it is recurrent (``recurrent = True``) and lacks what the
        modes call: ``initial_state(batch)`` (collect and eval) and, to learn, ``unroll(obs, state, starts)`` (it was
        an AttributeError traceback at the first gradient step, with the run folder left behind); or, ``built`` from
        the config, when its class did not say so (a ``recurrent`` set per instance): the start-up checks of its
        sequences (``config.compile.recurrent_model``) read the class, so they were passed over."""
        from ..config.compile import recurrent_model

        cls = type(self._model)
        named = self._cfg.get('model', {}).get('type')
        what = f"model '{named}' ({cls.__module__}.{cls.__qualname__})" if named else f"model {cls.__qualname__}"
        needed = ('initial_state', 'unroll') if 'learn' in self._enable_field else ('initial_state',)
        missing = [name for name in needed if not callable(getattr(self._model, name, None))]
        if missing:
            raise ConfigError(f"{what} is recurrent (its 'recurrent' attribute is True) and defines no "
                              f"{' and no '.join(missing)}: a recurrent model defines initial_state(batch) and "
                              f"unroll(obs, state, starts) (docs/custom_policy.md, \"A recurrent form\")")
        if built and not recurrent_model(self._cfg) and getattr(cls, 'recurrent', None) is not True:
            raise ConfigError(f"{what} is recurrent as built (its instance's 'recurrent' is True) but its class does "
                              f"not say so (recurrent = True as a class attribute), which is what the start-up checks "
                              f"of policy.model.rnn.seq_len and burn_in read; set recurrent = True on the class "
                              f"(register a class of its own for the recurrent form), or give the instance (model=)")

    def _check_model_memory(self, name: str, build: Callable[[], nn.Module]) -> None:
        """``ConfigError`` when the model ``build`` makes would not fit in the memory available: it is built once on
        the meta device (shapes only, nothing allocated) and its weights counted — times 4 with a learn mode
        (gradients and Adam's two moments), as buffers are checked (``entry.budget``). A model that cannot be
        built on the meta device is not estimated."""
        from ..utils import available_memory

        try:
            with torch.device('meta'):
                shapes = build()
            tensors = list(shapes.parameters()) + list(shapes.buffers())
            size, count = sum(t.numel() * t.element_size() for t in tensors), sum(t.numel() for t in tensors)
        except Exception:  # a user's model that meta tensors cannot build: built for real, unestimated
            return
        need = size * (4 if 'learn' in self._enable_field else 1)
        if self._device.type == 'cuda':
            free = torch.cuda.mem_get_info(self._device)[0]
        else:
            free = available_memory()
        if free is not None and need > free:
            gib = lambda n: f"{n / 2 ** 30:.1f} GiB"  # noqa: E731
            raise ConfigError(f"policy.model: model '{name}' has {count:,} weights ({gib(size)}; about {gib(need)} "
                              f"to train) but {gib(free)} of memory is available; make policy.model's layers smaller")

    @property
    def model(self) -> nn.Module:
        return self._model

    @property
    def device(self) -> torch.device:
        """Where the model and the learn mode's tensors live: ``cuda`` with ``policy.cuda``, else ``cpu``."""
        return self._device

    def get_weights(self) -> Dict[str, torch.Tensor]:
        """The model's weights (shared by every mode in one process)."""
        return self._model.state_dict()

    def load_weights(self, weights: Dict[str, torch.Tensor]) -> None:
        """Load model weights; a ``CheckpointError`` saying what does not fit (in one line) when they don't."""
        try:
            self._model.load_state_dict(weights)
        except (KeyError, RuntimeError, ValueError, TypeError, AttributeError) as exc:
            why = why_weights_do_not_fit(self._model.state_dict(), weights, exc)
            raise CheckpointError(f"the checkpoint does not fit this policy's model: {why}") from exc

    # ---- modes -------------------------------------------------------------------------------------
    @property
    def learn_mode(self) -> _Mode:
        self._require('learn')
        return _Mode('learn', forward=self._in_mode(True, self._learn_on_device if self._on_gpu else self._forward_learn),
                     state_dict=self._state_dict_learn,
                     load_state_dict=self._load_state_dict_learn, monitor_vars=self._monitor_vars_learn,
                     optimizers=self._optimizers, get_weights=self.get_weights, model=self._model,
                     prepare=self._in_mode(False, _user_method(
                         self._prepare_on_device if self._on_gpu else self._prepare_rollout,
                         "the policy's _prepare_rollout")),
                     minibatches=self._minibatches,
                     samples=_user_method(self._batch_samples, "the policy's _batch_samples"),
                     policy_cfg=self._cfg)

    @property
    def collect_mode(self) -> _Mode:
        self._require('collect')
        return _Mode('collect', forward=self._in_mode(False, self._collect_on_device if self._on_gpu else self._forward_collect),
                     get_train_sample=_user_method(self._get_train_sample, "the policy's _get_train_sample"),
                     load_weights=self.load_weights, reset=self._reset_collect, policy_cfg=self._cfg,
                     unroll_len=self.train_sample_len(self._cfg), state_dict=self._state_dict_collect,
                     load_state_dict=self._load_state_dict_collect, episode_start=self._episode_start_collect)

    @property
    def eval_mode(self) -> _Mode:
        self._require('eval')
        return _Mode('eval', forward=self._in_mode(False, self._eval_on_device if self._on_gpu else self._forward_eval),
                     load_weights=self.load_weights, policy_cfg=self._cfg, reset=self._reset_eval,
                     episode_start=self._episode_start_eval, recurrent=self._recurrent,
                     step=self._in_mode(False, self._eval_step_on_device if self._on_gpu else self._forward_eval_step))

    def _in_mode(self, training: bool, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with the model in training mode (``training``: the learn mode's step) or evaluation mode (the collect
        and eval modes, and the learn mode's prepare: the behaviour policy's statistics), as DI-engine's and SB3's
        policies switch it: a model with dropout or batch normalization acts in collection and evaluation as after
        training (``-m eval``, ``load_policy``, export). The switch walks the model's modules only when the mode
        changes (a round's first call)."""
        @functools.wraps(fn)
        def in_mode(*args: Any, **kwargs: Any) -> Any:
            model = self._model
            if model.training != training:
                model.train(training)
            return fn(*args, **kwargs)
        return in_mode

    # ---- policy.cuda: the model on the GPU, data from and to the CPU workers ------------------------
    def _learn_on_device(self, batch: Any) -> Dict[str, float]:
        """``_forward_learn`` on a batch copied to the model's device through pinned memory (uint8 stays uint8)."""
        return self._forward_learn(to_device(batch, self._device))

    def _prepare_on_device(self, rollout: Any) -> Any:
        """``_prepare_rollout`` on a rollout copied to the model's device (its minibatches are then already there)."""
        return self._prepare_rollout(to_device(rollout, self._device))

    def _collect_on_device(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        return _to_cpu(self._forward_collect(to_device(obs, self._device)))

    def _eval_on_device(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        return _to_cpu(self._forward_eval(to_device(obs, self._device)))

    def _eval_step_on_device(self, obs: Any, state: torch.Tensor,
                             deterministic: Optional[bool] = None) -> Dict[str, torch.Tensor]:
        return {k: v.cpu() for k, v in self._forward_eval_step(to_device(obs, self._device), state.to(self._device),
                                                              deterministic).items()}

    def _require(self, field: str) -> None:
        if field not in self._enable_field:
            raise ConfigError(f"{type(self).__name__} was built without its {field} mode (enable_field={list(self._enable_field)})")

    # ---- learn -------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        raise NotImplementedError

    def _forward_learn(self, batch: Any) -> Dict[str, float]:
        raise NotImplementedError

    def _prepare_rollout(self, rollout: Any) -> Any:
        """On-policy: turn a collected rollout into the *plan* its gradient steps read (default: the rollout).

        Called once per rollout, with the weights that collected it, before its first gradient step. The plan
        is plain data (a tree or dict of tensors): the pipeline keeps it in checkpoints with the index of the
        next step, so a resumed run continues the rollout where it stopped.
        """
        return rollout

    def _minibatches(self, plan: Any, start: int = 0) -> Iterator[Any]:
        """On-policy: the batches of the gradient steps ``start, start + 1, ...`` on one prepared rollout.

        Each batch is trained by one ``forward`` (one gradient step, one ``Learner.train_iter``), so the policy
        alone decides how many steps a rollout gets. The generator runs lazily between the steps (it may
        update ``plan`` with the current weights, e.g. PPO's ``recompute_adv``) and must give the same batches
        when restarted at ``start`` with the plan and weights of that point. Default: the rollout is one batch.
        """
        if start == 0:
            yield plan

    def _batch_samples(self, batch: Any) -> int:
        """Transitions one ``forward`` trains on (default: a time-major ``(T, B)`` batch's ``T·B``, its ``reward``'s
        elements; a policy whose batches hold no ``reward`` defines its own)."""
        reward = batch.get('reward') if isinstance(batch, Mapping) else getattr(batch, 'reward', None)
        if not isinstance(reward, torch.Tensor):
            cls = type(self)
            raise PolicyError(f"policy '{self._cfg.get('type', cls.__name__)}' ({cls.__module__}.{cls.__qualname__}): "
                              f"its learn batches hold no 'reward' tensor, which the default _batch_samples counts "
                              f"(the transitions a gradient step trains on); define _batch_samples(batch) -> int "
                              f"(docs/adding_an_algorithm.md)")
        return int(reward.numel())

    def _optimizers(self) -> List[torch.optim.Optimizer]:
        """The optimizers a learning-rate schedule acts on."""
        return [self._optimizer]

    def _learn_statistics(self) -> Dict[str, Any]:
        """Running statistics the learn mode keeps besides the model and the optimizer (e.g. ``reward_norm``'s), by
        their name in the learn state: objects with ``state_dict``/``load_state_dict``, None where switched off.
        ``_state_dict_learn`` saves them and ``_load_state_dict_learn`` restores them; override to add yours."""
        return {}

    def _state_dict_learn(self) -> Dict[str, Any]:
        state = {'model': self._model.state_dict(), 'optimizer': self._optimizer.state_dict()}
        state.update({name: stats.state_dict() for name, stats in self._learn_statistics().items() if stats is not None})
        return state

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        try:
            self._model.load_state_dict(state['model'])
            if 'optimizer' in state and hasattr(self, '_optimizer'):
                self._optimizer.load_state_dict(state['optimizer'])
        except (KeyError, RuntimeError, ValueError, TypeError, AttributeError) as exc:
            model = state.get('model') if isinstance(state, Mapping) else None
            why = why_weights_do_not_fit(self._model.state_dict(), model, exc)
            raise CheckpointError(f"the checkpoint does not fit this policy's model/optimizer: {why}") from exc
        for name, stats in self._learn_statistics().items():
            if stats is not None and name in state:
                stats.load_state_dict(state[name])

    def _monitor_vars_learn(self) -> List[str]:
        return ['cur_lr', 'total_loss']

    def _evaluate(self, obs: Any, lead_dims: int = 2) -> Dict[str, torch.Tensor]:
        """The model's ``compute_actor_critic`` on observations ``(*lead, *obs_shape)`` in one batched call.

        ``lead`` is the first ``lead_dims`` dimensions: ``(T+1, B)`` for a time-major segment's observations
        (the step after the last included, to bootstrap from), ``(N,)`` for a minibatch of transitions. Every
        output comes back as ``(*lead, ...)``: ``value`` ``lead``, the actor's statistics ``(*lead, dim)``.
        """
        lead = lead_shape(obs, lead_dims)  # (obs may be a Dict observation's tree: a leaf per key)
        obs, mask = split_action_mask(flatten_lead(obs, lead_dims))
        output = self._checked_output(self._model(obs, mode='compute_actor_critic'), 'compute_actor_critic', obs)
        output = masked(output, mask)
        return {k: v.reshape(lead + tuple(v.shape[1:])) for k, v in output.items()}

    def _evaluate_rollout(self, rollout: Any, ends: bool = True) -> Dict[str, torch.Tensor]:
        """``compute_actor_critic`` on a collected segment's ``T + 1`` observations, ``(T+1, B, ...)`` each.

        Feed-forward: ``_evaluate(rollout.obs)``. Recurrent (``policy.model.rnn``): the sequence is recomputed
        from the state stored at the segment's first step (``rollout.rnn_state[0]``), the state zeroed before every
        step the collector flagged as an episode start (``rollout.episode_start``) and before the bootstrap
        observation when the last step ended its episode; ``'ends'`` ``(T+1, B, R, H)`` then holds the state after
        every step that ends an episode fragment (to value a truncated episode's final observation); ``ends=False``:
        without them (the model's faster unroll), where the caller values no final observation.
        """
        if not self._recurrent:
            return self._evaluate(rollout.obs)
        missing = [key for key in ('rnn_state', 'episode_start') if not _carries(rollout, key)]
        if missing:  # (a plan of one's own that kept the observations only: an AttributeError deep in here)
            raise PolicyError(f"policy '{self._cfg.get('type', type(self).__name__)}': _evaluate_rollout was given a "
                              f"batch without {' and '.join(missing)}, which a recurrent model's sequence is recomputed "
                              f"from; pass the segment as collected, its rnn_state and episode_start kept (docs/"
                              f"custom_policy.md, \"A recurrent form\")")
        done = rollout.terminated | rollout.truncated
        starts = torch.cat([torch.zeros_like(done[:1]), rollout.episode_start[1:].to(torch.bool), done[-1:]])
        return self._evaluate_unroll(rollout.obs, rollout.rnn_state[0], starts, ends=ends)

    def _evaluate_unroll(self, obs: Any, state: torch.Tensor, starts: torch.Tensor,
                         model: Optional[nn.Module] = None, ends: bool = True,
                         actor_only: bool = False) -> Dict[str, torch.Tensor]:
        """A recurrent model's (default: this policy's) outputs on observations ``(T, B, *obs_shape)`` from ``state``
        ``(B, R, H)``, the state zeroed before every step where ``starts`` ``(T, B)`` is True; every output
        ``(T, B, ...)`` (``VAC.unroll``; ``ends=False``: without ``'ends'``, the model's faster unroll;
        ``actor_only``: the action distribution alone, ``model.unroll_actor`` where the class that defines the
        model's ``unroll`` defines it too: a model of a user's own may have ``unroll`` alone, or override it and
        inherit an ``unroll_actor`` that no longer agrees with it; those run ``unroll``)."""
        lead = lead_shape(obs, 2)
        obs, mask = split_action_mask(flatten_lead(obs, 2))
        own = model is None  # (the policy's model, checked as its other modes are; ACER's average network is a copy)
        model = self._model if own else model
        if actor_only and _defined_together(type(model), 'unroll', 'unroll_actor'):
            output, mode = model.unroll_actor(obs, state, starts), 'unroll_actor'
        else:
            # a model whose unroll has no faster form without the fragment-end states (ACER's) gives them anyway
            faster = not ends and _takes_keyword(model.unroll, 'ends')
            output = model.unroll(obs, state, starts, ends=False) if faster else model.unroll(obs, state, starts)
            mode = 'unroll'
        if own:
            output = self._checked_output(output, mode, obs)
        output = masked(output, mask)
        return {k: v.reshape(lead + tuple(v.shape[1:])) for k, v in output.items()}

    def _compute_actor(self, obs: Any, state: Optional[torch.Tensor] = None,
                       model: Optional[nn.Module] = None) -> Dict[str, torch.Tensor]:
        """``model.compute_actor`` (default: this policy's model) on ``obs`` (from ``state`` for a recurrent model), the
        logits of illegal actions masked when ``obs`` carries an ``'action_mask'`` (docs/masks.md): every action the
        modes sample or take, and every statistic a segment stores, is then over the legal actions only."""
        obs, mask = split_action_mask(obs)
        output = model_output(self._model if model is None else model, 'compute_actor', obs, state)
        return masked(self._checked_output(output, 'compute_actor', obs), mask)

    def _checked_output(self, output: Any, mode: str, obs: Any = None) -> Any:
        """``output`` of the model's ``mode`` on ``obs``; the first of each mode checked against the model contract, so
        a model of a user's that breaks it is one line naming it and what is wrong (it was a traceback deep in a loss,
        or no error at all: a logit short of the action space trains, its last action never taken). Its outputs are
        checked for NaN/inf only on finite observations: a NaN observation is the env's to answer for (the
        collector names it)."""
        checked = self.__dict__.setdefault('_outputs_checked', set())
        if mode not in checked and not (torch.jit.is_tracing() or torch.compiler.is_compiling()):  # (eager calls)
            problem = output_problem(output, self._action_space, self._action_size(), self._stats_keys(),
                                     check_finite=all_finite(obs))
            lacking = ([key for key in self._critic_keys() if key not in output]
                       if mode in ('compute_actor_critic', 'unroll') else [])
            if problem is None and lacking:
                problem = (f"gave no {' and no '.join(repr(k) for k in lacking)} (its keys: "
                           f"{', '.join(map(str, output)) or 'none'}); the learn mode of policy "
                           f"'{self._cfg.get('type', type(self).__name__)}' reads "
                           f"{', '.join(repr(k) for k in self._critic_keys())}")
            if problem is not None:
                model = type(self._model)
                raise PolicyError(f"the model ({model.__module__}.{model.__qualname__}) {mode} {problem} "
                                  f"(the model contract: docs/custom_policy.md)")
            checked.add(mode)
        return output

    def _critic_keys(self) -> Tuple[str, ...]:
        """The critic's outputs this policy's learn mode reads from the model's ``compute_actor_critic``."""
        return ('value',)

    def _action_size(self) -> Optional[int]:
        """How wide the actor's statistics are: the action count (discrete), the sum of ``nvec`` (multi-discrete) or
        the action dims (continuous); None where the config does not say."""
        if self._action_space == 'multi_discrete':
            return sum(self._nvec) if self._nvec else None
        shape = self._cfg.model.get('action_shape')
        if isinstance(shape, int):
            return shape
        if isinstance(shape, (list, tuple)) and all(isinstance(n, int) for n in shape):
            return int(math.prod(shape))
        return None

    def _distribution(self, output: Dict[str, torch.Tensor], drop_last: bool = False) -> Any:
        """The action distribution of the actor's statistics in ``output`` (without the last step: ``drop_last``,
        for the bootstrap observation of a ``(T+1, B)`` segment)."""
        try:
            stats = {k: output[k][:-1] if drop_last else output[k] for k in self._stats_keys()}
        except KeyError as exc:
            raise self._missing_statistic(exc, output) from None
        return make_distribution(stats, self._action_space, self._nvec)

    def _action_distribution(self, output: Dict[str, torch.Tensor]) -> Any:
        """The action distribution of a mode's model ``output`` (its statistics: ``_stats_keys``)."""
        try:
            return make_distribution(output, self._action_space, self._nvec)
        except KeyError as exc:
            raise self._missing_statistic(exc, output) from None

    def _missing_statistic(self, exc: KeyError, output: Mapping) -> PolicyError:
        """A model of a user's that keeps to another output contract: one line naming it, the key and the keys."""
        model = type(self._model)
        return PolicyError(f"the model ({model.__module__}.{model.__qualname__}) gave no {exc.args[0]!r} in its actor "
                           f"output (its keys: {', '.join(map(str, output)) or 'none'}); for a "
                           f"{self._action_space.replace('_', '-')} action space a model's actor output holds "
                           f"{' and '.join(repr(k) for k in self._stats_keys())} (docs/custom_policy.md)")

    def _discounts(self, terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
        """Per-step discounts ``γ·(1 − (terminated | truncated))``, ``(T, B)``: the recursion stops at every episode end
        (a truncated step gets its bootstrap ``γ·V(final_obs)`` in its reward: ``_bootstrap_truncation``)."""
        return float(self._cfg.learn.discount_factor) * (~(terminated | truncated)).float()

    def _scaled_reward(self, reward: torch.Tensor) -> torch.Tensor:
        """``reward · policy.learn.reward_scale`` (the tensor itself when the scale is 1)."""
        scale = float(self._cfg.learn.get('reward_scale', 1.0))
        return reward if scale == 1.0 else reward * scale

    def _stats_keys(self) -> Tuple[str, ...]:
        """The keys of the actor's distribution statistics for this policy's action space."""
        return ('mu', 'sigma') if self._action_space == 'continuous' else ('logit',)

    def _multi_discrete_nvec(self) -> List[int]:
        """The categorical sizes of a MultiDiscrete action (empty for other spaces)."""
        if self._action_space != 'multi_discrete':
            return []
        nvec = getattr(self._model, 'nvec', None) or self._cfg.model.get('action_shape')
        return [int(n) for n in nvec]

    def _update_obs_norm(self, obs: torch.Tensor) -> None:
        """Learn mode, before the loss (A2C, PPO: after a rollout's last gradient step): merge a time-major batch's
        observations ``obs[:-1]`` (``obs[-1]`` is the bootstrap state, the next segment's first) into the model's
        running statistics, when it has an ``obs_normalizer`` (``policy.model.obs_norm``). The learner owns the
        statistics: collect and eval modes apply them frozen, and parallel actors receive them with the weights
        (they are model buffers).
        """
        normalizer = getattr(self._model, 'obs_normalizer', None)
        if normalizer is not None:
            normalizer.update(split_action_mask(obs)[0][:-1])

    def _bootstrap_truncation(self, reward: torch.Tensor, truncated: torch.Tensor, final_obs: torch.Tensor,
                              ends: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Fold ``gamma * V(final_obs)``, with the current weights, no gradient and in eval mode (``_critic_values``),
        into the reward of every truncated step (``rl_utils.fold_truncation``; the caller gives those steps discount 0).

        ``reward``/``truncated`` are ``(T, B)``, ``final_obs`` ``(T, B, obs)``; gamma is ``policy.learn.discount_factor``
        and V the model's ``compute_critic``; a recurrent model continues from ``ends`` ``(T, B, R, H)``, the state
        after each step that ends an episode fragment (``_evaluate_rollout``'s ``'ends'``).
        """
        if not truncated.any():
            self._probe_critic(final_obs, truncated, ends)
            return reward
        values = self._critic_values(final_obs[truncated], None if ends is None else ends[truncated])
        final_values = torch.zeros_like(reward)
        final_values[truncated] = values
        return fold_truncation(reward, truncated.float(), final_values, self._cfg.learn.discount_factor)

    def _critic_values(self, final_obs: Any, ends: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``_final_value`` of ``N`` final observations with no gradient and the model in eval mode, its mode put back:
        a bootstrap is the critic's estimate as after training (dropout off, so no random draw; batch norm on its
        running statistics: a truncated step or two are no batch to normalize, and must not move them), as the
        learn mode's prepare and the collect mode see the model. (Inside a compiled learn step the mode is left as
        it is: switching it there would recompile.)"""
        model = self._model
        switch = model.training and not (torch.jit.is_tracing() or torch.compiler.is_compiling())
        try:
            if switch:
                model.eval()
            with torch.no_grad():
                return self._final_value(final_obs, ends)
        finally:
            if switch:
                model.train(True)

    def _probe_critic(self, final_obs: torch.Tensor, truncated: torch.Tensor,
                      ends: Optional[torch.Tensor] = None) -> None:
        """Check the model's ``compute_critic`` against the model contract on one row of the first batch that has no
        truncation, as ``_critic_values`` will call it: the first truncation may come late in a run, and a value of
        the wrong shape failed there, deep in the fold. A recurrent model without the states of the fragments' ends
        (``ends``) is checked where one ends."""
        checked = self.__dict__.setdefault('_outputs_checked', set())
        if ('compute_critic' in checked or torch.jit.is_tracing() or torch.compiler.is_compiling()
                or ends is None and getattr(self, '_recurrent', False)):
            return
        picked = torch.zeros(truncated.shape, dtype=torch.bool, device=truncated.device)
        picked.view(-1)[0] = True
        self._critic_values(final_obs[picked], None if ends is None else ends[picked])
        checked.add('compute_critic')  # (also where the policy's own _final_value does not check it: masked ACER)

    def _final_value(self, obs: Any, state: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``V`` ``(N,)`` of ``N`` final observations (a recurrent model from ``state`` ``(N, R, H)``): the model's
        ``compute_critic``, which takes no action mask (ACER overrides it: its ``V = Σ π Q`` is over legal actions);
        its first output checked against the model contract."""
        plain = split_action_mask(obs)[0]
        return self._checked_critic(model_output(self._model, 'compute_critic', plain, state), plain)['value']

    def _checked_critic(self, output: Any, obs: Any) -> Any:
        """The first ``compute_critic`` output checked: a dict whose ``value`` is ``(N,)`` for ``N`` observations."""
        checked = self.__dict__.setdefault('_outputs_checked', set())
        if 'compute_critic' in checked or torch.jit.is_tracing() or torch.compiler.is_compiling():
            return output
        size = lead_shape(obs, 1)[0] if not isinstance(obs, dict) else int(next(iter(obs.values())).shape[0])
        value = output.get('value') if isinstance(output, Mapping) else None
        problem = None
        if not isinstance(output, Mapping):
            problem = f"gave a {type(output).__name__}, not a dict"
        elif not isinstance(value, torch.Tensor):
            problem = f"gave no 'value' tensor (its keys: {', '.join(map(str, output)) or 'none'})"
        elif tuple(value.shape) != (size,):
            squeeze = ' (squeeze its last dim)' if tuple(value.shape) == (size, 1) else ''
            problem = f"gave 'value' of shape {tuple(value.shape)} for {size} observations, not ({size},){squeeze}"
        if problem is not None:
            model = type(self._model)
            raise PolicyError(f"the model ({model.__module__}.{model.__qualname__}) compute_critic {problem} (the model "
                              f"contract: docs/custom_policy.md)")
        checked.add('compute_critic')
        return output

    # ---- collect -----------------------------------------------------------------------------------
    def _make_sde_noise(self) -> Optional[StateDependentNoise]:
        """The collect mode's gSDE exploration matrices when the model explores with gSDE (``policy.model.use_sde``),
        redrawn every ``policy.collect.sde_sample_freq`` env steps; else None."""
        if not getattr(self._model, 'use_sde', False):
            return None
        freq = self._cfg.collect.get('sde_sample_freq', 4)
        if isinstance(freq, bool) or not isinstance(freq, int) or freq < 1:
            raise ConfigError(f"policy.collect.sde_sample_freq = {freq!r} must be an integer >= 1 (env steps between "
                              f"two draws of gSDE's exploration matrix; SB3's -1 is the steps per env of one collection)")
        return StateDependentNoise(self._model, freq)

    def _init_collect(self) -> None:
        pass

    def _forward_collect(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Default: an ``action`` sampled from the actor's distribution, with its statistics when ``collect_stats``.
        With gSDE the sample is ``mu + phi(s)ᵀ W`` with the env's current exploration matrix ``W``.

        A recurrent model acts from each env's state and keeps the next one; the outputs add ``rnn_state``
        ``(B, R, H)`` (the state this step acted from, already zeroed where an episode starts) and ``episode_start``
        ``(B,)`` (the envs that start an episode at this step), so the segment carries both."""
        if self._recurrent:
            return self._forward_collect_recurrent(obs)
        output = self._compute_actor(obs)
        latent = output.pop('sde_latent', None)
        if latent is None:
            action = self._action_distribution(output).sample()
        else:
            action = output['mu'] + self._sde_noise(latent)
        if not self.collect_stats:
            return {'action': action}
        output['action'] = action
        return output

    def _forward_collect_recurrent(self, obs: Any) -> Dict[str, torch.Tensor]:
        """``_forward_collect`` of a recurrent model (see there)."""
        state, start = self._collect_states.get(batch_size(obs))
        output = self._compute_actor(obs, state)
        self._collect_states.advance(output.pop('state'))
        latent = output.pop('sde_latent', None)
        if latent is None:
            action = self._action_distribution(output).sample()
        else:
            action = output['mu'] + self._sde_noise(latent)
        result = output if self.collect_stats else {}
        result.update(action=action, rnn_state=state, episode_start=start)
        return result

    def _get_train_sample(self, segment: Any) -> Any:
        """Turn a collected time-major segment into what the buffer/learner takes (default: the segment)."""
        return segment

    def _reset_collect(self) -> None:
        """Every collector env was reset: gSDE draws new matrices, a recurrent model starts from zero states."""
        if self._sde_noise is not None:
            self._sde_noise.reset()
        if self._collect_states is not None:
            self._collect_states.reset()

    def _episode_start_collect(self, env_ids: Sequence[int]) -> None:
        """The collector's notice that envs ``env_ids`` start an episode at their next observation (they ended one
        and were reset): a recurrent model zeroes their states; a feed-forward one has nothing to do."""
        if self._collect_states is not None:
            self._collect_states.begin(env_ids)

    def _state_dict_collect(self) -> Dict[str, Any]:
        """What the collect mode carries between env steps that an exact resume needs (plain data): the gSDE
        exploration matrices when the model explores with gSDE, each env's recurrent state with a recurrent model;
        override to add your own."""
        state: Dict[str, Any] = {'sde_noise': self._sde_noise.state_dict()} if self._sde_noise is not None else {}
        if self._collect_states is not None:
            state['rnn'] = self._collect_states.state_dict()
        return state

    def _load_state_dict_collect(self, state: Dict[str, Any]) -> None:
        if self._sde_noise is not None and state.get('sde_noise') is not None:
            self._sde_noise.load_state_dict(state['sde_noise'])
        if self._collect_states is not None and state.get('rnn') is not None:
            self._collect_states.load_state_dict(state['rnn'])

    # ---- eval --------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        pass

    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Default: the mode of the actor's distribution (greedy / mean action), or a sample when
        ``policy.eval.deterministic`` is False; a recurrent model acts from each env's eval state."""
        if self._recurrent:
            state, _ = self._eval_states.get(batch_size(obs))
            output = self._forward_eval_step(obs, state)
            self._eval_states.advance(output.pop('state'))
            return output
        output = self._compute_actor(obs)
        dist = self._action_distribution(output)
        return {'action': dist.mode() if self._deterministic_eval else dist.sample()}

    def _forward_eval_step(self, obs: Any, state: torch.Tensor,
                           deterministic: Optional[bool] = None) -> Dict[str, torch.Tensor]:
        """One eval step of a recurrent model from explicit states, keeping nothing: ``obs`` ``(B, ...)`` and
        ``state`` ``(B, R, H)`` (zeros where an episode starts) → ``{'action', 'state'}`` (the next state). What the
        eval mode's ``forward`` runs from its own states, ``load_policy``'s ``act(obs, state)`` and ``-m export``.
        ``deterministic``: the mode of the distribution or a sample (None: ``policy.eval.deterministic``)."""
        output = self._compute_actor(obs, state)
        next_state = output.pop('state')
        dist = self._action_distribution(output)
        greedy = self._deterministic_eval if deterministic is None else deterministic
        return {'action': dist.mode() if greedy else dist.sample(), 'state': next_state}

    def _reset_eval(self) -> None:
        """Every eval env was reset (a new evaluation): a recurrent model starts from zero states."""
        if self._eval_states is not None:
            self._eval_states.reset()

    def _episode_start_eval(self, env_ids: Sequence[int]) -> None:
        """Eval envs ``env_ids`` start an episode at their next observation: their recurrent states are zeroed."""
        if self._eval_states is not None:
            self._eval_states.begin(env_ids)


#: the keys of ``policy.model.rnn`` the model takes (the rest, e.g. PPO's ``seq_len``, are the learn mode's)
RNN_MODEL_KEYS = ('type', 'hidden_size', 'num_layers', 'input_norm')
#: other names a recurrent core is asked for by (``policy.model.lstm=dict(...)``, ``rnn_type='gru'``): the key meant
RNN_ALIASES = {'lstm': 'rnn', 'gru': 'rnn', 'recurrent': 'rnn', 'rnn_cfg': 'rnn', 'rnn_type': 'rnn.type',
               'cell': 'rnn.type', 'rnn_hidden_size': 'rnn.hidden_size', 'rnn_layers': 'rnn.num_layers', 'rnn_num_layers': 'rnn.num_layers'}


def all_finite(tree: Any) -> bool:
    """Whether every floating-point tensor in ``tree`` (a tensor, a dict or treetensor tree of them) is finite."""
    if isinstance(tree, torch.Tensor):
        return not tree.is_floating_point() or bool(torch.isfinite(tree).all())
    values = tree.values() if callable(getattr(tree, 'values', None)) else ()
    return all(all_finite(value) for value in values)


def check_cuda(policy_cfg: Any) -> None:
    """A ``ConfigError`` when ``policy.cuda`` asks for a GPU this machine does not have (``policy_cfg``: ``cfg.policy``)."""
    if policy_cfg.get('cuda') and not torch.cuda.is_available():
        raise ConfigError("policy.cuda is True but CUDA is not available; set policy.cuda=False")


def output_problem(output: Any, action_space: str, size: Optional[int], stats_keys: Sequence[str],
                   check_finite: bool = True) -> Optional[str]:
    """What is wrong with a model's output (a dict of floating-point tensors: the actor's ``stats_keys`` as wide as
    ``size`` (a ``sigma`` may be one row, broadcast), a ``value`` of one number per row, nothing NaN/inf when
    ``check_finite`` but a logit's -inf), in words; None when nothing is. Keys it lacks are said where they are read
    (``Policy._missing_statistic``)."""
    if not isinstance(output, Mapping):
        return f"gave a {type(output).__module__}.{type(output).__qualname__}, not a dict of tensors"
    rows = None
    for key in tuple(stats_keys) + ('value',):
        value = output.get(key)
        if value is None:
            continue
        if not isinstance(value, torch.Tensor):
            return f"gave '{key}' as a {type(value).__module__}.{type(value).__qualname__}, not a torch tensor"
        if not value.is_floating_point():
            return f"gave '{key}' of dtype {value.dtype}, not a floating-point tensor"
        if key in stats_keys:
            if value.dim() < (1 if key == 'sigma' else 2):  # (a sigma of one row is broadcast over the batch)
                return f"gave '{key}' of shape {tuple(value.shape)}, not (B, {size or 'n'})"
            if size is not None and value.shape[-1] != size:
                what = {'discrete': f"{size} actions", 'multi_discrete': f"the sum of nvec, {size}"}.get(
                    action_space, f"{size} action dims")
                return (f"gave '{key}' {value.shape[-1]} wide; the action space needs {what} (check the model's "
                        f"action_shape)")
            if value.dim() >= 2:
                rows = value.shape[:-1]
        elif rows is not None and tuple(value.shape) != tuple(rows):
            squeeze = ' (squeeze its last dim)' if tuple(value.shape) == tuple(rows) + (1,) else ''
            return (f"gave 'value' of shape {tuple(value.shape)}; a value is one number per observation, "
                    f"{tuple(rows)} here{squeeze}")
        if not check_finite:
            continue
        bad = torch.isnan(value.detach()) if key == 'logit' else ~torch.isfinite(value.detach())  # (-inf: masked)
        if bool(bad.any()):
            return f"gave {'NaN' if key == 'logit' else 'non-finite (NaN/inf)'} '{key}' on finite observations"
    sigma = output.get('sigma') if 'sigma' in stats_keys and check_finite else None
    if isinstance(sigma, torch.Tensor) and not bool((sigma.detach() > 0).all()):
        return "gave a 'sigma' that is not > 0 (a standard deviation: exp or softplus of the head)"
    return None


def model_output(model: nn.Module, mode: str, obs: Any,
                 state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
    """``model``'s ``mode`` (``'compute_actor'``, ``'compute_critic'``) on ``obs`` (from ``state``, a recurrent
    model's): its method of that name where it has one (``vac``'s), else ``model(obs, mode=mode)`` — the ``forward``
    contract a model of your own may keep to alone (docs/custom_policy.md)."""
    method = getattr(model, mode, None)
    if method is not None:
        return method(obs) if state is None else method(obs, state)
    return model(obs, mode=mode) if state is None else model(obs, mode=mode, state=state)


def _carries(batch: Any, key: str) -> bool:
    """Whether a batch (a treetensor, a dict, a namedtuple or any object with attributes) carries ``key``."""
    return key in batch if isinstance(batch, Mapping) else hasattr(batch, key)


def _as_float(value: Any) -> Optional[float]:
    """A loss term (a one-element tensor or a number) as a float; None for anything else."""
    if isinstance(value, torch.Tensor):
        return float(value.detach().reshape(-1)[0]) if value.numel() == 1 else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def rnn_type(rnn: Any) -> Optional[str]:
    """The recurrent core ``policy.model.rnn`` asks for (``'lstm'``/``'gru'``), or None (feed-forward)."""
    return rnn.get('type') if isinstance(rnn, Mapping) else None


#: a buffer's ``sample_kind``: what it stores, and the buffer types of acframe that store it
BUFFER_KINDS = {'unrolls': ('stores fixed unrolls', "'fifo' (or 'prioritized')"),
                'segments': ('stores whole trajectories (time-major segments)', "'episodic' (or 'episodic_prioritized')")}


def check_buffer_kind(cfg: Any, policy_cls: type) -> None:
    """A ``ConfigError`` when ``policy.other.replay_buffer.type`` stores another kind of sample (its class's
    ``sample_kind``) than the policy's ``get_train_sample`` gives (``train_sample_kind``): IMPALA's unrolls in ACER's
    episodic buffer, or ACER's trajectories in a ring of unrolls (a user's subclass of either too)."""
    from ..errors import RegistryError
    from ..registry import BUFFER_REGISTRY

    wanted = policy_cls.train_sample_kind
    name = cfg.get('other', {}).get('replay_buffer', {}).get('type')
    if wanted not in BUFFER_KINDS or not name or not isinstance(name, str):
        return
    try:
        stored = getattr(BUFFER_REGISTRY.get(name), 'sample_kind', None)
    except RegistryError:  # an unknown name: the buffer's own check names it
        return
    if stored in BUFFER_KINDS and stored != wanted:
        what = 'replays trajectories' if wanted == 'segments' else 'trains on fixed unrolls'
        raise ConfigError(f"policy.other.replay_buffer.type '{name}' {BUFFER_KINDS[stored][0]}; policy "
                          f"'{cfg.get('type', policy_cls.__name__)}' {what}: set it to {BUFFER_KINDS[wanted][1]}")


def check_recurrent(cfg: Any, policy_cls: type) -> None:
    """A ``ConfigError`` (one line) when ``policy.model.rnn`` asks for a recurrent core that ``policy_cls`` cannot
    learn with yet (``cfg`` is ``cfg.policy``)."""
    rnn = cfg.get('model', {}).get('rnn')
    kind = rnn_type(rnn)
    if kind and not policy_cls.supports_rnn:
        own = not policy_cls.__module__.startswith('acframe.')  # a user's policy: how its author opts in
        author = (f" (its author opts in with supports_rnn = True on {policy_cls.__name__} once its learn mode "
                  f"recomputes sequences from the stored states: docs/custom_policy.md, \"A recurrent form\")"
                  if own else '')
        raise ConfigError(f"policy.model.rnn.type='{kind}': policy '{cfg.get('type', policy_cls.__name__)}' has no "
                          f"recurrent form yet (ppo, a2c, impala and acer have){author}; remove policy.model.rnn or "
                          f"use policy ppo, a2c, impala or acer")


class EnvStates:
    """The recurrent state of each of a mode's envs ``(B, R, H)`` and which of them start an episode at their next
    step ``(B,)``; created (zeros, every env starting) at the first step, so a mode serves any number of envs."""

    def __init__(self, model: nn.Module) -> None:
        self._model = model
        self.state: Optional[torch.Tensor] = None
        self.start: Optional[torch.Tensor] = None
        self._none_start: Optional[torch.Tensor] = None

    def get(self, batch: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(state (B, R, H), start (B,) bool)`` of this step; ``ValueError`` when the number of envs changed."""
        if self.state is None:
            self.state = self._model.initial_state(batch)
            self.start = torch.ones(batch, dtype=torch.bool, device=self.state.device)
            self._none_start = torch.zeros_like(self.start)
        elif self.state.shape[0] != batch:
            raise ValueError(f"the recurrent policy holds states for {self.state.shape[0]} envs but got a batch of "
                             f"{batch} observations; reset() it before acting on another number of envs")
        return self.state, self.start

    def __len__(self) -> int:
        """How many envs the states are for (0 before the first step or after ``reset``)."""
        return 0 if self.state is None else int(self.state.shape[0])

    def advance(self, state: torch.Tensor) -> None:
        """After a step: the next states; no env starts an episode any more until ``begin`` (one all-False tensor,
        made with the states: ``begin`` replaces it rather than writing into it)."""
        self.state = state
        if self._none_start is None:  # (states restored by load_state_dict)
            self._none_start = torch.zeros_like(self.start)
        self.start = self._none_start

    def begin(self, env_ids: Sequence[int]) -> None:
        """Envs ``env_ids`` start an episode at their next step: their states are zeroed (out of place: the last
        state may be an inference tensor, or already stored in a segment)."""
        if self.state is None or len(env_ids) == 0:
            return
        index = torch.as_tensor(np.asarray(env_ids), dtype=torch.long, device=self.state.device)
        self.state = self.state.index_fill(0, index, 0.0)
        self.start = self.start.index_fill(0, index, True)

    def reset(self) -> None:
        """Every env starts an episode (the states are made again at the next step)."""
        self.state = self.start = self._none_start = None

    def state_dict(self) -> Dict[str, Any]:
        return {'state': None if self.state is None else self.state.detach().cpu().clone(),
                'start': None if self.start is None else self.start.detach().cpu().clone()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        device = next(self._model.parameters()).device
        self.state = None if state.get('state') is None else state['state'].to(device).clone()
        self.start = None if state.get('start') is None else state['start'].to(device).clone()
        self._none_start = None


def masked(output: Dict[str, torch.Tensor], mask: Optional[torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The model's ``output`` with its ``'logit'`` masked by ``mask`` (``mask_logits``; as it is when ``mask`` is
    None). The other outputs are the model's: a value computed from the unmasked logits inside a model (ACER's
    ``V = Σ π Q``) is recomputed by its policy."""
    if mask is not None:
        output['logit'] = mask_logits(output['logit'], mask)
    return output


def batch_size(obs: Any) -> int:
    """The number of observations of a batch: a tensor, a dict of tensors per key, or the tree ``to_device`` makes
    of such a dict on a GPU."""
    if isinstance(obs, Mapping):
        return batch_size(next(iter(obs.values())))
    return int(lead_shape(obs, 1)[0])


def _to_cpu(output: Any) -> Any:
    """A mode's outputs back on the CPU (what is not a dict of tensors is left for the worker's contract check)."""
    if not isinstance(output, Mapping):
        return output
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in output.items()}


def _check_model_takes_mode(model: Any, said: str = '', needs_mode: bool = True) -> None:
    """A model handed to a policy (``said``: how the error names it; default ``model=Class``), or built from the
    registry, follows the model contract: an ``nn.Module`` that has parameters to learn and (``needs_mode``: the
    policy's modes are the base class's, which call it so) whose ``forward(obs, mode=...)`` takes the mode by name
    (docs/custom_policy.md); a ``PolicyError`` in one line otherwise, before anything runs."""
    import inspect

    said = f"{said} ({type(model).__qualname__})" if said else f"model={type(model).__qualname__}"
    if not isinstance(model, nn.Module):
        raise PolicyError(f"{said}: a policy's model is a torch nn.Module with forward(obs, mode=...) "
                          f"(docs/custom_policy.md)")
    if not any(True for _ in model.parameters()):
        raise PolicyError(f"{said} has no parameters: a policy learns a model's parameters (nn.Linear, nn.Parameter, "
                          f"... registered on the module)")
    if not needs_mode:
        return
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):  # (a builtin or compiled forward: not checked)
        return
    if not any(p.name == 'mode' or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        raise PolicyError(f"{said}: its forward takes no mode; a policy calls "
                          f"model(obs, mode='compute_actor' / 'compute_critic' / 'compute_actor_critic', ...) "
                          f"(the model contract, docs/custom_policy.md), as acframe's models (MODEL_REGISTRY) do")


def build_optimizer(params, learn_cfg: Any, lr: Optional[float] = None) -> torch.optim.Optimizer:
    """Adam, RMSprop or TensorFlow-style RMSprop from ``policy.learn`` (``optim``, ``learning_rate``, optional
    ``rms_alpha``/``rms_eps``/``adam_eps``)."""
    lr = learn_cfg.learning_rate if lr is None else lr
    name = learn_cfg.get('optim', 'adam')
    if name == 'adam':
        return Adam(params, lr=lr, eps=learn_cfg.get('adam_eps', 1e-8))
    rmsprop = {'rmsprop': RMSprop, 'rmsprop_tf': RMSpropTF}.get(name)
    if rmsprop is not None:
        return rmsprop(params, lr=lr, alpha=learn_cfg.get('rms_alpha', 0.99), eps=learn_cfg.get('rms_eps', 1e-5))
    raise ConfigError(f"policy.learn.optim '{name}' is not 'adam', 'rmsprop' or 'rmsprop_tf'")


def actor_critic_groups(model: nn.Module, critic_lr: float) -> List[Dict[str, Any]]:
    """Two optimizer parameter groups for ``policy.learn.critic_learning_rate``: the critic's parameters at
    ``critic_lr`` and the rest (the actor) at the optimizer's ``learning_rate``. The critic is the model's top-level
    modules named in its ``critic_modules`` (a tuple of names), or by default those whose name starts with
    ``critic_``. A model whose actor and critic share an encoder is refused in one line."""
    if getattr(model, 'share_encoder', False):
        raise ConfigError("policy.learn.critic_learning_rate (DI-engine's learning_rate_critic) needs separate actor "
                          "and critic networks: set policy.model.share_encoder=False (or critic_learning_rate=None)")
    names = getattr(model, 'critic_modules', None)
    actor, critic = [], []
    for name, param in model.named_parameters():
        top = name.split('.')[0]
        (critic if (top in names if names is not None else top.startswith('critic_')) else actor).append(param)
    if not critic or not actor:
        raise ConfigError(f"policy.learn.critic_learning_rate: model {type(model).__name__} has no separate critic "
                          f"parameters (modules named 'critic_*' or listed in its critic_modules); set "
                          f"critic_learning_rate=None")
    return [{'params': actor, 'name': 'actor'}, {'params': critic, 'name': 'critic', 'lr': critic_lr}]


_CORE_LAYER = re.compile(r'core\.rnn\.weight_hh_l\d+')


def describe_core(weights: Mapping[str, Any], critic: bool = True) -> str:
    """The recurrent core a model's weights hold, in words (``'an LSTM core of 64 units, 1 layer'``, ``'no recurrent
    core'``), read from the shapes of ``core.rnn.weight_hh_l<k>`` (``(G·H, H)``: G = 4 gates for an LSTM, 3 for a GRU);
    ``critic``: say whether the critic has a core of its own (``share_encoder=False``)."""
    layers = [weights[key] for key in sorted(k for k in weights if isinstance(k, str) and _CORE_LAYER.fullmatch(k))]
    shape = tuple(getattr(layers[0], 'shape', ())) if layers else ()
    if len(shape) != 2 or not shape[1]:
        return 'no recurrent core'
    kind = {4: 'an LSTM', 3: 'a GRU'}.get(shape[0] // shape[1], 'a recurrent')
    own = critic and any(isinstance(key, str) and key.startswith('critic_core.rnn.') for key in weights)
    return f"{kind} core of {shape[1]} units, {len(layers)} layer{'s' if len(layers) > 1 else ''}" + \
        (' (and a critic core)' if own else '')


def why_weights_do_not_fit(expected: Mapping[str, Any], given: Any, exc: BaseException) -> str:
    """Why weights ``given`` did not load (``exc``) into a model whose state dict is ``expected``, in one line: another
    recurrent core (``policy.model.rnn``), a core each or one shared (``policy.model.share_encoder``), else the counts
    of missing, unknown and reshaped weights with an example of each; else torch's own words (``fit_message``)."""
    try:
        why = _model_mismatch(expected, given) if isinstance(given, Mapping) else None
    except Exception:  # noqa: BLE001 - weights someone edited: torch's own words say it
        why = None
    return why or fit_message(exc)


def _model_mismatch(expected: Mapping[str, Any], given: Mapping[str, Any]) -> Optional[str]:
    theirs, ours = describe_core(given), describe_core(expected)
    if theirs != ours:
        if describe_core(given, critic=False) == describe_core(expected, critic=False):
            shared = ('a core each for actor and critic' if 'critic core' in theirs else 'one core for both',
                      'a core each for actor and critic' if 'critic core' in ours else 'one core for both')
            return (f"the checkpoint's model has {shared[0]}, this config's has {shared[1]} "
                    f"(policy.model.share_encoder); use the config the checkpoint was trained with")
        return (f"the checkpoint's model has {theirs}, this config's has {ours} (policy.model.rnn); use the config "
                f"the checkpoint was trained with")
    missing = [key for key in expected if key not in given]
    unknown = [key for key in given if key not in expected]
    reshaped = [key for key in expected if key in given and hasattr(given[key], 'shape')
                and hasattr(expected[key], 'shape') and tuple(given[key].shape) != tuple(expected[key].shape)]

    def weights(count: int) -> str:
        return f"{count} weight{'' if count == 1 else 's'}"
    parts = [f"this model has {weights(len(missing))} the checkpoint lacks (e.g. {missing[0]})"] if missing else []
    parts += [f"the checkpoint has {weights(len(unknown))} this model lacks (e.g. {unknown[0]})"] if unknown else []
    if reshaped:
        key = reshaped[0]
        parts.append(f"{weights(len(reshaped))} differ{'s' if len(reshaped) == 1 else ''} in shape (e.g. {key}: "
                     f"{list(given[key].shape)} in the checkpoint, {list(expected[key].shape)} here)")
    if not parts:
        return None
    return '; '.join(parts) + " (another policy.model?); use the config the checkpoint was trained with"


def fit_message(exc: BaseException) -> str:
    """``load_state_dict``'s multi-line complaint as one line (the CLI prints only the first line)."""
    lines = [line.strip().rstrip('.') for line in str(exc).splitlines() if line.strip()]
    text = '; '.join(lines) if lines else type(exc).__name__
    return text if len(text) < 400 else text[:400] + ' ...'


def clip_gradients(params: Sequence[torch.nn.Parameter], grad_clip_type: Optional[str], clip_value: float) -> float:
    """Clip in place by global norm (``clip_norm``) or elementwise (``clip_value``); return the pre-clip norm."""
    grads = [p for p in params if p.grad is not None]
    if grad_clip_type == 'clip_norm':
        return clip_grad_norm(grads, clip_value)
    norm = float(torch.nn.utils.get_total_norm([p.grad for p in grads])) if grads else 0.0
    if grad_clip_type == 'clip_value':
        torch.nn.utils.clip_grad_value_(grads, clip_value)
    return norm


def clip_grad_norm(params: Sequence[torch.nn.Parameter], max_norm: float) -> float:
    """``torch.nn.utils.clip_grad_norm_(params, max_norm)`` (2-norm) as a float: the same operations, in the same
    order, so the same bits, without its per-call grouping of the tensors by device and dtype when they all share one
    (a tenth of a small network's gradient step on CPU); otherwise torch's own."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    first = grads[0]
    if (first.device.type not in ('cpu', 'cuda') or first.is_sparse
            or any(type(g) is not torch.Tensor or g.device != first.device or g.dtype != first.dtype or g.is_sparse
                   for g in grads)):
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    with torch.no_grad():
        total_norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        torch._foreach_mul_(grads, torch.clamp(max_norm / (total_norm + 1e-6), max=1.0))
    return float(total_norm)


def _action_kind_and_shape(action_space: Any) -> Tuple[str, Any]:
    """``('discrete', n)``, ``('continuous', dims)``, ``('multi_discrete', nvec list)`` or ``(class name, None)``."""
    import gymnasium as gym

    if isinstance(action_space, gym.spaces.Discrete):
        return 'discrete', int(action_space.n)
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return 'continuous', int(action_space.shape[0])
    if isinstance(action_space, gym.spaces.MultiDiscrete) and len(action_space.nvec.shape) == 1:
        return 'multi_discrete', [int(n) for n in action_space.nvec]
    return type(action_space).__name__, None


def _as_size(value: Any) -> Any:
    """A model shape key as data comparable with the env's: ints stay ints, ``[4]``/``(4,)`` become 4; a dict
    (a Dict observation's ``{key: shape}``) maps its values."""
    if isinstance(value, Mapping):
        return {str(k): _as_size(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_as_size(v) for v in value]
        return items[0] if len(items) == 1 else items
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


_TAKES_KEYWORD: 'weakref.WeakKeyDictionary[Any, Dict[str, bool]]' = weakref.WeakKeyDictionary()


def _takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` (a bound method: its function's answer is kept) takes the keyword argument ``name`` (by
    name, or in its ``**kwargs``); False where its signature cannot be read."""
    import inspect

    key = getattr(function, '__func__', function)
    try:
        known = _TAKES_KEYWORD.setdefault(key, {})
    except TypeError:  # not weakly referenceable: not kept
        known = {}
    if name not in known:
        try:
            params = inspect.signature(function).parameters
            known[name] = name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            known[name] = False
    return known[name]


def _defined_together(cls: type, name: str, other: str) -> bool:
    """Whether the class that defines ``cls``'s attribute ``name`` also defines ``other``."""
    owner = defining_class(cls, name)
    return owner is not None and other in vars(owner)


def obs_shape_of(obs_space: Any) -> Any:
    """``policy.model.obs_shape`` for an observation space: an int (1-D Box), a list (image), a dict of those
    (a Dict of Boxes, in its order), or None for other spaces."""
    import gymnasium as gym

    if isinstance(obs_space, gym.spaces.Dict):
        shapes = {k: obs_shape_of(space) for k, space in obs_space.spaces.items()}
        return None if any(v is None for v in shapes.values()) else shapes
    shape = getattr(obs_space, 'shape', None)
    if not shape:
        return None
    return int(shape[0]) if len(shape) == 1 else [int(s) for s in shape]


def check_model_against_spaces(cfg: Any, obs_space: Any, action_space: Any, trained: bool = False) -> None:
    """The model keys a config states (``policy.model.obs_shape``, ``action_shape``, ``action_space``, as DI-engine's
    files do) must describe the env's spaces; a ``ConfigError`` names the key, both values and the fix.

    Keys the config leaves out are not checked (``fill_model_spaces`` fills them from the env). ``trained``: the config
    of a trained run (its weights fit those values, so the fix is an env that gives them).
    """
    model, env_id = cfg.policy.model, cfg.env.env_id
    kind, shape = _action_kind_and_shape(action_space)
    obs_shape = obs_shape_of(obs_space)
    described = (f"Dict observations {_as_size(obs_shape)}" if isinstance(obs_shape, dict)
                 else f"observations of shape {tuple(getattr(obs_space, 'shape', None) or ())}")
    env_values = {
        'obs_shape': (_as_size(obs_shape) if obs_shape is not None else None, described),
        'action_shape': (shape, f"{action_space}"),
        'action_space': (kind, f"{kind} actions ({action_space})"),
    }
    for key, (env_value, described) in env_values.items():
        given = model.get(key)
        if given is None or env_value is None:
            continue
        if (_as_size(given) if key != 'action_space' else given) != env_value:
            if isinstance(given, Mapping):
                given = _as_size(given)  # (an EasyDict prints as a plain dict)
            if trained:
                raise ConfigError(
                    f"the run's model was trained with policy.model.{key} = {given!r}, and env '{env_id}' has "
                    f"{described}; act on an env that gives what the run trained on (its own env.env_id, "
                    f"env.env_kwargs and env.obs_keys)")
            raise ConfigError(
                f"policy.model.{key} = {given!r} does not fit env '{env_id}', which has {described}; "
                f"set policy.model.{key} = {env_value!r} (or remove it: it is filled from the env), or choose the env "
                f"the model was written for with env.env_id")


def fill_model_spaces(cfg: Any, observation_space: Any, action_space: Any, policy_cls: type) -> None:
    """Set ``cfg.policy.model.obs_shape / action_shape / action_space`` from the env's spaces (unless given).

    ``obs_shape`` is an int for vector observations (1-D Box), a list for images (2-D/3-D Box, e.g. uint8
    ``(C, H, W)``; the model needs an image encoder, ``policy.model.encoder``), and a dict ``{key: int or list}``
    for a Dict observation mixing them (the env layer's ``FlattenDictObservation``).
    Raises ``UnsupportedSpaceError`` naming the space and the policy when the policy cannot act in it, and
    ``ConfigError`` when a given key does not fit the env (``check_model_against_spaces``).
    """
    import gymnasium as gym

    from ..envs.gym_env import env_name

    model = cfg.policy.model
    name = cfg.policy.type
    env = env_name(cfg.env)
    observation_space = split_mask_space(observation_space)[0]  # an action mask is not the model's input
    boxes = (list(observation_space.spaces.values()) if isinstance(observation_space, gym.spaces.Dict)
             else [observation_space])
    if not boxes or not all(isinstance(box, gym.spaces.Box) and len(box.shape) in (1, 2, 3) for box in boxes):
        stacked = any(isinstance(box, gym.spaces.Box) and len(box.shape) == 4 for box in boxes)
        atari = cfg.env.get('atari') or {}
        fix = ('; RGB frames are not stacked: set env.atari.frame_stack=1 or keep env.atari.grayscale=True'
               if stacked and atari.get('enable') and not atari.get('grayscale', True) else
               '; frames stacked on images with channels: stack grey frames, or fold the stack into the channels'
               if stacked else '')
        raise UnsupportedSpaceError(
            f"policy '{name}' needs vector (1-D Box), image (2-D/3-D Box) or Dict-of-Box observations; "
            f"env '{env}' has {observation_space}{fix}"
        )
    empty = any(int(np.prod(box.shape)) == 0 for box in boxes)
    if empty or isinstance(action_space, gym.spaces.Discrete) and int(action_space.n) < 1:
        raise UnsupportedSpaceError(f"env '{env}' has an empty space (observation {observation_space}, action "
                                    f"{action_space}); a policy needs at least one observation value and one action")
    kind, shape = _action_kind_and_shape(action_space)
    if kind not in policy_cls.supported_action_spaces:
        from ..config.reference import builtin_policies
        from ..registry import POLICY_REGISTRY
        able = [other for other in builtin_policies()  # acframe's own: loading them imports no one's code
                if kind in POLICY_REGISTRY.get(other).supported_action_spaces]
        raise UnsupportedSpaceError(
            f"policy '{name}' does not support the action space {action_space} of env '{env}'; "
            f"it supports {', '.join(policy_cls.supported_action_spaces)} actions"
            + (f"; {', '.join(able)} take {kind} actions (policy.type)" if able else '')
        )
    check_model_against_spaces(cfg, observation_space, action_space)
    model.setdefault('obs_shape', obs_shape_of(observation_space))
    model.setdefault('action_shape', shape)
    model.setdefault('action_space', kind)
