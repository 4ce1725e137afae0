"""Prioritized replay: the sum/min trees against brute force, the proportional draw (a statistical test), the PER
paper's importance-sampling weights per element, priorities handed back, beta annealing and checkpoints."""
import numpy as np
import pytest
import torch

from acframe.data import make_tree
from acframe.data.prioritized import PrioritizedEpisodicReplayBuffer, PrioritizedReplayBuffer
from acframe.data.sum_tree import MinTree, SumTree, update_both
from acframe.errors import NonFiniteError
from acframe.registry import BUFFER_REGISTRY
from acframe.utils import atomic_torch_save, from_plain_data



@pytest.mark.parametrize('capacity', [1, 5, 8, 37])
def test_sum_and_min_trees_match_brute_force_under_random_batched_updates(capacity):
    rng = np.random.default_rng(capacity)
    sums, mins = SumTree(capacity), MinTree(capacity)
    values = np.zeros(capacity)
    for _ in range(50):
        index = rng.integers(0, capacity, size=rng.integers(1, 6))  # repeats: the last value wins
        new = rng.random(len(index)) * (rng.random(len(index)) > 0.2)
        sums.update(index, new)
        mins.update(index, np.where(new > 0, new, np.inf))
        for i, v in zip(index, new):
            values[i] = v
        assert sums.total == pytest.approx(values.sum(), abs=1e-12)
        assert mins.min == (values[values > 0].min() if (values > 0).any() else np.inf)
        np.testing.assert_array_equal(sums.values(), values)
        if values.sum() > 0:
            mass = np.concatenate([rng.random(20) * values.sum(), [0.0, values.sum()]])
            expected = np.minimum(np.searchsorted(np.cumsum(values), mass, side='right'), capacity - 1)
            found = sums.find(mass)
            inside = mass < values.sum()
            np.testing.assert_array_equal(found[inside], expected[inside])
            assert (values[found] > 0).all()  # never a zero leaf, even at mass == total
    sums.rebuild(values * 2)
    assert sums.total == pytest.approx(2 * values.sum())
    both_sums, both_mins = SumTree(capacity), MinTree(capacity)  # one walk for both trees: the same trees
    index = rng.integers(0, capacity, size=8)
    new = rng.random(8) + 0.1
    update_both(both_sums, both_mins, index, new, new)
    sums.rebuild(np.zeros(capacity))
    mins.rebuild(np.full(capacity, np.inf))
    sums.update(index, new)
    mins.update(index, new)
    np.testing.assert_array_equal(both_sums._tree, sums._tree)
    np.testing.assert_array_equal(both_mins._tree, mins._tree)


def make_unrolls(n: int, start: int = 0, steps: int = 3):
    """``n`` item-major unrolls whose reward says which one it is."""
    ids = torch.arange(start, start + n, dtype=torch.float32)
    return make_tree(dict(obs=ids[:, None, None].expand(n, steps + 1, 2).clone(), reward=ids[:, None].expand(n, steps).clone()))


def ids_of(batch) -> np.ndarray:
    return batch.reward[0].numpy().astype(int)


def test_registered_and_new_data_gets_the_max_priority():
    assert BUFFER_REGISTRY.get('prioritized') is PrioritizedReplayBuffer
    assert BUFFER_REGISTRY.get('episodic_prioritized') is PrioritizedEpisodicReplayBuffer
    buffer = PrioritizedReplayBuffer(8, max_use=100, alpha=1.0)
    buffer.push(make_unrolls(4))
    np.testing.assert_array_equal(buffer.priorities.priority[:4], 1.0)
    batch = buffer.sample(4)
    assert tuple(batch.is_weight.shape) == (1, 4) and tuple(batch.replay_index.shape) == (1, 4)
    assert tuple(batch.obs.shape) == (4, 4, 2)  # time-major as fifo's
    buffer.update_priority(batch, torch.tensor([3.0, 5.0, 0.5, 2.0]))
    assert buffer.priorities.max_priority == pytest.approx(5.0 + 1e-6)
    buffer.push(make_unrolls(2, start=4))
    np.testing.assert_allclose(buffer.priorities.priority[4:6], 5.0 + 1e-6)


def test_draws_are_in_proportion_to_priority_to_the_alpha():
    """Chi-square test of 18,000 draws against P(i) = p_i^alpha / sum_k p_k^alpha."""
    alpha = 0.7
    buffer = PrioritizedReplayBuffer(6, max_use=10 ** 9, alpha=alpha, seed=1)
    buffer.push(make_unrolls(6))
    batch = buffer.sample(6)
    priority = np.array([0.1, 1.0, 2.0, 4.0, 0.5, 8.0])
    buffer.update_priority(batch, torch.tensor(priority[ids_of(batch)]))
    counts = np.zeros(6)
    for _ in range(3000):
        np.add.at(counts, ids_of(buffer.sample(6)), 1)
    expected_p = (priority + 1e-6) ** alpha
    expected = expected_p / expected_p.sum() * counts.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 20.5, (counts, expected)  # 5 degrees of freedom: p < 0.001


