"""``Learner``: runs the policy's learn mode on batches, with hooks for logging, checkpoints and LR schedules.

``train_iter`` counts gradient steps for every algorithm: one ``train(batch)`` is one ``learn_mode.forward``,
one optimizer step. An on-policy rollout gets as many steps as its policy's ``learn_mode.minibatches`` yields
(``train_rollout``), so every ``*_freq`` and budget is in gradient steps.
"""
from __future__ import annotations

import os
import pickle
import re
import sys
import time
from collections import defaultdict
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
import torch

from ..errors import (AcframeError, CheckpointError, ConfigError, NonFiniteError, PolicyError, StopTraining,
                      describe_raised, user_code_error)
from ..data.prioritized import is_weights
from ..utils import NotPlainData, atomic_torch_save, from_plain_data, nonfinite_tensor_names
from ..signals import interrupts_deferred
from .hook import Hook


def not_plain_fix(exc: NotPlainData) -> str:
    """What a checkpoint could not hold, where it came from, and the fix, in words."""
    where = exc.where or 'the state'
    if where.startswith('buffer.') or where == 'buffer':
        owner = ("the replay buffer's state_dict() (policy.other.replay_buffer.save_in_checkpoint=True) must return "
                 "plain data: convert a treetensor tree with acframe.data.tree.to_dict (and make_tree in "
                 "load_state_dict), or set policy.other.replay_buffer.save_in_checkpoint=False")
    elif where.startswith('policy.'):
        owner = "the policy's state_dict parts (_state_dict_learn, _state_dict_collect) must return plain data"
    else:
        owner = "every part of a checkpoint must be plain data"
    return (f"{where} is {exc.what}, which a checkpoint cannot hold (tensors, numpy arrays, numbers, strings, None "
            f"and dicts/lists/tuples of them: it is read back with weights_only=True); {owner}")


class LearnerHook(Hook):
    """Called by the learner: ``after_iter`` after every update, ``after_round`` when the pipeline says so,
    ``after_eval`` when the pipeline has an evaluation result (and, as every hook, ``check_run_config`` at the run's
    start and ``before_run`` once its folder is ready)."""

    def after_iter(self, learner: 'Learner', info: Dict[str, float]) -> None:
        pass

    def after_round(self, learner: 'Learner') -> None:
        pass

    def after_load(self, learner: 'Learner') -> None:
        """Called when the learner's state was restored from a checkpoint."""

    def after_eval(self, learner: 'Learner', result: Dict[str, Any]) -> None:
        """Called after each evaluation with ``{'train_iter', 'env_step', 'return_mean', 'best_return', 'solved'}``
        (an exception raised here ends the run, as any error in the loop does)."""


def hook_name(hook: Any, method: str) -> str:
    """How an error names a hook's method: ``"the hook IterLog.after_eval"``."""
    return f"the hook {type(hook).__name__}.{method}"


