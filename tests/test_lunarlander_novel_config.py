"""dizoo_configs/lunarlander_novel_ppo_lstm.py trains end to end (a few hundred env steps): LunarLander-v3 without its
velocities (5 observation entries), PPO's minibatches are whole 64-step sequences (one per gradient step, as
RecurrentPPO's minibatch of 64 consecutive steps), the losses are finite and the weights move."""
import importlib.util
import json

import pytest
import torch

from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.worker import LearnerHook

pytestmark = pytest.mark.skipif(importlib.util.find_spec('Box2D') is None,
                                reason="needs the 'box2d' extra (pip install -e .[box2d])")

SMALL = ['env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
         'env.max_episode_steps=100', 'policy.collect.n_sample=256', 'policy.learn.epoch_per_collect=2',
         'policy.learn.torch_threads=1']


class Infos(LearnerHook):
    """Every gradient step's logged values, and the weights after the first one."""

    def __init__(self):
        self.infos, self.after_first = [], None

    def after_iter(self, learner, info):
        self.infos.append(dict(info))
        if self.after_first is None:
            self.after_first = {k: v.detach().clone() for k, v in learner.policy.model.state_dict().items()}


def test_the_shipped_lunarlander_novel_config_trains_on_whole_64_step_sequences(tmp_path):
    infos = Infos()
    policy = serial_pipeline_onpolicy('lunarlander_novel_ppo_lstm.py', seed=0, overrides=SMALL,
                                      exp_dir=str(tmp_path / 'run'), max_env_step=512, progress=False,
                                      learner_hooks=[infos])
    model = policy.learn_mode.model
    first = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert first.in_features == 5  # x, y, angle, two leg contacts: the velocities are gone
    assert any(isinstance(m, torch.nn.LSTM) for m in model.modules())
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['env_steps'] == 512
    # 2 rollouts of 2 envs x 128 steps: 4 sequences of 64 per rollout, one per minibatch, 2 epochs each
    assert len(infos.infos) == 2 * 4 * 2
    for info in infos.infos:
        assert all(torch.isfinite(torch.as_tensor(float(v))) for k, v in info.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool))
    final = model.state_dict()
    for name in ('core.rnn.weight_hh_l0', 'actor_out.weight', 'critic_head.2.weight'):  # the later steps trained them
        assert not torch.equal(final[name], infos.after_first[name]), name
