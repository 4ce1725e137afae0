"""Envs: the env factory, the env managers (gymnasium vector envs; EnvPool; a user's vectorized env) and wrappers.

Every env of every role is built by one function, ``make_env_manager``: the serial collector and evaluator,
``-m eval``, the parallel pipeline's actors and evaluator on every backend, domain-randomized envs (their drawn
parameters are ``params``), EnvPool and Atari. The manager is the one registered in ``ENV_MANAGER_REGISTRY``
under ``env.manager``: an ``EnvManager`` subclass ('sync', 'async', 'envpool', or a user's own), or a
``gymnasium.vector.VectorEnv`` subclass (a user's already-vectorized env, stepped by ``VectorEnvManager``).
"""
from numbers import Integral
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import gymnasium as gym

from ..errors import AcframeError, ConfigError, EnvError, describe_raised, user_code_error
from .gym_env import SHORT_NAMES, FlattenDictObservation, build_env, env_fns, make_gym_env, resolve_env_id
from .manager import AsyncEnvManager, EnvManager, StepResult, SyncEnvManager, check_step_timeout
from .obs import obs_storage_dtype, obs_to_tensor
from .vector import VectorEnvManager


def manager_class(name: str) -> type:
    """The class registered as env manager ``name`` (a clear ``RegistryError`` naming the known ones when unknown)."""
    from ..errors import ConfigError
    from ..registry import ENV_MANAGER_REGISTRY

    entry = ENV_MANAGER_REGISTRY.get(name)
    if not (isinstance(entry, type) and issubclass(entry, (EnvManager, gym.vector.VectorEnv))):
        raise ConfigError(f"env.manager '{name}' is registered as {entry!r}, which is neither an acframe.envs.EnvManager "
                          f"subclass nor a gymnasium.vector.VectorEnv subclass; register one of those")
    return entry


def in_process_manager(name: str) -> Optional[str]:
    """The registered manager that builds env manager ``name``'s envs one by one in this process
    (``EnvManager.in_process_manager``); None for a vectorized env."""
    cls = manager_class(name)
    return None if issubclass(cls, gym.vector.VectorEnv) else cls.in_process_manager


def _raised_in_from_config(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in ``EnvManager.from_config``'s own frame (its call of the subclass's ``__init__``
    refused, the arguments not taken), not inside a function it called (a TypeError of that ``__init__``'s body)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is EnvManager.from_config.__func__.__code__


def make_env_manager(cfg: Any, role: str, envs: Union[int, Sequence[int]], seed: Optional[int] = None,
                     manager: Optional[str] = None, watch_sync: bool = False, *,
                     params: Optional[Sequence[Dict[str, Any]]] = None,
                     wrap: Optional[Callable[[gym.Env, int], gym.Env]] = None) -> EnvManager:
    """The env factory: the ``EnvManager`` stepping ``cfg.env``'s envs for ``role`` ('collector' or 'evaluator').

    ``envs``: the env seeds (a list), or their number with the first seed ``seed`` (seeds ``seed, seed+1, ...``).
    ``params``: each env's own parameters (domain randomization: ``envs.randomization``), None for the nominal
    envs. ``manager``: the registered env manager, default ``env.manager``. ``wrap(env, i)``: a picklable callable
    applied to each env as built (``-m eval --video``). Steps and resets are watched by ``env.step_timeout_s``
    (subprocess envs always; in-process envs when ``watch_sync``, as the parallel pipeline's worker processes ask).
    """
    if isinstance(envs, Integral):
        if seed is None:
            raise TypeError("make_env_manager(cfg, role, num_envs, seed): the first seed is missing")
        seeds: List[int] = [int(seed) + i for i in range(envs)]
    else:
        if seed is not None:
            raise TypeError("make_env_manager(cfg, role, seeds): pass the seeds or (num_envs, seed), not both")
        seeds = [int(s) for s in envs]
    if params is not None and len(params) != len(seeds):
        raise ValueError(f"make_env_manager: {len(params)} parameter sets for {len(seeds)} envs")
    env_cfg = dict(cfg.env)
    name = manager or env_cfg.get('manager', 'sync')
    check_step_timeout(env_cfg.get('step_timeout_s'), env_cfg.get('on_step_timeout', 'error'))
    cls = manager_class(name)
    if issubclass(cls, gym.vector.VectorEnv):
        return VectorEnvManager.from_config(env_cfg, role, seeds, params=params, wrap=wrap, watch_sync=watch_sync,
                                            vector_env=cls, name=name)
    try:
        made = cls.from_config(env_cfg, role, seeds, params=params, wrap=wrap, watch_sync=watch_sync)
    except Exception as exc:  # a user's manager: one line naming its file and line (an env's own error: as it is)
        inherited = getattr(cls.from_config, '__func__', None) is EnvManager.from_config.__func__
        if isinstance(exc, TypeError) and inherited and cls.__init__ is not EnvManager.__init__ \
                and not cls.__module__.startswith('acframe.') and _raised_in_from_config(exc):
            # (EnvManager's from_config calls the user's __init__ with arguments it does not take)
            raise EnvError(f"env.manager '{name}': {cls.__name__}.__init__ does not take EnvManager's arguments "
                           f"({exc}); a subclass that changes __init__ overrides from_config too, building itself "
                           f"from (env_cfg, role, seeds, ...) (docs/custom_env.md)") from exc
        if isinstance(exc, AcframeError) or user_code_error(exc, '') is None:
            raise
        raise EnvError(f"env.manager '{name}': {cls.__name__}.from_config ({role} envs) raised "
                       f"{describe_raised(exc)}") from exc
    if not isinstance(made, EnvManager):
        raise ConfigError(f"env.manager '{name}': {cls.__name__}.from_config returned {type(made).__name__}, not an "
                          f"EnvManager; it must return the manager it built (docs/custom_env.md)")
    return made


__all__ = ['EnvManager', 'SyncEnvManager', 'AsyncEnvManager', 'VectorEnvManager', 'StepResult', 'SHORT_NAMES',
           'FlattenDictObservation', 'build_env', 'env_fns', 'make_gym_env', 'resolve_env_id', 'make_env_manager',
           'manager_class', 'in_process_manager', 'obs_storage_dtype', 'obs_to_tensor']
