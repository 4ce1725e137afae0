"""Specification of observation and reward normalization (``acframe.models.normalization``) and of how the
policy owns it: the running statistics are model buffers updated only by the learn mode, frozen in the
collect and eval modes, saved in checkpoints and carried to parallel actors with the weights; async workers share
one set of statistics (``share_statistics``; data-parallel ranks: tests/entry/test_data_parallel.py).
"""
import io
import multiprocessing
import os
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.data import make_tree
from acframe.entry.parallel.roles import ActorWorker, HandedWeights
from acframe.models import ObsNormalizer, RewardNormalizer, RunningMeanStd
from acframe.models import normalization
from acframe.models.normalization import combine_moments, running_discounted_returns
from acframe.policy import create_policy

OBS = 3
BOX = gym.spaces.Box(-np.inf, np.inf, (OBS,), dtype=np.float32)


class NumpyRunningMeanStd:
    """Stable-Baselines3's ``RunningMeanStd`` (common/running_mean_std.py), in numpy."""

    def __init__(self, shape=(), epsilon=1e-4):
        self.mean, self.var, self.count = np.zeros(shape, np.float64), np.ones(shape, np.float64), epsilon

    def update(self, arr):
        batch_mean, batch_var, batch_count = np.mean(arr, axis=0), np.var(arr, axis=0), arr.shape[0]
        delta = batch_mean - self.mean
        tot_count = self.count + batch_count
        new_mean = self.mean + delta * batch_count / tot_count
        m_2 = self.var * self.count + batch_var * batch_count + np.square(delta) * self.count * batch_count / tot_count
        self.mean, self.var, self.count = new_mean, m_2 / tot_count, tot_count


def test_running_statistics_match_numpy_on_a_random_stream():
    """Batches of random sizes from a shifting distribution: SB3's merge and the plain mean/var of everything seen."""
    rng = np.random.default_rng(0)
    ours, reference = RunningMeanStd((OBS,)), NumpyRunningMeanStd((OBS,))
    seen = []
    for i in range(40):
        batch = rng.normal(loc=[i * 0.1, -5.0, 100.0], scale=[1.0, 0.01, 30.0], size=(int(rng.integers(1, 64)), OBS))
        ours.update(torch.from_numpy(batch).float())
        reference.update(batch.astype(np.float32).astype(np.float64))
        seen.append(batch.astype(np.float32))
    np.testing.assert_allclose(ours.mean.numpy(), reference.mean, rtol=1e-12)
    np.testing.assert_allclose(ours.var.numpy(), reference.var, rtol=1e-10)
    assert float(ours.count) == pytest.approx(reference.count)
    everything = np.concatenate(seen).astype(np.float64)
    np.testing.assert_allclose(ours.mean.numpy(), everything.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.var.numpy(), everything.var(0), rtol=1e-4, atol=1e-5)  # the prior count 1e-4


def test_obs_normalizer_standardizes_and_clips():
    normalizer = ObsNormalizer(OBS, clip=2.0)
    data = torch.tensor([[0.0, 10.0, -1.0], [2.0, 30.0, 1.0]])
    normalizer.update(data)
    out = normalizer(torch.tensor([[1.0, 20.0, 0.0], [1.0, 1000.0, 0.0]]))
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out[0].numpy(), [0.0, 0.0, 0.0], atol=1e-3)  # the mean maps to 0
    assert out[1, 1].item() == 2.0  # far outside: clipped


