"""Prioritized replay in the losses of IMPALA and ACER and through the learner of both pipelines.

* all importance weights 1: the very same numbers as the plain path (same weights, same batch);
* weights ``B·e_b`` (only sequence ``b``, times the batch size): the very same update as the plain path on sequence
  ``b`` alone -- so each weight multiplies exactly its own sequence's loss terms;
* the priorities a learn forward returns are the paper's per-sequence errors (IMPALA: mean_s |v_s - V(x_s)|, ACER:
  mean_t |Q_ret - Q(x_t, a_t)|), and the learner hands them to ``buffer.update_priority`` in the serial and the
  parallel pipeline.
"""
import copy
import os

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.data import make_tree, split_segment, to_dict
from acframe.data.prioritized import PrioritizedReplayBuffer
from acframe.entry.parallel import parallel_pipeline
from acframe.entry.serial import serial_pipeline
from acframe.policy import create_policy
from acframe.rl_utils import vtrace
from acframe.worker import Learner, LearnerHook
from acframe.worker.learner import load_checkpoint

CARTPOLE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)
PENDULUM = gym.spaces.Box(-8.0, 8.0, (3,), np.float32), gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
T, B = 4, 3


def make_policy(algo, spaces):
    torch.manual_seed(0)
    main = dict(policy=dict(model=dict(encoder_hidden_size_list=[16])))
    cfg = compile_config((main, dict(policy=dict(type=algo))), ['policy.learn.grad_clip_value=1000000.0'])
    return create_policy(cfg, *spaces)


def make_batch(policy, seed=1, steps=T):
    """A batch the policy itself collected from random observations (rho = 1 before the first update)."""
    gen = torch.Generator().manual_seed(seed)
    dim = 4 if policy._action_space == 'discrete' else 3
    obs = torch.randn(steps + 1, B, dim, generator=gen)
    with torch.no_grad():
        out = policy.collect_mode.forward(obs[:-1].reshape(-1, dim))
    batch = {k: v.reshape((steps, B) + tuple(v.shape[1:])) for k, v in out.items()}
    batch.update(obs=obs, reward=torch.randn(steps, B, generator=gen), final_obs=torch.zeros(steps, B, dim),
                 terminated=torch.zeros(steps, B, dtype=torch.bool), truncated=torch.zeros(steps, B, dtype=torch.bool))
    return make_tree(batch)


def weighted(batch, weights):
    return make_tree({**to_dict(batch), 'is_weight': torch.as_tensor(weights, dtype=torch.float32)[None],
                      'replay_index': torch.arange(B)[None], 'replay_id': torch.arange(B)[None]})


def column(batch, b):
    return make_tree({k: v[:, b:b + 1] for k, v in to_dict(batch).items()})


def step(algo, spaces, batch):
    """One update from fresh weights: (info, weights after it)."""
    policy = make_policy(algo, spaces)
    torch.manual_seed(7)  # ACER's continuous bias correction draws a'
    info = policy.learn_mode.forward(batch)
    return info, copy.deepcopy(policy.model.state_dict())


CASES = [('impala', CARTPOLE), ('impala', PENDULUM), ('acer', CARTPOLE), ('acer', PENDULUM)]
IDS = ['impala-discrete', 'impala-continuous', 'acer-discrete', 'acer-continuous']


@pytest.mark.parametrize('algo,spaces', CASES, ids=IDS)
def test_weights_of_one_give_exactly_the_plain_update(algo, spaces):
    batch = make_batch(make_policy(algo, spaces))
    plain_info, plain_weights = step(algo, spaces, batch)
    info, weights = step(algo, spaces, weighted(batch, torch.ones(B)))
    assert 'priority' not in plain_info and tuple(info.pop('priority').shape) == (B,)
    assert info == plain_info
    for key in plain_weights:
        assert torch.equal(weights[key], plain_weights[key]), key


@pytest.mark.parametrize('algo,spaces', CASES, ids=IDS)
def test_a_weight_multiplies_exactly_its_own_sequences_loss(algo, spaces):
    """The loss of weights B·e_b is the loss of sequence b alone; the mean of those over b is the plain loss.
    (ACER's continuous bias correction draws a' per batch, so its column alone draws other a': only the sum.)"""
    batch = make_batch(make_policy(algo, spaces))
    critic = 'value_loss' if algo == 'impala' else 'q_loss'
    plain, _ = step(algo, spaces, batch)
    total = dict.fromkeys(('total_loss', critic, 'entropy'), 0.0)
    for b in range(B):
        one_hot = torch.zeros(B)
        one_hot[b] = B  # mean over B columns of B·e_b · L = the loss of column b alone
        info, weights = step(algo, spaces, weighted(batch, one_hot))
        for key in total:
            total[key] += info[key] / B
        if (algo, spaces) == ('acer', PENDULUM):
            continue
        alone_info, alone_weights = step(algo, spaces, column(batch, b))
        for key in total:
            assert info[key] == pytest.approx(alone_info[key], rel=1e-5, abs=1e-7), key
        for key in alone_weights:
            torch.testing.assert_close(weights[key], alone_weights[key], rtol=1e-4, atol=1e-6)
    for key in total:
        assert total[key] == pytest.approx(plain[key], rel=1e-5, abs=1e-7), key


