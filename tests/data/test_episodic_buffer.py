"""Specification of the ``episodic`` replay buffer: ACER's trajectory replay and update schedule."""
import numpy as np
import pytest
import torch

from acframe.data import ttorch
from acframe.utils import atomic_torch_save, from_plain_data
from acframe.data.episodic_buffer import EpisodicReplayBuffer
from acframe.registry import BUFFER_REGISTRY

OBS = 3


class Streams:
    """Fake collector: ``cols`` envs whose observation encodes (env, global step), with episode ends where asked."""

    def __init__(self, cols: int = 2) -> None:
        self.cols, self.t = cols, 0

    def obs_at(self, t: int) -> torch.Tensor:
        obs = torch.zeros(self.cols, OBS)
        obs[:, 0] = torch.arange(self.cols).float()  # env index
        obs[:, 1] = float(t)  # global step
        return obs

    def segment(self, steps: int, terminated=(), truncated=()) -> ttorch.Tensor:
        """``steps`` steps from the current time; ``terminated``/``truncated``: (t within segment, column) pairs."""
        obs = torch.stack([self.obs_at(self.t + k) for k in range(steps + 1)])
        term = torch.zeros(steps, self.cols, dtype=torch.bool)
        trunc = torch.zeros(steps, self.cols, dtype=torch.bool)
        for t, b in terminated:
            term[t, b] = True
        for t, b in truncated:
            trunc[t, b] = True
        step_ids = obs[:-1, :, 1]
        segment = ttorch.Tensor(dict(
            obs=obs, reward=step_ids.clone(), terminated=term, truncated=trunc, final_obs=torch.zeros(steps, self.cols, OBS),
            action=step_ids.long() % 2, logit=torch.stack([step_ids, -step_ids], dim=-1),
        ))
        self.t += steps
        return segment


def make_buffer(**kwargs) -> EpisodicReplayBuffer:
    defaults = dict(replay_buffer_size=1000, unroll_len=4, replay_ratio=1.0, replay_ratio_type='fixed',
                    replay_start_size=0, seed=0)
    defaults.update(kwargs)
    return EpisodicReplayBuffer(**defaults)


def drain(buffer: EpisodicReplayBuffer, batch_size: int = 8) -> list:
    """Every batch the buffer serves after a push, until it returns None."""
    batches = []
    while (batch := buffer.sample(batch_size)) is not None:
        batches.append(batch)
    return batches


def same(a: ttorch.Tensor, b: ttorch.Tensor) -> bool:
    """The same keys and the same values (a served fresh segment is a copy of the pushed one)."""
    return set(a.keys()) == set(b.keys()) and all(torch.equal(a[k], b[k]) for k in a.keys())


def test_registered_as_episodic():
    assert BUFFER_REGISTRY.get('episodic') is EpisodicReplayBuffer


def test_replayed_windows_are_contiguous_sub_trajectories_of_one_env():
    """Each window holds unroll_len consecutive steps of one env, with the step after it as obs[unroll_len]."""
    streams, buffer = Streams(cols=3), make_buffer(unroll_len=5)
    for _ in range(4):  # windows may span the segments: the streams continue across pushes
        buffer.push(streams.segment(6))
    batch = buffer.sample_windows(64)
    assert batch.obs.shape == (6, 64, OBS) and batch.reward.shape == (5, 64) and batch.logit.shape == (5, 64, 2)
    env, step = batch.obs[..., 0], batch.obs[..., 1]
    assert (env == env[0]).all(), "a window never mixes envs"
    assert (step[1:] - step[:-1] == 1).all(), "a window is consecutive in time"
    torch.testing.assert_close(batch.reward, step[:-1])  # per-step fields stay aligned with their observation
    torch.testing.assert_close(batch.action, step[:-1].long() % 2)
    assert ((step[0] % 6) > 1).any(), "windows start anywhere, also across segment ends"


