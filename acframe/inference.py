"""Acting with a trained policy outside acframe's pipelines: ``acframe.load_policy(RUN_DIR_OR_CKPT)``.

::

    import gymnasium as gym
    import acframe

    policy = acframe.load_policy('cartpole_a2c_seed0')       # a run folder, or a .pth in its ckpt/
    env = gym.make('CartPole-v1')
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
        done = terminated or truncated

``act`` takes one observation or a batch (numpy in, numpy out). A recurrent policy (``policy.model.rnn``) carries
its state from call to call: call ``policy.reset()`` whenever an episode starts (``policy.reset(envs)`` for some
rows of a batch: indices or a bool array). The explicit form keeps nothing:
``action, state = policy.act(obs, state)`` from ``state = policy.initial_state(B)`` (zeros: put zeros back in the
rows of envs that start an episode), for any policy (a feed-forward one hands its empty state back). Whatever the
model does to observations (e.g. normalization kept in its state) happens inside its forward, so nothing is applied
here.
"""
from __future__ import annotations

import copy
import logging
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn

from .envs.masks import ACTION_MASK_KEY, empty_mask_rows, mask_splits
from .errors import CheckpointError, ConfigError, ConfigWarning
from .runs import RunArtifacts, load_model_weights, locate_run

logger = logging.getLogger('acframe')


def single_precision(x: Any) -> Any:
    """Floating-point tensors (a dict of them too) as float32, the model's dtype: an exported model takes numpy's
    float64 observations as ``act`` does (a trace keeps the cast; uint8 images and masks are left as they are)."""
    if isinstance(x, dict):
        return {k: single_precision(v) for k, v in x.items()}
    return x.to(torch.float32) if isinstance(x, torch.Tensor) and x.is_floating_point() else x