class LogHook(LearnerHook):
    """Every ``freq`` iterations: the mean of each monitored variable to the run's logger (``tb_logger``: anything with
    tensorboardX's ``add_scalar``, the run base's ``RunLogger``) and the console."""

    def __init__(self, freq: int, tb_logger: Any = None, echo: Optional[Callable[[str], None]] = None) -> None:
        self.freq, self.tb_logger, self.echo = freq, tb_logger, echo
        self._sums: Dict[str, float] = defaultdict(float)
        self._count = 0
        self._block: Optional[int] = None  # train_iter // freq at the last step seen
        self.last: Dict[str, float] = {}

    def state_dict(self) -> Dict[str, Any]:
        """The window being summed (checkpoints carry it, so a resume logs the means an unbroken run would)."""
        return {'sums': {key: float(value) for key, value in self._sums.items()}, 'count': int(self._count)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue the window of ``state_dict`` (an empty ``state``, as from an older checkpoint: a new window)."""
        self._sums = defaultdict(float, {str(key): float(value) for key, value in (state.get('sums') or {}).items()})
        self._count = int(state.get('count') or 0)

    def after_iter(self, learner: 'Learner', info: Dict[str, float]) -> None:
        for key, value in info.items():
            self._sums[key] += value
        self._count += 1
        # every time train_iter reaches a multiple of freq -- or passes one: -m async's workers share train_iter, so
        # the worker that logs steps over most multiples
        block = learner.train_iter // self.freq
        crossed = block > (self._block if self._block is not None else (learner.train_iter - 1) // self.freq)
        self._block = block
        if crossed:
            self.last = {k: v / self._count for k, v in self._sums.items()}
            self._sums.clear()
            self._count = 0
            if self.tb_logger is not None:
                for key, value in self.last.items():
                    self.tb_logger.add_scalar(f'learner/{key}', value, learner.train_iter)
            if self.echo is not None:
                shown = ' '.join(f'{k}={v:.4g}' for k, v in self.last.items())
                self.echo(f'[learner] iter {learner.train_iter}: {shown}')


def check_info(info: Any) -> None:
    """A ``PolicyError`` in one line unless a learn step's info is a dict of numbers, besides ``priority`` (a
    prioritized buffer's new priorities): Python numbers and bools stay as they are; a one-element tensor or array
    (a numpy scalar too) becomes its Python float, in place, which the learner's hooks log and average."""
    if not isinstance(info, Mapping):
        raise PolicyError(f"the policy's _forward_learn returned a {type(info).__module__}.{type(info).__qualname__}, "
                          f"not a dict; it returns its info dict of numbers, e.g. {{'total_loss': loss.item()}}")
    for key, value in info.items():
        if key == 'priority' or isinstance(value, (int, float)):  # (bool is an int)
            continue
        one = (value.numel() == 1 if isinstance(value, torch.Tensor) else
               value.size == 1 if isinstance(value, (np.ndarray, np.generic)) else False)
        if one:
            info[key] = float(value.item())
            continue
        what = (f"a tensor of shape {tuple(value.shape)}" if isinstance(value, (torch.Tensor, np.ndarray)) else
                f"a {type(value).__module__}.{type(value).__qualname__}")
        raise PolicyError(f"the policy's _forward_learn gave info '{key}' as {what}; its info dict holds numbers "
                          f"(e.g. {key}=value.item(), or a mean of it), which the learner logs and averages")


class CheckpointHook(LearnerHook):
    """At the end of a pipeline round, write ``ckpt_latest.pth`` when ``freq`` more iterations or ``every_s``
    more seconds have passed since the last one (so a killed run loses at most that much), and at the end of the
    first round that trained (so what a checkpoint cannot hold, such as a user buffer's state that is not plain data,
    stops the run after its first updates, not ``freq`` iterations later). ``agree`` (data-parallel learners) turns
    one rank's verdict into every rank's (True when any rank's is), since each rank has its own clock."""

    def __init__(self, freq: int, every_s: float = 0.0, agree: Optional[Callable[[bool], bool]] = None) -> None:
        self.freq = freq
        self.every_s = float(every_s)
        self.agree = agree
        self._last_saved = 0
        self._last_saved_at = time.monotonic()
        self._trained_saved = False  # a checkpoint written since this process first trained

    def after_round(self, learner: 'Learner') -> None:
        due_by_iter = self.freq and learner.train_iter // self.freq > self._last_saved // self.freq
        due_by_time = self.every_s > 0 and time.monotonic() - self._last_saved_at >= self.every_s
        due_first = not self._trained_saved and learner.train_iter > self._last_saved
        due = bool(due_by_iter or due_by_time or due_first)
        if self.agree is not None:
            due = self.agree(due)
        if due:
            learner.save_checkpoint('ckpt_latest.pth')
            self._trained_saved = learner.train_iter > self._last_saved or self._trained_saved
            self._last_saved = learner.train_iter
            self._last_saved_at = time.monotonic()

    def after_load(self, learner: 'Learner') -> None:
        self._last_saved = learner.train_iter
        self._last_saved_at = time.monotonic()


class LinearLRDecayHook(LearnerHook):
    """Decay every optimizer's learning rates linearly from their initial values to 0 at ``decay_iters``."""

    def __init__(self, decay_iters: int) -> None:
        if isinstance(decay_iters, bool) or not isinstance(decay_iters, int) or decay_iters <= 0:
            raise ConfigError(f"hook linear_lr_decay: decay_iters={decay_iters!r} must be a whole number of train "
                              f"iterations > 0 (or set policy.learn.lr_decay_iters, which adds this hook)")
        self.decay_iters = decay_iters

    def check_run_config(self, cfg: Any) -> None:
        if cfg.policy.learn.get('lr_decay_iters'):
            raise ConfigError(f"policy.learn.lr_decay_iters={cfg.policy.learn.lr_decay_iters} adds a linear learning "
                              f"rate decay of its own: both would set the learning rate, the later one winning; keep one")

    def after_iter(self, learner: 'Learner', info: Dict[str, float]) -> None:
        fraction = max(0.0, 1.0 - learner.train_iter / self.decay_iters)
        for optimizer in learner.policy.optimizers():
            for group in optimizer.param_groups:
                group.setdefault('initial_lr', group['lr'])
                group['lr'] = group['initial_lr'] * fraction


def _kept(path: str) -> str:
    """What a checkpoint write that failed says of the file it was to replace: kept, or none (the run's first)."""
    return ' (the previous one is intact)' if os.path.isfile(path) else ''


def _registered_class(names: str) -> str:
    """The class a buffer's name is registered for (``"'fifo' (or ...)"``: the first), as ``module.Class``."""
    from ..registry import BUFFER_REGISTRY

    cls = BUFFER_REGISTRY.get(names.split("'")[1])
    return f"{cls.__module__}.{cls.__qualname__}"


def _buffer_name(buffer: Any) -> str:
    """The registered name of ``buffer``'s class (its class name when it is registered under none)."""
    from ..registry import BUFFER_REGISTRY

    for name in BUFFER_REGISTRY.names():
        if BUFFER_REGISTRY.is_loaded(name) and BUFFER_REGISTRY.get(name) is type(buffer):
            return name
    return type(buffer).__name__


def _prioritized(batch: Any) -> bool:
    """Whether ``batch`` is one a prioritized buffer drew (it carries ``is_weight``; a policy's batch of
    another form, such as a bare tensor, is not)."""
    return callable(getattr(batch, 'keys', None)) and is_weights(batch) is not None


class Learner:
    """Trains the policy (learn mode) one batch at a time and owns the checkpoints of the run.

    ``state_provider`` returns the rest of the run's state (env steps, RNGs, collector, buffer) to put in
    checkpoints beside the policy's own state dict. ``buffer``: the replay buffer the batches come from; when the learn
    mode returns per-sequence priorities (``info['priority']``, for a batch a prioritized buffer drew) the learner
    hands them back with ``buffer.update_priority(batch, priority)`` (a buffer without that method ignores them).
    A prioritized batch (one with ``is_weight``) whose learn step returns no priority is warned about once through
    ``warn`` (stderr; a pipeline hands its own): the buffer's draws would stay uniform without a word.
    """

    def __init__(self, policy: Any, exp_dir: Optional[str] = None, hooks: Optional[List[LearnerHook]] = None,
                 state_provider: Optional[Callable[[], Dict[str, Any]]] = None, buffer: Any = None) -> None:
        self.policy = policy
        self.buffer = buffer
        self.exp_dir = exp_dir
        self.hooks: List[LearnerHook] = list(hooks or [])
        self.state_provider = state_provider
        self.train_iter = 0
        self.warn: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)
        self._priority_warned = False
        #: where learners share one budget (async workers: ``async_training.StepClaims``), what each gradient step is
        #: claimed from first (``claim(max_train_iter) -> bool``, ``release()``); None: this learner's own
        #: ``train_iter`` decides
        self.step_claims: Any = None
        #: why a hook asked the run to end (``StopTraining``: ``request_stop``), or None
        self.stop_requested: Optional[str] = None
        #: the run ends for another reason (its budget, solved): a later request is not what ended it
        self.stops_closed = False
        #: checkpoints written by this learner, by file name (``ckpt_latest.pth``: the start's, then the periodic ones)
        self.saves: Dict[str, int] = {}
        #: where the run's latest checkpoint is: ``{'train_iter': ..., 'env_step': ...}`` of the last
        #: ``ckpt_latest.pth`` written or loaded by this learner (None: none yet), for the lines that say what a
        #: ``--resume`` continues from
        self.latest_checkpoint: Optional[Dict[str, int]] = None

    @property
    def exp_dir(self) -> Optional[str]:
        """Where checkpoints go (``exp_dir/ckpt/``). A folder that existed when it was set and is gone when a
        checkpoint is due (moved or deleted mid-run) is an error, never recreated as a stub; one that did not exist
        yet (a pipeline composed by hand) is created by the first checkpoint."""
        return self._exp_dir

    @exp_dir.setter
    def exp_dir(self, folder: Optional[str]) -> None:
        self._exp_dir = folder
        self._folder_existed = folder is not None and os.path.isdir(folder)

    def _user_buffer_batch_error(self, exc: Exception) -> Optional[PolicyError]:
        """A user's replay buffer gave the batch on which a learn mode of acframe's raised (no user frame in the
        traceback: a batch of another layout, a plain dict, a key dropped): one line naming the buffer and the
        contract; None when the buffer is acframe's (an acframe bug: its traceback is the report)."""
        buffer = self.buffer
        if buffer is None or isinstance(exc, (AcframeError, MemoryError)) or type(buffer).__module__.startswith('acframe.'):
            return None
        if isinstance(exc, torch.OutOfMemoryError) or 'CUDA' in str(exc) or 'out of memory' in str(exc):
            return None  # (the device's trouble, not the batch's)
        from ..policy.base import BUFFER_KINDS
        from ..registry import POLICY_REGISTRY

        policy_type = (getattr(self.policy, 'policy_cfg', None) or {}).get('type')
        wanted = getattr(POLICY_REGISTRY.get(policy_type), 'train_sample_kind', None) if policy_type in POLICY_REGISTRY \
            else None
        learns = 'whole trajectories' if wanted == 'segments' else 'fixed unrolls'
        undeclared = (f"; it declares no sample_kind and policy '{policy_type}' learns from {learns}: set "
                      f"sample_kind = '{wanted}' on it, or subclass {_registered_class(BUFFER_KINDS[wanted][1])}"
                      if wanted in BUFFER_KINDS and getattr(buffer, 'sample_kind', None) not in BUFFER_KINDS else '')
        return PolicyError(f"the policy's learn mode could not read a batch of replay buffer '{_buffer_name(buffer)}' "
                           f"({type(buffer).__module__}.{type(buffer).__qualname__}): {describe_raised(exc)}; check "
                           f"that its sample(batch_size) follows the contract, a treetensor tree of the pushed samples' "
                           f"keys, time-major (docs/replay.md, \"The contract\"){undeclared}")

    def train(self, batch: Any, on_step: Optional[Callable[[], None]] = None) -> Dict[str, float]:
        """One update on ``batch``, then the hooks' ``after_iter``; returns the policy's info dict. A user's policy
        plugin that raises is one line naming its file and line (``PolicyError``; ``--debug`` shows the traceback).

        The step is whole: a Ctrl-C or SIGTERM that comes during it is raised once ``train_iter`` counts it,
        ``on_step`` (the caller's own count of it) has run and the hooks have seen it (a second Ctrl-C, or 30 s of it,
        cuts the step: ``signals.BREAKABLE_HOLD_S``).
        Cut anywhere inside, the final checkpoint held half-updated weights and moments, weights a step ahead of the
        count, or a learning rate the decay hook had not yet set: a resume was not the unbroken run."""
        with interrupts_deferred(breakable=True):
            try:
                info = self.policy.forward(batch)
            except Exception as exc:
                error = user_code_error(exc, "the policy's learn mode") or self._user_buffer_batch_error(exc)
                if error is None:
                    raise
                raise error from exc
            check_info(info)
            priority = info.pop('priority', None)
            if priority is not None and hasattr(self.buffer, 'update_priority'):
                self.buffer.update_priority(batch, priority)
            elif priority is not None and self.buffer is None and not self._priority_warned and _prioritized(batch):
                self._priority_warned = True  # (a loop composed by hand: examples/compose_pipeline.py)
                self.warn("acframe: warning: a prioritized replay buffer drew the batch and the policy's learn step "
                          "returned info['priority'], but this Learner was given no buffer to hand them to, so every "
                          "priority stays the same and the draws stay uniform: build it with Learner(..., "
                          "buffer=the_buffer)")
            elif priority is None and not self._priority_warned and _prioritized(batch):
                self._priority_warned = True
                self.warn(f"acframe: warning: the prioritized replay buffer drew a batch and the policy's learn step "
                          f"returned no info['priority'], so every priority stays the same and the draws stay "
                          f"uniform: return one priority per sequence (shape (B,)) from the learn forward, or use a "
                          f"uniform buffer (policy.other.replay_buffer.type; docs/replay.md)")
            self.train_iter += 1
            if on_step is not None:
                on_step()
            for hook in self.hooks:
                self.call_hook(hook, 'after_iter', self, info)
        return info

    def train_rollout(self, plan: Any, start: int = 0, max_train_iter: Optional[int] = None,
                      on_step: Optional[Callable[[int], None]] = None) -> Optional[int]:
        """The gradient steps of one prepared on-policy rollout, from step ``start``: one ``train`` per batch
        of ``learn_mode.minibatches(plan, start)``, stopping early once ``train_iter`` reaches ``max_train_iter``.

        Returns None when the rollout is finished, else the index of its next step (to continue it later).
        ``on_step(next_step)`` is called with each step's update (the run's checkpointed index: an interrupt
        between two steps finds it current, so a resume continues the rollout rather than repeating it).
        """
        batches = self.policy.minibatches(plan, start)
        step = start

        def advance() -> None:
            nonlocal step
            step += 1
            if on_step is not None:
                on_step(step)
        while max_train_iter is None or self.train_iter < max_train_iter:
            try:
                batch = next(batches, None)
            except Exception as exc:
                error = user_code_error(exc, "the policy's minibatches")
                if error is None:
                    raise
                raise error from exc
            if batch is None:  # (drawn before the claim: a refused claim, in an async run only, ends the rollout)
                return None
            if not self.claim_step(max_train_iter):  # another learner took the budget's last step
                break
            self.train(batch, advance)
        return step

    def call_hook(self, hook: Any, method: str, *args: Any) -> None:
        """``hook.method(*args)`` (a learner, collector or evaluator hook; nothing where a hook of one's own lacks that
        method): what it raises is one line naming it (``errors.user_code_error``; ``sys.exit`` too), but
        ``StopTraining``, which asks the run to end (``request_stop``)."""
        what = hook_name(hook, method)
        call = getattr(hook, method, None)
        if call is None:  # a hook of one's own given in Python, not a LearnerHook: what it lacks it does not want
            return
        try:
            call(*args)
        except StopTraining as stop:
            self.request_stop(f"{what}{': ' + str(stop) if str(stop) else ''}")
        except SystemExit as exc:  # (it ended the process without a summary, a checkpoint of now or a word)
            error = PolicyError(f"{what} called sys.exit({exc.code!r}); a hook ends the run by raising "
                                f"acframe.StopTraining(reason): the final evaluation, checkpoint and summary are "
                                f"written, exit 0")
            error.learner_sound = True
            raise error from exc
        except Exception as exc:
            error = user_code_error(exc, what)
            if error is None:
                raise
            # a hook runs between the learner's steps, so the run writes its final checkpoint before it reports this
            # (RunBase._checkpoint_before_env_failure): minutes since the last one are not lost to a hook's bug
            error.learner_sound = True
            raise error from exc

    def request_stop(self, why: str) -> None:
        """End the run at the end of this round as a spent budget does (``RunBase.budget_left`` reads
        ``stop_requested`` at each turn; data-parallel ranks share it there, ``DataParallel.end_turn``; within a round
        they make the same steps). The first request is the one the run reports; none is taken once the run ends
        otherwise (``stops_closed``: its budget spent, or solved): a hook at the final evaluation did not end it."""
        if self.stop_requested is None and not self.stops_closed:
            self.stop_requested = why

    def claim_step(self, max_train_iter: Optional[int]) -> bool:
        """Whether the next gradient step is within ``max_train_iter``: always, but where learners share one budget
        (``step_claims``), which reserves it (so that together they stop at exactly ``max_train_iter``); a reserved
        step must be made, or given back with ``release_step``."""
        return self.step_claims is None or max_train_iter is None or self.step_claims.claim(int(max_train_iter))

    def release_step(self) -> None:
        """Give back the step ``claim_step`` reserved (the batch it was for did not come)."""
        if self.step_claims is not None:
            self.step_claims.release()

    def after_eval(self, train_iter: int, env_step: int, return_mean: float, best_return: float, solved: bool,
                   score: Optional[float] = None) -> None:
        """The pipeline reports an evaluation: every hook's ``after_eval`` sees it. ``score``: what it counts for in
        ``best_return`` (``evaluator.eval_score``: with a confirmation run, the mean over both; default its mean)."""
        result = {'train_iter': int(train_iter), 'env_step': int(env_step), 'return_mean': float(return_mean),
                  'best_return': float(best_return), 'solved': bool(solved),
                  'score': float(return_mean if score is None else score)}
        for hook in self.hooks:
            self.call_hook(hook, 'after_eval', self, result)

    def end_round(self) -> None:
        """Called by the pipeline between rounds (a consistent point to checkpoint)."""
        for hook in self.hooks:
            self.call_hook(hook, 'after_round', self)

    # ---- checkpoints -------------------------------------------------------------------------------
    def checkpoint_state(self) -> Dict[str, Any]:
        state = {'policy': self.policy.state_dict(), 'train_iter': self.train_iter}
        if self.state_provider is not None:
            state.update(self.state_provider())
        return state

    def save_checkpoint(self, name: str, state: Optional[Dict[str, Any]] = None) -> str:
        """Write ``exp_dir/ckpt/name`` atomically and return its path."""
        if self.exp_dir is None:
            raise CheckpointError("this learner has no experiment folder to save checkpoints in")
        path = os.path.join(self.exp_dir, 'ckpt', name)
        self._refuse_a_folder_that_went_away(path)
        state = state if state is not None else self.checkpoint_state()
        bad = nonfinite_tensor_names(state.get('policy'))
        if bad:
            raise NonFiniteError(f"the policy's {', '.join(bad[:4])} hold NaN/inf at train iter {self.train_iter}: "
                                 f"{path} was not written (the last good checkpoint is kept)")
        try:
            if self._folder_existed and not os.path.isdir(os.path.dirname(path)):
                os.mkdir(os.path.dirname(path))  # ckpt/ only: a run folder moved meanwhile is FileNotFoundError
            atomic_torch_save(state, path, make_folder=not self._folder_existed)
            self.saves[name] = self.saves.get(name, 0) + 1
            if name == 'ckpt_latest.pth':
                self.latest_checkpoint = checkpoint_position(state)
        except NotPlainData as exc:
            raise CheckpointError(f"cannot write the checkpoint {path}: {not_plain_fix(exc)}{_kept(path)}") from exc
        except OSError as exc:
            self._refuse_a_folder_that_went_away(path)  # moved between the check above and the write
            kept = _kept(path)  # (none: the run's first checkpoint, whose new folder goes: the same command again)
            raise CheckpointError(f"cannot write the checkpoint {path}: {exc.strerror or exc}{kept}; free disk space "
                                  f"or fix the folder's permissions, then "
                                  f"{'--resume' if kept else 'run the same command again'}") from exc
        return path

    def _refuse_a_folder_that_went_away(self, path: str) -> None:
        """Never recreate a run folder that went away: one line saying where the checkpoint was not written."""
        if self._folder_existed and not os.path.isdir(self.exp_dir):
            raise CheckpointError(f"the run folder {self.exp_dir} is gone: it was moved or deleted while the run went "
                                  f"on; {path} was not written — resume from wherever the folder went")

    #: how many data-parallel learners this one is one of (``DataParallelLearner``: its group's size)
    learner_num = 1

    def load_checkpoint_state(self, state: Dict[str, Any]) -> None:
        check_learner_num(state, self.learner_num)
        self.policy.load_state_dict(state['policy'])
        self.train_iter = int(state.get('train_iter', 0))
        self.latest_checkpoint = checkpoint_position(state)
        for hook in self.hooks:
            self.call_hook(hook, 'after_load', self)


