"""What travels between the learner and its workers, and how trees and weights are packed for the trip.

One message per segment: an actor sends a ``SegmentMessage`` holding its train samples as a nested dict
of numpy arrays (no per-step pickling; numpy arrays pickle as one buffer each, which Ray's object store
and ``multiprocessing`` pipes both move without copying element by element).
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
import torch
from treevalue.tree.common import create_storage

from ...data import ttorch
from ...data.tree import is_leaf

#: the leaf an actor adds to every segment: the weights version that chose each step's action, ``(T, B)``
VERSION_KEY = 'behaviour_version'


def tree_to_numpy(tree: ttorch.Tensor) -> Dict[str, Any]:
    """A nested dict of numpy arrays holding the tree's leaves."""
    return {k: (v.numpy() if is_leaf(v) else tree_to_numpy(v)) for k, v in tree.items()}


def numpy_to_tree(nested: Dict[str, Any]) -> ttorch.Tensor:
    """The inverse of ``tree_to_numpy`` (arrays are shared, or copied when read-only, as Ray's are)."""
    def convert(node: Dict[str, Any]) -> Dict[str, Any]:
        return {k: (convert(v) if isinstance(v, dict) else torch.from_numpy(v if v.flags.writeable else v.copy()))
                for k, v in node.items()}
    # built from a storage: ttorch.Tensor(dict) formats every leaf as text on the way (milliseconds per tree)
    return ttorch.Tensor(create_storage(convert(nested)))


def weights_to_numpy(weights: Dict[str, torch.Tensor]) -> Dict[str, np.ndarray]:
    """A snapshot of a state dict as numpy arrays (copied: the learner keeps training its own tensors)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in weights.items()}


def numpy_to_weights(weights: Dict[str, np.ndarray]) -> Dict[str, torch.Tensor]:
    """Tensors over the arrays (copied when read-only, as arrays fetched from Ray's object store are)."""
    return {k: torch.from_numpy(v if v.flags.writeable else v.copy()) for k, v in weights.items()}


@dataclass
class SegmentMessage:
    """One collected segment, turned into train samples by the actor's collect mode."""

    actor_id: int
    incarnation: int
    samples: Dict[str, Any]
    env_steps: int
    #: the oldest weights version that chose an action in this segment
    behaviour_version: int
    #: the largest gap (newest published version − version acting) seen while acting; None when the
    #: backend measures it on the learner side (Ray)
    max_acting_lag: Optional[int]
    episode_returns: List[float] = field(default_factory=list)
    episode_lengths: List[int] = field(default_factory=list)


@dataclass
class WorkerReady:
    """Sent once by a worker after it built its envs and policy."""

    role: str
    actor_id: int
    incarnation: int
    pid: int


@dataclass
class WorkerError:
    """A worker failed; ``exception`` is the original exception when it pickles, else None."""

    role: str
    actor_id: int
    incarnation: int
    type_name: str
    message: str
    traceback: str
    exception: Optional[BaseException] = None

    @classmethod
    def capture(cls, role: str, actor_id: int, incarnation: int, exc: BaseException) -> 'WorkerError':
        import pickle
        try:
            pickle.dumps(exc)
            kept: Optional[BaseException] = exc
        except Exception:
            kept = None
        return cls(role, actor_id, incarnation, type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else '',
                   traceback.format_exc(), kept)

    def summary(self) -> str:
        return f"{self.type_name}: {self.message}" if self.message else self.type_name


@dataclass
class EvalRequest:
    """Evaluate the weights of ``version`` (a numpy state dict; None when the backend passes them by reference)."""

    version: int
    train_iter: int
    env_step: int
    weights: Optional[Dict[str, np.ndarray]] = None


@dataclass
class EvalResult:
    """An evaluation of the weights of ``version``; ``confirm`` is the confirmation run's record (``Evaluator.confirm``)
    when the mean reached the stop value and ``env.n_confirm_episode`` > 0, else None."""

    version: int
    train_iter: int
    env_step: int
    mean: float
    std: float
    returns: List[float]
    lengths: List[int]
    solved: bool
    confirm: Optional[Dict[str, Any]] = None