def test_all_starts_with_enough_successors_are_sampled_uniformly():
    """24 steps per env, unroll_len 5: starts 0..19 of each of 2 envs, each about equally often."""
    streams, buffer = Streams(cols=2), make_buffer(unroll_len=5)
    for _ in range(4):
        buffer.push(streams.segment(6))
    assert len(buffer.valid_starts()) == 2 * 20
    starts = buffer.sample_windows(8000).obs[0, :, :2]
    keys, counts = np.unique(starts.numpy(), axis=0, return_counts=True)
    assert len(keys) == 40 and counts.min() > 0.6 * 200 and counts.max() < 1.4 * 200


def test_windows_never_cross_a_gap_between_unrelated_segments():
    """A segment whose first observation does not continue a column's stream starts a new stream."""
    streams, buffer = Streams(cols=2), make_buffer(unroll_len=4)
    buffer.push(streams.segment(3))
    streams.t += 100  # the collector was reset / another actor pushed: no continuity
    buffer.push(streams.segment(3))
    assert buffer.sample_windows(1) is None, "no stream holds 4 consecutive steps"
    buffer.push(streams.segment(3))
    step = buffer.sample_windows(200).obs[..., 1]
    assert (step[1:] - step[:-1] == 1).all() and (step[0] >= 103).all()


def test_streams_continue_across_interleaved_pushes_of_several_actors():
    """Segments of two actors alternate; each column still continues its own env's stream."""
    actors = [Streams(cols=2), Streams(cols=2)]
    for stream in actors[1:]:
        stream.t = 1000  # another actor's envs: other observations
    buffer = make_buffer(unroll_len=6)
    for _ in range(3):
        for actor in actors:
            buffer.push(actor.segment(4))
    assert len(buffer.valid_starts()) == 4 * (12 - 6 + 1), "4 envs with 12 consecutive steps each"
    step = buffer.sample_windows(300).obs[..., 1]
    assert (step[1:] - step[:-1] == 1).all()


def test_pushes_not_yet_trained_on_queue_up():
    """Two pushes before any sample (an asynchronous learner): both fresh segments, oldest first, then all replays."""
    streams, buffer = Streams(cols=1), make_buffer(replay_ratio=2.0, unroll_len=2)
    first, second = streams.segment(4), streams.segment(4)
    buffer.push(first)
    buffer.push(second)
    batches = drain(buffer)
    assert same(batches[0], first) and same(batches[1], second) and len(batches) == 2 + 4


def test_the_fresh_segment_served_is_a_copy_of_what_was_pushed():
    """The pusher may overwrite its arrays once push returns (the parallel learner's shared-memory slot, freed and
    filled by the next actor segment): the on-policy update still gets the pushed data."""
    streams = Streams()
    buffer = make_buffer()
    segment = streams.segment(5)
    expected = segment.clone()
    buffer.push(segment)
    for _, leaf in segment.items():
        leaf.fill_(7)  # (action: an index out of range once reused)
    fresh = buffer.sample(8)
    assert same(fresh, expected)


def test_windows_cross_episode_ends_with_their_flags():
    """A window over an episode end carries terminated/truncated there; obs after it is the next episode's."""
    streams, buffer = Streams(cols=1), make_buffer(unroll_len=6)
    buffer.push(streams.segment(6, terminated=[(2, 0)]))
    batch = buffer.sample_windows(4)
    assert batch.terminated[:, 0].tolist() == [False, False, True, False, False, False]
    assert not batch.truncated.any()
    assert buffer.num_episodes == 2


def test_capacity_counts_transitions_and_evicts_whole_oldest_episodes():
    """Capacity 20 transitions; overflow drops whole episodes, earliest started first, until the rest fits."""
    streams, buffer = Streams(cols=2), make_buffer(replay_buffer_size=20, unroll_len=2)
    # env 0: episodes of 4 steps; env 1: one long episode
    buffer.push(streams.segment(8, terminated=[(3, 0), (7, 0)]))
    assert len(buffer) == 16 and buffer.num_episodes == 3
    buffer.push(streams.segment(8, terminated=[(3, 0), (7, 0)]))
    # 32 stored > 20: the oldest episodes are env 1's (started at step 0 with env 0's first, numbered after it)
    # and env 0's first; dropping env 0's first (4) leaves 28, then env 1's (16) leaves 12 <= 20
    assert len(buffer) == 12
    stored = buffer.sample_windows(500).obs[..., :2].reshape(-1, 2)
    assert (stored[:, 0] == 0).all(), "env 1's episode, the oldest left, was evicted whole"
    assert stored[:, 1].min() >= 4, "env 0's first episode (steps 0-3) was evicted"
    assert buffer.num_episodes == 3


