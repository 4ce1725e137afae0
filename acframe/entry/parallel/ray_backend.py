"""The Ray backend: actors and the evaluator as Ray actors on a cluster; the learner stays in this process.

* Weights: ``ray.put`` once per version, and only when a worker needs that version; workers receive the
  object reference (wrapped, so a worker that already holds the version does not fetch it again).
* Segments: each ``collect`` call returns one ``SegmentMessage`` as an object reference; the learner waits
  on the references of every actor at once (``ray.wait``).
* Placement: every actor reserves ``parallel.actor_num_cpus`` CPUs and the evaluator
  ``parallel.evaluator_num_cpus``; Ray places them on the nodes that have them (``parallel.ray_scheduling='spread'``:
  Ray's SPREAD strategy, one node after the other).
* Weight lag: an actor acts with the version it was handed for the whole segment, so the learner does
  not update past ``version + parallel.max_policy_lag`` while that segment is out (it waits, idle).
* Faults: a lost actor (killed process, lost node) or an env exception ends that actor; it is replaced
  (on whichever node has room) with a warning, and gets work once it started. A replacement that no node starts
  within ``parallel.start_timeout`` is warned about while the other actors go on; when the run cannot go on without
  it (sync mode, or no actor left) it fails the run (``EnvError``) rather than waiting forever.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import signal
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from easydict import EasyDict

from ...config.compile import to_plain
from ...errors import ConfigError, EnvError
from ...signals import TERMINATING, Terminated
from .backend import Backend, failure_reason, startup_error
from .messages import EvalRequest, EvalResult, SegmentMessage, WorkerError, WorkerReady, numpy_to_weights, weights_to_numpy
from .roles import ActorWorker, EvalWorker, HandedWeights


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"--backend ray needs Ray, which is not installed ({exc}); install it with: pip install 'acframe[ray]'") from exc
    return ray


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A one-line ``ConfigError`` when nothing listens at ``HOST:PORT``, or something that does not answer as a gRPC
    server (a Ray cluster's GCS does) -- before Ray retries its connection for minutes."""
    if address in ('auto', 'local'):
        return
    hostport = address.split('://', 1)[-1]
    host, sep, port = hostport.rpartition(':')
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"ray_address (--ray-address) '{address}' is not HOST:PORT with a port from 1 to 65535 "
                          f"(e.g. 127.0.0.1:6379)")
    try:
        with socket.create_connection((host.strip('[]'), int(port)), timeout=timeout) as probe:
            tls = os.environ.get('RAY_USE_TLS', '0').strip().lower() in ('1', 'true')
            answer = 'grpc' if tls else _grpc_answer(probe, timeout)  # (a TLS server answers the preface otherwise)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"--ray-address {address}: no Ray cluster answers there ({reason}); start one with "
                          f"'ray start --head --port={port}' or pass the address of a running cluster") from exc
    if answer == 'silent':  # (Ray would retry its connection for minutes, printing its own warnings)
        raise ConfigError(f"--ray-address {address}: the connection opened but nothing answered within {timeout:g} s "
                          f"(a firewall that drops, or a busy host); check the address, or pass the one 'ray start "
                          f"--head' printed (its GCS port, 6379 by default)")
    if answer != 'grpc':
        raise ConfigError(f"--ray-address {address}: something listens there but it is not a Ray cluster (it does "
                          f"not answer as a gRPC server); pass the address 'ray start --head' printed (its GCS port, "
                          f"6379 by default)")


#: the HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS) answers with a SETTINGS frame
_HTTP2_HELLO = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _grpc_answer(sock: socket.socket, timeout: float) -> str:
    """How the server on ``sock`` answers the HTTP/2 preface: 'grpc' (the frame header of a SETTINGS frame),
    'silent' (nothing within ``timeout``) or 'other' (something else, or the connection closed)."""
    sock.settimeout(timeout)
    head = b''
    try:
        sock.sendall(_HTTP2_HELLO)
        while len(head) < 9:
            chunk = sock.recv(9 - len(head))
            if not chunk:
                return 'other'
            head += chunk
    except socket.timeout:
        return 'silent' if not head else 'other'
    except OSError:
        return 'other'
    return 'grpc' if head[3] == 4 else 'other'


#: Ray's token-authentication settings (environment variables); a user who sets any of them decides
_RAY_AUTH_VARS = ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')
#: environment variables set for a private local Ray instance, restored by ``disconnect``
_restore_env: Dict[str, Optional[str]] = {}


