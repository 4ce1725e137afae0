"""``Backend``: what the learner loop needs from the machinery that runs the actors and the evaluator.

A backend starts ``parallel.actor_num`` actors (``ActorWorker``) and one evaluator (``EvalWorker``), makes
the learner's newest weights available to them (``publish``), hands the learner the segments that arrived
(``receive``), evaluates on request, restarts a worker that died (with a warning, up to
``parallel.max_restarts`` in total) and stops everything on ``close``.

In ``sync`` mode every actor collects exactly one segment per published version.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence

import torch

from ...errors import AcframeError, EnvError, EnvTimeoutError
from .messages import EvalRequest, EvalResult, SegmentMessage, WorkerError


class Backend:
    """Base class of the local, Ray and inline backends."""

    name = ''

    def __init__(self, cfg: Any, weights_fn: Callable[[], Dict[str, torch.Tensor]], warn: Callable[[str], None],
                 sync: bool, incarnations: Optional[Sequence[int]] = None) -> None:
        self.cfg = cfg
        self.actor_num = int(cfg.parallel.actor_num)
        self.weights_fn = weights_fn
        self.warn = warn
        self.sync = sync
        self.incarnations: List[int] = list(incarnations) if incarnations else [0] * self.actor_num
        self.incarnations += [0] * (self.actor_num - len(self.incarnations))
        self.restarts = 0
        self.failures: List[str] = []
        self.max_restarts = int(cfg.parallel.max_restarts)
        self.version = -1
        self._eval_results: Deque[EvalResult] = deque()

    # ---- the interface -----------------------------------------------------------------------------
    def start(self, version: int) -> None:
        """Start every worker with the weights of ``version``; raises when one cannot start."""
        raise NotImplementedError

    def publish(self, version: int) -> None:
        """The learner's weights (``weights_fn()``) are now ``version``."""
        raise NotImplementedError

    def receive(self, timeout: float) -> List[SegmentMessage]:
        """The segments that arrived, waiting up to ``timeout`` seconds for the first one."""
        raise NotImplementedError

    def may_train(self, next_version: int) -> bool:
        """False when an update now would leave an actor acting with weights older than the lag bound."""
        return True

    def request_eval(self, request: EvalRequest) -> None:
        raise NotImplementedError

    def eval_result(self) -> Optional[EvalResult]:
        """A finished evaluation (collected by ``receive``), or None."""
        return self._eval_results.popleft() if self._eval_results else None

    def stop_actors(self) -> None:
        """Stop collecting (the evaluator stays up for a final evaluation)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop every worker; nothing of the run keeps running afterwards."""
        raise NotImplementedError

    # ---- shared by the backends --------------------------------------------------------------------
    def next_incarnation(self, actor_id: int) -> int:
        incarnation = self.incarnations[actor_id]
        self.incarnations[actor_id] += 1
        return incarnation

    def note_failure(self, role: str, index: int, reason: str, error: Optional[WorkerError] = None) -> None:
        """Count a worker failure; warn, or raise ``EnvError`` when the restart budget is spent.

        A step timeout (``EnvTimeoutError``) fails the run at once unless ``env.on_step_timeout='restart'``.
        """
        who = f"{role} {index}" if role == 'actor' else role
        if error is not None and isinstance(error.exception, EnvTimeoutError) and self.cfg.env.on_step_timeout != 'restart':
            raise EnvTimeoutError(f"{who}: {error.message} (or set env.on_step_timeout='restart' to restart the {role})")
        self.restarts += 1
        self.failures.append(f"{who} {reason}")
        if self.restarts > self.max_restarts:
            raise EnvError(f"{who} {reason}; giving up after {self.max_restarts} restarts (parallel.max_restarts): "
                           f"fix the cause or raise parallel.max_restarts")
        self.warn(f"[parallel] warning: {who} {reason}; restarting it (restart {self.restarts} of at most {self.max_restarts})")


def startup_error(error: WorkerError) -> AcframeError:
    """The exception a failed start-up raises in the learner: the worker's own acframe error when it has one."""
    if isinstance(error.exception, AcframeError):
        return error.exception
    who = f"actor {error.actor_id}" if error.role == 'actor' else error.role
    return EnvError(f"{who} failed to start: {error.summary()}")


def failure_reason(error: WorkerError) -> str:
    return f"failed ({error.summary()})"
