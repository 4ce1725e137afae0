"""Specification of the learning contract: ``Learner.train_iter`` counts gradient steps for every algorithm.

One learner iteration is one ``learn_mode.forward`` and one optimizer step, whether the pipeline is off-policy
(IMPALA, ACER: one replayed batch) or on-policy (A2C: one per rollout; PPO: epochs × minibatches per rollout),
so every ``*_freq`` and budget means the same thing for all of them.
"""
import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from acframe.entry.parallel import parallel_pipeline
from acframe.entry.serial import serial_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.worker import LearnerHook

SMALL = ['env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None',
         'policy.eval.evaluator.eval_freq=0']
CASES = {
    'a2c': (serial_pipeline_onpolicy, 'cartpole_a2c.py', []),
    'ppo': (serial_pipeline_onpolicy, 'cartpole_ppo.py',
            ['policy.collect.n_sample=16', 'policy.learn.epoch_per_collect=3', 'policy.learn.batch_size=8']),
    'impala': (serial_pipeline, 'cartpole_impala.py', ['policy.learn.batch_size=4']),
    'acer': (serial_pipeline, 'cartpole_acer.py', []),
}


class StepCounter(LearnerHook):
    """After every learner iteration: the optimizer steps taken so far (counted by a global torch hook)."""

    def __init__(self) -> None:
        self.steps = 0
        self.pairs = []
        self._handle = register_optimizer_step_post_hook(self._count)

    def _count(self, optimizer, args, kwargs) -> None:
        self.steps += 1

    def after_iter(self, learner, info) -> None:
        self.pairs.append((learner.train_iter, self.steps))

    def remove(self) -> None:
        self._handle.remove()


@pytest.mark.parametrize('name', sorted(CASES))
def test_train_iter_equals_the_gradient_steps_taken(tmp_path, name):
    pipeline, config, overrides = CASES[name]
    counter = StepCounter()
    try:
        policy = pipeline(config, seed=0, overrides=SMALL + overrides, max_train_iter=25, exp_dir=str(tmp_path / name),
                          progress=False, learner_hooks=[counter])
    finally:
        counter.remove()
    assert policy.summary['train_iters'] == 25
    assert counter.pairs == [(i, i) for i in range(1, 26)]


def test_a_ppo_rollout_is_epochs_times_minibatches_iterations_in_the_parallel_pipeline(tmp_path):
    """Sync rounds: 2 actors × 1 env × 8 steps = 16 transitions, minibatches of 8, 3 epochs: 6 iterations a round;
    every iteration trains on 8 samples, and the learner's samples count them all."""
    exp_dir = tmp_path / 'ppo'
    overrides = SMALL + ['env.collector_env_num=1', 'policy.collect.n_sample=8', 'policy.learn.epoch_per_collect=3',
                         'policy.learn.batch_size=8', 'parallel.actor_num=2']
    counter = StepCounter()
    try:
        policy = parallel_pipeline('cartpole_ppo.py', overrides=overrides, exp_dir=str(exp_dir), backend='inline',
                                   max_train_iter=18, progress=False, learner_hooks=[counter])
    finally:
        counter.remove()
    summary = policy.summary
    assert summary['sync_mode'] == 'sync' and summary['train_iters'] == 18
    assert counter.pairs == [(i, i) for i in range(1, 19)]
    assert summary['env_steps'] == 3 * 16  # three rounds
    assert summary['samples_trained'] == 18 * 8 == 3 * summary['env_steps']  # epochs × the transitions collected
