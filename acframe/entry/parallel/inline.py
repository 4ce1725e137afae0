"""The inline backend: the same actors and evaluator as the other backends, interleaved in this process.

For stepping through a parallel run with a debugger. Whenever the learner asks for data, the next actor
(round-robin) collects a segment (async), or every actor that has not yet collected with the current
weights does (sync); an evaluation runs when requested. An actor whose envs raise is rebuilt with a
warning, as a process would be restarted.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from .backend import Backend
from .messages import EvalRequest, SegmentMessage, WorkerError
from .roles import ActorWorker, EvalWorker, HandedWeights


class InlineBackend(Backend):
    """Actors and evaluator as objects of this process, run when the learner waits."""

    name = 'inline'

    def __init__(self, cfg: Any, weights_fn: Callable[[], Dict[str, torch.Tensor]], warn: Callable[[str], None],
                 sync: bool, incarnations: Optional[Sequence[int]] = None, evaluates: bool = True) -> None:
        super().__init__(cfg, weights_fn, warn, sync, incarnations, evaluates)
        self.sources = [HandedWeights() for _ in range(self.actor_num)]
        self.actors: List[Optional[ActorWorker]] = [None] * self.actor_num
        self.evaluator: Optional[EvalWorker] = None
        self._next_actor = 0
        self._collected_version = [-1] * self.actor_num

    def _build_actor(self, actor_id: int) -> None:
        self.actors[actor_id] = ActorWorker(self.cfg, actor_id, self.next_incarnation(actor_id), self.sources[actor_id])

    def start(self, version: int) -> None:
        for actor_id in range(self.actor_num):
            self._build_actor(actor_id)
        self.evaluator = EvalWorker(self.cfg) if self.evaluates else None
        self.publish(version)

    def publish(self, version: int) -> None:
        self.version = version
        weights = self.weights_fn()  # the learner's own tensors: actors copy them when they refresh
        for source in self.sources:
            source.set(weights, version)

    def receive(self, timeout: float, max_segments: Optional[int] = None) -> List[SegmentMessage]:
        if self.sync:
            due = [i for i in range(self.actor_num) if self._collected_version[i] < self.version]
        else:
            due = [self._next_actor]
            self._next_actor = (self._next_actor + 1) % self.actor_num
        messages = []
        for actor_id in due:
            message = self._collect(actor_id)
            if message is not None:
                messages.append(message)
        return messages

    def _collect(self, actor_id: int) -> Optional[SegmentMessage]:
        actor = self.actors[actor_id]
        if actor is None:
            return None
        steps = self.budget.grant(actor_id, self.version)
        if not steps:
            return None
        try:
            message = actor.collect(steps)
        except Exception as exc:
            error = WorkerError.capture('actor', actor_id, actor.incarnation, exc)
            actor.close()
            self.actors[actor_id] = None
            self.budget.forget(actor_id)
            self.note_failure('actor', actor_id, f"failed ({error.summary()})", error)
            self._build_actor(actor_id)
            return None
        self.budget.received(actor_id, message.env_steps)
        self._collected_version[actor_id] = actor.version
        return message

    def request_eval(self, request: EvalRequest) -> None:
        while True:
            try:
                self._eval_results.append(self.evaluator.evaluate(request))
                return
            except Exception as exc:
                error = WorkerError.capture('evaluator', 0, 0, exc)
                self.evaluator.close()
                self.note_failure('evaluator', 0, f"failed ({error.summary()})", error)
                self.evaluator = EvalWorker(self.cfg)

    def stop_actors(self) -> None:
        for actor_id, actor in enumerate(self.actors):
            if actor is not None:
                actor.close()
                self.actors[actor_id] = None

    def close(self) -> None:
        self.stop_actors()
        if self.evaluator is not None:
            self.evaluator.close()
            self.evaluator = None
