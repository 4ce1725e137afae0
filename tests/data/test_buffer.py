"""Specification of ``acframe.data.ReplayBuffer`` (``fifo``): capacity, max_use, time-major batches, state."""
import pytest
import torch

from acframe.data import ReplayBuffer, split_segment, ttorch
from acframe.registry import BUFFER_REGISTRY
from acframe.utils import atomic_torch_save, from_plain_data

T, OBS = 4, 3


def samples(first_id: int, n: int) -> ttorch.Tensor:
    """``n`` item-major train samples whose every leaf carries the sample's id."""
    ids = torch.arange(first_id, first_id + n, dtype=torch.float32)
    return ttorch.Tensor({
        'obs': ids.view(n, 1, 1).expand(n, T + 1, OBS).clone(),
        'action': ids.long().view(n, 1).expand(n, T).clone(),
        'reward': ids.view(n, 1).expand(n, T).clone(),
        'stats': {'logit': ids.view(n, 1, 1).expand(n, T, 2).clone()},
    })


def stored_ids(buffer: ReplayBuffer) -> set:
    batch = buffer.sample(len(buffer))
    return set(batch.reward[0].long().tolist())


def test_registered_as_fifo():
    assert BUFFER_REGISTRY.get('fifo') is ReplayBuffer


def test_sample_is_time_major_with_one_extra_observation():
    buffer = ReplayBuffer(replay_buffer_size=10, max_use=100)
    buffer.push(samples(0, 6))
    batch = buffer.sample(5)
    assert batch.obs.shape == (T + 1, 5, OBS)
    assert batch.action.shape == (T, 5) and batch.action.dtype == torch.int64
    assert batch.reward.shape == (T, 5)
    assert batch.stats.logit.shape == (T, 5, 2)
    # a batch column is one whole sample: every leaf agrees on its id
    ids = batch.reward[0]
    assert torch.equal(batch.obs[:, :, 0], ids.expand(T + 1, 5))
    assert len(set(ids.tolist())) == 5  # distinct samples


def test_too_few_samples_gives_none():
    buffer = ReplayBuffer(replay_buffer_size=10)
    assert buffer.sample(1) is None
    buffer.push(samples(0, 2))
    assert buffer.sample(3) is None


def test_fifo_capacity_drops_the_oldest_first():
    buffer = ReplayBuffer(replay_buffer_size=4, max_use=100)
    buffer.push(samples(0, 3))
    buffer.push(samples(3, 3))
    assert len(buffer) == 4
    assert stored_ids(buffer) == {2, 3, 4, 5}
    buffer.push(samples(10, 7))  # more than fit at once: only the newest are kept
    assert stored_ids(buffer) == {13, 14, 15, 16}


def test_a_push_wraps_around_the_ring_and_every_leaf_lands_in_its_slot():
    buffer = ReplayBuffer(replay_buffer_size=5, max_use=100)
    buffer.push(samples(0, 4))
    buffer.push(samples(4, 3))  # slots 4, 0, 1
    assert stored_ids(buffer) == {2, 3, 4, 5, 6}
    storage_ids = buffer._storage.reward[:, 0].long().tolist()
    assert storage_ids == [5, 6, 2, 3, 4]
    for key in ('obs', 'action', 'reward'):
        assert buffer._storage[key].reshape(5, -1).float().eq(torch.tensor(storage_ids).float()[:, None]).all(), key
    assert buffer._storage.stats.logit[:, 0, 0].long().tolist() == storage_ids


def test_evicted_unused_counts_the_samples_overwritten_before_they_were_ever_sampled():
    buffer = ReplayBuffer(replay_buffer_size=4, max_use=1)
    buffer.push(samples(0, 4))
    assert buffer.room(10) == 0  # every slot holds a sample never trained on
    buffer.sample(2)
    assert len(buffer) == 2  # two trained on, two never
    buffer.push(samples(4, 4))  # overwrites all four: the two never sampled are lost
    assert buffer.evicted_unused == 2
    buffer.push(samples(8, 6))  # more than fit: the two oldest of these never reach the ring
    assert buffer.evicted_unused == 2 + 4 + 2


