"""Asynchronous training, A3C's shape (Mnih et al. 2016; ChainerRL's ``AsyncAgent``): ``acframe -m async -c CONFIG``
or ``async_pipeline(...)``.

``parallel.async_worker_num`` = N worker processes train one model: the policy's model and its optimizer's statistics
(A3C's shared RMSprop/Adam: ``acframe.optim.share_optimizer_state``; one step counter per parameter, shared too) live in
shared memory (``Policy.share_memory``). Each worker runs the on-policy loop of ``serial_pipeline_onpolicy`` on its own:
it collects a rollout with its own ``env.collector_env_num`` envs (worker w's seeded ``seed + w·E, ...``) and its own
RNG stream, computes its gradient on it with the weights as they are, and applies it to the shared weights with the
shared optimizer — without a lock (Hogwild: a worker's rollout may have been collected with weights another worker
has moved since). Batch keys are per worker; the budgets are the run's: ``max_env_step`` counts every worker's env
steps, ``max_train_iter`` every worker's gradient steps.

Worker 0 is this process, a ``SerialRun``: besides training it evaluates (the shared weights, while the others go on
training), logs (its own losses; every worker's episode returns), writes the run folder and checkpoints (the shared
weights and optimizer state, the counters and its own envs; the other workers' envs restart from a reset on
``--resume``). Workers 1..N-1 are forked from it once the run folder is ready and write nothing.

A worker that dies or fails ends the run at worker 0's next turn with one line naming it (``AsyncWorkerError``); a
worker whose parent is gone exits. Ctrl-C and SIGTERM reach worker 0, which stops the others and writes the final
checkpoint and summary.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import torch

from ..config.compile import ConfigInput
from ..envs import make_env_manager, manager_class
from ..errors import AcframeError, ConfigError
from ..policy import policy_class
from ..signals import sigterm_as_interrupt
from ..worker import Learner, LearnerHook, SampleCollector
from .data_parallel import _watch_parent
from .parallel.local import _exit_reason
from .run_base import check_no_replay, compile_run_config
from .serial import SerialRun

#: seconds worker 0 waits for the other workers to finish their turn once the run is over (then kills them)
JOIN_TIMEOUT_S = 30.0
#: the RNG stream of worker w is seeded ``seed + WORKER_SEED_STRIDE · w``
WORKER_SEED_STRIDE = 1_000_003


class AsyncWorkerError(AcframeError, RuntimeError):
    """An async worker died or failed."""


def cpu_cores() -> int:
    """CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)


def check_async(cfg: Any) -> None:
    """Refuse, in one line naming the key and the fix, what asynchronous training cannot run (before anything is
    built or written)."""
    policy_type = cfg.policy.type
    if not getattr(policy_class(cfg), 'async_training', False):
        raise ConfigError(f"policy '{policy_type}' does not train asynchronously (-m async is A3C: an on-policy policy "
                          f"with async_training, e.g. policy type 'a2c'); train '{policy_type}' with -m serial_onpolicy "
                          f"or -m serial, -m parallel, or parallel.learner_num=N")
    num = int(cfg.parallel.async_worker_num)
    cores = cpu_cores()
    if num > cores:
        raise ConfigError(f"parallel.async_worker_num={num} async workers need a CPU core each and this process may "
                          f"use {cores}; set parallel.async_worker_num <= {cores}")
    if not sys.platform.startswith('linux'):
        raise ConfigError("-m async forks its workers, which needs Linux; use -m serial_onpolicy or -m parallel here")
    refused = [
        (cfg.policy.get('cuda'), 'policy.cuda', "the shared model lives in CPU shared memory; set policy.cuda=False"),
        (int(cfg.parallel.get('learner_num', 1)) > 1, 'parallel.learner_num',
         "async workers and data-parallel learners are two ways to train on several processes; set "
         "parallel.learner_num=1"),
        (int(cfg.policy.learn.get('torch_threads', 0) or 0) > 1, 'policy.learn.torch_threads',
         "a worker forked from a process whose thread pool ran hangs; set policy.learn.torch_threads=1"),
        (not getattr(manager_class(cfg.env.manager), 'fork_safe', True), 'env.manager',
         f"'{cfg.env.manager}' does not survive a fork; use the 'sync' or 'subprocess' env manager"),
        (cfg.policy.learn.get('learner_thread'), 'policy.learn.learner_thread', "set it to False"),
        (cfg.policy.learn.get('compile', 'off') != 'off', 'policy.learn.compile', "set it to 'off'"),
        (cfg.env.domain_randomization.get('enable'), 'env.domain_randomization.enable', "set it to False"),
        (cfg.policy.model.get('obs_norm'), 'policy.model.obs_norm',
         "its running statistics would differ per worker; set it to False"),
        (cfg.policy.learn.get('reward_norm'), 'policy.learn.reward_norm',
         "its running statistics would differ per worker; set it to False"),
        (cfg.policy.learn.get('lr_decay_iters'), 'policy.learn.lr_decay_iters',
         "each worker's optimizer holds its own learning rate; set it to 0"),
    ]
    for value, key, fix in refused:
        if value:
            raise ConfigError(f"{key} does not run with -m async (asynchronous workers) yet: {fix}, or train with "
                              f"-m serial_onpolicy")


