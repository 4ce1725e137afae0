"""``Evaluator``: runs the eval mode (deterministic actions) on its own envs and decides when to stop."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np
import torch

from ..envs import EnvManager
from ..errors import NonFiniteError


class Evaluator:
    """Evaluates ``n_episode`` episodes spread evenly over its envs; tracks the best mean return.

    Each evaluation resets the envs with the same seeds, so evaluations of the same weights agree.
    """

    def __init__(self, env: EnvManager, policy: Any, n_episode: int, stop_value: Optional[float],
                 eval_freq: int, tb_logger: Any = None) -> None:
        self.env = env
        self.policy = policy
        self.n_episode = int(n_episode)
        self.stop_value = stop_value
        self.eval_freq = int(eval_freq)
        self.tb_logger = tb_logger
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        self.last_eval_iter = -1

    def should_eval(self, train_iter: int) -> bool:
        if self.last_eval_iter < 0:
            return True
        return self.eval_freq > 0 and train_iter - self.last_eval_iter >= self.eval_freq

    def evaluate(self, train_iter: int = 0, env_step: int = 0,
                 on_best: Optional[Callable[[float], None]] = None) -> Dict[str, Any]:
        """Run the episodes; returns ``{'mean', 'std', 'returns', 'lengths', 'solved'}``."""
        num_envs = self.env.num_envs
        quota = np.array([self.n_episode // num_envs + (i < self.n_episode % num_envs) for i in range(num_envs)])
        returns, lengths = [], []
        obs = self.env.reset()
        self.env.pop_finished()
        done_count = np.zeros(num_envs, dtype=np.int64)
        with torch.inference_mode():
            while (done_count < quota).any():
                action = self.policy.forward(torch.from_numpy(obs).float())['action']
                obs = self.env.step(action.numpy()).obs
                for ret, length, index in zip(*self.env.pop_finished()):
                    if done_count[index] < quota[index]:
                        returns.append(ret)
                        lengths.append(length)
                    done_count[index] += 1
        mean = float(np.mean(returns))
        if not np.isfinite(mean):
            bad = int(np.flatnonzero(~np.isfinite(returns))[0])
            raise NonFiniteError(f"an evaluation episode returned {returns[bad]}: the evaluator envs give NaN/inf rewards; "
                                 f"a non-finite return can never count as solved — fix the env")
        self.last_return = mean
        self.last_eval_iter = train_iter
        if self.tb_logger is not None:
            self.tb_logger.add_scalar('evaluator/return_mean', mean, env_step)
            self.tb_logger.add_scalar('evaluator/return_mean_by_iter', mean, train_iter)
        if mean > self.best_return:
            self.best_return = mean
            if on_best is not None:
                on_best(mean)
        solved = self.stop_value is not None and mean >= self.stop_value
        return {'mean': mean, 'std': float(np.std(returns)), 'returns': returns, 'lengths': lengths, 'solved': solved}

    def state_dict(self) -> Dict[str, Any]:
        return {'best_return': self.best_return, 'last_return': self.last_return, 'last_eval_iter': self.last_eval_iter}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.best_return = state['best_return']
        self.last_return = state['last_return']
        self.last_eval_iter = state['last_eval_iter']
