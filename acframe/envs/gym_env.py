"""Env factories: any gymnasium id, registered short names, and the wrappers acframe applies."""
from __future__ import annotations

import re
import traceback
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from ..errors import AcframeError, ConfigError, EnvContractError, EnvError, describe_raised
from ..registry import closest
from .masks import (ACTION_MASK_KEY, OBS_KEY, ActionMaskCheck, api_form, as_uint8_mask, check_mask_space, mask_problem,
                    uint8_mask_space)

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

#: partially observed variants, ``short name: (gymnasium id, indices of the observation entries kept)``: the
#: standard no-velocity tasks of recurrent RL (sb3-contrib / RL Zoo's CartPoleNoVel): the velocities are removed,
#: so a policy must infer them from the history of its observations (``policy.model.rnn``)
NO_VELOCITY: Dict[str, Tuple[str, Tuple[int, ...]]] = {
    'cartpole_novel': ('CartPole-v1', (0, 2)),  # cart position, pole angle (cart and pole velocities removed)
    'pendulum_novel': ('Pendulum-v1', (0, 1)),  # cos and sin of the angle (the angular velocity removed)
    # x, y, angle and the two leg contacts (the x and y velocities and the angular velocity removed; box2d extra)
    'lunarlander_novel': ('LunarLander-v3', (0, 1, 4, 6, 7)),
    'lunarlander_continuous_novel': ('LunarLanderContinuous-v3', (0, 1, 4, 6, 7)),
}


def resolve_env_id(env_id: str) -> str:
    """A gymnasium id for ``env_id``, which may be a short name; a clear error when it is neither.

    gymnasium's ``'module:EnvId'`` form (which imports ``module``) is refused: a config may come from a run folder,
    and what acframe imports is named by the user (``import_names``, ``--import``), never by the data it reads."""
    if ':' in env_id:
        raise ConfigError(f"env.env_id '{env_id[:100]}' names a module to import ('module:EnvId'); acframe imports only "
                          f"modules you name: list the module in import_names (or pass --import MODULE) and give "
                          f"the id alone, e.g. env.env_id='{env_id.split(':')[-1][:60]}'")
    if env_id in SHORT_NAMES:
        return SHORT_NAMES[env_id]
    if env_id in NO_VELOCITY:
        return NO_VELOCITY[env_id][0]
    if env_id.startswith('ALE/') and env_id not in gym.registry:
        from .atari import register_ale
        register_ale()
    if env_id in gym.registry:
        return env_id
    if re.fullmatch(r'LunarLander(Continuous)?-v\d+', env_id):
        return env_id  # registered by gymnasium, needs box2d: gym.make says so
    from ..registry import ENV_REGISTRY
    if env_id != 'gym' and env_id in ENV_REGISTRY:
        raise ConfigError(f"env.env_id '{env_id}' names an env type (registered in ENV_REGISTRY), not a gymnasium env: "
                          f"set env.type={env_id} (create_config.env.type in a config file)")
    known = list(SHORT_NAMES) + list(NO_VELOCITY) + list(gym.registry)
    hint = closest(env_id, known, cutoff=0.7)  # (ids share '-v1' and the like: a low cutoff names unrelated envs)
    did_you_mean = f" Did you mean '{hint}'?" if hint else ""
    raise ConfigError(
        f"env.env_id '{env_id}' is neither a gymnasium id nor a short name.{did_you_mean} An env your own module "
        f"registers (gymnasium.register, or ENV_REGISTRY for an env type) needs that module imported: --import MODULE "
        f"(import_names in a config). "
        f"Short names: {', '.join(list(SHORT_NAMES) + list(NO_VELOCITY))}"
    )


