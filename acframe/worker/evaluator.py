"""``Evaluator``: runs the eval mode on its own envs and decides when a run is solved.

An evaluation of ``n_episode`` episodes whose mean return reaches the stop value is only a candidate: the run
is solved when ``n_confirm_episode`` fresh episodes (seeds never used by an evaluation) confirm it, so one
lucky evaluation cannot end a run. Every episode is capped by the env's time limit (``envs.cap_episodes``).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..envs import EnvManager, obs_to_tensor
from ..errors import EnvNonFiniteError, NonFiniteError
from .hook import Hook
from .collector import check_action_output

#: the confirmation episodes' env seeds are the evaluation seeds plus this (fresh: no evaluation uses them)
CONFIRM_SEED_OFFSET = 50_000


class EvaluatorHook(Hook):
    """Named in ``policy.eval.evaluator.hooks`` (registered in ``HOOK_REGISTRY``): ``after_evaluate`` sees every
    evaluation of the run, in every pipeline, once it is recorded."""

    def after_evaluate(self, result: Dict[str, Any]) -> None:
        """``result``: ``train_iter`` and ``env_step`` of the weights evaluated, ``return_mean``, ``return_std``,
        the episodes' ``returns`` and ``lengths``, ``best_return`` (so far, this one included) and ``solved``. An
        exception raised here ends the run, as any error in the loop does."""


class Evaluator:
    """Evaluates ``n_episode`` episodes spread evenly over its envs; tracks the best evaluation (``eval_score``).

    Each evaluation resets the envs with the same seeds, so evaluations of the same weights agree. An
    evaluation that reaches ``stop_value`` is confirmed on ``n_confirm_episode`` episodes of other seeds
    (0: not confirmed); ``solved`` needs both. ``confirmations`` lists every confirmation run (plain data).
    """

    def __init__(self, env: EnvManager, policy: Any, n_episode: int, stop_value: Optional[float],
                 eval_freq: int, tb_logger: Any = None, n_confirm_episode: int = 0) -> None:
        self.env = env
        self.policy = policy
        self.n_episode = int(n_episode)
        self.n_confirm_episode = int(n_confirm_episode)
        self.stop_value = stop_value
        self.history = EvalHistory(eval_freq, tb_logger)
        #: called as ``progress(episodes_done, episodes_wanted)`` whenever episodes finish (``-m eval``'s progress line)
        self.progress: Optional[Callable[[int, int], None]] = None

    # what the evaluations found so far (``history``; a parallel learner keeps its own ``EvalHistory``)
    @property
    def eval_freq(self) -> int:
        return self.history.eval_freq

    @property
    def tb_logger(self) -> Any:
        return self.history.tb_logger

    @tb_logger.setter
    def tb_logger(self, tb_logger: Any) -> None:
        self.history.tb_logger = tb_logger

    @property
    def best_return(self) -> float:
        return self.history.best_return

    @property
    def last_return(self) -> Optional[float]:
        return self.history.last_return

    @property
    def last_eval_iter(self) -> int:
        return self.history.last_eval_iter

    @property
    def confirmations(self) -> List[Dict[str, Any]]:
        return self.history.confirmations

    def should_eval(self, train_iter: int) -> bool:
        return self.history.due(train_iter)

    def run_episodes(self, n_episode: int, seeds: Optional[Sequence[int]] = None) -> Tuple[List[float], List[int]]:
        """Returns and lengths of ``n_episode`` episodes spread evenly over the envs, reset with ``seeds``
        (default: the manager's own)."""
        num_envs = self.env.num_envs
        quota = np.array([n_episode // num_envs + (i < n_episode % num_envs) for i in range(num_envs)])
        returns, lengths = [], []
        obs = self.env.reset(seeds)
        self.env.pop_finished()
        # episode starts reach the eval mode (a recurrent policy resets its states; a feed-forward one has no reset)
        reset, episode_start = getattr(self.policy, 'reset', None), getattr(self.policy, 'episode_start', None)
        if reset is not None:
            reset()
        done_count = np.zeros(num_envs, dtype=np.int64)
        first = True
        with torch.inference_mode():
            while (done_count < quota).any():
                out = self.policy.forward(obs_to_tensor(obs))
                if first:
                    check_action_output(out, '_forward_eval', num_envs, all_tensors=False,
                                        action_space=getattr(self.env, 'action_space', None))
                    first = False
                action = out['action']
                result = self.env.step(action.numpy())
                obs = result.obs
                if episode_start is not None and len(result.done_index):
                    episode_start(result.done_index)
                finished = self.env.pop_finished()
                for ret, length, index in zip(*finished):
                    if done_count[index] < quota[index]:
                        returns.append(ret)
                        lengths.append(length)
                    done_count[index] += 1
                if self.progress is not None and len(finished[0]):
                    self.progress(len(returns), n_episode)
        return returns, lengths

    def evaluate(self, train_iter: int = 0, env_step: int = 0,
                 on_best: Optional[Callable[[float], None]] = None) -> Dict[str, Any]:
        """Run the episodes; returns ``{'mean', 'std', 'returns', 'lengths', 'solved', 'confirm'}`` where
        ``confirm`` is None or ``{'mean', 'std', 'episodes'}`` of the confirmation run."""
        returns, lengths = self.run_episodes(self.n_episode)
        mean = float(np.mean(returns))
        if not np.isfinite(mean):
            bad = int(np.flatnonzero(~np.isfinite(returns))[0])
            raise EnvNonFiniteError(f"an evaluation episode returned {returns[bad]}: the evaluator envs give NaN/inf rewards; "
                                 f"a non-finite return can never count as solved — fix the env")
        solved = self.stop_value is not None and mean >= self.stop_value
        confirm = None
        if solved and self.n_confirm_episode > 0:
            confirm = self.confirm(train_iter, env_step, mean)
            solved = confirm['solved']
        score = eval_score(mean, len(returns), confirm)
        if self.history.record(train_iter, env_step, mean, score) and on_best is not None:
            on_best(score)
        return {'mean': mean, 'std': float(np.std(returns)), 'returns': returns, 'lengths': lengths, 'solved': solved,
                'confirm': confirm}

    def confirm(self, train_iter: int, env_step: int, eval_mean: float) -> Dict[str, Any]:
        """``n_confirm_episode`` fresh episodes of the current weights; solved when their mean reaches the stop value.
        The record keeps the worst and best episode too: a policy that loses a few starts outright shows there."""
        seeds = [seed + CONFIRM_SEED_OFFSET for seed in self.env.seeds]
        returns, _ = self.run_episodes(self.n_confirm_episode, seeds)
        mean = float(np.mean(returns))
        record = {'train_iter': int(train_iter), 'env_step': int(env_step), 'eval_mean': float(eval_mean),
                  'mean': mean, 'std': float(np.std(returns)), 'min': float(np.min(returns)),
                  'max': float(np.max(returns)), 'episodes': len(returns),
                  'solved': bool(mean >= self.stop_value)}
        self.history.record_confirmation(record)
        return record

    def state_dict(self) -> Dict[str, Any]:
        return self.history.state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.history.load_state_dict(state)


def eval_score(mean: float, episodes: int, confirm: Optional[Dict[str, Any]]) -> float:
    """What an evaluation of ``episodes`` episodes with mean return ``mean`` counts for when the best weights are chosen
    (``ckpt_best.pth``, the summary's ``best_eval_return``): its mean, or, when a confirmation run followed it, the
    mean over all the episodes of both, so a lucky evaluation that fresh episodes do not confirm is judged by all
    the evidence rather than by its own few episodes."""
    if confirm is None:
        return float(mean)
    total = episodes + int(confirm['episodes'])
    return float((mean * episodes + confirm['mean'] * confirm['episodes']) / total)


class EvalHistory:
    """What the evaluations of one run found: the best and last mean return, when the last one ran, the
    confirmation runs. One ``Evaluator`` keeps one; a parallel learner, whose evaluator runs elsewhere, keeps its
    own and records the results it receives. Its state is plain data (it goes into checkpoints).
    """

    def __init__(self, eval_freq: int, tb_logger: Any = None) -> None:
        self.eval_freq = int(eval_freq)
        self.tb_logger = tb_logger
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        self.last_eval_iter = -1
        #: the iteration of the last evaluation the schedule asked for: ``eval_freq`` counts from it
        self.schedule_iter = -1
        self.confirmations: List[Dict[str, Any]] = []

    def due(self, train_iter: int) -> bool:
        """True before the first evaluation and every ``eval_freq`` learner iterations after the last one the
        schedule asked for (0: never again). An evaluation outside the schedule -- the final weights' at the end of
        a budget -- does not move it, so a run stopped there and resumed evaluates where an unbroken run does."""
        if self.schedule_iter < 0:
            return True
        return self.eval_freq > 0 and train_iter - self.schedule_iter >= self.eval_freq

    def mark(self, train_iter: int) -> None:
        """An evaluation of the weights at ``train_iter`` (on the schedule when it is due there)."""
        if self.due(train_iter):
            self.schedule_iter = train_iter
        self.last_eval_iter = train_iter

    def record(self, train_iter: int, env_step: int, mean: float, score: float) -> bool:
        """An evaluation's mean return (logged to tensorboard) and its ``eval_score``; True when the score is the best
        so far."""
        self.last_return = mean
        self.mark(train_iter)
        if self.tb_logger is not None:
            self.tb_logger.add_scalar('evaluator/return_mean', mean, env_step)
            self.tb_logger.add_scalar('evaluator/return_mean_by_iter', mean, train_iter)
        if score > self.best_return:
            self.best_return = score
            return True
        return False

    def record_confirmation(self, record: Dict[str, Any]) -> None:
        """A confirmation run (``Evaluator.confirm``'s record)."""
        self.confirmations.append(dict(record))
        if self.tb_logger is not None:
            self.tb_logger.add_scalar('evaluator/confirm_return_mean', record['mean'], record['env_step'])

    def state_dict(self) -> Dict[str, Any]:
        return {'best_return': self.best_return, 'last_return': self.last_return, 'last_eval_iter': self.last_eval_iter,
                'schedule_iter': self.schedule_iter, 'confirmations': [dict(c) for c in self.confirmations]}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.best_return = state['best_return']
        self.last_return = state['last_return']
        self.last_eval_iter = state['last_eval_iter']
        self.schedule_iter = state.get('schedule_iter', self.last_eval_iter)  # (a checkpoint from before it)
        self.confirmations = [dict(c) for c in state.get('confirmations', [])]
