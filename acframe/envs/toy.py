"""Small, fast envs for the action and observation spaces gymnasium's classic tasks lack.

* ``toy_multidiscrete`` (``ToyMultiDiscreteEnv``): MultiDiscrete actions. Each step shows one target per
  action dimension (one-hot, concatenated); the reward is the fraction of dimensions whose action hits its
  target. A uniformly random policy scores ``mean(1 / nvec)`` per step, a perfect one 1.
* ``toy_multidiscrete_masked`` (``ToyMaskedMultiDiscreteEnv``): the same with invalid-action masks per dimension
  (docs/masks.md). The observation is a Dict: ``'targets'`` (the one-hot targets above) and ``'action_mask'``
  (int8 ``(sum(nvec),)``, the dimensions' masks one after the other): each choice other than the target is legal
  with probability ``legal_prob``, the target always. An illegal choice in any dimension raises (``ValueError``):
  with masks, a run that takes one fails.
* ``toy_dict`` (``ToyDictEnv``): Dict observations with a Discrete action. ``obs['target']`` is a one-hot
  target, ``obs['noise']`` and ``obs['distractor']`` carry no information; the reward is 1 when the action
  is the target. Choose keys with ``env.obs_keys`` (e.g. ``['target', 'noise']``).

* ``toy_pixel_dot`` (``MovingDotEnv``): uint8 image observations. A dot (255 on 0) moves one cell per step on a
  ``size`` x ``size`` grid, in a random direction that keeps it inside; the action (up, down, left, right) is
  rewarded 1 when it names the direction of the move just made. One frame shows where the dot is, not where
  it came from: the factory stacks ``frame_stack`` frames (gymnasium's ``FrameStackObservation``, as for
  Atari) into ``(frame_stack, size, size)`` observations. Random play scores 0.25 per step, perfect play 1.
* ``toy_pixel_goal`` (``DotToTargetEnv``): a Dict observation mixing an image and a vector. ``obs['image']``
  (uint8 ``(1, size, size)``) shows the dot, ``obs['target']`` (float32 ``(2,)``: row and column / (size - 1))
  says where it must go, and the image never shows the target: the task needs both keys. The action moves the
  dot one cell (up, down, left, right; a wall stops it) and is rewarded 1 when it brings the dot closer to the
  target (Manhattan distance); reaching the target draws a new one. Random play scores about 0.4 per step,
  either key alone at most about 0.5 (measured: ``tests/envs/test_pixel_envs.py``), perfect play 1.

* ``toy_cue_memory`` (``CueMemoryEnv``): a memory task. The first observation shows a cue (one of ``n_cues``,
  one-hot); the next ``delay - 1`` observations show nothing (zeros); the observation after ``delay`` steps raises
  a ``go`` flag, and the action taken then is rewarded 1 when it names the cue (every other action of the episode is free and
  unrewarded), which ends the episode (terminated). What pays at the end was seen only at the start: a feed-forward
  policy cannot do better than chance (``1 / n_cues`` per episode), a policy with memory (``policy.model.rnn``) 1.

* ``toy_sleep`` (``SleepEnv``): an env whose step costs wall time but almost no CPU, to measure how collection
  scales with actors (``bench/bench_cluster.py``): each step sleeps ``step_s`` seconds (default 0.005; 0: no sleep),
  then shows a one-hot target among ``n`` actions (float32 ``(n,)``); the reward is 1 when the action names the
  target shown before. Random play scores ``1 / n`` per step, perfect play 1.

The other envs' episodes are truncated (never terminated) after ``episode_len`` steps (``env.max_episode_steps`` overrides
it). All are registered in ``ENV_REGISTRY``: use ``create_config.env.type='toy_multidiscrete'`` and pass
constructor arguments in ``env.env_kwargs``.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from ..errors import ConfigError
from ..registry import ENV_REGISTRY
from .gym_env import kwargs_rejected


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
        obs = np.zeros(int(self.nvec.sum()), dtype=np.float32)
        obs[self._offsets + self._targets] = 1.0
        return obs

    def _reward(self, action: Any) -> float:
        return float(np.mean(np.asarray(action) == self._targets))


class ToyMaskedMultiDiscreteEnv(ToyMultiDiscreteEnv):
    """``ToyMultiDiscreteEnv`` with a per-dimension action mask in a Dict observation; an illegal choice raises."""

    def __init__(self, nvec: Sequence[int] = (3, 4), episode_len: int = 16, legal_prob: float = 0.5) -> None:
        super().__init__(nvec, episode_len)
        if not 0.0 <= legal_prob <= 1.0:
            raise ConfigError(f"env.env_kwargs.legal_prob = {legal_prob} must be in [0, 1]")
        self.legal_prob = float(legal_prob)
        targets = self.observation_space
        self.observation_space = gym.spaces.Dict({
            'targets': targets, 'action_mask': gym.spaces.Box(0, 1, targets.shape, dtype=np.int8)})
        self._mask = np.ones(targets.shape, dtype=np.int8)
        self.illegal_actions = 0

    def _new_targets(self) -> None:
        super()._new_targets()
        self._mask = (self.np_random.random(self._mask.shape) < self.legal_prob).astype(np.int8)
        self._mask[self._offsets + self._targets] = 1

    def _observation(self) -> Dict[str, np.ndarray]:
        return {'targets': super()._observation(), 'action_mask': self._mask.copy()}

    def _reward(self, action: Any) -> float:
        action = np.asarray(action, dtype=np.int64)
        if not self._mask[self._offsets + action].all():
            self.illegal_actions += 1
            raise ValueError(f"illegal action {action.tolist()}: the mask of its dimensions is "
                             f"{[m.tolist() for m in np.split(self._mask, self._offsets[1:])]}")
        return super()._reward(action)


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


def _check_render_mode(cls: type, render_mode: Optional[str]) -> Optional[str]:
    if render_mode not in (None, 'rgb_array'):
        raise ConfigError(f"{cls.__name__} renders render_mode='rgb_array' (its observation, enlarged) or none, not "
                          f"{render_mode!r}")
    return render_mode


def _enlarged(cells: np.ndarray) -> np.ndarray:
    """An RGB frame ``(H·k, W·k, 3)`` of a grid of RGB cells ``(H, W, 3)``, each cell ``k`` pixels wide (``k`` makes
    the frame at least 128 pixels high: a video of an 8x8 grid is still watchable)."""
    scale = max(1, -(-128 // cells.shape[0]))
    return np.repeat(np.repeat(cells, scale, axis=0), scale, axis=1)


class MovingDotEnv(_TargetEnv):
    """Name the direction the dot just moved in (0 up, 1 down, 2 left, 3 right); one uint8 frame per step."""

    metadata: Dict[str, Any] = {'render_modes': ['rgb_array'], 'render_fps': 4}
    #: (row, column) step of each action
    MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]], dtype=np.int64)

    def __init__(self, size: int = 16, episode_len: int = 16, render_mode: Optional[str] = None) -> None:
        super().__init__(episode_len)
        self.render_mode = _check_render_mode(type(self), render_mode)
        if size < 3:
            raise ConfigError(f"env.env_kwargs.size = {size} must be >= 3")
        self.size = int(size)
        self.action_space = gym.spaces.Discrete(4)
        self.observation_space = gym.spaces.Box(0, 255, (self.size, self.size), dtype=np.uint8)
        self._pos = np.zeros(2, dtype=np.int64)
        self._move = -1

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        gym.Env.reset(self, seed=seed)
        self._t = 0
        self._pos = self.np_random.integers(0, self.size, 2)
        self._new_targets()
        return self._observation(), {}

    def _new_targets(self) -> None:
        """Move the dot one cell in a random direction that keeps it on the grid."""
        inside = [a for a, move in enumerate(self.MOVES) if ((self._pos + move >= 0) & (self._pos + move < self.size)).all()]
        self._move = int(inside[self.np_random.integers(len(inside))])
        self._pos = self._pos + self.MOVES[self._move]

    def _observation(self) -> np.ndarray:
        frame = np.zeros((self.size, self.size), dtype=np.uint8)
        frame[self._pos[0], self._pos[1]] = 255
        return frame

    def _reward(self, action: Any) -> float:
        return float(int(action) == self._move)

    def render(self) -> Optional[np.ndarray]:
        """With ``render_mode='rgb_array'``: the current frame, white dot on black, enlarged."""
        if self.render_mode != 'rgb_array':
            return None
        return _enlarged(np.repeat(self._observation()[:, :, None], 3, axis=2))


class DotToTargetEnv(gym.Env):
    """Move the dot (seen in ``obs['image']``) towards the target (given in ``obs['target']``); see the module doc."""

    metadata: Dict[str, Any] = {'render_modes': ['rgb_array'], 'render_fps': 4}
    #: (row, column) step of each action: up, down, left, right
    MOVES = MovingDotEnv.MOVES

    def __init__(self, size: int = 8, episode_len: int = 16, render_mode: Optional[str] = None) -> None:
        self.render_mode = _check_render_mode(type(self), render_mode)
        if size < 3:
            raise ConfigError(f"env.env_kwargs.size = {size} must be >= 3")
        if episode_len <= 0:
            raise ConfigError(f"env.env_kwargs.episode_len = {episode_len} must be > 0")
        self.size, self.episode_len = int(size), int(episode_len)
        self.action_space = gym.spaces.Discrete(4)
        self.observation_space = gym.spaces.Dict({
            'image': gym.spaces.Box(0, 255, (1, self.size, self.size), dtype=np.uint8),
            'target': gym.spaces.Box(0.0, 1.0, (2,), dtype=np.float32),
        })
        self._pos = np.zeros(2, dtype=np.int64)
        self._target = np.zeros(2, dtype=np.int64)
        self._t = 0

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        super().reset(seed=seed)
        self._t = 0
        self._pos = self.np_random.integers(0, self.size, 2)
        self._new_target()
        return self._observation(), {}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        before = np.abs(self._target - self._pos).sum()
        self._pos = np.clip(self._pos + self.MOVES[int(action)], 0, self.size - 1)
        reward = float(np.abs(self._target - self._pos).sum() < before)
        if (self._pos == self._target).all():
            self._new_target()
        self._t += 1
        return self._observation(), reward, False, self._t >= self.episode_len, {}

    def _new_target(self) -> None:
        """A target cell other than the dot's."""
        offset = self.np_random.integers(1, self.size * self.size)
        index = (self._pos[0] * self.size + self._pos[1] + offset) % (self.size * self.size)
        self._target = np.array(divmod(int(index), self.size), dtype=np.int64)

    def _observation(self) -> Dict[str, np.ndarray]:
        image = np.zeros((1, self.size, self.size), dtype=np.uint8)
        image[0, self._pos[0], self._pos[1]] = 255
        return {'image': image, 'target': (self._target / (self.size - 1)).astype(np.float32)}

    def render(self) -> Optional[np.ndarray]:
        """With ``render_mode='rgb_array'``: the grid, the dot white and the target red, enlarged."""
        if self.render_mode != 'rgb_array':
            return None
        cells = np.zeros((self.size, self.size, 3), dtype=np.uint8)
        cells[self._target[0], self._target[1]] = (200, 0, 0)
        cells[self._pos[0], self._pos[1]] = 255
        return _enlarged(cells)


