"""Segments through shared memory (``parallel.shared_memory_segments``, local backend) and the learner's ingest thread.

The restarts, heartbeats, budgets, masks, recurrent states and ``final_obs`` rows of tests/entry/test_parallel*.py run
on this path too: it is the local backend's default.
"""
from __future__ import annotations

import multiprocessing
import pickle
import threading
import time

import numpy as np
import pytest
import torch

from acframe.data import make_tree
from acframe.data.buffer import ReplayBuffer
from acframe.data.tree import leaves
from acframe.entry.parallel import parallel_pipeline
from acframe.entry.parallel.messages import SegmentMessage, numpy_to_tree, tree_to_numpy
from acframe.entry.parallel.shm_segments import (IngestError, LearnerPools, SegmentIngest, SegmentPool, pool_note,
                                                 read_pool_note, to_slot)


def segment_tree(seed: int = 0, unrolls: int = 4, steps: int = 5):
    """A segment of every kind of leaf a sample holds: uint8 frames, sparse ``final_obs`` rows (-0.0 too), int64,
    float, bool, a nested Dict observation, a recurrent state, an action mask."""
    g = torch.Generator().manual_seed(seed)
    frames = torch.randint(0, 256, (unrolls, steps + 1, 4, 12, 12), dtype=torch.uint8, generator=g)
    final = torch.zeros(unrolls, steps, 4, 12, 12, dtype=torch.uint8)
    final[1, 2] = frames[1, 2]
    vector_final = torch.zeros(unrolls, steps, 3)
    vector_final[3, 4] = torch.tensor([-0.0, 0.0, 2.5])
    return make_tree({
        'obs': frames, 'final_obs': final, 'action': torch.randint(0, 6, (unrolls, steps), generator=g),
        'logit': torch.randn(unrolls, steps, 6, generator=g), 'reward': torch.randn(unrolls, steps, generator=g),
        'terminated': torch.rand(unrolls, steps, generator=g) < 0.2, 'truncated': torch.zeros(unrolls, steps, dtype=torch.bool),
        'behaviour_version': torch.full((unrolls, steps), 7, dtype=torch.int64),
        'dict': {'final_obs': {'vector': vector_final}, 'image': frames[:, :steps, :1]},
        'prev_state': {'h': torch.randn(unrolls, 1, 16, generator=g), 'c': torch.randn(unrolls, 1, 16, generator=g)},
        'action_mask': torch.rand(unrolls, steps, 6, generator=g) < 0.5})


def assert_same_tree(got, want):
    got, want = dict(leaves(got)), dict(leaves(want))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, key
        assert torch.equal(got[key], want[key]), key
        if want[key].dtype.is_floating_point:  # bit-exact: the sign of zero too
            assert torch.equal(torch.signbit(got[key]), torch.signbit(want[key])), key


def test_a_segment_through_a_slot_equals_the_pickled_segment():
    """Every key, dtype, shape and bit (packed ``final_obs`` rows included) as the pipe's pickled path gives them."""
    tree = segment_tree()
    nested = tree_to_numpy(tree)
    pickled = numpy_to_tree(pickle.loads(pickle.dumps(nested, protocol=pickle.HIGHEST_PROTOCOL)))
    pool = SegmentPool.for_segment(nested, slots=2)
    ref = pool.write(tree_to_numpy(tree))
    assert ref is not None and pool.busy() == 1
    assert len(pickle.dumps(ref)) < 4000  # the header alone: no array travels
    assert_same_tree(numpy_to_tree(pool.read(ref)), pickled)
    assert_same_tree(pickled, tree)


def test_slots_are_reused_only_once_released_and_a_full_pool_or_a_larger_segment_falls_back_to_the_pipe():
    nested = tree_to_numpy(segment_tree())
    pool = SegmentPool.for_segment(nested, slots=2)
    first, second = pool.write(nested), pool.write(tree_to_numpy(segment_tree(1)))
    assert {first.slot, second.slot} == {0, 1} and pool.write(nested) is None and pool.fallbacks == 1
    want = numpy_to_tree(pool.read(second)).clone()
    pool.release(first.slot)
    third = pool.write(tree_to_numpy(segment_tree(2)))
    assert third.slot == first.slot
    assert_same_tree(numpy_to_tree(pool.read(second)), want)  # the unreleased slot was not touched
    pool.release(second.slot)
    assert pool.write(tree_to_numpy(segment_tree(0, unrolls=8))) is None  # twice the unrolls: sent pickled
    message = SegmentMessage(0, 0, tree_to_numpy(segment_tree(3, unrolls=8)), 40, 0, 0)
    assert to_slot(pool, message).slot is None and message.samples is not None


