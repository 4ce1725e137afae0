"""Specification of ``policy.cuda=True``: every policy learns on a GPU what it learns on the CPU.

Each case trains a short serial run on the CPU and records what its learner was given (the batches of the
off-policy learners; the rollouts of the on-policy ones, with the RNG state their minibatch orders are drawn
from). A twin policy on the GPU, loaded with the run's initial learn state (model, optimizer, statistics),
then replays them: every update's info (losses, entropy, gradient norm, ...) must match the CPU run's to
float32 precision — through ``_prepare_on_device`` (PPO's plan: log π_old, GAE, value targets on the GPU),
``_learn_on_device`` (the uint8 → float conversion of images on the GPU), the normalizers' statistics and the
optimizers' state. Each case then trains the same config end to end with ``policy.cuda=True`` (collect,
evaluate, checkpoint on the GPU), and its checkpoint loads into a CPU policy and acts.

Skipped without a CUDA GPU (CI has none): ``python -m pytest tests/policy/test_cuda.py`` on a GPU machine.
``replay_on_twin(..., 'cpu')`` is the same replay on a CPU twin, where the infos must match exactly
(``test_the_replay_on_a_cpu_twin_is_exact`` runs it everywhere, so the harness itself is tested in CI).
"""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.entry import serial_pipeline, serial_pipeline_onpolicy
from acframe.envs import build_env
from acframe.policy import create_policy, policy_class
from acframe.worker import load_checkpoint
from acframe.worker.learner import Learner

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')

EVAL_RARELY = ['env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None',
               'policy.eval.evaluator.eval_freq=1000']
#: per algorithm: overrides that make one collection small
SMALL = {
    'a2c': ['policy.collect.n_sample=8'],
    'acer': ['policy.learn.batch_size=4', 'policy.other.replay_buffer.replay_buffer_size=256',
             'policy.other.replay_buffer.replay_start_size=32'],
    'impala': ['policy.learn.batch_size=4'],
    'ppo': ['policy.collect.n_sample=32', 'policy.learn.batch_size=16', 'policy.learn.epoch_per_collect=2'],
}
ALGOS = ('a2c', 'acer', 'impala', 'ppo')
#: the same for the recurrent configs (whose rollouts are whole sequences: only ACER's buffer is made smaller)
RECURRENT_SMALL = {'a2c': [], 'impala': [], 'ppo': [],
                   'acer': ['policy.other.replay_buffer.replay_buffer_size=64',
                            'policy.other.replay_buffer.replay_start_size=8']}

#: toy_pixel_goal (uint8 image + float vector) for any algorithm: the IMPALA ResNet on the image, an MLP on the vector
PIXEL_MODEL = dict(encoder='impala_resnet', encoder_channels=[8], encoder_hidden_size_list=[32],
                   vector_encoder='mlp', vector_hidden_size_list=[32], activation='relu')


def pixel_config(algo: str) -> tuple:
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                         stop_value=None),
                policy=dict(model=dict(PIXEL_MODEL), eval=dict(evaluator=dict(eval_freq=1000))))
    return main, dict(env=dict(type='toy_pixel_goal'), policy=dict(type=algo))


#: case id -> (config, overrides)
CASES = {}
for _algo in ALGOS:
    CASES[f'cartpole_{_algo}'] = (f'cartpole_{_algo}.py', ['env.collector_env_num=2'] + EVAL_RARELY + SMALL[_algo])
    # Pendulum: continuous actions; obs_norm, reward_norm and gSDE where its config uses them
    CASES[f'pendulum_{_algo}'] = (f'pendulum_{_algo}.py', ['env.collector_env_num=2'] + EVAL_RARELY + SMALL[_algo])
    CASES[f'pixel_{_algo}'] = (pixel_config(_algo), SMALL[_algo])
    # recurrent cores (cuDNN's LSTM / GRU on the GPU): the shipped memory configs, their own rollout sizes
    CASES[f'novel_{_algo}_lstm'] = (f'cartpole_novel_{_algo}_lstm.py', EVAL_RARELY + RECURRENT_SMALL[_algo])
    CASES[f'cue_{_algo}_gru'] = (f'cue_memory_{_algo}_gru.py', EVAL_RARELY + RECURRENT_SMALL[_algo])
