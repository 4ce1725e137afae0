"""Asynchronous ACER (``-m async`` with policy 'acer'; ChainerRL's async ACER): Hogwild workers, each with its own
episodic replay, on one shared model, shared optimizer statistics and a shared average policy network.

* one worker's updates, made in a forked process on the shared-memory ACER policy, equal the same updates in one
  process: the weights, the average network and the optimizer statistics (discrete and continuous actions);
* with one async worker, the run equals the serial ACER pipeline's on the same seed (the same weights, average
  network and optimizer state after the same updates);
* two workers from the CLI: a run completes (each worker's replay updates count), ``--resume`` continues it with
  worker 0's buffer from the checkpoint;
* bad input (one line naming the key, exit 2, nothing written): ``test_async_training.test_bad_input_is_one_line``.
"""
from __future__ import annotations

import json
import os

import pytest
import torch

from acframe.config import compile_config
from acframe.entry.async_training import async_pipeline
from acframe.entry.run_base import build_buffer
from acframe.entry.serial import serial_pipeline
from acframe.envs import make_env_manager
from acframe.policy import create_policy
from acframe.worker import Learner, SampleCollector

from test_async_training import _cli, _in_children, _summary  # the A3C tests' helpers

#: small rounds: 2 envs x 5 steps per collection, replay from 20 stored transitions on
SMALL = {
    'cartpole_acer.py': [('env.collector_env_num', 2), ('policy.collect.n_sample', 2),
                         ('policy.other.replay_buffer.replay_start_size', 20), ('policy.learn.batch_size', 4)],
    'pendulum_acer.py': [('env.collector_env_num', 2), ('policy.collect.n_sample', 2),
                         ('policy.other.replay_buffer.unroll_len', 5), ('policy.learn.batch_size', 4),
                         ('policy.other.replay_buffer.replay_start_size', 20)],
}


def _policy(config):
    cfg = compile_config(config, SMALL[config])
    torch.manual_seed(0)
    env = make_env_manager(cfg, 'collector', 2, 0)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    return cfg, env, policy


def _batches(config):
    """The batches a serial ACER round trains on: the fresh segment, then replayed windows of a buffer holding 4
    collections (collected by a separate policy, so the policies under test start untouched)."""
    cfg, env, policy = _policy(config)
    buffer = build_buffer(cfg)
    collector = SampleCollector(env, policy.collect_mode, cfg.policy.collect.n_sample)
    batches = []
    for _ in range(4):
        buffer.push(policy.collect_mode.get_train_sample(collector.collect(collector.steps_per_env)))
        while (batch := buffer.sample(cfg.policy.learn.batch_size)) is not None:
            batches.append(batch)
    env.close()
    assert len(batches) > 4  # replayed windows, not only the fresh segments
    return batches


def _updates(policy, batches):
    torch.manual_seed(7)  # the continuous update samples a' ~ pi
    learner = Learner(policy.learn_mode)
    for batch in batches:
        learner.train(batch)


def _learn_state(policy):
    state = policy.learn_mode.state_dict()
    optimizer = [v.clone() for s in state['optimizer']['state'].values() for v in s.values()
                 if isinstance(v, torch.Tensor)]
    return state['model'], state['average_model'], optimizer


@pytest.fixture
def one_thread():
    """One torch thread here, as in the forked worker: the SDN's advantage bias gets a gradient of rounding noise only
    (it cancels in A - mean A), which Adam scales up to a full step, so a different reduction order shows."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize('config', ['cartpole_acer.py', 'pendulum_acer.py'])
def test_worker_updates_on_shared_policy_equal_one_process(config, one_thread):
    batches = _batches(config)
    shared, plain = _policy(config)[2], _policy(config)[2]
    start = {k: v.clone() for k, v in shared._average_model.state_dict().items()}
    shared.share_memory()
    assert all(p.is_shared() for p in shared._average_model.parameters())
    _in_children(lambda: _updates(shared, batches))  # a forked worker's updates reach this process's model
    _updates(plain, batches)
    got, want = _learn_state(shared), _learn_state(plain)
    for got_part, want_part in zip(got[:2], want[:2]):  # the model, the average network
        for name, value in got_part.items():
            torch.testing.assert_close(value, want_part[name], rtol=0, atol=1e-6, msg=name)
    assert any(not torch.equal(v, start[k]) for k, v in got[1].items())  # the worker moved the shared average
    assert len(got[2]) == len(want[2])
    for a, b in zip(got[2], want[2]):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def _weights(policy):
    model, average, optimizer = _learn_state(policy)
    return {**{f'model.{k}': v for k, v in model.items()}, **{f'average.{k}': v for k, v in average.items()},
            **{f'optimizer.{i}': v for i, v in enumerate(optimizer)}}


def test_one_async_worker_equals_the_serial_pipeline(tmp_path):
    overrides = [f'{k}={v}' for k, v in SMALL['cartpole_acer.py']] + ['env.stop_value=None',
                                                                     'policy.eval.evaluator.eval_freq=100']
    serial = serial_pipeline('cartpole_acer.py', seed=3, overrides=overrides, exp_dir=str(tmp_path / 'serial'),
                             max_env_step=400, progress=False)
    one = async_pipeline('cartpole_acer.py', seed=3, overrides=overrides + ['parallel.async_worker_num=1'],
                         exp_dir=str(tmp_path / 'async'), max_env_step=400, progress=False)
    first, second = _summary(str(tmp_path / 'serial')), _summary(str(tmp_path / 'async'))
    assert first['train_iters'] == second['train_iters'] > 40  # replayed updates: more than one per collection
    assert first['env_steps'] == second['env_steps']
    want, got = _weights(serial), _weights(one)
    assert want.keys() == got.keys()
    for name, value in got.items():
        torch.testing.assert_close(value, want[name], rtol=0, atol=0, msg=name)


def test_two_workers_from_the_cli_complete_and_resume(tmp_path):
    folder = str(tmp_path / 'run')
    small = [f'{k}={v}' for k, v in SMALL['cartpole_acer.py']]
    proc = _cli('-m', 'async', '-c', 'cartpole_acer.py', '--exp-dir', folder, '--max-env-step', '600', *small,
                'env.stop_value=None', 'policy.eval.evaluator.eval_freq=100',
                'policy.other.replay_buffer.save_in_checkpoint=True')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    first = _summary(folder)
    assert first['async_worker_num'] == 2 and first['policy'] == 'acer' and not first['interrupted']
    assert 600 <= first['env_steps'] < 600 + 2 * 10
    # 60 collections over both workers, each with its on-policy update and its own replays once its buffer holds 20
    assert first['train_iters'] > 100
    assert json.load(open(os.path.join(folder, 'config.json')))['mode'] == 'async'
    state = torch.load(os.path.join(folder, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert 'average_model' in state['policy']
    # worker 0's own replay: its share of the transitions, not every worker's
    assert 0 < state['buffer']['pushed'] < first['env_steps']
    proc = _cli('--resume', folder, '--max-env-step', '900')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    second = _summary(folder)
    assert 900 <= second['env_steps'] < 900 + 20 and second['train_iters'] > first['train_iters'] + 50
    assert second['wall_s'] > first['wall_s']
