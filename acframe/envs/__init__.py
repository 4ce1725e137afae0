"""Envs: the env managers (gymnasium vector envs; EnvPool), env factories and wrappers."""
from .gym_env import SHORT_NAMES, FlattenDictObservation, build_env, env_fns, make_gym_env, resolve_env_id
from .manager import EnvManager, StepResult, check_step_timeout
from .obs import obs_storage_dtype, obs_to_tensor


def make_env_manager(cfg, role: str, num_envs: int, seed: int, manager: str = None,
                     watch_sync: bool = False) -> EnvManager:
    """The ``EnvManager`` a worker uses: ``num_envs`` envs of ``cfg.env`` seeded ``seed, seed+1, ...``.

    Steps and resets are watched by ``env.step_timeout_s`` (async envs always; in-process envs when
    ``watch_sync``, as the parallel pipeline's worker processes ask).
    """
    seeds = [int(seed) + i for i in range(num_envs)]
    env_cfg = dict(cfg.env)
    manager = manager or env_cfg.get('manager', 'sync')
    if manager == 'envpool':
        from .envpool_manager import EnvPoolManager
        return EnvPoolManager(env_cfg, seeds, role)
    timeout = env_cfg.get('step_timeout_s')
    check_step_timeout(timeout, env_cfg.get('on_step_timeout', 'error'))
    return EnvManager(env_fns(env_cfg, seeds, role), seeds, manager, role=role,
                      step_timeout_s=timeout, watch_sync=watch_sync)


__all__ = ['EnvManager', 'StepResult', 'SHORT_NAMES', 'FlattenDictObservation', 'build_env', 'env_fns',
           'make_gym_env', 'resolve_env_id', 'make_env_manager', 'obs_storage_dtype', 'obs_to_tensor']
