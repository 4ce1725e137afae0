"""Segment trees for prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay", appendix B.2.1).

``SumTree`` keeps ``capacity`` non-negative values ``p_i`` in the leaves of a complete binary tree whose inner nodes
hold the sums of their children: the total ``sum_i p_i`` is the root, ``update`` rewrites leaves and the sums above
them, and ``find`` returns, for a mass ``m`` in ``[0, total)``, the leaf ``i`` with
``sum_{j<i} p_j <= m < sum_{j<=i} p_j`` -- so a uniform ``m`` draws ``i`` with probability ``p_i / total``.
``MinTree`` is the same tree with ``min`` (empty leaves hold ``+inf``): the root is the smallest stored value, which
the importance-sampling weights are normalised by.

Every operation takes a batch of ``B`` indices (or masses) and runs ``log2(capacity)`` vectorised numpy steps, one
per tree level: ``O(B log n)``; ``rebuild`` rewrites every leaf at once in ``O(n)``.
"""
from __future__ import annotations

from typing import Union

import numpy as np

ArrayLike = Union[np.ndarray, list, int, float]


class _SegmentTree:
    """A complete binary tree over ``capacity`` leaves (rounded up to a power of two), node ``k``'s children at
    ``2k`` and ``2k + 1``, the root at 1, leaf ``i`` at ``size + i``."""

    _empty = 0.0

    def __init__(self, capacity: int) -> None:
        if int(capacity) < 1:
            raise ValueError(f"a segment tree needs capacity >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._size = 1 << (self.capacity - 1).bit_length()
        self._depth = self._size.bit_length() - 1
        self._tree = np.full(2 * self._size, self._empty, dtype=np.float64)

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def update(self, index: ArrayLike, value: ArrayLike) -> None:
        """Set leaves ``index`` (``(B,)`` ints in ``[0, capacity)``) to ``value`` (``(B,)`` or a scalar); for an
        index given twice the last value wins."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), index.shape)
        if index.size == 0:
            return
        if index.min() < 0 or index.max() >= self.capacity:
            raise IndexError(f"segment tree index out of range [0, {self.capacity}): {index.min()}..{index.max()}")
        if index.size > 1:
            unique, first = np.unique(index[::-1], return_index=True)
            if unique.size < index.size:  # repeated leaves: keep the last value of each
                last = index.size - 1 - first
                index, value = index[last], value[last]
        node = index + self._size
        self._tree[node] = value
        for _ in range(self._depth):  # a parent listed twice is written twice with the same value: no dedupe needed
            node = node >> 1
            self._tree[node] = self._combine(self._tree[2 * node], self._tree[2 * node + 1])

    def rebuild(self, values: np.ndarray) -> None:
        """Set every leaf at once (``values`` ``(capacity,)``) and recompute the tree, level by level."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.capacity,):
            raise ValueError(f"rebuild takes ({self.capacity},) values, got {values.shape}")
        self._tree[self._size:] = self._empty
        self._tree[self._size:self._size + self.capacity] = values
        level = self._size
        while level > 1:
            parents = np.arange(level // 2, level)
            self._tree[parents] = self._combine(self._tree[2 * parents], self._tree[2 * parents + 1])
            level //= 2

    def __getitem__(self, index: ArrayLike) -> np.ndarray:
        return self._tree[np.asarray(index, dtype=np.int64) + self._size]

    def values(self) -> np.ndarray:
        """A copy of the ``capacity`` leaves."""
        return self._tree[self._size:self._size + self.capacity].copy()


class SumTree(_SegmentTree):
    """Sums of non-negative values; ``find`` maps prefix-sum masses to leaves (see the module docstring)."""

    _empty = 0.0

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left + right

    def update(self, index: ArrayLike, value: ArrayLike) -> None:
        low = np.min(value) if np.size(value) else 0.0
        if not (low >= 0 and np.isfinite(np.max(value) if np.size(value) else 0.0)):
            raise ValueError("a sum tree holds finite non-negative values")
        super().update(index, value)

    @property
    def total(self) -> float:
        """``sum_i p_i``."""
        return float(self._tree[1])

    def find(self, mass: ArrayLike) -> np.ndarray:
        """For each mass ``m`` (``(B,)``, in ``[0, total)``) the leaf ``i`` whose prefix-sum interval
        ``[sum_{j<i} p_j, sum_{j<=i} p_j)`` holds ``m``; never a leaf of value 0 while ``total > 0`` (a mass at or
        past ``total`` by rounding lands on the last positive leaf)."""
        mass = np.array(mass, dtype=np.float64).reshape(-1)
        node = np.ones(mass.shape, dtype=np.int64)
        tree = self._tree
        for _ in range(self._depth):
            left = node << 1
            left_sum, right_sum = tree[left], tree[left + 1]
            right = (mass >= left_sum) & (right_sum > 0) | (left_sum <= 0)
            mass -= left_sum * right
            node = left + right
        return node - self._size


class MinTree(_SegmentTree):
    """Minima; empty leaves hold ``+inf``, so ``min`` is the smallest value stored."""

    _empty = np.inf

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return np.minimum(left, right)

    @property
    def min(self) -> float:
        return float(self._tree[1])


def update_both(sums: SumTree, mins: MinTree, index: ArrayLike, value: ArrayLike, min_value: ArrayLike) -> None:
    """``sums.update(index, value)`` and ``mins.update(index, min_value)`` in one walk up the shared node path (the
    two trees of one capacity have the same shape)."""
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if index.size == 0:
        return
    value = np.broadcast_to(np.asarray(value, dtype=np.float64), index.shape)
    min_value = np.broadcast_to(np.asarray(min_value, dtype=np.float64), index.shape)
    if not (value.min() >= 0 and np.isfinite(value.max())):
        raise ValueError("a sum tree holds finite non-negative values")
    if index.min() < 0 or index.max() >= sums.capacity or sums.capacity != mins.capacity:
        raise IndexError(f"segment tree index out of range [0, {sums.capacity}): {index.min()}..{index.max()}")
    unique, first = np.unique(index[::-1], return_index=True)
    if unique.size < index.size:  # repeated leaves: keep the last value of each
        last = index.size - 1 - first
        index, value, min_value = index[last], value[last], min_value[last]
    node = index + sums._size
    sum_tree, min_tree = sums._tree, mins._tree
    sum_tree[node], min_tree[node] = value, min_value
    for _ in range(sums._depth):
        node = node >> 1
        left = node << 1
        sum_tree[node] = sum_tree[left] + sum_tree[left + 1]
        min_tree[node] = np.minimum(min_tree[left], min_tree[left + 1])
