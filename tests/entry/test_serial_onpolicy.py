"""Specification of ``acframe.entry.serial_onpolicy``: the on-policy loop, its refusals, the CLI and resume."""
import json
import os

import pytest

from acframe.cli import main as cli_main
from acframe.entry.serial import serial_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.errors import ConfigError

SMALL = ['env.collector_env_num=4', 'policy.collect.n_sample=20', 'env.evaluator_env_num=2', 'env.n_evaluator_episode=2',
         'policy.eval.evaluator.eval_freq=0']
STEPS_PER_COLLECTION = 20  # n_sample: transitions across the 4 collector envs, 5 per env


def read_json(path):
    with open(path) as f:
        return json.load(f)


def test_each_collection_is_learned_from_once(tmp_path):
    policy = serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=SMALL, max_train_iter=9,
                                      exp_dir=str(tmp_path / 'run'), progress=False)
    summary = policy.summary
    assert summary['train_iters'] == 9 and summary['env_steps'] == 9 * STEPS_PER_COLLECTION
    assert summary['policy'] == 'a2c'
    for name in ('config.py', 'summary.json', 'ckpt/ckpt_latest.pth'):
        assert os.path.isfile(tmp_path / 'run' / name)


def test_every_evaluation_reaches_the_learner_hooks(tmp_path, tb_scalars):
    from acframe.worker import LearnerHook

    class Recorder(LearnerHook):
        results = []

        def after_eval(self, learner, result):
            self.results.append(result)

    overrides = SMALL[:-1] + ['policy.eval.evaluator.eval_freq=3']
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, max_train_iter=7, exp_dir=str(tmp_path / 'run'),
                             progress=False, learner_hooks=[Recorder()])
    logged = [(step, value) for tag, step, value in tb_scalars(str(tmp_path / 'run' / 'log')) if tag == 'evaluator/return_mean']
    assert [(r['env_step'], r['return_mean']) for r in Recorder.results] == [(s, pytest.approx(v)) for s, v in logged]
    assert [r['train_iter'] for r in Recorder.results] == [0, 3, 6, 7]
    assert Recorder.results[-1]['best_return'] == max(r['return_mean'] for r in Recorder.results)


def test_the_cli_picks_the_on_policy_pipeline_from_the_policy(tmp_path, capsys):
    exp_dir = tmp_path / 'cli'
    assert cli_main(['-c', 'cartpole_a2c.py', '--exp-dir', str(exp_dir), '--max-train-iter', '3', '-q', *SMALL]) == 0
    assert read_json(exp_dir / 'summary.json')['train_iters'] == 3
    explicit = tmp_path / 'explicit'
    assert cli_main(['-c', 'cartpole_a2c.py', '-m', 'serial_onpolicy', '--exp-dir', str(explicit),
                     '--max-train-iter', '2', '-q', *SMALL]) == 0
    assert read_json(explicit / 'summary.json')['train_iters'] == 2


def test_the_off_policy_pipeline_refuses_a2c(tmp_path, capsys):
    with pytest.raises(ConfigError, match="'a2c' is on-policy"):
        serial_pipeline('cartpole_a2c.py', exp_dir=str(tmp_path / 'off'), progress=False)
    assert cli_main(['-c', 'cartpole_a2c.py', '-m', 'serial', '--exp-dir', str(tmp_path / 'cli_off')]) == 2
    assert "is on-policy" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / 'off')


def test_a_replay_buffer_that_reuses_data_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="replay buffer 'fifo' \\(which reuses data\\) cannot be used"):
        serial_pipeline_onpolicy('cartpole_a2c.py', overrides=['policy.other.replay_buffer.type=fifo'],
                                 exp_dir=str(tmp_path / 'buffer'), progress=False)


def test_an_off_policy_policy_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="'impala' is off-policy"):
        serial_pipeline_onpolicy('cartpole_impala.py', exp_dir=str(tmp_path / 'impala'), progress=False)


def test_resume_continues_the_counters_and_the_randomization_draws(tmp_path):
    """A run stopped after 6 collections and resumed to 10 re-draws at collection 8 as an uninterrupted run does."""
    dr = ['env.domain_randomization.enable=True', 'env.domain_randomization.resample_every=4',
          "env.domain_randomization.params={'gravity': {'dist': 'uniform', 'low': 8.0, 'high': 12.0, 'via': 'attribute'}}"]
    exp_dir = str(tmp_path / 'resumed')
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=1, overrides=SMALL + dr, max_train_iter=6, exp_dir=exp_dir,
                             progress=False)
    resumed = serial_pipeline_onpolicy(None, resume=exp_dir, max_train_iter=10, progress=False)
    assert resumed.summary['train_iters'] == 10 and resumed.summary['env_steps'] == 10 * STEPS_PER_COLLECTION
    uninterrupted_dir = str(tmp_path / 'uninterrupted')
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=1, overrides=SMALL + dr, max_train_iter=10,
                             exp_dir=uninterrupted_dir, progress=False)
    resumed_draws = read_json(os.path.join(exp_dir, 'domain_randomization.json'))['collector']
    uninterrupted_draws = read_json(os.path.join(uninterrupted_dir, 'domain_randomization.json'))['collector']
    assert [d['collections'] for d in resumed_draws] == [0, 4, 8]
    assert [d['params'] for d in resumed_draws] == [d['params'] for d in uninterrupted_draws]


@pytest.mark.parametrize('pipeline', [serial_pipeline_onpolicy, serial_pipeline])
def test_a_run_shorter_than_a_log_period_logs_its_first_training_returns(tmp_path, pipeline, tb_scalars):
    """The collector logs the training episodes' mean return as soon as the first episodes end, then once per
    learner.log_freq iterations: a run shorter than a log period (quickstart's) has a point for the plot too."""
    config = 'cartpole_a2c.py' if pipeline is serial_pipeline_onpolicy else 'cartpole_impala.py'
    pipeline(config, seed=0, overrides=SMALL + ['policy.learn.learner.log_freq=1000', 'env.stop_value=None'],
             max_env_step=1200, exp_dir=str(tmp_path / 'run'), progress=False)
    scalars = tb_scalars(str(tmp_path / 'run' / 'log'))
    counts = [value for tag, _, value in scalars if tag == 'collector/episodes']
    means = [value for tag, _, value in scalars if tag == 'collector/episode_return_mean']
    assert len(counts) == len(means) == 1 and counts[0] >= 1 and 5 < means[0] < 100
