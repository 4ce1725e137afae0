"""``EnvPoolManager``: the ``envpool`` env manager (``env.manager='envpool'``, extra ``envpool``).

EnvPool steps a batch of envs in C++ threads. It has the Atari games (its own preprocessing, configured here
from ``env.atari``), the classic-control tasks and MuJoCo; see ``envpool.list_all_envs()``. This manager gives it
the contract of :class:`acframe.envs.EnvManager`, so the workers cannot tell them apart:

* **seeding**: env ``i`` is seeded with ``seeds[i]`` (EnvPool's ``env_seed``); ``reset`` rebuilds the pool with
  its seeds, so every reset with the same seeds replays the same episodes (EnvPool cannot reseed a live pool).
  EnvPool's own random generators differ from gymnasium's: the same seed gives the same observations across
  EnvPool runs, not the same as a gymnasium env's (Atari frames agree pixel for pixel with the gymnasium chain's
  where nothing is drawn at random: ``acframe.envs.atari``).
* **SAME_STEP autoreset**: EnvPool resets a finished env on the *next* step; here the finished envs are reset
  at once (``reset(env_id)``), the step returns their first observations and ``final_obs`` their last ones.
* **truncation**: ``truncated`` only where not ``terminated``; ``env.max_episode_steps`` is EnvPool's
  ``max_episode_steps``.
* **episode statistics**: returns and lengths accumulated from the rewards, as the gymnasium managers do
  (Atari training envs clip rewards and end an episode on a lost life, evaluator envs play whole games).
* Box actions are clipped to the action space's bounds.

Not supported (a ``ConfigError`` says so): registered env types other than ``gym``, Dict observations,
domain randomization.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import ConfigError, EnvError
from .manager import EnvManager, StepResult, _EMPTY_INDEX


def envpool_task(env_cfg: Dict[str, Any], role: str) -> Tuple[str, Dict[str, Any]]:
    """``(EnvPool task id, make keywords)`` for ``env.env_id`` (+ ``env.atari``, ``env.env_kwargs``) and the role."""
    from .atari import atari_config
    from .gym_env import SHORT_NAMES

    if env_cfg.get('type', 'gym') != 'gym':
        raise ConfigError(f"env.manager 'envpool' steps EnvPool's own envs; env type '{env_cfg.get('type')}' needs "
                          f"env.manager 'sync' or 'async'")
    if (env_cfg.get('domain_randomization') or {}).get('enable'):
        raise ConfigError("env.domain_randomization needs env.manager 'sync' or 'async' (EnvPool builds its own envs)")
    env_id = SHORT_NAMES.get(env_cfg['env_id'], env_cfg['env_id'])
    kwargs: Dict[str, Any] = dict(env_cfg.get('env_kwargs') or {})
    atari = atari_config(env_cfg)
    if env_id.startswith('ALE/'):
        if atari is None:
            raise ConfigError(f"env.manager 'envpool' runs {env_id} with its Atari preprocessing: set env.atari.enable=True")
        env_id = env_id[len('ALE/'):]
        if int(atari.get('noop_max', 30)) < 1:  # EnvPool draws 1..noop_max no-op frames; 0 crashes it
            raise ConfigError(f"env.atari.noop_max = {atari.get('noop_max')}: EnvPool takes 1 to noop_max no-op frames "
                              f"after a reset and needs noop_max >= 1; set it to 1 or more, or use env.manager 'sync'")
        training = role != 'evaluator'
        kwargs.update(frame_skip=int(atari.get('frame_skip', 4)), noop_max=int(atari.get('noop_max', 30)),
                      img_height=int(atari.get('screen_size', 84)), img_width=int(atari.get('screen_size', 84)),
                      gray_scale=bool(atari.get('grayscale', True)), stack_num=int(atari.get('frame_stack', 4)),
                      episodic_life=training and bool(atari.get('episodic_life', True)),
                      reward_clip=training and bool(atari.get('clip_reward', True)),
                      use_fire_reset=bool(atari.get('fire_reset', True)),
                      repeat_action_probability=float(atari.get('repeat_action_probability', 0.25)))
    elif atari is not None:
        raise ConfigError(f"env.atari.enable is True but env.env_id '{env_id}' is not an 'ALE/<Game>-v5' id")
    if env_cfg.get('max_episode_steps'):
        kwargs['max_episode_steps'] = int(env_cfg['max_episode_steps'])
    return env_id, kwargs


class EnvPoolManager(EnvManager):
    """Steps ``len(seeds)`` EnvPool envs together with ``EnvManager``'s interface and semantics (its
    ``pop_finished``, ``close`` and context manager are inherited; the pool stands in for the vector env)."""

    manager = 'envpool'

    def __init__(self, env_cfg: Dict[str, Any], seeds: Sequence[int], role: str) -> None:
        try:
            import envpool
        except ImportError as exc:
            raise ConfigError("env.manager 'envpool' needs the 'envpool' extra: pip install 'acframe[envpool]'") from exc
        if len(seeds) == 0:
            raise ConfigError("the env manager needs at least one env (env.collector_env_num / env.evaluator_env_num > 0)")
        self._envpool = envpool
        self._closed = True  # until built: nothing to close
        self._alarm = None  # env.step_timeout_s is not applied: EnvPool's C++ envs cannot be interrupted from here
        self.role = role
        self.step_timeout_s = None
        self.task_id, self._kwargs = envpool_task(env_cfg, role)
        if self.task_id not in envpool.list_all_envs():
            raise ConfigError(f"env.env_id '{env_cfg['env_id']}' is not an EnvPool task ('{self.task_id}'); "
                              f"see envpool.list_all_envs(), or use env.manager 'sync' or 'async'")
        self.seeds = [int(s) for s in seeds]
        self.num_envs = len(self.seeds)
        self._venv = self._make(self.seeds)
        self._fresh_seeds: Optional[List[int]] = list(self.seeds)  # the seeds of a pool not stepped yet
        import gymnasium as gym
        if isinstance(self._venv.observation_space, gym.spaces.Dict):
            raise ConfigError(f"env.manager 'envpool': {self.task_id} has Dict observations; use env.manager 'sync' or 'async'")
        self._init_bookkeeping(self._venv.observation_space, self._venv.action_space)

    def _make(self, seeds: Sequence[int]) -> Any:
        try:
            return self._envpool.make(self.task_id, env_type='gymnasium', num_envs=len(seeds),
                                      env_seed=[int(s) for s in seeds], **self._kwargs)
        except (TypeError, ValueError, AssertionError, RuntimeError) as exc:
            raise ConfigError(f"EnvPool rejected {self.task_id} with {self._kwargs}: {exc}") from exc

    def reset(self, seeds: Optional[Sequence[int]] = None) -> np.ndarray:
        """Rebuild the pool seeded with ``seeds`` (default the manager's) and return the first observations."""
        seeds = self.seeds if seeds is None else [int(s) for s in seeds]
        if len(seeds) != self.num_envs:
            raise ConfigError(f"reset needs {self.num_envs} seeds; got {len(seeds)}")
        if self._fresh_seeds != list(seeds):
            self._venv.close()
            self._venv = self._make(seeds)
        self._fresh_seeds = None
        try:
            obs, info = self._venv.reset()
        except Exception as exc:
            raise EnvError(f"EnvPool {self.task_id} raised {type(exc).__name__} in reset: {exc}") from exc
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        return self._ordered_all(info, obs)[0]

    @staticmethod
    def _ordered_all(info: Dict[str, Any], *arrays: np.ndarray) -> Tuple[np.ndarray, ...]:
        """Each per-env array in env order (EnvPool returns them in the order of ``info['env_id']``)."""
        env_id = np.asarray(info['env_id'])
        if (env_id == np.arange(len(env_id))).all():
            return arrays
        outs = []
        for array in arrays:
            out = np.empty_like(array)
            out[env_id] = array
            outs.append(out)
        return tuple(outs)

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with ``actions`` (B, ...) and return a ``StepResult`` (SAME_STEP autoreset)."""
        if self._clip is not None:
            actions = np.clip(actions, self._clip[0], self._clip[1]).astype(self.action_space.dtype, copy=False)
        try:
            obs, reward, terminated, truncated, info = self._venv.step(np.asarray(actions))
        except Exception as exc:
            raise EnvError(f"EnvPool {self.task_id} raised {type(exc).__name__} in step: {exc}") from exc
        obs, reward, terminated, truncated = self._ordered_all(info, obs, np.asarray(reward, dtype=np.float32),
                                                               np.asarray(terminated), np.asarray(truncated))
        self._episode_return += reward
        self._episode_length += 1
        done = terminated | truncated
        if not done.any():
            return StepResult(obs, reward, terminated, truncated, _EMPTY_INDEX, None)
        done_index = np.flatnonzero(done)
        final_obs = obs[done_index].copy()
        try:
            reset_obs, reset_info = self._venv.reset(done_index.astype(np.int32))
        except Exception as exc:
            raise EnvError(f"EnvPool {self.task_id} raised {type(exc).__name__} in reset: {exc}") from exc
        obs = obs.copy()
        obs[np.asarray(reset_info['env_id'])] = reset_obs
        self._record_finished(done_index)
        return StepResult(obs, reward, terminated, truncated & ~terminated, done_index, final_obs)

    # ---- resume: EnvPool's env state is not data; a resumed run resets these envs ------------------
    def state_dict(self) -> Dict[str, Any]:
        return {'episode_return': self._episode_return.copy(), 'episode_length': self._episode_length.copy(), 'envs': None}

    def load_state_dict(self, state: Dict[str, Any]) -> bool:
        return False
