"""Specification of the start-up checks of a run's plan (``acframe.entry.budget``) and of exact budgets.

* A run whose budget can never let it learn — zero gradient steps, zero replays, minibatches larger than its
  rollouts, a batch larger than the buffer — is refused before anything is written, in one line that gives
  the arithmetic; a budget just large enough trains.
* A replay buffer larger than the memory available is refused without allocating it.
* ``max_env_step`` stops every pipeline within one step per env (the last segment is cut, whatever the
  unroll length); ``max_train_iter`` stops it at exactly that many gradient steps.
"""
import json
import os

import gymnasium as gym
import pytest
import torch

from acframe import serial_pipeline, serial_pipeline_onpolicy
from acframe.cli import main
from acframe.config import compile_config
from acframe.data import ReplayBuffer, split_segment
from acframe.data.episodic_buffer import EpisodicReplayBuffer
from acframe.entry import budget as budget_module
from acframe.entry.budget import CollectionPlan, check_buffer_memory, check_learning_budget
from acframe.entry.parallel import parallel_pipeline
from acframe.errors import ConfigError
from acframe.policy import policy_class

SMALL = ['env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None']


def cli(args, capsys):
    code = main([str(a) for a in args])
    _, err = capsys.readouterr()
    return code, err


def read_summary(exp_dir) -> dict:
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


# ---- the arithmetic ----------------------------------------------------------------------------------
def test_the_plan_counts_what_each_pipeline_gives_the_learner():
    cfg = compile_config('cartpole_impala.py', ['env.collector_env_num=2', 'policy.collect.n_sample=2',
                                                'max_env_step=100'])  # a segment: 2 envs x 16 steps = 32
    serial = CollectionPlan.of(cfg, 'serial')
    assert serial.segment_steps == 32
    assert serial.learner_env_steps() == 96  # 3 whole segments; the 4th, cut to 2 steps per env, is not stored
    assert serial.learner_env_steps(126) == 96  # the last 30 steps: 15 per env, cut
    assert serial.learner_env_steps(127) == 128  # the last 31 steps: 16 per env (one over), a whole segment
    assert CollectionPlan.of(cfg, 'serial_onpolicy').learner_env_steps() == 100  # every cut rollout is trained on
    assert CollectionPlan.of(cfg, 'parallel', actors=3, sync=True).learner_env_steps() == 102  # rounds of 3 x 2 envs
    asynchronous = CollectionPlan.of(cfg, 'parallel', actors=3)
    assert asynchronous.learner_env_steps(32) == 0  # one segment spends the budget: the learner stops on its arrival
    assert asynchronous.learner_env_steps(100) == 98  # all but the last step per env, at most
    assert serial.budget_for(128) == 127 and asynchronous.budget_for(98) == 99


def test_each_policy_declares_what_its_learn_mode_needs_first():
    impala = compile_config('cartpole_impala.py', ['policy.learn.batch_size=5', 'policy.unroll_len=8'])
    (need,) = policy_class(impala).learn_needs(impala.policy)
    assert (need.env_steps, need.scope, need.lacks) == (40, 'budget', 'gradient steps')
    acer = compile_config('cartpole_acer.py', ['policy.other.replay_buffer.replay_start_size=300'])
    first, replay = policy_class(acer).learn_needs(acer.policy)
    assert (first.env_steps, replay.env_steps) == (1, 300) and 'replayed' in replay.lacks
    ppo = compile_config('cartpole_ppo.py', ['policy.learn.batch_size=64'])
    assert [(n.env_steps, n.scope) for n in policy_class(ppo).learn_needs(ppo.policy)] == [(64, 'rollout')]
    a2c = compile_config('cartpole_a2c.py')
    assert policy_class(a2c).learn_needs(a2c.policy) == []  # any rollout gives a gradient step