class AsyncRun(SerialRun):
    """Worker 0 of an asynchronous run: a ``SerialRun`` whose counters are every worker's (shared), which forks
    workers 1..N-1 (``start_workers``), watches them each turn (``check_workers``) and stops them at the end."""

    def __init__(self, cfg: Any, exp_dir: Optional[str] = None, resume: bool = False, progress: bool = True,
                 learner_hooks: Sequence[LearnerHook] = (), model: Optional[torch.nn.Module] = None,
                 config_changes: Sequence[str] = ()) -> None:
        context = multiprocessing.get_context('fork')
        self.context = context
        self.worker_num = int(cfg.parallel.async_worker_num)
        #: every worker's env steps and gradient steps (budgets, evaluation and checkpoint schedules count them)
        self.shared_env_step = context.Value('q', 0)
        self.shared_train_iter = context.Value('q', 0)
        self.stop_flag = context.Value('b', 0, lock=False)
        self.errors = context.SimpleQueue()  # (worker, one line) from a worker that failed
        self.returns = context.Queue()  # the other workers' episode returns, for the progress line and the logs
        self.children: List[Any] = []
        super().__init__(cfg, exp_dir, resume, progress, learner_hooks, model, use_buffer=False, mode='async',
                         config_changes=config_changes)
        self.shared_train_iter.value = int(self.learner.train_iter)

    # ---- counters ----------------------------------------------------------------------------------
    @property
    def env_step(self) -> int:
        return int(self.shared_env_step.value)

    @property
    def budget_pipeline(self) -> str:
        return 'serial_onpolicy'  # every worker: the on-policy loop's arithmetic

    @property
    def collecting_processes(self) -> int:
        return self.worker_num

    def _restore_extra(self, state: Dict[str, Any]) -> None:
        super()._restore_extra(state)
        self.shared_env_step.value = int(state.get('env_step', 0))

    def _extra_summary(self, wall: float) -> Dict[str, Any]:
        return {'async_worker_num': self.worker_num}

    def collect(self) -> Any:
        """Worker 0's segment; its env steps join the shared count, the other workers' returns join the logs."""
        self._take_returns()
        before = self.collector.env_step
        try:
            return super().collect()
        finally:
            add(self.shared_env_step, self.collector.env_step - before)

    def _take_returns(self) -> None:
        while True:
            try:
                returns = self.returns.get_nowait()
            except (queue.Empty, OSError, EOFError, ValueError):
                return
            self.recent_returns.extend(returns)
            self._unlogged_returns += returns

    def train_rollout(self) -> Optional[int]:
        """Worker 0's gradient steps on its pending rollout (to the shared weights); the shared count goes up by
        them and the learner's counter takes the shared count."""
        before = self.learner.train_iter
        next_step = self.learner.train_rollout(self.pending_batch, self.rollout_step, self.cfg.max_train_iter)
        self.learner.train_iter = add(self.shared_train_iter, self.learner.train_iter - before)
        return next_step

    def sync(self) -> None:
        """The start of a turn: a worker that died or failed ends the run; the learner counts every worker's steps."""
        self.check_workers()
        self.learner.train_iter = max(int(self.learner.train_iter), int(self.shared_train_iter.value))

    # ---- the workers -------------------------------------------------------------------------------
    def start_workers(self) -> None:
        """Share the model and the optimizer's statistics, then fork workers 1..N-1."""
        self.policy.share_memory()
        parent = os.getpid()
        for worker in range(1, self.worker_num):
            child = self.context.Process(target=_worker_main, args=(self, worker, parent), name=f'acframe-async{worker}')
            child.start()
            self.children.append(child)

    def check_workers(self) -> None:
        for worker, child in enumerate(self.children, 1):
            if child.exitcode is None:
                continue
            failures = self._failures()
            cause = (f"async worker {worker} failed: {failures[worker]}" if worker in failures
                     else f"async worker {worker} (pid {child.pid}) {_exit_reason(child)}")
            raise AsyncWorkerError(f"{cause} (at train iter {self.learner.train_iter}); the run stopped, --resume "
                                   f"{self.exp_dir} continues it from its last checkpoint")

    def _failures(self) -> Dict[int, str]:
        found: Dict[int, str] = {}
        try:
            while not self.errors.empty():
                worker, line = self.errors.get()
                found.setdefault(int(worker), str(line))
        except (OSError, EOFError, ValueError):
            pass
        return found

    def _stop_workers(self) -> None:
        """Tell the workers to stop after their turn; wait for them (``JOIN_TIMEOUT_S``), then kill what is left."""
        self.stop_flag.value = 1
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for child in self.children:
            child.join(max(0.0, deadline - time.monotonic()))
        self.kill_workers()

    def kill_workers(self) -> None:
        self.stop_flag.value = 1
        for child in self.children:
            if child.is_alive():
                child.kill()
                child.join(5.0)

    def _stopping_note(self) -> str:
        return 'stopping the async workers, '


