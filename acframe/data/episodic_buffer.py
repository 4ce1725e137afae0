"""``EpisodicReplayBuffer`` (``episodic``): ACER's replay of contiguous sub-trajectories.

What it stores: the collector's time-major segments ``(T, B)`` (``obs (T+1, B, ...)``, ``action``,
``reward``, ``terminated``, ``truncated``, ``final_obs`` and the behaviour policy's distribution statistics
the collect forward returned, e.g. ``logit`` or ``mu``/``sigma``), one transition per slot. Every column
of a segment continues the *stream* (one env's trajectory) that ended on the column's first observation,
whichever column or push it came from (so segments of several actors may interleave); a column whose
first observation ends no stored stream starts a new one.

Episodes: a stream is cut into episodes at every terminated or truncated step. The capacity counts
transitions; when a push exceeds it, whole episodes are evicted, oldest (earliest started) first, until
the rest fits. An episode longer than the whole capacity is therefore dropped whole on overflow.

Sampling: a replayed batch is ``batch_size`` windows of ``unroll_len`` consecutive transitions of one
stream, start drawn uniformly (with replacement) among the stored transitions that have ``unroll_len - 1``
stored successors. A window may cross an episode boundary: the ``terminated``/``truncated`` flags and
``final_obs`` travel with it, so the learner's per-step discounts (0 at a boundary) cut every target there
and a truncated step is bootstrapped from ``V(final_obs)`` -- the next episode's steps never leak into the
previous one. Windows never cross a gap in a stream.

The update schedule of ACER lives here, so the off-policy serial loop needs nothing special: after each
``push`` the next ``sample`` call returns the freshly pushed segment itself (time-major ``(T, B)``, the
on-policy update, ``batch_size`` ignored), then ``n`` replayed batches ``(unroll_len, batch_size)`` with
``n ~ Poisson(replay_ratio)`` (``replay_ratio_type='poisson'``) or ``replay_ratio`` per push on average,
deterministically (``'fixed'``; a fractional ratio carries over), once at least ``replay_start_size``
transitions are stored; then ``None``. Pushes that arrive before their updates were sampled (an
asynchronous learner) queue up: each fresh segment is served once, oldest first, and the replays due add up.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any, Deque, Dict, Optional

import numpy as np
import torch

from ..errors import ConfigError
from ..registry import BUFFER_REGISTRY
from .frames import FrameStore, stacked_frames
from .tree import is_leaf, lead_shape, leaves, make_tree, nest as _nest, to_dict, ttorch

REPLAY_RATIO_TYPES = ('poisson', 'fixed')


@BUFFER_REGISTRY.register('episodic')
class EpisodicReplayBuffer:
    """Trajectory replay with whole-episode eviction and ACER's replay-ratio schedule (see the module docstring).

    Args:
        replay_buffer_size: capacity in transitions.
        unroll_len: length of the replayed sub-trajectories.
        replay_ratio: replayed batches per push (mean of the Poisson draw, or the fixed rate).
        replay_ratio_type: ``'poisson'`` or ``'fixed'``.
        replay_start_size: no replay until this many transitions are stored.
        seed: seed of the sampling generator.
        dedup_frames: store stacked uint8 frames of ``obs``/``next_obs``/``final_obs`` once each
            (``acframe.data.frames``): their storage holds ``(slots, K)`` int64 indices into a frame store.
    """

    reuses_data = True
    sample_kind = 'segments'  # whole time-major segments (policy.check_buffer_kind)
    push_copies = True  # push copies the segment into the buffer's storage (``buffer.push_copies``)
    #: frames the store expects per stored transition of a stacked stream (one new frame a step, resets, margin)
    FRAMES_PER_TRANSITION = 1.25

    def __init__(self, replay_buffer_size: int, unroll_len: int = 20, replay_ratio: float = 4.0,
                 replay_ratio_type: str = 'poisson', replay_start_size: int = 0, seed: int = 0,
                 dedup_frames: bool = True, **_: Any) -> None:
        if replay_ratio_type not in REPLAY_RATIO_TYPES:
            raise ValueError(f"policy.other.replay_buffer.replay_ratio_type '{replay_ratio_type}' is not one of "
                             f"{REPLAY_RATIO_TYPES}")
        if int(replay_buffer_size) < 1 or int(unroll_len) < 1 or replay_ratio < 0 or replay_start_size < 0:
            raise ValueError("episodic buffer: replay_buffer_size and unroll_len must be > 0, replay_ratio and "
                             "replay_start_size >= 0")
        self.capacity = int(replay_buffer_size)
        self.unroll_len = int(unroll_len)
        self.replay_ratio = float(replay_ratio)
        self.replay_ratio_type = replay_ratio_type
        self.replay_start_size = int(replay_start_size)
        self._rng = np.random.default_rng(seed)
        self.dedup_frames = bool(dedup_frames)
        #: the frame store of each observation leaf (``obs`` or ``obs.<key>``); the storage keys that hold indices
        #: into one (``obs``, ``next_obs``, ``final_obs``, or their Dict keys) -> that leaf
        self._frames: Dict[str, FrameStore] = {}
        self._frame_keys: Dict[str, str] = {}
        # per-slot storage ({dotted key: (slots, ...)}) and bookkeeping; slot order is arbitrary, streams are
        # linked by ``_next``
        self._storage: Optional[Dict[str, torch.Tensor]] = None
        self._used = np.zeros(0, dtype=bool)
        self._stream = np.zeros(0, dtype=np.int64)
        self._pos = np.zeros(0, dtype=np.int64)
        self._episode = np.zeros(0, dtype=np.int64)
        self._next = np.zeros(0, dtype=np.int64)
        # per-stream: newest position, its slot (-1 once evicted), the open episode id (-1: the next step starts one)
        self._stream_last_pos = np.zeros(0, dtype=np.int64)
        self._stream_tail = np.zeros(0, dtype=np.int64)
        self._stream_episode = np.zeros(0, dtype=np.int64)
        self._tail_index: Dict[bytes, int] = {}  # the observation a live stream ended on -> that stream
        self._episode_count = 0
        self._valid_starts: Optional[np.ndarray] = None
        # the schedule after a push
        self._fresh: Deque[ttorch.Tensor] = deque()
        self._replays_left = 0
        self._replay_credit = 0.0
        self.pushed = 0
        self.sampled = 0

    @classmethod
    def check_learn_config(cls, buffer_cfg: Any, learn_cfg: Any) -> None:
        """Refuse a replay warm-up the buffer can never reach: such a run would never replay."""
        start, capacity = buffer_cfg.get('replay_start_size'), buffer_cfg.get('replay_buffer_size')
        if isinstance(start, int) and isinstance(capacity, int) and start > capacity:
            raise ConfigError(f"policy.other.replay_buffer.replay_start_size = {start} transitions > replay_buffer_size = "
                              f"{capacity}: the buffer never holds that many, so the run would make 0 replayed updates; "
                              f"lower replay_start_size or raise replay_buffer_size")

    @classmethod
    def storage_bytes(cls, capacity: int, obs_bytes: int, step_bytes: int, unroll_len: int,
                      frames: Optional[Dict[str, tuple]] = None) -> int:
        """Bytes of the storage at capacity: per transition its observation, next and final observation and
        ``step_bytes`` (action, reward, flags, the policy's statistics). ``frames``: the observation leaves stored
        deduplicated, ``{leaf: (K, frame_bytes)}``: ``FRAMES_PER_TRANSITION`` frames and ``3K`` int64 indices each."""
        frames = frames or {}
        plain = obs_bytes - sum(k * size for k, size in frames.values())
        dedup = sum(int(cls.FRAMES_PER_TRANSITION * (size + FrameStore.FRAME_OVERHEAD)) + 3 * k * 8
                    for k, size in frames.values())
        return int(capacity) * (3 * plain + dedup + step_bytes)

    # ---- sizes -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Stored transitions."""
        return int(self._used.sum())

    @property
    def num_episodes(self) -> int:
        """Episodes (complete or still open) with at least one stored transition."""
        return int(np.unique(self._episode[self._used]).size)

    # ---- push --------------------------------------------------------------------------------------
    def push(self, segment: ttorch.Tensor) -> None:
        """Store a time-major segment (``obs (T+1, B, ...)``, every other leaf ``(T, B, ...)``) and schedule updates."""
        steps, cols = _check_segment(segment)
        if steps == 0:
            return
        transitions = {}
        for key, value in leaves(segment):
            if _is_obs(key):  # obs (T+1, B, ...), or obs.<key> for each key of a Dict observation
                transitions[key] = value[:-1]
                transitions['next_' + key] = value[1:]
            else:
                transitions[key] = value
        # env-major flattening: column b's steps are consecutive, (T, B, ...) -> (B * T, ...)
        flat = {k: v.transpose(0, 1).reshape((cols * steps,) + tuple(v.shape[2:])) for k, v in transitions.items()}
        if self._storage is None:
            self._setup_frames(flat, cols * steps)
        streams = self._assign_streams(segment.obs[0])
        tails = self._stream_tail[streams].copy()  # the slot each column's stream ended on (-1: a new stream)
        slots = self._allocate(cols * steps, {k: self._stored_example(k, v) for k, v in flat.items()})
        slots_t = torch.from_numpy(slots)
        for key, value in flat.items():
            if key not in self._frame_keys:
                self._storage[key][slots_t] = value
        slots_tb = slots.reshape(cols, steps).T  # (T, B)
        if self._frames:
            self._write_frames(dict(leaves(segment)), slots_tb, tails)
        done = (segment.terminated | segment.truncated).numpy().astype(bool)
        episodes = self._episode_ids(streams, done)
        positions = self._stream_last_pos[streams][None, :] + 1 + np.arange(steps)[:, None]
        self._stream[slots_tb] = streams[None, :]
        self._pos[slots_tb] = positions
        self._episode[slots_tb] = episodes
        self._next[slots_tb[:-1]] = slots_tb[1:]
        self._next[slots_tb[-1]] = -1
        linked = self._stream_tail[streams] >= 0
        self._next[self._stream_tail[streams][linked]] = slots_tb[0][linked]
        self._stream_last_pos[streams] = positions[-1]
        self._stream_tail[streams] = slots_tb[-1]
        self._stream_episode[streams] = np.where(done[-1], -1, episodes[-1])
        for key, stream in zip(_row_keys(segment.obs[-1]), streams):
            self._tail_index[key] = int(stream)
        self._evict()
        self._valid_starts = None
        self.pushed += cols * steps
        self._schedule(segment)

    def _setup_frames(self, flat: Dict[str, torch.Tensor], first_push: int) -> None:
        """At the first push, with ``dedup_frames``: a frame store per observation leaf of stacked uint8 frames."""
        if not self.dedup_frames:
            return
        for key, value in flat.items():
            leaf = key.split('_', 1)[1] if key.startswith(('next_obs', 'final_obs')) else key
            found = stacked_frames(value.shape[1:], value.dtype) if _is_obs(leaf) else None
            if found is None:
                continue
            if leaf not in self._frames:
                expected = int(self.FRAMES_PER_TRANSITION * (self.capacity + first_push))
                self._frames[leaf] = FrameStore(found[1], value.dtype, expected)
            self._frame_keys[key] = leaf

    def _stored_example(self, key: str, value: torch.Tensor) -> torch.Tensor:
        """What the storage of ``key`` holds per slot: the value, or ``K`` int64 frame indices."""
        return value.new_empty((0, value.shape[1]), dtype=torch.int64) if key in self._frame_keys else value

    def _write_frames(self, segment: Dict[str, torch.Tensor], slots_tb: np.ndarray, tails: np.ndarray) -> None:
        """The index rows of the segment's stacked observations, step by step: an observation is the previous
        step's next observation (of the stream's tail slot at ``t = 0``), a next observation its observation
        shifted by a frame, a final observation its observation shifted, or the previous final one (zeros)."""
        linked = tails >= 0
        tails = np.where(linked, tails, 0)
        for leaf, store in self._frames.items():
            obs, final = segment[leaf], segment.get('final_' + leaf)
            rows = {k: self._storage[k] for k in (leaf, 'next_' + leaf, 'final_' + leaf) if k in self._frame_keys}
            k_frames = int(obs.shape[2])
            none = np.full((slots_tb.shape[1], k_frames), -1, dtype=np.int64)

            def of_tails(key: str) -> np.ndarray:  # the rows of each stream's tail slot (-1: a new stream)
                return np.where(linked[:, None], rows[key][tails].numpy(), none) if key in rows else none

            prev_next, prev_final = of_tails('next_' + leaf), of_tails('final_' + leaf)
            for t, slots in enumerate(slots_tb):  # (the frames of step t - 1's rows are the segment's; at t = 0
                slots_t = torch.from_numpy(slots)  # the store's, gathered)
                here = store.put(obs[t], same_from=prev_next, same_rows=obs[t] if t else None)
                rows[leaf][slots_t] = torch.from_numpy(here)
                if 'next_' + leaf in rows:
                    prev_next = store.put(obs[t + 1], shift_from=here, shift_rows=obs[t])
                    rows['next_' + leaf][slots_t] = torch.from_numpy(prev_next)
                if final is not None and 'final_' + leaf in rows:
                    prev_final = store.put(final[t], shift_from=here, shift_rows=obs[t], same_from=prev_final,
                                           same_rows=final[t - 1] if t else None)
                    rows['final_' + leaf][slots_t] = torch.from_numpy(prev_final)

    def _release_frames(self, slots: np.ndarray) -> None:
        """Drop the frame references of the slots ``slots`` (evicted or cleared)."""
        if len(slots):
            for key, leaf in self._frame_keys.items():
                self._frames[leaf].release(self._storage[key][torch.from_numpy(slots)].numpy())

    def _assign_streams(self, first_obs: torch.Tensor) -> np.ndarray:
        """The stream of every column: the live stream that ended on its first observation, else a new one."""
        keys = _row_keys(first_obs)
        streams = np.full(len(keys), -1, dtype=np.int64)
        for column, key in enumerate(keys):
            stream = self._tail_index.pop(key, -1)
            if stream >= 0 and self._stream_tail[stream] >= 0:
                streams[column] = stream
        new = np.flatnonzero(streams < 0)
        if len(new):
            first = len(self._stream_last_pos)
            streams[new] = first + np.arange(len(new))
            self._stream_last_pos = np.concatenate([self._stream_last_pos, np.full(len(new), -1, dtype=np.int64)])
            self._stream_tail = np.concatenate([self._stream_tail, np.full(len(new), -1, dtype=np.int64)])
            self._stream_episode = np.concatenate([self._stream_episode, np.full(len(new), -1, dtype=np.int64)])
        return streams

    def _episode_ids(self, streams: np.ndarray, done: np.ndarray) -> np.ndarray:
        """``(T, B)`` episode ids; new episodes are numbered by start time (row-major), so smaller is older."""
        steps, cols = done.shape
        starts = np.zeros_like(done)
        starts[0] = self._stream_episode[streams] < 0
        starts[1:] = done[:-1]
        n_new = int(starts.sum())
        new_ids = np.full(done.shape, -1, dtype=np.int64)
        new_ids[starts] = self._episode_count + np.arange(n_new)  # boolean indexing is row-major: by time
        self._episode_count += n_new
        last_start = np.maximum.accumulate(np.where(starts, np.arange(steps)[:, None], -1), axis=0)
        filled = np.take_along_axis(new_ids, np.maximum(last_start, 0), axis=0)
        return np.where(last_start >= 0, filled, self._stream_episode[streams][None, :])

    def _allocate(self, n: int, example: Dict[str, torch.Tensor]) -> np.ndarray:
        """``n`` free slots, growing the storage when there are too few."""
        free = np.flatnonzero(~self._used)
        if len(free) < n:
            grow = max(n - len(free), self.capacity + n - len(self._used))
            self._grow(grow, example)
            free = np.flatnonzero(~self._used)
        slots = free[:n]
        self._used[slots] = True
        return slots

    def _grow(self, extra: int, example: Dict[str, torch.Tensor]) -> None:
        if self._storage is not None and set(self._storage) != set(example):
            raise ValueError(f"the episodic buffer holds segments with keys {sorted(self._storage)}; got one with "
                             f"{sorted(example)}")
        fresh = {k: torch.zeros((extra,) + tuple(x.shape[1:]), dtype=x.dtype) for k, x in example.items()}
        self._storage = fresh if self._storage is None else {
            k: torch.cat([self._storage[k], fresh[k]]) for k in self._storage}
        self._used = np.concatenate([self._used, np.zeros(extra, dtype=bool)])
        for name in ('_stream', '_pos', '_episode', '_next'):
            setattr(self, name, np.concatenate([getattr(self, name), np.full(extra, -1, dtype=np.int64)]))

    def _evict(self) -> None:
        """Drop whole episodes, smallest id (oldest) first, until at most ``capacity`` transitions remain."""
        stored = int(self._used.sum())
        if stored <= self.capacity:
            return
        ids, counts = np.unique(self._episode[self._used], return_counts=True)
        remaining = stored - np.cumsum(counts)
        cut = ids[int(np.argmax(remaining <= self.capacity))]
        dropped = self._used & (self._episode <= cut)
        self._release_frames(np.flatnonzero(dropped))
        self._used[dropped] = False
        dropped_tails = np.isin(self._stream_tail, np.flatnonzero(dropped))
        self._stream_tail[dropped_tails] = -1
        self._tail_index = {k: s for k, s in self._tail_index.items() if self._stream_tail[s] >= 0}

    # ---- schedule ----------------------------------------------------------------------------------
    def _schedule(self, segment: ttorch.Tensor) -> None:
        """Queue the segment for its on-policy update and add this push's replays to those still due."""
        # a copy: the caller may reuse the pushed arrays at once (the parallel learner frees a segment's shared-memory
        # slot for the next actor segment as soon as the push returns)
        self._fresh.append(segment.clone())
        if len(self) < self.replay_start_size:
            return
        if self.replay_ratio_type == 'poisson':
            self._replays_left += int(self._rng.poisson(self.replay_ratio))
        else:
            self._replay_credit += self.replay_ratio
            replays = int(math.floor(self._replay_credit + 1e-9))
            self._replay_credit -= replays
            self._replays_left += replays

    # ---- sample ------------------------------------------------------------------------------------
    def sample(self, batch_size: int) -> Optional[ttorch.Tensor]:
        """The next batch of the schedule: the fresh segment, then replayed windows; None when the round is over."""
        if self._fresh:
            fresh = self._fresh.popleft()
            self.sampled += int(fresh.reward.numel())
            return fresh
        if self._replays_left <= 0:
            return None
        self._replays_left -= 1
        return self.sample_windows(batch_size)

    def sample_windows(self, batch_size: int) -> Optional[ttorch.Tensor]:
        """``batch_size`` stored windows of ``unroll_len`` steps as a time-major batch, or None if none fits."""
        starts = self.valid_starts()
        if len(starts) == 0:
            return None
        return self.gather_windows(self._rng.choice(starts, size=batch_size, replace=True))

    def gather_windows(self, first: np.ndarray) -> ttorch.Tensor:
        """The windows of ``unroll_len`` steps that start at the slots ``first`` ``(B,)`` (each in ``valid_starts``),
        as a time-major batch ``(unroll_len, B, ...)``."""
        batch_size = len(first)
        index = np.empty((self.unroll_len, batch_size), dtype=np.int64)
        index[0] = first
        for k in range(1, self.unroll_len):
            index[k] = self._next[index[k - 1]]
        flat_index = torch.from_numpy(index.reshape(-1))
        batch = {k: x[flat_index].reshape((self.unroll_len, batch_size) + tuple(x.shape[1:]))
                 for k, x in self._storage.items()}
        for key, leaf in self._frame_keys.items():
            batch[key] = self._frames[leaf].gather(batch[key].numpy())
        for key in [k for k in batch if k.startswith('next_obs')]:
            next_obs = batch.pop(key)
            batch[key[len('next_'):]] = torch.cat([batch[key[len('next_'):]], next_obs[-1:]], dim=0)
        self.sampled += self.unroll_len * batch_size
        return make_tree(_nest(batch))

    def valid_starts(self) -> np.ndarray:
        """Slots that start a window: stored, with ``unroll_len - 1`` stored successors in their stream."""
        if self._valid_starts is None:
            used = np.flatnonzero(self._used)
            last = self._stream_last_pos[self._stream[used]]
            self._valid_starts = used[self._pos[used] + self.unroll_len - 1 <= last]
        return self._valid_starts

    def clear(self) -> None:
        if self._frames:
            self._release_frames(np.flatnonzero(self._used))
        self._used[:] = False
        self._stream_tail[:] = -1
        self._valid_starts = None
        self._tail_index = {}
        self._fresh.clear()
        self._replays_left = 0

    # ---- state -------------------------------------------------------------------------------------
    _ARRAYS = ('_used', '_stream', '_pos', '_episode', '_next', '_stream_last_pos', '_stream_tail',
               '_stream_episode')

    def state_dict(self) -> Dict[str, Any]:
        state = {name: getattr(self, name).copy() for name in self._ARRAYS}
        state.update(storage=None if self._storage is None else dict(self._storage),
                     tail_index=dict(self._tail_index), episode_count=self._episode_count,
                     replay_credit=self._replay_credit, replays_left=self._replays_left,
                     fresh=[to_dict(segment) for segment in self._fresh],
                     rng=self._rng.bit_generator.state, pushed=self.pushed, sampled=self.sampled,
                     frames={leaf: store.state_dict() for leaf, store in self._frames.items()},
                     frame_keys=dict(self._frame_keys))
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        for name in self._ARRAYS:
            setattr(self, name, state[name].copy())
        self._storage = None if state['storage'] is None else dict(state['storage'])
        self._tail_index = dict(state['tail_index'])
        self._episode_count, self._replay_credit = state['episode_count'], state['replay_credit']
        self._rng.bit_generator.state = state['rng']
        self.pushed, self.sampled = state['pushed'], state['sampled']
        # the round in progress: fresh segments not yet trained on and the replays still scheduled
        self._valid_starts, self._replays_left = None, int(state.get('replays_left', 0))
        self._fresh = deque(make_tree(segment) for segment in state.get('fresh', []))
        # the checkpoint's layout decides (dedup_frames only chooses a fresh buffer's): a plain one stays plain
        self._frame_keys = dict(state.get('frame_keys', {}))
        self._frames = {leaf: FrameStore.from_state(store) for leaf, store in state.get('frames', {}).items()}

    def rng_state(self) -> Dict[str, Any]:
        return self._rng.bit_generator.state

    def set_rng_state(self, state: Dict[str, Any]) -> None:
        self._rng.bit_generator.state = state


def _check_segment(segment: ttorch.Tensor) -> tuple:
    keys = set(segment.keys())
    missing = {'obs', 'reward', 'terminated', 'truncated'} - keys
    if missing:
        raise ValueError(f"the episodic buffer stores collected segments; this one lacks {sorted(missing)} "
                         f"(the policy's get_train_sample must return the time-major segment)")
    steps, cols = (int(n) for n in segment.reward.shape[:2])
    if lead_shape(segment.obs, 1)[0] != steps + 1:
        raise ValueError(f"the episodic buffer takes time-major segments with obs (T+1, B, ...); got obs "
                         f"{lead_shape(segment.obs, 2)} for reward {tuple(segment.reward.shape)}")
    return steps, cols


def _row_keys(obs: Any) -> list:
    """One hashable key per observation row ``(B, ...)``: its bytes (of every key of a Dict observation)."""
    parts = [obs] if is_leaf(obs) else [leaf for _, leaf in leaves(obs)]
    rows = [part.reshape(part.shape[0], -1).contiguous().numpy() for part in parts]
    return [b''.join(row[i].tobytes() for row in rows) for i in range(rows[0].shape[0])]


def _is_obs(key: str) -> bool:
    """The dotted key of a segment's observations: ``obs`` or a Dict observation's ``obs.<key>``."""
    return key == 'obs' or key.startswith('obs.')
