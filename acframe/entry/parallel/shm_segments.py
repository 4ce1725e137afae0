"""Segments through shared memory (local backend, ``parallel.shared_memory_segments``) and the learner's ingest thread.

**How a segment travels.** An actor's first segment goes over its pipe pickled, as every segment does with the key
off. The learner answers it with a ``SegmentPool`` sized from that segment: ``SLOTS`` slots of shared memory (one
flat uint8 tensor each, allocated by the learner, handed to the actor over the pipe as a file descriptor) and one
state word per slot. From then on the actor copies each segment's arrays into a free slot and sends only a small
header (``SlotRef``: the slot, and per array its offset, dtype and shape) in the ``SegmentMessage``; the learner reads
the arrays in place, copies them into its replay buffer (or a tensor of its own) and frees the slot. Nothing is
pickled per array, on either side.

* A slot is **published only when fully written**: the header is sent after the last byte; an actor killed while
  writing sends no header, so nobody reads that slot. Each incarnation of an actor gets a pool of its own (a restart
  never writes into slots the learner may still be reading).
* A slot is the actor's again only when the learner has copied it out (its state word back to ``FREE``).
* An actor with no free slot, or a segment larger than a slot (say a longer first segment after a config change),
  sends that segment pickled: it never waits on the learner for memory.
* The pool lives as long as the learner holds it (an actor's death frees nothing the learner still reads).

**The ingest thread** (``SegmentIngest``, async loop): the learner's main thread reads only headers; a thread of its
own copies each arrived segment out of its slot into the replay buffer and frees the slot, while the main thread
runs the update. The buffer is locked for each push and each sample; the main thread waits for the pushes it
handed over before it reads the buffer's room (``drain``), never longer than ``DRAIN_TIMEOUT_S``.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from ...errors import AcframeError

#: slots per actor: the segments an actor may have collected ahead of the learner (2), and two the learner's
#: ingest thread may still be copying out
SLOTS = 4
FREE, BUSY = 0, 1
_ALIGN = 64
#: the most seconds the learner waits for its ingest thread to push what it was handed
DRAIN_TIMEOUT_S = 60.0


@dataclass
class _Leaf:
    offset: int
    dtype: str
    shape: Tuple[int, ...]


@dataclass
class SlotRef:
    """The header a segment travels with instead of its arrays: the slot, and the nested dict of its samples with
    every array replaced by a ``_Leaf`` (offset, dtype, shape in the slot); other values as they are."""

    slot: int
    spec: Dict[str, Any]


def _arrays(nested: Dict[str, Any]) -> List[np.ndarray]:
    out: List[np.ndarray] = []
    for value in nested.values():
        if isinstance(value, dict):
            out += _arrays(value)
        elif isinstance(value, np.ndarray):
            out.append(value)
    return out


def capacity_for(nested: Dict[str, Any]) -> int:
    """Bytes of a slot that holds a segment like ``nested`` (``tree_to_numpy``'s form): its arrays, aligned; a leaf
    packed as its non-zero rows (``final_obs``) counted as if every row were kept, so any segment of the same shape
    fits."""
    from .messages import ROWS_KEY

    total = 0
    for value in nested.values():
        if isinstance(value, dict) and ROWS_KEY in value:
            shape = tuple(value['shape'])
            rows = int(np.prod(shape[:2])) if len(shape) >= 2 else int(np.prod(shape))
            total += int(np.prod(shape)) * np.dtype(value['dtype']).itemsize + rows * 8 + 2 * _ALIGN
        elif isinstance(value, dict):
            total += capacity_for(value)
        elif isinstance(value, np.ndarray):
            total += value.nbytes + _ALIGN
    return total


class SegmentPool:
    """``SLOTS`` slots of shared memory for one actor incarnation's segments, and their state words.

    Made by the learner (``for_segment``), pickled to the actor through the pipe (torch passes the shared memory
    as a file descriptor); the actor ``write``s, the learner ``read``s and ``release``s.
    """

    def __init__(self, capacity: int, slots: int = SLOTS) -> None:
        self.capacity = int(capacity)
        self.data = torch.zeros((slots, self.capacity), dtype=torch.uint8).share_memory_()
        self.state = torch.zeros(slots, dtype=torch.int64).share_memory_()
        self._np: Any = None
        self.fallbacks = 0  # actor side: segments sent pickled (no free slot, or too large)

    @classmethod
    def for_segment(cls, nested: Dict[str, Any], slots: int = SLOTS) -> 'SegmentPool':
        return cls(capacity_for(nested), slots)

    def __getstate__(self) -> Dict[str, Any]:
        return {'capacity': self.capacity, 'data': self.data, 'state': self.state}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._np, self.fallbacks = None, 0

    def _views(self) -> Tuple[np.ndarray, np.ndarray]:
        if self._np is None:
            self._np = (self.data.numpy(), self.state.numpy())
        return self._np

    # ---- actor -------------------------------------------------------------------------------------
    def write(self, nested: Dict[str, Any]) -> Optional[SlotRef]:
        """Copy the segment's arrays into a free slot and return its header; None (nothing written) when no slot
        is free or the segment does not fit: send it pickled then."""
        data, state = self._views()
        free = np.flatnonzero(state == FREE)
        if not len(free) or capacity_for(nested) > self.capacity:
            self.fallbacks += 1
            return None
        slot = int(free[0])
        state[slot] = BUSY  # the learner frees it after copying it out
        offset = [0]

        def put(node: Dict[str, Any]) -> Dict[str, Any]:
            spec: Dict[str, Any] = {}
            for key, value in node.items():
                if isinstance(value, dict):
                    spec[key] = put(value)
                elif isinstance(value, np.ndarray):
                    value = np.ascontiguousarray(value)
                    start = offset[0]
                    data[slot, start:start + value.nbytes] = value.reshape(-1).view(np.uint8)
                    spec[key] = _Leaf(start, value.dtype.str, tuple(value.shape))
                    offset[0] = start + -(-value.nbytes // _ALIGN) * _ALIGN
                else:
                    spec[key] = value
            return spec
        return SlotRef(slot, put(nested))

    # ---- learner -----------------------------------------------------------------------------------
    def read(self, ref: SlotRef) -> Dict[str, Any]:
        """The segment's nested dict with arrays viewing the slot (valid until ``release``)."""
        data, _ = self._views()
        row = data[ref.slot]

        def get(spec: Dict[str, Any]) -> Dict[str, Any]:
            out: Dict[str, Any] = {}
            for key, value in spec.items():
                if isinstance(value, dict):
                    out[key] = get(value)
                elif isinstance(value, _Leaf):
                    dtype = np.dtype(value.dtype)
                    count = int(np.prod(value.shape))
                    out[key] = row[value.offset:value.offset + count * dtype.itemsize].view(dtype).reshape(value.shape)
                else:
                    out[key] = value
            return out
        return get(ref.spec)

    def release(self, slot: int) -> None:
        self._views()[1][slot] = FREE

    def busy(self) -> int:
        return int((self._views()[1] != FREE).sum())


class IngestError(AcframeError):
    """The learner's ingest thread failed (its error), or did not finish in time."""


class SegmentIngest:
    """A thread of the learner that pushes arrived segments into the replay buffer (see the module docstring).

    ``submit`` hands over a segment (its numpy nested dict, and the function that frees its slot, if any);
    ``drain`` waits until everything handed over is in the buffer; ``lock`` guards the buffer (hold it to sample).
    An error in the thread is raised by the next ``submit`` or ``drain``. A buffer whose ``push`` keeps what it is
    given (a user's, without ``push_copies``) is pushed a copy of a segment read from a slot, which is reused.
    """

    def __init__(self, buffer: Any) -> None:
        from ...data.buffer import push_copies

        self.buffer = buffer
        self._copy_slots = not push_copies(buffer)
        self.lock = threading.Lock()
        self._queue: 'queue.Queue[Any]' = queue.Queue()
        self._done = threading.Condition()
        self._submitted = 0
        self._pushed = 0
        self._error: Optional[BaseException] = None
        self.push_s = 0.0  # seconds the thread spent pushing
        self._thread = threading.Thread(target=self._run, name='acframe-ingest', daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from .messages import numpy_to_tree

        while True:
            item = self._queue.get()
            if item is None:
                return
            samples, release = item
            try:
                if self._error is None:
                    start = time.perf_counter()
                    tree = numpy_to_tree(samples)
                    if release is not None and self._copy_slots:
                        tree = tree.clone()
                    with self.lock:
                        self.buffer.push(tree)
                    self.push_s += time.perf_counter() - start
            except BaseException as exc:  # handed to the main thread
                self._error = exc
            finally:
                if release is not None:
                    release()
                with self._done:
                    self._pushed += 1
                    self._done.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            raise IngestError(f"the learner's ingest thread failed: {type(self._error).__name__}: {self._error}") \
                from self._error

    def submit(self, samples: Dict[str, Any], release: Optional[Callable[[], None]] = None) -> None:
        self._raise()
        if not self._thread.is_alive():
            raise IngestError("the learner's ingest thread is closed")
        self._submitted += 1
        self._queue.put((samples, release))

    def pending(self) -> int:
        return self._submitted - self._pushed

    def drain(self, timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Wait until every segment handed over is in the buffer (at most ``timeout`` seconds: then IngestError)."""
        with self._done:
            if not self._done.wait_for(lambda: self._pushed >= self._submitted, timeout):
                raise IngestError(f"the learner's ingest thread pushed no segment for {timeout:g} s "
                                  f"({self.pending()} waiting)")
        self._raise()

    def close(self, timeout: float = 10.0) -> None:
        """Finish what was handed over (at most ``timeout`` seconds) and stop the thread."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)


# ---- the local backend's hooks -------------------------------------------------------------------------
#: learner -> actor: the pickled ``SegmentPool`` follows (its memory as file descriptors)
POOL_NOTE = b'p'


def pool_note(pool: SegmentPool) -> bytes:
    from multiprocessing.reduction import ForkingPickler

    return POOL_NOTE + bytes(ForkingPickler.dumps(pool))


def read_pool_note(note: bytes) -> SegmentPool:
    from multiprocessing.reduction import ForkingPickler

    return ForkingPickler.loads(note[len(POOL_NOTE):])


def to_slot(pool: Optional[SegmentPool], message: Any) -> Any:
    """Actor side: the message with its samples written into a slot of ``pool`` (``samples`` None, ``slot`` the
    header); the message as it is when there is no pool yet, no free slot, or it does not fit."""
    from .messages import SegmentMessage

    if pool is None or not isinstance(message, SegmentMessage) or message.slot is not None:
        return message
    ref = pool.write(message.samples)
    if ref is None:
        return message
    message.samples, message.slot = None, ref
    return message


def shm_free_bytes(path: str = '/dev/shm') -> Optional[int]:
    """Bytes free in the shared-memory file system (None where there is none to ask)."""
    import os

    try:
        stat = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return stat.f_bavail * stat.f_frsize


class LearnerPools:
    """Learner side: the slots of each actor's current incarnation, made from its first segment.

    A pool is made only while ``/dev/shm`` has room for twice its size (a container's default 64 MB would otherwise
    end in SIGBUS); an actor without one keeps sending pickled segments, and ``warn`` says so once.
    """

    def __init__(self, slots: int = SLOTS, warn: Optional[Callable[[str], None]] = None) -> None:
        self.slots = slots
        self.warn = warn
        self.warned = False
        self.pools: Dict[Tuple[int, int], SegmentPool] = {}
        self.shared = 0  # segments that came through shared memory
        self.pickled = 0  # ... and pickled (the first of each incarnation, and the fallbacks)

    def arrived(self, message: Any, incarnation: int, conn: Any) -> None:
        """Put a slot's arrays back into ``message`` (``samples`` views the slot, ``release`` frees it); for the first
        segment of an actor incarnation, make its pool and send it to the actor over ``conn``."""
        key = (message.actor_id, message.incarnation)
        if message.slot is not None:
            pool = self.pools.get(key)
            if pool is None:
                raise IngestError(f"actor {message.actor_id} sent a segment in shared-memory slot {message.slot.slot} "
                                  f"of a pool the learner does not hold (incarnation {message.incarnation})")
            message.samples = pool.read(message.slot)
            slot = message.slot.slot
            message.release = lambda: pool.release(slot)
            self.shared += 1
            return
        self.pickled += 1
        if key in self.pools or message.incarnation != incarnation:
            return
        need, free = capacity_for(message.samples) * self.slots, shm_free_bytes()
        if free is not None and 2 * need > free:
            if self.warn is not None and not self.warned:
                self.warn(f"acframe: warning: /dev/shm has {free / 2**20:.0f} MB free, too little for actor "
                          f"{message.actor_id}'s {self.slots} segment slots ({need / 2**20:.0f} MB): its segments go "
                          f"pickled over its pipe (enlarge /dev/shm, e.g. docker --shm-size, or set "
                          f"parallel.shared_memory_segments=False to silence this)")
                self.warned = True
            return
        pool = SegmentPool.for_segment(message.samples, self.slots)
        for old in [k for k in self.pools if k[0] == message.actor_id]:
            del self.pools[old]  # an earlier incarnation's: its last segments were read before this one started
        self.pools[key] = pool
        try:
            conn.send_bytes(pool_note(pool))
        except (BrokenPipeError, OSError):
            pass  # a dead actor: the backend notices it