def kwargs_rejected(owner: str, target: Any, exc: TypeError) -> ConfigError:
    """The error for ``env.env_kwargs`` that ``target`` (a class or factory, named ``owner``) refused with ``exc``:
    a keyword it does not take is compared with the keywords it does (``Did you mean env.env_kwargs.gravity?``, or
    the keywords it takes where none is close)."""
    hint = ''
    unknown = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    if unknown is not None:
        import inspect
        try:
            params = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):  # (a builtin or a callable without a signature: no hint)
            params = ()
        taken = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        close = closest(unknown.group(1), taken, cutoff=0.6)
        hint = (f" Did you mean env.env_kwargs.{close}?" if close else
                f" It takes: {', '.join(taken)}" if taken else "")
    return ConfigError(f"env.env_kwargs for {owner} were rejected: {str(exc).rstrip('.')}.{hint}")


def _gym_entry_point(env_id: str) -> Any:
    """The class or function ``gym.make(env_id)`` builds from (None where it cannot be loaded without side effects)."""
    entry = gym.registry[env_id].entry_point if env_id in gym.registry else None
    if isinstance(entry, str) and ':' in entry:
        import importlib
        module, _, attr = entry.partition(':')
        try:
            return getattr(importlib.import_module(module), attr, None)
        except Exception:  # noqa: BLE001 (the hint is a courtesy: the error stands without it)
            return None
    return entry if callable(entry) else None


