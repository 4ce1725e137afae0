"""``SharedWeights``: the learner's newest weights in shared memory, read by actor processes without locks.

Two slots of flat tensors (one per dtype) and a small int64 header live in shared memory. The learner is
the only writer: it fills the slot it did not publish last, bracketed by a per-slot sequence counter
(odd while writing), then bumps the publish count. A reader picks the slot of the latest publish, copies
it, and retries if the slot's sequence counter changed meanwhile (a seqlock). The learner never waits
for an actor, and a killed actor cannot leave anything locked.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import torch

_COUNT, _STOP, _VERSION, _SEQ = 0, 1, 2, 4  # header layout: count, stop, version[2], seq[2]


class SharedWeights:
    """Publish (learner) and copy (actors) versioned weights through shared memory; also a stop flag."""

    def __init__(self, template: Dict[str, torch.Tensor]) -> None:
        self._layout: List[Tuple[str, str, int, int, Tuple[int, ...]]] = []
        sizes: Dict[str, int] = {}
        dtypes: Dict[str, torch.dtype] = {}
        for name, tensor in template.items():
            key = str(tensor.dtype)
            dtypes[key] = tensor.dtype
            offset = sizes.get(key, 0)
            self._layout.append((name, key, offset, tensor.numel(), tuple(tensor.shape)))
            sizes[key] = offset + tensor.numel()
        self._flats = {key: torch.zeros((2, size), dtype=dtypes[key]).share_memory_() for key, size in sizes.items()}
        self._header = torch.zeros(6, dtype=torch.int64).share_memory_()
        self._header[_VERSION:_VERSION + 2] = -1
        self._views: Any = None
        self._h: Any = None

    def __getstate__(self) -> Dict[str, Any]:
        return {'_layout': self._layout, '_flats': self._flats, '_header': self._header}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views = None
        self._h = None

    @property
    def _head(self) -> np.ndarray:
        if self._h is None:
            self._h = self._header.numpy()
        return self._h

    def _slot_views(self, slot: int) -> Dict[str, torch.Tensor]:
        if self._views is None:
            self._views = [{name: self._flats[key][s, offset:offset + numel].view(shape)
                            for name, key, offset, numel, shape in self._layout} for s in range(2)]
        return self._views[slot]

    # ---- learner -----------------------------------------------------------------------------------
    def publish(self, weights: Dict[str, torch.Tensor], version: int) -> None:
        """Make ``weights`` the newest, as ``version`` (never waits for readers)."""
        head = self._head
        count = int(head[_COUNT]) + 1
        slot = count % 2
        head[_SEQ + slot] += 1  # odd: being written
        views = self._slot_views(slot)
        with torch.no_grad():
            for name, view in views.items():
                view.copy_(weights[name])
        head[_VERSION + slot] = version
        head[_SEQ + slot] += 1
        head[_COUNT] = count

    def request_stop(self) -> None:
        self._head[_STOP] = 1

    # ---- actors ------------------------------------------------------------------------------------
    def stopped(self) -> bool:
        return bool(self._head[_STOP])

    def latest_version(self) -> int:
        head = self._head
        return int(head[_VERSION + int(head[_COUNT]) % 2])

    def load_latest(self, load_weights: Callable[[Dict[str, torch.Tensor]], None]) -> int:
        """Pass the newest weights to ``load_weights`` (which copies them) and return their version."""
        head = self._head
        while True:
            slot = int(head[_COUNT]) % 2
            seq = int(head[_SEQ + slot])
            if seq % 2:
                continue
            version = int(head[_VERSION + slot])
            load_weights(self._slot_views(slot))
            if int(head[_SEQ + slot]) == seq:
                return version