def _actor_writes(conn) -> None:
    """A stand-in actor: takes the pool from the learner's note, writes segments 1 and 2 into slots, sends headers."""
    note = conn.recv_bytes()
    pool = read_pool_note(note)
    for seed in (1, 2):
        conn.send(to_slot(pool, SegmentMessage(0, 0, tree_to_numpy(segment_tree(seed)), 20, 0, 0)))
    conn.recv()  # wait for the learner before exiting


def test_the_pool_crosses_to_another_process_and_its_segments_come_back_equal():
    """The learner makes the pool from the first (pickled) segment and sends it; the actor's next segments come as
    headers and read back equal to what was written; the learner frees the slots."""
    ours, theirs = multiprocessing.get_context('fork').Pipe()
    actor = multiprocessing.get_context('fork').Process(target=_actor_writes, args=(theirs,), daemon=True)
    actor.start()
    try:
        pools = LearnerPools(slots=3)
        first = SegmentMessage(0, 0, tree_to_numpy(segment_tree(0)), 20, 0, 0)
        pools.arrived(first, 0, ours)  # sends the pool
        pool = pools.pools[(0, 0)]
        for seed in (1, 2):
            assert ours.poll(30)
            message = ours.recv()
            assert message.slot is not None and message.samples is None
            pools.arrived(message, 0, ours)
            assert_same_tree(numpy_to_tree(message.samples), segment_tree(seed))
            message.release()
        assert pools.shared == 2 and pools.pickled == 1 and pool.busy() == 0
        ours.send(None)
    finally:
        actor.join(10)
        if actor.is_alive():
            actor.kill()


class _Buffer:
    """A buffer whose pushes can be made to fail or to hang."""

    def __init__(self, fail=False, hang=None):
        self.items, self.fail, self.hang = [], fail, hang

    def push(self, tree):
        if self.hang is not None:
            self.hang.wait(5)
        if self.fail:
            raise ValueError('a broken push')
        self.items.append(tree)


def test_the_ingest_thread_pushes_frees_slots_stops_cleanly_and_never_waits_forever():
    nested = tree_to_numpy(segment_tree())
    pool = SegmentPool.for_segment(nested, slots=2)
    buffer = ReplayBuffer(16, max_use=1)
    ingest = SegmentIngest(buffer)
    for seed in (1, 2):
        ref = pool.write(tree_to_numpy(segment_tree(seed)))
        ingest.submit(pool.read(ref), lambda slot=ref.slot: pool.release(slot))
    ingest.drain(10)
    assert len(buffer) == 8 and pool.busy() == 0
    with ingest.lock:
        batch = buffer.sample(8)
    assert torch.equal(batch.obs.transpose(0, 1)[:4], segment_tree(1).obs)
    ingest.close()
    assert not ingest._thread.is_alive()
    with pytest.raises(IngestError, match='closed'):
        ingest.submit(nested)

    broken = SegmentIngest(_Buffer(fail=True))
    released = []
    broken.submit(nested, lambda: released.append(1))
    with pytest.raises(IngestError, match='a broken push'):
        broken.drain(10)
    assert released == [1]  # the slot is freed even so
    broken.close()

    hang = threading.Event()
    stuck = SegmentIngest(_Buffer(hang=hang))
    stuck.submit(nested)
    start = time.perf_counter()
    with pytest.raises(IngestError, match='pushed no segment for 0.2 s'):
        stuck.drain(0.2)
    assert time.perf_counter() - start < 2
    hang.set()
    stuck.close()
    assert not stuck._thread.is_alive()


def test_a_preallocated_batch_equals_a_fresh_one():
    """``ReplayBuffer.sample(out=...)`` (what the learner samples into with ``policy.cuda``: page-locked batches)."""
    one, two = ReplayBuffer(16, max_use=1, seed=3), ReplayBuffer(16, max_use=1, seed=3)
    for seed in (0, 1):
        one.push(segment_tree(seed))
        two.push(segment_tree(seed))
    out = two.batch_buffer(6)
    batch = two.sample(6, out=out)
    assert_same_tree(batch, one.sample(6))
    assert batch.obs.data_ptr() == out.obs.data_ptr()  # written in place: no other copy


