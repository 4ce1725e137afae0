"""Serial pipelines: collect, (store,) learn and evaluate in turn, in one process.

``serial_pipeline`` is the off-policy loop (collector → replay buffer → learner), the one IMPALA and ACER
use. The pieces — experiment folder, progress line, checkpoints, resume, summary — live in ``SerialRun``
so other loops (the on-policy one, scripts) reuse them.
"""
from __future__ import annotations

import os
import sys
import time
from collections import deque
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..config import compile_config
from ..config.run_folder import config_differences, load_run_config, read_run_record, save_run_config
from ..config.compile import ConfigInput
from ..data import make_tree, to_dict
from ..envs import make_env_manager
from ..envs.randomization import DomainRandomizer
from ..errors import CheckpointError, ConfigError
from ..plot import write_run_curves
from ..policy import create_policy, policy_class
from ..registry import BUFFER_REGISTRY
from ..utils import (atomic_write_json, buffer_checkpoint, capture_rng_states, restore_buffer, restore_rng_states,
                     set_global_seed, set_torch_threads)
from ..worker import (CheckpointHook, Evaluator, Learner, LearnerHook, LinearLRDecayHook, LogHook,
                      SampleCollector, load_checkpoint)

from .evaluate import EVAL_SEED_OFFSET
from ..signals import Terminated, sigterm_as_interrupt
from .run_folder import RunLock, create_exp_dir, plan_exp_dir


