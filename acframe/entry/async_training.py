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

ACER (an off-policy policy with ``async_training``; ChainerRL's async ACER) runs the same way with the serial
pipeline's off-policy loop (``serial._off_policy_loop``) in every worker: each worker collects a segment of t_max =
``unroll_len`` steps per env with its own envs, pushes it to **its own** episodic replay buffer (worker w's seeded
``seed + WORKER_SEED_STRIDE · w``), and makes the on-policy update on it plus the ``replay_ratio`` replayed updates from
its own buffer, on the shared weights with the shared optimizer; the average policy network is shared too
(``ACERPolicy.share_memory``), so every worker's update moves it. ``replay_buffer_size`` and ``replay_start_size``
are per worker. A checkpoint holds worker 0's buffer (with ``replay_buffer.save_in_checkpoint``, as the serial
pipeline); on ``--resume`` the other workers' buffers start empty, like their envs.

A worker that dies or fails ends the run at worker 0's next turn with one line naming it (``AsyncWorkerError``); a
worker whose parent is gone exits. Ctrl-C and SIGTERM reach worker 0, which stops the others and writes the final
checkpoint and summary.
"""
from __future__ import annotations

import math
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
from ..policy import env_steps_per_collection, policy_class
from ..signals import (TERMINATING, Terminated, continues, held_while_a_child_starts, interrupt_for,
                       release_held_signals, sigterm_as_interrupt, watch_continues)
from ..utils import bounded_lock, cpu_cores
from ..worker import Learner, LearnerHook, SampleCollector
from .data_parallel import PROCESS_SEED_STRIDE, _watch_parent, per_process_state_refusals, process_seed
from .parallel.local import _exit_reason
from .budget import CollectionPlan
from .run_base import build_buffer, check_no_replay, compile_run_config, given_model_decides
from .run_folder import resume_command
from .serial import SerialRun, _off_policy_loop

#: seconds worker 0 waits for the other workers to finish their turn once the run is over (then kills them)
JOIN_TIMEOUT_S = 30.0
#: the RNG stream of worker w is seeded ``seed + WORKER_SEED_STRIDE · w`` (``data_parallel.process_seed``)
WORKER_SEED_STRIDE = PROCESS_SEED_STRIDE


class AsyncWorkerError(AcframeError, RuntimeError):
    """An async worker died or failed. The shared model and worker 0 are sound (``learner_sound``): the run writes its
    final checkpoint before the error, unless the model holds NaN/inf."""

    learner_sound = True

    def __init__(self, message: str, resume_hint: str = '') -> None:
        super().__init__(message + resume_hint)
        self.plain = message  # without the hint that the final checkpoint's note replaces


def check_async(cfg: Any, resume: bool = False) -> None:
    """Refuse, in one line naming the key and the fix, what asynchronous training cannot run (before anything is
    built or written)."""
    policy_type = cfg.policy.type
    cls = policy_class(cfg)
    if not getattr(cls, 'async_training', False):
        learners = int(cfg.parallel.get('learner_num', 1))
        serial = f"-m {'serial_onpolicy' if cls.on_policy else 'serial'}"
        ways = (f"{serial} or -m parallel (where parallel.learner_num={learners} runs as data-parallel learners)"
                if learners > 1 else f"{serial}, -m parallel, or parallel.learner_num=N")
        raise ConfigError(f"policy '{policy_type}' does not train asynchronously (-m async is A3C and async ACER: a "
                          f"policy with async_training, policy type 'a2c' or 'acer'); train '{policy_type}' with {ways}")
    num = int(cfg.parallel.async_worker_num)
    if not cls.on_policy and not resume:
        check_worker_replay_budget(cfg, num)
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
         f"'{cfg.env.manager}' does not survive a fork; set env.manager='sync' or 'async' (its envs in subprocesses)"),
        (cfg.policy.learn.get('lr_decay_iters'), 'policy.learn.lr_decay_iters',
         "each worker's optimizer holds its own learning rate; set it to 0"),
    ]
    shared = per_process_state_refusals(cfg)
    for key, fix in [(key, fix) for value, key, fix in refused if value] + shared:
        raise ConfigError(f"{key} does not run with -m async (asynchronous workers) yet: {fix}, or train with "
                          f"-m {'serial_onpolicy' if cls.on_policy else 'serial'}")


def check_worker_replay_budget(cfg: Any, num: int) -> None:
    """Each async worker fills its own replay buffer with its share of ``max_env_step``: refuse a budget whose share
    never reaches what the learn mode needs of one buffer (``Policy.learn_needs``, e.g. ACER's ``replay_start_size``)."""
    plan = CollectionPlan.of(cfg, 'serial')
    share = int(cfg.max_env_step) // num
    for need in policy_class(cfg).learn_needs(cfg.policy):
        stored = plan.learner_env_steps(share)
        if need.scope == 'budget' and stored < need.env_steps:
            reach = f", of which {stored} reach its replay buffer," if stored < share else " for its own replay buffer"
            raise ConfigError(f"max_env_step={cfg.max_env_step} gives each of the parallel.async_worker_num={num} "
                              f"async workers about {share} env steps{reach} but {need.wants} "
                              f"{need.env_steps} env steps in one buffer: the run would make 0 {need.lacks}; raise "
                              f"max_env_step to at least {plan.budget_for(need.env_steps) * num}, lower "
                              f"parallel.async_worker_num, or {need.fix}")


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
        self.shared_env_step = SharedCounter(context, self.worker_num)
        self._uncounted_from: Optional[int] = None  # worker 0's collector count before its collection in progress
        self.shared_train_iter = SharedCounter(context, self.worker_num)
        #: each worker's segment being collected (env steps), not yet in ``shared_env_step``: the budget's last
        #: segments are planned with them (``claim_segment``)
        self.in_flight = SharedCounter(context, self.worker_num)
        self.stop_flag = context.Value('b', 0, lock=False)
        self.worker_signal = context.Value('i', 0, lock=False)  # the SIGTERM/SIGHUP/SIGQUIT a worker was stopped by
        self.errors = context.SimpleQueue()  # (worker, one line) from a worker that failed
        self.returns = context.Queue()  # the other workers' episode returns, for the progress line and the logs
        self.children: List[Any] = []
        #: on-policy (A3C: each worker trains on its rollout) or off-policy (async ACER: each worker's own replay)
        self.on_policy = bool(policy_class(cfg).on_policy)
        super().__init__(cfg, exp_dir, resume, progress, learner_hooks, model, use_buffer=not self.on_policy,
                         mode='async', config_changes=config_changes)
        self.shared_train_iter.set(int(self.learner.train_iter))
        self.learner.hooks.insert(0, SharedCount(self, 0))  # every other hook sees every worker's steps
        self.step_claims = self.learner.step_claims = StepClaims(context, int(self.learner.train_iter))
        self._wait_noted = False  # the wait for the others' segments at the budget's end was reported

    # ---- counters ----------------------------------------------------------------------------------
    @property
    def env_step(self) -> int:
        return int(self.shared_env_step.value)

    @property
    def budget_pipeline(self) -> str:
        return 'serial_onpolicy' if self.on_policy else 'serial'  # every worker: the loop it runs

    @property
    def collecting_processes(self) -> int:
        return self.worker_num

    def _restore_extra(self, state: Dict[str, Any]) -> None:
        super()._restore_extra(state)
        self.shared_env_step.set(int(state.get('env_step', 0)))

    def _extra_summary(self, wall: float) -> Dict[str, Any]:
        return {'async_worker_num': self.worker_num}

    def _segment_steps(self) -> int:
        return claim_segment(self, 0, self.collector)

    def collect(self) -> Any:
        """Worker 0's segment; its env steps join the shared count, the other workers' returns join the logs."""
        self._take_returns()
        self._uncounted_from = self.collector.env_step
        try:
            return super().collect()
        finally:
            self._count_collection(0)  # (a collection that failed: the steps it made)
            self.in_flight.put(0, 0)

    def _count_collection(self, before: int) -> int:
        """Worker 0's new steps join the shared count as soon as its collector returns; they are the collection's
        (the other workers' steps, added meanwhile, are theirs)."""
        if self._uncounted_from is None:
            return 0
        made = self.collector.env_step - self._uncounted_from
        self.shared_env_step.add(0, made)
        self._uncounted_from = None
        return made

    def _take_returns(self) -> None:
        while True:
            try:
                returns = self.returns.get_nowait()
            except (queue.Empty, OSError, EOFError, ValueError):
                return
            self.recent_returns.extend(returns)
            self._unlogged_returns += returns

    def train_rollout(self) -> Optional[int]:
        """Worker 0's gradient steps on its pending rollout (to the shared weights; ``SharedCount`` counts them)."""
        return self.learner.train_rollout(self.pending_batch, self.rollout_step, self.cfg.max_train_iter,
                                          on_step=self.set_rollout_step)

    def sync(self) -> None:
        """The start of a turn: a worker that died or failed ends the run; the learner counts every worker's steps."""
        self.check_workers()
        self._take_shared_count()

    def _take_shared_count(self) -> None:
        self.learner.train_iter = max(int(self.learner.train_iter), int(self.shared_train_iter.value))

    def budget_left(self) -> bool:
        """``RunBase.budget_left`` on every worker's gradient steps so far (the other workers go on while this one
        evaluates, so the count taken at the start of the turn may be behind); where the other workers' segments in
        flight take what is left of ``max_env_step``, it waits for them to be counted (the run then ends), within the
        time their env steps may take (``_check_segments_in_flight``: a worker whose env is stuck ends the run)."""
        waited, stops, claims_waited = None, continues(), time.monotonic()
        watch_continues()
        while True:
            self._take_shared_count()
            if not super().budget_left():
                return False
            if (self.step_claims.spent(int(self.cfg.max_train_iter))
                    and time.monotonic() - claims_waited < CLAIMED_STEPS_WAIT_S):
                self.check_workers()  # every step is claimed: the last ones are being made (a collection now would
                time.sleep(0.02)  # never be trained on); a worker that dies making one ends the run
                continue
            if self.in_flight.others(0) + self.env_step < int(self.cfg.max_env_step):
                return True
            self.check_workers()  # (a worker that dies with its segment in flight ends the run)
            if waited is None or continues() != stops:  # (time the process group spent stopped is no env's)
                waited, stops = time.monotonic(), continues()
            self._check_segments_in_flight(time.monotonic() - waited)
            time.sleep(0.02)

    def _check_segments_in_flight(self, waited_s: float) -> None:
        """``AsyncWorkerError`` naming the workers whose segment in flight is not counted after ``waited_s`` seconds,
        longer than its env steps may take with ``env.step_timeout_s`` each (its envs' steps one after another, as
        an in-process env manager steps them, and one more step's time for the rest of the turn)."""
        per_step = self.cfg.env.get('step_timeout_s')
        num_envs = int(self.cfg.env.collector_env_num)
        steps = max(1, -(-env_steps_per_collection(self.cfg) // num_envs))
        limit = float(per_step) * (steps * num_envs + 1) if per_step is not None else math.inf
        if waited_s > min(WAIT_NOTE_S, limit / 4) and not self._wait_noted:  # (a long wait is never a silent one)
            self._wait_noted = True
            late = [str(w) for w, slot in enumerate(self.in_flight.slots) if w and slot]
            bound = (f"at most {limit:g} s in all ({steps} steps of {num_envs} envs, env.step_timeout_s="
                     f"{float(per_step):g} each)" if per_step is not None else
                     "with no limit (env.step_timeout_s=None; Ctrl-C stops the run)")
            self.warn(f"[acframe] note: the budget is spent but for async worker {', '.join(late) or '?'}'s segment "
                      f"in flight: waiting for it, {bound}")
        if waited_s > limit:
            late = [str(w) for w, slot in enumerate(self.in_flight.slots) if w and slot]
            for worker in late:  # stuck: it would not stop at the end of a turn it never ends
                child = self.children[int(worker) - 1]
                if child.is_alive():
                    child.kill()
                    child.join(5.0)
            raise AsyncWorkerError(f"async worker {', '.join(late) or '?'} did not finish its segment within {limit:g} s "
                                   f"({steps} steps of {num_envs} envs, env.step_timeout_s={float(per_step):g} each): "
                                   f"an env step stuck in it? (its envs run in its process: env.manager='async' puts "
                                   f"each in a subprocess the watchdog can stop); the run stopped",
                                   f", {resume_command(self.exp_dir, self.cfg)} continues it from its last checkpoint")

    def done(self) -> bool:
        """``SerialRun.done`` after ``sync`` (the serial off-policy loop calls it at the start of every turn)."""
        self.sync()
        return super().done()

    # ---- the workers -------------------------------------------------------------------------------
    def start_workers(self) -> None:
        """Share the model and the optimizer's statistics, then fork workers 1..N-1."""
        self.policy.share_memory()
        parent = os.getpid()
        for worker in range(1, self.worker_num):
            child = self.context.Process(target=_worker_main, args=(self, worker, parent), name=f'acframe-async{worker}')
            with held_while_a_child_starts(self.context):  # (recorded inside: a Ctrl-C held meanwhile comes at its end)
                child.start()
                self.children.append(child)

    def check_workers(self) -> None:
        for worker, child in enumerate(self.children, 1):
            if child.exitcode is None:
                continue
            if child.exitcode == 0 and self.worker_signal.value:  # a worker stopped by a signal: the run is interrupted
                raise interrupt_for(int(self.worker_signal.value), f"async worker {worker} (pid {child.pid})")
            failures = self._failures()
            cause = (f"async worker {worker} failed: {failures[worker]}" if worker in failures
                     else f"async worker {worker} (pid {child.pid}) {_exit_reason(child)}")
            raise AsyncWorkerError(f"{cause} (at train iter {self.learner.train_iter}); the run stopped",
                                   f", {resume_command(self.exp_dir, self.cfg)} continues it from its last checkpoint")

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
        self._take_shared_count()  # their last steps: the final checkpoint and summary count every worker's

    def kill_workers(self) -> None:
        self.stop_flag.value = 1
        for child in self.children:
            if child.is_alive():
                child.kill()
                child.join(5.0)

    def _stopping_note(self) -> str:
        return 'stopping the async workers, '


class SharedCount(LearnerHook):
    """Each gradient step of a worker's learner (one ``after_iter``) adds one to the run's shared count, which the
    learner's counter then takes (so budgets, schedules and the other hooks count every worker's steps)."""

    def __init__(self, run: AsyncRun, worker: int) -> None:
        self.counter, self.worker = run.shared_train_iter, worker

    def after_iter(self, learner: Learner, info: Dict[str, float]) -> None:
        learner.train_iter = self.counter.add(self.worker, 1)


#: seconds worker 0 waits at the budget's end for the others' segments in flight before it says so (a quarter of the
#: longest wait where that is shorter)
WAIT_NOTE_S = 10.0
#: seconds worker 0 waits, every gradient step claimed, for the last ones to be made before it goes on (collecting)
CLAIMED_STEPS_WAIT_S = 60.0
#: seconds a worker waits for the lock of the gradient steps' claims (held for microseconds) before the run fails:
#: a worker killed while holding it would otherwise stop the others for ever
CLAIM_LOCK_TIMEOUT_S = 60.0


class StepClaims:
    """The gradient steps the workers have reserved (``claimed``, from the run's ``train_iter`` at its start), under a
    lock: a worker claims its next step before making it, so all of them together make exactly ``max_train_iter``
    (each checking the shared count alone, two could each take the budget's last step)."""

    def __init__(self, context: Any, start: int) -> None:
        self.lock = context.Lock()
        self.claimed = context.Value('q', int(start), lock=False)

    def _held(self) -> Any:
        return bounded_lock(self.lock, CLAIM_LOCK_TIMEOUT_S, lambda: AsyncWorkerError(
            f"the lock of the async workers' gradient-step count was held longer than {CLAIM_LOCK_TIMEOUT_S:g} s (a "
            f"worker died holding it); resume the run"))

    def claim(self, max_train_iter: int) -> bool:
        """Reserve one gradient step if fewer than ``max_train_iter`` are reserved; whether it was."""
        with self._held():
            if self.claimed.value >= max_train_iter:
                return False
            self.claimed.value += 1
            return True

    def release(self) -> None:
        """Give back a reserved step that will not be made (the batch it was for did not come)."""
        with self._held():
            self.claimed.value -= 1

    def spent(self, max_train_iter: int) -> bool:
        """Whether every step up to ``max_train_iter`` is reserved (some may still be being made)."""
        return int(self.claimed.value) >= int(max_train_iter)


class SharedCounter:
    """A count every async worker adds to, without a lock: one slot per worker in shared memory, each written by its
    own worker only, the count their sum. A lock shared by the workers would hang worker 0 for ever on the next read
    when a worker is killed while it holds it (SIGKILL releases nothing); one writer per slot needs none."""

    def __init__(self, context: Any, workers: int) -> None:
        self.slots = context.Array('q', workers, lock=False)

    @property
    def value(self) -> int:
        return int(sum(self.slots))

    def set(self, value: int) -> None:
        """Worker 0, before the others start (a new run or ``--resume``): the count is ``value``."""
        self.slots[:] = [int(value)] + [0] * (len(self.slots) - 1)

    def add(self, worker: int, amount: int) -> int:
        """Worker ``worker`` adds ``amount`` to its own slot; the new count."""
        self.slots[worker] += int(amount)
        return self.value

    def put(self, worker: int, amount: int) -> None:
        """Worker ``worker``'s own slot is ``amount``."""
        self.slots[worker] = int(amount)

    def others(self, worker: int) -> int:
        """The other workers' slots, summed."""
        return int(sum(self.slots)) - int(self.slots[worker])


def claim_segment(run: 'AsyncRun', worker: int, collector: SampleCollector) -> int:
    """Steps per env of worker ``worker``'s next segment: the collector's, or near the budget's end its share of what
    is left once every counted env step and every other worker's segment in flight are taken off (ceil, so all
    workers together stop within one step per env); claimed in ``run.in_flight`` until its steps are counted. A
    worker asks only while something is left (``AsyncWorker.done``, ``AsyncRun.budget_left`` wait otherwise)."""
    num_envs = collector.env.num_envs
    in_flight = run.in_flight.others(worker)  # read first: a worker counts its steps, then clears its claim
    left = int(run.cfg.max_env_step) - run.env_step - in_flight
    steps = min(collector.steps_per_env, max(1, -(-left // (num_envs * run.worker_num))))
    run.in_flight.put(worker, steps * num_envs)
    return steps


def _worker_terminated(signum: int, frame: object) -> None:
    """A worker's SIGTERM/SIGHUP/SIGQUIT: end its turn (``Terminated``); later ones are ignored."""
    for terminating in TERMINATING:
        signal.signal(terminating, signal.SIG_IGN)
    raise Terminated(f"received signal {signum} ({signal.Signals(signum).name})", signum)


def _worker_main(run: AsyncRun, worker: int, parent: int) -> None:
    """Worker ``worker`` > 0, forked from worker 0: train until the run stops; its error goes back as one line."""
    from ..cli import one_line
    from ..utils import set_global_seed, set_torch_threads

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches every process: worker 0 stops the others
    for terminating in TERMINATING:  # a signal to this worker alone interrupts the run, as Ctrl-C does (worker 0
        signal.signal(terminating, _worker_terminated)  # writes the final checkpoint), not worker 0's handler
    release_held_signals()  # (held while worker 0 forked this process)
    code = 0
    try:
        set_torch_threads(run.cfg.policy.learn.torch_threads)
        _watch_parent(parent)
        set_global_seed(process_seed(run.cfg.seed, worker))
        worker_loop(run, worker)
    except Terminated as exc:  # its turn cut short: worker 0 ends the run as interrupted
        run.worker_signal.value = int(exc.signum)
    except BaseException as exc:  # noqa: BLE001 - reported by worker 0, in one line
        code = 1
        run.errors.put((worker, one_line(exc)))
    finally:
        sys.stdout.flush()
        os._exit(code)  # nothing of worker 0's (loggers, lock, envs) is closed or flushed here


class AsyncWorker:
    """Worker ``worker`` > 0's side of the loop it shares with worker 0: its own envs (seeded ``seed + worker·E``), its
    own replay buffer (off-policy), a learner on the shared policy whose steps join the shared count; the run's
    budget cuts its segments as worker 0's. It has the attributes of a ``SerialRun`` that ``serial._off_policy_loop``
    uses, so async ACER's workers run the serial off-policy loop itself."""

    def __init__(self, run: AsyncRun, worker: int) -> None:
        cfg = self.cfg = self.local_cfg = run.cfg
        self.run, self.worker = run, worker
        num_envs = int(cfg.env.collector_env_num)
        self.env = make_env_manager(cfg, 'collector', num_envs, cfg.seed + worker * num_envs)
        self.policy = run.policy
        self.collector = SampleCollector(self.env, self.policy.collect_mode, cfg.policy.collect.n_sample)
        self.buffer = None if run.on_policy else build_buffer(cfg, cfg.seed + WORKER_SEED_STRIDE * worker)
        self.learner = Learner(self.policy.learn_mode, hooks=[SharedCount(run, worker)], buffer=self.buffer)
        self.learner.step_claims = run.step_claims  # max_train_iter is exact over all workers
        self.learner.warn = lambda text: None  # (worker 0 draws the same kind of batches and says it, once)
        self.pending_updates = 0  # the off-policy loop's updates still owed to the current segment
        self.last_segment_cut = False

    update_made = SerialRun.update_made  # (the off-policy loop's count of a round's updates, as worker 0's)

    def done(self) -> bool:
        """True once worker 0 stops the run; with the budget spent, wait for that (worker 0 ends the run)."""
        run, cfg = self.run, self.cfg
        while not run.stop_flag.value:
            self.learner.train_iter = int(run.shared_train_iter.value)
            in_flight = run.in_flight.others(self.worker)  # (read first: a worker counts its steps, then clears this)
            if (in_flight + run.env_step < cfg.max_env_step and self.learner.train_iter < cfg.max_train_iter
                    and not run.step_claims.spent(cfg.max_train_iter)):  # (every step claimed: nothing to train)
                return False
            time.sleep(0.02)
        return True

    def collect(self) -> Any:
        """A segment of this worker's envs (the budget's last one cut, as ``SerialRun.collect``); its env steps join
        the shared count, its episode returns go to worker 0."""
        run = self.run
        steps = claim_segment(run, self.worker, self.collector)
        self.last_segment_cut = steps < self.collector.steps_per_env
        before = self.collector.env_step
        segment = self.collector.collect(steps)
        run.shared_env_step.add(self.worker, self.collector.env_step - before)
        run.in_flight.put(self.worker, 0)
        returns = self.collector.pop_episode_stats()['returns']
        if returns:
            run.returns.put([float(r) for r in returns])
        return segment

    def all_ranks(self, flag: bool) -> bool:
        return flag

    def show_progress(self) -> None:
        """Worker 0 shows the run's progress."""


def worker_loop(run: AsyncRun, worker: int) -> None:
    """Worker ``worker`` > 0's loop on the shared policy until the run stops. On-policy (A3C): collect a rollout with
    its own envs and make its gradient steps on it. Off-policy (async ACER): the serial pipeline's off-policy loop
    with its own replay buffer."""
    state = AsyncWorker(run, worker)
    if not run.on_policy:
        _off_policy_loop(state)
        return
    get_train_sample, prepare = run.policy.collect_mode.get_train_sample, run.policy.learn_mode.prepare
    while not state.done():
        state.learner.train_rollout(prepare(get_train_sample(state.collect())), 0, run.cfg.max_train_iter)


def _async_loop(run: AsyncRun) -> None:
    """Worker 0: start the others; then the off-policy loop of the serial pipeline (async ACER) or, as the on-policy
    loop, evaluate when due, collect, learn — each turn first checking on the other workers and taking the shared
    counts."""
    run.start_workers()
    if not run.on_policy:
        _off_policy_loop(run)
        return
    get_train_sample = run.policy.collect_mode.get_train_sample
    prepare = run.policy.learn_mode.prepare
    while True:
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


@given_model_decides
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
    """Train A2C (A3C) or ACER (async ACER) with ``parallel.async_worker_num`` Hogwild workers on one shared model.

    The arguments are ``serial_pipeline``'s; the learner hooks run in worker 0 (this process). Returns the trained
    policy; ``summary.json`` in the experiment folder says how it went.
    """
    cfg, exp_dir, changes = compile_run_config(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                               'async', accept_config_change)
    check_async(cfg, resume is not None)
    if policy_class(cfg).on_policy:
        check_no_replay(cfg)
    with sigterm_as_interrupt():
        run = AsyncRun(cfg, exp_dir, resume is not None, progress, learner_hooks, model, config_changes=changes)
        try:
            run.policy.summary = run.drive(_async_loop)
        finally:
            run.kill_workers()
    return run.policy