def a2c_cartpole(shared: bool):
    main = dict(env=dict(env_id='CartPole-v0', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                         stop_value=None),
                parallel=dict(actor_num=2, shared_memory_segments=shared),
                policy=dict(collect=dict(n_sample=20), eval=dict(evaluator=dict(eval_freq=0))))
    return main, dict(env=dict(type='gym'), policy=dict(type='a2c'))


def test_synchronous_runs_through_shared_memory_and_through_the_pipe_train_the_same_weights(tmp_path):
    """Sync rounds are deterministic: the same seed gives bit-identical weights by either path."""
    import json

    weights = {}
    for shared in (True, False):
        exp_dir = tmp_path / str(shared)
        policy = parallel_pipeline(a2c_cartpole(shared), exp_dir=str(exp_dir), backend='local', max_train_iter=12,
                                   progress=False, seed=0)
        summary = json.loads((exp_dir / 'summary.json').read_text())
        assert summary['train_iters'] == 12 and summary['discarded_segments'] == 0
        assert (summary['segments_through_shared_memory'] > 0) == shared, summary
        weights[shared] = {k: v.clone() for k, v in policy.model.state_dict().items()}
    for key, value in weights[True].items():
        assert torch.equal(value, weights[False][key]), key


class _KillActor:
    """A learner hook that SIGKILLs actor 1 at iteration ``at`` (mid-run: it may be writing a slot)."""

    def __init__(self, at: int) -> None:
        self.at, self.killed = at, False

    def after_iter(self, learner, info) -> None:
        import os
        import signal

        if learner.train_iter == self.at and not self.killed:
            self.killed = True
            os.kill(self.backend.actors[1].process.pid, signal.SIGKILL)

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def test_an_async_run_takes_segments_through_shared_memory_recovers_a_killed_actor_and_stops_its_ingest_thread(tmp_path):
    import json

    from acframe.entry.parallel import run as parallel_run

    main = dict(env=dict(env_id='CartPole-v0', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                         stop_value=None),
                parallel=dict(actor_num=2),
                policy=dict(unroll_len=8, collect=dict(n_sample=4), learn=dict(batch_size=8),
                            other=dict(replay_buffer=dict(replay_buffer_size=16, max_use=1)),
                            eval=dict(evaluator=dict(eval_freq=0))))
    killer = _KillActor(at=20)
    original = parallel_run.ParallelRun._make_backend

    def make_backend(self, incarnations):
        killer.backend = backend = original(self, incarnations)
        return backend

    parallel_run.ParallelRun._make_backend = make_backend
    try:
        parallel_pipeline((main, dict(env=dict(type='gym'), policy=dict(type='impala'))), exp_dir=str(tmp_path / 'run'),
                          backend='local', max_train_iter=60, progress=False, seed=0, learner_hooks=[killer])
    finally:
        parallel_run.ParallelRun._make_backend = original
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert killer.killed and summary['actor_restarts'] == 1, summary
    assert 'actor 1 was killed by SIGKILL' in summary['worker_failures'], summary
    assert summary['train_iters'] == 60 and summary['samples_evicted_unused'] == 0, summary
    assert summary['segments_through_shared_memory'] >= summary['segments'] - 6, summary  # all but each incarnation's first
    assert not [t for t in threading.enumerate() if t.name == 'acframe-ingest']


def test_with_too_little_room_in_dev_shm_an_actor_keeps_the_pipe_and_one_warning_says_why(monkeypatch):
    from acframe.entry.parallel import shm_segments

    monkeypatch.setattr(shm_segments, 'shm_free_bytes', lambda path='/dev/shm': 1000)
    ours, theirs = multiprocessing.Pipe()
    warnings = []
    pools = LearnerPools(warn=warnings.append)
    for actor_id in (0, 1):
        pools.arrived(SegmentMessage(actor_id, 0, tree_to_numpy(segment_tree()), 20, 0, 0), 0, ours)
    assert pools.pools == {} and not theirs.poll() and pools.pickled == 2
    assert len(warnings) == 1 and '/dev/shm' in warnings[0] and 'parallel.shared_memory_segments=False' in warnings[0]
