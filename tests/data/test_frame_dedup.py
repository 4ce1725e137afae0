"""Frame-deduplicated storage (``dedup_frames``): every batch equals the plain storage's, element for element.

The streams are collected as the collector does: ``B`` envs, frame stacks of ``K`` frames (a reset repeats its first
frame, or pads with zeros), episodes that end terminated or truncated at random steps (``final_obs`` their last stack,
zeros elsewhere), frames drawn from few values (so unrelated frames are often equal: dedup must compare bytes). The
pushes wrap the rings around several times, and segments of several envs interleave.
"""
import numpy as np
import pytest
import torch

from acframe.data import split_segment, ttorch
from acframe.data.buffer import ReplayBuffer
from acframe.data.episodic_buffer import EpisodicReplayBuffer
from acframe.data.frames import FrameStore
from acframe.data.prioritized import PrioritizedEpisodicReplayBuffer, PrioritizedReplayBuffer
from acframe.utils import from_plain_data, to_plain_data

K, H, W = 4, 5, 6


class Streams:
    """``cols`` envs producing stacked uint8 frames; ``segment(T)`` a collector's time-major segment."""

    def __init__(self, cols: int, seed: int, zero_pad: bool = False) -> None:
        self.cols, self.zero_pad = cols, zero_pad
        self.rng = np.random.default_rng(seed)
        self.stacks = [self._reset() for _ in range(cols)]

    def _frame(self) -> np.ndarray:
        return self.rng.integers(0, 3, (H, W), dtype=np.uint8)  # few values: coincidences happen

    def _reset(self) -> np.ndarray:
        first = self._frame()
        if self.zero_pad:
            return np.stack([np.zeros_like(first)] * (K - 1) + [first])
        return np.stack([first] * K)

    def segment(self, steps: int) -> ttorch.Tensor:
        obs = np.zeros((steps + 1, self.cols, K, H, W), dtype=np.uint8)
        final = np.zeros((steps, self.cols, K, H, W), dtype=np.uint8)
        terminated = np.zeros((steps, self.cols), dtype=bool)
        truncated = np.zeros((steps, self.cols), dtype=bool)
        for b in range(self.cols):
            obs[0, b] = self.stacks[b]
        for t in range(steps):
            for b in range(self.cols):
                nxt = np.concatenate([self.stacks[b][1:], self._frame()[None]])
                end = self.rng.random()
                if end < 0.08:
                    terminated[t, b] = True
                elif end < 0.12:
                    truncated[t, b] = True
                if terminated[t, b] or truncated[t, b]:
                    final[t, b] = nxt
                    nxt = self._reset()
                self.stacks[b] = nxt
                obs[t + 1, b] = nxt
        return ttorch.Tensor({
            'obs': torch.from_numpy(obs), 'final_obs': torch.from_numpy(final),
            'action': torch.from_numpy(self.rng.integers(0, 6, (steps, self.cols))),
            'reward': torch.from_numpy(self.rng.standard_normal((steps, self.cols)).astype(np.float32)),
            'terminated': torch.from_numpy(terminated), 'truncated': torch.from_numpy(truncated),
            'logit': torch.from_numpy(self.rng.standard_normal((steps, self.cols, 6)).astype(np.float32)),
        })


def assert_same_batch(plain: ttorch.Tensor, dedup: ttorch.Tensor) -> None:
    assert (plain is None) == (dedup is None)
    if plain is None:
        return
    plain_leaves, dedup_leaves = dict(_leaves(plain)), dict(_leaves(dedup))
    assert plain_leaves.keys() == dedup_leaves.keys()
    for key, x in plain_leaves.items():
        y = dedup_leaves[key]
        assert x.dtype == y.dtype and x.shape == y.shape, key
        assert torch.equal(x, y), key


def _leaves(tree, prefix=''):
    for key, value in tree.items():
        if isinstance(value, torch.Tensor) and not isinstance(value, ttorch.Tensor):
            yield prefix + key, value
        else:
            yield from _leaves(value, prefix + key + '.')


def stores(buffer):
    return list(buffer._frames.values())