def test_room_is_the_ring_s_next_slots_up_to_the_first_sample_never_trained_on():
    buffer = ReplayBuffer(replay_buffer_size=6, max_use=1, seed=0)
    assert buffer.room(4) == 4 and buffer.room(100) == 6  # empty: as much as asked, at most the capacity
    buffer.push(samples(0, 3))  # slots 0-2 unused; the next push writes at slot 3
    assert buffer.room(100) == 3  # slots 3, 4, 5 are free; slot 0 holds an unused sample
    while buffer.sample(1) is not None:  # train on everything, oldest or not
        pass
    assert buffer.room(100) == 6 and buffer.evicted_unused == 0


def test_a_state_saved_before_evicted_unused_existed_loads():
    buffer = ReplayBuffer(replay_buffer_size=4, max_use=1)
    buffer.push(samples(0, 2))
    state = buffer.state_dict()
    del state['evicted_unused']
    restored = ReplayBuffer(replay_buffer_size=4, max_use=1)
    restored.load_state_dict(state)
    assert restored.evicted_unused == 0 and len(restored) == 2


def test_a_sample_is_dropped_after_max_use_samplings():
    buffer = ReplayBuffer(replay_buffer_size=8, max_use=2)
    buffer.push(samples(0, 3))
    assert buffer.sample(3) is not None
    assert len(buffer) == 3
    assert buffer.sample(3) is not None
    assert len(buffer) == 0
    assert buffer.sample(1) is None


def test_state_dict_roundtrip_continues_identically():
    buffer = ReplayBuffer(replay_buffer_size=8, max_use=3, seed=1)
    buffer.push(samples(0, 6))
    buffer.sample(2)
    restored = ReplayBuffer(replay_buffer_size=8, max_use=3, seed=999)
    restored.load_state_dict(buffer.state_dict())
    assert len(restored) == len(buffer) and restored.pushed == buffer.pushed
    for _ in range(3):
        a, b = buffer.sample(2), restored.sample(2)
        assert torch.equal(a.reward, b.reward) and torch.equal(a.obs, b.obs)
    buffer.push(samples(20, 3))
    restored.push(samples(20, 3))
    assert torch.equal(buffer.sample(4).reward, restored.sample(4).reward)


def test_split_segment_cuts_time_major_segments_into_item_major_samples():
    steps, envs, unroll = 6, 2, 3
    obs = torch.arange(steps + 1).float().view(steps + 1, 1, 1).expand(steps + 1, envs, OBS)
    segment = ttorch.Tensor({'obs': obs, 'reward': torch.arange(steps).float().view(steps, 1).expand(steps, envs)})
    items = split_segment(segment, unroll)
    assert items.obs.shape == (4, unroll + 1, OBS) and items.reward.shape == (4, unroll)
    # each sample's last observation is the first of the next one, so the learner can bootstrap
    assert items.obs[:, :, 0].tolist() == [[0, 1, 2, 3], [0, 1, 2, 3], [3, 4, 5, 6], [3, 4, 5, 6]]
    assert items.reward.tolist() == [[0, 1, 2], [0, 1, 2], [3, 4, 5], [3, 4, 5]]


def test_a_cut_segment_gives_its_whole_unrolls_and_drops_the_rest_only_when_asked():
    """The budget's last segment may be shorter than a multiple of unroll_len: its tail is left out, not padded."""
    steps, envs, unroll = 7, 2, 3
    obs = torch.arange(steps + 1).float().view(steps + 1, 1, 1).expand(steps + 1, envs, OBS)
    segment = ttorch.Tensor({'obs': obs, 'reward': torch.arange(steps).float().view(steps, 1).expand(steps, envs)})
    with pytest.raises(ValueError, match='not a multiple of unroll_len 3'):
        split_segment(segment, unroll)
    items = split_segment(segment, unroll, drop_remainder=True)
    assert items.obs[:, :, 0].tolist() == [[0, 1, 2, 3], [0, 1, 2, 3], [3, 4, 5, 6], [3, 4, 5, 6]]
    assert items.reward.tolist() == [[0, 1, 2], [0, 1, 2], [3, 4, 5], [3, 4, 5]]
    short = split_segment(ttorch.Tensor({'obs': obs[:3], 'reward': segment.reward[:2]}), unroll, drop_remainder=True)
    assert short.obs.shape == (0, unroll + 1, OBS) and short.reward.shape == (0, unroll)
    buffer = ReplayBuffer(replay_buffer_size=4)
    buffer.push(short)  # nothing to store
    assert len(buffer) == 0