class DeterministicActor(nn.Module):
    """obs ``(B, *obs_shape)`` float32 → the eval mode's deterministic action ``(B,)`` / ``(B, D)``.

    Box actions are clipped to the action space's bounds, as the env manager clips them in training. This
    module is what ``LoadedPolicy.act(obs, deterministic=True)`` runs and what ``acframe -m export`` traces.
    """

    def __init__(self, policy: Any, action_space: gym.Space) -> None:
        super().__init__()
        self.model = policy.model  # registered, so tracing/export keeps its parameters and buffers
        self._forward_eval = policy.eval_mode.forward
        self.clip = isinstance(action_space, gym.spaces.Box)
        if self.clip:
            self.register_buffer('low', torch.as_tensor(action_space.low, dtype=torch.float32))
            self.register_buffer('high', torch.as_tensor(action_space.high, dtype=torch.float32))
        # a MultiDiscrete mask's entries per dimension (a Discrete one is one dimension)
        nvec = getattr(action_space, 'nvec', None)
        self.mask_sizes: Optional[List[int]] = None if nvec is None else [int(n) for n in np.asarray(nvec).ravel()]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = single_precision(obs)
        return self.no_legal_action(obs, self.clipped(self._forward_eval(obs)['action']))

    def no_legal_action(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        """A masked policy's ``action`` with -1 where the observation's ``'action_mask'`` leaves no legal action (a
        MultiDiscrete row: in any dimension, and then every dimension's action is -1): an exported model cannot
        raise, and ``act`` answers a batch's such rows the same (one such observation alone it refuses)."""
        if not (isinstance(obs, dict) and ACTION_MASK_KEY in obs):
            return action
        mask = obs[ACTION_MASK_KEY].to(torch.bool)
        if self.mask_sizes is None:
            legal = mask.any(-1)
        else:
            legal = torch.stack([part.any(-1) for part in mask.split(self.mask_sizes, -1)], -1).all(-1)
        if action.dim() == 2:
            legal = legal.unsqueeze(-1)
        return torch.where(legal, action, torch.full_like(action, -1))

    def clipped(self, action: torch.Tensor) -> torch.Tensor:
        """``action`` clipped to a Box action space's bounds (other spaces: as it is)."""
        if self.clip:
            action = torch.maximum(torch.minimum(action, self.high), self.low)
        return action


class RecurrentActor(DeterministicActor):
    """One step of a recurrent policy's eval mode from explicit states, keeping nothing:
    ``(obs (B, *obs_shape), state (B, R, H)) → (action, next state (B, R, H))``.

    ``state`` is zeros ``(B, R, H)`` at an episode's first step (``R = num_layers`` for a GRU, ``2·num_layers`` for an
    LSTM: its ``h`` rows then its ``c`` rows; twice that with a critic core of its own, ``share_encoder=False``: the
    actor core's rows, then the critic's; ``H = hidden_size``); feeding ``next state`` back at the env's next step
    gives the actions of ``LoadedPolicy.act`` with ``reset()`` at every episode start. What ``act(obs, state)`` runs
    and what ``acframe -m export`` traces for a recurrent run.
    """

    def __init__(self, policy: Any, action_space: gym.Space) -> None:
        super().__init__(policy, action_space)
        self._step = policy.eval_mode.step

    def forward(self, obs: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        obs, state = single_precision(obs), single_precision(state)
        output = self._step(obs, state)
        return self.no_legal_action(obs, self.clipped(output['action'])), output['state']


def build_inference_policy(artifacts: RunArtifacts, observation_space: gym.Space, action_space: gym.Space,
                           enable_field: Sequence[str] = ('eval',), state: Optional[Dict[str, Any]] = None,
                           force_deterministic: bool = True) -> Any:
    """The run's policy with the checkpoint's weights (``state``: the checkpoint, when already read) and the
    named modes; ``force_deterministic`` makes its eval mode greedy even where the config evaluates by sampling
    (``policy.eval.deterministic=False``), else the eval mode acts as the run's evaluations did."""
    from .policy import create_policy
    from .envs.masks import split_mask_space
    from .policy.base import check_model_against_spaces
    from .utils import set_torch_threads
    from .worker import load_checkpoint

    cfg = artifacts.cfg
    if cfg.policy.get('cuda') and not torch.cuda.is_available():
        # a run trained on a GPU acts on a machine without one: its checkpoints hold CPU tensors
        logger.warning("acframe: note: policy.cuda=True (the run's config, or an override) and no CUDA here: acting "
                       "on the CPU")
        cfg.policy.cuda = False
    if force_deterministic and cfg.policy.eval.get('deterministic', True) is False:
        cfg = copy.deepcopy(cfg)  # (the policy's own: ``artifacts.cfg`` stays the run's, as LoadedPolicy.cfg shows it)
        cfg.policy.eval.deterministic = True
    set_torch_threads(cfg.policy.learn.torch_threads)
    if artifacts.own_config:  # (its config's model keys are those the weights were trained with)
        check_model_against_spaces(cfg, split_mask_space(observation_space)[0], action_space, trained=True)
    if state is None:
        state = load_checkpoint(artifacts.checkpoint)
    policy = create_policy(cfg, observation_space, action_space, enable_field=tuple(enable_field),
                           model=artifacts.model)
    try:
        load_model_weights(policy, state, artifacts.checkpoint)
    except CheckpointError as exc:
        if not artifacts.model_given:
            raise
        from .config.run_folder import model_given_refusal
        from .runs import load_with_model_hint

        raise model_given_refusal(artifacts.run_dir, artifacts.model_given, "the config given builds another model; "
                                  + load_with_model_hint(artifacts.what)) from exc
    policy.model.eval()
    return policy


def _batch_of(obs: Any, space: gym.Space, what: str) -> Tuple[torch.Tensor, bool]:
    """``(batch tensor (B, *shape), whether obs was one observation)`` of ``obs`` for the Box ``space``."""
    array = np.asarray(obs)
    ndim = len(space.shape)
    if array.ndim == ndim:
        single = True
        array = array[None]
    elif array.ndim == ndim + 1:
        single = False
    else:
        raise ValueError(f"act: {what} of shape {space.shape} or a batch (B, {', '.join(map(str, space.shape))}) "
                         f"was expected, got shape {array.shape}")
    if array.shape[1:] != space.shape:
        got = f"shape {array.shape[1:]}" if single else f"a batch of shape {array.shape}"
        raise ValueError(f"act: {what} of shape {space.shape} (or a batch (B, {', '.join(map(str, space.shape))})) "
                         f"expected, got {got}")
    check_finite(array, what, single)
    if what.endswith(f"'{ACTION_MASK_KEY}'") and array.dtype != np.bool_ and not np.all((array == 0) | (array == 1)):
        odd = array[(array != 0) & (array != 1)].ravel()[0].item()  # (cast to uint8: -1 read as legal, 0.5 as not)
        raise ValueError(f"act: {what} holds {odd!r}, not 0 or 1: 1 for each legal action, 0 for the others")
    dtype = observation_dtype(space)
    if (dtype == torch.uint8 and len(space.shape) >= 2 and array.dtype not in (np.uint8, np.bool_) and array.size
            and not (np.issubdtype(array.dtype, np.number) and array.min() >= 0 and array.max() <= 255
                     and np.array_equal(array, np.floor(array))
                     # floats of 0 and 1 alone: a 0/255 image divided by 255 (an unscaled one would be near black)
                     and not (array.dtype.kind == 'f' and array.max() == 1))):  # (an image: a bool mask is not one)
        raise ValueError(f"act: {what} is a uint8 image (0-255, as the env gives it; the model scales it), got "
                         f"{array.dtype} values in [{array.min():g}, {array.max():g}]; pass the env's observation "
                         f"unscaled (np.uint8)")
    return torch.as_tensor(array, dtype=dtype), single


def check_finite(array: np.ndarray, what: str, single: bool) -> None:
    """A ``ValueError`` naming ``what`` and the index of the first NaN or inf of a float ``array`` (``single``: one
    observation given a batch axis of one, which the index leaves out): the model would act on it without a word."""
    if array.dtype.kind == 'f' and not np.isfinite(array).all():
        where = np.argwhere(~np.isfinite(array))[0]
        index = tuple(int(i) for i in where)
        index = index[1:] if single and len(index) > 1 else index
        raise ValueError(f"act: {what} holds {array[tuple(where)].item()} at index {index if len(index) > 1 else index[0]}; "
                         f"observations must be finite (check the env or the code that builds them)")


def observation_dtype(space: gym.Space) -> torch.dtype:
    """What observations are fed to the model as: uint8 images stay uint8 (the encoder converts), else float32."""
    return torch.uint8 if getattr(space, 'dtype', None) == np.uint8 else torch.float32


def one_env_manager(cfg: Any, seed: int) -> Any:
    """A manager of one env of ``cfg.env`` (nominal parameters), seeded ``seed``: built one by one in this process where
    the run's ``env.manager`` can (EnvPool's run: gymnasium's env, same spaces), else (a user's vectorized env) a batch
    of one of it."""
    from .envs import in_process_manager, make_env_manager

    manager = in_process_manager(cfg.env.manager) or cfg.env.manager
    return make_env_manager(cfg, 'inference', [int(seed)], manager=manager)


def env_spaces(cfg: Any) -> Tuple[gym.Space, gym.Space, Any]:
    """The observation and action spaces of one env of ``cfg.env`` as the policy saw them (nominal parameters), and
    its ``FlattenDictObservation`` layer (None without one): what turns the env's own Dict observation into them."""
    from .envs import FlattenDictObservation

    with one_env_manager(cfg, cfg.seed) as env:
        layer = next(iter(getattr(getattr(env, '_venv', None), 'envs', None) or []), None)
        while isinstance(layer, gym.Wrapper) and not isinstance(layer, FlattenDictObservation):
            layer = layer.env
        return env.observation_space, env.action_space, layer if isinstance(layer, FlattenDictObservation) else None


class LoadedPolicy:
    """A trained policy ready to act: ``act(obs, deterministic=True)`` on one observation or a batch.

    Attributes: ``cfg`` (the run's compiled config), ``run_dir`` (None for a loose checkpoint),
    ``checkpoint`` (the file the weights came from), ``observation_space``, ``action_space``, ``policy``
    (the acframe ``Policy``), ``actor`` (the ``DeterministicActor`` module), ``recurrent`` (whether the model has a
    recurrent core) and ``step_actor`` (its ``RecurrentActor``, None for a feed-forward policy).
    """

    def __init__(self, artifacts: RunArtifacts) -> None:
        self.cfg = artifacts.cfg
        self.run_dir = artifacts.run_dir
        self.checkpoint = artifacts.checkpoint
        self.observation_space, self.action_space, self._flatten = env_spaces(self.cfg)
        self.policy = build_inference_policy(artifacts, self.observation_space, self.action_space, ('eval', 'collect'))
        self.actor = DeterministicActor(self.policy, self.action_space)
        self.recurrent = bool(getattr(self.policy.eval_mode, 'recurrent', False))
        self.step_actor = RecurrentActor(self.policy, self.action_space) if self.recurrent else None
        if self.recurrent:  # one state per env whichever way act chooses (greedy: the eval mode; sampled: the collect
            self.policy._collect_states = self.policy._eval_states  # mode): apart, a switch lost the episode's memory
        self._device = next(self.policy.model.parameters()).device
        self._obs_keys = list(self.cfg.env.obs_keys) if self.cfg.env.get('obs_keys') else None

    def _from_env_form(self, obs: Mapping) -> Any:
        """An observation as the env gives it (its own Dict keys: one observation, or a batch ``(B, ...)`` under every
        key, as a gymnasium vector env gives them) as the policy saw it in training (``FlattenDictObservation``, row
        by row for a batch)."""
        layer = self._flatten
        spaces = layer.env.observation_space.spaces
        needed = list(layer.keys) + ([ACTION_MASK_KEY] if layer.masked else [])
        missing = [k for k in needed if k not in obs]
        if missing:
            own = getattr(self.observation_space, 'spaces', None)  # (the policy's own form, as load_policy stores it)
            if own is not None and set(own) & set(obs) - set(spaces):
                raise ValueError(f"act: the observation's keys {sorted(obs)} are neither the env's {sorted(spaces)} nor "
                                 f"the policy's own {sorted(own)}; give one of the two, and no other key")
            raise ValueError(f"act: the observation lacks key(s) {missing}; the env's keys {sorted(spaces)} were "
                             f"expected")
        batched = {k: np.ndim(obs[k]) == len(spaces[k].shape) + 1 for k in needed}
        if len(set(batched.values())) > 1:
            raise ValueError("act: give every key of the observation one observation each, or every key a batch")
        for key in needed:  # (by the env's key: flattened, it would be named by the policy's own 'obs')
            check_finite(np.asarray(obs[key]), f"observation '{key}'", False)  # (its index as given: no batch added)
        from .envs.gym_env import OffSpaceError

        try:
            if not batched[needed[0]]:
                return layer.observation(obs)
            rows = [layer.observation({k: obs[k][i] for k in needed}) for i in range(len(obs[needed[0]]))]
        except OffSpaceError as exc:  # ("its observation's 'action_mask' has shape ...": the env's words, said of act's)
            raise OffSpaceError(f"act: {str(exc).replace('its observation', 'the observation', 1)}") from None
        if not rows:  # an empty batch: empty as the policy's observations are
            space = self.observation_space
            if isinstance(space, gym.spaces.Dict):
                return {k: np.zeros((0, *sub.shape), sub.dtype) for k, sub in space.spaces.items()}
            return np.zeros((0, *space.shape), space.dtype)
        if isinstance(rows[0], Mapping):
            return {k: np.stack([row[k] for row in rows]) for k in rows[0]}
        return np.stack(rows)

    def _as_batch(self, obs: Any) -> Tuple[Any, bool]:
        policy_dict = isinstance(self.observation_space, gym.spaces.Dict)
        if isinstance(obs, Mapping) and self._flatten is not None and not (
                policy_dict and set(obs) <= set(self.observation_space.spaces)):  # as the env gives it
            obs = self._from_env_form(obs)
        if policy_dict:  # images with vectors, a mask: the model takes a dict
            if not isinstance(obs, Mapping):  # (named with the env's own keys, as act takes it and other errors say)
                keys = (list(self._flatten.env.observation_space.spaces) if self._flatten is not None
                        else list(self.observation_space.spaces))
                raise ValueError(f"act: a Dict observation with keys {keys} was expected, got {type(obs).__name__}")
            missing = [k for k in self.observation_space.spaces if k not in obs]
            if missing:
                raise ValueError(f"act: the observation lacks key(s) {missing}; keys {list(self.observation_space.spaces)} "
                                 f"were expected")
            parts = {k: _batch_of(obs[k], space, f"observation '{k}'") for k, space in self.observation_space.spaces.items()}
            singles = {single for _, single in parts.values()}
            if len(singles) > 1:
                raise ValueError("act: give every key of the observation one observation each, or every key a batch")
            single = singles.pop()
            if ACTION_MASK_KEY in parts and single:  # (a batch's rows without one get -1, as an exported model's)
                check_legal(parts[ACTION_MASK_KEY][0], self.action_space)
            return {k: t.to(self._device) for k, (t, _) in parts.items()}, single
        if isinstance(obs, Mapping):  # one observation of a Dict-observation env (no flattening layer found)
            keys = self._obs_keys or sorted(obs)
            obs = np.concatenate([np.asarray(obs[k], dtype=np.float32).ravel() for k in keys])
        batch, single = _batch_of(obs, self.observation_space, 'an observation')
        return batch.to(self._device), single

    def act(self, obs: Any, state: Optional[np.ndarray] = None,
            deterministic: bool = True) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """The action for ``obs`` (one observation → one action, a batch ``(B, ...)`` → ``(B, ...)`` actions).

        ``deterministic=True`` takes the eval mode's greedy/mean action; False samples like the collector.
        Box actions are clipped to the action space, discrete actions are int64.

        With ``state`` (the explicit form, e.g. for many envs of your own): returns ``(action, next state)`` and keeps
        nothing; ``state`` is ``(B, R, H)`` for a batch, ``(R, H)`` for one observation, from ``initial_state`` (zeros
        at an episode's first step). Without it, a recurrent policy acts from the states it keeps (``reset()``).
        """
        if isinstance(state, bool):
            raise TypeError("act(obs, state): pass deterministic by keyword (act(obs, deterministic=False))")
        if state is not None:
            return self._act_from(obs, state, deterministic)
        batch, single = self._as_batch(obs)
        with torch.inference_mode():
            if deterministic:
                action = self.actor(batch)
            else:
                action = self.actor.no_legal_action(batch, self.actor.clipped(
                    self.policy.collect_mode.forward(batch)['action']))
        result = action.cpu().numpy()
        if not isinstance(self.action_space, gym.spaces.Box):
            result = result.astype(np.int64, copy=False)
        return result[0] if single else result

    __call__ = act

    def predict(self, observation: Any, state: Optional[np.ndarray] = None, episode_start: Optional[Any] = None,
                deterministic: bool = True) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """Stable-Baselines3's form of ``act``: ``(action, next state)``, keeping nothing (``action, _ =
        policy.predict(obs)``). A feed-forward policy's state is None. A recurrent policy's is acframe's
        (``initial_state``: ``(B, R, H)``, ``(R, H)`` for one observation; not sb3-contrib's ``(h, c)`` tuple):
        None starts every env's episode, and ``episode_start`` ``(B,)`` (sb3-contrib's) zeroes the rows of envs
        whose episode starts at this observation."""
        if not self.recurrent:
            return self.act(observation, deterministic=deterministic), None
        batch, single = self._as_batch(observation)
        if state is None:
            state = self.initial_state(None if single else _batch_size(batch))
        if episode_start is not None:
            starts = np.asarray(episode_start, dtype=bool)
            state = np.array(state, dtype=np.float32)  # (the caller's is left as it was)
            if single:
                state = state * (0.0 if starts.any() else 1.0)
            else:
                if starts.shape != (len(state),):
                    raise ValueError(f"predict: episode_start has shape {starts.shape}; give one flag per "
                                     f"observation, shape ({len(state)},)")
                state[starts] = 0.0
        return self._act_from(observation, state, deterministic)

    def initial_state(self, batch: Optional[int] = None) -> np.ndarray:
        """The state at an episode's first step for ``act(obs, state)``: zeros ``(batch, R, H)`` float32, ``(R, H)``
        for one observation (``batch=None``); ``R`` is ``num_layers`` (GRU) or ``2·num_layers`` (LSTM: ``h`` rows, then
        ``c``), twice that with a critic core of its own (``share_encoder=False``), ``H`` the ``hidden_size``. A feed-forward policy's state is empty: ``(batch, 0, 0)``."""
        if self.recurrent:
            zeros = self.policy.model.initial_state(1 if batch is None else int(batch), torch.device('cpu')).numpy()
        else:
            zeros = np.zeros((1 if batch is None else int(batch), 0, 0), dtype=np.float32)
        return zeros[0] if batch is None else zeros

    def _act_from(self, obs: Any, state: Any, deterministic: bool) -> Tuple[np.ndarray, np.ndarray]:
        """``act(obs, state)``: the action and the next state; nothing kept."""
        batch, single = self._as_batch(obs)
        size = _batch_size(batch)
        expected = self.initial_state(size)
        states = np.asarray(state, dtype=np.float32)
        unbatched = single and states.ndim == expected.ndim - 1  # (R, H): one observation's; (1, R, H) is kept so
        states = states[None] if unbatched else states
        if states.shape != expected.shape:
            shape = expected.shape[1:] if single else expected.shape
            raise ValueError(f"act(obs, state): the state of {'one observation' if single else f'{size} observations'} "
                             f"has shape {shape}, got {np.shape(state)}; start from initial_state()")
        if not self.recurrent:
            return self.act(obs, deterministic=deterministic), np.array(state, dtype=np.float32)  # (as given)
        with torch.inference_mode():
            output = self.policy.eval_mode.step(batch, torch.as_tensor(states).to(self._device), deterministic)
        result = self.actor.no_legal_action(batch, self.actor.clipped(output['action'])).cpu().numpy()
        if not isinstance(self.action_space, gym.spaces.Box):
            result = result.astype(np.int64, copy=False)
        next_state = output['state'].cpu().numpy()
        return (result[0], next_state[0] if unbatched else next_state) if single else (result, next_state)

    def reset(self, envs: Optional[Any] = None) -> None:
        """Start new episodes: a recurrent policy (``policy.model.rnn``) forgets its state. ``act`` keeps one state per
        env of the batch it is given (one observation: one env), carried from call to call, so call ``reset()`` at
        every episode start, and before acting on another number of envs; a feed-forward policy has nothing to reset.

        ``envs``: only these rows of the batch start an episode at the next ``act``, whose observations for them are
        their episodes' first (indices, or a bool array ``(B,)``: sb3-contrib's ``episode_start``); the other envs
        keep their states. None: every env, and the next ``act`` may take another number of envs.
        """
        if envs is None:
            self.policy.eval_mode.reset()
            self.policy.collect_mode.reset()
            return
        given = np.atleast_1d(np.asarray(envs))
        if given.ndim != 1 or not (given.dtype == np.bool_ or np.issubdtype(given.dtype, np.integer) or given.size == 0):
            raise ValueError(f"reset(envs): give the indices of the envs that start an episode, or a bool array (B,); "
                             f"got {given.dtype} of shape {np.shape(envs)}")
        states = self.policy._eval_states  # (the collect mode's are these: one state per env, greedy or sampled)
        held = 0 if states is None else len(states)  # 0: no states yet (or a feed-forward policy): every env starts
        if given.dtype == np.bool_:  # at the next act anyway, but what is given is still checked
            if held and len(given) != held:
                raise ValueError(f"reset(envs): a bool array of {len(given)} envs for a policy acting for {held}; "
                                 f"give one flag per env")
            ids = np.flatnonzero(given)
        else:
            ids = given.astype(np.int64)
            if ids.size and (ids.min() < 0 or (held and ids.max() >= held)):
                bad = int(ids.min() if ids.min() < 0 else ids.max())
                raise ValueError(f"reset(envs): env {bad} is not one of the {held} envs the policy acts for; give "
                                 f"indices 0..{held - 1}" if held else f"reset(envs): env {bad} is not an env index; "
                                 f"give indices 0..B-1")
            values, counts = np.unique(ids, return_counts=True)
            if (counts > 1).any():  # most likely flags given as 0/1 integers (dones.astype(int))
                repeated, times = int(values[counts > 1][0]), int(counts[counts > 1][0])
                raise ValueError(f"reset(envs): env {repeated} is named {times} times; give each index once, or the "
                                 f"episode starts as a bool array (B,) (integers are read as indices)")
        if held and ids.size:
            self.policy.eval_mode.episode_start(ids.tolist())

    def make_env(self, render_mode: Optional[str] = None) -> gym.Env:
        """One env of the run, built as its evaluator built its envs (the one env factory: ``env.type``, ``env_id``
        -- acframe's own names too, e.g. ``cartpole_novel`` --, ``env_kwargs``, the Atari chain playing whole games,
        a Dict observation flattened as in training): the env ``act`` expects, for a loop of your own. Seed it with
        ``reset(seed=...)``; ``render_mode`` (e.g. ``'rgb_array'``, ``'human'``) is passed to the env's factory. A
        domain-randomized run's env has the nominal parameters (``-m eval --domain-params drawn`` plays drawn ones)."""
        from .envs import in_process_manager, manager_class
        from .envs.gym_env import build_env, env_name, refuses_render_mode

        manager = self.cfg.env.manager
        if in_process_manager(manager) is None:  # (its env_id is the default one, not what the run stepped)
            cls = manager_class(manager)
            if issubclass(cls, gym.vector.VectorEnv):
                raise ConfigError(f"make_env(): env.manager '{manager}' is a vectorized env ({cls.__name__}), which has "
                                  f"no single env to build; build it yourself ({cls.__name__}(num_envs=1, "
                                  f"**env_kwargs)) and act on its batches (act takes a batch of observations)")
            raise ConfigError(f"make_env(): env.manager '{manager}' ({cls.__name__}) builds its envs its own way "
                              f"(in_process_manager None): there is no single env to build; step that manager and act "
                              f"on its batches (act takes a batch of observations)")
        extra = {} if render_mode is None else {'render_mode': render_mode}
        try:
            return build_env(dict(self.cfg.env), 0, int(self.cfg.seed), 'evaluator', **extra)
        except ConfigError as exc:
            if render_mode is not None and refuses_render_mode(exc, self.cfg):
                raise ConfigError(f"make_env(render_mode={render_mode!r}): env '{env_name(self.cfg.env)}' takes no "
                                  f"render_mode (it draws no frames); call make_env() without it") from exc
            raise

    def __repr__(self) -> str:
        from .envs.gym_env import env_name

        return (f"LoadedPolicy({self.cfg.policy.type} on {env_name(self.cfg.env)}, checkpoint "
                f"'{self.checkpoint}', obs {getattr(self.observation_space, 'shape', None) or self.observation_space}, "
                f"actions {self.action_space})")


def check_legal(mask: torch.Tensor, action_space: gym.Space) -> None:
    """A ``ValueError`` when one observation's action mask ``(n,)`` leaves no legal action (in a dimension of a
    MultiDiscrete space)."""
    splits = mask_splits(action_space)
    empty = empty_mask_rows(mask.cpu().numpy().reshape(1, -1), splits)
    if empty is not None:
        where = f" in action dimension {empty[1]}" if splits is not None else ""
        raise ValueError(f"act: the observation has no legal action{where}: its 'action_mask' is all zeros; act only "
                         f"on observations with a legal action (in a batch, such a row gets action -1)")


def _batch_size(batch: Any) -> int:
    return int(next(iter(batch.values())).shape[0]) if isinstance(batch, Mapping) else int(batch.shape[0])


def load_policy(target: Union[str, os.PathLike], config: Optional[Any] = None,
                overrides: Sequence[str] = (), imports: Sequence[str] = (), model: Any = None) -> LoadedPolicy:
    """A trained policy from a run folder (its best checkpoint, else its latest) or a ``.pth`` checkpoint.

    Args:
        target: a run folder, or a ``.pth`` file (inside ``RUN_DIR/ckpt/``, or anywhere with ``config``).
        config: the config (a path or dizoo_configs name) when the checkpoint is not in a run folder.
        overrides: ``'key.path=value'`` strings applied to the config (e.g. ``'policy.cuda=False'``).
        imports: modules to import for the run folder's ``import_names`` (its custom envs or policies), as
            ``--import`` does; modules the calling script imported already need not be named. A folder never
            decides what is imported.
        model: for a run trained with a model instance given in Python (``serial_pipeline(..., model=...)``), a
            model of that architecture to load the weights into (its run folder's config does not describe it).
    """
    from .config.compile import override_list, override_value

    if not override_value(override_list(overrides), 'policy.eval.deterministic', True):  # (act is greedy by default)
        raise ConfigError("policy.eval.deterministic=False: load_policy's act is greedy unless asked per call; drop "
                          "the override and sample with act(obs, deterministic=False)")
    artifacts = locate_run(target, config, overrides, what='load_policy', imports=imports, model=model)
    if artifacts.cfg.policy.eval.get('deterministic', True) is False:  # (the run's own config: said, not refused)
        warnings.warn(f"{target} evaluated with sampled actions (its policy.eval.deterministic=False); act(obs) takes "
                      f"the greedy action (the most likely), which its evaluations did not play: "
                      f"act(obs, deterministic=False) samples as they did", ConfigWarning, stacklevel=2)
    return LoadedPolicy(artifacts)
