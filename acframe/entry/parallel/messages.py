"""What travels between the learner and its workers, and how trees and weights are packed for the trip.

One message per segment: an actor sends a ``SegmentMessage`` holding its train samples as a nested dict
of numpy arrays (no per-step pickling; numpy arrays pickle as one buffer each, which Ray's object store
and ``multiprocessing`` pipes both move without copying element by element).
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch
from treevalue.tree.common import create_storage

from ...data import ttorch
from ...data.tree import is_leaf

#: the leaf an actor adds to every segment: the weights version that chose each step's action, ``(T, B)``
VERSION_KEY = 'behaviour_version'


#: sample keys whose ``(N, T, ...)`` leaves are zero but for a few rows — an episode's final observation exists
#: only at the step it ended — and travel as those rows alone (for Atari frames, half a segment's bytes)
SPARSE_ROW_KEYS = ('final_obs',)
ROWS_KEY = '__rows__'  # marks a leaf packed as its non-zero rows


def tree_to_numpy(tree: ttorch.Tensor) -> Dict[str, Any]:
    """A nested dict of numpy arrays holding the tree's leaves (``SPARSE_ROW_KEYS`` as their non-zero rows)."""
    def convert(node: ttorch.Tensor, sparse: bool) -> Dict[str, Any]:
        return {k: ((_pack_rows(v.numpy()) if sparse or k in SPARSE_ROW_KEYS else v.numpy()) if is_leaf(v)
                    else convert(v, sparse or k in SPARSE_ROW_KEYS)) for k, v in node.items()}
    return convert(tree, False)


def _pack_rows(x: np.ndarray) -> Dict[str, Any]:
    """``(N, T, ...)`` as its rows ``[n, t]`` holding any non-zero byte (bit-exact: -0.0 is kept), their flat
    indices and the shape."""
    shape = x.shape
    x = np.ascontiguousarray(x)
    rows = _rows(x)
    kept = np.flatnonzero(rows.view(np.uint8).any(axis=1))
    return {ROWS_KEY: kept, 'values': rows[kept], 'shape': shape, 'dtype': x.dtype.str}


def _unpack_rows(packed: Dict[str, Any]) -> np.ndarray:
    out = np.zeros(packed['shape'], dtype=np.dtype(packed['dtype']))
    _rows(out)[packed[ROWS_KEY]] = packed['values']
    return out


def _rows(x: np.ndarray) -> np.ndarray:
    """A contiguous ``(N, T, ...)`` array as a ``(N·T, ...)`` view of rows (an empty one too)."""
    lead = int(np.prod(x.shape[:2])) if x.ndim >= 2 else x.size
    return x.reshape(lead, int(np.prod(x.shape[2:])) if x.ndim > 2 else 1)


def sample_count(nested: Dict[str, Any]) -> int:
    """The leading (sample) dimension of ``tree_to_numpy``'s item-major samples, without unpacking them."""
    for value in nested.values():
        if isinstance(value, dict):
            return int(value['shape'][0]) if ROWS_KEY in value else sample_count(value)
        return int(value.shape[0])
    return 0


def numpy_to_tree(nested: Dict[str, Any]) -> ttorch.Tensor:
    """The inverse of ``tree_to_numpy`` (arrays are shared, or copied when read-only, as Ray's are)."""
    def leaf(v: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(v if v.flags.writeable else v.copy())

    def convert(node: Dict[str, Any]) -> Dict[str, Any]:
        out = {}
        for k, v in node.items():
            if not isinstance(v, dict):
                out[k] = leaf(v)
            else:
                out[k] = leaf(_unpack_rows(v)) if ROWS_KEY in v else convert(v)
        return out
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
    #: local backend with ``parallel.shared_memory_segments``: the header of the shared-memory slot holding the
    #: samples (``shm_segments.SlotRef``; ``samples`` is None on the way); the learner puts the arrays back in
    #: ``samples`` (viewing the slot) and ``release`` frees the slot once they are copied out
    slot: Optional[Any] = None
    release: Optional[Callable[[], None]] = field(default=None, repr=False, compare=False)


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