def make_gym_env(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """``gymnasium.make(env.env_id, **env.env_kwargs)`` with ``max_episode_steps`` applied; a ``NO_VELOCITY`` name
    keeps only its observation entries (``KeepObservationEntries``)."""
    env_id = resolve_env_id(env_cfg['env_id'])
    keep = NO_VELOCITY.get(env_cfg['env_id'], (None, None))[1]
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    if env_cfg.get('max_episode_steps'):
        kwargs['max_episode_steps'] = env_cfg['max_episode_steps']
    try:
        env = gym.make(env_id, **kwargs)
        return env if keep is None else KeepObservationEntries(env, keep)
    except gym.error.DependencyNotInstalled as exc:
        raise ConfigError(f"env.env_id '{env_id}' needs an extra dependency: {exc}") from exc
    except TypeError as exc:
        raise kwargs_rejected(f"'{env_id}'", _gym_entry_point(env_id), exc) from exc
    except gym.error.Error as exc:  # deprecated/unregistered versions, bad registrations
        raise ConfigError(f"env.env_id '{env_id}': {str(exc).strip().splitlines()[0]}") from exc


class ObservationLayer(gym.ObservationWrapper):
    """A ``gym.ObservationWrapper`` that passes results of another form than gymnasium's on unread (``api_form``)."""

    def reset(self, **kwargs: Any) -> Any:
        result = self.env.reset(**kwargs)
        if not api_form(result, 2):
            return result
        obs, info = result
        return self.observation(obs), info

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        if not api_form(result, 5):
            return result
        obs, reward, terminated, truncated, info = result
        return self.observation(obs), reward, terminated, truncated, info


class KeepObservationEntries(ObservationLayer):
    """A 1-D Box observation reduced to the entries at ``indices`` (e.g. CartPole without its velocities)."""

    def __init__(self, env: gym.Env, indices: Sequence[int]) -> None:
        super().__init__(env)
        self._indices = np.asarray(indices, dtype=np.int64)
        space = env.observation_space
        self.observation_space = gym.spaces.Box(space.low[self._indices], space.high[self._indices],
                                                dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self._indices]


class FlattenDictObservation(ObservationLayer):
    """The chosen keys (``env.obs_keys``; None: all, sorted) of a Dict observation, as the models take them.

    * vector keys only: concatenated into one float32 vector (SheepRL's ``mlp_keys``);
    * one key: passed through as it is (so ``env.obs_keys=['image']`` keeps a uint8 image an image);
    * images (2-D/3-D Box) with other keys: a Dict of the chosen keys in that order — images as they are (uint8
      stays uint8), vectors flattened to 1-D float32 — which the model encodes per key (``models.encoders.DictEncoder``);
    * an ``'action_mask'`` key (``envs.masks``, docs/masks.md) is never part of the policy's observation: the result is
      then ``{'obs': <the above>, 'action_mask': uint8 mask}`` (images mixed with vectors: their keys and the mask).
    """

    def __init__(self, env: gym.Env, keys: Optional[Sequence[str]] = None) -> None:
        super().__init__(env)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Dict)
        if keys and ACTION_MASK_KEY in keys:
            raise ConfigError(f"env.obs_keys names '{ACTION_MASK_KEY}': that key is the action mask, which the policy "
                              f"applies to its logits, not an observation; remove it from env.obs_keys (docs/masks.md)")
        self.masked = ACTION_MASK_KEY in space.spaces  # the mask is kept apart: {'obs': ..., 'action_mask': ...}
        self.keys = list(keys) if keys else sorted(k for k in space.spaces if k != ACTION_MASK_KEY)
        if not self.keys:
            raise ConfigError(f"the env's Dict observation holds only '{ACTION_MASK_KEY}'; a policy needs an "
                              f"observation besides the action mask")
        for key in self.keys:
            if key not in space.spaces:
                keys = sorted(k for k in space.spaces if k != ACTION_MASK_KEY)  # (the mask is not one to name)
                near = closest(key, keys)
                raise ConfigError(f"env.obs_keys: '{key}' is not a key of the observation; "
                                  f"{f'did you mean {near!r}? ' if near else ''}its keys are {keys}")
            if not isinstance(space.spaces[key], gym.spaces.Box):
                raise ConfigError(f"env.obs_keys: observation '{key}' is {space.spaces[key]}; only Box entries can be used")
            if len(space.spaces[key].shape) > 3:
                raise ConfigError(f"env.obs_keys: observation '{key}' has shape {space.spaces[key].shape}; entries are "
                                  f"vectors or images (C, H, W) / (H, W) / (H, W, C)")
        self.mixed = False
        self._shapes = {key: tuple(space.spaces[key].shape) for key in self.keys}  # (each observation is checked)
        self.observation_space = self._policy_space(space)
        # the keys whose arrays are flattened into the policy's vector (their size is what must fit; a tuple: plain
        # data, so the layer's state goes into a checkpoint, envs/snapshot.py)
        self._raveled = tuple(self.keys if len(self.keys) > 1 and not self.mixed else
                              getattr(self, '_vector_keys', []) if self.mixed else [])
        if self.masked:
            mask_space = space.spaces[ACTION_MASK_KEY]
            size = int(np.prod(getattr(mask_space, 'shape', None) or (0,)))
            policy = (list(self.observation_space.spaces.items()) if self.mixed
                      else [(OBS_KEY, self.observation_space)])
            self.observation_space = gym.spaces.Dict(OrderedDict(policy + [(ACTION_MASK_KEY, uint8_mask_space(size))]))
            self.mask_space = mask_space

    def _policy_space(self, space: gym.spaces.Dict) -> gym.Space:
        if len(self.keys) == 1:
            return space.spaces[self.keys[0]]
        boxes = [space.spaces[k] for k in self.keys]
        self.mixed = any(len(box.shape) > 1 for box in boxes)
        if self.mixed:
            self._vector_keys = [k for k, box in zip(self.keys, boxes) if len(box.shape) <= 1]
            return gym.spaces.Dict(OrderedDict(  # (a plain dict would be sorted)
                (k, box if len(box.shape) > 1 else _flat_box(box)) for k, box in zip(self.keys, boxes)))
        return _flat_box(*boxes)

    def observation(self, observation: Dict[str, Any]) -> Any:
        for key, shape in self._shapes.items():  # (stacked with the other envs', a wrong shape names no env or key)
            if key not in observation:
                raise OffSpaceError(f"its observation has no '{key}' key, which its observation space declares")
            given = np.shape(observation[key])
            if given != shape and (key not in self._raveled or int(np.prod(given)) != int(np.prod(shape))):
                raise OffSpaceError(f"its observation's '{key}' has shape {given}, but its observation space declares "
                                    f"{shape}")
        if not self.masked:
            return self._policy_obs(observation)
        policy = self._policy_obs(observation)
        out = dict(policy) if self.mixed else {OBS_KEY: policy}
        problem = mask_problem(observation.get(ACTION_MASK_KEY), self.mask_space.shape)
        if problem is not None:
            raise OffSpaceError(problem)
        out[ACTION_MASK_KEY] = as_uint8_mask(observation[ACTION_MASK_KEY])
        return out

    def _policy_obs(self, observation: Dict[str, Any]) -> Any:
        if len(self.keys) == 1:
            return observation[self.keys[0]]
        if self.mixed:
            out = {k: observation[k] for k in self.keys}
            for k in self._vector_keys:
                out[k] = np.asarray(out[k], dtype=np.float32).reshape(-1)
            return out
        return np.concatenate([np.asarray(observation[k], dtype=np.float32).ravel() for k in self.keys])