def test_reward_normalizer_divides_by_the_std_of_each_envs_discounted_return():
    """Per-element reference: G = γG + r per env (zeroed after an episode end), carried across segments."""
    gamma, rng = 0.9, np.random.default_rng(1)
    ours, reference = RewardNormalizer(gamma, clip=5.0), NumpyRunningMeanStd(())
    running = np.zeros(2)
    for _ in range(3):
        reward = rng.normal(size=(4, 2)).astype(np.float32) * 3
        done = rng.random((4, 2)) < 0.3
        returns = np.zeros((4, 2))
        for t in range(4):
            for b in range(2):
                running[b] = running[b] * gamma + reward[t, b]
                returns[t, b] = running[b]
                if done[t, b]:
                    running[b] = 0.0
        reference.update(returns.reshape(-1))
        expected = np.clip(reward / np.sqrt(reference.var + 1e-8), -5.0, 5.0)
        got = ours(torch.from_numpy(reward), torch.from_numpy(done))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)
    state = ours.state_dict()
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    np.testing.assert_allclose(state['returns'].numpy(), running)


def make_policy(enable_field=('learn', 'collect', 'eval'), seed=0, **learn):
    main = dict(env=dict(env_id='Pendulum-v1'),
                policy=dict(model=dict(obs_norm=True, obs_norm_clip=5.0), learn=dict(reward_norm=True, **learn)))
    cfg = compile_config((main, dict(policy=dict(type='a2c'))), seed=0)
    torch.manual_seed(seed)
    return create_policy(cfg, BOX, gym.spaces.Box(-2.0, 2.0, (1,), dtype=np.float32), enable_field=enable_field)


def segment(seed=0, steps=5, envs=4):
    gen = torch.Generator().manual_seed(seed)
    return make_tree(dict(
        obs=torch.randn(steps + 1, envs, OBS, generator=gen) * 4 + 10, action=torch.randn(steps, envs, 1, generator=gen),
        reward=torch.randn(steps, envs, generator=gen), terminated=torch.zeros(steps, envs, dtype=torch.bool),
        truncated=torch.zeros(steps, envs, dtype=torch.bool), final_obs=torch.zeros(steps, envs, OBS)))


def stats(policy):
    normalizer = policy.model.obs_normalizer
    return [normalizer.mean.clone(), normalizer.var.clone(), normalizer.count.clone()]


def test_only_the_learn_mode_updates_the_statistics_and_it_does_so_from_the_segment():
    policy = make_policy()
    before = stats(policy)
    obs = torch.randn(64, OBS) * 4 + 10
    policy.collect_mode.forward(obs)
    policy.eval_mode.forward(obs)
    assert all(torch.equal(a, b) for a, b in zip(before, stats(policy)))  # frozen outside learning
    batch = segment()
    policy.learn_mode.forward(batch)
    reference = NumpyRunningMeanStd((OBS,))
    reference.update(batch.obs[:-1].reshape(-1, OBS).double().numpy())  # obs[-1] is the next segment's first
    mean, var, count = stats(policy)
    np.testing.assert_allclose(mean.numpy(), reference.mean, rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), reference.var, rtol=1e-10)
    # the eval action is a function of the normalized observation: the same obs gives a new action now
    assert not torch.equal(make_policy().eval_mode.forward(obs)['action'], policy.eval_mode.forward(obs)['action'])


def test_a2c_steps_on_a_segment_with_the_statistics_it_was_collected_with():
    """The gradient is the acting policy's: every normalization inside the learn step uses the statistics the
    collect mode acted with; the segment's observations join them after the step."""
    policy = make_policy()
    policy.learn_mode.forward(segment(0))
    normalizer = policy.model.obs_normalizer
    acting = normalizer.count.item()
    seen = []
    normalizer.register_forward_hook(lambda module, args, out: seen.append(module.count.item()))
    policy.learn_mode.forward(segment(1, steps=5, envs=4))
    assert seen and all(count == acting for count in seen)
    assert normalizer.count.item() == pytest.approx(acting + 5 * 4)


