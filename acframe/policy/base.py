"""``Policy``: the base class of every algorithm, and its three modes.

A policy owns its model and exposes three narrow views of itself:

* ``learn_mode``   — for the learner: ``forward(batch) -> dict of floats``, state dicts, optimizer, monitor vars;
* ``collect_mode`` — for the collector: ``forward(obs) -> {'action', ...}`` (stochastic), ``get_train_sample``,
  ``load_weights``;
* ``eval_mode``    — for the evaluator: ``forward(obs) -> {'action'}`` (deterministic), ``load_weights``.

Only the modes named in ``enable_field`` are initialised (an actor process builds just ``collect``).
Subclasses implement the ``_init_*`` / ``_forward_*`` methods and declare ``config`` (every default with
a one-line comment above it), ``supported_action_spaces`` and ``default_model``.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn

from ..errors import CheckpointError, ConfigError, UnsupportedSpaceError
from ..models.distributions import make_distribution
from ..registry import MODEL_REGISTRY
from ..rl_utils import fold_truncation
from ..optim import Adam, RMSprop


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
    #: modes a policy of this class can build
    modes: Tuple[str, ...] = ('learn', 'collect', 'eval')

    @classmethod
    def default_config(cls) -> Dict[str, Any]:
        return copy.deepcopy(cls.config)

    def __init__(self, cfg: Any, model: Optional[nn.Module] = None, enable_field: Sequence[str] = ('learn', 'collect', 'eval')) -> None:
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
        self._device = torch.device('cuda' if cfg.get('cuda') else 'cpu')
        if cfg.get('cuda') and not torch.cuda.is_available():
            raise ConfigError("policy.cuda is True but CUDA is not available; set policy.cuda=False")
        self._model = (model if model is not None else self._create_model()).to(self._device)
        for field in self._enable_field:
            getattr(self, f'_init_{field}')()

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
        params = inspect.signature(model_cls.__init__).parameters
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            import difflib
            for key in kwargs:
                if key not in params:
                    hint = difflib.get_close_matches(key, list(params), n=1)
                    extra_hint = f"; did you mean 'policy.model.{hint[0]}'?" if hint else f"; valid keys: {', '.join(p for p in params if p != 'self')}"
                    raise ConfigError(f"unknown config key 'policy.model.{key}' for model '{name}'{extra_hint}")
        try:
            return model_cls(**kwargs)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"policy.model: cannot build model '{name}': {exc}") from exc

    @property
    def model(self) -> nn.Module:
        return self._model

    def get_weights(self) -> Dict[str, torch.Tensor]:
        """The model's weights (shared by every mode in one process)."""
        return self._model.state_dict()

    def load_weights(self, weights: Dict[str, torch.Tensor]) -> None:
        self._model.load_state_dict(weights)

    # ---- modes -------------------------------------------------------------------------------------
    @property
    def learn_mode(self) -> _Mode:
        self._require('learn')
        return _Mode('learn', forward=self._forward_learn, state_dict=self._state_dict_learn,
                     load_state_dict=self._load_state_dict_learn, monitor_vars=self._monitor_vars_learn,
                     optimizers=self._optimizers, get_weights=self.get_weights, model=self._model,
                     policy_cfg=self._cfg)

    @property
    def collect_mode(self) -> _Mode:
        self._require('collect')
        return _Mode('collect', forward=self._forward_collect, get_train_sample=self._get_train_sample,
                     load_weights=self.load_weights, reset=self._reset_collect, policy_cfg=self._cfg)

    @property
    def eval_mode(self) -> _Mode:
        self._require('eval')
        return _Mode('eval', forward=self._forward_eval, load_weights=self.load_weights, policy_cfg=self._cfg)

    def _require(self, field: str) -> None:
        if field not in self._enable_field:
            raise ConfigError(f"{type(self).__name__} was built without its {field} mode (enable_field={list(self._enable_field)})")

    # ---- learn -------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        raise NotImplementedError

    def _forward_learn(self, batch: Any) -> Dict[str, float]:
        raise NotImplementedError

    def _optimizers(self) -> List[torch.optim.Optimizer]:
        """The optimizers a learning-rate schedule acts on."""
        return [self._optimizer]

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {'model': self._model.state_dict(), 'optimizer': self._optimizer.state_dict()}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        try:
            self._model.load_state_dict(state['model'])
            if 'optimizer' in state and hasattr(self, '_optimizer'):
                self._optimizer.load_state_dict(state['optimizer'])
        except (KeyError, RuntimeError, ValueError) as exc:
            raise CheckpointError(f"the checkpoint does not fit this policy's model/optimizer: {exc}") from exc

    def _monitor_vars_learn(self) -> List[str]:
        return ['cur_lr', 'total_loss']

    def _update_obs_norm(self, obs: torch.Tensor) -> None:
        """Learn mode, before the loss: merge a time-major batch's observations ``obs[:-1]`` (``obs[-1]`` is the
        bootstrap state, the next segment's first) into the model's running statistics, when it has an
        ``obs_normalizer`` (``policy.model.obs_norm``). The learner owns the statistics: collect and eval modes
        apply them frozen, and parallel actors receive them with the weights (they are model buffers).
        """
        normalizer = getattr(self._model, 'obs_normalizer', None)
        if normalizer is not None:
            normalizer.update(obs[:-1])

    def _bootstrap_truncation(self, reward: torch.Tensor, truncated: torch.Tensor, final_obs: torch.Tensor) -> torch.Tensor:
        """Fold ``gamma * V(final_obs)``, with the current weights and no gradient, into the reward of every
        truncated step (``rl_utils.fold_truncation``; the caller gives those steps discount 0).

        ``reward``/``truncated`` are ``(T, B)``, ``final_obs`` ``(T, B, obs)``; gamma is ``policy.learn.discount_factor``
        and V the model's ``compute_critic``.
        """
        if not truncated.any():
            return reward
        final_values = torch.zeros_like(reward)
        with torch.no_grad():
            final_values[truncated] = self._model.compute_critic(final_obs[truncated])['value']
        return fold_truncation(reward, truncated.float(), final_values, self._cfg.learn.discount_factor)

    # ---- collect -----------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        pass

    def _forward_collect(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Default: the actor's distribution statistics plus an ``action`` sampled from them."""
        output = self._model.compute_actor(obs)
        output['action'] = make_distribution(output, self._action_space).sample()
        return output

    def _get_train_sample(self, segment: Any) -> Any:
        """Turn a collected time-major segment into what the buffer/learner takes (default: the segment)."""
        return segment

    def _reset_collect(self) -> None:
        pass

    # ---- eval --------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        self._deterministic = bool(self._cfg.eval.get('deterministic', True))
        self._nvec: List[int] = getattr(self, '_nvec', [])

    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Default: the mode of the actor's distribution (greedy / mean action), or a sample of it when
        ``policy.eval.deterministic`` is False."""
        dist = make_distribution(self._model.compute_actor(obs), self._action_space, self._nvec)
        return {'action': dist.mode() if self._deterministic else dist.sample()}


def build_optimizer(params, learn_cfg: Any, lr: Optional[float] = None) -> torch.optim.Optimizer:
    """Adam or RMSprop from ``policy.learn`` (``optim``, ``learning_rate``, optional ``rms_alpha``/``rms_eps``/``adam_eps``)."""
    lr = learn_cfg.learning_rate if lr is None else lr
    name = learn_cfg.get('optim', 'adam')
    if name == 'adam':
        return Adam(params, lr=lr, eps=learn_cfg.get('adam_eps', 1e-8))
    if name == 'rmsprop':
        return RMSprop(params, lr=lr, alpha=learn_cfg.get('rms_alpha', 0.99), eps=learn_cfg.get('rms_eps', 1e-5))
    raise ConfigError(f"policy.learn.optim '{name}' is not 'adam' or 'rmsprop'")


def clip_gradients(params: Sequence[torch.nn.Parameter], grad_clip_type: Optional[str], clip_value: float) -> float:
    """Clip in place by global norm (``clip_norm``) or elementwise (``clip_value``); return the pre-clip norm."""
    grads = [p for p in params if p.grad is not None]
    if grad_clip_type == 'clip_norm':
        return float(torch.nn.utils.clip_grad_norm_(grads, clip_value))
    norm = float(torch.nn.utils.get_total_norm([p.grad for p in grads])) if grads else 0.0
    if grad_clip_type == 'clip_value':
        torch.nn.utils.clip_grad_value_(grads, clip_value)
    return norm


def fill_model_spaces(cfg: Any, observation_space: Any, action_space: Any, policy_cls: type) -> None:
    """Set ``cfg.policy.model.obs_shape / action_shape / action_space`` from the env's spaces (unless given).

    Raises ``UnsupportedSpaceError`` naming the space and the policy when the policy cannot act in it.
    """
    import gymnasium as gym

    model = cfg.policy.model
    name = cfg.policy.type
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise UnsupportedSpaceError(
            f"policy '{name}' needs vector (1-D Box) or Dict-of-Box observations; env '{cfg.env.env_id}' has {observation_space}"
        )
    if isinstance(action_space, gym.spaces.Discrete):
        kind, shape = 'discrete', int(action_space.n)
    elif isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        kind, shape = 'continuous', int(action_space.shape[0])
    elif isinstance(action_space, gym.spaces.MultiDiscrete) and len(action_space.nvec.shape) == 1:
        kind, shape = 'multi_discrete', [int(n) for n in action_space.nvec]
    else:
        kind, shape = type(action_space).__name__, None
    if kind not in policy_cls.supported_action_spaces:
        raise UnsupportedSpaceError(
            f"policy '{name}' does not support the action space {action_space} of env '{cfg.env.env_id}'; "
            f"it supports {', '.join(policy_cls.supported_action_spaces)} actions"
        )
    model.setdefault('obs_shape', int(observation_space.shape[0]))
    model.setdefault('action_shape', shape)
    model.setdefault('action_space', kind)
