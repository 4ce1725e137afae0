"""``Backend``: what the learner loop needs from the machinery that runs the actors and the evaluator.

A backend starts ``parallel.actor_num`` actors (``ActorWorker``) and one evaluator (``EvalWorker``), makes
the learner's newest weights available to them (``publish``), hands the learner the segments that arrived
(``receive``), evaluates on request, restarts a worker that died (with a warning, up to
``parallel.max_restarts`` in total) and stops everything on ``close``.

In ``sync`` mode every actor collects exactly one segment per published version.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import torch

from ...errors import AcframeError, ConfigError, EnvContractError, EnvError, EnvTimeoutError, PolicyError
from .messages import EvalRequest, EvalResult, SegmentMessage, WorkerError


class EnvStepBudget:
    """Hands out segment lengths so that collection stops within one step per env of ``max_env_step``.

    Every segment an actor collects is granted first: its length ``T`` is a full segment's (``policy.collect.n_sample``
    samples over the actor's envs), or, once the steps left (minus those granted and not yet received) are fewer
    than a full segment, just enough steps per env (``ceil(left / envs)``): the last segment is cut, whatever the
    policy's train sample length (a cut IMPALA segment gives its whole unrolls, ``IMPALAPolicy._get_train_sample``;
    ACER's episodic buffer and the on-policy learners take any length). 0 when the budget is spent. In sync mode
    the last round is shared by every actor's envs. A lost actor's grants return to the pool.
    """

    def __init__(self, cfg: Any, env_step: int, sync: bool) -> None:
        from ...policy import env_steps_per_collection

        self.left = int(cfg.max_env_step) - int(env_step)
        self.num_envs = int(cfg.env.collector_env_num)
        self.n_sample = env_steps_per_collection(cfg) // self.num_envs  # a full segment's steps per env
        self.sync = sync
        self.sharing = int(cfg.parallel.actor_num) if sync else 1  # envs that collect the last steps together
        self.outstanding: Dict[int, Deque[int]] = {}
        self._round: Tuple[int, int] = (-1, 0)  # sync: (version, segment length) of the current round

    def grant(self, actor_id: int, version: int) -> int:
        """The length of the next segment of ``actor_id`` (reserved until received), 0 when nothing is left.

        Sync: every actor of a round (a weights ``version``) gets the same length, from the steps left when the
        round began (its segments are trained on side by side).
        """
        if self.sync and self._round[0] == version:
            length = self._round[1]
        else:
            left = self.left if self.sync else self.left - sum(sum(steps) for steps in self.outstanding.values())
            length = min(self.n_sample, -(-max(0, left) // (self.num_envs * self.sharing)))
            self._round = (version, length)
        if length:
            self.outstanding.setdefault(actor_id, deque()).append(length * self.num_envs)
        return length

    def round_env_steps(self, version: int) -> Optional[int]:
        """Sync: the env steps of each segment of the round of ``version`` (None before it was granted)."""
        return self._round[1] * self.num_envs if self._round[0] == version else None

    def received(self, actor_id: int, env_steps: int) -> None:
        granted = self.outstanding.get(actor_id)
        if granted:
            granted.popleft()
        self.left -= env_steps

    def collected(self) -> bool:
        """True once the budget is spent and every granted segment was received: nothing more will arrive."""
        return self.left <= 0 and not any(self.outstanding.values())

    def refund(self, env_steps: int) -> None:
        """A received segment the learner discarded (sync: a restarted actor's duplicate) is not charged: the budget
        counts the steps of the data trained on, so every data-parallel rank's rounds keep the same lengths."""
        self.left += env_steps

    def forget(self, actor_id: int) -> None:
        """The actor was lost: what it was granted and did not deliver may be granted again."""
        self.outstanding.pop(actor_id, None)


class Backend:
    """Base class of the local, Ray and inline backends."""

    name = ''

    def __init__(self, cfg: Any, weights_fn: Callable[[], Dict[str, torch.Tensor]], warn: Callable[[str], None],
                 sync: bool, incarnations: Optional[Sequence[int]] = None, evaluates: bool = True) -> None:
        self.cfg = cfg
        #: False: no evaluator (a data-parallel rank > 0, whose rank 0 evaluates)
        self.evaluates = evaluates
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
        self.budget = EnvStepBudget(cfg, 0, sync)  # ParallelRun sets the run's (after a resume: what is left)

    # ---- the interface -----------------------------------------------------------------------------
    def start(self, version: int) -> None:
        """Start every worker with the weights of ``version``; raises when one cannot start."""
        raise NotImplementedError

    def publish(self, version: int) -> None:
        """The learner's weights (``weights_fn()``) are now ``version``."""
        raise NotImplementedError

    def receive(self, timeout: float, max_segments: Optional[int] = None) -> List[SegmentMessage]:
        """The segments that arrived (at most ``max_segments``; the rest stay with their actors, which wait),
        waiting up to ``timeout`` seconds for the first one."""
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
        if error is not None and isinstance(error.exception, EnvContractError):  # a restarted env breaks it again
            raise EnvContractError(f"{who}: {error.message}")
        if error is not None and isinstance(error.exception, (PolicyError, ConfigError)):  # so does the same code
            raise type(error.exception)(f"{who}: {error.message}")
        self.failures.append(f"{who} {reason}")
        if self.restarts >= self.max_restarts:  # (``restarts`` counts the restarts made: summary.json's actor_restarts)
            raise EnvError(f"{who} {reason}; giving up after {self.max_restarts} restarts (parallel.max_restarts): "
                           f"fix the cause or raise parallel.max_restarts")
        self.restarts += 1
        self.warn(f"acframe: warning: {who} {reason}; restarting it (restart {self.restarts} of at most {self.max_restarts})")


def startup_error(error: WorkerError) -> AcframeError:
    """The exception a failed start-up raises in the learner: the worker's own acframe error when it has one."""
    if isinstance(error.exception, AcframeError):
        return error.exception
    who = f"actor {error.actor_id}" if error.role == 'actor' else error.role
    return EnvError(f"{who} failed to start: {error.summary()}")


def failure_reason(error: WorkerError) -> str:
    return f"failed ({error.summary()})"