def test_importance_weights_are_the_papers_formula_per_element_and_beta_anneals():
    """w_i = (N P(i))^-beta / max_k (N P(k))^-beta over the N drawable unrolls; beta grows to 1 over anneal_step."""
    alpha, beta = 0.6, 0.4
    buffer = PrioritizedReplayBuffer(8, max_use=10 ** 9, alpha=alpha, beta=beta, anneal_step=4, seed=2)
    buffer.push(make_unrolls(5))
    batch = buffer.sample(5)
    priority = np.array([0.3, 2.0, 1.0, 7.0, 0.05])
    buffer.update_priority(batch, torch.tensor(priority[ids_of(batch)]))
    p = (priority + 1e-6) ** alpha
    P, N = p / p.sum(), len(p)
    for call in range(1, 7):  # the first sample was call 0
        current_beta = beta + (1 - beta) * min(1.0, call / 4)
        batch = buffer.sample(5)
        ids = ids_of(batch)
        expected = (N * P[ids]) ** -current_beta / ((N * P) ** -current_beta).max()
        np.testing.assert_allclose(batch.is_weight[0].numpy(), expected, rtol=1e-5)
    assert buffer.priorities.current_beta() == 1.0
    flat = PrioritizedReplayBuffer(8, max_use=10 ** 9, is_weight=False)
    flat.push(make_unrolls(5))
    assert torch.equal(flat.sample(4).is_weight, torch.ones(1, 4))


def test_an_update_for_an_overwritten_unroll_is_dropped_and_used_unrolls_are_never_drawn():
    buffer = PrioritizedReplayBuffer(4, max_use=1, alpha=1.0, seed=0)
    buffer.push(make_unrolls(4))
    batch = buffer.sample(2)
    drawn = set(ids_of(batch))
    for _ in range(20):  # max_use=1: a drawn unroll is spent
        again = buffer.sample(2)
        if again is None:
            break
        assert not drawn & set(ids_of(again))
    buffer = PrioritizedReplayBuffer(2, max_use=100, alpha=1.0)
    buffer.push(make_unrolls(2))
    batch = buffer.sample(2)
    buffer.push(make_unrolls(2, start=2))  # both slots overwritten after the draw
    buffer.update_priority(batch, torch.tensor([50.0, 60.0]))
    np.testing.assert_array_equal(buffer.priorities.priority[:2], 1.0)
    with pytest.raises(NonFiniteError, match='priorities'):
        buffer.update_priority(buffer.sample(2), torch.tensor([float('nan'), 1.0]))


def test_state_round_trips_through_a_weights_only_checkpoint(tmp_path):
    buffer = PrioritizedReplayBuffer(8, max_use=100, alpha=0.5, anneal_step=10, seed=3)
    buffer.push(make_unrolls(6))
    buffer.update_priority(buffer.sample(4), torch.tensor([1.0, 9.0, 3.0, 0.2]))
    path = str(tmp_path / 'b.pth')
    atomic_torch_save({'buffer': buffer.state_dict(), 'rng': buffer.rng_state()}, path)
    state = from_plain_data(torch.load(path, weights_only=True))
    restored = PrioritizedReplayBuffer(8, max_use=100, alpha=0.5, anneal_step=10, seed=99)
    restored.load_state_dict(state['buffer'])
    np.testing.assert_array_equal(restored.priorities.priority, buffer.priorities.priority)
    a, b = buffer.sample(5), restored.sample(5)
    assert torch.equal(a.is_weight, b.is_weight) and torch.equal(a.replay_index, b.replay_index)
    only_rng = PrioritizedReplayBuffer(8, max_use=100, alpha=0.5, anneal_step=10)
    only_rng.set_rng_state(state['rng'])  # contents not saved: the RNG and beta's progress still are
    assert only_rng.priorities.sample_calls == 1


def test_episodic_windows_are_drawn_by_the_priority_of_their_first_step():
    buffer = PrioritizedEpisodicReplayBuffer(replay_buffer_size=100, unroll_len=2, replay_ratio=1.0,
                                             replay_ratio_type='fixed', alpha=1.0, seed=0)
    buffer.push(one_stream(6))
    fresh = buffer.sample(4)  # the on-policy segment first, unweighted
    assert 'is_weight' not in fresh and tuple(fresh.reward.shape) == (6, 1)
    batch = buffer.sample(4)
    assert tuple(batch.reward.shape) == (2, 4) and tuple(batch.is_weight.shape) == (1, 4)
    starts = batch.reward[0].numpy().astype(int)  # reward = the global step: window starts 0..4
    assert set(starts) <= set(range(5))
    priority = np.where(starts == starts[0], 100.0, 0.0)
    buffer.update_priority(batch, torch.tensor(priority))
    hits = np.concatenate([buffer.sample_windows(8).reward[0].numpy() for _ in range(50)])
    assert np.mean(hits == starts[0]) > 0.95
    window = buffer.sample_windows(3)
    torch.testing.assert_close(window.reward[1], window.reward[0] + 1)  # consecutive steps of the stream


