"""Asynchronous training (``-m async``) with a recurrent core (``policy.model.rnn``): A3C and ChainerRL's async ACER
with an LSTM/GRU.

Each worker is a serial pipeline of its own on the shared model, so its collector carries one state per env of its
own and its learner recomputes its segments (A2C) or replayed windows (ACER) from the states stored in them:

* one worker equals the serial pipeline bit for bit (same config and seed -> the same weights), recurrent A2C with a
  GRU and recurrent ACER with an LSTM and a burn-in;
* two workers from the CLI complete (recurrent A2C on CartPole without velocities, whose episodes end at different
  steps), their checkpoint holds worker 0's per-env states (as a feed-forward run's holds its observations), and
  ``--resume`` continues the run.

That it learns (both workers on the cue task, which no feed-forward policy solves) is measured in
docs/benchmarks.md, not here.
"""
from __future__ import annotations

import os

import pytest
import torch

from acframe.entry.async_training import async_pipeline
from acframe.entry.serial import serial_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy

from test_async_training import _cli, _summary  # the A3C tests' helpers

QUIET = ['env.stop_value=None', 'policy.eval.evaluator.eval_freq=100', 'env.collector_env_num=2']


@pytest.mark.parametrize('config, pipeline, overrides', [
    ('cue_memory_a2c_gru.py', serial_pipeline_onpolicy, ['policy.collect.n_sample=16']),
    ('cartpole_novel_acer_lstm.py', serial_pipeline,
     ['policy.other.replay_buffer.replay_start_size=200', 'policy.model.rnn.burn_in=4']),
])
def test_one_recurrent_worker_equals_the_serial_pipeline(tmp_path, config, pipeline, overrides):
    overrides = QUIET + overrides
    serial = pipeline(config, seed=3, overrides=overrides, exp_dir=str(tmp_path / 'serial'), max_env_step=600,
                      progress=False)
    one = async_pipeline(config, seed=3, overrides=overrides + ['parallel.async_worker_num=1'],
                         exp_dir=str(tmp_path / 'async'), max_env_step=600, progress=False)
    first, second = _summary(str(tmp_path / 'serial')), _summary(str(tmp_path / 'async'))
    assert first['train_iters'] == second['train_iters'] > 5 and first['env_steps'] == second['env_steps']
    want, got = serial.get_weights(), one.get_weights()
    assert want.keys() == got.keys() and any(key.startswith('core.rnn.') for key in got)
    for name, value in got.items():
        torch.testing.assert_close(value, want[name], rtol=0, atol=0, msg=name)


def test_two_recurrent_workers_complete_and_resume_from_the_cli(tmp_path):
    folder = str(tmp_path / 'run')
    proc = _cli('-m', 'async', '-c', 'cartpole_novel_a2c_lstm.py', '--exp-dir', folder, '--max-env-step', '2000',
                'parallel.async_worker_num=2', 'env.stop_value=None', 'policy.eval.evaluator.eval_freq=5')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    first = _summary(folder)
    assert first['async_worker_num'] == 2 and not first['interrupted'] and first['last_eval_return'] is not None
    ckpt = torch.load(os.path.join(folder, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert tuple(ckpt['policy']['model']['core.rnn.weight_hh_l0'].shape) == (4 * 64, 64)  # the file's LSTM of 64
    states = ckpt['collector']['policy']['rnn']
    assert tuple(states['state'].shape) == (8, 2, 64) and tuple(states['start'].shape) == (8,)  # worker 0's 8 envs
    # carried mid-episode (an env that starts an episode at its next step has its state zeroed already)
    carried = ~states['start']
    assert carried.any() and (states['state'][carried].abs().sum(dim=(1, 2)) > 0).all()
    proc = _cli('--resume', folder, '--max-env-step', '3000')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    second = _summary(folder)
    assert second['env_steps'] >= 3000 and second['train_iters'] > first['train_iters']