def _private_auth() -> None:
    """Token authentication for a Ray instance that acframe starts for itself, with a fresh token of this run.

    Ray would otherwise read ``~/.ray/auth_token`` or write a new one there, which later clusters started from the
    same home pick up (a stale token there makes connecting to them fail). The token lives in this process's
    environment (Ray's processes inherit it) until ``disconnect``.
    """
    if any(var in os.environ for var in _RAY_AUTH_VARS):
        return
    for var in _RAY_AUTH_VARS:
        _restore_env[var] = os.environ.get(var)
    os.environ['RAY_AUTH_MODE'] = 'token'
    os.environ['RAY_AUTH_TOKEN'] = secrets.token_hex(32)
    _reload_ray_auth()


def _reload_ray_auth() -> None:
    """What Ray itself does after changing the mode: a process that read Ray's config before sees the change."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
        Config.initialize('')
        AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError):
        pass


def connect(address: Optional[str]) -> Tuple[Any, bool]:
    """``(ray, started_here)``: connect to the cluster at ``address`` (None: start a new local Ray instance).

    A new local instance gets its own authentication token (nothing in the user's home is read or written);
    a cluster at ``address`` is reached with the user's own settings.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    if address is not None:
        check_reachable(address)
    else:
        _private_auth()
    try:
        with _signal_handlers_kept():
            # 'local': always a new instance of this run's own (never one that happens to run on this machine)
            ray.init(address=address if address is not None else 'local', log_to_driver=False,
                     include_dashboard=False if address is None else None)
    except Exception as exc:
        _restore_auth_env()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"--ray-address {address}: cannot connect to the Ray cluster ({first})") from exc
    except BaseException:  # Ctrl-C or SIGTERM inside ray.init: nothing half-started is left behind
        try:
            ray.shutdown()
        finally:
            _restore_auth_env()
        raise
    return ray, True


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """The signal handlers of SIGINT, SIGTERM, SIGHUP and SIGQUIT as they were before the block, after it.

    ``ray.init`` installs its own in the driver (a SIGTERM then printed a native stack dump and killed the process at
    once, exit 134); a run started inside ``signals.sigterm_as_interrupt`` gets its handlers back, so a SIGTERM
    while the Ray workers or rank actors start stops it as Ctrl-C does (one line, exit 143). Inside ``ray.init`` itself
    Ray's handlers answer: its Python one exits with status 15 (raised here as ``Terminated``), its native one (once
    the driver's core worker runs) dumps and aborts. (Holding the signals back with a signal mask instead would
    leave them blocked in every process Ray starts meanwhile: its GCS, raylet and workers inherit the mask.)
    Off the main thread: nothing to keep.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, *TERMINATING)}
    terminated = False
    try:
        yield
    except SystemExit as exc:
        if exc.code != signal.SIGTERM:
            raise
        terminated = True  # Ray's handler during ray.init: sys.exit(signum)
        raise Terminated('received signal 15 (SIGTERM) while Ray started', signal.SIGTERM) from None
    finally:
        for signum, handler in kept.items():
            if handler is not None:  # None: set outside Python, nothing of ours to put back
                signal.signal(signum, handler)
        if terminated:  # as after acframe's own handler: later ones are ignored while the run stops
            for signum in TERMINATING:
                signal.signal(signum, signal.SIG_IGN)


def disconnect(ray: Any) -> None:
    """Leave the Ray instance ``connect`` started (shutting it down when it is local) and restore the environment."""
    try:
        ray.shutdown()
    finally:
        _restore_auth_env()


def _restore_auth_env() -> None:
    if not _restore_env:
        return
    for var, value in _restore_env.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    _restore_env.clear()
    _reload_ray_auth()


def cluster_actor_num(ray: Any, cfg: Any) -> int:
    """How many actors the cluster's CPUs hold beside the evaluator (at least 1; with ``parallel.learner_num`` = N
    data-parallel learners, beside ranks 1..N-1 too, rounded down to a multiple of N, at least N)."""
    cpus = float(ray.cluster_resources().get('CPU', 1.0))
    per_actor = float(cfg.parallel.actor_num_cpus) or 1.0
    learners = int(cfg.parallel.get('learner_num', 1))
    cpus -= float(cfg.parallel.evaluator_num_cpus) + (learners - 1) * float(cfg.parallel.get('learner_num_cpus', 1.0))
    return max(learners, int(cpus // per_actor) // learners * learners)


class RayActorWorker:
    """An ``ActorWorker`` as a Ray actor. Never raises: failures come back as ``WorkerError``."""

    def __init__(self, cfg: Dict[str, Any], actor_id: int, incarnation: int) -> None:
        self.actor_id, self.incarnation = actor_id, incarnation
        self.source = HandedWeights()
        self.worker: Optional[ActorWorker] = None
        self.error: Optional[WorkerError] = None
        try:
            self.worker = ActorWorker(EasyDict(cfg), actor_id, incarnation, self.source)
        except BaseException as exc:
            self.error = WorkerError.capture('actor', actor_id, incarnation, exc)

    def ready(self) -> Any:
        return self.error or WorkerReady('actor', self.actor_id, self.incarnation, os.getpid())

    def collect(self, weights_box: List[Any], version: int, steps: int) -> Any:
        if self.error is not None:
            return self.error
        try:
            if version > self.source.latest_version():
                import ray
                self.source.set(numpy_to_weights(ray.get(weights_box[0])), version)
            return self.worker.collect(steps)
        except Exception as exc:
            self.error = WorkerError.capture('actor', self.actor_id, self.incarnation, exc)
            return self.error


class RayEvalWorker:
    """An ``EvalWorker`` as a Ray actor. Never raises: failures come back as ``WorkerError``."""

    def __init__(self, cfg: Dict[str, Any]) -> None:
        self.worker: Optional[EvalWorker] = None
        self.error: Optional[WorkerError] = None
        try:
            self.worker = EvalWorker(EasyDict(cfg))
        except BaseException as exc:
            self.error = WorkerError.capture('evaluator', 0, 0, exc)

    def ready(self) -> Any:
        return self.error or WorkerReady('evaluator', 0, 0, os.getpid())

    def evaluate(self, request: EvalRequest, weights_box: List[Any]) -> Any:
        if self.error is not None:
            return self.error
        try:
            import ray
            return self.worker.evaluate(request, ray.get(weights_box[0]))
        except Exception as exc:
            self.error = WorkerError.capture('evaluator', 0, 0, exc)
            return self.error


class RayBackend(Backend):
    """Actors and evaluator as Ray actors (see the module docstring)."""

    name = 'ray'

    def __init__(self, cfg: Any, weights_fn: Callable[[], Dict[str, torch.Tensor]], warn: Callable[[str], None],
                 sync: bool, incarnations: Optional[Sequence[int]] = None, ray: Any = None,
                 owns_ray: bool = False, evaluates: bool = True) -> None:
        super().__init__(cfg, weights_fn, warn, sync, incarnations, evaluates)
        self.ray = ray if ray is not None else import_ray()
        self.owns_ray = owns_ray
        self._plain_cfg = to_plain(cfg)
        self._actor_cls = self.ray.remote(RayActorWorker)
        self._eval_cls = self.ray.remote(RayEvalWorker)
        self.actors: List[Any] = [None] * self.actor_num
        self.evaluator: Any = None
        self._inflight: Dict[Any, Tuple[int, int]] = {}  # ref -> (actor_id, version handed over)
        self._busy = [False] * self.actor_num
        self._collected_version = [-1] * self.actor_num
        self._weights_ref: Any = None
        self._ref_version = -1
        self._eval_ref: Any = None
        self._eval_request: Optional[EvalRequest] = None
        self._eval_restart: Optional[Tuple[Any, float]] = None  # a replacement evaluator's ready ref and deadline
        self._stopping = False
        self.max_lag = int(cfg.parallel.max_policy_lag)
        self._restarting: Dict[int, Tuple[Any, float]] = {}  # actor_id -> (its ready() ref, deadline) of a replacement
        self._late: set = set()  # replacements past their deadline (warned about once)

    # ---- actors ------------------------------------------------------------------------------------
    def _new_actor(self, actor_id: int) -> Any:
        strategy = 'SPREAD' if self.cfg.parallel.get('ray_scheduling', 'default') == 'spread' else 'DEFAULT'
        handle = self._actor_cls.options(num_cpus=float(self.cfg.parallel.actor_num_cpus), max_restarts=0,
                                         scheduling_strategy=strategy).remote(
            self._plain_cfg, actor_id, self.next_incarnation(actor_id))
        self.actors[actor_id] = handle
        return handle

    def _new_evaluator(self) -> Any:
        self.evaluator = self._eval_cls.options(num_cpus=float(self.cfg.parallel.evaluator_num_cpus), max_restarts=0).remote(
            self._plain_cfg)
        return self.evaluator

    def _check_resources(self) -> None:
        need = (self.actor_num * float(self.cfg.parallel.actor_num_cpus)
                + float(self.cfg.parallel.evaluator_num_cpus) * self.evaluates)
        have = float(self.ray.cluster_resources().get('CPU', 0.0))
        if need > have:
            raise ConfigError(f"the Ray cluster has {have:g} CPUs but {self.actor_num} actors x parallel.actor_num_cpus="
                              f"{self.cfg.parallel.actor_num_cpus:g} + parallel.evaluator_num_cpus="
                              f"{self.cfg.parallel.evaluator_num_cpus:g} need {need:g}; lower parallel.actor_num or the CPUs per worker")

    def start(self, version: int) -> None:
        self._check_resources()
        self.version = version
        for actor_id in range(self.actor_num):
            self._new_actor(actor_id)
        if self.evaluates:  # (a data-parallel rank > 0 has none: rank 0 evaluates)
            self._new_evaluator()
        handles = list(self.actors) + ([self.evaluator] if self.evaluates else [])
        try:
            answers = self.ray.get([h.ready.remote() for h in handles], timeout=float(self.cfg.parallel.start_timeout))
        except self.ray.exceptions.GetTimeoutError as exc:
            raise EnvError(f"the Ray actors did not start within parallel.start_timeout={self.cfg.parallel.start_timeout} s; "
                           f"check that every node has acframe installed and the CPUs they reserve") from exc
        except self.ray.exceptions.RayError as exc:
            raise EnvError(f"a Ray actor failed to start: {str(exc).strip().splitlines()[0]}") from exc
        for answer in answers:
            if isinstance(answer, WorkerError):
                raise startup_error(answer)
        self._dispatch_idle()

    def _ensure_put(self) -> Any:
        """The object reference of the current version's weights (put once per version)."""
        if self._ref_version != self.version:
            self._weights_ref = self.ray.put(weights_to_numpy(self.weights_fn()))
            self._ref_version = self.version
        return self._weights_ref

    def _dispatch(self, actor_id: int) -> None:
        steps = self.budget.grant(actor_id, self.version)
        if not steps:
            return  # the env-step budget is spent
        ref = self.actors[actor_id].collect.remote([self._ensure_put()], self.version, steps)
        self._inflight[ref] = (actor_id, self.version)
        self._busy[actor_id] = True

    def _dispatch_idle(self) -> None:
        if self._stopping:
            return
        for actor_id in range(self.actor_num):
            if self._busy[actor_id] or self.actors[actor_id] is None or actor_id in self._restarting:
                continue  # (a replacement gets work once it started: it may wait for a node with room)
            if self.sync and self._collected_version[actor_id] >= self.version:
                continue
            self._dispatch(actor_id)

    def publish(self, version: int) -> None:
        self.version = version
        self._dispatch_idle()

    def may_train(self, next_version: int) -> bool:
        if not self._inflight:
            return True
        oldest = min(version for _, version in self._inflight.values())
        return next_version - oldest <= self.max_lag

    def receive(self, timeout: float, max_segments: Optional[int] = None) -> List[SegmentMessage]:
        refs = list(self._inflight) + ([self._eval_ref] if self._eval_ref is not None else [])
        if not refs:
            if timeout > 0:
                time.sleep(timeout)
            self._check_restarts()
            self._dispatch_idle()
            return []
        ready, rest = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = self.ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        messages: List[SegmentMessage] = []
        taken = 0
        for ref in ready:
            if self._eval_ref is not None and ref == self._eval_ref:
                self._evaluator_done()
                continue
            if max_segments is not None and taken >= max_segments:
                continue  # stays in flight: its actor gets no new work until the segment is taken
            taken += 1
            actor_id, version = self._inflight.pop(ref)
            self._busy[actor_id] = False
            answer = self._get(ref)
            if isinstance(answer, SegmentMessage):
                self.budget.received(actor_id, answer.env_steps)
                answer.behaviour_version = version
                answer.max_acting_lag = self.version - version
                self._collected_version[actor_id] = version
                messages.append(answer)
            elif not self._stopping:
                reason = failure_reason(answer) if isinstance(answer, WorkerError) else answer
                self.ray.kill(self.actors[actor_id], no_restart=True)
                self.actors[actor_id] = None
                self.budget.forget(actor_id)
                self.note_failure('actor', actor_id, reason, answer if isinstance(answer, WorkerError) else None)
                self._restarting[actor_id] = (self._new_actor(actor_id).ready.remote(),
                                              time.monotonic() + float(self.cfg.parallel.start_timeout))
        self._check_restarts()
        self._dispatch_idle()
        return messages

    def _check_restarts(self) -> None:
        """Replacement actors get work once they started. One that no node started within ``parallel.start_timeout``
        (its node was lost and no other has the CPUs) is waited for with a warning while the other actors go on; it
        fails the run (``EnvError``) when the run cannot go on without it: in sync mode (every round needs every actor)
        or when no actor is left working — rather than waiting forever."""
        self._check_evaluator_restart()
        if not self._restarting:
            return
        refs = [ref for ref, _ in self._restarting.values()]
        started, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        now = time.monotonic()
        for actor_id, (ref, deadline) in list(self._restarting.items()):
            if ref in started:
                del self._restarting[actor_id]
                self._late.discard(actor_id)
            elif now > deadline:
                what = (f"actor {actor_id} was lost and its replacement did not start within parallel.start_timeout="
                        f"{self.cfg.parallel.start_timeout} s: no node of the Ray cluster has the parallel.actor_num_cpus="
                        f"{self.cfg.parallel.actor_num_cpus:g} CPUs it reserves (a node was lost?)")
                if self.sync or len(self._restarting) == self.actor_num:
                    raise EnvError(f"{what}; add a node, or keep CPUs spare for replacements")
                if actor_id not in self._late:
                    self._late.add(actor_id)
                    self.warn(f"acframe: warning: {what}; the other actors go on, it joins when a node has room")

    def _check_evaluator_restart(self) -> None:
        """A replacement evaluator that no node started within ``parallel.start_timeout`` fails the run: the run
        cannot be judged (nor end: its final evaluation) without one, so it is not waited for forever."""
        if self._eval_restart is None:
            return
        ref, deadline = self._eval_restart
        started, _ = self.ray.wait([ref], num_returns=1, timeout=0)
        if started:
            self._eval_restart = None
        elif time.monotonic() > deadline:
            raise EnvError(f"the evaluator was lost and its replacement did not start within parallel.start_timeout="
                           f"{self.cfg.parallel.start_timeout} s: no node of the Ray cluster has the "
                           f"parallel.evaluator_num_cpus={self.cfg.parallel.evaluator_num_cpus:g} CPUs it reserves (a "
                           f"node was lost?); add a node, or keep CPUs spare for replacements")

    def _get(self, ref: Any) -> Any:
        """The worker's answer, or a reason string when the actor is gone."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            return f"was lost ({type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]})"

    # ---- evaluation --------------------------------------------------------------------------------
    def request_eval(self, request: EvalRequest) -> None:
        self._eval_request = request
        if request.version == self.version:
            weights_ref = self._ensure_put()
        else:
            weights_ref = self.ray.put(request.weights)
        self._eval_ref = self.evaluator.evaluate.remote(dataclasses.replace(request, weights=None), [weights_ref])

    def _evaluator_done(self) -> None:
        answer = self._get(self._eval_ref)
        self._eval_ref = None
        if isinstance(answer, EvalResult):
            self._eval_request = None
            self._eval_results.append(answer)
            return
        reason = failure_reason(answer) if isinstance(answer, WorkerError) else answer
        self.ray.kill(self.evaluator, no_restart=True)
        self.note_failure('evaluator', 0, reason, answer if isinstance(answer, WorkerError) else None)
        self._eval_restart = (self._new_evaluator().ready.remote(),
                              time.monotonic() + float(self.cfg.parallel.start_timeout))
        self.request_eval(self._eval_request)

    # ---- shutdown ----------------------------------------------------------------------------------
    def stop_actors(self) -> None:
        self._stopping = True
        self._restarting.clear()
        for actor_id, handle in enumerate(self.actors):
            if handle is not None:
                self.ray.kill(handle, no_restart=True)
                self.actors[actor_id] = None
        self._inflight.clear()

    def close(self) -> None:
        self.stop_actors()
        if self.evaluator is not None:
            self.ray.kill(self.evaluator, no_restart=True)
            self.evaluator = None
        self._eval_ref = None
        if self.owns_ray:
            disconnect(self.ray)
