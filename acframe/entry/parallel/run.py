"""``ParallelRun``: the learner side of a parallel run, and its two loops.

The learner process owns the experiment folder, the learn-only policy, the replay buffer, the
``Learner`` (hooks, checkpoints) and the measurements; a backend owns the actors and the evaluator.

* ``async`` (off-policy policies): segments are pushed into the replay buffer as they arrive; the learner
  trains whenever the buffer gives a batch and publishes the new weights after every update.
* ``sync`` (on-policy policies, or on request): every actor delivers one segment collected with the
  current version; then the learner makes the policy's gradient steps on all of them at once (one rollout:
  ``Learner.train_rollout``; A2C one step, PPO epochs × minibatches) and publishes — A2C's synchronous actors.
  An off-policy policy in sync mode pushes the segments and makes ``update_per_collect`` updates from the buffer.
"""
from __future__ import annotations

import os
import sys
import time
from collections import deque
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch

from ...config.run_folder import read_run_record, save_run_config
from ...data import make_tree, ttorch
from ...envs import make_env_manager
from ...errors import ConfigError
from ...plot import write_run_curves
from ...policy import Policy, create_policy, env_steps_per_collection, policy_class
from ...registry import BUFFER_REGISTRY
from ...utils import (atomic_write_json, buffer_checkpoint, capture_rng_states, restore_buffer, restore_rng_states,
                      set_global_seed, set_torch_threads)
from ...worker import CheckpointHook, Learner, LearnerHook, LinearLRDecayHook, LogHook, load_checkpoint
from ..run_folder import RunLock, create_exp_dir, plan_exp_dir
from ..serial import Progress
from .backend import Backend, EnvStepBudget
from .messages import VERSION_KEY, EvalRequest, EvalResult, SegmentMessage, numpy_to_tree, weights_to_numpy

BACKENDS = ('local', 'ray', 'inline')
#: seconds the learner waits for data when it has nothing to train on
IDLE_WAIT_S = 0.01
#: seconds between two rows of throughput measurements (tensorboard, progress line)
REPORT_EVERY_S = 2.0
_ROLE_MODES = (('actors', 'collect'), ('learner', 'learn'), ('evaluator', 'eval'))