class SleepEnv(_TargetEnv):
    """Name the target shown (one of ``n``); every step sleeps ``step_s`` seconds first (a slow simulator's wall time)."""

    def __init__(self, n: int = 4, step_s: float = 0.005, episode_len: int = 100) -> None:
        super().__init__(episode_len)
        if int(n) < 2:
            raise ConfigError(f"env.env_kwargs.n = {n} must be >= 2")
        if not 0.0 <= float(step_s) <= 10.0:
            raise ConfigError(f"env.env_kwargs.step_s = {step_s} must be in [0, 10] seconds")
        self.n, self.step_s = int(n), float(step_s)
        self.action_space = gym.spaces.Discrete(self.n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n,), dtype=np.float32)
        self._target = 0

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        if self.step_s:
            time.sleep(self.step_s)
        return super().step(action)

    def _new_targets(self) -> None:
        self._target = int(self.np_random.integers(self.n))

    def _observation(self) -> np.ndarray:
        obs = np.zeros(self.n, dtype=np.float32)
        obs[self._target] = 1.0
        return obs

    def _reward(self, action: Any) -> float:
        return float(int(action) == self._target)


class CueMemoryEnv(gym.Env):
    """A cue on the first step decides which action pays at the last (``delay + 1`` steps); see the module docstring.

    Observation ``(n_cues + 1,)`` float32: the cue one-hot (first step only) and the ``go`` flag (last step only).
    """

    metadata: Dict[str, Any] = {'render_modes': []}

    def __init__(self, n_cues: int = 2, delay: int = 4) -> None:
        if int(n_cues) < 2:
            raise ConfigError(f"env.env_kwargs.n_cues = {n_cues} must be >= 2 (one cue is no memory task)")
        if int(delay) < 0:
            raise ConfigError(f"env.env_kwargs.delay = {delay} must be >= 0")
        self.n_cues, self.delay = int(n_cues), int(delay)
        self.action_space = gym.spaces.Discrete(self.n_cues)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n_cues + 1,), dtype=np.float32)
        self._cue = 0
        self._t = 0

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        super().reset(seed=seed)
        self._t = 0
        self._cue = int(self.np_random.integers(self.n_cues))
        obs = np.zeros(self.n_cues + 1, dtype=np.float32)
        obs[self._cue] = 1.0
        if self.delay == 0:  # the cue and the go flag at once: no memory needed
            obs[-1] = 1.0
        return obs, {}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        decision = self._t == self.delay
        self._t += 1
        obs = np.zeros(self.n_cues + 1, dtype=np.float32)
        if decision:
            return obs, float(int(action) == self._cue), True, False, {}
        if self._t == self.delay:
            obs[-1] = 1.0
        return obs, 0.0, False, False, {}


