"""Segment trees for prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay", appendix B.2.1).

``SumTree`` keeps ``capacity`` non-negative values ``p_i`` in the leaves of a complete binary tree whose inner nodes
hold the sums of their children: the total ``sum_i p_i`` is the root, ``update`` rewrites leaves and the sums above
them, and ``find`` returns, for a mass ``m`` in ``[0, total)``, the leaf ``i`` with
``sum_{j<i} p_j <= m < sum_{j<=i} p_j`` -- so a uniform ``m`` draws ``i`` with probability ``p_i / total``.
``MinTree`` is the same tree with ``min`` (empty leaves hold ``+inf``): the root is the smallest stored value, which
the importance-sampling weights are normalised by. The prioritized buffers read only that root, so they keep it with a
``MinTracker`` (the same exact minimum, ``O(B)`` per write, see its docstring) and update only the sum tree per step.

Every operation takes a batch of ``B`` indices (or masses) and runs ``log2(capacity)`` vectorised numpy steps, one
per tree level: ``O(B log n)``; ``rebuild`` rewrites every leaf at once in ``O(n)``. With ``B`` around 32 each numpy
call costs more than its arithmetic, so the level loops are written with as few calls as possible: node ``k``'s
children are read through the strided views ``tree[0::2][k]`` and ``tree[1::2][k]`` (no index arithmetic), or both
at once as one ``complex128`` (``tree.view(complex128)[k]``: its real part is the left child, its imaginary part the
right one: the same float64 values), node arrays are shifted in place, and a batch is deduplicated only when it
holds a repeat.
"""
from __future__ import annotations

from typing import Optional, Union

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
        self.write(*last_of_each(index, value))

    def write(self, index: np.ndarray, value: Union[np.ndarray, float]) -> None:
        """``update`` without its checks, for a caller that made them: ``index`` ``(B,)`` int64, distinct, in
        range; ``value`` float64 ``(B,)`` or a scalar, valid for this tree."""
        node = index + self._size
        tree = self._tree
        tree[node] = value
        children = tree.view(np.complex128)  # node k's children: children[k].real, children[k].imag
        for _ in range(self._depth):  # a parent listed twice is written twice with the same value: no dedupe needed
            node >>= 1
            pair = children[node]
            tree[node] = self._combine(pair.real, pair.imag)

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
        mass = np.maximum(np.asarray(mass, dtype=np.float64).reshape(-1), 0.0)
        lefts = self._tree[0::2]
        # First without looking at the right children: a descent that never enters a subtree of sum 0 takes the same
        # path as the guarded one below, and one that enters it ends on a leaf of value 0 (by rounding, a mass at
        # the end of its node) -- only then is the guarded descent needed.
        node = np.ones(mass.shape, dtype=np.int64)
        rest = mass.copy()  # descended in place
        for _ in range(self._depth):
            left_sum = lefts[node]
            right = rest >= left_sum
            rest -= left_sum * right
            node <<= 1
            node += right
        if (self._tree[node] > 0).all():
            return node - self._size
        node = np.ones(mass.shape, dtype=np.int64)
        rights = self._tree[1::2]
        for _ in range(self._depth):
            left_sum = lefts[node]
            # right when the mass is past the left child and the right child holds mass; a node reached holds mass
            # (a left sum of 0 sends every m >= 0 right), so no zero leaf is ever reached while total > 0
            right = (mass >= left_sum) & (rights[node] > 0)
            mass -= left_sum * right
            node <<= 1
            node += right
        return node - self._size


class MinTree(_SegmentTree):
    """Minima; empty leaves hold ``+inf``, so ``min`` is the smallest value stored."""

    _empty = np.inf

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return np.minimum(left, right)

    @property
    def min(self) -> float:
        return float(self._tree[1])