def frame_index(buffer) -> dict:
    """``{storage key: (slots, ..., K) frame indices}`` of a fifo or an episodic buffer."""
    if hasattr(buffer, '_frame_index'):
        return buffer._frame_index
    return {key: buffer._storage[key].numpy() for key in buffer._frame_keys}


def check_refs(buffer) -> None:
    """Every frame's reference count is exactly the number of stored index entries that point at it."""
    for name, store in buffer._frames.items():
        counts = np.zeros(store.allocated, dtype=np.int64)
        for key, rows in frame_index(buffer).items():
            if key == name or key == 'final_' + name or key == 'next_' + name:
                live = rows[_stored_slots(buffer)]
                np.add.at(counts, live.reshape(-1), 1)
        assert np.array_equal(counts, store.refs), name
        assert len(np.unique(store._free)) == len(store._free) and (store.refs[store._free] == 0).all()
        assert len(store._free) + int((store.refs > 0).sum()) == store.allocated


def _stored_slots(buffer):
    return buffer._filled if hasattr(buffer, '_filled') else buffer._used


def fifo_run(cls, dedup: bool, pushes: int = 14, **kwargs):
    streams = Streams(cols=3, seed=5)
    buffer = cls(replay_buffer_size=13, max_use=3, seed=7, dedup_frames=dedup, **kwargs)
    batches = []
    for i in range(pushes):
        buffer.push(split_segment(streams.segment(8), unroll_len=4))  # 6 samples a push: the ring wraps often
        batches.append(buffer.sample(5))
        if cls is PrioritizedReplayBuffer and batches[-1] is not None:
            buffer.update_priority(batches[-1], torch.arange(5, dtype=torch.float32) + i)
    return buffer, batches


@pytest.mark.parametrize('cls', [ReplayBuffer, PrioritizedReplayBuffer])
def test_fifo_batches_equal_the_plain_buffers_and_frames_are_stored_once(cls):
    plain, plain_batches = fifo_run(cls, False)
    dedup, dedup_batches = fifo_run(cls, True)
    assert not plain._frames and set(frame_index(dedup)) == {'obs', 'final_obs'}
    for a, b in zip(plain_batches, dedup_batches):
        assert_same_batch(a, b)
    check_refs(dedup)
    # the frames stored: about U + K + 1 per sample (9 here) instead of 2U+1 stacks of K (36)
    store = stores(dedup)[0]
    assert store.live < 10 * plain.capacity
    # a wrong frame would be seen: swap two live frames and the next batch differs from the plain buffer's
    live = np.flatnonzero(store.refs > 0)
    a, b = next((i, j) for i in live for j in live if not torch.equal(store._chunks[0][i], store._chunks[0][j]))
    chunk = store._chunks[0]
    chunk[[a, b]] = chunk[[b, a]]
    everything = np.arange(dedup.capacity)
    batch_dedup, batch_plain = dedup._gather(everything), plain._gather(everything)
    assert not torch.equal(batch_dedup['obs'], batch_plain['obs']) or \
        not torch.equal(batch_dedup['final_obs'], batch_plain['final_obs'])


def test_fifo_state_dict_round_trips_through_a_checkpoint_and_sampling_goes_on_identically():
    buffer, _ = fifo_run(ReplayBuffer, True, pushes=6)
    restored = ReplayBuffer(replay_buffer_size=13, max_use=3, seed=99, dedup_frames=True)
    restored.load_state_dict(from_plain_data(to_plain_data(buffer.state_dict())))
    streams = Streams(cols=3, seed=11)
    for _ in range(4):
        segment = split_segment(streams.segment(8), unroll_len=4)
        buffer.push(segment)
        restored.push(segment)
        assert_same_batch(buffer.sample(4), restored.sample(4))
    check_refs(restored)
    # a plain checkpoint stays plain in a buffer with dedup_frames (the checkpoint decides the layout)
    plain, _ = fifo_run(ReplayBuffer, False, pushes=3)
    loaded = ReplayBuffer(replay_buffer_size=13, max_use=3, dedup_frames=True)
    loaded.load_state_dict(from_plain_data(to_plain_data(plain.state_dict())))
    assert not loaded._frames and loaded.sample(2) is not None