class Progress:
    """One live progress line (rewritten in place on a terminal, printed every few seconds otherwise)."""

    def __init__(self, enabled: bool = True, interval: float = 2.0) -> None:
        self.enabled = enabled
        self.tty = enabled and sys.stdout.isatty()
        self.interval = interval if not self.tty else 0.2
        self._last = 0.0
        self._width = 0

    def update(self, text: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self.tty:
            sys.stdout.write('\r' + text.ljust(self._width))
            self._width = len(text)
        else:
            sys.stdout.write(text + '\n')
        sys.stdout.flush()

    def message(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty and self._width:
            sys.stdout.write('\r' + ' ' * self._width + '\r')
            self._width = 0
        sys.stdout.write(text + '\n')
        sys.stdout.flush()

    def result(self, text: str) -> None:
        """The final result line: printed even when the progress line is off (``-q``)."""
        if self.tty and self._width:
            sys.stdout.write('\r' + ' ' * self._width + '\r')
            self._width = 0
        sys.stdout.write(text + '\n')
        sys.stdout.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self._width:
            sys.stdout.write('\n')
            sys.stdout.flush()


class SerialRun:
    """Everything a serial pipeline owns: config, folder, policy, workers, counters, checkpoints, summary."""

    def __init__(self, cfg: Any, exp_dir: Optional[str] = None, resume: bool = False, progress: bool = True,
                 learner_hooks: Sequence[LearnerHook] = (), model: Optional[torch.nn.Module] = None,
                 use_buffer: bool = True, log_to_console: bool = False, mode: str = 'serial',
                 config_changes: Sequence[str] = ()) -> None:
        """Build everything, check everything, and only then create (or lock) the experiment folder.

        A start that fails — a bad path, an env that does not build, a model that does not fit the env's
        spaces, a checkpoint that does not fit the model, a folder another process trains in — raises
        before anything is written.
        """
        self.start = time.perf_counter()
        self.cfg = cfg
        self.mode = mode
        self.exp_dir = plan_exp_dir(cfg, exp_dir, resume)
        self.randomizer = DomainRandomizer.from_config(cfg)  # None unless env.domain_randomization.enable
        set_global_seed(cfg.seed)
        set_torch_threads(cfg.policy.learn.torch_threads)
        self.progress = Progress(progress)
        self.tb: Any = None
        self.lock: Optional[RunLock] = None
        self.collector_env = self.evaluator_env = None
        try:
            self._build(cfg, learner_hooks, model, use_buffer, log_to_console)
            if resume:
                self.restore(os.path.join(self.exp_dir, 'ckpt', 'ckpt_latest.pth'))
            self.policy.check_finite('the start of the run' if not resume else 'the checkpoint to resume')
            if not resume:
                create_exp_dir(self.exp_dir)
            self.lock = RunLock(self.exp_dir)
        except BaseException:
            self._close_envs()
            raise
        self.learner.exp_dir = self.exp_dir
        changes = read_run_record(self.exp_dir)['changes'] if resume else []
        if config_changes:
            changes.append({'train_iter': int(self.learner.train_iter), 'env_step': int(self.env_step),
                            'keys': list(config_changes)})
        save_run_config(cfg, self.exp_dir, mode, changes)
        from tensorboardX import SummaryWriter

        self.tb = SummaryWriter(os.path.join(self.exp_dir, 'log'))
        self.evaluator.tb_logger = self.log_hook.tb_logger = self.tb
        if self.randomizer is not None:
            self.randomizer.attach(self.exp_dir, self.tb, self.progress.message)
        if resume:
            self.progress.message(f"[acframe] resumed {self.exp_dir} at env step {self.env_step}, train iter {self.learner.train_iter}")
        else:  # resumable from its first moments
            self.learner.save_checkpoint('ckpt_latest.pth')

    def _build(self, cfg: Any, learner_hooks: Sequence[LearnerHook], model: Optional[torch.nn.Module],
               use_buffer: bool, log_to_console: bool) -> None:
        if self.randomizer is None:
            self.collector_env = make_env_manager(cfg, 'collector', cfg.env.collector_env_num, cfg.seed)
            self.evaluator_env = make_env_manager(cfg, 'evaluator', cfg.env.evaluator_env_num, cfg.seed + EVAL_SEED_OFFSET)
        else:  # every collector env with its own drawn parameters
            self.collector_env = self.randomizer.make_collector_env()
            self.evaluator_env = self.randomizer.make_evaluator_env(cfg.env.evaluator_env_num, cfg.seed + EVAL_SEED_OFFSET)
        self.policy = create_policy(cfg, self.collector_env.observation_space, self.collector_env.action_space,
                                    model=model)
        self.collector = SampleCollector(self.collector_env, self.policy.collect_mode, cfg.policy.collect.n_sample)
        self.evaluator = Evaluator(self.evaluator_env, self.policy.eval_mode, cfg.env.n_evaluator_episode,
                                   cfg.env.stop_value, cfg.policy.eval.evaluator.eval_freq, None,
                                   n_confirm_episode=cfg.env.n_confirm_episode)
        self.buffer = None
        if use_buffer:
            buffer_cfg = dict(cfg.policy.other.replay_buffer)
            self.buffer = BUFFER_REGISTRY.build(buffer_cfg.pop('type'), seed=cfg.seed, **buffer_cfg)
            if hasattr(self.buffer, 'check_batch_size') and 'batch_size' in cfg.policy.learn:
                self.buffer.check_batch_size(cfg.policy.learn.batch_size)
        echo = self.progress.message if log_to_console else None
        self.log_hook = LogHook(cfg.policy.learn.learner.log_freq, None, echo)
        hooks: List[LearnerHook] = [self.log_hook, CheckpointHook(cfg.policy.learn.learner.save_ckpt_freq,
                                                                   cfg.policy.learn.learner.save_ckpt_every_s)]
        decay = cfg.policy.learn.get('lr_decay_iters', 0)
        if decay:
            hooks.append(LinearLRDecayHook(decay))
        hooks += list(learner_hooks)
        self.learner = Learner(self.policy.learn_mode, None, hooks, self.state_provider)
        self.recent_returns: deque = deque(maxlen=20)
        # updates still owed to the current round (a budget may end a run mid-round; resume finishes it)
        self.pending_updates = 0
        self.pending_batch = None  # the on-policy loop's prepared rollout while its gradient steps are pending
        self.rollout_step = 0  # the index of the next gradient step on pending_batch
        self._collecting = False
        self.last_segment_cut = False
        self._unlogged_returns: List[float] = []
        self._returns_logged_at = 0
        self.solved = False
        self.wall_before = 0.0

    # ---- state -------------------------------------------------------------------------------------
    @property
    def env_step(self) -> int:
        return self.collector.env_step

    def state_provider(self) -> Dict[str, Any]:
        save_buffer = self.buffer is not None and self.cfg.policy.other.replay_buffer.save_in_checkpoint
        return {
            'env_step': self.collector.env_step,
            # interrupted mid-collection, the envs are ahead of the collector: resume resets them instead
            'collector': self.collector.state_dict() if not self._collecting else
            {'env_step': self.collector.env_step, 'obs': None, 'env': {'envs': None}},
            'evaluator': self.evaluator.state_dict(),
            **buffer_checkpoint(self.buffer, save_buffer),
            'rng': capture_rng_states(),
            'wall_s': self.wall_before + time.perf_counter() - self.start,
            'recent_returns': list(self.recent_returns),
            'domain_randomization': self.randomizer.state_dict() if self.randomizer is not None else None,
            'pending_updates': self.pending_updates,
            'pending_batch': to_dict(self.pending_batch) if self.pending_batch is not None else None,
            'rollout_step': self.rollout_step,
        }

    def restore(self, path: str) -> None:
        state = load_checkpoint(path)
        try:
            self.learner.load_checkpoint_state(state)
        except CheckpointError as exc:
            raise CheckpointError(f"checkpoint '{path}': {exc}") from exc
        if self.randomizer is not None and state.get('domain_randomization'):
            self.collector_env = self.randomizer.load_state_dict(state['domain_randomization'], self.collector)
        if not self.collector.load_state_dict(state['collector']):
            self.progress.message("[acframe] the collector envs' state is not plain data (or was mid-collection): "
                                  "they continue from a reset")
        self.evaluator.load_state_dict(state['evaluator'])
        restore_buffer(self.buffer, state)
        restore_rng_states(state['rng'])
        self.wall_before = state.get('wall_s', 0.0)
        self.recent_returns.extend(state.get('recent_returns', []))
        self.pending_updates = int(state.get('pending_updates', 0))
        if state.get('pending_batch') is not None:
            self.pending_batch = make_tree(state['pending_batch'])
        self.rollout_step = int(state.get('rollout_step', 0))

    # ---- loop pieces -------------------------------------------------------------------------------
    def collect(self):
        """One segment; the last one of the budget is cut so the run stops within one step per env of
        ``max_env_step`` (check ``self.last_segment_cut``)."""
        self._collecting = True
        num_envs = self.collector.env.num_envs
        steps_left = -(-(self.cfg.max_env_step - self.env_step) // num_envs)  # ceil: within one step per env
        steps = min(self.collector.steps_per_env, max(1, steps_left))
        self.last_segment_cut = steps < self.collector.steps_per_env
        segment = self.collector.collect(steps)
        self._collecting = False
        stats = self.collector.pop_episode_stats()
        self.recent_returns.extend(stats['returns'])
        self._unlogged_returns += stats['returns']
        # one tensorboard point per log period (a point per episode costs more than the episode)
        if self._unlogged_returns and self.learner.train_iter - self._returns_logged_at >= self.cfg.policy.learn.learner.log_freq:
            self.tb.add_scalar('collector/episode_return_mean', float(np.mean(self._unlogged_returns)), self.env_step)
            self.tb.add_scalar('collector/episodes', len(self._unlogged_returns), self.env_step)
            self._unlogged_returns, self._returns_logged_at = [], self.learner.train_iter
        if self.randomizer is not None:  # re-draws the env parameters when due
            self.collector_env = self.randomizer.after_collect(self.collector, self.env_step)
        return segment

    def budget_left(self) -> bool:
        return self.env_step < self.cfg.max_env_step and self.learner.train_iter < self.cfg.max_train_iter

    def save_best(self, value: float) -> None:
        self.learner.save_checkpoint('ckpt_best.pth', {
            'policy': {'model': self.policy.get_weights()}, 'train_iter': self.learner.train_iter,
            'env_step': self.env_step, 'eval_return': value})

    def maybe_evaluate(self, force: bool = False) -> bool:
        """Evaluate when due; True when the stop value is reached."""
        if not force and not self.evaluator.should_eval(self.learner.train_iter):
            return False
        result = self.evaluator.evaluate(self.learner.train_iter, self.env_step, self.save_best)
        self.progress.message(
            f"[eval] env_step {self.env_step} iter {self.learner.train_iter}: return {result['mean']:.2f} "
            f"± {result['std']:.2f} (best {self.evaluator.best_return:.2f}, stop {self.cfg.env.stop_value})")
        if result['confirm'] is not None:
            confirm = result['confirm']
            self.progress.message(f"[eval] confirmation on {confirm['episodes']} fresh episodes: return {confirm['mean']:.2f} "
                                  f"± {confirm['std']:.2f} -> {'solved' if confirm['solved'] else 'not confirmed, training on'}")
        if result['solved']:
            self.solved = True
        self.learner.after_eval(self.learner.train_iter, self.env_step, result['mean'], self.evaluator.best_return,
                                result['solved'])
        return result['solved']

    def show_progress(self) -> None:
        wall = self.wall_before + time.perf_counter() - self.start
        recent = f"{np.mean(self.recent_returns):.1f}" if self.recent_returns else '-'
        last_eval = f"{self.evaluator.last_return:.1f}" if self.evaluator.last_return is not None else '-'
        left = max(0, self.cfg.max_env_step - self.env_step)
        speed = self.env_step / wall if wall > 0 else 0.0
        self.progress.update(
            f"env_step {self.env_step} | {speed:,.0f} steps/s | iter {self.learner.train_iter} | "
            f"train return {recent} | eval return {last_eval} | budget left {left} steps")

    def finish(self, interrupted: bool = False) -> Dict[str, Any]:
        """Final checkpoint, summary.json, close everything; returns the summary."""
        try:
            self.learner.save_checkpoint('ckpt_latest.pth')
        except BaseException:
            self.close()
            raise
        wall = self.wall_before + time.perf_counter() - self.start
        summary = {
            'solved': bool(self.solved),
            'env_steps': int(self.env_step),
            'train_iters': int(self.learner.train_iter),
            'wall_s': round(wall, 3),
            'best_eval_return': None if self.evaluator.best_return == -float('inf') else self.evaluator.best_return,
            'last_eval_return': self.evaluator.last_return,
            'stop_value': self.cfg.env.stop_value,
            'n_confirm_episode': int(self.cfg.env.n_confirm_episode),
            'confirmations': [dict(c) for c in self.evaluator.confirmations],
            'eval_deterministic': bool(self.cfg.policy.eval.deterministic),
            'seed': int(self.cfg.seed),
            'policy': self.cfg.policy.type,
            'env_id': self.cfg.env.env_id,
            'exp_dir': os.path.abspath(self.exp_dir),
            'env_steps_per_s': round(self.env_step / wall, 1) if wall > 0 else None,
            'interrupted': bool(interrupted),
        }
        atomic_write_json(os.path.join(self.exp_dir, 'summary.json'), summary)
        self.close()
        write_run_curves(self.exp_dir, self.progress.message)
        self.progress.result(
            f"[acframe] {'solved' if self.solved else 'stopped'}: {summary['env_steps']} env steps, "
            f"{summary['train_iters']} iters, {summary['wall_s']:.1f} s, best eval return {summary['best_eval_return']} "
            f"-> {self.exp_dir}")
        return summary

    def close(self) -> None:
        self.progress.close()
        if self.tb is not None:
            self.tb.close()
        self._close_envs()
        if self.lock is not None:
            self.lock.release()

    def _close_envs(self) -> None:
        for env in (self.collector_env, self.evaluator_env):
            if env is not None:
                env.close()


def _compile(input_cfg: Optional[ConfigInput], seed: Optional[int], overrides: Optional[Sequence[str]],
             max_env_step: Optional[int], max_train_iter: Optional[int], resume: Optional[str],
             exp_dir: Optional[str], mode: str = 'serial',
             accept_config_change: bool = False) -> Tuple[Any, Optional[str], List[str]]:
    """The compiled config, experiment folder and accepted config changes of a pipeline call.

    With ``resume`` the folder's ``config.json`` is the config (read as data, never executed). A config or
    overrides that change its keys (budgets and ``exp_name`` aside) are refused, naming the keys, unless
    ``accept_config_change``; a folder of another pipeline (``mode``) is refused too.
    """
    extra: List[Any] = list(overrides or [])
    if max_env_step is not None:
        extra.append(('max_env_step', int(max_env_step)))
    if max_train_iter is not None:
        extra.append(('max_train_iter', int(max_train_iter)))
    if resume is None:
        if input_cfg is None:
            raise ConfigError("no config given; pass a config path or a (main_config, create_config) pair")
        return compile_config(input_cfg, extra, seed=seed), exp_dir, []
    resume = os.fspath(resume)
    if not os.path.isfile(os.path.join(resume, 'ckpt', 'ckpt_latest.pth')):
        raise ConfigError(f"--resume {resume}: no ckpt/ckpt_latest.pth there; pass the experiment folder of an earlier run")
    record = read_run_record(resume)
    if record['mode'] != mode:
        flag = {'parallel': '-m parallel', 'serial_onpolicy': '-m serial_onpolicy', 'serial': '-m serial'}.get(record['mode'], record['mode'])
        raise ConfigError(f"--resume {resume}: that folder holds a {record['mode']} run; resume it with {flag} "
                          f"(or without -m: acframe reads the mode from the folder)")
    stored = load_run_config(resume)
    cfg = load_run_config(resume, extra, seed) if input_cfg is None else compile_config(input_cfg, extra, seed=seed)
    changed = config_differences(stored, cfg)
    if changed and not accept_config_change:
        shown = ', '.join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else '')
        raise ConfigError(f"--resume {resume}: the config given changes {len(changed)} key(s) of the run: {shown}; "
                          f"resume with the run's own config (drop -c, -s and those overrides) or pass "
                          f"--accept-config-change to continue with the new values")
    return cfg, resume, changed


def run_serial(loop: Callable[[SerialRun], None], cfg: Any, exp_dir: Optional[str], resume: bool, progress: bool,
               learner_hooks: Sequence[LearnerHook], model: Optional[torch.nn.Module], use_buffer: bool,
               mode: str = 'serial', config_changes: Sequence[str] = ()) -> Any:
    """Build a ``SerialRun``, drive it with ``loop`` and finish it: final checkpoint and ``summary.json``.

    Ctrl-C and SIGTERM also finish the run (so ``--resume`` can continue it), then re-raise
    ``KeyboardInterrupt`` (``Terminated`` for SIGTERM).
    """
    with sigterm_as_interrupt():
        run = SerialRun(cfg, exp_dir, resume, progress, learner_hooks, model, use_buffer=use_buffer, mode=mode,
                        config_changes=config_changes)
        try:
            loop(run)
        except KeyboardInterrupt as exc:
            what = 'terminated (SIGTERM)' if isinstance(exc, Terminated) else 'interrupted'
            run.progress.message(f'[acframe] {what}: writing the final checkpoint and summary')
            run.finish(interrupted=True)
            raise
        except BaseException:
            run.close()
            raise
        run.summary = run.finish()
    run.policy.summary = run.summary
    return run.policy


def serial_pipeline(
    input_cfg: Optional[ConfigInput] = None,
    seed: Optional[int] = None,
    overrides: Optional[Sequence[str]] = None,
    exp_dir: Optional[str] = None,
    max_env_step: Optional[int] = None,
    max_train_iter: Optional[int] = None,
    resume: Optional[str] = None,
    progress: bool = True,
    learner_hooks: Sequence[LearnerHook] = (),
    model: Optional[torch.nn.Module] = None,
    accept_config_change: bool = False,
) -> Any:
    """Train an off-policy policy (collector → replay buffer → learner) until solved or out of budget.

    Args:
        input_cfg: a config path / dizoo_configs name, or a ``(main_config, create_config)`` pair.
        seed: the run seed (default: the config's ``seed``).
        overrides: ``'key.path=value'`` strings applied after the file.
        exp_dir: the experiment folder (default ``./<exp_name>_seed<seed>``).
        max_env_step / max_train_iter: budgets (override the config's).
        resume: an experiment folder to continue from its latest checkpoint, with the config in its
            ``config.json``; an ``input_cfg``/``overrides``/``seed`` that change that config are refused unless
            ``accept_config_change`` (budgets may always change).
        progress: print the live progress line and eval results.
        learner_hooks: extra ``LearnerHook`` objects.
        model: a model instance to use instead of the policy's default model.
        accept_config_change: with ``resume``, continue with a config that differs from the run's.

    Returns the trained policy; ``summary.json`` in the experiment folder says how it went.
    """
    cfg, exp_dir, changes = _compile(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                     'serial', accept_config_change)
    if policy_class(cfg).on_policy:
        raise ConfigError(f"policy '{cfg.policy.type}' is on-policy: it cannot learn from replayed data; "
                          f"use serial_pipeline_onpolicy (CLI: -m serial_onpolicy)")
    return run_serial(_off_policy_loop, cfg, exp_dir, resume is not None, progress, learner_hooks, model,
                      use_buffer=True, mode='serial', config_changes=changes)


def _off_policy_loop(run: SerialRun) -> None:
    """Evaluate when due; collect a segment into the buffer; ``update_per_collect`` updates from the buffer."""
    cfg = run.cfg
    update_per_collect, batch_size = cfg.policy.learn.update_per_collect, cfg.policy.learn.batch_size
    while True:
        if run.maybe_evaluate():
            break
        if not run.budget_left():
            run.maybe_evaluate(force=run.evaluator.last_eval_iter != run.learner.train_iter)
            break
        if run.pending_updates == 0:
            segment = run.collect()
            if run.last_segment_cut:  # the budget's last steps: shorter than the buffer's segments, not stored
                continue
            run.buffer.push(run.policy.collect_mode.get_train_sample(segment))
            run.pending_updates = update_per_collect
        while run.pending_updates and run.learner.train_iter < cfg.max_train_iter:
            batch = run.buffer.sample(batch_size)
            if batch is None:  # the buffer ends the round (too few samples, or its replay schedule is done)
                run.pending_updates = 0
                break
            run.learner.train(batch)
            run.pending_updates -= 1
        run.learner.end_round()
        run.show_progress()