class MinTracker:
    """The exact minimum of ``capacity`` values (empty slots hold ``+inf``) for a caller that reads only the minimum
    (the importance-sampling weights' normaliser), without a tree: ``write`` is ``O(B)`` -- it keeps the minimum and
    how many slots hold it -- and only when the last slot holding it is raised or emptied is the minimum looked for
    again over all values (``O(n)``, once, at the next read). In prioritized replay that slot is the least likely to
    be drawn, so this is rare; a ``MinTree`` pays ``O(B log n)`` on every write instead. Both give the same minimum,
    exactly (a minimum does not depend on the order it is taken in)."""

    def __init__(self, capacity: int) -> None:
        self.values = np.full(int(capacity), np.inf)
        self._min: Optional[float] = np.inf
        self._count = int(capacity)

    def write(self, index: np.ndarray, value: np.ndarray) -> None:
        """Set ``values[index] = value`` (``index`` distinct, ``value`` ``(B,)`` float64, not NaN)."""
        old = self.values[index]
        self.values[index] = value
        low = self._min
        if low is None or index.size == 0:
            return
        new_low = float(value.min())
        if new_low < low:  # a new minimum: held by these slots only
            self._min, self._count = new_low, int(np.count_nonzero(value == new_low))
            return
        count = self._count - int(np.count_nonzero(old == low)) + (int(np.count_nonzero(value == low)) if new_low == low else 0)
        if count > 0:
            self._count = count
        else:  # the last holder was raised or emptied: found again when next read
            self._min = None

    def rebuild(self, values: np.ndarray) -> None:
        """Every value at once (``(capacity,)``)."""
        self.values = np.array(values, dtype=np.float64)
        self._min = None

    @property
    def min(self) -> float:
        if self._min is None:
            self._min = float(self.values.min())
            self._count = int(np.count_nonzero(self.values == self._min))
        return self._min


def last_of_each(index: np.ndarray, *values: np.ndarray) -> tuple:
    """``(index, *values)`` with each repeated index kept once, at its last position (as a loop of single writes);
    unchanged (no copy) when ``index`` has no repeat. A sorted ``index`` (a prioritized buffer's draws are) is
    deduplicated by comparing neighbours."""
    if index.size > 1:
        later = index[1:]
        if (later >= index[:-1]).all():  # sorted: a repeat is next to itself
            differs = later != index[:-1]
            if differs.all():
                return (index,) + values
            keep = np.append(differs, True)  # the last of each run of equal indices
            return (index[keep],) + tuple(v[keep] for v in values)
        ordered = np.sort(index)
        if (ordered[1:] == ordered[:-1]).any():
            _, first = np.unique(index[::-1], return_index=True)
            last = index.size - 1 - first
            return (index[last],) + tuple(v[last] for v in values)
    return (index,) + values


def update_both(sums: SumTree, mins: MinTree, index: ArrayLike, value: ArrayLike, min_value: ArrayLike,
                validate: bool = True) -> None:
    """``sums.update(index, value)`` and ``mins.update(index, min_value)`` in one walk up the shared node path (the
    two trees of one capacity have the same shape). ``validate=False`` skips the range and value checks, for a caller
    that has made them (``index`` in range, ``value`` finite and non-negative)."""
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if index.size == 0:
        return
    value, min_value = np.asarray(value, dtype=np.float64), np.asarray(min_value, dtype=np.float64)
    if value.shape != index.shape:  # a scalar for every index (broadcast_to costs more than the whole write)
        value = np.broadcast_to(value, index.shape)
    if min_value.shape != index.shape:
        min_value = np.broadcast_to(min_value, index.shape)
    if validate:
        if not (value.min() >= 0 and np.isfinite(value.max())):
            raise ValueError("a sum tree holds finite non-negative values")
        if index.min() < 0 or index.max() >= sums.capacity or sums.capacity != mins.capacity:
            raise IndexError(f"segment tree index out of range [0, {sums.capacity}): {index.min()}..{index.max()}")
    index, value, min_value = last_of_each(index, value, min_value)
    node = index + sums._size
    sum_tree, min_tree = sums._tree, mins._tree
    sum_tree[node], min_tree[node] = value, min_value
    sum_children, min_children = sum_tree.view(np.complex128), min_tree.view(np.complex128)  # see the module docstring
    minimum = np.minimum
    for _ in range(sums._depth):
        node >>= 1
        pair = sum_children[node]
        sum_tree[node] = pair.real + pair.imag
        pair = min_children[node]
        min_tree[node] = minimum(pair.real, pair.imag)