ZERO_STEP_RUNS = [
    # (name, CLI arguments, what the one line must say)
    ('IMPALA batch needs more than the serial budget stores',
     ['-c', 'cartpole_impala.py', '--max-env-step', '200'],
     'max_env_step=200 gives the learner 128 env steps (1 whole collection of 128; the budget\'s last, cut segment is '
     'not stored) but policy.learn.batch_size=16 unrolls of policy.unroll_len=16 steps need 256 env steps: the run '
     'would make 0 gradient steps; raise max_env_step to at least 249 (envs step together, a step of each a round: '
     '249 gives 256) or lower policy.learn.batch_size'),
    ('IMPALA batch needs more than the parallel budget delivers',
     ['-m', 'parallel', '--backend', 'inline', '-c', 'cartpole_impala.py', '--max-env-step', '200'],
     'max_env_step=200 lets the parallel learner train on at most 192 env steps'),
    ('a budget smaller than one ACER collection',
     ['-c', 'cartpole_acer.py', '--max-env-step', '10'], 'gives the learner 0 env steps'),
    ('ACER replay_start_size beyond the budget',
     ['-c', 'cartpole_acer.py', '--max-env-step', '150'],
     'policy.other.replay_buffer.replay_start_size=200 needs 200 env steps: the run would make 0 replayed updates'),
    ('ACER replay_start_size beyond the buffer',
     ['-c', 'cartpole_acer.py', 'policy.other.replay_buffer.replay_start_size=60000'],
     'replay_start_size = 60000 transitions > replay_buffer_size = 50000'),
    ('PPO minibatch larger than the rollout',
     ['-c', 'cartpole_ppo.py', 'policy.learn.batch_size=512'],
     'one rollout holds 256 transitions (policy.collect.n_sample=256) but policy.learn.batch_size=512 (transitions '
     'per minibatch) needs a rollout of at least 512: the run would make no minibatches of that size'),
    ('PPO minibatch larger than the parallel rollout of every actor',
     ['-m', 'parallel', '--backend', 'inline', '-c', 'cartpole_ppo.py', 'parallel.actor_num=2', 'policy.learn.batch_size=600'],
     'one rollout holds 512 transitions (policy.collect.n_sample=256 over 2 actors)'),
    ('batch larger than the buffer, parallel',
     ['-m', 'parallel', '--backend', 'inline', '-c', 'cartpole_impala.py', 'policy.learn.batch_size=100',
      'policy.other.replay_buffer.replay_buffer_size=50'],
     'policy.learn.batch_size = 100 samples > policy.other.replay_buffer.replay_buffer_size = 50'),
]


