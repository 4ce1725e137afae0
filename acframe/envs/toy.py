"""Small, fast envs for the action and observation spaces gymnasium's classic tasks lack.

* ``toy_multidiscrete`` (``ToyMultiDiscreteEnv``): MultiDiscrete actions. Each step shows one target per
  action dimension (one-hot, concatenated); the reward is the fraction of dimensions whose action hits its
  target. A uniformly random policy scores ``mean(1 / nvec)`` per step, a perfect one 1.
* ``toy_dict`` (``ToyDictEnv``): Dict observations with a Discrete action. ``obs['target']`` is a one-hot
  target, ``obs['noise']`` and ``obs['distractor']`` carry no information; the reward is 1 when the action
  is the target. Choose keys with ``env.obs_keys`` (e.g. ``['target', 'noise']``).

Episodes are truncated (never terminated) after ``episode_len`` steps (``env.max_episode_steps`` overrides
it). Both are registered in ``ENV_REGISTRY``: use ``create_config.env.type='toy_multidiscrete'`` and pass
constructor arguments in ``env.env_kwargs``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from ..errors import ConfigError
from ..registry import ENV_REGISTRY


class _TargetEnv(gym.Env):
    """Shared mechanics: new random targets every step, truncation after ``episode_len`` steps."""

    metadata: Dict[str, Any] = {'render_modes': []}

    def __init__(self, episode_len: int) -> None:
        if episode_len <= 0:
            raise ConfigError(f"env.env_kwargs.episode_len = {episode_len} must be > 0")
        self.episode_len = int(episode_len)
        self._t = 0

    def _new_targets(self) -> None:
        raise NotImplementedError

    def _observation(self) -> Any:
        raise NotImplementedError

    def _reward(self, action: Any) -> float:
        raise NotImplementedError

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        super().reset(seed=seed)
        self._t = 0
        self._new_targets()
        return self._observation(), {}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        reward = self._reward(action)
        self._t += 1
        self._new_targets()
        return self._observation(), reward, False, self._t >= self.episode_len, {}


class ToyMultiDiscreteEnv(_TargetEnv):
    """Hit one target per action dimension (``nvec`` choices each); reward = fraction of hits per step."""

    def __init__(self, nvec: Sequence[int] = (3, 4), episode_len: int = 16) -> None:
        super().__init__(episode_len)
        self.nvec = np.asarray(nvec, dtype=np.int64)
        if self.nvec.ndim != 1 or len(self.nvec) == 0 or (self.nvec < 2).any():
            raise ConfigError(f"env.env_kwargs.nvec = {list(nvec)} must be a non-empty list of ints >= 2")
        self.action_space = gym.spaces.MultiDiscrete(self.nvec)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (int(self.nvec.sum()),), dtype=np.float32)
        self._offsets = np.concatenate([[0], np.cumsum(self.nvec)[:-1]])
        self._targets = np.zeros(len(self.nvec), dtype=np.int64)

    def _new_targets(self) -> None:
        self._targets = (self.np_random.random(len(self.nvec)) * self.nvec).astype(np.int64)

    def _observation(self) -> np.ndarray:
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        obs[self._offsets + self._targets] = 1.0
        return obs

    def _reward(self, action: Any) -> float:
        return float(np.mean(np.asarray(action) == self._targets))


class ToyDictEnv(_TargetEnv):
    """Pick the target shown in ``obs['target']`` among ``n`` actions; ``noise``/``distractor`` are uninformative."""

    def __init__(self, n: int = 4, noise_dim: int = 2, distractor_dim: int = 3, episode_len: int = 16) -> None:
        super().__init__(episode_len)
        if n < 2:
            raise ConfigError(f"env.env_kwargs.n = {n} must be >= 2")
        self.n = int(n)
        self.action_space = gym.spaces.Discrete(self.n)
        self.observation_space = gym.spaces.Dict({
            'target': gym.spaces.Box(0.0, 1.0, (self.n,), dtype=np.float32),
            'noise': gym.spaces.Box(-1.0, 1.0, (int(noise_dim),), dtype=np.float32),
            'distractor': gym.spaces.Box(-1.0, 1.0, (int(distractor_dim),), dtype=np.float32),
        })
        self._target = 0

    def _new_targets(self) -> None:
        self._target = int(self.np_random.integers(self.n))

    def _observation(self) -> Dict[str, np.ndarray]:
        target = np.zeros(self.n, dtype=np.float32)
        target[self._target] = 1.0
        spaces = self.observation_space.spaces
        return {
            'target': target,
            'noise': self.np_random.uniform(-1.0, 1.0, spaces['noise'].shape).astype(np.float32),
            'distractor': self.np_random.uniform(-1.0, 1.0, spaces['distractor'].shape).astype(np.float32),
        }

    def _reward(self, action: Any) -> float:
        return float(int(action) == self._target)


def _make(cls: type, env_cfg: Dict[str, Any], overrides: Dict[str, Any]) -> gym.Env:
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    if env_cfg.get('max_episode_steps'):
        kwargs['episode_len'] = env_cfg['max_episode_steps']
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"env.env_kwargs for {cls.__name__} were rejected: {exc}") from exc


@ENV_REGISTRY.register('toy_multidiscrete')
def make_toy_multidiscrete(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``ToyMultiDiscreteEnv`` (constructor arguments from ``env.env_kwargs``)."""
    return _make(ToyMultiDiscreteEnv, env_cfg, overrides)


@ENV_REGISTRY.register('toy_dict')
def make_toy_dict(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``ToyDictEnv`` (constructor arguments from ``env.env_kwargs``)."""
    return _make(ToyDictEnv, env_cfg, overrides)
