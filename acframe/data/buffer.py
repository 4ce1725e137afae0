"""Replay buffers (registered in BUFFER_REGISTRY).

``ReplayBuffer`` (``fifo``) stores train samples — fixed-length sub-segments, item-major ``(N, T(+1), ...)``
treetensor trees — in preallocated tensors, evicts the oldest first when full, and drops a sample after it
has been trained on ``max_use`` times. ``sample`` returns a time-major batch ``(T, batch_size, ...)``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
import torch

from ..errors import ConfigError
from ..registry import BUFFER_REGISTRY
from .tree import _map_with_key, leaves, make_tree, to_dict, tree_map, ttorch


@BUFFER_REGISTRY.register('fifo')
class ReplayBuffer:
    """A FIFO ring of train samples with a per-sample use limit.

    Args:
        replay_buffer_size: capacity in samples.
        max_use: a sample is dropped after being sampled this many times.
        seed: seed of the sampling generator.
    """

    reuses_data = True

    def __init__(self, replay_buffer_size: int, max_use: int = 1, seed: int = 0, **_: Any) -> None:
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
    def storage_bytes(cls, capacity: int, obs_bytes: int, step_bytes: int, unroll_len: int) -> int:
        """Bytes of the storage ``push`` allocates: per sample ``U + 1`` observations, and per step its final
        observation and ``step_bytes`` (action, reward, flags, the policy's statistics)."""
        return int(capacity) * ((unroll_len + 1) * obs_bytes + unroll_len * (obs_bytes + step_bytes))

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
            self._storage = tree_map(lambda x: torch.zeros((self.capacity,) + tuple(x.shape[1:]), dtype=x.dtype), samples)
        index = (self._next + np.arange(n)) % self.capacity
        self.evicted_unused += int((self._valid[index] & (self._use[index] == 0)).sum())
        _write_ring(self._storage, samples, self._next, self.capacity)
        self._use[index] = 0
        self._valid[index] = True
        self._next = int((self._next + n) % self.capacity)
        self.pushed += n

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
        index_t = torch.from_numpy(index)
        if out is None:
            batch = tree_map(lambda x: torch.index_select(x, 0, index_t), self._storage)  # 8x a tree's x[index] on images
        else:
            into = dict(leaves(out))
            batch = make_tree(_map_with_key(lambda key, x: torch.index_select(x, 0, index_t, out=into[key]), self._storage))
        self._use[index] += 1
        self._valid[index[self._use[index] >= self.max_use]] = False
        self.sampled += batch_size
        return batch.transpose(0, 1)

    def batch_buffer(self, batch_size: int, pin_memory: bool = False) -> Optional[ttorch.Tensor]:
        """Preallocated item-major tensors for ``sample(batch_size, out=...)`` (page-locked with ``pin_memory``, for a
        copy to a GPU); None before the first push."""
        if self._storage is None:
            return None
        return tree_map(lambda x: torch.empty((batch_size,) + tuple(x.shape[1:]), dtype=x.dtype, pin_memory=pin_memory),
                        self._storage)

    def clear(self) -> None:
        self._valid[:] = False

    def state_dict(self) -> Dict[str, Any]:
        return {
            'storage': None if self._storage is None else to_dict(self._storage),
            'use': self._use.copy(), 'valid': self._valid.copy(), 'next': self._next,
            'rng': self._rng.bit_generator.state, 'pushed': self.pushed, 'sampled': self.sampled,
            'evicted_unused': self.evicted_unused,
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self._storage = None if state['storage'] is None else make_tree(state['storage'])
        self._use, self._valid, self._next = state['use'].copy(), state['valid'].copy(), int(state['next'])
        self._rng.bit_generator.state = state['rng']
        self.pushed, self.sampled = state['pushed'], state['sampled']
        self.evicted_unused = int(state.get('evicted_unused', 0))  # absent from older checkpoints

    def rng_state(self) -> Dict[str, Any]:
        return self._rng.bit_generator.state

    def set_rng_state(self, state: Dict[str, Any]) -> None:
        self._rng.bit_generator.state = state


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