# pong_impala_lstm.py's shape: a CNN, then an LSTM, on uint8 images
CASES['pixel_impala_lstm'] = (pixel_config('impala'), SMALL['impala'] + ['policy.model.rnn.type=lstm',
                                                                          'policy.model.rnn.hidden_size=32'])

#: updates whose info depends on draws from the device's own RNG (ACER's continuous Q~ samples actions on the
#: model's device): the GPU twin can only be checked for finite, same-named infos
DEVICE_RNG_IN_LEARN = {'pendulum_acer'}


class Recording:
    """What a CPU run's learner was given, in order."""

    def __init__(self) -> None:
        self.initial_state = None  # the learn state before the first update
        self.events = []  # ('batch', batch, rng) | ('rollout', rollout, rng)
        self.lrs = []  # each update's learning rates (the pipeline's hooks may schedule them)
        self.infos = []


def record_run(monkeypatch, tmp_path, config, overrides, train_iters: int, seed: int = 0):
    """Train ``config`` on the CPU for ``train_iters`` updates, recording the learner's inputs (see ``Recording``)."""
    rec = Recording()
    cls = policy_class(compile_config(config, overrides=overrides, seed=seed))
    learner_init, learner_train, prepare = Learner.__init__, Learner.train, cls._prepare_rollout

    def init(self, policy, *args, **kwargs):
        learner_init(self, policy, *args, **kwargs)
        rec.initial_state = copy.deepcopy(policy.state_dict())

    def train(self, batch, on_step=None):
        rec.lrs.append([[group['lr'] for group in opt.param_groups] for opt in self.policy.optimizers()])
        if not cls.on_policy:
            rec.events.append(('batch', copy.deepcopy(batch), torch.get_rng_state()))
        info = learner_train(self, batch, on_step)
        rec.infos.append(dict(info))
        return info

    def prepare_rollout(self, rollout):
        rec.events.append(('rollout', copy.deepcopy(rollout), torch.get_rng_state()))
        return prepare(self, rollout)

    with monkeypatch.context() as patch:
        patch.setattr(Learner, '__init__', init)
        patch.setattr(Learner, 'train', train)
        patch.setattr(cls, '_prepare_rollout', prepare_rollout)
        pipeline(cls)(config, seed=seed, overrides=overrides, exp_dir=str(tmp_path / 'cpu'), progress=False,
                      max_train_iter=train_iters)
    assert rec.initial_state is not None and len(rec.infos) == train_iters
    return rec


def pipeline(cls):
    return serial_pipeline_onpolicy if cls.on_policy else serial_pipeline


def spaces(cfg):
    env = build_env(dict(cfg.env), 0, 0, 'collector')
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def replay_on_twin(rec: Recording, config, overrides, device: str) -> list:
    """The infos of a twin policy on ``device``, loaded with the run's initial learn state, given the same inputs."""
    twin_cfg = compile_config(config, overrides=list(overrides) + [f'policy.cuda={device == "cuda"}'], seed=0)
    twin = create_policy(twin_cfg, *spaces(twin_cfg), enable_field=('learn',))
    learn = twin.learn_mode
    learn.load_state_dict(copy.deepcopy(rec.initial_state))
    infos = []

    def update(batch):
        for opt, lrs in zip(learn.optimizers(), rec.lrs[len(infos)]):
            for group, lr in zip(opt.param_groups, lrs):
                group['lr'] = lr
        infos.append(learn.forward(batch))

    for kind, data, rng in rec.events:
        torch.set_rng_state(rng)
        if kind == 'batch':
            update(copy.deepcopy(data))
        else:
            for batch in learn.minibatches(learn.prepare(copy.deepcopy(data))):
                if len(infos) == len(rec.infos):
                    break
                update(batch)
    return infos


def assert_infos_match(expected: list, actual: list, rtol: float, atol: float) -> None:
    assert len(actual) == len(expected)
    for step, (want, got) in enumerate(zip(expected, actual)):
        assert set(got) == set(want), (step, set(got) ^ set(want))
        for key, value in want.items():
            assert math.isfinite(got[key]), (step, key, got[key])
            assert got[key] == pytest.approx(value, rel=rtol, abs=atol), (step, key, got[key], value)