def _make(cls: type, env_cfg: Dict[str, Any], overrides: Dict[str, Any]) -> gym.Env:
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    if env_cfg.get('max_episode_steps'):
        kwargs['episode_len'] = env_cfg['max_episode_steps']
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise kwargs_rejected(cls.__name__, cls, exc) from exc


@ENV_REGISTRY.register('toy_multidiscrete')
def make_toy_multidiscrete(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``ToyMultiDiscreteEnv`` (constructor arguments from ``env.env_kwargs``)."""
    return _make(ToyMultiDiscreteEnv, env_cfg, overrides)


@ENV_REGISTRY.register('toy_multidiscrete_masked')
def make_toy_multidiscrete_masked(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``ToyMaskedMultiDiscreteEnv`` (constructor arguments from ``env.env_kwargs``)."""
    return _make(ToyMaskedMultiDiscreteEnv, env_cfg, overrides)


@ENV_REGISTRY.register('toy_dict')
def make_toy_dict(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``ToyDictEnv`` (constructor arguments from ``env.env_kwargs``)."""
    return _make(ToyDictEnv, env_cfg, overrides)


@ENV_REGISTRY.register('toy_pixel_dot')
def make_toy_pixel_dot(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``MovingDotEnv`` with ``frame_stack`` frames stacked (``env.env_kwargs``, default 2)."""
    overrides = dict(overrides)
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    frame_stack = int(overrides.pop('frame_stack', kwargs.pop('frame_stack', 2)))
    if frame_stack < 1:
        raise ConfigError(f"env.env_kwargs.frame_stack = {frame_stack} must be >= 1")
    env = _make(MovingDotEnv, dict(env_cfg, env_kwargs=kwargs), overrides)
    return gym.wrappers.FrameStackObservation(env, frame_stack) if frame_stack > 1 else env


@ENV_REGISTRY.register('toy_pixel_goal')
def make_toy_pixel_goal(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``DotToTargetEnv`` (constructor arguments from ``env.env_kwargs``)."""
    return _make(DotToTargetEnv, env_cfg, overrides)


@ENV_REGISTRY.register('toy_cue_memory')
def make_toy_cue_memory(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``CueMemoryEnv`` (``n_cues``, ``delay`` from ``env.env_kwargs``)."""
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    try:
        return CueMemoryEnv(**kwargs)
    except TypeError as exc:
        raise kwargs_rejected('CueMemoryEnv', CueMemoryEnv, exc) from exc


@ENV_REGISTRY.register('toy_sleep')
def make_toy_sleep(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of ``SleepEnv`` (``n``, ``step_s``, ``episode_len`` from ``env.env_kwargs``)."""
    return _make(SleepEnv, env_cfg, overrides)