def _flat_box(*boxes: gym.spaces.Box) -> gym.spaces.Box:
    """One float32 vector Box of the Boxes' entries, concatenated."""
    lows = [np.asarray(box.low, dtype=np.float32).ravel() for box in boxes]
    highs = [np.asarray(box.high, dtype=np.float32).ravel() for box in boxes]
    return gym.spaces.Box(np.concatenate(lows), np.concatenate(highs), dtype=np.float32)


class OffSpaceError(ValueError):
    """An observation off its declared space, found by acframe's wrappers (``GuardedEnv`` makes it an
    ``EnvContractError`` naming the env: a restarted env would give it again)."""


class GuardedEnv(gym.Wrapper):
    """Re-raise any exception from the env as ``EnvError`` naming the env index, its seed and the traceback."""

    def __init__(self, env: gym.Env, index: int, seed: int, role: str, check: str = '') -> None:
        """``check``: the arguments of ``acframe -m check-env`` for this env (``check_env_arguments``)."""
        super().__init__(env)
        self.index, self.seed, self.role, self.check = index, seed, role, check

    def _fail(self, what: str, exc: BaseException) -> EnvError:
        if isinstance(exc, OffSpaceError):  # acframe's wrapper read it: no line of the env's to name
            return EnvContractError(f"{self.role} env {self.index} (seed {self.seed}), in {what}: {exc} (acframe -m "
                                    f"check-env {self.check} runs every check of the env)")
        return EnvError(
            f"{self.role} env {self.index} (seed {self.seed}) raised {describe_raised(exc, what)}\n"
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


def time_limit_of(env: gym.Env) -> Optional[int]:
    """The ``max_episode_steps`` of the outermost ``TimeLimit`` wrapping ``env``; None without one."""
    layer = env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, gym.wrappers.TimeLimit):
            return int(layer._max_episode_steps)
        layer = layer.env
    return None


def cap_episodes(env: gym.Env, env_cfg: Dict[str, Any], role: str) -> gym.Env:
    """Cap the episodes of any factory's env: ``env.max_episode_steps`` when given (a ``TimeLimit`` unless the env
    already has exactly that limit); an evaluator env with no time limit at all gets ``env.eval_episode_cap``, so
    an env that never ends cannot hang an evaluation (its episodes end as truncations).
    """
    limit = env_cfg.get('max_episode_steps')
    current = time_limit_of(env)
    if limit and current != int(limit):
        return gym.wrappers.TimeLimit(env, int(limit))
    if current is None and role == 'evaluator' and env_cfg.get('eval_episode_cap'):
        return gym.wrappers.TimeLimit(env, int(env_cfg['eval_episode_cap']))
    return env