def check_setup(cfg: Any, backend: str, ray_address: Optional[str]) -> bool:
    """Refuse a set-up that cannot work, before anything starts; returns True for the synchronous mode."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend '{backend}' is not one of {', '.join(BACKENDS)}")
    if ray_address is not None and backend != 'ray':
        raise ConfigError(f"--ray-address is only used by --backend ray (the backend is '{backend}')")
    cls = policy_class(cfg)
    for role, mode in _ROLE_MODES:
        # the class declares its modes; collect and eval have working defaults in Policy, learn has none
        implemented = mode != 'learn' or cls._forward_learn is not Policy._forward_learn
        if mode not in cls.modes or not implemented:
            raise ConfigError(f"policy '{cfg.policy.type}' has no {mode} mode, which the {role} of the parallel "
                              f"pipeline need; its modes are {', '.join(m for m in cls.modes)}")
    actor_num = cfg.parallel.actor_num
    if actor_num is not None and (not isinstance(actor_num, int) or isinstance(actor_num, bool) or actor_num < 1):
        raise ConfigError(f"config key 'parallel.actor_num' = {actor_num!r} must be a number of actors >= 1 (or None: one per core)")
    ratio = cfg.parallel.env_steps_per_update
    if ratio is not None and (not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or ratio < 0):
        raise ConfigError(f"config key 'parallel.env_steps_per_update' = {ratio!r} must be a number >= 0 (or None)")
    if cfg.env.get('domain_randomization', {}).get('enable'):
        raise ConfigError("env.domain_randomization is supported by the serial pipelines only; "
                          "set env.domain_randomization.enable=False or train with -m serial")
    mode = cfg.parallel.sync_mode
    if cls.on_policy and mode == 'async':
        raise ConfigError(f"policy '{cfg.policy.type}' is on-policy: it cannot learn from the stale data of asynchronous "
                          f"actors; set parallel.sync_mode='sync' (or 'auto')")
    sync = mode == 'sync' or (mode == 'auto' and cls.on_policy)
    if cls.on_policy:
        from ..serial_onpolicy import check_no_replay
        check_no_replay(cfg)
    elif not cfg.policy.other.replay_buffer.get('type'):
        raise ConfigError(f"policy '{cfg.policy.type}' learns off-policy from a replay buffer; "
                          f"set policy.other.replay_buffer.type (e.g. 'fifo')")
    return sync


class LagTrackingLearnMode:
    """The learn mode as the parallel learner runs it: measures every gradient step.

    ``version`` is the learner's ``train_iter`` before the step. The lag of a transition is that version minus
    the ``behaviour_version`` that acted; its mean and max over the batch join the policy's info dict (so
    ``LogHook`` logs them as ``learner/policy_lag_*``). Every step adds its info and the transitions it trained
    on (``learn_mode.samples``) to ``stats``.
    """

    def __init__(self, learn_mode: Any, stats: 'ParallelStats') -> None:
        self._mode = learn_mode
        self.stats = stats
        self.version = 0

    def forward(self, batch: ttorch.Tensor) -> Dict[str, float]:
        versions = batch[VERSION_KEY] if VERSION_KEY in batch else None
        if versions is not None:  # the policy sees the batch without the stamp (and the caller's batch keeps it)
            batch = make_tree({k: v for k, v in batch.items() if k != VERSION_KEY})
        info = self._mode.forward(batch)
        if versions is not None:
            lag = (self.version - versions).float()
            info['policy_lag_mean'] = float(lag.mean())
            info['policy_lag_max'] = float(lag.max())
        self.stats.on_update(info, self._mode.samples(batch))
        self.version += 1
        return info

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mode, name)


class ParallelStats:
    """What a parallel run measures: env steps per actor, learner samples, idle time, policy lag."""

    def __init__(self, actor_num: int) -> None:
        self.steps_per_actor = [0] * actor_num
        self.segments = 0
        self.discarded_segments = 0
        self.samples_trained = 0
        self.idle_s = 0.0
        self.lag_sum = 0.0
        self.lag_batches = 0
        self.lag_max = 0.0
        self.max_acting_lag = 0
        self.start = time.perf_counter()
        self.end: Optional[float] = None

    def running_s(self) -> float:
        """Seconds since the workers started (until the loop ended, once it has)."""
        return max(1e-9, (self.end or time.perf_counter()) - self.start)

    def on_segment(self, message: SegmentMessage) -> None:
        self.steps_per_actor[message.actor_id] += message.env_steps
        self.segments += 1
        if message.max_acting_lag is not None:
            self.max_acting_lag = max(self.max_acting_lag, int(message.max_acting_lag))

    def on_update(self, info: Dict[str, float], samples: int) -> None:
        self.samples_trained += samples
        if 'policy_lag_mean' in info:
            self.lag_sum += info['policy_lag_mean']
            self.lag_batches += 1
            self.lag_max = max(self.lag_max, info['policy_lag_max'])

    def rates(self) -> Dict[str, Any]:
        wall = self.running_s()
        per_actor = [steps / wall for steps in self.steps_per_actor]
        return {
            'env_steps_per_s': sum(per_actor),
            'env_steps_per_s_per_actor': per_actor,
            'learner_samples_per_s': self.samples_trained / wall,
            'learner_idle_fraction': min(1.0, self.idle_s / wall),
            'policy_lag_mean': self.lag_sum / self.lag_batches if self.lag_batches else None,
            'policy_lag_max': self.lag_max if self.lag_batches else None,
        }


def resolve_steps_per_update(cfg: Any) -> float:
    """``parallel.env_steps_per_update``, by default the serial off-policy loop's (0: no limit)."""
    if cfg.parallel.env_steps_per_update is not None:
        return float(cfg.parallel.env_steps_per_update)
    updates = cfg.policy.learn.get('update_per_collect', 0)
    if not updates:
        return 0.0
    return env_steps_per_collection(cfg) / updates


