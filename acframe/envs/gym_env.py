"""Env factories: any gymnasium id, registered short names, and the wrappers acframe applies."""
from __future__ import annotations

import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

import gymnasium as gym
import numpy as np

from ..errors import ConfigError, EnvError, user_frame
from ..registry import closest

#: short names accepted for ``env.env_id``
SHORT_NAMES: Dict[str, str] = {
    'cartpole': 'CartPole-v1',
    'cartpole_v0': 'CartPole-v0',
    'pendulum': 'Pendulum-v1',
    'acrobot': 'Acrobot-v1',
    'mountaincar': 'MountainCar-v0',
    'mountaincar_continuous': 'MountainCarContinuous-v0',
    'lunarlander': 'LunarLander-v3',
    'lunarlander_continuous': 'LunarLanderContinuous-v3',
}


def resolve_env_id(env_id: str) -> str:
    """A gymnasium id for ``env_id``, which may be a short name; a clear error when it is neither."""
    if env_id in SHORT_NAMES:
        return SHORT_NAMES[env_id]
    if env_id in gym.registry:
        return env_id
    if env_id.startswith('LunarLander'):
        return env_id  # registered by gymnasium, needs box2d: gym.make says so
    known = list(SHORT_NAMES) + list(gym.registry)
    hint = closest(env_id, known)
    did_you_mean = f" Did you mean '{hint}'?" if hint else ""
    raise ConfigError(
        f"env.env_id '{env_id}' is neither a gymnasium id nor a short name.{did_you_mean} "
        f"Short names: {', '.join(SHORT_NAMES)}"
    )


def make_gym_env(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """``gymnasium.make(env.env_id, **env.env_kwargs)`` with ``max_episode_steps`` applied."""
    env_id = resolve_env_id(env_cfg['env_id'])
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    if env_cfg.get('max_episode_steps'):
        kwargs['max_episode_steps'] = env_cfg['max_episode_steps']
    try:
        return gym.make(env_id, **kwargs)
    except gym.error.DependencyNotInstalled as exc:
        raise ConfigError(f"env.env_id '{env_id}' needs an extra dependency: {exc}") from exc
    except TypeError as exc:
        raise ConfigError(f"env.env_kwargs for '{env_id}' were rejected: {exc}") from exc
    except gym.error.Error as exc:  # deprecated/unregistered versions, bad registrations
        raise ConfigError(f"env.env_id '{env_id}': {str(exc).strip().splitlines()[0]}") from exc


class FlattenDictObservation(gym.ObservationWrapper):
    """Concatenate the chosen keys of a Dict observation into one float32 vector (SheepRL's ``mlp_keys``)."""

    def __init__(self, env: gym.Env, keys: Optional[Sequence[str]] = None) -> None:
        super().__init__(env)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Dict)
        self.keys = list(keys) if keys else sorted(space.spaces)
        for key in self.keys:
            if key not in space.spaces:
                raise ConfigError(f"env.obs_keys: '{key}' is not a key of the observation; keys are {sorted(space.spaces)}")
            if not isinstance(space.spaces[key], gym.spaces.Box):
                raise ConfigError(f"env.obs_keys: observation '{key}' is {space.spaces[key]}; only Box entries can be concatenated")
        lows = [np.asarray(space.spaces[k].low, dtype=np.float32).ravel() for k in self.keys]
        highs = [np.asarray(space.spaces[k].high, dtype=np.float32).ravel() for k in self.keys]
        self.observation_space = gym.spaces.Box(np.concatenate(lows), np.concatenate(highs), dtype=np.float32)

    def observation(self, observation: Dict[str, Any]) -> np.ndarray:
        return np.concatenate([np.asarray(observation[k], dtype=np.float32).ravel() for k in self.keys])


class GuardedEnv(gym.Wrapper):
    """Re-raise any exception from the env as ``EnvError`` naming the env index, its seed and the traceback."""

    def __init__(self, env: gym.Env, index: int, seed: int, role: str) -> None:
        super().__init__(env)
        self.index, self.seed, self.role = index, seed, role

    def _fail(self, what: str, exc: BaseException) -> EnvError:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ''
        return EnvError(
            f"{self.role} env {self.index} (seed {self.seed}) raised {type(exc).__name__} in {what}: {message} "
            f"(at {user_frame(exc.__traceback__)}; --debug shows the traceback)\n"
            f"original traceback:\n{traceback.format_exc()}"
        )

    def step(self, action: Any) -> Any:
        try:
            return self.env.step(action)
        except EnvError:
            raise
        except Exception as exc:
            raise self._fail('step', exc) from exc

    def reset(self, **kwargs: Any) -> Any:
        try:
            return self.env.reset(**kwargs)
        except EnvError:
            raise
        except Exception as exc:
            raise self._fail('reset', exc) from exc


def build_env(env_cfg: Dict[str, Any], index: int, seed: int, role: str, **overrides: Any) -> gym.Env:
    """One env as the workers see it: the registered factory, Dict observations flattened, errors guarded."""
    from ..registry import ENV_REGISTRY

    factory = ENV_REGISTRY.get(env_cfg.get('type', 'gym'))
    env = factory(env_cfg, **overrides)
    if isinstance(env.observation_space, gym.spaces.Dict):
        env = FlattenDictObservation(env, env_cfg.get('obs_keys'))
    return GuardedEnv(env, index, seed, role)


def env_fns(env_cfg: Dict[str, Any], seeds: List[int], role: str,
            per_env_overrides: Optional[List[Dict[str, Any]]] = None) -> List[Callable[[], gym.Env]]:
    """Picklable constructors for ``len(seeds)`` envs (subprocess managers call them in the child)."""
    from functools import partial

    overrides = per_env_overrides or [{} for _ in seeds]
    plain_cfg = {k: v for k, v in dict(env_cfg).items()}
    return [partial(build_env, plain_cfg, i, seed, role, **overrides[i]) for i, seed in enumerate(seeds)]
