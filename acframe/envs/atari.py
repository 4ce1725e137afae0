"""The standard Atari preprocessing, chosen by ``env.atari`` (the one place acframe builds Atari envs).

With ``env.atari.enable=True`` every env of ``env.env_id`` (an ``ALE/*-v5`` id; ``pip install acframe[atari]``
brings ale-py, which ships the ROMs, and opencv) is built as

    gymnasium.make(env_id, frameskip=1, repeat_action_probability=...)   # one emulator frame per ALE step
    → AtariPreprocessing(frame_skip, noop_max, screen_size, grayscale)    # no-op starts; each action repeated
                                                                          # frame_skip frames, the last two max-pooled
    → EpisodicLife           (training envs, episodic_life)  a lost life ends the training episode, the game goes on
    → FireReset              (fire_reset, games with FIRE)  press FIRE to start a game and after each lost life
    → ClipReward             (training envs, clip_reward)    rewards clipped to their sign
    → FrameStackObservation(frame_stack)                     uint8 (frame_stack, screen_size, screen_size)

as in Mnih et al. 2015 and the IMPALA/A2C baselines, and as EnvPool builds its Atari envs
(``env.manager='envpool'``): the frames of the two agree pixel for pixel on the same actions (no-op starts and
FIRE aside, which each draws its own way), so a policy trained on one plays on the other. The max-pool over the
last two frames of each skip is what the papers do against sprites drawn on alternate frames, and it shows a
moving ball twice: a ``v5`` id's own frame skip (in the emulator) keeps only the last frame, which a policy
trained on EnvPool's frames does not play well (Breakout: ~18 instead of ~300). The evaluator's envs play whole
games with the game's own scores (no EpisodicLife, no ClipReward): evaluation returns and ``stop_value`` are game
scores; FIRE is pressed after each lost life there as at a training env's reset, so a greedy policy, which was
never asked to serve, does not stand still (the RL Zoo's and CleanRL's evaluations do the same).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np

from ..errors import ConfigError


def register_ale() -> None:
    """Register the ``ALE/*`` ids with gymnasium; a clear error when the ``atari`` extra is missing."""
    try:
        import ale_py
    except ImportError as exc:
        raise ConfigError("Atari envs need the 'atari' extra (ale-py, opencv): pip install 'acframe[atari]'") from exc
    gym.register_envs(ale_py)


def atari_make_kwargs(atari: Dict[str, Any], env_id: str) -> Dict[str, Any]:
    """The ``gymnasium.make`` keywords the chain needs: no frame skip in the emulator (``AtariPreprocessing`` skips
    and max-pools) and the sticky actions."""
    if not str(env_id).startswith('ALE/'):
        raise ConfigError(f"env.atari.enable is True but env.env_id '{env_id}' is not an ALE env; "
                          f"use an 'ALE/<Game>-v5' env_id or set env.atari.enable=False")
    return {'frameskip': 1, 'repeat_action_probability': float(atari.get('repeat_action_probability', 0.25))}


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode (``terminated``) for learning; ``reset`` then continues the same game with a
    no-op step instead of starting a new one, unless the game is over or the reset is seeded (``reset(seed=...)``
    starts the game that seed gives, as any env's does: acframe seeds only an env's first reset)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._lives = 0
        self._game_over = True

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._game_over = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self._lives:
            terminated = True
        self._lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> Tuple[Any, dict]:
        if self._game_over or kwargs.get('seed') is not None:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the no-op ended the game: start a new one
                obs, info = self.env.reset(**kwargs)
        self._game_over = False
        self._lives = self.env.unwrapped.ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE (then UP, as the baselines do) after a reset: games like Breakout wait for it to start. A lost
    life that does not end the episode (the evaluator's whole games) is followed by the same presses, as a
    training env's reset after its lost life is (EpisodicLife below ends its episode there): a policy never has to
    learn to serve, in training or in evaluation."""

    SERVE = (1, 2)  # FIRE, then UP

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._lives = 0

    def reset(self, **kwargs: Any) -> Tuple[Any, dict]:
        self.env.reset(**kwargs)
        obs, info = self._serve(**kwargs)
        self._lives = self.env.unwrapped.ale.lives()
        return obs, info

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = self.env.unwrapped.ale.lives()
        if lives < self._lives and not (terminated or truncated):
            for serve in self.SERVE:
                obs, served, terminated, truncated, info = self.env.step(serve)
                reward += served
                if terminated or truncated:
                    break
            lives = self.env.unwrapped.ale.lives()
        self._lives = lives
        return obs, reward, terminated, truncated, info

    def _serve(self, **kwargs: Any) -> Tuple[Any, dict]:
        for action in self.SERVE:
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class ClipReward(gym.RewardWrapper):
    """Rewards clipped to their sign, -1, 0 or +1 (Mnih et al. 2015)."""

    def reward(self, reward: float) -> float:
        return float(np.sign(reward))


def wrap_atari(env: gym.Env, atari: Dict[str, Any], training: bool) -> gym.Env:
    """The preprocessing chain of the module docstring around an ALE env made with ``atari_make_kwargs``."""
    if not hasattr(env.unwrapped, 'ale'):
        raise ConfigError(f"env.atari.enable is True but env {env.spec.id if env.spec else env} is not an ALE env; "
                          f"use an 'ALE/<Game>-v5' env_id or set env.atari.enable=False")
    frame_stack = int(atari.get('frame_stack', 4))
    if frame_stack < 1:
        raise ConfigError(f"env.atari.frame_stack = {frame_stack} must be >= 1")
    frame_skip = int(atari.get('frame_skip', 4))
    if frame_skip < 1:
        raise ConfigError(f"env.atari.frame_skip = {frame_skip} must be >= 1")
    try:
        env = gym.wrappers.AtariPreprocessing(env, noop_max=int(atari.get('noop_max', 30)), frame_skip=frame_skip,
                                              screen_size=int(atari.get('screen_size', 84)),
                                              grayscale_obs=bool(atari.get('grayscale', True)), scale_obs=False)
    except gym.error.DependencyNotInstalled as exc:  # opencv (its frames' resizing): part of the same extra
        env.close()
        raise ConfigError(f"Atari envs need the 'atari' extra (ale-py, opencv): pip install 'acframe[atari]' "
                          f"({str(exc).strip().splitlines()[0]})") from exc
    if training and atari.get('episodic_life', True):
        env = EpisodicLife(env)
    if atari.get('fire_reset', True) and 'FIRE' in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    if training and atari.get('clip_reward', True):
        env = ClipReward(env)
    if frame_stack > 1:
        env = gym.wrappers.FrameStackObservation(env, frame_stack)
    return env


def atari_config(env_cfg: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """``env.atari`` when it is enabled, else None."""
    atari = env_cfg.get('atari') or {}
    return dict(atari) if atari.get('enable') else None
