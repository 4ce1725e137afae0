"""``SampleCollector``: steps the collector envs with the policy's collect mode and returns segments.

The hot loop does no per-step collation: observations go straight from the env manager's numpy array
into a preallocated ``(T+1, B, ...)`` buffer, the policy runs once per step on the whole batch under
``torch.inference_mode``, its outputs are stacked once per segment, and the segment is wrapped into one
treetensor tree at the end.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import torch

from ..data import make_tree, ttorch
from ..envs import EnvManager
from ..envs.obs import ObsArray, obs_buffer, put_obs
from ..config.compile import check_n_sample
from ..errors import EnvError, EnvNonFiniteError, NonFiniteError, PolicyError
from .hook import Hook


def steps_per_env(n_sample: int, num_envs: int, unroll_len: int = 1) -> int:
    """Steps each env takes to collect ``n_sample`` train samples across ``num_envs`` envs, as in DI-engine.

    A sample is ``unroll_len`` consecutive steps of one env (one transition when 1), so each env steps
    ``n_sample / num_envs * unroll_len`` times; ``n_sample`` must be a multiple of ``num_envs``.
    """
    n_sample, num_envs, unroll_len = int(n_sample), int(num_envs), int(unroll_len)
    check_n_sample(n_sample, num_envs)
    return n_sample // num_envs * unroll_len


class CollectorHook(Hook):
    """Named in ``policy.collect.hooks`` (registered in ``HOOK_REGISTRY``): ``after_collect`` sees every collection
    of the serial and on-policy pipelines, and every segment an actor of the parallel pipeline sends."""

    def after_collect(self, result: Dict[str, Any]) -> None:
        """``result``: ``env_step`` (the run's env steps so far, this collection included), ``env_steps`` (this
        collection's, over all its envs), ``train_iter``, and the returns and lengths of the episodes that finished
        in it (``episode_returns``, ``episode_lengths``). An exception raised here ends the run, as any error in the
        loop does."""


class SampleCollector:
    """Collects ``n_sample`` train samples across all envs per call (DI-engine's meaning), as one time-major segment.

    A sample is ``policy.unroll_len`` steps of one env (the collect mode's attribute; 1 when absent), so the
    segment's ``T`` is ``steps_per_env(n_sample, num_envs, unroll_len)``.

    Segment leaves: ``obs (T+1, B, obs)``, ``action``, ``reward (T, B)``, ``terminated``/``truncated``
    ``(T, B)`` bool, ``final_obs (T, B, obs)`` (the last observation of an episode that ended at that step,
    zeros elsewhere) and every tensor the policy's ``collect_mode.forward`` returned (``(T, B, ...)``; a recurrent
    policy's ``rnn_state`` and ``episode_start`` among them). For a Dict observation ``obs`` and ``final_obs`` are
    subtrees with one leaf per key (``obs.image``, ``obs.target``).

    Episode starts: ``reset`` tells the collect mode (its ``reset``) that every env starts an episode; after a step
    where envs ended an episode (and were reset, gymnasium's ``SAME_STEP`` autoreset) the collect mode's
    ``episode_start(env_ids)`` names them, when the mode has one.
    """

    def __init__(self, env: EnvManager, policy: Any, n_sample: int) -> None:
        self.env = env
        self.policy = policy
        self.n_sample = int(n_sample)
        self.steps_per_env = steps_per_env(n_sample, env.num_envs, getattr(policy, 'unroll_len', 1))
        self.env_step = 0
        self._obs: Optional[ObsArray] = None
        self._episode_returns: List[float] = []
        self._episode_lengths: List[int] = []

    def reset(self) -> None:
        """Reset every env; the collect mode's ``reset`` learns that every env starts an episode."""
        self._obs = self.env.reset()
        self.policy.reset()

    def collect(self, steps: Optional[int] = None) -> ttorch.Tensor:
        """Step every env ``steps`` times (default ``steps_per_env``: ``n_sample`` samples) and return the segment."""
        if self._obs is None:
            self.reset()
        steps, num_envs = (self.steps_per_env if steps is None else int(steps)), self.env.num_envs
        obs_np = self._obs
        # per-step env results land in numpy buffers (a numpy row copy is the cheapest write) and become
        # tensors without a copy at the end; the policy's outputs are kept in lists and stacked once.
        # Images stay uint8 (the model scales them), the rest float32; a Dict observation has a buffer per key.
        obs_buf = obs_buffer((steps + 1,), obs_np)
        reward = np.empty((steps, num_envs), dtype=np.float32)
        terminated = np.empty((steps, num_envs), dtype=bool)
        truncated = np.empty((steps, num_envs), dtype=bool)
        final_obs = obs_buffer((steps,), obs_np, zeros=True)
        outputs: Dict[str, List[torch.Tensor]] = {}
        forward, env_step = self.policy.forward, self.env.step
        # the collect mode's notice of the envs that start an episode at their next observation (a recurrent
        # policy zeroes their states; a feed-forward one ignores it)
        episode_start = getattr(self.policy, 'episode_start', None)
        with torch.inference_mode():
            for t in range(steps):
                put_obs(obs_buf, t, obs_np)
                out = forward(_row(obs_buf, t))
                if t == 0:
                    check_action_output(out, '_forward_collect', num_envs, action_space=self.env.action_space)
                    outputs = {k: [] for k in out}
                for key, value in out.items():
                    outputs[key].append(value)
                try:
                    result = env_step(out['action'].numpy())
                except EnvError as exc:  # an env that refuses a NaN/inf action: the policy's fault all the same
                    self._refuse_nonfinite_action(out['action'], t, exc)
                    raise
                reward[t] = result.reward
                terminated[t] = result.terminated
                truncated[t] = result.truncated
                if len(result.done_index):
                    put_obs(final_obs, (t, result.done_index), result.final_obs)
                    if episode_start is not None:
                        episode_start(result.done_index)
                obs_np = result.obs
        put_obs(obs_buf, steps, obs_np)
        with torch.inference_mode(False):  # the segment is ordinary data the learner may use under autograd
            stacked = {k: torch.stack(v) for k, v in outputs.items()}
        self._check_finite(obs_buf, reward, final_obs, stacked.get('action'))
        self._obs = obs_np
        self.env_step += steps * num_envs
        returns, lengths, _ = self.env.pop_finished()
        self._episode_returns += returns
        self._episode_lengths += lengths
        segment: Dict[str, Any] = {k: torch.from_numpy(v) for k, v in
                                   dict(reward=reward, terminated=terminated, truncated=truncated).items()}
        segment['obs'], segment['final_obs'] = _as_tensors(obs_buf), _as_tensors(final_obs)
        segment.update(stacked)
        return make_tree(segment)

    def _check_finite(self, obs: ObsArray, reward: np.ndarray, final_obs: ObsArray,
                      action: Optional[torch.Tensor]) -> None:
        """One vectorized test per segment (not per step): NaN/inf from an env or the policy is an error naming
        the env index, its seed and the env step (and the key of a Dict observation) — never trained on."""
        bad_action = None  # (step, env) of the first NaN/inf action: what the env returned after it is its echo
        if action is not None and action.is_floating_point():
            finite = torch.isfinite(action.reshape(action.shape[0], action.shape[1], -1)).all(dim=2)
            if not bool(finite.all()):
                bad_action = tuple(int(i) for i in torch.nonzero(~finite)[0])
        steps = reward.shape[0] if bad_action is None else bad_action[0]  # the steps whose data came before it
        keys = list(obs) if isinstance(obs, Mapping) else [None]
        names = {key: '' if key is None else f" '{key}'" for key in keys}
        checks = ([(f'observation{names[k]}', _part(obs, k)[:steps + 1]) for k in keys] + [('reward', reward[:steps])]
                  + [(f'final observation{names[k]}', _part(final_obs, k)[:steps]) for k in keys])
        for what, data in checks:
            if data.dtype.kind == 'f' and not np.isfinite(data).all():  # (uint8 images are always finite)
                t, env = np.argwhere(~np.isfinite(data.reshape(data.shape[0], data.shape[1], -1)).all(axis=2))[0]
                step = self.env_step + int(t) * self.env.num_envs
                seed = self.env.seeds[int(env)] if int(env) < len(self.env.seeds) else '?'
                raise EnvNonFiniteError(f"collector env {int(env)} (seed {seed}) returned a NaN/inf {what} "
                                     f"near env step {step}; fix the env (or wrap it to clip/replace such values)")
        if bad_action is not None:
            t, env = bad_action
            seed = self.env.seeds[env] if env < len(self.env.seeds) else '?'
            raise NonFiniteError(f"the policy gave a NaN/inf action to collector env {env} (seed {seed}) at env step "
                                 f"{self.env_step + t * self.env.num_envs}, from a finite observation: its weights or "
                                 f"its outputs are not finite (the env is not at fault)")

    def _refuse_nonfinite_action(self, action: torch.Tensor, t: int, exc: Exception) -> None:
        """``NonFiniteError`` naming the first env given a NaN/inf ``action`` at step ``t`` of the collection (the env
        then raised ``exc``); nothing when every action is finite."""
        if not action.is_floating_point():
            return
        finite = torch.isfinite(action.reshape(action.shape[0], -1)).all(dim=1)
        if bool(finite.all()):
            return
        env = int(torch.nonzero(~finite)[0])
        seed = self.env.seeds[env] if env < len(self.env.seeds) else '?'
        raise NonFiniteError(f"the policy gave a NaN/inf action to collector env {env} (seed {seed}) at env step "
                             f"{self.env_step + t * self.env.num_envs}, and the env refused it: its weights or its "
                             f"outputs are not finite (the env is not at fault)") from exc

    def pop_episode_stats(self) -> Dict[str, List[float]]:
        """Returns and lengths of the training episodes finished since the last call."""
        out = {'returns': self._episode_returns, 'lengths': self._episode_lengths}
        self._episode_returns, self._episode_lengths = [], []
        return out

    # ---- resume ------------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        policy_state = getattr(self.policy, 'state_dict', None)  # the collect mode's own state (e.g. gSDE noise)
        return {'env_step': self.env_step, 'obs': self._obs, 'env': self.env.state_dict(),
                'policy': policy_state() if policy_state is not None else {}}

    def load_state_dict(self, state: Dict[str, Any]) -> bool:
        """Restore the counters, the envs and the collect mode's state; True when the envs continue exactly (else
        they reset, and the collect mode with them)."""
        self.env_step = state['env_step']
        restored = self.env.load_state_dict(state['env'])
        self._obs = state['obs'] if restored else None
        if restored and state.get('policy') and hasattr(self.policy, 'load_state_dict'):
            self.policy.load_state_dict(state['policy'])
        return restored


def check_action_output(out: Any, method: str, num_envs: int, all_tensors: bool = True,
                        action_space: Any = None) -> None:
    """A ``PolicyError`` in one line when a policy's ``method`` (``_forward_collect``, ``_forward_eval``) gave what the
    workers cannot use: they take a dict whose ``action`` is a tensor ``(num_envs, ...)``, each env's action of the
    shape of ``action_space`` (when given: a Discrete, MultiDiscrete, MultiBinary or Box space), and, collecting, whose
    every value is a tensor ``(num_envs, ...)``: the segment stores them."""
    why = None
    if not isinstance(out, Mapping):
        why = f"returned a {type(out).__module__}.{type(out).__qualname__}, not a dict"
    elif 'action' not in out:
        why = f"returned a dict without 'action' (its keys: {', '.join(map(str, out)) or 'none'})"
    else:
        for key, value in out.items() if all_tensors else [('action', out['action'])]:
            if not isinstance(value, torch.Tensor):
                why = f"gave '{key}' as a {type(value).__module__}.{type(value).__qualname__}, not a torch tensor"
            elif (value.dim() > 0 or key == 'action') and (value.dim() == 0 or value.shape[0] != num_envs):
                # (a 0-d value is one number for the step, stored (T,); the action is one row per env)
                why = f"gave '{key}' of shape {tuple(value.shape)}, not ({num_envs}, ...) for its {num_envs} envs"
            if why is not None:
                break
        want = action_row_shape(action_space)
        if why is None and want is not None and tuple(out['action'].shape[1:]) != want:
            why = (f"gave 'action' of shape {tuple(out['action'].shape)} for {num_envs} envs whose action space is "
                   f"{action_space}: each env's action has shape {want}, the space's (check the model's action_shape)")
    if why is not None:
        raise PolicyError(f"the policy's {method} {why}; it returns a dict of tensors, one row per env, with the "
                          f"actions under 'action' (docs/custom_policy.md)")


def action_row_shape(space: Any) -> Optional[Tuple[int, ...]]:
    """The shape of one env's action in ``space`` (a gymnasium Discrete, MultiDiscrete, MultiBinary or Box space), or
    None for other spaces (not checked)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        return ()
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary, spaces.Box)):
        return tuple(space.shape)
    return None


def _part(buffers: ObsArray, key: Optional[str]) -> np.ndarray:
    return buffers if key is None else buffers[key]


def _row(buffers: ObsArray, t: int) -> Any:
    """Step ``t`` of the observation buffers as tensors without a copy: the model's input (a dict per key)."""
    if isinstance(buffers, dict):
        return {k: torch.from_numpy(v[t]) for k, v in buffers.items()}
    return torch.from_numpy(buffers[t])


def _as_tensors(buffers: ObsArray) -> Any:
    """The collector's numpy observation buffers as tensors (no copy): one, or a dict per key."""
    if isinstance(buffers, Mapping):
        return {k: torch.from_numpy(v) for k, v in buffers.items()}
    return torch.from_numpy(buffers)
