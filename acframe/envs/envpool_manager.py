"""``EnvPoolManager``: the ``envpool`` env manager (``env.manager='envpool'``, extra ``envpool``).

EnvPool steps a batch of envs in C++ threads. It has the Atari games (its own preprocessing, configured here
from ``env.atari``), the classic-control tasks and MuJoCo; see ``envpool.list_all_envs()``. This manager gives it
the contract of :class:`acframe.envs.EnvManager`, so the workers cannot tell them apart:

* **seeding**: env ``i`` is seeded with ``seeds[i]`` (EnvPool's ``env_seed``); ``reset`` rebuilds the pool with
  its seeds, so every reset with the same seeds replays the same episodes (EnvPool cannot reseed a live pool).
  EnvPool's own random generators differ from gymnasium's: the same seed gives the same observations across
  EnvPool runs, not the same as a gymnasium env's (Atari frames agree pixel for pixel with the gymnasium chain's
  where nothing is drawn at random: ``acframe.envs.atari``).
* **SAME_STEP autoreset**: EnvPool resets a finished env on the *next* step; here the finished envs are stepped
  again at once (``step(actions, env_id)``, the action ignored), the step returns their first observations and
  ``final_obs`` their last ones. That is EnvPool's own autoreset, which an Atari training env with
  ``episodic_life`` answers by going on with the same game after a lost life (its no-op frames, then FIRE);
  ``reset(env_id)`` would start a new game instead, so every training episode would be a fresh game's first life.
* **whole Atari games with FIRE after a lost life** (evaluator envs, ``env.atari.fire_reset``): the pool is built
  with ``episodic_life`` and a lost life that does not end the game is answered here with EnvPool's autoreset
  (no-op frames, FIRE) inside the same episode, as the training envs see it; the episode ends when the game
  does (``info['terminated']``) or is truncated. The gymnasium chain's ``FireReset`` presses FIRE there too.
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
        fire_reset = bool(atari.get('fire_reset', True))
        kwargs.update(frame_skip=int(atari.get('frame_skip', 4)), noop_max=int(atari.get('noop_max', 30)),
                      img_height=int(atari.get('screen_size', 84)), img_width=int(atari.get('screen_size', 84)),
                      gray_scale=bool(atari.get('grayscale', True)), stack_num=int(atari.get('frame_stack', 4)),
                      # evaluator envs: lives are joined back into whole games by the manager (whole_games)
                      episodic_life=bool(atari.get('episodic_life', True)) if training else fire_reset,
                      reward_clip=training and bool(atari.get('clip_reward', True)),
                      use_fire_reset=fire_reset,
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
    kind = 'envpool'
    fork_safe = False  # a process forked from one that built a pool crashed with SIGSEGV
    in_process_plays_alike = False  # gymnasium's Atari chain gives EnvPool's frames, not its episodes

    @classmethod
    def from_config(cls, env_cfg: Dict[str, Any], role: str, seeds: Sequence[int],
                    params: Optional[Sequence[Dict[str, Any]]] = None, wrap: Any = None,
                    watch_sync: bool = False) -> 'EnvPoolManager':
        """The factory's call (``EnvManager.from_config``): EnvPool builds its own envs, so per-env parameters and
        wrappers are refused; ``env.step_timeout_s`` is not applied (EnvPool's C++ envs cannot be interrupted)."""
        if params is not None:
            raise ConfigError("env.domain_randomization needs env.manager 'sync' or 'async' (EnvPool builds its own envs)")
        if wrap is not None:
            raise ConfigError("env.manager 'envpool' cannot wrap its envs one by one; build them with env.manager 'sync'")
        return cls(env_cfg, seeds, role)

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
        self._every_env = np.arange(self.num_envs)  # env order
        self._venv = self._make(self.seeds)
        self._fresh_seeds: Optional[List[int]] = list(self.seeds)  # the seeds of a pool not stepped yet
        import gymnasium as gym
        if isinstance(self._venv.observation_space, gym.spaces.Dict):
            raise ConfigError(f"env.manager 'envpool': {self.task_id} has Dict observations; use env.manager 'sync' or 'async'")
        self._init_bookkeeping(self._venv.observation_space, self._venv.action_space)
        # an evaluator's lost life is not the end of its episode (module docstring: whole Atari games)
        self._whole_games = role == 'evaluator' and bool(self._kwargs.get('episodic_life'))
        # any action: EnvPool ignores it when the step resets the env
        self._reset_actions = np.zeros((self.num_envs,) + tuple(self.action_space.shape), dtype=self.action_space.dtype)

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
        return self._in_order(info, None, obs)[0]

    def _in_order(self, info: Dict[str, Any], env_id: Optional[np.ndarray], *arrays: np.ndarray) -> Tuple[np.ndarray, ...]:
        """Each array of an EnvPool answer (in the order of ``info['env_id']``) in ``env_id``'s order (None: all
        envs, in env order)."""
        answered = np.asarray(info['env_id'])
        wanted = self._every_env if env_id is None else env_id
        if np.array_equal(answered, wanted):
            return arrays
        row = np.empty(self.num_envs, dtype=np.intp)
        row[answered] = np.arange(len(answered))
        return tuple(array[row[wanted]] for array in arrays)

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with ``actions`` (B, ...) and return a ``StepResult`` (SAME_STEP autoreset)."""
        if self._clip is not None:
            actions = np.clip(actions, self._clip[0], self._clip[1]).astype(self.action_space.dtype, copy=False)
        obs, reward, terminated, truncated, info = self._pool_step(np.asarray(actions), None)
        done = terminated | truncated
        if not done.any():
            self._episode_return += reward
            self._episode_length += 1
            return StepResult(obs, reward, terminated, truncated, _EMPTY_INDEX, None)
        index = np.flatnonzero(done)
        final_obs = obs[index].copy()
        reset_obs, reset_reward, _, _, _ = self._pool_step(self._reset_actions[:len(index)], index)
        obs = obs.copy()
        obs[index] = reset_obs
        if self._whole_games:  # a lost life the game goes on after: FIRE was pressed, the episode goes on
            game_over = self._in_order(info, None, np.asarray(info['terminated'], dtype=bool))[0]
            life_lost = terminated & ~game_over & ~truncated
            goes_on = life_lost[index]
            reward = reward.copy()
            reward[index[goes_on]] += reset_reward[goes_on]  # (EnvPool's reset scores nothing; kept if it did)
            terminated = terminated & ~life_lost
            index, final_obs = index[~goes_on], final_obs[~goes_on]
        self._episode_return += reward
        self._episode_length += 1
        if len(index) == 0:
            return StepResult(obs, reward, terminated, truncated, _EMPTY_INDEX, None)
        self._record_finished(index)
        return StepResult(obs, reward, terminated, truncated & ~terminated, index, final_obs)

    def _pool_step(self, actions: np.ndarray, env_id: Optional[np.ndarray]) -> Tuple[np.ndarray, ...]:
        """EnvPool's step of all envs (``env_id`` None) or of ``env_id``'s, each array in ``env_id``'s order."""
        try:
            if env_id is None:
                obs, reward, terminated, truncated, info = self._venv.step(actions)
            else:
                obs, reward, terminated, truncated, info = self._venv.step(actions, env_id.astype(np.int32))
        except Exception as exc:
            raise EnvError(f"EnvPool {self.task_id} raised {type(exc).__name__} in step: {exc}") from exc
        arrays = (obs, np.asarray(reward, dtype=np.float32), np.asarray(terminated), np.asarray(truncated))
        return (*self._in_order(info, env_id, *arrays), info)

    # ---- resume: EnvPool's env state is not data; a resumed run resets these envs ------------------
    def state_dict(self) -> Dict[str, Any]:
        return {'episode_return': self._episode_return.copy(), 'episode_length': self._episode_length.copy(), 'envs': None,
                'why': self._keeps_no_state()}

    def load_state_dict(self, state: Dict[str, Any]) -> bool:
        self.unrestored_why = self._keeps_no_state()
        return False
