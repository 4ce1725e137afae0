"""``SampleCollector``: steps the collector envs with the policy's collect mode and returns segments.

The hot loop does no per-step collation: observations go straight from the env manager's numpy array
into a preallocated ``(T+1, B, ...)`` tensor, the policy runs once per step on the whole batch under
``torch.inference_mode``, its outputs are copied into preallocated ``(T, B, ...)`` tensors, and the
segment is wrapped into one treetensor tree at the end.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
import torch

from ..data import ttorch
from ..envs import EnvManager


class SampleCollector:
    """Collects ``n_sample`` steps from every env per call, as one time-major segment.

    Segment leaves: ``obs (T+1, B, obs)``, ``action``, ``reward (T, B)``, ``terminated``/``truncated``
    ``(T, B)`` bool, ``final_obs (T, B, obs)`` (the last observation of an episode that ended at that step,
    zeros elsewhere) and every tensor the policy's ``collect_mode.forward`` returned (``(T, B, ...)``).
    """

    def __init__(self, env: EnvManager, policy: Any, n_sample: int) -> None:
        self.env = env
        self.policy = policy
        self.n_sample = int(n_sample)
        self.env_step = 0
        self._obs: Optional[np.ndarray] = None
        self._episode_returns: List[float] = []
        self._episode_lengths: List[int] = []

    def reset(self) -> None:
        self._obs = self.env.reset()
        self.policy.reset()

    def collect(self) -> ttorch.Tensor:
        """Step every env ``n_sample`` times and return the segment."""
        if self._obs is None:
            self.reset()
        steps, num_envs = self.n_sample, self.env.num_envs
        obs_np = self._obs
        obs_buf = torch.empty((steps + 1, num_envs) + obs_np.shape[1:], dtype=torch.float32)
        final_obs = torch.zeros((steps, num_envs) + obs_np.shape[1:], dtype=torch.float32)
        reward = torch.empty((steps, num_envs), dtype=torch.float32)
        terminated = torch.empty((steps, num_envs), dtype=torch.bool)
        truncated = torch.empty((steps, num_envs), dtype=torch.bool)
        outputs: Dict[str, torch.Tensor] = {}
        forward, env_step = self.policy.forward, self.env.step
        with torch.inference_mode():
            for t in range(steps):
                obs_t = obs_buf[t]
                obs_t.copy_(torch.from_numpy(obs_np))
                out = forward(obs_t)
                if t == 0:
                    outputs = {k: torch.empty((steps,) + tuple(v.shape), dtype=v.dtype) for k, v in out.items()}
                for key, value in out.items():
                    outputs[key][t] = value
                result = env_step(out['action'].numpy())
                reward[t] = torch.from_numpy(result.reward)
                terminated[t] = torch.from_numpy(result.terminated)
                truncated[t] = torch.from_numpy(result.truncated)
                if len(result.done_index):
                    final_obs[t, torch.from_numpy(result.done_index)] = torch.from_numpy(result.final_obs).float()
                obs_np = result.obs
            obs_buf[steps].copy_(torch.from_numpy(obs_np))
        self._obs = obs_np
        self.env_step += steps * num_envs
        returns, lengths, _ = self.env.pop_finished()
        self._episode_returns += returns
        self._episode_lengths += lengths
        segment = dict(obs=obs_buf, reward=reward, terminated=terminated, truncated=truncated, final_obs=final_obs)
        segment.update(outputs)
        return ttorch.Tensor(segment)

    def pop_episode_stats(self) -> Dict[str, List[float]]:
        """Returns and lengths of the training episodes finished since the last call."""
        out = {'returns': self._episode_returns, 'lengths': self._episode_lengths}
        self._episode_returns, self._episode_lengths = [], []
        return out

    # ---- resume ------------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        return {'env_step': self.env_step, 'obs': self._obs, 'env': self.env.state_dict()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.env_step = state['env_step']
        restored = self.env.load_state_dict(state['env'])
        self._obs = state['obs'] if restored else None