def test_out_buffers_and_zero_padded_stacks():
    streams = Streams(cols=2, seed=3, zero_pad=True)
    plain = ReplayBuffer(replay_buffer_size=7, max_use=2, seed=1, dedup_frames=False)
    dedup = ReplayBuffer(replay_buffer_size=7, max_use=2, seed=1, dedup_frames=True)
    for _ in range(6):
        segment = split_segment(streams.segment(6), unroll_len=3)
        plain.push(segment)
        dedup.push(segment)
        out = dedup.batch_buffer(3)
        assert_same_batch(plain.sample(3), dedup.sample(3, out=out))
    check_refs(dedup)


def test_a_store_that_overflows_its_first_chunk_grows_and_still_gathers_exactly():
    rng = np.random.default_rng(0)
    store = FrameStore((H, W), torch.uint8, expected=3)
    rows = torch.from_numpy(rng.integers(0, 256, (5, K, H, W), dtype=np.uint8))  # nothing repeats
    index = store.put(rows)
    assert len(store._chunks) > 1 and torch.equal(store.gather(index), rows)
    store.release(index[:2])
    again = store.put(rows[:2])
    assert set(again.reshape(-1)) <= set(index[:2].reshape(-1)) and torch.equal(store.gather(again), rows[:2])


def episodic_run(cls, dedup: bool, **kwargs):
    streams = [Streams(cols=2, seed=21), Streams(cols=2, seed=22)]  # two actors' segments interleave
    buffer = cls(replay_buffer_size=60, unroll_len=3, replay_ratio=2.0, replay_ratio_type='fixed', seed=3,
                 dedup_frames=dedup, **kwargs)
    batches = []
    for i in range(16):
        buffer.push(streams[i % 2].segment(7))
        while (batch := buffer.sample(4)) is not None:
            batches.append(batch)
            if cls is PrioritizedEpisodicReplayBuffer and 'is_weight' in batch:
                buffer.update_priority(batch, torch.arange(4, dtype=torch.float32) + i)
    return buffer, batches


@pytest.mark.parametrize('cls', [EpisodicReplayBuffer, PrioritizedEpisodicReplayBuffer])
def test_episodic_batches_equal_the_plain_buffers(cls):
    plain, plain_batches = episodic_run(cls, False)
    dedup, dedup_batches = episodic_run(cls, True)
    assert len(plain_batches) == len(dedup_batches) > 20
    for a, b in zip(plain_batches, dedup_batches):
        assert_same_batch(a, b)
    assert set(frame_index(dedup)) == {'obs', 'next_obs', 'final_obs'}
    check_refs(dedup)
    store = stores(dedup)[0]
    assert store.live < 0.3 * len(dedup) * 3 * K  # obs, next and final obs of every transition, plain
    restored = cls(replay_buffer_size=60, unroll_len=3, replay_ratio=2.0, replay_ratio_type='fixed', seed=0,
                   dedup_frames=True)
    restored.load_state_dict(from_plain_data(to_plain_data(dedup.state_dict())))
    assert_same_batch(dedup.sample_windows(6), restored.sample_windows(6))
    check_refs(restored)
    # a wrong frame is seen
    live = np.flatnonzero(store.refs > 0)
    a, b = next((i, j) for i in live for j in live if not torch.equal(store._chunks[0][i], store._chunks[0][j]))
    store._chunks[0][[a, b]] = store._chunks[0][[b, a]]
    starts = dedup.valid_starts()
    assert not torch.equal(dedup.gather_windows(starts).obs, plain.gather_windows(plain.valid_starts()).obs)


