"""Policies: the base class, its modes, and one module per algorithm (registered in POLICY_REGISTRY)."""
from typing import Any, Dict, Optional, Sequence

from ..registry import POLICY_REGISTRY
from .base import LearnNeed, Policy, build_optimizer, check_model_against_spaces, clip_gradients, fill_model_spaces


def policy_class(cfg: Any) -> type:
    """The registered class of ``cfg.policy.type``."""
    return POLICY_REGISTRY.get(cfg.policy.type)


def env_steps_per_collection(cfg: Any) -> int:
    """Env steps of one collection over all collector envs: ``collect.n_sample`` samples of the policy's
    ``train_sample_len`` steps each (DI-engine's meaning of ``n_sample``)."""
    return int(cfg.policy.collect.n_sample) * policy_class(cfg).train_sample_len(cfg.policy)


def create_policy(cfg: Any, observation_space: Any = None, action_space: Any = None,
                  enable_field: Sequence[str] = ('learn', 'collect', 'eval'), model: Optional[Any] = None,
                  init_weights: Optional[Dict[str, Any]] = None) -> Policy:
    """Build ``cfg.policy.type`` for an env with these spaces (fills ``cfg.policy.model``'s shapes); ``init_weights``:
    model weights it starts from (``init_from``), loaded before its modes are set up."""
    from ..config.compile import model_given

    cls = policy_class(cfg)
    with model_given(model):  # (a recurrent model given here is checked as a recurrent config is)
        cls.check_run_config(cfg)
    if observation_space is not None:
        fill_model_spaces(cfg, observation_space, action_space, cls)
    return cls(cfg.policy, model=model, enable_field=enable_field, init_weights=init_weights)


__all__ = ['Policy', 'LearnNeed', 'POLICY_REGISTRY', 'create_policy', 'policy_class', 'env_steps_per_collection', 'build_optimizer', 'clip_gradients',
           'fill_model_spaces', 'check_model_against_spaces']
