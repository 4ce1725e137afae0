"""The local backend: actors and the evaluator as processes of this machine (torch.multiprocessing).

* Weights: ``SharedWeights`` (shared memory, a version number, lock-free copies by the actors).
* Segments: one message per segment, each actor on its own pipe, so an actor killed in the middle of a
  send can corrupt nothing but its own pipe (which is then closed with the actor). An actor collects a
  segment only when the learner granted it one (with its length, from the env-step budget): two when it
  starts, then one with every segment the learner reads (async) or one per published version (sync), so the
  data the learner reads is fresh, a learner that falls behind holds the actors back and collection stops
  within one step per env of ``max_env_step``. Waiting actors block on their pipe (no spinning).
  With ``parallel.shared_memory_segments`` (default) a segment's arrays go through shared-memory slots the learner
  made for the actor and the pipe carries a small header (``shm_segments.py``).
* A process that dies — an env exception, a crash, ``kill -9`` — is noticed through its pipe or its process
  sentinel, joined and restarted; the learner never waits on a single actor.
* A process that is alive but does not run — stopped (SIGSTOP, a debugger) or wedged with the interpreter's lock
  held — is noticed by its heartbeat: a thread of each child writes the time into shared memory every
  ``HEARTBEAT_EVERY_S``; a child whose heartbeat is older than ``parallel.heartbeat_timeout_s`` is killed (with its
  env subprocesses) and handled as a dead one (restarted within ``parallel.max_restarts``, else one line naming
  it). A slow env or a long evaluation keeps beating (the env's own watchdog is ``env.step_timeout_s``); time the
  learner itself was stopped (the whole run paused and continued) is not counted.
* Children ignore Ctrl-C (the learner stops them), exit on SIGTERM through their ``finally`` blocks (so
  their env subprocesses close too) and get SIGTERM when the learner process dies (Linux).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import torch
import torch.multiprocessing as mp
from easydict import EasyDict

from ...config.compile import to_plain
from ...envs import manager_class
from ...errors import ConfigError, EnvError, RegistryError
from ...signals import continues, held_while_a_child_starts, release_held_signals, watch_continues
from .backend import Backend, failure_reason, startup_error
from .inference_server import start_inference_server
from .messages import EvalRequest, SegmentMessage, WorkerError, WorkerReady
from .roles import ActorWorker, EvalWorker
from .shared_weights import SharedWeights
from . import shm_segments

_STOP_GRACE_S = 5.0
#: async: the segments an actor may collect ahead of the learner's reading (one waits unread, one is collected)
_SEGMENTS_AHEAD = 2
#: learner -> actor: collect one segment, of the length that follows (4 bytes, little-endian)
_GRANT = b'g'
_PR_SET_NAME, _PR_SET_PDEATHSIG = 15, 1  # prctl(2) options
#: how often a child's heartbeat thread writes the time (seconds)
HEARTBEAT_EVERY_S = 0.2


class _LearnerLink:
    """An actor's end of its pipe: sends segments, waits (without spinning) for the learner's grants."""

    def __init__(self, conn: Connection, shared: SharedWeights) -> None:
        self.conn, self.shared = conn, shared
        self.grants: Deque[int] = deque()
        self.pool: Optional[shm_segments.SegmentPool] = None  # the learner's shared-memory slots, once it sent them

    def send(self, message: Any) -> None:
        self.conn.send(shm_segments.to_slot(self.pool, message))

    def next_grant(self) -> Optional[int]:
        """The length of the next segment to collect; None when the learner asked to stop."""
        while not self.grants:
            if self.shared.stopped():
                return None
            if self.conn.poll(0.1):
                while self.conn.poll():
                    note = self.conn.recv_bytes()
                    if note[:1] == _GRANT:
                        self.grants.append(int.from_bytes(note[1:], 'little'))
                    elif note[:1] == shm_segments.POOL_NOTE:
                        self.pool = shm_segments.read_pool_note(note)
        return None if self.shared.stopped() else self.grants.popleft()


@dataclass
class _Child:
    process: Any
    conn: Connection
    incarnation: int
    ready: bool = False
    error: Optional[WorkerError] = None


def _child_setup(name: str) -> None:
    """Name the process (``ps -o comm``), ignore Ctrl-C and what a closed terminal or Ctrl-\\ sends the whole process
    group (SIGHUP, SIGQUIT: the learner stops its children), turn SIGTERM into SystemExit (exit code ``TERMINATED_EXIT``,
    as a shell reports it), die with the learner."""
    for ignored in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(ignored, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(TERMINATED_EXIT))
    if sys.platform.startswith('linux'):
        try:
            libc = ctypes.CDLL(None)
            libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name[:15].encode()), 0, 0, 0)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() == 1:  # the learner died before we got here
        sys.exit(0)
    release_held_signals()  # (held while the learner started this process: held_while_a_child_starts)


def _start_heartbeat(beats: Any, slot: int) -> None:
    """Write ``time.monotonic()`` into ``beats[slot]`` every ``HEARTBEAT_EVERY_S`` from a daemon thread of this process
    (it stops beating only when the whole process does not run: stopped, or wedged holding the interpreter's lock)."""
    def beat() -> None:
        while True:
            beats[slot] = time.monotonic()
            time.sleep(HEARTBEAT_EVERY_S)

    threading.Thread(target=beat, name='acframe-heartbeat', daemon=True).start()


def serve_child(conn: Connection, role: str, index: int, incarnation: int, build: Callable[[], Any],
                serve: Callable[[Any], None]) -> None:
    """The body of every child process (actor, evaluator, inference server): ``build()`` its worker (a failure is
    sent as a ``WorkerError`` and the process ends), say ``WorkerReady``, then ``serve(worker)`` until it returns.
    The learner gone (a broken pipe) ends it quietly; any other failure is sent as one ``WorkerError`` and the
    process exits 1. The worker's ``close()``, when it has one, runs at the end."""
    worker = None
    try:
        try:
            worker = build()
        except BaseException as exc:
            conn.send(WorkerError.capture(role, index, incarnation, exc))
            return
        conn.send(WorkerReady(role, index, incarnation, os.getpid()))
        serve(worker)
    except (BrokenPipeError, EOFError, ConnectionResetError):
        pass  # the learner is gone or stopped reading
    except SystemExit:
        raise
    except BaseException as exc:
        try:
            conn.send(WorkerError.capture(role, index, incarnation, exc))
        except Exception:
            pass
        sys.exit(1)
    finally:
        if worker is not None and hasattr(worker, 'close'):
            worker.close()


def _actor_main(cfg: Dict[str, Any], actor_id: int, incarnation: int, shared: SharedWeights, conn: Connection,
                beats: Any = None, inference: Any = None) -> None:
    """An actor process: collect segments and send them, one message each, until told to stop."""
    _child_setup(f'acf-actor-{actor_id}')
    if beats is not None:
        _start_heartbeat(beats, actor_id)

    def serve(worker: ActorWorker) -> None:
        link = _LearnerLink(conn, shared)
        while True:
            steps = link.next_grant()
            if steps is None:
                break
            link.send(worker.collect(steps))

    serve_child(conn, 'actor', actor_id, incarnation,
                lambda: ActorWorker(EasyDict(cfg), actor_id, incarnation, shared, inference), serve)


def _evaluator_main(cfg: Dict[str, Any], conn: Connection, beats: Any = None) -> None:
    """The evaluator process: evaluate each request that arrives; ``None`` stops it."""
    _child_setup('acf-evaluator')
    if beats is not None:
        _start_heartbeat(beats, len(beats) - 1)

    def serve(worker: EvalWorker) -> None:
        while True:
            request = conn.recv()
            if request is None:
                break
            conn.send(worker.evaluate(request))

    serve_child(conn, 'evaluator', 0, 0, lambda: EvalWorker(EasyDict(cfg)), serve)


def _guard_hint(exit_code: Optional[int]) -> str:
    """The child refused to run the user's script's pipeline call while it started (``refuse_a_spawned_reimport``):
    the script needs the ``__main__`` guard."""
    from ..run_base import MAIN_GUARD, REIMPORT_EXIT

    return f": {MAIN_GUARD}" if exit_code == REIMPORT_EXIT else ''


#: a child's exit code after a SIGTERM (its ``finally`` blocks ran): 128 + 15, as a shell reports a terminated process
TERMINATED_EXIT = 128 + signal.SIGTERM


def _exit_reason(process: Any) -> str:
    code = process.exitcode
    if code in (TERMINATED_EXIT, -signal.SIGTERM):  # (by its handler, or by the default one)
        return "was terminated (SIGTERM)"
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _silence(pid: int, silent: float, timeout: float) -> str:
    """Why a child's heartbeat stopped, in words: ``was stopped (SIGSTOP or a debugger)`` when the kernel says so."""
    state = ''
    try:
        with open(f'/proc/{pid}/stat') as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        pass
    what = ('was stopped (SIGSTOP, Ctrl-Z or a debugger)' if state in ('T', 't') else
            'is alive but not running (wedged)')
    return (f"(pid {pid}) {what} and gave no heartbeat for {silent:.1f} s (parallel.heartbeat_timeout_s={timeout:g}); "
            f"killed it")


def _descendants(pid: int) -> List[int]:
    """The pids of ``pid``'s children, their children, ... (Linux ``/proc``; none elsewhere)."""
    found: List[int] = []
    try:
        for task in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{task}/children') as f:
                found += [int(child) for child in f.read().split()]
    except (OSError, ValueError):
        return found
    return found + [grandchild for child in found for grandchild in _descendants(child)]


def _kill_tree(process: Any) -> None:
    """SIGKILL a child and its own children (an async env manager's subprocesses): a stopped process cannot clean up."""
    for victim in [process.pid] + _descendants(process.pid):
        try:
            os.kill(victim, signal.SIGKILL)
        except OSError:
            pass


def start_method(cfg: Any) -> str:
    """``parallel.start_method``; 'auto' forks on Linux and spawns elsewhere, and where the learner's process
    has threads a fork must not copy: CUDA's (``policy.cuda``), an env manager's that is not ``fork_safe`` (EnvPool's:
    a forked child crashed with SIGSEGV) and torch's intra-op thread pool (``policy.learn.torch_threads`` > 1: a child
    forked from a process whose pool had run hung at its first multi-threaded op, so it never started)."""
    method = cfg.parallel.start_method
    if method == 'auto':
        forkable = (not cfg.policy.get('cuda') and getattr(manager_class(cfg.env.manager), 'fork_safe', True)
                    and int(cfg.policy.learn.get('torch_threads', 0)) <= 1)
        return 'fork' if sys.platform.startswith('linux') and forkable else 'spawn'
    return method


class LocalBackend(Backend):
    """Actors and evaluator as local processes (see the module docstring)."""

    name = 'local'

    def __init__(self, cfg: Any, weights_fn: Callable[[], Dict[str, torch.Tensor]], warn: Callable[[str], None],
                 sync: bool, incarnations: Optional[Sequence[int]] = None, evaluates: bool = True) -> None:
        super().__init__(cfg, weights_fn, warn, sync, incarnations, evaluates)
        self._ctx = mp.get_context(start_method(cfg))
        self._plain_cfg = to_plain(cfg)
        self.shared = SharedWeights(weights_fn())
        self.actors: List[Optional[_Child]] = [None] * self.actor_num
        self.evaluator: Optional[_Child] = None
        self._eval_pending: Optional[EvalRequest] = None
        self._stopping = False
        self.pids: List[int] = []
        self._first_read = 0  # receive(max_segments=...) starts at a rotating actor: each is served in turn
        #: segments through shared memory (shm_segments.py): each actor incarnation's slots, made from its first segment
        self.segment_pools = shm_segments.LearnerPools(warn=warn) if cfg.parallel.get('shared_memory_segments', True) else None
        timeout = cfg.parallel.get('heartbeat_timeout_s')
        self.heartbeat_timeout_s: Optional[float] = None if timeout is None else float(timeout)
        #: the children's heartbeats (time.monotonic() of their last beat): the actors', then the evaluator's
        self._beats = self._ctx.Array('d', self.actor_num + 1, lock=False)
        self._continued = continues()
        self._awake_since = time.monotonic()  # the learner's clock: since when it has been running without a stop
        watch_continues()  # a whole run paused and continued: the time stopped is nobody's fault
        #: parallel.inference='server': the process that runs the actors' forward passes (inference_server.py)
        self.server = start_inference_server(cfg, self._ctx, self._plain_cfg, self.shared, self._daemonic())

    # ---- processes ---------------------------------------------------------------------------------
    def _daemonic(self) -> bool:
        return self.cfg.env.manager != 'async'  # a daemonic process may not start the env subprocesses

    def _spawn_actor(self, actor_id: int) -> None:
        incarnation = self.next_incarnation(actor_id)
        mine, theirs = self._ctx.Pipe(duplex=True)
        self._beats[actor_id] = time.monotonic()  # the process has until its first beat
        process = self._ctx.Process(target=_actor_main, name=f'acframe-actor-{actor_id}', daemon=self._daemonic(),
                                    args=(self._plain_cfg, actor_id, incarnation, self.shared, theirs, self._beats,
                                          self.server and self.server.client(actor_id)))
        with held_while_a_child_starts(self._ctx):  # (recorded inside: a Ctrl-C held meanwhile comes at its end)
            process.start()
            theirs.close()
            self.pids.append(process.pid)
            self.actors[actor_id] = _Child(process, mine, incarnation)
        for _ in range(1 if self.sync else _SEGMENTS_AHEAD):  # sync: one segment with the current version
            self._grant(actor_id)

    def _spawn_evaluator(self) -> None:
        mine, theirs = self._ctx.Pipe(duplex=True)
        self._beats[self.actor_num] = time.monotonic()
        process = self._ctx.Process(target=_evaluator_main, name='acframe-evaluator', daemon=self._daemonic(),
                                    args=(self._plain_cfg, theirs, self._beats))
        with held_while_a_child_starts(self._ctx):
            process.start()
            theirs.close()
            self.pids.append(process.pid)
            self.evaluator = _Child(process, mine, 0)
        if self._eval_pending is not None:
            self._send_eval(self._eval_pending)

    def start(self, version: int) -> None:
        self.publish(version)
        server = [self.server.spawn()] if self.server is not None else []
        for actor_id in range(self.actor_num):
            self._spawn_actor(actor_id)
        if self.evaluates:
            self._spawn_evaluator()
        deadline = time.monotonic() + float(self.cfg.parallel.start_timeout)
        children = [c for c in self.actors + [self.evaluator] if c is not None] + server
        while not all(child.ready for child in children):
            left = deadline - time.monotonic()
            if left <= 0:
                late = [self._name(c) for c in children if not c.ready]
                raise EnvError(f"{', '.join(late)} did not start within parallel.start_timeout="
                               f"{self.cfg.parallel.start_timeout} s; raise it or check that the envs can be built")
            pending = [c for c in children if not c.ready]
            wait([c.conn for c in pending] + [c.process.sentinel for c in pending], timeout=left)
            for child in pending:
                self._read_until_ready(child)
                if not child.ready and not child.process.is_alive():
                    raise EnvError(f"{self._name(child)} {_exit_reason(child.process)} while starting"
                                   f"{_guard_hint(child.process.exitcode)}")

    def _read_until_ready(self, child: _Child) -> None:
        """Read the child's start-up answer, and nothing after it.

        An actor starts collecting as soon as it sent ``WorkerReady``; its first segments wait on the pipe
        for ``receive``, which answers each with a receipt (an actor whose segments were read here and not
        answered would wait for those receipts forever).
        """
        try:
            while not child.ready and child.conn.poll():
                item = child.conn.recv()
                if isinstance(item, WorkerError):
                    raise self._in_own_process(startup_error(item), child)
                if isinstance(item, WorkerReady):
                    child.ready = True
        except (EOFError, OSError):
            pass  # closed: the dead process is reported by the caller

    def _in_own_process(self, error: BaseException, child: _Child) -> BaseException:
        """``error`` (a worker's failed start) with a note where the worker was spawned rather than forked and its
        error is about a name (an env id, a registered class): it has what ``import_names`` imports, not what the
        script registered in itself (the start checks, in this process, had found it)."""
        named = isinstance(error, RegistryError) or (isinstance(error, ConfigError) and 'env.env_id' in str(error)
                                                     and 'neither a gymnasium id' in str(error))
        if start_method(self.cfg) == 'fork' or not named:
            return error
        return type(error)(f"{error} (said by {self._name(child)}, a process of its own started with "
                           f"parallel.start_method='{start_method(self.cfg)}': it has what import_names imports, not "
                           f"what a script registered in itself under if __name__ == '__main__'; register it in a "
                           f"module and name it in import_names)")

    def _name(self, child: _Child) -> str:
        if child is self.evaluator:
            return 'the evaluator'
        if self.server is not None and child is self.server.child:
            return 'the inference server'
        return f"actor {self.actors.index(child)}"

    @staticmethod
    def _read(child: _Child, limit: Optional[int] = None) -> List[Any]:
        """The messages waiting on the child's pipe (at most ``limit``); a closed pipe ends the list with None."""
        items: List[Any] = []
        try:
            while (limit is None or len(items) < limit) and child.conn.poll():
                items.append(child.conn.recv())
        except (EOFError, OSError):
            items.append(None)
        return items

    # ---- weights, segments, evaluation -------------------------------------------------------------
    def publish(self, version: int) -> None:
        self.shared.publish(self.weights_fn(), version)
        self.version = version
        if self.sync:  # every actor collects one segment with this version
            for actor_id, child in enumerate(self.actors):
                if child is not None:
                    self._grant(actor_id)

    def _grant(self, actor_id: int) -> None:
        """Let the actor collect one more segment, as long as the env-step budget lasts."""
        steps = self.budget.grant(actor_id, self.version)
        if not steps:
            return
        try:
            self.actors[actor_id].conn.send_bytes(_GRANT + steps.to_bytes(4, 'little'))
        except (BrokenPipeError, OSError):
            pass  # a dead actor: the next receive notices it (and returns its grants to the budget)

    def receive(self, timeout: float, max_segments: Optional[int] = None) -> List[SegmentMessage]:
        children = [c for c in self.actors if c is not None]
        if self.evaluator is not None:
            children.append(self.evaluator)
        if not children:
            if timeout > 0:
                time.sleep(timeout)
            return []
        server = self.server.waitables() if self.server is not None and not self._stopping else []
        ready = set(wait([c.conn for c in children] + [c.process.sentinel for c in children] + server, timeout=timeout))
        self._check_heartbeats(ready)
        if self.server is not None and not self._stopping:
            self.server.events(ready, self.note_failure, self._drain, self._lost_reason)
        messages: List[SegmentMessage] = []
        order = [(self._first_read + k) % len(self.actors) for k in range(len(self.actors))]
        if max_segments is not None:
            self._first_read = (self._first_read + 1) % len(self.actors)
        for actor_id in order:
            child = self.actors[actor_id]
            if child is None or (child.conn not in ready and child.process.sentinel not in ready):
                continue
            quota = None if max_segments is None else max_segments - len(messages)
            if quota is not None and quota <= 0:
                break  # the other actors' segments wait on their pipes (and the actors with them)
            segments, lost = self._drain(child, quota)
            for item in segments:
                if self.segment_pools is not None:
                    self.segment_pools.arrived(item, child.incarnation, child.conn)
                messages.append(item)
                self.budget.received(actor_id, item.env_steps)
                if not self.sync:
                    self._grant(actor_id)
            if lost:
                self._actor_lost(actor_id)
        if self.evaluator is not None and (self.evaluator.conn in ready or self.evaluator.process.sentinel in ready):
            self._evaluator_events()
        return messages

    def _drain(self, child: Any, limit: Optional[int] = None) -> Tuple[List[Any], bool]:
        """The payloads a child sent (segments or eval results; at most ``limit`` messages read), and whether it
        is lost (error, closed; dead with nothing left to read)."""
        payloads, closed = [], False
        items = self._read(child, limit)
        unread = limit is not None and len(items) >= limit  # more may wait: a dead child's last segments too
        for item in items:
            if isinstance(item, WorkerError):
                child.error = item
            elif isinstance(item, WorkerReady):
                child.ready = True
            elif item is None:
                closed = True
            else:
                payloads.append(item)
        return payloads, closed or child.error is not None or (not unread and not child.process.is_alive())

    def _lost_reason(self, child: Any) -> str:
        self._reap(child)
        return failure_reason(child.error) if child.error is not None else _exit_reason(child.process)

    def _actor_lost(self, actor_id: int) -> None:
        child = self.actors[actor_id]
        self.actors[actor_id] = None
        reason = self._lost_reason(child)
        self.budget.forget(actor_id)
        if self._stopping:
            return
        self.note_failure('actor', actor_id, reason, child.error)
        self._spawn_actor(actor_id)

    def _check_heartbeats(self, ready: Any) -> None:
        """Kill and handle as lost every child (not ready to be read) whose heartbeat is older than
        ``parallel.heartbeat_timeout_s``, counting only time the learner itself was running."""
        if self.heartbeat_timeout_s is None or self._stopping:
            return
        now = time.monotonic()
        if continues() != self._continued:  # the learner was stopped and continued: its children too, likely
            self._continued, self._awake_since = continues(), now
            return
        if self.server is not None:
            self.server.check_heartbeat(ready, now, self._awake_since, self.heartbeat_timeout_s, _silence, _kill_tree,
                                        self._reap, self.note_failure)
        for slot, child in enumerate(self.actors + [self.evaluator]):
            if child is None or child.conn in ready or child.process.sentinel in ready:
                continue  # a child with something to read, or dead: the usual paths handle it
            silent = now - max(self._beats[slot], self._awake_since)
            if silent <= self.heartbeat_timeout_s or not child.process.is_alive():
                continue
            how = _silence(child.process.pid, silent, self.heartbeat_timeout_s)
            _kill_tree(child.process)
            self._read(child)  # whatever it sent before it stopped is lost with it
            child.error = None
            if child is self.evaluator:
                self.evaluator = None
                self._reap(child, grace=0.1)
                self.note_failure('evaluator', 0, how)
                self._spawn_evaluator()
            else:
                self.actors[slot] = None
                self._reap(child, grace=0.1)
                self.budget.forget(slot)
                self.note_failure('actor', slot, how)
                self._spawn_actor(slot)

    def _evaluator_events(self) -> None:
        child = self.evaluator
        results, lost = self._drain(child)
        for item in results:
            self._eval_pending = None
            self._eval_results.append(item)
        if lost:
            self.evaluator = None
            self.note_failure('evaluator', 0, self._lost_reason(child), child.error)
            self._spawn_evaluator()

    def request_eval(self, request: EvalRequest) -> None:
        self._eval_pending = request
        if self.evaluator is not None:
            self._send_eval(request)

    def _send_eval(self, request: EvalRequest) -> None:
        try:
            self.evaluator.conn.send(request)
        except (BrokenPipeError, OSError):
            pass  # the next receive notices the dead evaluator, restarts it and sends the request again

    # ---- shutdown ----------------------------------------------------------------------------------
    @staticmethod
    def _reap(child: _Child, grace: float = 1.0) -> None:
        """Join the child's process (terminate, then kill, when it does not exit) and close its pipe."""
        child.process.join(grace)
        if child.process.is_alive():
            child.process.terminate()
            child.process.join(grace)
        if child.process.is_alive():
            child.process.kill()
            child.process.join(_STOP_GRACE_S)  # SIGKILL cannot be ignored: this returns at once
        child.conn.close()

    def stop_actors(self) -> None:
        self._stopping = True
        self.shared.request_stop()
        deadline = time.monotonic() + _STOP_GRACE_S
        for actor_id, child in enumerate(self.actors):
            if child is None:
                continue
            while child.process.is_alive() and time.monotonic() < deadline:
                self._read(child)  # an actor blocked in a send finishes it and sees the stop flag
                child.process.join(0.01)
            self._reap(child, grace=0.1)
            self.actors[actor_id] = None

    def close(self) -> None:
        self.stop_actors()
        if self.server is not None:
            self.server.close(self._reap, _STOP_GRACE_S)
        if self.evaluator is not None:
            try:
                self.evaluator.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self._reap(self.evaluator, grace=_STOP_GRACE_S)
            self.evaluator = None