@pytest.mark.parametrize('name,args,message', ZERO_STEP_RUNS, ids=[case[0] for case in ZERO_STEP_RUNS])
def test_a_run_that_could_never_learn_is_refused_with_the_arithmetic_before_anything_is_written(
        name, args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = cli(args + ['--exp-dir', tmp_path / 'run', '-q'], capsys)
    assert code == 2 and err.startswith('acframe: error: ') and err.count('\n') == 1, err
    assert message in err, err
    assert 'raise max_env_step to at least' in err or 'replay_buffer_size' in err or 'n_sample' in err
    assert os.listdir(tmp_path) == []


def test_the_budget_the_refusal_names_is_enough_to_train(tmp_path, capsys):
    """IMPALA, serial: 2 envs x 16-step unrolls, batch 4 unrolls = 64 steps; the refusal names the budget that trains."""
    overrides = SMALL + ['env.collector_env_num=2', 'policy.collect.n_sample=2', 'policy.learn.batch_size=4']
    cfg = compile_config('cartpole_impala.py', overrides + ['max_env_step=62'])
    with pytest.raises(ConfigError, match='raise max_env_step to at least 63 '):
        check_learning_budget(cfg, 'serial')
    policy = serial_pipeline('cartpole_impala.py', seed=0, overrides=overrides, max_env_step=63,
                             exp_dir=str(tmp_path / 'enough'), progress=False)
    assert policy.summary['train_iters'] > 0 and policy.summary['env_steps'] == 64


def test_data_parallel_ranks_are_refused_with_the_runs_budget_not_one_ranks(tmp_path, capsys, monkeypatch):
    """-m parallel with 2 learner ranks checks one rank's share (half the budget and batch): the refusal quoted those
    halves as if they were the user's and asked for one rank's budget (129: 256 was refused, 257 is needed)."""
    monkeypatch.chdir(tmp_path)
    code, err = cli(['-m', 'parallel', '-c', 'cartpole_novel_impala_lstm.py', 'parallel.learner_num=2',
                     '--max-env-step', '256', '--exp-dir', tmp_path / 'run', '-q'], capsys)
    assert code == 2 and err.count('\n') == 1, err
    assert err.startswith('acframe: error: with parallel.learner_num=2, each rank has 1/2 of the run\'s actors, batch '
                          'and budget: max_env_step=128 '), err
    assert 'raise max_env_step to at least 257 or' in err and os.listdir(tmp_path) == []
    cfg = compile_config('cartpole_novel_impala_lstm.py', ['parallel.learner_num=2', 'parallel.actor_num=2',
                                                          'max_env_step=257'])
    from acframe.entry.parallel.learners import rank_config
    check_learning_budget(rank_config(cfg, 2, 0), 'parallel', actors=1, ranks=2)  # the budget it names passes


def test_a_resumed_run_is_not_refused_for_the_budget_it_has_spent(tmp_path):
    overrides = SMALL + ['env.collector_env_num=2', 'policy.collect.n_sample=2', 'policy.learn.batch_size=4']
    exp_dir = str(tmp_path / 'run')
    serial_pipeline('cartpole_impala.py', seed=0, overrides=overrides, max_env_step=64, exp_dir=exp_dir, progress=False)
    resumed = serial_pipeline(None, resume=exp_dir, max_env_step=96, progress=False)
    assert resumed.summary['env_steps'] == 96


# ---- memory ------------------------------------------------------------------------------------------
def test_a_buffer_larger_than_the_memory_available_is_refused_without_allocating_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = cli(['-c', 'cartpole_impala.py', '-q', 'policy.other.replay_buffer.replay_buffer_size=1000000000'], capsys)
    assert code == 2 and err.count('\n') == 1, err
    assert err.startswith('acframe: error: policy.other.replay_buffer.replay_buffer_size=1000000000 would take about ')
    assert 'GiB' in err and 'of memory is available, of which a buffer may take 50%' in err and 'lower replay_buffer_size to at most' in err
    assert os.listdir(tmp_path) == []


def test_the_memory_check_names_the_estimate_and_what_is_available():
    cfg = compile_config('cartpole_acer.py', ['policy.other.replay_buffer.replay_buffer_size=100000'])
    obs, actions = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    per = EpisodicReplayBuffer.storage_bytes(1, 16, 8 + 8 + 14, 20)  # obs/next/final obs, action+logits, the rest
    # a buffer may take half of the memory available: the rest of the run needs the other half
    check_buffer_memory(cfg, obs, actions, available=lambda: 2 * 100000 * per)  # fits exactly
    with pytest.raises(ConfigError, match=rf"replay_buffer_size=100000 would take about .* \({per} bytes per entry: "
                                          rf"16-byte observations\) but .* is available, of which a buffer may take "
                                          rf"50% .*; lower replay_buffer_size to at most 99999 "):
        check_buffer_memory(cfg, obs, actions, available=lambda: 2 * 100000 * per - 1)
    check_buffer_memory(cfg, obs, actions, available=lambda: None)  # unknown: not checked


@pytest.mark.parametrize('dedup', [False, True])
@pytest.mark.parametrize('space,dtype', [((4,), 'float32'), ((2, 12, 12), 'uint8')])
def test_the_estimate_is_what_the_fifo_buffer_allocates(space, dtype, dedup):
    """IMPALA's unrolls as a parallel actor sends them (with the behaviour version): the estimate is the allocation
    (with dedup_frames, stacked uint8 frames take the frame store's first chunk and the index arrays)."""
    obs_space = gym.spaces.Box(0, 255, space, dtype=getattr(__import__('numpy'), dtype))
    actions = gym.spaces.Discrete(3)
    steps, envs, unroll = 8, 2, 4
    torch_dtype = torch.uint8 if dtype == 'uint8' else torch.float32
    segment = {
        'obs': torch.zeros((steps + 1, envs) + space, dtype=torch_dtype),
        'final_obs': torch.zeros((steps, envs) + space, dtype=torch_dtype),
        'action': torch.zeros(steps, envs, dtype=torch.int64), 'logit': torch.zeros(steps, envs, 3),
        'reward': torch.zeros(steps, envs), 'terminated': torch.zeros(steps, envs, dtype=torch.bool),
        'truncated': torch.zeros(steps, envs, dtype=torch.bool),
        'behaviour_version': torch.zeros(steps, envs, dtype=torch.int64),
    }
    from acframe.data import make_tree, leaves
    buffer = ReplayBuffer(replay_buffer_size=10, dedup_frames=dedup)
    buffer.push(split_segment(make_tree(segment), unroll))
    allocated = sum(leaf.nbytes for _, leaf in leaves(buffer._storage))
    allocated += sum(store.nbytes() for store in buffer._frames.values())
    allocated += sum(rows.nbytes for rows in buffer._frame_index.values())
    assert bool(buffer._frames) == (dedup and dtype == 'uint8')
    obs_bytes, step_bytes = budget_module.observation_bytes(obs_space), budget_module.action_step_bytes(actions) + 14
    frames = budget_module._dedup_frames(ReplayBuffer.storage_bytes, {'dedup_frames': dedup}, obs_space)
    assert ReplayBuffer.storage_bytes(10, obs_bytes, step_bytes, unroll, **frames) == allocated


# ---- exact budgets -----------------------------------------------------------------------------------
def impala(unroll_len=16, **parallel):
    main = dict(
        exp_name='budget', seed=0,
        env=dict(env_id='CartPole-v0', collector_env_num=8, evaluator_env_num=1, n_evaluator_episode=1, stop_value=None),
        parallel={'actor_num': 2, **parallel},
        policy=dict(unroll_len=unroll_len, learn=dict(batch_size=4), collect=dict(n_sample=8),
                    eval=dict(evaluator=dict(eval_freq=1000))),
    )
    return main, dict(env=dict(type='gym'), policy=dict(type='impala'))


@pytest.mark.parametrize('backend', ['local', 'inline'])
def test_synchronous_impala_rounds_stop_within_one_step_per_env_whatever_the_unroll_length(tmp_path, backend):
    """2 actors x 8 envs, 16-step unrolls: the last round is cut to 15 steps per env (not to a whole unroll).
    (Asynchronous actors: test_parallel.py's budget test.)"""
    exp_dir = tmp_path / 'run'
    parallel_pipeline(impala(sync_mode='sync'), exp_dir=str(exp_dir), backend=backend, max_env_step=1003, progress=False)
    summary = read_summary(exp_dir)
    assert summary['env_steps'] == 3 * 256 + 15 * 16  # 3 rounds of 2 x 8 x 16 steps, then 235 steps left: 15 per env
    assert summary['train_iters'] > 0 and summary['discarded_segments'] == 0


def test_a_cut_impala_segment_gives_the_buffer_its_whole_unrolls_only():
    """The budget's last segment, 11 steps per env of 4-step unrolls: 2 unrolls per env are stored, 3 steps dropped."""
    from acframe.entry.parallel.roles import ActorWorker, HandedWeights
    main, create = impala(unroll_len=4)
    cfg = compile_config((main, create))
    cfg.parallel.actor_num = 1
    actor = ActorWorker(cfg, 0, 0, HandedWeights())
    try:
        message = actor.collect(11)
    finally:
        actor.close()
    assert message.env_steps == 11 * 8  # every step collected is counted
    assert message.samples['reward'].shape == (2 * 8, 4) and message.samples['obs'].shape[:2] == (2 * 8, 5)


def test_acer_trains_on_the_cut_last_segment_in_parallel(tmp_path):
    """ACER's episodic buffer takes a segment of any length: the last round (sync) is cut and trained on."""
    exp_dir = tmp_path / 'acer'
    main = dict(exp_name='acer', env=dict(env_id='CartPole-v0', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                                          stop_value=None),
                parallel=dict(actor_num=2, sync_mode='sync'),
                policy=dict(collect=dict(n_sample=4), learn=dict(update_per_collect=2),
                            other=dict(replay_buffer=dict(unroll_len=20, replay_start_size=0))))
    parallel_pipeline((main, dict(env=dict(type='gym'), policy=dict(type='acer'))), exp_dir=str(exp_dir),
                      backend='inline', max_env_step=170, progress=False)
    summary = read_summary(exp_dir)
    # rounds of 2 actors x 4 envs x 20 steps = 160, then one of 2 x 4 x 2 steps (cut, not 20)
    assert summary['env_steps'] == 176 and summary['train_iters'] == 4
    assert summary['samples_trained'] == 176  # one on-policy update per segment (fresh ones first), the cut ones too


@pytest.mark.parametrize('backend,config,sync_mode,iters', [
    ('local', 'cartpole_impala.py', 'async', 37),
    ('inline', 'cartpole_impala.py', 'sync', 37),
    ('inline', 'cartpole_ppo.py', 'auto', 23),  # 10 epochs x 2 minibatches a rollout: the budget ends mid-rollout
])
def test_max_train_iter_stops_the_parallel_learner_at_exactly_that_many_gradient_steps(tmp_path, backend, config,
                                                                                        sync_mode, iters):
    exp_dir = tmp_path / 'run'
    overrides = SMALL + ['parallel.actor_num=2', f'parallel.sync_mode={sync_mode}', 'policy.eval.evaluator.eval_freq=1000']
    if 'ppo' in config:
        overrides += ['env.collector_env_num=4', 'policy.collect.n_sample=64', 'policy.learn.batch_size=64',
                      'policy.learn.epoch_per_collect=10']
    parallel_pipeline(config, overrides=overrides, exp_dir=str(exp_dir), backend=backend, max_train_iter=iters,
                      progress=False)
    summary = read_summary(exp_dir)
    assert summary['train_iters'] == iters
    assert torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['train_iter'] == iters
