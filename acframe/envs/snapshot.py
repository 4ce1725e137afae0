"""Exact env state as plain data (numbers, arrays, RNG states) — never a pickled env.

``capture(env)`` walks the wrapper chain down to the unwrapped env and records, for each layer, the
attributes that are plain data: numbers, strings, numpy arrays, tuples/lists/dicts of those and the states
of numpy ``Generator`` objects (``np_random``). Spaces, the env spec and ``None`` render handles carry no
episode state and are skipped. A layer holding anything else (a Box2D world, a simulator handle, a
file) cannot be captured this way: ``capture`` returns ``None`` and the run resumes that env from a reset.

``restore(env, snapshot)`` writes the values back into a freshly built env of the same construction.
Classic-control envs (CartPole, Pendulum, Acrobot, MountainCar) resume exactly; Box2D and MuJoCo envs reset.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np

_GENERATOR = '__np_generator__'
_SKIP_TYPES = (gym.spaces.Space, gym.envs.registration.EnvSpec)
_SKIP_NAMES = {'env', 'metadata', 'render_mode', 'spec', '_cached_spec', 'screen', 'clock', 'viewer', 'window'}


class _NotData(Exception):
    pass


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise _NotData
        return value.copy()
    if isinstance(value, np.random.Generator):
        return {_GENERATOR: value.bit_generator.state}
    if isinstance(value, (list, tuple)):
        encoded = [_encode(v) for v in value]
        return tuple(encoded) if isinstance(value, tuple) else encoded
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _encode(v) for k, v in value.items()}
    raise _NotData


def _decode(value: Any, current: Any) -> Any:
    if isinstance(value, dict) and _GENERATOR in value:
        state = value[_GENERATOR]
        generator = current if isinstance(current, np.random.Generator) else \
            np.random.Generator(getattr(np.random, state['bit_generator'])())
        generator.bit_generator.state = state
        return generator
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _layers(env: gym.Env) -> List[Any]:
    layers, layer = [], env
    while True:
        layers.append(layer)
        inner = getattr(layer, 'env', None)
        if inner is None or not isinstance(layer, gym.Wrapper):
            return layers
        layer = inner


def capture(env: gym.Env) -> Optional[List[Dict[str, Any]]]:
    """Each layer's plain-data attributes, outermost first; ``None`` when some state is not plain data."""
    return capture_or_why(env)[0]


def capture_or_why(env: gym.Env) -> Tuple[Optional[List[Dict[str, Any]]], str]:
    """``(capture(env), '')``, or ``(None, why)`` naming the first attribute that is not plain data
    (``"TimeLimit... Sign._world (a World)"``)."""
    snapshot = []
    for layer in _layers(env):
        fields: Dict[str, Any] = {}
        for name, value in vars(layer).items():
            if name in _SKIP_NAMES or isinstance(value, _SKIP_TYPES) or callable(value) and not isinstance(value, np.ndarray):
                continue
            try:
                fields[name] = _encode(value)
            except _NotData:
                return None, f"{type(layer).__qualname__}.{name} (a {type(value).__qualname__})"
        snapshot.append({'class': type(layer).__qualname__, 'fields': fields})
    return snapshot, ''


def restore(env: gym.Env, snapshot: List[Dict[str, Any]]) -> bool:
    """Write ``snapshot`` into ``env`` (built the same way); False, changing nothing, when the layers differ."""
    layers = _layers(env)
    if len(layers) != len(snapshot) or any(type(l).__qualname__ != s['class'] for l, s in zip(layers, snapshot)):
        return False
    for layer, saved in zip(layers, snapshot):
        for name, value in saved['fields'].items():
            setattr(layer, name, _decode(value, getattr(layer, name, None)))
    return True