def env_name(env_cfg: Dict[str, Any]) -> str:
    """How messages name the env: ``env.env_id`` for gymnasium's; for any other registered ``env.type``, the type,
    with the ``env.env_id`` it was given (``type_env_id``): ``pettingzoo_classic (connect_four_v3)``."""
    kind = env_cfg.get('type', 'gym') or 'gym'
    if kind == 'gym':
        return str(env_cfg.get('env_id'))
    env_id = type_env_id(env_cfg)
    return kind if env_id is None else f"{kind} ({env_id})"


def recorded_env_id(env_cfg: Dict[str, Any]) -> Optional[str]:
    """``env.env_id`` as records (``summary.json``, an evaluation's result) give it: None for a registered
    ``env.type`` other than ``gym`` that was not given one (the default config's, which it ignores)."""
    if (env_cfg.get('type', 'gym') or 'gym') == 'gym':
        return str(env_cfg.get('env_id'))
    return type_env_id(env_cfg)


def type_env_id(env_cfg: Dict[str, Any]) -> Optional[str]:
    """The ``env.env_id`` of a registered ``env.type`` other than ``gym`` where it was set (a factory that picks a
    game by it); None where it is the type's own name or the default config's, which such a factory ignores."""
    from ..config.defaults import ENV

    env_id = env_cfg.get('env_id')
    return None if env_id in (None, env_cfg.get('type'), ENV['env_id']) else str(env_id)


def refuses_render_mode(exc: BaseException, cfg: Any) -> bool:
    """Whether building ``cfg``'s env failed because its factory takes no ``render_mode`` (one acframe added: the
    config's own ``env.env_kwargs`` do not name it)."""
    chain: List[str] = []
    cause: Optional[BaseException] = exc
    while cause is not None:
        chain.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    return (any("unexpected keyword argument 'render_mode'" in text for text in chain)
            and 'render_mode' not in (cfg.env.get('env_kwargs') or {}))


def missing_rom_fix(exc: BaseException) -> str:
    """What to do when an Atari env's ROM file is missing (ale-py ships them; a damaged install lacks one), else ''."""
    filename = str(getattr(exc, 'filename', '') or '')
    if isinstance(exc, FileNotFoundError) and 'ale_py' in filename and filename.endswith('.bin'):
        return "; that ROM is part of ale-py, whose install lacks it: reinstall it (pip install --force-reinstall ale-py)"
    return ''


def build_env(env_cfg: Dict[str, Any], index: int, seed: int, role: str, **overrides: Any) -> gym.Env:
    """One env as the workers see it: the registered factory, the Atari chain when ``env.atari.enable``
    (``envs.atari``; the evaluator's envs play whole, unclipped games), its episodes capped (``cap_episodes``),
    Dict observations flattened, errors guarded."""
    from ..registry import ENV_REGISTRY
    from .atari import atari_config, atari_make_kwargs, wrap_atari

    factory = ENV_REGISTRY.get_for(env_cfg.get('type', 'gym'), 'env.type')
    atari = atari_config(env_cfg)
    if atari is not None:
        overrides = {**atari_make_kwargs(atari, env_cfg['env_id']), **overrides}
    try:
        env = factory(env_cfg, **overrides)
    except AcframeError:
        raise
    except Exception as exc:  # the user's env (or factory) raised while it was built: one line naming it
        raise EnvError(f"{role} env {index} (seed {seed}) raised {describe_raised(exc, 'construction')}"
                       f"{missing_rom_fix(exc)}") from exc
    if not isinstance(env, gym.Env):
        try:
            getattr(env, 'close', lambda: None)()
        except Exception:  # noqa: BLE001 - the error below is the one to report
            pass
        raise ConfigError(f"env.type '{env_cfg.get('type', 'gym')}': its factory returned a {type(env).__name__}, not a "
                          f"gymnasium.Env; make it return an env (a gymnasium.Env subclass, docs/custom_env.md)")
    if atari is not None:
        env = wrap_atari(env, atari, training=role != 'evaluator')
    env = cap_episodes(env, env_cfg, role)
    if isinstance(env.observation_space, gym.spaces.Dict):
        env = FlattenDictObservation(env, env_cfg.get('obs_keys'))
        if env.masked:  # (docs/masks.md)
            name = env_name(env_cfg)
            check_mask_space(env.mask_space, env.action_space, name)
            env = ActionMaskCheck(env, name, index, seed, role)
    from .check import check_env_arguments, env_imports
    return GuardedEnv(env, index, seed, role, check_env_arguments(env_cfg, env_imports(env_cfg)))