def checkpoint_position(state: Dict[str, Any]) -> Dict[str, int]:
    """The train iteration and env step (where the run's state holds one) a checkpoint ``state`` was taken at."""
    return {key: int(state[key]) for key in ('train_iter', 'env_step') if isinstance(state.get(key), (int, np.integer))}


def describe_position(position: Optional[Dict[str, int]]) -> str:
    """' (train iter 20, env step 256)' for a ``checkpoint_position``; '' for None or an empty one."""
    parts = [f"{key.replace('_', ' ')} {value}" for key, value in (position or {}).items()]
    return f" ({', '.join(parts)})" if parts else ''


def check_learner_num(state: Dict[str, Any], learner_num: int) -> None:
    """A ``CheckpointError`` when the checkpoint ``state`` was written by another number of data-parallel learners
    than ``learner_num`` (its ``data_parallel`` entry; none: one): each rank's envs, RNGs and rollout are its own."""
    stored = state.get('data_parallel')
    num = int(stored['learner_num']) if isinstance(stored, dict) else 1
    if num != learner_num:
        raise CheckpointError(f"it was written by {num} data-parallel learner(s) and this run has "
                              f"parallel.learner_num={learner_num}; resume with parallel.learner_num={num}")


def _exported_model_format(path: str) -> Optional[str]:
    """'TorchScript' or 'ONNX' when ``path`` is a file ``-m export`` writes (a TorchScript archive: a zip holding
    ``code/``; an ONNX file: by its ``.onnx`` name), else None."""
    import zipfile

    if path.lower().endswith('.onnx'):
        return 'ONNX'
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                if any(name.split('/')[1:2] == ['code'] or name.endswith('/constants.pkl') for name in archive.namelist()):
                    return 'TorchScript'
    except (OSError, zipfile.BadZipFile):
        return None
    return None