def one_stream(steps: int):
    """A time-major segment of one env whose observation and reward are the step number."""
    t = torch.arange(steps + 1, dtype=torch.float32)
    return make_tree(dict(obs=t[:, None, None].expand(steps + 1, 1, 3).clone(), reward=t[:-1, None].clone(),
                          terminated=torch.zeros(steps, 1, dtype=torch.bool), truncated=torch.zeros(steps, 1, dtype=torch.bool),
                          final_obs=torch.zeros(steps, 1, 3), action=torch.zeros(steps, 1, dtype=torch.long)))


@pytest.mark.parametrize('capacity', [1, 7, 64])
def test_min_tracker_matches_brute_force_and_a_min_tree(capacity):
    """The exact minimum without a tree (what the prioritized buffers normalise their weights by): after every
    write of distinct slots -- new minima, ties, the last holder raised or emptied, whole rebuilds -- it equals the
    brute-force minimum and a ``MinTree``'s root."""
    from acframe.data.sum_tree import MinTracker

    rng = np.random.default_rng(capacity)
    tracker, tree, values = MinTracker(capacity), MinTree(capacity), np.full(capacity, np.inf)
    for step in range(300):
        index = rng.choice(capacity, size=rng.integers(1, min(capacity, 6) + 1), replace=False)
        new = rng.choice([0.5, 1.0, 2.0, np.inf], size=len(index)) if step % 3 else rng.random(len(index)) + 0.1
        tracker.write(index, new)
        tree.update(index, new)
        values[index] = new
        if step % 50 == 49:
            values = np.where(rng.random(capacity) < 0.5, rng.random(capacity), np.inf)
            tracker.rebuild(values)
            tree.rebuild(values)
        assert tracker.min == values.min() == tree.min


def test_update_priority_of_a_copied_batch_equals_that_of_the_batch_as_drawn():
    """The drawn batch's indices are reused by ``update_priority``; a copy of the batch (as after a move to a GPU or
    across processes) is read from its leaves: both give the same priorities, trees and next draws."""
    from acframe.data import to_dict

    def run(copy: bool):
        buffer = PrioritizedReplayBuffer(16, max_use=8, alpha=0.8, seed=2)
        buffer.push(make_unrolls(16))
        draws = []
        for step in range(12):  # some unrolls reach max_use on the way
            batch = buffer.sample(8)
            draws.append(ids_of(batch))
            given = make_tree({k: v.clone() for k, v in to_dict(batch).items()}) if copy else batch
            buffer.update_priority(given, torch.arange(8, dtype=torch.float32) * (step % 3))
        return draws, buffer.priorities.priority.copy(), buffer.priorities.sum_tree.values()

    (draws, priority, sums), (draws_copy, priority_copy, sums_copy) = run(False), run(True)
    assert [d.tolist() for d in draws] == [d.tolist() for d in draws_copy]
    np.testing.assert_array_equal(priority, priority_copy)
    np.testing.assert_array_equal(sums, sums_copy)


def test_the_weights_of_a_batch_are_one_per_sequence_in_either_layout_and_any_other_shape_is_refused():
    """``is_weights``: ``(1, B)`` as acframe's buffers give them, or ``(B,)`` as a buffer of one's own may; a
    ``(B,)`` tensor was read as ``(1, B)``, weighing the whole batch by its first weight without a word."""
    from acframe.data.prioritized import is_weights
    from acframe.errors import PolicyError

    weights = torch.tensor([0.1, 0.2, 0.3, 0.4])
    for given in (weights, weights[None]):
        batch = make_tree({'reward': torch.zeros(16, 4), 'is_weight': given})
        assert torch.equal(is_weights(batch), weights)
    assert is_weights(make_tree({'reward': torch.zeros(16, 4)})) is None
    for bad in (weights[:3], torch.ones(16, 4), weights[None, None]):
        with pytest.raises(PolicyError, match=r"^the replay batch's 'is_weight' has shape \(.*\); a prioritized buffer "
                                              r"gives one importance-sampling weight per sequence, a tensor \(1, B\) or "
                                              r"\(B,\) with B=4"):
            is_weights(make_tree({'reward': torch.zeros(16, 4), 'is_weight': bad}))