#: where an env's own parameters are declared (domain randomization): how each reaches the env (``via``)
PARAMS_PATH = 'env.domain_randomization.params'


def param_routes(env_cfg: Dict[str, Any]) -> Dict[str, str]:
    """``{parameter: 'kwarg' | 'attribute'}``: how each parameter declared in ``env.domain_randomization.params``
    reaches an env (a parameter declared nowhere is a keyword)."""
    declared = (env_cfg.get('domain_randomization') or {}).get('params') or {}
    if not declared:
        return {}
    from .randomization import parse_params

    return {spec.name: spec.via for spec in parse_params(dict(declared))}


def build_param_env(env_cfg: Dict[str, Any], index: int, seed: int, role: str, kwargs: Dict[str, Any],
                    attributes: Dict[str, Any], wrap: Optional[Callable[[gym.Env, int], gym.Env]] = None) -> gym.Env:
    """``build_env`` with an env's own parameters: ``kwargs`` passed to the factory, ``attributes`` set on
    ``env.unwrapped``; then ``wrap(env, index)`` when given."""
    try:
        env = build_env(env_cfg, index, seed, role, **kwargs)
    except ConfigError as exc:
        if not kwargs:
            raise
        raise ConfigError(f"{PARAMS_PATH}: the env rejected the drawn keywords {sorted(kwargs)} ({exc}); "
                          f"declare a parameter the constructor lacks with via='attribute'") from exc
    target = env.unwrapped
    for name, value in attributes.items():
        if not hasattr(target, name):
            env.close()
            raise ConfigError(f"{PARAMS_PATH}.{name}: via='attribute' but {type(target).__name__} has no attribute "
                              f"'{name}'; pass it as a constructor keyword (via='kwarg') or pick an existing attribute")
        setattr(target, name, value)
    return env if wrap is None else wrap(env, index)


def env_fns(env_cfg: Dict[str, Any], seeds: Sequence[int], role: str,
            per_env_overrides: Optional[Sequence[Dict[str, Any]]] = None,
            params: Optional[Sequence[Dict[str, Any]]] = None, wrap: Optional[Callable[[gym.Env, int], gym.Env]] = None,
            routes: Optional[Dict[str, str]] = None) -> List[Callable[[], gym.Env]]:
    """Picklable constructors for ``len(seeds)`` envs (subprocess managers call them in the child): env ``i`` gets the
    factory keywords ``per_env_overrides[i]`` and its own parameters ``params[i]``, each a keyword or, routed
    ``'attribute'`` (``routes``, default ``param_routes(env_cfg)``), set on ``env.unwrapped``; ``wrap(env, i)`` last."""
    from functools import partial

    plain_cfg = {k: v for k, v in dict(env_cfg).items()}
    routes = param_routes(plain_cfg) if routes is None and params is not None else (routes or {})
    fns = []
    for i, seed in enumerate(seeds):
        values = dict(params[i]) if params is not None else {}
        kwargs = dict(per_env_overrides[i]) if per_env_overrides else {}
        kwargs.update({k: v for k, v in values.items() if routes.get(k, 'kwarg') == 'kwarg'})
        attributes = {k: v for k, v in values.items() if routes.get(k) == 'attribute'}
        fns.append(partial(build_param_env, plain_cfg, i, int(seed), role, kwargs, attributes, wrap))
    return fns