def test_samples_of_another_layout_than_the_first_push_are_refused_naming_the_leaf_and_nothing_is_stored():
    buffer = ReplayBuffer(replay_buffer_size=8)
    buffer.push(samples(0, 2))
    shorter = ttorch.Tensor({**{k: v for k, v in samples(2, 2).items() if k != 'reward'},
                             'reward': torch.zeros(2, T - 1)})
    with pytest.raises(ValueError, match=r"'reward' is \(3,\) float32 per sample in this push, \(4,\) float32 in the "
                                         r"first; a policy's get_train_sample must give samples of one length"):
        buffer.push(shorter)
    with pytest.raises(ValueError, match=r"this push lacks stats.logit and adds extra; "):
        buffer.push(ttorch.Tensor({'obs': samples(2, 2).obs, 'action': samples(2, 2).action,
                                   'reward': samples(2, 2).reward, 'extra': torch.zeros(2)}))
    assert len(buffer) == 2 and buffer.pushed == 2 and stored_ids(buffer) == {0, 1}


def test_uint8_images_stay_uint8_in_storage_batches_and_saved_state(tmp_path):
    """Pixels are stored as they come (a quarter of float32's bytes); the model scales them."""
    n = 6
    images = torch.randint(0, 256, (n, T + 1, 2, 8, 8), dtype=torch.uint8)
    tree = samples(0, n)
    tree.obs = images
    buffer = ReplayBuffer(replay_buffer_size=10, max_use=100, dedup_frames=False)  # the plain storage
    buffer.push(tree)
    batch = buffer.sample(n)
    assert batch.obs.dtype == torch.uint8 and batch.obs.shape == (T + 1, n, 2, 8, 8)
    ids = batch.reward[0].long()
    assert torch.equal(batch.obs.transpose(0, 1), images[ids])
    state = buffer.state_dict()
    torch.save(state['storage'], tmp_path / 'storage.pth')
    storage = torch.load(tmp_path / 'storage.pth', weights_only=True)
    assert storage['obs'].dtype == torch.uint8 and torch.equal(storage['obs'][:n], images)
    restored = ReplayBuffer(replay_buffer_size=10, max_use=100, dedup_frames=False)
    restored.load_state_dict(dict(state, storage=storage))
    assert restored.sample(n).obs.dtype == torch.uint8


def test_dict_observations_keep_a_uint8_image_beside_a_float_vector_in_storage_and_saved_state(tmp_path):
    n = 4
    tree = samples(0, n)
    images = torch.randint(0, 256, (n, T + 1, 1, 8, 8), dtype=torch.uint8)
    tree.obs = ttorch.Tensor({'image': images, 'target': tree.obs})
    buffer = ReplayBuffer(replay_buffer_size=10, max_use=100)
    buffer.push(tree)
    batch = buffer.sample(n)
    assert batch.obs.image.dtype == torch.uint8 and batch.obs.image.shape == (T + 1, n, 1, 8, 8)
    assert batch.obs.target.dtype == torch.float32
    ids = batch.reward[0].long()
    assert torch.equal(batch.obs.image.transpose(0, 1), images[ids]) and torch.equal(batch.obs.target[0, :, 0], ids.float())
    atomic_torch_save(buffer.state_dict(), tmp_path / 'buffer.pth')  # as checkpoints are written and read
    restored = ReplayBuffer(replay_buffer_size=10, max_use=100)
    restored.load_state_dict(from_plain_data(torch.load(tmp_path / 'buffer.pth', weights_only=True)))
    assert restored.sample(n).obs.image.dtype == torch.uint8
