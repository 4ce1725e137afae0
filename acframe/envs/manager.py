"""``EnvManager``: a batch of envs stepped together, over gymnasium's vector envs.

* ``sync`` steps the envs in this process (``SyncVectorEnv``), ``async`` in subprocesses (``AsyncVectorEnv``).
* ``SAME_STEP`` autoreset: the observation returned for a finished env is already the first observation of
  its next episode, and the last observation of the finished episode is returned as ``final_obs`` — what a
  time-limit truncation must be bootstrapped from.
* Box actions are clipped to the action space's bounds before they reach the envs (the learner keeps the
  unclipped sample).
* Episode returns and lengths are accumulated here, vectorized, so workers can report them.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from ..errors import ConfigError, EnvError
from . import snapshot


class StepResult(NamedTuple):
    obs: np.ndarray          # (B, *obs_shape): next observations (reset observations where an episode ended)
    reward: np.ndarray       # (B,) float32
    terminated: np.ndarray   # (B,) bool
    truncated: np.ndarray    # (B,) bool (and not terminated)
    done_index: np.ndarray   # (K,) indices of envs whose episode ended on this step
    final_obs: Optional[np.ndarray]  # (K, *obs_shape) the last observations of those episodes, or None when K == 0


class EnvManager:
    """Steps ``len(env_fns)`` envs together and tracks their episode statistics."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], seeds: Sequence[int], manager: str = 'sync') -> None:
        if manager not in ('sync', 'async'):
            raise ConfigError(f"env.manager '{manager}' is not 'sync' or 'async'")
        if len(env_fns) == 0:
            raise ConfigError("the env manager needs at least one env (env.collector_env_num / env.evaluator_env_num > 0)")
        self.seeds = list(seeds)
        self.manager = manager
        try:
            if manager == 'sync':
                self._venv = SyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP)
            else:
                self._venv = AsyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP, daemon=True)
        except (EnvError, ConfigError):
            raise
        self.num_envs = len(env_fns)
        self.observation_space = self._venv.single_observation_space
        self.action_space = self._venv.single_action_space
        self._clip: Optional[Tuple[np.ndarray, np.ndarray]] = None
        if isinstance(self.action_space, gym.spaces.Box):
            self._clip = (self.action_space.low, self.action_space.high)
        self._episode_return = np.zeros(self.num_envs, dtype=np.float64)
        self._episode_length = np.zeros(self.num_envs, dtype=np.int64)
        self.finished_returns: List[float] = []
        self.finished_lengths: List[int] = []
        self.finished_env: List[int] = []
        self._closed = False

    def reset(self, seeds: Optional[Sequence[int]] = None) -> np.ndarray:
        """Reset every env (with ``seeds``, default the manager's seeds) and return the observations."""
        try:
            obs, _ = self._venv.reset(seed=list(seeds) if seeds is not None else self.seeds)
        except EnvError:
            raise
        except Exception as exc:
            raise _as_env_error(exc) from exc
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        return obs

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with ``actions`` (B, ...) and return a ``StepResult``."""
        if self._clip is not None:
            actions = np.clip(actions, self._clip[0], self._clip[1])
        try:
            obs, reward, terminated, truncated, info = self._venv.step(actions)
        except EnvError:
            raise
        except Exception as exc:
            raise _as_env_error(exc) from exc
        self._episode_return += reward
        self._episode_length += 1
        done = terminated | truncated
        if not done.any():  # the common case: nothing else to do
            return StepResult(obs, reward.astype(np.float32, copy=False), terminated, truncated, _EMPTY_INDEX, None)
        done_index = np.flatnonzero(done)
        final_obs = np.stack([info['final_obs'][i] for i in done_index])
        for i in done_index:
            self.finished_returns.append(float(self._episode_return[i]))
            self.finished_lengths.append(int(self._episode_length[i]))
            self.finished_env.append(int(i))
        self._episode_return[done_index] = 0.0
        self._episode_length[done_index] = 0
        return StepResult(obs, reward.astype(np.float32, copy=False), terminated, truncated & ~terminated,
                          done_index, final_obs)

    def pop_finished(self) -> Tuple[List[float], List[int], List[int]]:
        """Returns, lengths and env indices of the episodes finished since the last call."""
        out = (self.finished_returns, self.finished_lengths, self.finished_env)
        self.finished_returns, self.finished_lengths, self.finished_env = [], [], []
        return out

    # ---- resume ------------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """Episode accumulators and, for in-process envs whose state is plain data, that state (see ``snapshot``).

        Nothing here is ever pickled: an env whose state is not plain data (Box2D, MuJoCo, subprocess envs)
        is saved as ``None`` and resumes from a reset.
        """
        state: Dict[str, Any] = {'episode_return': self._episode_return.copy(), 'episode_length': self._episode_length.copy(),
                                 'envs': None}
        if self.manager == 'sync':
            snapshots = [snapshot.capture(env) for env in self._venv.envs]
            state['envs'] = snapshots if all(s is not None for s in snapshots) else None
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> bool:
        """Restore what ``state_dict`` saved; True when the envs' exact state was restored (else they must reset)."""
        envs = state.get('envs')
        if envs is None or self.manager != 'sync' or len(envs) != self.num_envs:
            return False
        if not all(snapshot.restore(env, saved) for env, saved in zip(self._venv.envs, envs)):
            return False
        self._episode_return[:] = state['episode_return']
        self._episode_length[:] = state['episode_length']
        return True

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._venv.close()
            except Exception:  # closing after a crashed subprocess must not hide the original error
                pass

    def __enter__(self) -> 'EnvManager':
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


_EMPTY_INDEX = np.zeros(0, dtype=np.int64)


def _as_env_error(exc: BaseException) -> EnvError:
    return EnvError(f"an env raised {type(exc).__name__}: {exc}")