def test_the_replay_on_a_cpu_twin_is_exact(monkeypatch, tmp_path):
    """The harness: a CPU twin given the recorded inputs reproduces the run's infos bit for bit."""
    for case in ('pendulum_ppo', 'pixel_impala', 'novel_ppo_lstm', 'cue_acer_gru'):
        config, overrides = CASES[case]
        rec = record_run(monkeypatch, tmp_path / case, config, overrides, train_iters=4)
        assert_infos_match(rec.infos, replay_on_twin(rec, config, overrides, 'cpu'), rtol=0, atol=0)


@needs_cuda
@pytest.mark.parametrize('case', sorted(CASES))
def test_a_gpu_twin_learns_what_the_cpu_run_learned(monkeypatch, tmp_path, case):
    torch.backends.cudnn.allow_tf32 = False  # full float32 convolutions, to compare with the CPU's
    torch.backends.cuda.matmul.allow_tf32 = False
    config, overrides = CASES[case]
    rec = record_run(monkeypatch, tmp_path, config, overrides, train_iters=6)
    infos = replay_on_twin(rec, config, overrides, 'cuda')
    if case in DEVICE_RNG_IN_LEARN:
        assert_infos_match(rec.infos, infos, rtol=math.inf, atol=math.inf)
    else:
        assert_infos_match(rec.infos, infos, rtol=2e-3, atol=2e-4)


@needs_cuda
@pytest.mark.parametrize('case', sorted(CASES))
def test_a_gpu_run_trains_end_to_end_and_its_checkpoint_acts_on_the_cpu(tmp_path, case):
    config, overrides = CASES[case]
    run = tmp_path / 'gpu'
    trained = pipeline(policy_class(compile_config(config, overrides=overrides)))(config, seed=0, overrides=overrides + ['policy.cuda=True'], exp_dir=str(run),
                              progress=False, max_train_iter=8)
    assert trained.summary['train_iters'] == 8
    state = load_checkpoint(str(run / 'ckpt' / 'ckpt_latest.pth'))
    cfg = compile_config(str(run / 'config.py'), overrides=['policy.cuda=False'])
    cpu = create_policy(cfg, *spaces(cfg), enable_field=('learn', 'eval'))
    cpu.learn_mode.load_state_dict(state['policy'])
    env = build_env(dict(cfg.env), 0, 0, 'evaluator')
    obs, _ = env.reset(seed=0)
    env.close()
    batch = {k: torch.as_tensor(np.stack([v, v])) for k, v in obs.items()} if isinstance(obs, dict) \
        else torch.as_tensor(np.stack([obs, obs]))
    trained.eval_mode.reset()  # a recurrent policy's eval states were the evaluator's envs'
    with torch.no_grad():
        on_cpu = cpu.eval_mode.forward(batch)['action']
        on_gpu = trained.eval_mode.forward(batch)['action']
    assert torch.allclose(on_cpu.float(), on_gpu.float(), atol=1e-4)


@needs_cuda
@pytest.mark.parametrize('case', ['pendulum_ppo', 'pendulum_a2c', 'pendulum_impala', 'pixel_acer'])
def test_a_gpu_run_stopped_mid_rollout_resumes_on_the_gpu(tmp_path, case):
    """The checkpoint (CPU tensors: plan, gSDE matrices, statistics, RNGs incl. CUDA's) goes back to the GPU."""
    config, overrides = CASES[case]
    overrides = overrides + ['policy.cuda=True']
    run = pipeline(policy_class(compile_config(config, overrides=overrides)))
    run(config, seed=0, overrides=overrides, exp_dir=str(tmp_path / 'run'), progress=False, max_train_iter=3)
    state = torch.load(str(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth'), weights_only=True)  # no map_location
    tensors = []
    torch.utils._pytree.tree_map(lambda x: tensors.append(x) if isinstance(x, torch.Tensor) else None, state)
    assert tensors and all(t.device.type == 'cpu' for t in tensors)
    resumed = run(resume=str(tmp_path / 'run'), progress=False, max_train_iter=9)
    assert resumed.summary['train_iters'] == 9
