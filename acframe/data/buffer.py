"""Replay buffers (registered in BUFFER_REGISTRY).

``ReplayBuffer`` (``fifo``) stores train samples — fixed-length sub-segments, item-major ``(N, T(+1), ...)``
treetensor trees — in preallocated tensors, evicts the oldest first when full, and drops a sample after it
has been trained on ``max_use`` times. ``sample`` returns a time-major batch ``(T, batch_size, ...)``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
import torch

from ..errors import CheckpointError, ConfigError
from ..registry import BUFFER_REGISTRY
from ..utils import defining_class
from .frames import FrameStore, frames_equal, stacked_frames
from .tree import leaves, make_tree, nest, to_dict, ttorch


def push_copies(buffer: Any) -> bool:
    """Whether ``buffer.push`` copies what it is given into storage of its own (acframe's buffers), so that samples
    viewing memory that is written again after the push (a shared-memory slot of ``-m parallel``) may be pushed as
    they are; otherwise the caller pushes a copy. The class that defines ``push`` must say so itself
    (``push_copies = True``): a subclass that overrides ``push`` is not taken at its parent's word."""
    owner = defining_class(type(buffer), 'push')
    return owner is not None and vars(owner).get('push_copies') is True


@BUFFER_REGISTRY.register('fifo')
class ReplayBuffer:
    """A FIFO ring of train samples with a per-sample use limit.

    Args:
        replay_buffer_size: capacity in samples.
        max_use: a sample is dropped after being sampled this many times.
        seed: seed of the sampling generator.
        dedup_frames: store stacked uint8 frames of ``obs``/``final_obs`` once each (``acframe.data.frames``).
    """

    reuses_data = True
    sample_kind = 'unrolls'  # item-major train samples of a fixed length (policy.check_buffer_kind)
    push_copies = True  # push copies the samples into the ring (see push_copies below)

    def __init__(self, replay_buffer_size: int, max_use: int = 1, seed: int = 0, dedup_frames: bool = True,
                 **_: Any) -> None:
        self.dedup_frames = bool(dedup_frames)
        #: deduplicated leaves: the frame store of each observation leaf, and the (capacity, L, K) indices of each
        #: stored leaf (``obs``/``final_obs``, or their Dict keys) into it; slots whose index rows hold references
        self._frames: Dict[str, FrameStore] = {}
        self._frame_index: Dict[str, np.ndarray] = {}
        self._filled = np.zeros(int(replay_buffer_size), dtype=bool)
        self._specs: Dict[str, tuple] = {}  # every leaf's per-sample shape and dtype
        self.capacity = int(replay_buffer_size)
        self.max_use = int(max_use)
        self._storage: Optional[ttorch.Tensor] = None
        self._use = np.zeros(self.capacity, dtype=np.int64)
        self._valid = np.zeros(self.capacity, dtype=bool)
        self._next = 0
        self._rng = np.random.default_rng(seed)
        self.pushed = 0
        self.sampled = 0
        self.evicted_unused = 0  # samples overwritten (or never stored) before they were ever sampled

    @classmethod
    def check_learn_config(cls, buffer_cfg: Any, learn_cfg: Any) -> None:
        """Refuse a batch the buffer can never fill: such a run would make zero gradient steps."""
        batch_size, capacity = learn_cfg.get('batch_size'), buffer_cfg.get('replay_buffer_size')
        if isinstance(batch_size, int) and isinstance(capacity, int) and batch_size > capacity:
            raise ConfigError(f"policy.learn.batch_size = {batch_size} samples > policy.other.replay_buffer.replay_buffer_size "
                              f"= {capacity}: the buffer never holds a batch, so the run would make 0 gradient steps; "
                              f"lower batch_size or raise replay_buffer_size")

    @classmethod
    def storage_bytes(cls, capacity: int, obs_bytes: int, step_bytes: int, unroll_len: int,
                      frames: Optional[Dict[str, tuple]] = None) -> int:
        """Bytes of the storage ``push`` allocates: per sample ``U + 1`` observations, and per step its final
        observation and ``step_bytes`` (action, reward, flags, the policy's statistics). ``frames``: the observation
        leaves stored deduplicated, ``{leaf: (K, frame_bytes)}``: each takes the frame store's first chunk
        (``frames_per_sample`` frames and their bookkeeping) and int64 indices instead."""
        frames = frames or {}
        plain = obs_bytes - sum(k * size for k, size in frames.values())
        per_sample = (unroll_len + 1) * plain + unroll_len * (plain + step_bytes)
        for k, size in frames.values():
            store = cls.frames_per_sample(unroll_len, k) * (size + FrameStore.FRAME_OVERHEAD)
            per_sample += store + (2 * unroll_len + 1) * k * 8  # the frames, and int64 indices of obs and final_obs
        return int(capacity) * per_sample

    @staticmethod
    def frames_per_sample(unroll_len: int, frame_stack: int) -> int:
        """Frames the store expects per sample of a stacked stream: the first stack, one new frame per step, one
        for the all-zero final observations and one for an episode's end or reset, with a margin."""
        return unroll_len + frame_stack + 2 + max(1, unroll_len // 8)

    def __len__(self) -> int:
        return int(self._valid.sum())

    def push(self, samples: ttorch.Tensor) -> None:
        """Add item-major samples (every leaf ``(N, ...)``); the oldest are overwritten when full."""
        n = _leading(samples)
        if n == 0:
            return
        if n > self.capacity:  # only the newest fit
            samples = samples[n - self.capacity:]
            self.evicted_unused += n - self.capacity
            n = self.capacity
        if self._storage is None:
            self._setup(samples)
        else:
            self._check_like_stored(samples)
        index = (self._next + np.arange(n)) % self.capacity
        self.evicted_unused += int((self._valid[index] & (self._use[index] == 0)).sum())
        _write_ring(self._storage, samples, self._next, self.capacity)
        if self._frames:
            self._write_frames(samples, index)
        self._use[index] = 0
        self._valid[index] = True
        self._next = int((self._next + n) % self.capacity)
        self.pushed += n

    def _check_like_stored(self, samples: ttorch.Tensor) -> None:
        """``samples`` have the stored samples' leaves, per-sample shapes and dtypes (set by the first push), else a
        ``ValueError`` naming the leaf: the ring holds samples of one shape."""
        given = {key: (tuple(x.shape[1:]), x.dtype) for key, x in leaves(samples)}
        if given == self._specs:
            return
        missing, extra = sorted(set(self._specs) - set(given)), sorted(set(given) - set(self._specs))
        if missing or extra:
            what = 'this push ' + ' and '.join(([f"lacks {', '.join(missing)}"] if missing else [])
                                               + ([f"adds {', '.join(extra)}"] if extra else []))
        else:
            key = next(k for k in self._specs if given[k] != self._specs[k])
            (shape, dtype), (first_shape, first_dtype) = given[key], self._specs[key]
            what = (f"'{key}' is {tuple(shape)} {str(dtype).split('.')[-1]} per sample in this push, "
                    f"{tuple(first_shape)} {str(first_dtype).split('.')[-1]} in the first")
        raise ValueError(f"replay buffer '{type(self).__name__}' holds train samples of one layout: {what}; a policy's "
                         f"get_train_sample must give samples of one length (e.g. split_segment(..., "
                         f"drop_remainder=True) of a fixed length, as IMPALA's unrolls), and a resume that changes "
                         f"their layout starts from an empty buffer (policy.other.replay_buffer.save_in_checkpoint=False)")

    def _setup(self, samples: ttorch.Tensor) -> None:
        """Allocate the storage at the first push: the plain leaves as ring tensors, the stacked-frame observation
        leaves (with ``dedup_frames``) as a frame store per observation leaf and index arrays."""
        plain = {}
        for key, x in leaves(samples):
            self._specs[key] = (tuple(x.shape[1:]), x.dtype)
            obs_key = _obs_leaf(key)
            is_obs = obs_key == 'obs' or obs_key.startswith('obs.')
            found = stacked_frames(x.shape[2:], x.dtype) if self.dedup_frames and is_obs else None
            if found is None:
                plain[key] = torch.zeros((self.capacity,) + tuple(x.shape[1:]), dtype=x.dtype)
                continue
            k, frame = found
            if obs_key not in self._frames:
                unroll = int(x.shape[1]) - (1 if key == obs_key else 0)
                self._frames[obs_key] = FrameStore(frame, x.dtype, self.capacity * self.frames_per_sample(unroll, k))
            self._frame_index[key] = np.full((self.capacity,) + tuple(x.shape[1:3]), -1, dtype=np.int64)
        self._storage = make_tree(nest(plain))

    def _write_frames(self, samples: ttorch.Tensor, slots: np.ndarray) -> None:
        """Store the samples' stacked observations in the slots ``slots``: the rows the slots held are released
        first; then, step by step, each observation shares frames with the sample's previous one (shifted by a
        frame) and each final observation with its step's observation (shifted) and the previous final one."""
        source = dict(leaves(samples))
        for key in self._frame_index:
            self._frames[_obs_leaf(key)].release(
                self._frame_index[key][slots[self._filled[slots]]])
        for obs_key, store in self._frames.items():
            obs, final = source[obs_key], source.get('final_' + obs_key)
            rows = np.empty((len(slots),) + tuple(obs.shape[1:3]), dtype=np.int64)
            # every byte comparison of the samples at once (n, steps, K(-1)), then the indices step by step
            flat = obs.reshape(obs.shape[:3] + (-1,))
            shift = frames_equal(flat[:, 1:, :-1], flat[:, :-1, 1:])
            within = frames_equal(flat[:, :, 1:], flat[:, :, :-1])
            for u in range(rows.shape[1]):
                rows[:, u] = store.put(obs[:, u], shift_from=rows[:, u - 1] if u else None,
                                       equal={'shift': shift[:, u - 1] if u else None, 'within': within[:, u]})
            self._frame_index[obs_key][slots] = rows
            if final is not None and 'final_' + obs_key in self._frame_index:
                final_rows = np.empty((len(slots),) + tuple(final.shape[1:3]), dtype=np.int64)
                fin = final.reshape(final.shape[:3] + (-1,))
                shift, same = frames_equal(fin[:, :, :-1], flat[:, :-1, 1:]), frames_equal(fin[:, 1:], fin[:, :-1])
                within = frames_equal(fin[:, :, 1:], fin[:, :, :-1])
                for u in range(final_rows.shape[1]):
                    final_rows[:, u] = store.put(final[:, u], shift_from=rows[:, u],
                                                 same_from=final_rows[:, u - 1] if u else None,
                                                 equal={'shift': shift[:, u], 'same': same[:, u - 1] if u else None,
                                                        'within': within[:, u]})
                self._frame_index['final_' + obs_key][slots] = final_rows
        self._filled[slots] = True

    def _gather(self, index: np.ndarray, out: Optional[ttorch.Tensor] = None) -> Dict[str, torch.Tensor]:
        """The stored samples ``index`` ``(B,)``, item-major ``{dotted key: (B, ...)}`` (into ``out``'s tensors)."""
        index_t = torch.from_numpy(index)
        into = dict(leaves(out)) if out is not None else {}
        batch = {key: torch.index_select(x, 0, index_t, out=into[key]) if into else torch.index_select(x, 0, index_t)
                 for key, x in leaves(self._storage)}  # 8x a tree's x[index] on images
        for key, rows in self._frame_index.items():
            batch[key] = self._frames[_obs_leaf(key)].gather(rows[index], out=into.get(key))
        return batch

    def room(self, upto: int) -> int:
        """How many samples (at most ``upto``) a push takes now without overwriting one never sampled: the ring's
        next slots up to the first that holds an unused sample."""
        span = min(int(upto), self.capacity)
        slots = (self._next + np.arange(span)) % self.capacity
        unused = np.flatnonzero(self._valid[slots] & (self._use[slots] == 0))
        return int(unused[0]) if len(unused) else span

    def sample(self, batch_size: int, out: Optional[ttorch.Tensor] = None) -> Optional[ttorch.Tensor]:
        """``batch_size`` distinct samples as a time-major batch ``(T, batch_size, ...)``, or None if too few.
        ``out``: ``batch_buffer(batch_size)``'s tensors to write the batch into (the result views them)."""
        valid = np.flatnonzero(self._valid)
        if len(valid) < batch_size:
            return None
        index = self._rng.choice(valid, size=batch_size, replace=False)
        index.sort()
        batch = make_tree(nest(self._gather(index, out)))
        self._use[index] += 1
        self._valid[index[self._use[index] >= self.max_use]] = False
        self.sampled += batch_size
        return batch.transpose(0, 1)

    def batch_buffer(self, batch_size: int, pin_memory: bool = False) -> Optional[ttorch.Tensor]:
        """Preallocated item-major tensors for ``sample(batch_size, out=...)`` (page-locked with ``pin_memory``, for a
        copy to a GPU); None before the first push."""
        if self._storage is None:
            return None
        return make_tree(nest({key: torch.empty((batch_size,) + shape, dtype=dtype, pin_memory=pin_memory)
                                for key, (shape, dtype) in self._specs.items()}))

    def clear(self) -> None:
        self._valid[:] = False

    def state_dict(self) -> Dict[str, Any]:
        return {
            'storage': None if self._storage is None else to_dict(self._storage),
            'use': self._use.copy(), 'valid': self._valid.copy(), 'next': self._next,
            'rng': self._rng.bit_generator.state, 'pushed': self.pushed, 'sampled': self.sampled,
            'evicted_unused': self.evicted_unused,
            'frames': {key: store.state_dict() for key, store in self._frames.items()},
            'frame_index': {key: rows.copy() for key, rows in self._frame_index.items()},
            'filled': self._filled.copy(),
            'specs': {key: (list(shape), str(dtype).split('.')[-1]) for key, (shape, dtype) in self._specs.items()},
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        saved = len(state['use'])
        if saved != self.capacity:  # (the ring's slots are the saved ones: its indices would run past a smaller one)
            raise CheckpointError(f"its replay buffer was saved with room for {saved} samples, this run's has "
                                  f"{self.capacity} (policy.other.replay_buffer.replay_buffer_size changed): a saved "
                                  f"buffer resumes at the size it was saved with; resume with the run's own "
                                  f"replay_buffer_size, or with policy.other.replay_buffer.save_in_checkpoint=False to "
                                  f"start from an empty buffer (its samples are dropped)")
        self._storage = None if state['storage'] is None else make_tree(state['storage'])
        self._use, self._valid, self._next = state['use'].copy(), state['valid'].copy(), int(state['next'])
        self._rng.bit_generator.state = state['rng']
        self.pushed, self.sampled = state['pushed'], state['sampled']
        self.evicted_unused = int(state.get('evicted_unused', 0))  # absent from older checkpoints
        # the checkpoint's layout decides (dedup_frames only chooses a fresh buffer's): a plain one stays plain
        self._frames = {key: FrameStore.from_state(store) for key, store in state.get('frames', {}).items()}
        self._frame_index = {key: rows.copy() for key, rows in state.get('frame_index', {}).items()}
        self._filled = state['filled'].copy() if 'filled' in state else np.zeros(self.capacity, dtype=bool)
        self._specs = {key: (tuple(shape), getattr(torch, dtype)) for key, (shape, dtype) in state['specs'].items()} \
            if 'specs' in state else (
            {} if self._storage is None else {key: (tuple(x.shape[1:]), x.dtype) for key, x in leaves(self._storage)})

    def rng_state(self) -> Dict[str, Any]:
        return self._rng.bit_generator.state

    def set_rng_state(self, state: Dict[str, Any]) -> None:
        self._rng.bit_generator.state = state


def _obs_leaf(key: str) -> str:
    """The observation leaf a stored key's frames belong to: ``final_obs(.k)`` -> ``obs(.k)``."""
    return key[len('final_'):] if key.startswith('final_obs') else key


def _leading(tree: ttorch.Tensor) -> int:
    for _, leaf in leaves(tree):
        return int(leaf.shape[0])
    return 0


def _write_ring(storage: ttorch.Tensor, samples: ttorch.Tensor, start: int, capacity: int) -> None:
    """``storage[start:start + n] = samples`` around the ring (at most two slice copies per leaf: a memcpy, where
    an index tensor's scatter copies image samples several times slower)."""
    source = dict(leaves(samples))
    for key, dst in leaves(storage):
        src = source[key]
        n = int(src.shape[0])
        first = min(n, capacity - start)
        dst[start:start + first].copy_(src[:first])
        if first < n:
            dst[:n - first].copy_(src[first:])
