"""The seam for a new algorithm: a policy module and a config, nothing in ``entry/``, ``worker/`` or ``config/``.

docs/adding_an_algorithm.md promises that an algorithm is a policy plugin. This file proves it: it defines a
throwaway policy here — REINFORCE with a learned baseline, in a dozen lines on ``Policy``'s shared helpers —
registers it, and trains it end to end, from a config dict, in the serial on-policy pipeline (with a resume)
and in the parallel pipeline (local processes, synchronous rounds).
"""
import json
import os
from typing import Dict

import pytest
import torch

from acframe import POLICY_REGISTRY
from acframe.entry import serial_pipeline_onpolicy
from acframe.entry.parallel import parallel_pipeline
from acframe.policy import Policy
from acframe.policy.base import build_optimizer
from acframe.rl_utils import nstep_return

NAME = 'reinforce_seam_test'


class ReinforcePolicy(Policy):
    """REINFORCE with a learned baseline: ``−log π(a_t|x_t)·(G_t − V(x_t)) + value_weight·(G_t − V(x_t))²``, with
    ``G_t`` the discounted return to the end of the rollout, bootstrapped there from ``V``."""

    supported_action_spaces = ('discrete', 'continuous')
    on_policy = True
    collect_stats = False  # the learner recomputes π: the collector keeps only the actions

    config = dict(
        # (bool) Learns on-policy: each rollout once, with the weights that collected it.
        on_policy=True,
        learn=dict(
            # (str) Optimizer: 'adam' or 'rmsprop'.
            optim='adam',
            # (float) Step size of the optimizer.
            learning_rate=0.003,
            # (float) Discount factor gamma in [0, 1].
            discount_factor=0.99,
            # (float) Weight of the baseline's squared error.
            value_weight=0.5,
            # (str) Gradient clipping: 'clip_norm' (global norm), 'clip_value' (elementwise) or 'none'.
            grad_clip_type='clip_norm',
            # (float) The norm (clip_norm) or absolute value (clip_value) gradients are clipped to.
            clip_value=1.0,
        ),
        collect=dict(
            # (int) Transitions per rollout across all collector envs (a multiple of env.collector_env_num).
            n_sample=64,
        ),
        other=dict(
            replay_buffer=dict(
                # (str) On-policy: no replay buffer.
                type='',
            ),
        ),
    )

    def _init_learn(self) -> None:
        self._optimizer = build_optimizer(self._model.parameters(), self._cfg.learn)
        self._params = list(self._model.parameters())

    def _forward_learn(self, rollout) -> Dict[str, float]:
        output = self._evaluate(rollout.obs)  # (T+1, B, ...): the last step bootstraps
        values = output['value']
        with torch.no_grad():
            rewards = self._bootstrap_truncation(rollout.reward, rollout.truncated, rollout.final_obs)
            returns = nstep_return(rewards, self._discounts(rollout.terminated, rollout.truncated), values[-1])
        advantages = returns - values[:-1].detach()
        policy_loss = -(self._distribution(output, drop_last=True).log_prob(rollout.action) * advantages).mean()
        value_loss = (returns - values[:-1]).pow(2).mean()
        return self._learn_step(policy_loss + self._cfg.learn.value_weight * value_loss,
                                policy_loss=policy_loss, value_loss=value_loss)

    def _monitor_vars_learn(self):
        return super()._monitor_vars_learn() + ['policy_loss', 'value_loss', 'grad_norm']


@pytest.fixture(autouse=True)
def registered():
    """The policy is in the registry for these tests only (other tests list the registry's policies)."""
    POLICY_REGISTRY.register(NAME, ReinforcePolicy)
    yield
    POLICY_REGISTRY._entries.pop(NAME, None)


def config(**parallel):
    main = dict(
        exp_name='seam_test',
        env=dict(env_id='CartPole-v1', collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2,
                 n_confirm_episode=0, stop_value=10_000),
        parallel={'actor_num': 2, **parallel},
        policy=dict(collect=dict(n_sample=64), eval=dict(evaluator=dict(eval_freq=10)),
                    learn=dict(learner=dict(log_freq=5))),
        seed=0,
    )
    return main, dict(env=dict(type='gym'), policy=dict(type=NAME))


def read_summary(exp_dir) -> dict:
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


def latest_checkpoint(exp_dir) -> dict:
    return torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)


def test_a_new_policy_trains_and_resumes_in_the_serial_on_policy_pipeline(tmp_path):
    exp_dir = str(tmp_path / 'serial')
    first = serial_pipeline_onpolicy(config(), exp_dir=exp_dir, max_env_step=640, progress=False)
    assert isinstance(first, ReinforcePolicy)
    summary = read_summary(exp_dir)
    assert summary['policy'] == NAME and summary['env_steps'] == 640
    assert summary['train_iters'] == 10  # one gradient step per rollout of 64 transitions
    assert summary['last_eval_return'] is not None and os.path.isfile(os.path.join(exp_dir, 'ckpt', 'ckpt_best.pth'))
    state = latest_checkpoint(exp_dir)
    assert state['train_iter'] == 10 and state['env_step'] == 640
    before = {k: v.clone() for k, v in state['policy']['model'].items()}

    serial_pipeline_onpolicy(resume=exp_dir, max_env_step=1280, progress=False)
    summary = read_summary(exp_dir)
    assert summary['env_steps'] == 1280 and summary['train_iters'] == 20
    after = latest_checkpoint(exp_dir)['policy']['model']
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the resumed run trained on
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())


def test_the_same_policy_trains_in_the_parallel_pipeline(tmp_path):
    exp_dir = str(tmp_path / 'parallel')
    policy = parallel_pipeline(config(), exp_dir=exp_dir, max_env_step=1280, backend='local', progress=False)
    assert isinstance(policy, ReinforcePolicy)
    summary = read_summary(exp_dir)
    assert summary['policy'] == NAME and summary['backend'] == 'local' and summary['sync_mode'] == 'sync'
    assert summary['env_steps'] == 1280 and summary['segments'] == 20  # 10 rounds of one 64-step segment per actor
    assert summary['train_iters'] == 10  # one gradient step per round: both actors' segments side by side
    assert summary['samples_trained'] == 1280 and summary['discarded_segments'] == 0
    assert summary['last_eval_return'] is not None
    state = latest_checkpoint(exp_dir)
    assert state['train_iter'] == 10 and state['parallel']['actor_num'] == 2


def test_the_serial_run_is_the_same_from_the_same_seed(tmp_path):
    runs = []
    for name in ('a', 'b'):
        serial_pipeline_onpolicy(config(), exp_dir=str(tmp_path / name), max_env_step=320, progress=False)
        runs.append(latest_checkpoint(str(tmp_path / name))['policy']['model'])
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