def test_an_open_episode_keeps_growing_after_older_ones_are_evicted():
    streams, buffer = Streams(cols=1), make_buffer(replay_buffer_size=10, unroll_len=3)
    buffer.push(streams.segment(4, terminated=[(3, 0)]))
    for _ in range(2):
        buffer.push(streams.segment(4))
    assert len(buffer) == 8 and buffer.num_episodes == 1
    step = buffer.sample_windows(100).obs[..., 1]
    assert (step[0] >= 4).all() and (step[1:] - step[:-1] == 1).all()


def test_after_a_push_the_fresh_segment_comes_first_then_the_fixed_number_of_replays():
    streams, buffer = Streams(cols=2), make_buffer(replay_ratio=3.0, replay_ratio_type='fixed', unroll_len=4)
    segment = streams.segment(8)
    buffer.push(segment)
    batches = drain(buffer, batch_size=5)
    assert same(batches[0], segment), "the on-policy update trains on the freshly collected segment"
    assert [tuple(b.reward.shape) for b in batches[1:]] == [(4, 5)] * 3
    assert buffer.sample(5) is None


def test_fractional_fixed_replay_ratio_carries_over():
    streams, buffer = Streams(cols=1), make_buffer(replay_ratio=0.5, replay_ratio_type='fixed', unroll_len=2)
    counts = []
    for _ in range(6):
        buffer.push(streams.segment(4))
        counts.append(len(drain(buffer)) - 1)
    assert counts == [0, 1, 0, 1, 0, 1]


def test_poisson_replay_ratio_has_the_configured_mean():
    streams, buffer = Streams(cols=1), make_buffer(replay_ratio=4.0, replay_ratio_type='poisson', unroll_len=2)
    counts = []
    for _ in range(250):
        buffer.push(streams.segment(2))
        counts.append(len(drain(buffer)) - 1)
    assert abs(np.mean(counts) - 4.0) < 0.4 and np.var(counts) > 2.0, "Poisson: mean 4 and variance 4"


def test_no_replay_before_replay_start_size_transitions():
    streams, buffer = Streams(cols=2), make_buffer(replay_ratio=2.0, replay_start_size=20, unroll_len=2)
    buffer.push(streams.segment(5))
    assert len(drain(buffer)) == 1, "10 < 20 stored: only the on-policy batch"
    buffer.push(streams.segment(5))
    assert len(drain(buffer)) == 3


def test_state_dict_round_trip_replays_the_same_windows():
    streams, buffer = Streams(cols=2), make_buffer(replay_buffer_size=30, unroll_len=3)
    for _ in range(5):
        buffer.push(streams.segment(5, terminated=[(1, 1)]))
    clone = make_buffer(replay_buffer_size=30, unroll_len=3, seed=123)
    clone.load_state_dict(buffer.state_dict())
    assert len(clone) == len(buffer)
    a, b = buffer.sample_windows(16), clone.sample_windows(16)
    for key in ('obs', 'reward', 'terminated', 'action', 'logit'):
        assert torch.equal(a[key], b[key])
    segment = streams.segment(5)
    buffer.push(segment)
    clone.push(segment)
    assert torch.equal(buffer.sample_windows(16).obs, clone.sample_windows(16).obs)


def test_state_dict_keeps_the_round_in_progress():
    """A checkpoint taken mid-round restores the fresh segment still owed and the replays still scheduled."""
    streams, buffer = Streams(cols=2), make_buffer(replay_ratio=3.0, replay_ratio_type='fixed', unroll_len=2)
    buffer.push(streams.segment(4))
    drain(buffer)
    buffer.push(streams.segment(4))
    buffer.sample(3)  # the fresh segment: 3 replays are still owed
    clone = make_buffer(replay_ratio=3.0, replay_ratio_type='fixed', unroll_len=2, seed=7)
    clone.load_state_dict(buffer.state_dict())
    rest, rest_clone = drain(buffer, batch_size=3), drain(clone, batch_size=3)
    assert len(rest) == len(rest_clone) == 3
    assert all(torch.equal(a.obs, b.obs) for a, b in zip(rest, rest_clone))