def load_checkpoint(path: str) -> Dict[str, Any]:
    """Read a checkpoint; ``CheckpointError`` naming the file when it is missing or unreadable."""
    import torch

    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint '{path}' does not exist; pass the path of a .pth file written by acframe (exp_dir/ckpt/)")
    if not os.path.isfile(path):  # a FIFO or device would be read forever
        raise CheckpointError(f"checkpoint '{path}' is not a plain file; pass the path of a .pth file written by acframe")
    exported = _exported_model_format(path)
    if exported is not None:  # (torch.load said "corrupt, cut short", with a warning of its own)
        raise CheckpointError(f"'{path}' is an exported {exported} model (-m export: the actor alone, to act with "
                              f"outside acframe), not a checkpoint; pass the run folder or a .pth file in its ckpt/")
    try:  # data only: a checkpoint is something people download and share, it must never run code
        state = torch.load(path, map_location='cpu', weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r'(unsupported GLOBAL [^\s]+|GLOBAL [^\s]+ was not an allowed global)', str(exc))
        if found is None:
            raise CheckpointError(f"checkpoint '{path}' is corrupt or not a torch file ({_last_line(exc)}){_intact_other(path)}") from exc
        raise CheckpointError(f"checkpoint '{path}' holds an object that is not plain data ({found.group(1)}); "
                              f"acframe refuses it because loading it could run code — use a checkpoint written by acframe") from exc
    except Exception as exc:
        raise CheckpointError(f"checkpoint '{path}' is corrupt, cut short or not a torch file ({type(exc).__name__}: "
                              f"{_first_sentence(exc)}){_intact_other(path)}") from exc
    if not isinstance(state, dict) or not isinstance(state.get('policy'), dict):
        raise CheckpointError(f"checkpoint '{path}' was not written by acframe (no 'policy' dict entry)")
    try:
        return from_plain_data(state)
    except ValueError as exc:  # a crafted array record: checked before anything is allocated
        raise CheckpointError(f"checkpoint '{path}' is malformed: {exc}; use a checkpoint written by acframe") from exc