@pytest.mark.parametrize('policy_type', ['impala', 'acer'])
def test_a_pixel_run_and_its_resume_with_the_deduplicated_buffer_equal_the_plain_buffers(tmp_path, policy_type):
    """toy_pixel_dot's uint8 (2, 16, 16) stacks, the buffer saved in the checkpoint: a run, then a run stopped and
    resumed, give every learner info of the same runs with the plain buffer, bit for bit. (This env's frame stack
    is not plain data, so a resume resets the envs, with either buffer: the resumed runs are compared.)"""
    from acframe.entry import serial_pipeline
    from acframe.worker import LearnerHook, load_checkpoint

    class Infos(LearnerHook):
        def __init__(self):
            self.infos = []

        def after_iter(self, learner, info):
            self.infos.append((learner.train_iter, dict(info)))

    def config(dedup):
        model = dict(encoder='impala_resnet', encoder_channels=[8], encoder_hidden_size_list=[32], activation='relu')
        buffer = dict(save_in_checkpoint=True, dedup_frames=dedup)
        if policy_type == 'impala':
            policy = dict(model=model, unroll_len=4, learn=dict(batch_size=4, update_per_collect=2),
                          collect=dict(n_sample=4),
                          other=dict(replay_buffer=dict(buffer, replay_buffer_size=12, max_use=3)))
        else:
            policy = dict(model=model, learn=dict(batch_size=2), collect=dict(n_sample=4),
                          other=dict(replay_buffer=dict(buffer, replay_buffer_size=40, unroll_len=4,
                                                        replay_start_size=8)))
        main = dict(env=dict(env_id='toy_pixel_dot', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                             stop_value=None),
                    policy=dict(policy, eval=dict(evaluator=dict(eval_freq=1000))))
        return main, dict(env=dict(type='toy_pixel_dot'), policy=dict(type=policy_type))

    def train(cfg, name, stop, resume=None):
        hook = Infos()
        serial_pipeline(cfg, seed=0, exp_dir=None if resume else str(tmp_path / name), resume=resume,
                        max_train_iter=stop, progress=False, learner_hooks=[hook])
        return hook.infos

    runs = {}
    for dedup in (False, True):
        whole = train(config(dedup), f'whole{dedup}', 24)
        first = train(config(dedup), f'half{dedup}', 12)
        state = load_checkpoint(str(tmp_path / f'half{dedup}' / 'ckpt' / 'ckpt_latest.pth'))
        assert bool(state['buffer']['frames']) == dedup
        resumed = train(None, '', 24, resume=str(tmp_path / f'half{dedup}'))
        assert first == whole[:len(first)] and len(resumed) == len(whole) - len(first) > 0
        runs[dedup] = (whole, resumed)
    assert runs[True] == runs[False]


@pytest.mark.parametrize('config_file', ['cartpole_impala.py', 'cartpole_acer.py'])
def test_the_start_up_memory_check_counts_the_frame_store_for_stacked_frames_only(config_file):
    """A buffer of Atari stacks refused stored whole fits deduplicated; float vectors and channels-last images are
    counted whole either way."""
    import gymnasium as gym

    from acframe.config import compile_config
    from acframe.entry.budget import check_buffer_memory
    from acframe.errors import ConfigError

    frames, vectors, actions = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Box(-1, 1, (4, 84, 84)), \
        gym.spaces.Discrete(6)
    hwc = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)  # the same bytes, channels last
    from acframe.entry.budget import _STEP_OVERHEAD_BYTES, action_step_bytes
    from acframe.policy import policy_class
    from acframe.registry import BUFFER_REGISTRY

    cfg = compile_config(config_file)
    cls = BUFFER_REGISTRY.get(cfg.policy.other.replay_buffer.type)
    unroll, step = policy_class(cfg).train_sample_len(cfg.policy), action_step_bytes(actions) + _STEP_OVERHEAD_BYTES
    plain = cls.storage_bytes(1000, 4 * 84 * 84, step, unroll)
    dedup_bytes = cls.storage_bytes(1000, 4 * 84 * 84, step, unroll, frames={'': (4, 84 * 84)})
    assert dedup_bytes < plain / 5
    available = lambda: 2 * (plain + dedup_bytes) // 2  # a buffer may take half: between the two
    for dedup in (True, False):
        cfg = compile_config(config_file, ['policy.other.replay_buffer.replay_buffer_size=1000',
                                           f'policy.other.replay_buffer.dedup_frames={dedup}'])
        if dedup:
            check_buffer_memory(cfg, frames, actions, available=available)
        else:
            with pytest.raises(ConfigError, match='replay_buffer_size'):
                check_buffer_memory(cfg, frames, actions, available=available)
        with pytest.raises(ConfigError, match='replay_buffer_size'):
            check_buffer_memory(cfg, vectors, actions, available=available)
        with pytest.raises(ConfigError, match='replay_buffer_size'):  # an HWC image's rows are not a frame stack
            check_buffer_memory(cfg, hwc, actions, available=available)