def add(counter: Any, amount: int) -> int:
    """``counter += amount`` under the counter's lock; the new value."""
    with counter.get_lock():
        counter.value += int(amount)
        return int(counter.value)


def _worker_main(run: AsyncRun, worker: int, parent: int) -> None:
    """Worker ``worker`` > 0, forked from worker 0: train until the run stops; its error goes back as one line."""
    from ..cli import one_line
    from ..utils import set_global_seed, set_torch_threads

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches every process: worker 0 stops the others
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not worker 0's handler (it finishes worker 0's run)
    code = 0
    try:
        set_torch_threads(run.cfg.policy.learn.torch_threads)
        _watch_parent(parent)
        set_global_seed((int(run.cfg.seed) + WORKER_SEED_STRIDE * worker) % 2_147_483_647)
        worker_loop(run, worker)
    except BaseException as exc:  # noqa: BLE001 - reported by worker 0, in one line
        run.errors.put((worker, one_line(exc)))
        code = 1
    finally:
        sys.stdout.flush()
        os._exit(code)  # nothing of worker 0's (loggers, lock, envs) is closed or flushed here


def worker_loop(run: AsyncRun, worker: int) -> None:
    """The on-policy loop of one worker > 0 on the shared policy: collect a rollout with its own envs, make its
    gradient steps on it (to the shared weights and optimizer state), add both to the shared counts; until the run
    stops (a spent budget: it waits for worker 0 to end the run)."""
    cfg = run.cfg
    num_envs = int(cfg.env.collector_env_num)
    env = make_env_manager(cfg, 'collector', num_envs, cfg.seed + worker * num_envs)
    policy = run.policy
    collector = SampleCollector(env, policy.collect_mode, cfg.policy.collect.n_sample)
    learner = Learner(policy.learn_mode)
    while not run.stop_flag.value:
        left = int(cfg.max_env_step) - run.env_step
        if left <= 0 or run.shared_train_iter.value >= cfg.max_train_iter:
            time.sleep(0.02)
            continue
        steps = min(collector.steps_per_env, max(1, -(-left // (num_envs * run.worker_num))))
        before = collector.env_step
        segment = collector.collect(steps)
        add(run.shared_env_step, collector.env_step - before)
        returns = collector.pop_episode_stats()['returns']
        if returns:
            run.returns.put([float(r) for r in returns])
        plan = policy.learn_mode.prepare(policy.collect_mode.get_train_sample(segment))
        before = learner.train_iter
        learner.train_rollout(plan)
        add(run.shared_train_iter, learner.train_iter - before)


def _async_loop(run: AsyncRun) -> None:
    """Worker 0: start the others; then, as the on-policy loop, evaluate when due, collect, learn — each turn first
    checking on the other workers and taking the shared counts."""
    run.start_workers()
    get_train_sample = run.policy.collect_mode.get_train_sample
    prepare = run.policy.learn_mode.prepare
    while True:
        run.sync()
        if run.done():
            break
        if run.pending_batch is None:
            run.pending_batch = prepare(get_train_sample(run.collect()))
            run.rollout_step = 0
        next_step = run.train_rollout()
        run.pending_batch, run.rollout_step = (None, 0) if next_step is None else (run.pending_batch, next_step)
        run.sync()
        run.learner.end_round()
        run.show_progress()


def async_pipeline(
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
    """Train an on-policy policy (A2C: A3C) with ``parallel.async_worker_num`` Hogwild workers on one shared model.

    The arguments are ``serial_pipeline``'s; the learner hooks run in worker 0 (this process). Returns the trained
    policy; ``summary.json`` in the experiment folder says how it went.
    """
    cfg, exp_dir, changes = compile_run_config(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                               'async', accept_config_change)
    check_async(cfg)
    check_no_replay(cfg)
    with sigterm_as_interrupt():
        run = AsyncRun(cfg, exp_dir, resume is not None, progress, learner_hooks, model, config_changes=changes)
        try:
            run.policy.summary = run.drive(_async_loop)
        finally:
            run.kill_workers()
    return run.policy
