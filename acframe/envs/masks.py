"""Invalid-action masks on the env side (docs/masks.md).

An env states which actions are legal with a Dict observation holding an ``'action_mask'`` key (the
PettingZoo/Gymnasium convention): a 1-D 0/1 array, one entry per action of a Discrete(n) space (``n`` entries) or
per choice of each dimension of a MultiDiscrete(nvec) space (``sum(nvec)`` entries, dimension after dimension).
``FlattenDictObservation`` keeps the mask apart from the policy's observation: the observation the workers store
is ``{'obs': <the other keys, flattened as without a mask>, 'action_mask': uint8 (n,)}`` (the other keys stay
keys of their own when they mix images and vectors), so segments and replay buffers carry the mask each actor
saw, and the policy masks its logits with it (``models.distributions.mask_logits``).

``ActionMaskCheck`` (applied by ``build_env``) refuses, in one line naming the env, its seed and the step, an
observation that leaves no legal action. ``InfoActionMask`` turns an env that reports its mask in
``info['action_mask']`` into the Dict form.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:
    from ..errors import EnvContractError

#: the key of a Dict observation that holds the action mask
ACTION_MASK_KEY = 'action_mask'
#: the key of the policy's observation beside the mask when it is one array
OBS_KEY = 'obs'


def mask_space_of(space: gym.Space) -> Optional[gym.Space]:
    """The ``'action_mask'`` entry of a Dict observation space, or None."""
    if isinstance(space, gym.spaces.Dict):
        return space.spaces.get(ACTION_MASK_KEY)
    return None


def split_mask_space(space: gym.Space) -> Tuple[gym.Space, Optional[gym.Space]]:
    """``(the policy's observation space, the mask's space or None)`` of a (flattened) observation space: the
    inverse of what ``FlattenDictObservation`` builds for a masked env."""
    mask = mask_space_of(space)
    if mask is None:
        return space, None
    rest = OrderedDict((k, s) for k, s in space.spaces.items() if k != ACTION_MASK_KEY)
    if list(rest) == [OBS_KEY]:
        return rest[OBS_KEY], mask
    return gym.spaces.Dict(rest), mask


def split_action_mask(obs: Any) -> Tuple[Any, Any]:
    """``(the policy's observation, the mask or None)`` of an observation or a batch of them: a dict, or a treetensor
    tree, with an ``'action_mask'`` key; anything else is returned as it is with no mask."""
    if not hasattr(obs, 'keys') or ACTION_MASK_KEY not in obs.keys():
        return obs, None
    keys = [k for k in obs.keys() if k != ACTION_MASK_KEY]
    if keys == [OBS_KEY]:
        return obs[OBS_KEY], obs[ACTION_MASK_KEY]
    if isinstance(obs, dict):
        return {k: obs[k] for k in keys}, obs[ACTION_MASK_KEY]
    from ..data import make_tree  # a treetensor tree (a segment's or a batch's observations)
    return make_tree({k: obs[k] for k in keys}), obs[ACTION_MASK_KEY]


def mask_size(action_space: gym.Space) -> Optional[int]:
    """Entries a mask of ``action_space`` has (``n``, or ``sum(nvec)``); None when actions of that space cannot be
    masked."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete) and len(action_space.nvec.shape) == 1:
        return int(np.sum(action_space.nvec))
    return None


def check_mask_space(mask_space: gym.Space, action_space: gym.Space, env_name: str) -> None:
    """A ``ConfigError`` (one line) unless ``mask_space`` is a 1-D 0/1 space with one entry per action of
    ``action_space``."""
    from ..errors import ConfigError

    size = mask_size(action_space)
    if size is None:
        raise ConfigError(f"env '{env_name}' has an 'action_mask' observation but {action_space} actions: masks are "
                          f"for Discrete and MultiDiscrete actions; remove the mask from the observation")
    shape = getattr(mask_space, 'shape', None)
    if not isinstance(mask_space, (gym.spaces.Box, gym.spaces.MultiBinary)) or shape != (size,):
        raise ConfigError(f"env '{env_name}': its 'action_mask' observation is {mask_space}; a mask of {action_space} "
                          f"is a 1-D 0/1 Box or MultiBinary of {size} entries (one per action"
                          f"{', dimension after dimension' if isinstance(action_space, gym.spaces.MultiDiscrete) else ''})")


def uint8_mask_space(size: int) -> gym.spaces.Box:
    """The space of a mask as the workers store it: uint8 0/1 ``(size,)``."""
    return gym.spaces.Box(0, 1, (size,), dtype=np.uint8)


def as_uint8_mask(mask: Any) -> np.ndarray:
    return (np.asarray(mask) != 0).astype(np.uint8)


def mask_problem(mask: Any, shape: Tuple[int, ...]) -> Optional[str]:
    """What is wrong with an env's ``mask`` (one observation's, or a batch's rows) that should have ``shape``: no
    mask (None), another shape, a value other than 0 and 1 (bools are fine); None when nothing is."""
    if mask is None:
        return f"its observation has no '{ACTION_MASK_KEY}' key, which its observation space declares"
    raw = np.asarray(mask)
    if raw.shape != tuple(shape):
        return (f"its observation's '{ACTION_MASK_KEY}' has shape {raw.shape}, but its observation space declares "
                f"{tuple(shape)}: one entry per action at every step")
    if raw.dtype != np.bool_ and not np.all((raw == 0) | (raw == 1)):
        odd = raw[(raw != 0) & (raw != 1)].ravel()[0].item()
        return f"its observation's '{ACTION_MASK_KEY}' holds {odd!r}, not 0 or 1: 1 for each legal action, 0 for the others"
    return None


def mask_splits(action_space: gym.Space) -> Optional[np.ndarray]:
    """Where a mask of ``action_space`` splits into its dimensions (``np.split`` indices), None for Discrete."""
    nvec = getattr(action_space, 'nvec', None)
    return np.cumsum(np.asarray(nvec))[:-1] if nvec is not None else None


def empty_mask_rows(masks: np.ndarray, splits: Optional[np.ndarray]) -> Optional[Tuple[int, int]]:
    """``(row, action dimension)`` of the first of ``masks`` ``(B, n)`` that leaves no legal action (in some dimension
    of a MultiDiscrete space), None when every row leaves one."""
    parts = [masks] if splits is None else np.split(masks, splits, axis=1)
    for dim, part in enumerate(parts):
        rows = np.flatnonzero(~part.any(axis=1))
        if rows.size:
            return int(rows[0]), dim
    return None


def no_legal_action(role: str, index: int, name: str, seed: int, dim: int, splits: Optional[np.ndarray],
                    step: int) -> 'EnvContractError':
    """The one-line ``EnvContractError`` for an observation to act on whose mask leaves no legal action."""
    from ..errors import EnvContractError

    where = f" in action dimension {dim}" if splits is not None else ""
    return EnvContractError(f"{role} env {index} of '{name}' (seed {seed}) has no legal action{where} at step {step} "
                            f"of its episode: its observation's 'action_mask' is all zeros; end the episode "
                            f"(terminated=True) at the step that leaves no legal action")


def api_form(result: Any, size: int) -> bool:
    """Whether an env's ``reset`` (``size`` 2: ``(obs, info)``) or ``step`` (5) result has gymnasium's form; a wrapper
    of acframe's passes any other result on as it is, for the env's checks to name (the old gym API: a bare
    observation, a Dict of two keys, which would unpack into its key names, or four values)."""
    return isinstance(result, tuple) and len(result) == size


class ActionMaskCheck(gym.Wrapper):
    """Refuses an observation the policy must act on whose mask leaves no legal action (in any dimension of a
    MultiDiscrete space), in one ``EnvContractError`` line naming the env, its seed and the step. The last observation of an
    episode (terminated or truncated) is not acted on and is not checked."""

    def __init__(self, env: gym.Env, name: str, index: int, seed: int, role: str) -> None:
        super().__init__(env)
        self.name, self.index, self.seed, self.role = name, index, seed, role
        self._splits = mask_splits(env.action_space)
        self._t = 0

    def _check(self, obs: Dict[str, Any]) -> None:
        empty = empty_mask_rows(np.asarray(obs[ACTION_MASK_KEY])[None], self._splits)
        if empty is not None:
            raise no_legal_action(self.role, self.index, self.name, self.seed, empty[1], self._splits, self._t)

    def reset(self, **kwargs: Any) -> Any:
        result = self.env.reset(**kwargs)
        if not api_form(result, 2):
            return result  # (the old gym API: named by the env's checks)
        obs, info = result
        self._t = 0
        self._check(obs)
        return obs, info

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        if not api_form(result, 5):
            return result
        obs, reward, terminated, truncated, info = result
        self._t += 1
        if not (terminated or truncated):
            self._check(obs)
        return obs, reward, terminated, truncated, info


class InfoActionMask(gym.Wrapper):
    """An env that reports its mask in ``info['action_mask']`` (after ``reset`` and every ``step``) as a masked
    Dict observation: ``{'obs': observation, 'action_mask': info['action_mask']}``. Wrap your env in it in the
    factory you register (docs/masks.md); a step whose info lacks the mask is an error."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        size = mask_size(env.action_space)
        if size is None:
            raise ValueError(f"InfoActionMask: {env.action_space} actions cannot be masked (Discrete or MultiDiscrete)")
        self.observation_space = gym.spaces.Dict(OrderedDict(
            [(OBS_KEY, env.observation_space), (ACTION_MASK_KEY, uint8_mask_space(size))]))

    def _obs(self, obs: Any, info: Dict[str, Any], when: str) -> Dict[str, Any]:
        if ACTION_MASK_KEY not in info:  # (acframe's wrapper read it: the env's error, with no line of the env's)
            from .gym_env import OffSpaceError
            raise OffSpaceError(f"its {when} returned no info['{ACTION_MASK_KEY}'] (InfoActionMask takes the mask from "
                                f"info after reset and every step); return it there")
        return {OBS_KEY: obs, ACTION_MASK_KEY: as_uint8_mask(info[ACTION_MASK_KEY])}

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        return self._obs(obs, info, 'reset'), info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if (terminated or truncated) and ACTION_MASK_KEY not in info:  # an episode's last observation is not acted on
            info = {**info, ACTION_MASK_KEY: np.ones(self.observation_space[ACTION_MASK_KEY].shape, np.uint8)}
        return self._obs(obs, info, 'step'), reward, terminated, truncated, info