def resolve_actor_num(cfg: Any, backend: str, ray: Any = None) -> int:
    """``parallel.actor_num``, or by default one actor per core (Ray: as many as the cluster's CPUs hold)."""
    if cfg.parallel.actor_num is not None:
        return int(cfg.parallel.actor_num)
    if backend == 'ray':
        from .ray_backend import cluster_actor_num
        return cluster_actor_num(ray, cfg)
    return max(1, os.cpu_count() or 1)


class ParallelRun:
    """The learner side of a parallel run: folder, learn-only policy, buffer, learner, evaluation, summary."""

    def __init__(self, cfg: Any, exp_dir: Optional[str], resume: bool, progress: bool, backend: str,
                 ray_address: Optional[str] = None, learner_hooks: Sequence[LearnerHook] = (),
                 config_changes: Sequence[str] = ()) -> None:
        self.start = time.perf_counter()
        self.cfg = cfg
        self.config_changes = list(config_changes)
        self.lock: Optional[RunLock] = None
        self.sync = check_setup(cfg, backend, ray_address)
        self.backend_name = backend
        self._ray, self._owns_ray = None, False
        if backend == 'ray':
            from .ray_backend import connect
            self._ray, self._owns_ray = connect(ray_address)
        self.tb: Any = None
        try:
            self._setup(exp_dir, resume, progress, learner_hooks)
        except BaseException:  # e.g. a corrupt checkpoint to resume from
            if self.tb is not None:
                self.tb.close()
            if self.lock is not None:
                self.lock.release()
            if self._owns_ray:
                from .ray_backend import disconnect
                disconnect(self._ray)
            raise

    def _setup(self, exp_dir: Optional[str], resume: bool, progress: bool, learner_hooks: Sequence[LearnerHook]) -> None:
        cfg = self.cfg
        cfg.parallel.actor_num = resolve_actor_num(cfg, self.backend_name, self._ray)
        set_global_seed(cfg.seed)
        set_torch_threads(cfg.policy.learn.torch_threads)
        self.exp_dir = plan_exp_dir(cfg, exp_dir, resume)
        with make_env_manager(cfg, 'collector', 1, cfg.seed) as probe:  # the spaces the policy is built for
            spaces = (probe.observation_space, probe.action_space)
        self.policy = create_policy(cfg, *spaces, enable_field=('learn',))
        self._weights: Optional[Dict[str, torch.Tensor]] = None
        if not resume:
            create_exp_dir(self.exp_dir)
        self.lock = RunLock(self.exp_dir)
        save_run_config(cfg, self.exp_dir, 'parallel', self._config_changes(resume))
        from tensorboardX import SummaryWriter

        self.tb = SummaryWriter(os.path.join(self.exp_dir, 'log'))
        self.progress = Progress(progress)
        self.buffer = None
        if not policy_class(cfg).on_policy:
            buffer_cfg = dict(cfg.policy.other.replay_buffer)
            self.buffer = BUFFER_REGISTRY.build(buffer_cfg.pop('type'), seed=cfg.seed, **buffer_cfg)
        self.stats = ParallelStats(cfg.parallel.actor_num)
        self.learn_mode = LagTrackingLearnMode(self.policy.learn_mode, self.stats)
        self.log_hook = LogHook(cfg.policy.learn.learner.log_freq, self.tb)
        hooks: List[LearnerHook] = [self.log_hook, CheckpointHook(cfg.policy.learn.learner.save_ckpt_freq,
                                                                   cfg.policy.learn.learner.save_ckpt_every_s)]
        if cfg.policy.learn.get('lr_decay_iters', 0):
            hooks.append(LinearLRDecayHook(cfg.policy.learn.lr_decay_iters))
        hooks += list(learner_hooks)
        self.learner = Learner(self.learn_mode, self.exp_dir, hooks, self.state_provider)
        self.steps_per_update = resolve_steps_per_update(cfg)
        self.segment_steps = env_steps_per_collection(cfg)
        self.env_step = 0
        self.recent_returns: deque = deque(maxlen=20)
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        self.last_eval_iter = -1
        self.eval_pending: Optional[EvalRequest] = None
        self.solved = False
        self.interrupted = False
        self.wall_before = 0.0
        self.startup_s = 0.0
        self._last_report = 0.0
        self._first_iter, self._first_env_step = 0, 0
        incarnations: Optional[List[int]] = None
        if resume:
            incarnations = self.restore(os.path.join(self.exp_dir, 'ckpt', 'ckpt_latest.pth'))
        self.backend = self._make_backend(incarnations)
        self.backend.budget = EnvStepBudget(cfg, self.env_step, self.sync)

    def _config_changes(self, resume: bool) -> List[Dict[str, Any]]:
        changes = read_run_record(self.exp_dir)['changes'] if resume else []
        if self.config_changes:
            changes.append({'keys': list(self.config_changes)})
        return changes

    def warn(self, text: str) -> None:
        """A warning on the console, also with the progress line off."""
        if self.progress.enabled:
            self.progress.message(text)
        else:
            print(text, file=sys.stderr, flush=True)

    def weights(self) -> Dict[str, torch.Tensor]:
        """The learner's current weights, for publishing.

        The base ``Policy.get_weights`` is the model's state dict, whose tensors are the parameters and buffers
        themselves (updated in place by the optimizer), so it is taken once; a policy that overrides
        ``get_weights`` is asked every time.
        """
        if type(self.policy).get_weights is not Policy.get_weights:
            return self.policy.get_weights()
        if self._weights is None:
            self._weights = self.policy.get_weights()
        return self._weights

    def _make_backend(self, incarnations: Optional[List[int]]) -> Backend:
        weights_fn, warn = self.weights, self.warn
        if self.backend_name == 'local':
            from .local import LocalBackend
            return LocalBackend(self.cfg, weights_fn, warn, self.sync, incarnations)
        if self.backend_name == 'inline':
            from .inline import InlineBackend
            return InlineBackend(self.cfg, weights_fn, warn, self.sync, incarnations)
        from .ray_backend import RayBackend
        return RayBackend(self.cfg, weights_fn, warn, self.sync, incarnations, self._ray, self._owns_ray)

    # ---- checkpoints -------------------------------------------------------------------------------
    def state_provider(self) -> Dict[str, Any]:
        save_buffer = self.buffer is not None and self.cfg.policy.other.replay_buffer.get('save_in_checkpoint', False)
        backend = getattr(self, 'backend', None)
        return {
            'env_step': self.env_step,
            'evaluator': {'best_return': self.best_return, 'last_return': self.last_return,
                          'last_eval_iter': self.last_eval_iter},
            **buffer_checkpoint(self.buffer, save_buffer),
            'rng': capture_rng_states(),
            'wall_s': self.wall_before + time.perf_counter() - self.start,
            'recent_returns': list(self.recent_returns),
            'parallel': {'backend': self.backend_name, 'actor_num': int(self.cfg.parallel.actor_num),
                         'actor_incarnations': list(backend.incarnations) if backend is not None else None},
        }

    def restore(self, path: str) -> Optional[List[int]]:
        """Continue from a checkpoint; returns the actors' incarnation counters (fresh env seeds after a resume)."""
        state = load_checkpoint(path)
        self.learner.load_checkpoint_state(state)
        self.learn_mode.version = self.learner.train_iter
        self.env_step = int(state.get('env_step', 0))
        evaluator = state.get('evaluator') or {}
        self.best_return = evaluator.get('best_return', -float('inf'))
        self.last_return = evaluator.get('last_return')
        self.last_eval_iter = evaluator.get('last_eval_iter', -1)
        restore_buffer(self.buffer, state)
        restore_rng_states(state['rng'])
        self.wall_before = state.get('wall_s', 0.0)
        self.recent_returns.extend(state.get('recent_returns', []))
        self.progress.message(f"[acframe] resumed {self.exp_dir} at env step {self.env_step}, train iter {self.learner.train_iter}")
        self._first_iter, self._first_env_step = self.learner.train_iter, self.env_step
        incarnations = (state.get('parallel') or {}).get('actor_incarnations')
        return list(incarnations) if incarnations else None

    # ---- data --------------------------------------------------------------------------------------
    def take(self, messages: List[SegmentMessage]) -> List[ttorch.Tensor]:
        """Account for arrived segments (steps, returns, lag); push them into the buffer, or return them (sync)."""
        kept = []
        for message in messages:
            self.env_step += message.env_steps
            self.stats.on_segment(message)
            for ret in message.episode_returns:
                self.recent_returns.append(ret)
                self.tb.add_scalar('collector/episode_return', ret, self.env_step)
            samples = numpy_to_tree(message.samples)
            if self.buffer is not None and not self.sync:
                self.buffer.push(samples)
            else:
                kept.append(samples)
        return kept

    def wait(self, timeout: float = IDLE_WAIT_S) -> List[ttorch.Tensor]:
        """Idle until data arrives (at most ``timeout``); the time counts as learner idle time."""
        start = time.perf_counter()
        messages = self.backend.receive(timeout)
        self.stats.idle_s += time.perf_counter() - start
        return self.take(messages)

    def train(self, batch: ttorch.Tensor) -> None:
        """One gradient step (measured by ``LagTrackingLearnMode``)."""
        self.learner.train(batch)

    def train_rollout(self, rollout: ttorch.Tensor) -> None:
        """On-policy: the gradient steps the policy makes on one rollout (``Learner.train_rollout``), within the budget."""
        self.learner.train_rollout(self.learn_mode.prepare(rollout), 0, self.cfg.max_train_iter)

    def publish(self) -> None:
        self.backend.publish(self.learner.train_iter)

    def learner_behind(self) -> bool:
        """True when the learner has taken in more env steps per update than ``parallel.env_steps_per_update``."""
        if not self.steps_per_update:
            return False
        allowed = (self.learner.train_iter - self._first_iter + 1) * self.steps_per_update + self.segment_steps
        return self.env_step - self._first_env_step > allowed

    def budget_left(self) -> bool:
        return self.env_step < self.cfg.max_env_step and self.learner.train_iter < self.cfg.max_train_iter

    # ---- evaluation --------------------------------------------------------------------------------
    def eval_due(self) -> bool:
        if self.eval_pending is not None:
            return False
        if self.last_eval_iter < 0:
            return True
        freq = self.cfg.policy.eval.evaluator.eval_freq
        return freq > 0 and self.learner.train_iter - self.last_eval_iter >= freq

    def request_eval(self) -> None:
        it = self.learner.train_iter
        self.eval_pending = EvalRequest(it, it, self.env_step, weights_to_numpy(self.policy.get_weights()))
        self.last_eval_iter = it
        self.backend.request_eval(self.eval_pending)

    def handle_evals(self) -> bool:
        """Log finished evaluations; True when one reached the stop value."""
        while True:
            result = self.backend.eval_result()
            if result is None:
                return self.solved
            self._eval_done(result)

    def _eval_done(self, result: EvalResult) -> None:
        request, self.eval_pending = self.eval_pending, None
        self.last_return = result.mean
        self.tb.add_scalar('evaluator/return_mean', result.mean, result.env_step)
        self.tb.add_scalar('evaluator/return_mean_by_iter', result.mean, result.train_iter)
        if result.mean > self.best_return:
            self.best_return = result.mean
            if request is not None and request.version == result.version:
                self.learner.save_checkpoint('ckpt_best.pth', {
                    'policy': {'model': {k: torch.from_numpy(v) for k, v in request.weights.items()}},
                    'train_iter': result.train_iter, 'env_step': result.env_step, 'eval_return': result.mean})
        self.progress.message(
            f"[eval] env_step {result.env_step} iter {result.train_iter}: return {result.mean:.2f} ± {result.std:.2f} "
            f"(best {self.best_return:.2f}, stop {self.cfg.env.stop_value})")
        if result.solved:
            self.solved = True
        self.learner.after_eval(result.train_iter, result.env_step, result.mean, self.best_return, result.solved)

    def final_eval(self) -> None:
        """Wait for the evaluation under way, then evaluate the final weights unless that one already did."""
        while self.eval_pending is not None:
            self.backend.receive(0.05)
            self.handle_evals()
        if not self.solved and self.last_eval_iter != self.learner.train_iter:
            self.request_eval()
            while self.eval_pending is not None:
                self.backend.receive(0.05)
                self.handle_evals()

    # ---- reporting ---------------------------------------------------------------------------------
    def report(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last_report < REPORT_EVERY_S:
            return
        self._last_report = now
        rates = self.stats.rates()
        step = self.env_step
        self.tb.add_scalar('parallel/env_steps_per_s', rates['env_steps_per_s'], step)
        for actor_id, rate in enumerate(rates['env_steps_per_s_per_actor']):
            self.tb.add_scalar(f'parallel/actor{actor_id}_env_steps_per_s', rate, step)
        self.tb.add_scalar('parallel/learner_samples_per_s', rates['learner_samples_per_s'], step)
        self.tb.add_scalar('parallel/learner_idle_fraction', rates['learner_idle_fraction'], step)
        self.tb.add_scalar('parallel/actor_restarts', self.backend.restarts, step)
        recent = f"{np.mean(self.recent_returns):.1f}" if self.recent_returns else '-'
        last_eval = f"{self.last_return:.1f}" if self.last_return is not None else '-'
        lag = f"{rates['policy_lag_mean']:.1f}" if rates['policy_lag_mean'] is not None else '-'
        per_actor = '/'.join(f"{r:,.0f}" for r in rates['env_steps_per_s_per_actor'])
        left = max(0, self.cfg.max_env_step - self.env_step)
        self.progress.update(
            f"env_step {self.env_step} | {rates['env_steps_per_s']:,.0f} steps/s (actors {per_actor}) | "
            f"iter {self.learner.train_iter} | {rates['learner_samples_per_s']:,.0f} samples/s | "
            f"idle {rates['learner_idle_fraction']:.0%} | lag {lag} | train return {recent} | eval return {last_eval} | "
            f"budget left {left} steps", force=force)

    def finish(self) -> Dict[str, Any]:
        """Final checkpoint and summary.json (the workers are stopped already); returns the summary."""
        self.learner.save_checkpoint('ckpt_latest.pth')
        wall = self.wall_before + time.perf_counter() - self.start
        rates = self.stats.rates()
        summary = {
            'solved': bool(self.solved),
            'interrupted': bool(self.interrupted),
            'env_steps': int(self.env_step),
            'train_iters': int(self.learner.train_iter),
            'wall_s': round(wall, 3),
            'startup_s': round(self.startup_s, 3),
            'best_eval_return': None if self.best_return == -float('inf') else self.best_return,
            'last_eval_return': self.last_return,
            'stop_value': self.cfg.env.stop_value,
            'seed': int(self.cfg.seed),
            'policy': self.cfg.policy.type,
            'env_id': self.cfg.env.env_id,
            'exp_dir': os.path.abspath(self.exp_dir),
            'backend': self.backend_name,
            'sync_mode': 'sync' if self.sync else 'async',
            'actor_num': int(self.cfg.parallel.actor_num),
            'env_steps_per_s': round(rates['env_steps_per_s'], 1),
            'env_steps_per_s_per_actor': [round(r, 1) for r in rates['env_steps_per_s_per_actor']],
            'learner_samples_per_s': round(rates['learner_samples_per_s'], 1),
            'samples_trained': int(self.stats.samples_trained),
            'learner_idle_fraction': round(rates['learner_idle_fraction'], 4),
            'policy_lag_mean': None if rates['policy_lag_mean'] is None else round(rates['policy_lag_mean'], 3),
            'policy_lag_max': rates['policy_lag_max'],
            'max_policy_lag': int(self.cfg.parallel.max_policy_lag),
            'max_acting_lag': int(self.stats.max_acting_lag),
            'actor_restarts': int(self.backend.restarts),
            'worker_failures': list(self.backend.failures),
            'segments': int(self.stats.segments),
            'discarded_segments': int(self.stats.discarded_segments),
        }
        atomic_write_json(os.path.join(self.exp_dir, 'summary.json'), summary)
        self.report(force=True)
        self.close_logs()
        write_run_curves(self.exp_dir, self.progress.message)
        self.progress.result(
            f"[acframe] {'solved' if self.solved else 'interrupted' if self.interrupted else 'stopped'}: "
            f"{summary['env_steps']} env steps, {summary['train_iters']} iters, {summary['wall_s']:.1f} s, "
            f"{summary['env_steps_per_s']:,.0f} env steps/s over {summary['actor_num']} "
            f"actor{'s' if summary['actor_num'] != 1 else ''}, "
            f"learner idle {summary['learner_idle_fraction']:.0%}, best eval return {summary['best_eval_return']} -> {self.exp_dir}")
        return summary

    def close_logs(self) -> None:
        self.progress.close()
        self.tb.close()
        if self.lock is not None:
            self.lock.release()

    def trained_policy(self) -> Policy:
        """A policy with every mode of its class, holding the learner's model and optimizer state."""
        modes = policy_class(self.cfg).modes
        policy = create_policy(self.cfg, enable_field=modes, model=self.policy.model)
        if 'learn' in modes:
            policy.learn_mode.load_state_dict(self.policy.learn_mode.state_dict())
        return policy


def async_loop(run: ParallelRun) -> None:
    """Train whenever the buffer gives a batch, publish after every update, take segments as they come.

    While the learner is behind (``ParallelRun.learner_behind``) it leaves the segments waiting, so the
    actors wait too; when the buffer has no batch it waits for segments (idle time).
    """
    batch_size = run.cfg.policy.learn.batch_size
    while True:
        if not run.learner_behind():
            run.take(run.backend.receive(0.0))
        if run.handle_evals() or not run.budget_left():
            return
        if run.eval_due():
            run.request_eval()
        batch = run.buffer.sample(batch_size) if run.backend.may_train(run.learner.train_iter + 1) else None
        if batch is None:
            run.wait()
            continue
        run.train(batch)
        run.publish()
        run.learner.end_round()
        run.report()


def sync_loop(run: ParallelRun) -> None:
    """Rounds: one segment from every actor, all collected with the current weights; then update and publish."""
    updates = int(run.cfg.policy.learn.get('update_per_collect', 1))
    batch_size = run.cfg.policy.learn.get('batch_size', 1)
    actor_num = int(run.cfg.parallel.actor_num)
    while True:
        if run.handle_evals() or not run.budget_left():
            return
        if run.eval_due():
            run.request_eval()
        version = run.learner.train_iter
        round_samples: Dict[int, ttorch.Tensor] = {}
        while len(round_samples) < actor_num:
            start = time.perf_counter()
            messages = run.backend.receive(IDLE_WAIT_S)
            run.stats.idle_s += time.perf_counter() - start
            for message in messages:
                fresh = message.behaviour_version == version and message.actor_id not in round_samples
                samples = run.take([message])
                if fresh:
                    round_samples[message.actor_id] = samples[0]
                else:  # a restarted actor's duplicate, or data of an older version
                    run.stats.discarded_segments += 1
        trees = [round_samples[i] for i in sorted(round_samples)]
        if run.buffer is None:  # on-policy: the time-major segments side by side are one rollout
            run.train_rollout(ttorch.cat(trees, dim=1))
        else:
            for tree in trees:
                run.buffer.push(tree)
            for _ in range(updates):
                batch = run.buffer.sample(batch_size) if run.learner.train_iter < run.cfg.max_train_iter else None
                if batch is None:
                    break
                run.train(batch)
        run.publish()
        run.learner.end_round()
        run.report()