def _first_sentence(exc: BaseException) -> str:
    """What went wrong, without torch's paragraph of advice after it."""
    text = _last_line(exc) if not str(exc).strip().startswith('PytorchStreamReader') else str(exc).strip()
    return text.split('. ')[0].rstrip('.')[:200]


def _intact_other(path: str) -> str:
    """Where to go on from a run folder's unreadable latest checkpoint: its best one, when that one reads."""
    import torch

    folder, name = os.path.split(os.path.abspath(path))
    best = os.path.join(folder, 'ckpt_best.pth')
    if name == 'ckpt_best.pth' or not os.path.isfile(best):
        return '; use an intact copy of the file'
    try:
        torch.load(best, map_location='cpu', weights_only=True)
    except Exception:
        return '; use an intact copy of the file'
    return (f"; use an intact copy of the file — {best} reads: evaluate it (-m eval --load), or start a new run "
            f"from its weights (--init-from)")


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip() and not line.startswith('Check the documentation')]
    return lines[-1].strip()[:200] if lines else type(exc).__name__


def _nearest_argument(cls: type, kwargs: Dict[str, Any]) -> str:
    """``"did you mean 'every'? "`` for a keyword ``cls`` does not take that is close to one it takes, else ''."""
    import inspect

    from ..registry import closest

    try:
        taken = [name for name, p in inspect.signature(cls).parameters.items() if name != 'self'
                 and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return ''
    for key in kwargs:
        near = closest(key, taken) if key not in taken else None
        if near:
            return f"did you mean '{near}' for '{key}'? "
    return ''


def _mistyped_argument(cls: type, kwargs: Dict[str, Any]) -> str:
    """``"n='three' must be a number (like its default 3), got str"`` for the first keyword whose value is not of the
    kind of its default in ``cls``'s signature (a bool, a number or a string; a hook's only declaration of its
    arguments), else ''. A number default takes any number (an int default given 0.5 may be meant), a string default a
    path too, and any default takes None (often "none" or "no limit"; the hook says what it takes there)."""
    import inspect
    import numbers

    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return ''
    for key, value in kwargs.items():
        if value is None:
            continue
        default = params[key].default if key in params else inspect.Parameter.empty
        flag = isinstance(value, (bool, np.bool_))
        if isinstance(default, (bool, np.bool_)):
            kind, fits = 'a bool', flag
        elif isinstance(default, numbers.Real):
            kind, fits = 'a number', isinstance(value, numbers.Real) and not flag
        elif isinstance(default, str):
            kind, fits = 'a string', isinstance(value, (str, os.PathLike))
        else:  # (no default, None, or another kind: the hook checks it itself)
            continue
        if not fits:
            got = type(value)
            named = got.__name__ if got.__module__ == 'builtins' else f"{got.__module__}.{got.__qualname__}"
            return f"{key}={value!r} must be {kind} (like its default {default!r}), got {named}"
    return ''


def hooks_from_config(entries: Any, key: str = 'policy.learn.learner.hooks', base: type = LearnerHook) -> List[Any]:
    """The hooks a config names at ``key`` (``policy.learn.learner.hooks``; ``policy.collect.hooks`` and
    ``policy.eval.evaluator.hooks`` with ``base`` ``CollectorHook`` / ``EvaluatorHook``): each entry a
    ``HOOK_REGISTRY`` name, or ``dict(type=name, **kwargs)``; a ``ConfigError`` naming the entry when one is not a
    registered subclass of ``base`` or its keyword arguments do not fit (unknown, or not of the kind of their
    defaults)."""
    from ..errors import ConfigError, describe_raised
    from ..registry import HOOK_REGISTRY

    if not isinstance(entries, (list, tuple)):
        raise ConfigError(f"config key '{key}' = {entries!r} must be a list of hook names or dict(type=name, ...)")
    hooks: List[Any] = []
    for i, entry in enumerate(entries):
        where = f"{key}[{i}]"
        kwargs = dict(entry) if isinstance(entry, dict) else {}
        name = kwargs.pop('type', None) if isinstance(entry, dict) else entry
        if not isinstance(name, str) or not name:
            raise ConfigError(f"config key '{where}' = {entry!r} must be a registered hook name or dict(type=name, "
                              f"**kwargs), e.g. 'linear_lr_decay' or dict(type='linear_lr_decay', decay_iters=1000)")
        cls = HOOK_REGISTRY.get_for(name, where)
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise ConfigError(f"config key '{where}': hook '{name}' is {cls!r}, not a {base.__name__} subclass; "
                              f"register a class deriving from acframe.worker.{base.__name__}")
        mistyped = _mistyped_argument(cls, kwargs)
        if mistyped:  # (it failed at the hook's first call, minutes into the run)
            raise ConfigError(f"config key '{where}': hook '{name}': {mistyped}")
        try:
            hooks.append(cls(**kwargs))
        except AcframeError as exc:  # a hook that checks its arguments says what is wrong itself
            raise ConfigError(f"config key '{where}': {exc}") from exc
        except TypeError as exc:
            raise ConfigError(f"config key '{where}': hook '{name}' does not take these arguments ({exc}); "
                              f"{_nearest_argument(cls, kwargs)}fix the keys of dict(type='{name}', ...)") from exc
        except Exception as exc:  # noqa: BLE001 - user code: say what it raised
            raise ConfigError(f"config key '{where}': building hook '{name}' raised {describe_raised(exc)}") from exc
    return hooks


def config_hooks(cfg: Any) -> Dict[str, List[Any]]:
    """The hooks a compiled ``cfg`` names, built, by the key naming them: ``policy.learn.learner.hooks``,
    ``policy.collect.hooks`` and ``policy.eval.evaluator.hooks`` (``hooks_from_config``'s errors)."""
    from .collector import CollectorHook
    from .evaluator import EvaluatorHook

    return {'policy.learn.learner.hooks': hooks_from_config(cfg.policy.learn.learner.get('hooks', [])),
            'policy.collect.hooks': hooks_from_config(cfg.policy.collect.get('hooks', []), 'policy.collect.hooks',
                                                      CollectorHook),
            'policy.eval.evaluator.hooks': hooks_from_config(cfg.policy.eval.evaluator.get('hooks', []),
                                                             'policy.eval.evaluator.hooks', EvaluatorHook)}