def test_rejects_item_major_samples_and_bad_settings():
    buffer = make_buffer()
    item_major = ttorch.Tensor(dict(obs=torch.zeros(4, 6, OBS), reward=torch.zeros(4, 5),
                                    terminated=torch.zeros(4, 5, dtype=torch.bool),
                                    truncated=torch.zeros(4, 5, dtype=torch.bool)))
    with pytest.raises(ValueError, match='time-major'):
        buffer.push(item_major)
    with pytest.raises(ValueError, match='replay_ratio_type'):
        make_buffer(replay_ratio_type='uniform')


def test_uint8_image_observations_are_stored_and_replayed_as_uint8():
    streams = Streams(cols=2)
    segment = streams.segment(8)
    images = torch.randint(0, 256, (9, 2, 2, 6, 6), dtype=torch.uint8)
    images[:, :, 0, 0, 0] = torch.arange(9, dtype=torch.uint8).view(9, 1)  # the step, so windows can be checked
    images[:, :, 0, 0, 1] = torch.arange(2, dtype=torch.uint8)  # the env
    segment.obs = images
    segment.final_obs = torch.zeros((8, 2, 2, 6, 6), dtype=torch.uint8)
    buffer = make_buffer(unroll_len=4)
    buffer.push(segment)
    fresh = buffer.sample(2)  # the pushed segment first, then replayed windows
    assert fresh.obs.dtype == torch.uint8 and torch.equal(fresh.obs, images)
    batch = buffer.sample(2)
    assert batch.obs.dtype == torch.uint8 and batch.final_obs.dtype == torch.uint8
    assert batch.obs.shape[0] == 5 and batch.obs.shape[2:] == (2, 6, 6)
    steps = batch.obs[:, :, 0, 0, 0].long()
    assert torch.equal(steps - steps[0], torch.arange(5).view(5, 1).expand_as(steps))  # contiguous windows


def test_dict_observations_are_stored_per_key_and_streams_continue_across_segments(tmp_path):
    """A Dict observation (uint8 image + float vector): the keys are stored apart, images as uint8, and the
    next segment's columns continue the streams that ended on their first observation (all keys compared)."""
    streams = Streams(cols=2)

    def with_dict_obs(segment):
        steps = segment.obs[:, :, 1].long()  # (T+1, B) global step
        image = torch.zeros(steps.shape + (1, 6, 6), dtype=torch.uint8)
        image[..., 0, 0, 0] = steps.to(torch.uint8)
        segment.obs = ttorch.Tensor({'image': image, 'target': segment.obs})  # the vector carries (env, step, 0)
        segment.final_obs = ttorch.Tensor({'image': torch.zeros((steps.shape[0] - 1, 2, 1, 6, 6), dtype=torch.uint8),
                                           'target': segment.final_obs})
        return segment

    buffer = make_buffer(unroll_len=6, replay_ratio=4.0)
    for _ in range(2):
        buffer.push(with_dict_obs(streams.segment(4)))
        drain(buffer)  # the fresh segment, then replays
    batch = buffer.sample_windows(16)  # windows of 6 steps exist only if the 4-step segments were joined
    assert batch is not None and batch.obs.image.dtype == torch.uint8 and batch.obs.image.shape == (7, 16, 1, 6, 6)
    assert batch.obs.target.dtype == torch.float32 and batch.final_obs.image.dtype == torch.uint8
    steps = batch.obs.image[:, :, 0, 0, 0].long()
    assert torch.equal(steps, batch.obs.target[..., 1].long())  # the keys stay aligned
    assert torch.equal(steps - steps[0], torch.arange(7).view(7, 1).expand_as(steps))  # windows across the boundary
    atomic_torch_save(buffer.state_dict(), tmp_path / 'buffer.pth')  # as checkpoints are written and read
    restored = make_buffer(unroll_len=6)
    restored.load_state_dict(from_plain_data(torch.load(tmp_path / 'buffer.pth', weights_only=True)))
    assert restored.sample_windows(4).obs.image.dtype == torch.uint8