def test_impala_priorities_are_the_mean_absolute_v_trace_error_of_each_unroll():
    policy = make_policy('impala', CARTPOLE)
    batch = make_batch(policy)
    learn = policy._cfg.learn
    with torch.no_grad():
        out = policy.model(batch.obs.reshape(-1, 4))
        logits, values = out['logit'].reshape(T + 1, B, 2)[:-1], out['value'].reshape(T + 1, B)
        log_pi = torch.log_softmax(logits, -1).gather(-1, batch.action.unsqueeze(-1)).squeeze(-1)
        log_mu = torch.log_softmax(batch.logit, -1).gather(-1, batch.action.unsqueeze(-1)).squeeze(-1)
        vs = vtrace(log_pi - log_mu, torch.full((T, B), learn.discount_factor), batch.reward, values[:-1], values[-1],
                    lambda_=learn.lambda_).vs
    info = policy.learn_mode.forward(weighted(batch, torch.ones(B)))
    expected = [np.mean([abs(float(vs[t, b] - values[t, b])) for t in range(T)]) for b in range(B)]
    np.testing.assert_allclose(info['priority'].numpy(), expected, rtol=1e-5)


def test_acer_priorities_are_the_absolute_retrace_error_of_each_window():
    """With one step, q_loss of a window alone is 1/2 (Q_ret - Q)^2: its priority is sqrt(2 q_loss)."""
    batch = make_batch(make_policy('acer', CARTPOLE), steps=1)
    info, _ = step('acer', CARTPOLE, weighted(batch, torch.ones(B)))
    for b in range(B):
        alone, _ = step('acer', CARTPOLE, column(batch, b))
        assert float(info['priority'][b]) == pytest.approx((2 * alone['q_loss']) ** 0.5, rel=1e-5)


def test_the_learner_hands_the_priorities_to_the_buffer_that_drew_the_batch():
    policy = make_policy('impala', CARTPOLE)
    buffer = PrioritizedReplayBuffer(8, max_use=100, alpha=1.0)
    buffer.push(split_segment(make_batch(policy, steps=16), 4, drop_remainder=True))  # 4 x B unrolls of 4 steps
    learner = Learner(policy.learn_mode, buffer=buffer)
    batch = buffer.sample(4)
    info = learner.train(batch)
    assert 'priority' not in info  # popped before the hooks and logs see the info
    slots = batch.replay_index[0].numpy()
    assert not np.allclose(buffer.priorities.priority[slots], 1.0)
    assert buffer.priorities.sample_calls == 1


class PriorityProbe(LearnerHook):
    """Records the buffer's priorities after every update (hooks run in the learner's process)."""

    def __init__(self):
        self.changed = 0

    def after_iter(self, learner, info):
        priority = learner.buffer.priorities.priority
        self.changed = int((learner.buffer.priorities.drawable & (priority != 1.0)).sum())


@pytest.mark.parametrize('pipeline', ['serial', 'serial_learner_thread', 'parallel'])
def test_priorities_round_trip_through_the_learner_of_each_pipeline_and_resume(tmp_path, pipeline):
    probe = PriorityProbe()
    overrides = ['policy.other.replay_buffer.type=prioritized', 'policy.other.replay_buffer.anneal_step=10',
                 'env.collector_env_num=2', 'policy.collect.n_sample=2', 'policy.learn.batch_size=4',
                 'policy.other.replay_buffer.save_in_checkpoint=True', 'env.evaluator_env_num=1',
                 'env.n_evaluator_episode=1']
    run = str(tmp_path / 'run')
    if pipeline.startswith('serial'):
        overrides += ['policy.learn.learner_thread=True'] if pipeline == 'serial_learner_thread' else []
        serial_pipeline('cartpole_impala.py', overrides=overrides, exp_dir=run, max_train_iter=12, progress=False,
                        learner_hooks=[probe])
    else:
        parallel_pipeline('cartpole_impala.py', overrides=overrides + ['parallel.actor_num=1'], backend='inline',
                          exp_dir=run, max_train_iter=12, progress=False, learner_hooks=[probe])
    assert probe.changed > 0
    state = load_checkpoint(os.path.join(run, 'ckpt', 'ckpt_latest.pth'))['buffer']['priorities']
    assert state['sample_calls'] == 12
    if pipeline != 'serial':
        return
    from acframe.config.run_folder import load_run_config
    from acframe.entry.serial import SerialRun

    resumed = SerialRun(load_run_config(run), exp_dir=run, resume=True, progress=False)  # restored, nothing to train
    try:
        assert resumed.spent_on_resume
        path = resumed.learner.save_checkpoint('ckpt_saved_again.pth')  # (the spent resume itself writes nothing)
    finally:
        resumed.close()
    again = load_checkpoint(path)['buffer']['priorities']
    for key in ('priority', 'serial', 'drawable'):
        np.testing.assert_array_equal(again[key], state[key])
    assert again['sample_calls'] == 12 and again['max_priority'] == state['max_priority']