def test_checkpoint_round_trip_restores_both_statistics(tmp_path):
    """The learn state (model buffers, reward-return statistics) is plain tensors: weights_only loading works."""
    policy = make_policy()
    for seed in range(3):
        policy.learn_mode.forward(segment(seed))
    buffer = io.BytesIO()
    torch.save(policy.learn_mode.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert {'obs_normalizer.mean', 'obs_normalizer.var', 'obs_normalizer.count'} <= set(state['model'])
    restored = make_policy(seed=1)
    restored.learn_mode.load_state_dict(state)
    assert all(torch.equal(a, b) for a, b in zip(stats(policy), stats(restored)))
    obs = torch.randn(8, OBS) * 4 + 10
    assert torch.equal(policy.eval_mode.forward(obs)['action'], restored.eval_mode.forward(obs)['action'])
    # the reward normalizer continues the same returns: the next update is identical
    assert policy.learn_mode.forward(segment(7)) == restored.learn_mode.forward(segment(7))


def test_a_parallel_actor_normalizes_exactly_as_the_learner(tmp_path):
    """An actor (inline backend's ActorWorker) receives the statistics with the weights and acts on them."""
    learner = make_policy()
    for seed in range(3):
        learner.learn_mode.forward(segment(seed))
    main = dict(env=dict(env_id='Pendulum-v1', collector_env_num=2), parallel=dict(actor_num=1),
                policy=dict(model=dict(obs_norm=True, obs_norm_clip=5.0), collect=dict(n_sample=8)))
    cfg = compile_config((main, dict(policy=dict(type='a2c'))), seed=0)
    source = HandedWeights()
    source.set(learner.get_weights(), 1)
    actor = ActorWorker(cfg, 0, 0, source)
    try:
        message = actor.collect()
        actor_model = actor.mode._mode.forward.__wrapped__.__self__.model  # the actor's own policy (its collect forward)
    finally:
        actor.close()
    assert message.env_steps == 8
    for name in ('mean', 'var', 'count'):
        assert torch.equal(getattr(actor_model.obs_normalizer, name), getattr(learner.model.obs_normalizer, name))
    obs = torch.from_numpy(message.samples['obs']).reshape(-1, OBS)
    with torch.no_grad():
        ours, theirs = learner.model.compute_actor(obs), actor_model.compute_actor(obs)
    assert torch.equal(ours['mu'], theirs['mu'])


def test_combine_moments_is_the_union_per_element():
    """Chan's combination of two sets' (count, mean, var) equals the mean and population variance of their union,
    element by element (numpy over the concatenation), for sets of very different sizes, centres and spreads."""
    rng = np.random.default_rng(3)
    for size_a, size_b in ((1, 1), (7, 300), (500, 2)):
        a = rng.normal([0.0, 1e3, -2.0], [1.0, 1e-2, 50.0], (size_a, OBS))
        b = rng.normal([5.0, 1e3 + 1, 0.0], [3.0, 1e-3, 0.1], (size_b, OBS))
        count, mean, var = combine_moments(*(torch.tensor(float(len(x)), dtype=torch.float64) if i == 0 else
                                             torch.from_numpy(x.mean(0) if i == 1 else x.var(0))
                                             for x in (a, b) for i in range(3)))
        union = np.concatenate([a, b])
        assert float(count) == len(union)
        for i in range(OBS):
            assert float(mean[i]) == pytest.approx(union[:, i].mean(), rel=1e-12, abs=1e-12)
            assert float(var[i]) == pytest.approx(union[:, i].var(), rel=1e-9, abs=1e-15)


def test_statistics_merged_in_any_order_equal_those_of_the_union():
    """Two streams of batches interleaved any way (what async workers or data-parallel ranks produce) end where one
    update with everything ends."""
    rng = np.random.default_rng(4)
    batches = [torch.from_numpy(rng.normal(i, 1 + i, (int(rng.integers(1, 40)), OBS))) for i in range(12)]
    whole = RunningMeanStd((OBS,))
    whole.update(torch.cat(batches))
    for order in (range(12), rng.permutation(12)):
        merged = RunningMeanStd((OBS,))
        for i in order:
            merged.update(batches[int(i)])
        for name in ('mean', 'var', 'count'):
            torch.testing.assert_close(getattr(merged, name), getattr(whole, name), rtol=1e-12, atol=1e-12)


def _worker_view(policy, seeds, barrier, out):
    """An async worker: learn on its segments (the statistics update inside the learn step), wait for the other
    worker, then report the statistics as it sees them."""
    torch.set_num_threads(1)
    for seed in seeds:
        policy.learn_mode.forward(segment(seed))
    barrier.wait(30)
    rms = policy._reward_normalizer.return_rms
    out.put([t.tolist() for t in stats(policy) + [rms.mean, rms.var, rms.count]])  # numbers: the child exits now


def test_async_workers_update_and_read_one_set_of_statistics():
    """Two forked workers on a shared policy (``Policy.share_memory``, as -m async) each learn on their own
    segments: both end reading the same statistics, those of the union of both workers' data — the observations
    of all six segments, and the discounted returns of each worker's own env columns (continued across its
    segments). Without the sharing each worker would read only its own data's."""
    policy = make_policy()
    policy.share_memory()
    context = multiprocessing.get_context('fork')
    barrier, out = context.Barrier(2), context.SimpleQueue()
    seeds = ((0, 1, 2), (10, 11, 12))

    def child(mine):
        code = 1
        try:
            _worker_view(policy, mine, barrier, out)
            code = 0
        except BaseException:  # noqa: BLE001 - shown in the test's output
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)

    procs = [context.Process(target=child, args=(mine,)) for mine in seeds]
    for proc in procs:
        proc.start()
    views = [[torch.tensor(v, dtype=torch.float64) for v in out.get()] for _ in procs]
    for proc in procs:
        proc.join(30)
    assert [proc.exitcode for proc in procs] == [0, 0]
    obs_reference, return_reference = RunningMeanStd((OBS,)), RunningMeanStd(())
    obs_reference.update(torch.cat([segment(seed).obs[:-1].reshape(-1, OBS) for mine in seeds for seed in mine]))
    for mine in seeds:
        carry = None
        for seed in mine:
            batch = segment(seed)
            returns, carry = running_discounted_returns(batch.reward, batch.terminated | batch.truncated, carry, 0.99)
            return_reference.update(returns)
    expected = [obs_reference.mean, obs_reference.var, obs_reference.count,
                return_reference.mean, return_reference.var, return_reference.count]
    assert float(expected[2]) == pytest.approx(6 * 5 * 4, abs=1e-3)
    for view in views + [stats(policy) + [policy._reward_normalizer.return_rms.mean,
                                          policy._reward_normalizer.return_rms.var,
                                          policy._reward_normalizer.return_rms.count]]:
        for got, want in zip(view, expected):
            torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_a_shared_update_holds_the_lock_and_a_lock_never_released_is_one_line(monkeypatch):
    policy = make_policy()
    policy.share_memory()
    normalizer = policy.model.obs_normalizer
    assert normalizer.mean.is_shared() and policy._reward_normalizer.return_rms.var.is_shared()
    lock = normalizer.update_lock
    assert lock is not None and policy._reward_normalizer.return_rms.update_lock is lock
    lock.acquire()
    update = threading.Thread(target=normalizer.update, args=(torch.ones(4, OBS),))
    update.start()
    update.join(0.3)
    assert update.is_alive() and float(normalizer.count) < 1  # waits for the lock: nothing merged
    lock.release()
    update.join(5)
    assert not update.is_alive() and float(normalizer.count) == pytest.approx(4, abs=1e-3)
    monkeypatch.setattr(normalization, 'STATISTICS_LOCK_TIMEOUT_S', 0.1)
    lock.acquire()
    try:
        with pytest.raises(RuntimeError, match=r"^the shared running statistics' lock was not released within 0.1 s"):
            normalizer.update(torch.ones(4, OBS))
    finally:
        lock.release()
    # a copy (deepcopy, pickle) is statistics of its own, without the lock
    import copy
    assert copy.deepcopy(normalizer).update_lock is None
