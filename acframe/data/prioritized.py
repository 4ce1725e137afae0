"""Prioritized experience replay (Schaul et al. 2016, "Prioritized Experience Replay"), proportional variant.

Two buffers, registered in ``BUFFER_REGISTRY`` and picked with ``policy.other.replay_buffer.type``:

* ``prioritized``: the ``fifo`` ring of fixed unrolls (IMPALA's replay) with priorities;
* ``episodic_prioritized``: ACER's ``episodic`` trajectory replay with priorities on the windows' first steps (the
  fresh on-policy segment is still served first, unweighted).

The math, for the stored items ``i`` (an unroll, or a window's first step) with priorities ``p_i``:

* sampling probability ``P(i) = p_i^alpha / sum_k p_k^alpha`` (sec. 3.3; ``alpha = 0`` is uniform), drawn stratified:
  the total is cut into ``batch_size`` equal ranges and one item is drawn from each (appendix B.2.1), with
  replacement, through a sum tree (``O(log n)`` per item);
* importance-sampling weights ``w_i = (N P(i))^-beta / max_k w_k`` (sec. 3.4), ``N`` the items that can be drawn and
  the max over all of them (``= (N min_k P(k))^-beta``, the exact minimum kept by a ``MinTracker``) -- so weights only
  scale updates down;
  ``beta`` grows linearly from ``beta`` to 1 over ``anneal_step`` sample calls (0: constant);
* a new item gets the largest priority seen so far (1 at first), so it is drawn at least once soon;
* after an update the learner hands back the policy's new priorities (``update_priority``): ``p_i = |priority_i| +
  priority_eps``. An item overwritten or evicted between its draw and the update keeps its own priority (each
  stored item has a serial number that the batch carries).

A sampled batch carries three extra ``(1, B)`` leaves: ``replay_index`` (the slot), ``replay_id`` (the item's serial)
and ``is_weight`` (``w_i``; all 1 with ``is_weight=False``, DI-engine's ``priority_IS_weight=False``). A policy that
finds ``is_weight`` in a batch multiplies each sequence's loss by it and returns ``priority`` ``(B,)`` in its info;
the learner passes it to ``update_priority(batch, priority)``.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch

from ..errors import ConfigError, NonFiniteError, PolicyError
from ..registry import BUFFER_REGISTRY
from .buffer import ReplayBuffer
from .episodic_buffer import EpisodicReplayBuffer, _nest
from .sum_tree import MinTracker, SumTree, last_of_each
from .tree import leaves, make_tree, to_dict, ttorch

#: the leaves a prioritized batch carries, each (1, B)
INDEX_KEY, ID_KEY, WEIGHT_KEY = 'replay_index', 'replay_id', 'is_weight'
#: the key of the per-sequence priorities ``(B,)`` in a learn forward's info
PRIORITY_KEY = 'priority'

#: the keys every prioritized buffer declares (``config`` of each class below), with their rules
PRIORITY_CONFIG = dict(
    # (float >= 0) Priority exponent alpha: items are drawn with probability p_i^alpha / sum_k p_k^alpha (0: uniform; 0.6 in the PER paper's proportional variant).
    alpha=0.6,
    # (float in [0, 1]) Importance-sampling exponent beta at the start: weights (N P(i))^-beta / max_k w_k (0.4 in the PER paper; 1 fully corrects the bias).
    beta=0.4,
    # (int >= 0) Sample calls over which beta grows linearly to 1 (DI-engine's anneal_step); 0 keeps beta constant.
    anneal_step=0,
    # (bool) Multiply each sequence's loss by its importance-sampling weight (DI-engine's priority_IS_weight); False: the weights are all 1.
    is_weight=True,
    # (float > 0) Added to |priority| when the learner hands priorities back, so no item's probability becomes 0.
    priority_eps=1e-6,
)


class _Priorities:
    """The priorities of ``capacity`` slots: a sum tree of ``p_i^alpha`` over the drawable slots, the minimum of the
    same values (``MinTracker``), each slot's raw priority and serial number, and the running max priority."""

    def __init__(self, capacity: int, alpha: float, beta: float, anneal_step: int, is_weight: bool,
                 priority_eps: float) -> None:
        if alpha < 0 or not 0 <= beta <= 1 or anneal_step < 0 or priority_eps <= 0:
            raise ConfigError(f"policy.other.replay_buffer: alpha ({alpha}) must be >= 0, beta ({beta}) in [0, 1], "
                              f"anneal_step ({anneal_step}) >= 0 and priority_eps ({priority_eps}) > 0; fix those keys")
        self.alpha, self.beta, self.anneal_step = float(alpha), float(beta), int(anneal_step)
        self.is_weight, self.eps = bool(is_weight), float(priority_eps)
        self.max_priority = 1.0
        self.sample_calls = 0
        self.next_serial = 0
        self._resize(int(capacity))

    def _resize(self, capacity: int) -> None:
        old = getattr(self, 'priority', np.zeros(0))
        self.capacity = capacity
        self.priority = np.concatenate([old, np.zeros(capacity - len(old))])
        self.serial = np.concatenate([getattr(self, 'serial', np.zeros(0, np.int64)),
                                      np.full(capacity - len(old), -1, dtype=np.int64)])
        self.sum_tree, self.min_scaled = SumTree(capacity), MinTracker(capacity)
        self.drawable = np.zeros(capacity, dtype=bool)

    def grow(self, capacity: int) -> None:
        """More slots (the episodic buffer's storage grows); every slot starts not drawable: ``set_drawable``."""
        self._resize(capacity)

    def assign(self, slots: np.ndarray) -> None:
        """New items in ``slots``: the max priority so far and fresh serial numbers (not yet drawable)."""
        self.priority[slots] = self.max_priority
        self.serial[slots] = self.next_serial + np.arange(len(slots))
        self.next_serial += len(slots)

    def set_drawable(self, slots: np.ndarray, drawable: bool) -> None:
        slots = np.asarray(slots, dtype=np.int64)
        if slots.size == 0:
            return
        self.drawable[slots] = drawable
        slots, = last_of_each(slots)
        if drawable:  # stored priorities: finite and positive, no second validation
            scaled = self.priority[slots] ** self.alpha
            self.sum_tree.write(slots, scaled)
            self.min_scaled.write(slots, scaled)
        else:
            self.sum_tree.write(slots, 0.0)
            self.min_scaled.write(slots, np.full(len(slots), np.inf))

    def rebuild(self, drawable: np.ndarray) -> None:
        """Exactly the slots in the mask ``drawable`` can be drawn (``O(n)``)."""
        self.drawable = drawable.copy()
        scaled = self.priority ** self.alpha
        self.sum_tree.rebuild(np.where(drawable, scaled, 0.0))
        self.min_scaled.rebuild(np.where(drawable, scaled, np.inf))

    def current_beta(self) -> float:
        if self.anneal_step == 0:
            return self.beta
        return self.beta + (1.0 - self.beta) * min(1.0, self.sample_calls / self.anneal_step)

    def draw(self, batch_size: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        """``batch_size`` slots drawn stratified in proportion to ``p^alpha`` and their normalised IS weights."""
        total = self.sum_tree.total
        mass = (np.arange(batch_size) + rng.random(batch_size)) * (total / batch_size)
        slots = self.sum_tree.find(np.minimum(mass, np.nextafter(total, 0)))
        beta = self.current_beta()
        self.sample_calls += 1
        if not self.is_weight:
            return slots, np.ones(batch_size, dtype=np.float32)
        # w_i / max_k w_k = (N P(i))^-beta / (N P_min)^-beta = (p_i^alpha / min_k p_k^alpha)^-beta
        weights = (self.sum_tree[slots] / self.min_scaled.min) ** -beta
        return slots, weights.astype(np.float32)

    def update(self, slots: np.ndarray, serials: np.ndarray, priority: np.ndarray) -> None:
        """``p_i = |priority_i| + eps`` for the slots that still hold the item drawn (same serial)."""
        value = np.abs(priority) + self.eps
        top = float(value.max()) if len(value) else 0.0  # NaN or inf if any priority is
        if not math.isfinite(top):
            raise NonFiniteError("the policy's learn mode returned NaN/inf priorities for the prioritized replay buffer; "
                                 "check the env's rewards/observations and policy.learn.learning_rate")
        current = (self.serial[slots] == serials) & self.drawable[slots]
        if not current.all():  # usually every drawn item is still there: no copies then
            slots, value = slots[current], value[current]
            if len(slots) == 0:
                return
            top = float(value.max())
        self.max_priority = max(self.max_priority, top)
        slots, value = last_of_each(slots, value)  # a slot drawn twice: its last priority
        self.priority[slots] = value
        scaled = value ** self.alpha
        # the slots are this buffer's and the values finite and positive (checked above): no second validation
        self.sum_tree.write(slots, scaled)
        self.min_scaled.write(slots, scaled)

    def state_dict(self) -> Dict[str, Any]:
        return {'priority': self.priority.copy(), 'serial': self.serial.copy(), 'drawable': self.drawable.copy(),
                'max_priority': self.max_priority, 'sample_calls': self.sample_calls, 'next_serial': self.next_serial}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self._resize(len(state['priority']))
        self.priority, self.serial = state['priority'].copy(), state['serial'].copy()
        self.max_priority, self.next_serial = float(state['max_priority']), int(state['next_serial'])
        self.sample_calls = int(state['sample_calls'])
        self.rebuild(state['drawable'])


def _with_priority_leaves(batch: Dict[str, Any], slots: np.ndarray, serials: np.ndarray,
                          weights: np.ndarray) -> ttorch.Tensor:
    """The tree of a nested dict ``batch`` of time-major leaves plus the three ``(1, B)`` priority leaves (sharing
    memory with the int64 ``slots``, ``serials`` and float32 ``weights``: fresh arrays of this draw)."""
    return make_tree({**batch, INDEX_KEY: torch.from_numpy(slots)[None], ID_KEY: torch.from_numpy(serials)[None],
                      WEIGHT_KEY: torch.from_numpy(weights)[None]})


def batch_priority_index(batch: Any) -> Tuple[np.ndarray, np.ndarray]:
    """``(slots, serials)`` ``(B,)`` of a prioritized batch (its leaves may be on a GPU)."""
    return (batch[INDEX_KEY][0].cpu().numpy().astype(np.int64), batch[ID_KEY][0].cpu().numpy().astype(np.int64))


def is_weights(batch: Any) -> Optional[torch.Tensor]:
    """The importance-sampling weights ``(B,)`` of a batch a prioritized buffer drew, or None for any other batch.

    The batch carries them as ``is_weight`` ``(1, B)`` (one per sequence, on the time-major layout: acframe's
    buffers) or ``(B,)``; any other shape, or another B than the batch's ``reward`` ``(T, B)`` has, is a one-line
    ``PolicyError`` (a ``(B,)`` tensor read as ``(1, B)`` weighed the whole batch by its first weight)."""
    if WEIGHT_KEY not in batch:
        return None
    weights = batch[WEIGHT_KEY]
    reward = batch['reward'] if 'reward' in batch else None
    size = int(reward.shape[1]) if isinstance(reward, torch.Tensor) and reward.dim() >= 2 else None
    shape = tuple(getattr(weights, 'shape', ()))
    if len(shape) == 2 and shape[0] == 1:
        weights = weights[0]
    if not isinstance(weights, torch.Tensor) or weights.dim() != 1 or size is not None and weights.shape[0] != size:
        given = f"shape {shape}" if shape else f"a {type(batch[WEIGHT_KEY]).__name__}"
        raise PolicyError(f"the replay batch's '{WEIGHT_KEY}' has {given}; a prioritized buffer gives one "
                          f"importance-sampling weight per sequence, a tensor (1, B) or (B,)"
                          f"{f' with B={size} (the batch reward is (T, B))' if size is not None else ''} (docs/replay.md)")
    return weights


def _priority_array(priority: Any, size: int) -> np.ndarray:
    if isinstance(priority, torch.Tensor):
        priority = priority.detach().float().cpu().numpy()
    priority = np.asarray(priority, dtype=np.float64).reshape(-1)
    if priority.shape != (size,):
        raise ValueError(f"update_priority: {priority.shape[0]} priorities for a batch of {size} sequences; the "
                         f"learn forward must return one priority per sequence (info['{PRIORITY_KEY}'], shape (B,))")
    return priority


class _PriorityFeedback:
    """What both prioritized buffers share (before the uniform buffer in their bases): the learner's priorities
    handed back, and the priorities in checkpoints. ``self.priorities`` is the buffer's ``_Priorities``."""

    priorities: _Priorities
    #: the last batch drawn: its ``replay_index`` leaf and the slots and serials it holds (the same memory)
    _drawn: Optional[Tuple[torch.Tensor, np.ndarray, np.ndarray]] = None

    def _drew(self, batch: ttorch.Tensor, slots: np.ndarray, serials: np.ndarray) -> ttorch.Tensor:
        self._drawn = (batch[INDEX_KEY], slots, serials)
        return batch

    def update_priority(self, batch: Any, priority: Any) -> None:
        """The learner's new priorities ``(B,)`` for the sequences of ``batch`` (one this buffer drew)."""
        drawn, index = self._drawn, batch[INDEX_KEY]
        if drawn is not None and index is drawn[0]:  # the batch just drawn, as drawn (not a copy on a GPU, not
            slots, serials = drawn[1], drawn[2]       # one that crossed processes): its arrays, no conversion
        else:
            slots, serials = batch_priority_index(batch)
        self.priorities.update(slots, serials, _priority_array(priority, len(slots)))

    def state_dict(self) -> Dict[str, Any]:
        return {**super().state_dict(), 'priorities': self.priorities.state_dict()}  # type: ignore[misc]

    def rng_state(self) -> Dict[str, Any]:
        """The sampling RNG and beta's annealing progress (kept in every checkpoint, contents saved or not)."""
        return {**super().rng_state(), 'acframe_sample_calls': self.priorities.sample_calls}  # type: ignore[misc]

    def set_rng_state(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.priorities.sample_calls = int(state.pop('acframe_sample_calls', self.priorities.sample_calls))
        super().set_rng_state(state)  # type: ignore[misc]


@BUFFER_REGISTRY.register('prioritized')
class PrioritizedReplayBuffer(_PriorityFeedback, ReplayBuffer):
    """The ``fifo`` ring of unrolls, drawn in proportion to priority (see the module docstring).

    Draws are with replacement (stratified, one per ``1/batch_size`` of the total priority); each draw counts
    towards the unroll's ``max_use``.
    """

    config = PRIORITY_CONFIG

    def __init__(self, replay_buffer_size: int, max_use: int = 1, seed: int = 0, alpha: float = 0.6,
                 beta: float = 0.4, anneal_step: int = 0, is_weight: bool = True, priority_eps: float = 1e-6,
                 **kwargs: Any) -> None:
        super().__init__(replay_buffer_size, max_use, seed, **kwargs)
        self.priorities = _Priorities(self.capacity, alpha, beta, anneal_step, is_weight, priority_eps)

    push_copies = True  # (ReplayBuffer.push's copy)

    def push(self, samples: ttorch.Tensor) -> None:
        start = self._next
        pushed = self.pushed
        super().push(samples)
        n = min(self.pushed - pushed, self.capacity)
        slots = (start + np.arange(n)) % self.capacity  # push wrote (at most capacity) samples from the old _next
        if n:
            self.priorities.assign(slots)
            self.priorities.set_drawable(slots, True)

    def sample(self, batch_size: int) -> Optional[ttorch.Tensor]:
        """``batch_size`` unrolls drawn by priority, time-major ``(T, batch_size, ...)`` with the leaves
        ``replay_index``, ``replay_id`` and ``is_weight`` ``(1, batch_size)``; None while fewer than ``batch_size``
        are stored (as ``fifo``)."""
        if len(self) < batch_size:
            return None
        slots, weights = self.priorities.draw(batch_size, self._rng)
        batch = _nest({key: x.transpose(0, 1) for key, x in self._gather(slots).items()})
        serials = self.priorities.serial[slots]  # a copy (fancy indexing)
        np.add.at(self._use, slots, 1)
        spent = self._use[slots] >= self.max_use
        if spent.any():
            spent = np.unique(slots[spent])
            self._valid[spent] = False
            self.priorities.set_drawable(spent, False)
        self.sampled += batch_size
        return self._drew(_with_priority_leaves(batch, slots, serials, weights), slots, serials)

    def clear(self) -> None:
        super().clear()
        self.priorities.rebuild(self._valid)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        super().load_state_dict(state)
        if 'priorities' in state:
            self.priorities.load_state_dict(state['priorities'])
        else:  # a uniform buffer's checkpoint: every stored unroll at priority 1
            self.priorities.priority[:] = 1.0
            self.priorities.rebuild(self._valid)


@BUFFER_REGISTRY.register('episodic_prioritized')
class PrioritizedEpisodicReplayBuffer(_PriorityFeedback, EpisodicReplayBuffer):
    """ACER's ``episodic`` buffer whose replayed windows are drawn in proportion to the priority of their first step
    (see the module docstring); the schedule (fresh segment first, then the replays) is the ``episodic`` one."""

    config = PRIORITY_CONFIG

    def __init__(self, replay_buffer_size: int, alpha: float = 0.6, beta: float = 0.4, anneal_step: int = 0,
                 is_weight: bool = True, priority_eps: float = 1e-6, **kwargs: Any) -> None:
        super().__init__(replay_buffer_size, **kwargs)
        self.priorities = _Priorities(1, alpha, beta, anneal_step, is_weight, priority_eps)
        self._tree_stale = True

    def _allocate(self, n: int, example: Dict[str, torch.Tensor]) -> np.ndarray:
        slots = super()._allocate(n, example)
        if len(self._used) != self.priorities.capacity:
            self.priorities.grow(len(self._used))
        self.priorities.assign(slots)
        self._tree_stale = True
        return slots

    def valid_starts(self) -> np.ndarray:
        if self._valid_starts is None:
            self._tree_stale = True
        return super().valid_starts()

    def sample_windows(self, batch_size: int) -> Optional[ttorch.Tensor]:
        """``batch_size`` windows whose first steps are drawn by priority, with the leaves ``replay_index``,
        ``replay_id`` and ``is_weight`` ``(1, batch_size)``; None if no window fits."""
        starts = self.valid_starts()
        if len(starts) == 0:
            return None
        if self._tree_stale:  # the drawable first steps changed (a push, an eviction): O(n), once per push
            mask = np.zeros(self.priorities.capacity, dtype=bool)
            mask[starts] = True
            self.priorities.rebuild(mask)
            self._tree_stale = False
        slots, weights = self.priorities.draw(batch_size, self._rng)
        batch = to_dict(self.gather_windows(slots))
        serials = self.priorities.serial[slots]
        return self._drew(_with_priority_leaves(batch, slots, serials, weights), slots, serials)

    def clear(self) -> None:
        super().clear()
        self._tree_stale = True

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        super().load_state_dict(state)
        if 'priorities' in state:
            self.priorities.load_state_dict(state['priorities'])
        else:
            old = self.priorities  # a uniform buffer's checkpoint: every stored transition at priority 1
            self.priorities = _Priorities(max(1, len(self._used)), old.alpha, old.beta, old.anneal_step, old.is_weight,
                                          old.eps)
            self.priorities.priority[:] = 1.0
        self._tree_stale = True
