"""``VectorEnvManager``: a user's already-vectorized env (a ``gymnasium.vector.VectorEnv`` subclass) as an env manager.

An env that steps a whole batch of simulations at once (numpy or torch arrays, a GPU simulator) is registered
in ``ENV_MANAGER_REGISTRY`` under a name and picked with ``env.manager`` (``create_config.env_manager.type``);
acframe's env factory builds it as ``VectorEnvCls(num_envs=N, **env.env_kwargs)`` (plus ``params=`` the per-env
parameters of a domain-randomized run, and ``max_episode_steps=`` when ``env.max_episode_steps`` is set) and steps it
with :class:`acframe.envs.EnvManager`'s interface and semantics, so the workers cannot tell it from the others:

* the vector env must use gymnasium's SAME_STEP autoreset (``metadata['autoreset_mode'] = AutoresetMode.SAME_STEP``):
  a finished env's observation is already its next episode's first one, and ``info['final_obs'][i]`` its last one;
* ``reset(seed=[s_0, ..., s_{N-1}])`` seeds env ``i`` with ``s_i``;
* its episodes must end by themselves (a time limit of its own): acframe cannot wrap the envs one by one, so
  ``env.eval_episode_cap`` and ``-m eval --video`` do not apply to it;
* episode statistics, Box-action clipping and the step watchdog (``env.step_timeout_s``, in the parallel pipeline's
  worker processes) are the manager's, as for every manager. Its state is not saved: a resumed run resets it.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from ..errors import AcframeError, ConfigError, EnvContractError, EnvError, describe_raised
from .manager import EnvManager, StepResult
from .masks import (ACTION_MASK_KEY, check_mask_space, empty_mask_rows, mask_problem, mask_size, mask_space_of,
                    mask_splits, no_legal_action)


class VectorEnvManager(EnvManager):
    """Steps one user ``gymnasium.vector.VectorEnv`` of ``len(seeds)`` envs (see the module docstring)."""

    kind = 'vector'
    in_process_manager = None

    @classmethod
    def from_config(cls, env_cfg: Dict[str, Any], role: str, seeds: Sequence[int],
                    params: Optional[Sequence[Dict[str, Any]]] = None, wrap: Optional[Callable[[gym.Env, int], gym.Env]] = None,
                    watch_sync: bool = False, vector_env: Optional[type] = None, name: str = 'vector') -> 'VectorEnvManager':
        """Build ``vector_env(num_envs=len(seeds), **env.env_kwargs)`` (the factory passes the registered class)."""
        if vector_env is None:
            raise ConfigError(f"env.manager '{name}': no gymnasium.vector.VectorEnv class to build")
        if wrap is not None:
            raise ConfigError(f"env.manager '{name}' steps a vectorized env ({vector_env.__name__}): its envs cannot be "
                              f"wrapped one by one (e.g. recorded by -m eval --video); leave that option out")
        kwargs: Dict[str, Any] = dict(env_cfg.get('env_kwargs') or {})
        if params is not None:
            kwargs['params'] = [dict(p) for p in params]
        if env_cfg.get('max_episode_steps'):
            kwargs['max_episode_steps'] = int(env_cfg['max_episode_steps'])
        try:
            venv = vector_env(num_envs=len(seeds), **kwargs)
        except AcframeError:
            raise
        except TypeError as exc:
            raise ConfigError(f"env.manager '{name}': {vector_env.__name__}(num_envs={len(seeds)}, "
                              f"{', '.join(f'{k}=...' for k in kwargs)}) was rejected ({exc}); its constructor takes "
                              f"num_envs and env.env_kwargs (params=: each env's parameters under domain randomization, "
                              f"max_episode_steps=: env.max_episode_steps)") from exc
        except Exception as exc:
            raise EnvError(f"{role} envs ({name}) raised {describe_raised(exc, 'construction')}") from exc
        return cls(venv, seeds, role=role, step_timeout_s=env_cfg.get('step_timeout_s'), watch_sync=watch_sync, name=name)

    def __init__(self, venv: gym.vector.VectorEnv, seeds: Sequence[int], role: str = '',
                 step_timeout_s: Optional[float] = None, watch_sync: bool = False, name: str = 'vector') -> None:
        self._prepare(seeds, self.kind, role, step_timeout_s)
        lacking = [attr for attr in ('num_envs', 'single_observation_space', 'single_action_space')
                   if getattr(venv, attr, None) is None]
        if lacking:
            try:
                venv.close()
            except Exception:  # noqa: BLE001 - half set up: the error below is the one to report
                pass
            raise ConfigError(f"env.manager '{name}': {type(venv).__name__} has no {', '.join(lacking)}; a "
                              f"gymnasium.vector.VectorEnv sets num_envs, single_observation_space and "
                              f"single_action_space in its __init__ (docs/custom_env.md)")
        if int(venv.num_envs) != len(self.seeds):
            venv.close()
            raise ConfigError(f"env.manager '{name}': {type(venv).__name__} has num_envs={venv.num_envs}, "
                              f"but {len(self.seeds)} envs were asked for; build num_envs envs")
        mode = (venv.metadata or {}).get('autoreset_mode')
        if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.SAME_STEP.value):
            venv.close()
            raise ConfigError(f"env.manager '{name}': {type(venv).__name__} has autoreset_mode {mode!r}; acframe steps "
                              f"vector envs with SAME_STEP autoreset: set metadata['autoreset_mode'] = "
                              f"gymnasium.vector.AutoresetMode.SAME_STEP and return the last observations in "
                              f"info['final_obs']")
        self._attach(venv, len(self.seeds), watch_sync)
        self._name = name
        self._mask_splits = self._mask_size = None
        mask_space = mask_space_of(venv.single_observation_space)
        if mask_space is not None:  # a masked env (docs/masks.md): the checks build_env's ActionMaskCheck makes
            try:
                check_mask_space(mask_space, venv.single_action_space, f"{name}: {type(venv).__name__}")
            except ConfigError:
                venv.close()
                raise
            self._mask_size = mask_size(venv.single_action_space)
            self._mask_splits = mask_splits(venv.single_action_space)

    def _keeps_no_state(self) -> str:
        """A user's vectorized env keeps no state a checkpoint can hold (named as registered)."""
        return f"env manager '{self._name}' keeps no env state"

    def reset(self, seeds: Optional[Sequence[int]] = None) -> Any:
        obs = super().reset(seeds)
        self._check_masks(obs)
        return obs

    def step(self, actions: np.ndarray) -> StepResult:
        result = super().step(actions)
        self._check_masks(result.obs)  # (SAME_STEP autoreset: a finished env's row is its next episode's first)
        return result

    def _check_masks(self, obs: Any) -> None:
        """Every env's mask, as ``ActionMaskCheck`` checks one env's: one entry per action, a legal action left."""
        if self._mask_size is None:
            return
        masks = obs.get(ACTION_MASK_KEY) if isinstance(obs, dict) else None
        problem = mask_problem(masks, (self.num_envs, self._mask_size))
        if problem is not None:
            raise EnvContractError(f"{self.role} envs of '{self._name}' ({self.num_envs} of them, a row each): {problem}")
        masks = np.asarray(masks)
        empty = empty_mask_rows(masks, self._mask_splits)
        if empty is not None:
            row, dim = empty
            raise no_legal_action(self.role, row, self._name, self.seeds[row], dim, self._mask_splits,
                                  int(self._episode_length[row]))
