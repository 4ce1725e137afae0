"""Frame-deduplicated storage of stacked pixel observations (``policy.other.replay_buffer.dedup_frames``).

A stacked observation ``(K, *frame)`` (Atari: ``K = frame_stack = 4`` frames of ``84 x 84`` uint8) shares ``K - 1``
frames with the previous observation of its stream (frame ``k`` of obs ``t`` is frame ``k + 1`` of obs ``t - 1``),
and a buffer that stores observations, next observations and final observations stores each frame up to ``3K``
times. ``FrameStore`` keeps each distinct frame once and a stored observation becomes ``K`` int64 indices into it.

Dedup is exact: a frame reuses a stored one only when their bytes are equal (``torch.equal`` per row), checked
against the candidates the buffer names — the previous observation of the stream shifted by one frame, the
same-position frame of a sibling row (an identical observation, or the previous step's all-zero final observation),
and the row's own previous frame (a reset stack that repeats its first frame). Anything else (a reset, a no-op start,
a zero-padded stack, an unrelated stream) simply stores new frames; no equality is ever assumed.

Freeing: every stored frame has a reference count (how many stored index entries point at it). A buffer ``release``\\s
the index rows of the slots it overwrites or evicts; a frame whose count drops to 0 goes on the free list and the
next ``put`` reuses it. The frames live in chunks: one allocated for the buffer's expected count (``expected``),
more (each at least an eighth of the first) only when a stream repeats fewer frames than expected, so a buffer never
holds more than the plain storage would (plus the indices).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch


#: the deepest frame stack the buffers look for: a first dim beyond it is an image's height (HWC), not a stack, and
#: storing its rows as "frames" would make the start-up memory estimate far too small
MAX_FRAME_STACK = 8


def stacked_frames(shape: Sequence[int], dtype: Any) -> Optional[Tuple[int, Tuple[int, ...]]]:
    """``(K, frame_shape)`` of an observation leaf of per-item ``shape`` that dedups as stacked frames (uint8 with at
    least 3 dims, the first the stack of ``2 <= K <= MAX_FRAME_STACK`` frames), else None."""
    shape = tuple(int(s) for s in shape)
    is_uint8 = dtype in (torch.uint8, np.uint8) or str(dtype) in ('uint8', 'torch.uint8')
    if not is_uint8 or len(shape) < 3 or not 2 <= shape[0] <= MAX_FRAME_STACK:
        return None
    return shape[0], shape[1:]


def frames_equal(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """Byte equality of the frames ``a`` and ``b`` ``(..., frame_bytes)`` (uint8, last dim contiguous): a bool array
    ``(...)``. Compared as 8-byte words where the frame allows (8x fewer elements than bytes)."""
    for dtype, size in ((torch.int64, 8), (torch.int32, 4)):
        if a.shape[-1] % size == 0 and a.storage_offset() % size == 0 and b.storage_offset() % size == 0 \
                and a.stride(-1) == 1 and b.stride(-1) == 1:
            a, b = a.view(dtype), b.view(dtype)
            break
    return (a == b).all(-1).numpy()


def space_frames(space: Any) -> Dict[str, Tuple[int, int]]:
    """``{leaf: (K, frame_bytes)}`` for the observation leaves of a gym ``space`` that a buffer with
    ``dedup_frames`` stores deduplicated (``''`` for a plain Box; the sub-key of a Dict space), for the memory
    estimate (``storage_bytes``)."""
    spaces = getattr(space, 'spaces', None)
    if isinstance(spaces, dict):
        out = {}
        for key, sub in spaces.items():
            out.update({key + ('.' + k if k else ''): v for k, v in space_frames(sub).items()})
        return out
    from ..envs import obs_storage_dtype

    dtype = getattr(space, 'dtype', None)
    found = stacked_frames(getattr(space, 'shape', None) or (), obs_storage_dtype(dtype) if dtype is not None else 'f')
    if found is None:
        return {}
    k, frame = found
    return {'': (k, int(np.prod(frame, dtype=np.int64)))}


class FrameStore:
    """Distinct frames ``(*frame_shape)`` of one observation leaf, reference counted (see the module docstring).

    Args:
        frame_shape: shape of one frame.
        dtype: the frames' dtype.
        expected: frames the first chunk holds (allocated at the first ``put``).
    """

    def __init__(self, frame_shape: Sequence[int], dtype: torch.dtype, expected: int) -> None:
        self.frame_shape = tuple(int(s) for s in frame_shape)
        self.dtype = dtype
        self.expected = max(1, int(expected))
        self._chunks: List[torch.Tensor] = []
        self._starts = np.zeros(0, dtype=np.int64)  # first frame index of each chunk
        self.refs = np.zeros(0, dtype=np.int64)
        self._free = np.zeros(0, dtype=np.int64)  # a stack: the last entries are taken first

    # ---- sizes -------------------------------------------------------------------------------------
    @property
    def allocated(self) -> int:
        return len(self.refs)

    @property
    def live(self) -> int:
        """Frames referenced by a stored observation."""
        return int((self.refs > 0).sum())

    #: bookkeeping bytes per allocated frame: its reference count and (at most) its free-list entry
    FRAME_OVERHEAD = 16

    def nbytes(self) -> int:
        """Bytes the store holds at most: its frames and their bookkeeping."""
        return sum(c.numel() * c.element_size() for c in self._chunks) + self.FRAME_OVERHEAD * self.allocated

    # ---- frames ------------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        size = max(int(need), self.expected if not self._chunks else max(1, self.expected // 8))
        self._starts = np.append(self._starts, self.allocated)
        self._chunks.append(torch.empty((size,) + self.frame_shape, dtype=self.dtype))
        fresh = self.allocated + np.arange(size, dtype=np.int64)
        self.refs = np.concatenate([self.refs, np.zeros(size, dtype=np.int64)])
        self._free = np.concatenate([fresh[::-1], self._free])  # the old free frames are still taken first

    def _alloc(self, n: int) -> np.ndarray:
        if len(self._free) < n:
            self._grow(n - len(self._free))
        taken = self._free[len(self._free) - n:][::-1].copy()
        self._free = self._free[:len(self._free) - n]
        return taken

    def _by_chunk(self, index: np.ndarray):
        """``(chunk, positions in index, offsets in the chunk)`` for every chunk ``index`` touches."""
        if len(self._chunks) == 1:
            yield self._chunks[0], None, index
            return
        chunk_of = np.searchsorted(self._starts, index, side='right') - 1
        for c in np.unique(chunk_of):
            where = np.flatnonzero(chunk_of == c)
            yield self._chunks[c], where, index[where] - self._starts[c]

    def gather(self, index: np.ndarray, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The frames ``index`` (any shape, int64) as a tensor ``index.shape + frame_shape`` (into ``out`` if given)."""
        index = np.asarray(index, dtype=np.int64)
        flat = index.reshape(-1)
        shape = index.shape + self.frame_shape
        if out is not None:
            dst = out.view((len(flat),) + self.frame_shape)
        else:
            dst = torch.empty((len(flat),) + self.frame_shape, dtype=self.dtype)
        for chunk, where, offsets in self._by_chunk(flat):
            if where is None:
                torch.index_select(chunk, 0, torch.from_numpy(offsets), out=dst)
            else:
                dst[torch.from_numpy(where)] = chunk[torch.from_numpy(offsets)]
        return out if out is not None else dst.view(shape)

    def _write(self, index: np.ndarray, frames: torch.Tensor) -> None:
        for chunk, where, offsets in self._by_chunk(index):
            chunk[torch.from_numpy(offsets)] = frames if where is None else frames[torch.from_numpy(where)]

    # ---- rows --------------------------------------------------------------------------------------
    def put(self, rows: torch.Tensor, shift_from: Optional[np.ndarray] = None,
            same_from: Optional[np.ndarray] = None, shift_rows: Optional[torch.Tensor] = None,
            same_rows: Optional[torch.Tensor] = None, equal: Optional[Dict[str, np.ndarray]] = None) -> np.ndarray:
        """Store ``rows`` ``(n, K, *frame)``; their indices ``(n, K)``.

        Frame ``k`` of row ``i`` reuses, the first whose bytes are equal: ``shift_from[i, k + 1]`` (the stream's
        previous observation), ``same_from[i, k]`` (a sibling row), its own frame ``k - 1``; else it is a new frame.
        ``-1`` in the candidate arrays: no candidate. ``shift_rows``/``same_rows``: the candidates' frames
        ``(n, K, *frame)`` when the caller has them (compared without a gather from the store; they must be the
        frames those indices hold). ``equal``: those byte comparisons made already by the caller (for many rows at
        once): ``{'shift': (n, K - 1), 'same': (n, K), 'within': (n, K - 1)}`` bool masks, any of them. Every index
        returned holds one more reference.
        """
        equal = equal or {}
        n, k_frames = int(rows.shape[0]), int(rows.shape[1])
        index = np.full((n, k_frames), -1, dtype=np.int64)
        if n == 0:
            return index
        flat = rows.reshape(n, k_frames, -1)
        # byte equality of every frame with its candidates, all frames at once: (n, K - 1) or (n, K) masks
        eq_shift, eq_same, eq_within = equal.get('shift'), equal.get('same'), equal.get('within')
        if shift_from is not None and k_frames > 1:
            if eq_shift is None:
                other = self._candidate_frames(shift_from, shift_rows).reshape(n, k_frames, -1)
                eq_shift = frames_equal(flat[:, :-1], other[:, 1:])
            eq_shift = eq_shift & (shift_from[:, 1:] >= 0)
        else:
            eq_shift = None
        if same_from is not None:
            if eq_same is None:
                other = self._candidate_frames(same_from, same_rows).reshape(n, k_frames, -1)
                eq_same = frames_equal(flat, other)
            eq_same = eq_same & (same_from >= 0)
        else:
            eq_same = None
        if eq_within is None and k_frames > 1:
            eq_within = frames_equal(flat[:, 1:], flat[:, :-1])
        fresh_mask = np.zeros((n, k_frames), dtype=bool)
        for k in range(k_frames):
            column = np.full(n, -1, dtype=np.int64)
            if eq_shift is not None and k + 1 < k_frames:
                column = np.where(eq_shift[:, k], shift_from[:, k + 1], column)
            if eq_same is not None:
                column = np.where((column < 0) & eq_same[:, k], same_from[:, k], column)
            if k > 0:
                column = np.where((column < 0) & eq_within[:, k - 1], index[:, k - 1], column)
            fresh = column < 0
            if fresh.any():
                column[fresh] = self._alloc(int(fresh.sum()))
                fresh_mask[:, k] = fresh
            index[:, k] = column
        if fresh_mask.any():
            at_row, at_k = np.nonzero(fresh_mask)
            self._write(index[at_row, at_k], rows[torch.from_numpy(at_row), torch.from_numpy(at_k)])
        np.add.at(self.refs, index.reshape(-1), 1)
        return index

    def _candidate_frames(self, index: np.ndarray, given: Optional[torch.Tensor]) -> torch.Tensor:
        """The frames of the candidate indices ``index`` ``(n, K)``: ``given``, or gathered (``-1``: any frame)."""
        if given is not None:
            return given
        if self.allocated == 0:
            return torch.zeros(index.shape + self.frame_shape, dtype=self.dtype)
        return self.gather(np.maximum(index, 0))

    def release(self, index: np.ndarray) -> None:
        """Drop one reference per entry of ``index`` (rows of slots overwritten or evicted; ``-1`` entries skipped)."""
        flat = np.asarray(index, dtype=np.int64).reshape(-1)
        flat = flat[flat >= 0]
        if len(flat) == 0:
            return
        np.subtract.at(self.refs, flat, 1)
        touched = np.unique(flat)
        freed = touched[self.refs[touched] == 0]
        if (self.refs[touched] < 0).any():
            raise RuntimeError("frame store: a frame was released more often than it was stored (a buffer bug)")
        self._free = np.concatenate([freed[::-1], self._free])  # taken after the frames already free

    def state_dict(self) -> Dict[str, Any]:
        return {'frame_shape': self.frame_shape, 'dtype': str(self.dtype), 'expected': self.expected,
                'chunks': list(self._chunks), 'starts': self._starts.copy(), 'refs': self.refs.copy(),
                'free': self._free.copy()}

    @classmethod
    def from_state(cls, state: Dict[str, Any]) -> 'FrameStore':
        """The store a ``state_dict`` describes."""
        store = cls(state['frame_shape'], getattr(torch, str(state['dtype']).split('.')[-1]), int(state['expected']))
        store.load_state_dict(state)
        return store

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.frame_shape, self.expected = tuple(state['frame_shape']), int(state['expected'])
        self._chunks = list(state['chunks'])
        self.dtype = self._chunks[0].dtype if self._chunks else self.dtype
        self._starts, self.refs, self._free = state['starts'].copy(), state['refs'].copy(), state['free'].copy()
