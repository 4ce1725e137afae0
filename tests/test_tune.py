"""Specification of ``acframe -m tune`` (extra ``tune``): the search space, pruning, the study folder, resume.

The studies train CartPole A2C on seed 1 (whose untrained greedy policy scores 9) with a small budget and a
4-episode evaluation every 10 updates, so every trial takes a second or two.
"""
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

optuna = pytest.importorskip('optuna', reason='acframe -m tune needs the tune extra (pip install acframe[tune])')

from acframe.cli import main  # noqa: E402
from acframe.config import compile_config  # noqa: E402
from acframe.config.compile import to_plain  # noqa: E402
from acframe.errors import ConfigError  # noqa: E402
from acframe.tune import tune  # noqa: E402
from acframe.tune.space import (DEFAULT_SPACES, build_space, check_space, default_space, fixed_params,  # noqa: E402
                                normalize_spec, read_space_file)
from acframe.tune.trial import PruningReporter  # noqa: E402

QUICK = ['env.n_evaluator_episode=4', 'env.evaluator_env_num=4', 'policy.eval.evaluator.eval_freq=10']
LR = 'policy.learn.learning_rate'
LR_ONLY = {LR: ['log_uniform', 1e-4, 1e-2]}


def read_csv(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope='module')
def study(tmp_path_factory):
    """A 3-trial study from the CLI: seeds 1 and 2, 800 env steps a run, the default A2C space."""
    study_dir = tmp_path_factory.mktemp('tune') / 'study'
    code = main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '3', '--budget', '800', '--seeds', '1,2',
                 '--study-dir', str(study_dir), '-q', *QUICK])
    assert code == 0
    return study_dir


def test_a_study_writes_its_storage_settings_runs_and_trials_table(study):
    for name in ('study.db', 'tune.json', 'trials.csv', 'best_config.py', 'best_config.json'):
        assert (study / name).is_file(), name
    rows = read_csv(study / 'trials.csv')
    assert [row['trial'] for row in rows] == ['0', '1', '2']
    assert all(row['state'] == 'COMPLETE' for row in rows)
    for row in rows:  # the objective is the mean over the seeds of each run's best evaluation return
        bests = []
        for seed in (1, 2):
            with open(study / 'trials' / f"trial_{int(row['trial']):04d}_seed{seed}" / 'summary.json') as f:
                summary = json.load(f)
            assert summary['env_steps'] == 800 and summary['seed'] == seed
            assert float(row[f'value_seed{seed}']) == summary['best_eval_return']
            bests.append(summary['best_eval_return'])
        assert float(row['value']) == pytest.approx(sum(bests) / 2)
    # trial 0 is the config as shipped: the baseline the others must beat
    shipped = compile_config('cartpole_a2c.py')
    assert float(rows[0][LR]) == shipped.policy.learn.learning_rate
    assert int(rows[0]['policy.collect.n_sample']) == shipped.policy.collect.n_sample
    storage = optuna.load_study(study_name='acframe', storage=f"sqlite:///{study / 'study.db'}")
    assert len(storage.trials) == 3 and set(storage.best_trial.params) == set(default_space(to_plain(shipped)))


def test_the_best_config_is_the_base_config_with_the_best_values_and_runs_from_the_cli(study, tmp_path, capsys):
    best = json.loads((study / 'best_config.json').read_text())
    rows = read_csv(study / 'trials.csv')
    assert best['value'] == max(float(row['value']) for row in rows)
    cfg = compile_config(str(study / 'best_config.py'))
    for key, value in best['values'].items():
        node = cfg
        for part in key.split('.'):
            node = node[part]
        assert node == value, key
    shipped = compile_config('cartpole_a2c.py')
    assert cfg.max_env_step == shipped.max_env_step  # the config's own budget, not the tuning budget
    assert cfg.exp_name == 'cartpole_a2c_tuned' and cfg.env.env_id == 'CartPole-v1'
    code = main(['-c', str(study / 'best_config.py'), '--max-env-step', '200', '--exp-dir', str(tmp_path / 'run'),
                 '-q', *QUICK])
    assert code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['env_steps'] == 200


def test_without_q_the_cli_prints_a_line_per_evaluation_of_the_running_trial(study, tmp_path, capsys):
    copy = tmp_path / 'study'
    shutil.copytree(study, copy)
    assert main(['-m', 'tune', '--resume', str(copy), '--trials', '4']) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    evaluations = [line for line in lines if line.startswith('[tune] trial 3 seed ')]
    assert evaluations and all(', eval return ' in line for line in evaluations), lines
    assert {line.split()[4].rstrip(':') for line in evaluations} == {'1', '2'}  # both seeds' runs
    assert lines[-1].startswith('[tune] best trial ') and not any(line.startswith('[acframe]') for line in lines)


def test_resume_continues_the_trial_count_with_the_study_settings(study, tmp_path, capsys):
    copy = tmp_path / 'study'
    shutil.copytree(study, copy)
    assert main(['-m', 'tune', '--resume', str(copy), '--trials', '4', '-q']) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith('[tune] best trial ')
    rows = read_csv(copy / 'trials.csv')
    assert [row['trial'] for row in rows] == ['0', '1', '2', '3']
    assert rows[:3] == read_csv(study / 'trials.csv')  # the first three were not run again
    assert (copy / 'trials' / 'trial_0003_seed2' / 'summary.json').is_file()
    # the resumed trial drew new values (the sampler does not restart its draws)
    assert rows[3][LR] not in {row[LR] for row in rows[:3]}
    # a resumed study keeps its settings: another budget is refused in one line
    assert main(['-m', 'tune', '--resume', str(copy), '--trials', '5', '--budget', '900']) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'budget' in err and '800' in err


def test_the_median_pruner_stops_a_deliberately_bad_trial(tmp_path):
    study_dir = tmp_path / 'study'
    lines, evaluations = [], []
    record = tune('cartpole_a2c.py', trials=2, budget=2000, seeds=[1], study_dir=str(study_dir), overrides=QUICK,
                  space={LR: ['log_uniform', 1e-7, 1e-2]}, use_default_space=False, startup_trials=1,
                  warmup_reports=0, first_values=[{LR: 1e-7}], echo=lines.append, progress=evaluations.append)
    assert record['trials'] == {'complete': 1, 'pruned': 1, 'failed': 0}
    assert record['best']['trial'] == 0 and record['best']['values'] == {LR: 0.003}
    good, bad = read_csv(study_dir / 'trials.csv')
    assert good['state'] == 'COMPLETE' and bad['state'] == 'PRUNED' and float(bad[LR]) == 1e-7
    # pruned early: the learning rate of 1e-7 never moves the greedy policy off its initial return
    assert 0 < int(bad['pruned_at_env_step']) < 2000
    with pytest.raises(FileNotFoundError):  # its run stopped at the pruning, without a summary
        open(study_dir / 'trials' / 'trial_0001_seed1' / 'summary.json')
    assert 'pruned at seed 1' in lines[1]
    assert evaluations[0].startswith('[tune] trial 0 seed 1: env step 0, eval return ')
    assert evaluations[-1].startswith(f"[tune] trial 1 seed 1: env step {bad['pruned_at_env_step']}, eval return ")


def test_a_bad_space_key_is_one_line_exit_2_before_anything_is_written(tmp_path, capsys):
    space = tmp_path / 'space.py'
    space.write_text("space = {'policy.learn.learning_rat': ['log_uniform', 1e-4, 1e-2]}\n")
    code = main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '2', '--space', str(space),
                 '--study-dir', str(tmp_path / 'study')])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "learning_rat" in err and "policy.learn.learning_rate" in err and str(space) in err
    assert not (tmp_path / 'study').exists()


def test_python_m_acframe_tune_is_the_tune_mode(tmp_path):
    space = tmp_path / 'space.json'
    space.write_text(json.dumps({'space': {'policy.collect.n_sample': ['categorical', [40, 44]]}}))
    out = subprocess.run([sys.executable, '-m', 'acframe.tune', '-c', 'cartpole_a2c.py', '--trials', '2',
                          '--space', str(space), '--study-dir', str(tmp_path / 'study')],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "policy.collect.n_sample" in out.stderr and '44' in out.stderr and 'multiple of env.collector_env_num' in out.stderr


def test_ctrl_c_records_the_running_trial_and_resume_runs_its_values_first(tmp_path, monkeypatch, capsys):
    study_dir = tmp_path / 'study'
    original = PruningReporter.after_eval

    def interrupt_in_trial_1(self, learner, result):
        if self.trial.number == 1 and result['env_step'] > 0:
            raise KeyboardInterrupt
        original(self, learner, result)

    monkeypatch.setattr(PruningReporter, 'after_eval', interrupt_in_trial_1)
    with pytest.raises(KeyboardInterrupt):
        tune('cartpole_a2c.py', trials=2, budget=400, seeds=[1], study_dir=str(study_dir), overrides=QUICK,
             space=LR_ONLY, use_default_space=False)
    assert 'continue with acframe -m tune --resume' in capsys.readouterr().out
    rows = read_csv(study_dir / 'trials.csv')
    assert [row['state'] for row in rows] == ['COMPLETE', 'INTERRUPTED', 'WAITING']
    assert rows[2][LR] == rows[1][LR] != ''  # the queued trial shows the values it will run with
    # the interrupted run finished like a Ctrl-C'd training run: final checkpoint and summary
    summary = json.loads((study_dir / 'trials' / 'trial_0001_seed1' / 'summary.json').read_text())
    assert summary['interrupted'] is True
    monkeypatch.setattr(PruningReporter, 'after_eval', original)
    record = tune(resume=str(study_dir), echo=None)
    assert record['trials']['complete'] == 2
    rows = read_csv(study_dir / 'trials.csv')
    assert [row['state'] for row in rows] == ['COMPLETE', 'INTERRUPTED', 'COMPLETE']
    assert rows[2][LR] == rows[1][LR]  # the interrupted trial's values, run again


def test_the_search_space_is_data_checked_key_by_key(tmp_path):
    assert normalize_spec('k', ('log_uniform', 1e-4, 1e-2)) == ['log_uniform', 1e-4, 1e-2]
    assert normalize_spec('k', ['int', 1, 9, 2]) == ['int', 1, 9, 2]
    for bad, words in ((['log_uniform', 0.0, 1.0], 'low > 0'), (['uniform', 2.0, 1.0], 'below high'),
                       (['normal', 0, 1], 'kind one of'), (['categorical', []], 'at least one choice'),
                       (['int', 1.5, 3], 'integer'), (['categorical', [1, 1]], 'repeat')):
        with pytest.raises(ConfigError, match=words):
            normalize_spec('policy.learn.x', bad)
    # a Python space file is parsed, never run
    marker = tmp_path / 'ran'
    evil = tmp_path / 'evil.py'
    evil.write_text(f"import os\nos.mknod({str(marker)!r})\nspace = {{}}\n")
    with pytest.raises(ConfigError, match='only assignments of literals'):
        read_space_file(str(evil))
    assert not marker.exists()
    expression = tmp_path / 'expression.py'
    expression.write_text("space = {'policy.learn.learning_rate': ['log_uniform', -1e-4, 1e-4 * 2]}\n")
    with pytest.raises(ConfigError, match=r"line 1: space holds '0.0001 \* 2', which is not a literal; write numbers"):
        read_space_file(str(expression))
    ok = tmp_path / 'ok.py'
    ok.write_text('"""My space."""\nspace = {"policy.learn.gae_lambda": ["uniform", 0.9, 1.0]}\nuse_default_space = False\n')
    assert read_space_file(str(ok)) == ({'policy.learn.gae_lambda': ['uniform', 0.9, 1.0]}, False)
    # merged over the default space; None drops a default key
    base = to_plain(compile_config('cartpole_a2c.py'))
    merged = build_space(base, {LR: None, 'policy.learn.gae_lambda': ['uniform', 0.9, 1.0]})
    assert LR not in merged and merged['policy.learn.gae_lambda'] == ['uniform', 0.9, 1.0]
    assert set(merged) - {'policy.learn.gae_lambda'} == set(default_space(base)) - {LR, 'policy.learn.gae_lambda'}
    with pytest.raises(ConfigError, match="key 'seed' is set by the tuner"):
        check_space(base, {'seed': ['int', 0, 9]})


@pytest.mark.parametrize('policy', sorted(DEFAULT_SPACES))
def test_every_default_space_fits_the_shipped_cartpole_config(policy):
    base = to_plain(compile_config(f'cartpole_{policy}.py'))
    space = default_space(base)
    assert LR in space and 'policy.collect.n_sample' in space
    check_space(base, space)  # every bound and choice compiles
    # the shipped values that lie in the space are trial 0's
    assert fixed_params(space, {LR: base['policy']['learn']['learning_rate']}) == {LR: base['policy']['learn']['learning_rate']}


@pytest.mark.parametrize('config', ['halfcheetah_ppo.py', 'hopper_ppo.py', 'cartpole_ppo.py', 'pendulum_impala.py',
                                    'acrobot_a2c.py', 'cartpole_ppo.py policy.collect.n_sample=1024 '
                                                      'policy.learn.batch_size=512'])
def test_trial_0_is_the_config_as_given_and_no_ppo_draw_has_a_minibatch_larger_than_its_rollout(config):
    """A 1-env PPO config (HalfCheetah) drew rollouts of 16-256 transitions against minibatches of 32-256: half the
    trials, trial 0 too, were refused. The categorical choices hold the config's own values."""
    import itertools

    from acframe.tune.space import baseline_values

    base = to_plain(compile_config(config.split()[0], config.split()[1:]))
    space = default_space(base)
    check_space(base, space)
    baseline = baseline_values(base, space)
    categorical = {k for k, spec in space.items() if spec[0] == 'categorical'}
    assert set(fixed_params(space, baseline)) >= categorical  # each categorical key is trial 0's own value
    if base['policy']['type'] == 'ppo':
        rollouts, batches = space['policy.collect.n_sample'][1], space['policy.learn.batch_size'][1]
        assert base['policy']['collect']['n_sample'] in rollouts and base['policy']['learn']['batch_size'] in batches
        assert all(batch <= rollout for rollout, batch in itertools.product(rollouts, batches))


class FakeTrial:
    def __init__(self, prune_at=None):
        self.number, self.reports, self.prune_at = 0, [], prune_at

    def report(self, value, step):
        self.reports.append((step, value))

    def should_prune(self):
        return self.prune_at is not None and self.reports[-1][0] >= self.prune_at


def test_the_reporter_reports_every_trial_at_the_same_steps():
    trial = FakeTrial()
    first = PruningReporter(trial, 0, seed=0, finished_bests=[], budget=1000, reports=4)
    first.after_eval(None, {'env_step': 0, 'return_mean': 10.0})
    assert trial.reports == []  # no stretch of the budget is over yet
    first.after_eval(None, {'env_step': 520, 'return_mean': 30.0})  # past stretches 1 and 2
    first.after_eval(None, {'env_step': 700, 'return_mean': 20.0})  # the best so far counts
    first.finish(30.0, last=False)  # a solved run's remaining stretches report its best
    assert trial.reports == [(1, 30.0), (2, 30.0), (3, 30.0), (4, 30.0)]
    second = PruningReporter(trial, 1, seed=1, finished_bests=[30.0], budget=1000, reports=4)
    second.after_eval(None, {'env_step': 250, 'return_mean': 50.0})  # mean of run 0's best and run 1's so far
    assert trial.reports[-1] == (5, 40.0)
    pruned = PruningReporter(FakeTrial(prune_at=2), 0, seed=3, finished_bests=[], budget=1000, reports=4)
    pruned.after_eval(None, {'env_step': 300, 'return_mean': 1.0})
    with pytest.raises(Exception, match='pruned at seed 3, env step 600'):
        pruned.after_eval(None, {'env_step': 600, 'return_mean': 2.0})
    assert not math.isnan(pruned.value())


def test_tune_flags_belong_to_tune_and_training_flags_not(capsys):
    assert main(['-c', 'cartpole_a2c.py', '--trials', '3']) == 2
    assert '--trials belongs to -m tune' in capsys.readouterr().err
    assert main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '3', '-s', '1']) == 2
    assert '--seeds' in capsys.readouterr().err
    assert main(['-m', 'tune', '-c', 'cartpole_a2c.py']) == 2
    assert '--trials N is missing' in capsys.readouterr().err
    assert main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '1', '--backend', 'ray']) == 2
    assert capsys.readouterr().err.strip() == ("acframe: error: --backend does not apply to -m tune; leave it out (trials "
                                               "run the serial pipeline)")  # (it named --x too, which was not given)


@pytest.mark.parametrize('arguments, message', [
    (dict(seeds=0), "seeds=0 must be a list of whole numbers, e.g. seeds=0,1"),  # (TypeError: not iterable)
    (dict(seeds=[0, 'x']), "seeds=[0, 'x'] must be a list of whole numbers"),
    (dict(budget='abc'), "budget='abc' must be a whole number"),  # (ValueError: invalid literal for int())
    (dict(budget=600.7), "budget=600.7 must be a whole number"),  # (cut to 600 without a word)
    (dict(startup_trials=-1), "startup_trials=-1 must be >= 0"),  # (it named 'the warm-up reports' too)
])
def test_a_python_callers_bad_argument_is_one_error_naming_it(tmp_path, arguments, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        tune('cartpole_a2c.py', trials=1, study_dir=str(tmp_path / 'st'), **{'budget': 300, **arguments})
    assert not (tmp_path / 'st').exists()
    if arguments == dict(seeds=0):  # the CLI's form of an empty seed: refused, not skipped
        with pytest.raises(SystemExit) as refused:  # (argparse's usage error)
            main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '1', '--seeds', '0,,1'])
        assert refused.value.code == 2


def test_an_override_of_a_parallel_key_the_trials_do_not_read_is_warned_about(tmp_path):
    """The serial trials ignore parallel.actor_num, as a serial run does, which says so; -m tune said nothing."""
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '1',
                          '--budget', '300', '--study-dir', str(tmp_path / 'st'), '-q', 'parallel.actor_num=4'],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert ("acframe: warning: parallel.actor_num is read by -m parallel only; this -m tune (serial trials) run "
            "ignores it") in out.stderr


def test_an_existing_study_is_not_overwritten(study, capsys):
    before = (study / 'trials.csv').read_text()
    assert main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '1', '--study-dir', str(study)]) == 2
    assert f'--resume {study}' in capsys.readouterr().err
    assert (study / 'trials.csv').read_text() == before
    run = study / 'trials' / sorted(os.listdir(study / 'trials'))[0]  # a training run's folder is no study's
    assert main(['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '1', '--study-dir', str(run)]) == 2
    assert f"--study-dir {run} is a training run's folder" in capsys.readouterr().err
    assert not (run / 'study.db').exists()
    from acframe.tune import tune  # from Python, the same refusal names tune()'s arguments, not the CLI's flags
    with pytest.raises(ConfigError, match=rf"^study_dir={re.escape(str(study))} already holds a study; continue it "
                                          rf"with resume={re.escape(str(study))} "):
        tune('cartpole_a2c.py', trials=1, study_dir=str(study))
    with pytest.raises(ConfigError, match=r"^config key 'policy.learn.learning_rate' = -1.0 must be > 0$"):
        tune('cartpole_a2c.py', trials=1, study_dir=str(study.parent / 'other'),  # other text stays as it is
             overrides=['policy.learn.learning_rate=-1'])
    assert os.path.isfile(study / 'study.db')


def test_a_python_callers_errors_name_the_arguments_with_a_value_only_where_one_follows():
    from acframe.tune import argument_names

    assert argument_names('--study-dir a and --resume b name different folders; --resume names the study') == \
        'study_dir=a and resume=b name different folders; resume names the study'
    assert argument_names('--seeds is empty; give one or more seeds, e.g. --seeds 0,1') == \
        'seeds is empty; give one or more seeds, e.g. seeds=0,1'
    assert argument_names("config key 'policy.learn.batch_size' = -3 must be >= 1") == \
        "config key 'policy.learn.batch_size' = -3 must be >= 1"


def test_a_resumed_study_takes_overrides_as_a_dict_too(study):
    from acframe.tune import tune

    with pytest.raises(ConfigError, match=r'the config given changes env.stop_value'):
        tune(resume=str(study), overrides={'env.stop_value': 123.0})


def test_a_resume_refused_for_another_space_or_policy_names_the_difference(study):
    """The space refusal quoted both whole spaces (~900 characters); another policy's config listed six changed keys
    (its own defaults) and not the policy."""
    from acframe.tune import tune

    with pytest.raises(ConfigError, match=r"the study's space is \{'policy.learn.no_such_key': None\}, not "
                                          r"\{'policy.learn.no_such_key': \['uniform', 0.0, 1.0\]\}; a study keeps"):
        tune(resume=str(study), space={'policy.learn.no_such_key': ['uniform', 0.0, 1.0]})
    with pytest.raises(ConfigError, match=r"the config given is of policy 'ppo', the study's of 'a2c'; resume without"):
        tune('cartpole_ppo.py', resume=str(study))


def test_a_trial_is_not_scored_by_its_untrained_weights():
    """The evaluation at env step 0 plays the untrained weights (251.10 on CartPole seed 0 for A2C, the same in
    every trial): a run's best is that of its evaluations after the start, by their score (with a confirmation's
    episodes, as the summary's best_eval_return)."""
    from acframe.tune.trial import PruningReporter

    class Trial:
        number, reported = 0, []

        def report(self, value, step):
            self.reported.append((step, value))

        def should_prune(self):
            return False

    said = []
    reporter = PruningReporter(Trial(), 0, 0, [], budget=3000, reports=3, echo=said.append)
    reporter.after_eval(None, {'env_step': 0, 'return_mean': 251.1, 'score': 251.1})
    reporter.after_eval(None, {'env_step': 1000, 'return_mean': 20.0, 'score': 20.0})
    reporter.after_eval(None, {'env_step': 2000, 'return_mean': 30.0, 'score': 25.0})
    assert reporter.best == 25.0 and reporter.value() == 25.0
    assert said[0].endswith('eval return 251.10 (the untrained weights: not scored)')
    assert Trial.reported == [(1, 20.0), (2, 25.0)]


def test_an_override_of_a_key_the_default_space_searches_keeps_it_fixed_in_every_trial(tmp_path):
    lines = []
    record = tune('cartpole_a2c.py', trials=3, budget=400, seeds=[1], study_dir=str(tmp_path / 'study'),
                  overrides=QUICK + [f'{LR}=0.0123'], echo=lines.append)
    assert record['trials']['complete'] == 3
    assert f"[tune] not searched: {LR}, set by an override to 0.0123 in every trial" in lines
    rows = read_csv(tmp_path / 'study' / 'trials.csv')
    assert len(rows) == 3 and LR not in rows[0]  # (a column per searched key)
    for trial in range(3):
        with open(tmp_path / 'study' / 'trials' / f'trial_{trial:04d}_seed1' / 'config.json') as f:
            assert json.load(f)['config']['policy']['learn']['learning_rate'] == 0.0123


def test_a_key_both_in_the_given_space_and_set_by_an_override_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match=rf"^{LR} is both in the search space and set by an override; drop one"):
        tune('cartpole_a2c.py', trials=2, budget=400, study_dir=str(tmp_path / 'study'), space=LR_ONLY,
             use_default_space=False, overrides=[f'{LR}=0.0123'])
    keys = sorted(default_space(to_plain(compile_config('cartpole_a2c.py'))))
    base = to_plain(compile_config('cartpole_a2c.py'))
    every = [f"{key}={json.dumps(_get(base, key))}" for key in keys]
    with pytest.raises(ConfigError, match=rf"^every key of the search space is set by an override \({keys[0]}, "):
        tune('cartpole_a2c.py', trials=2, budget=400, study_dir=str(tmp_path / 'study'), overrides=every)
    assert not (tmp_path / 'study').exists()


def _get(cfg, key):
    for part in key.split('.'):
        cfg = cfg[part]
    return cfg


@pytest.mark.parametrize('seq_len', [0, 8, 16])
def test_every_rollout_and_minibatch_of_recurrent_ppos_default_space_is_a_config_that_runs(seq_len):
    """Half the draws of PPO's default space were refused on cartpole_novel_ppo_lstm.py (a minibatch is whole
    sequences): with seq_len=0 the two keys are not searched; with seq_len=L every pair left holds whole sequences."""
    import itertools

    overrides = [f'policy.model.rnn.seq_len={seq_len}']
    base = to_plain(compile_config('cartpole_novel_ppo_lstm.py', overrides))
    space = default_space(base)
    check_space(base, space)
    if seq_len == 0:
        assert 'policy.collect.n_sample' not in space and 'policy.learn.batch_size' not in space
        assert LR in space
        return
    pairs = list(itertools.product(space['policy.collect.n_sample'][1], space['policy.learn.batch_size'][1]))
    assert len(pairs) >= 4
    for n_sample, batch in pairs:
        compile_config('cartpole_novel_ppo_lstm.py', overrides + [f'policy.collect.n_sample={n_sample}',
                                                                  f'policy.learn.batch_size={batch}'])


def test_a_study_whose_every_trial_failed_is_an_error_not_a_success(tmp_path, capsys):
    """Every trial's env raises at its 30th step (a config that starts: one that cannot is refused before the study)."""
    from fixtures.reliability import faulty_config

    space = tmp_path / 'space.json'
    space.write_text(json.dumps({'space': {'policy.learn.learning_rate': ['categorical', [0.001, 0.002]]},
                                 'use_default_space': False}))
    config = tmp_path / faulty_config(str(tmp_path), 'raise', at_step=30, policy='a2c')
    code = main(['-m', 'tune', '-c', str(config), '--trials', '2', '--budget', '400', '--space',
                 str(space), '--study-dir', str(tmp_path / 'study'), '-q'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("acframe: error: every trial of the study failed (2; the '[tune] trial N "
                                            "failed' lines and "), err
    rows = read_csv(tmp_path / 'study' / 'trials.csv')
    assert [row['state'] for row in rows] == ['FAIL', 'FAIL']  # (the failed runs' folders kept, to read why)
    assert [row['run_dirs'] for row in rows] == ['trials/trial_0000_seed0', 'trials/trial_0001_seed0']


@pytest.mark.parametrize('config, overrides, message', [
    ('cartpole_a2c.py', ['policy.cuda=True'], 'policy.cuda is True but CUDA is not available'),
    ('cartpole_a2c.py', ['env.env_id=NoSuchEnv-v0'], "env.env_id 'NoSuchEnv-v0' is neither a gymnasium id"),
])
def test_a_config_no_trial_could_start_is_one_line_before_the_study_folder(tmp_path, capsys, config, overrides,
                                                                           message):
    """Every trial failed the same way at its start, and the study folder was left behind, its hint blaming the
    search space."""
    if 'policy.cuda=True' in overrides and torch.cuda.is_available():
        pytest.skip('CUDA is available here')
    code = main(['-m', 'tune', '-c', config, '--trials', '3', '--budget', '300', '--study-dir', str(tmp_path / 'st'),
                 '-q', *overrides])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / 'st').exists()


def test_a_choice_the_policy_refuses_at_a_runs_start_is_refused_before_the_study(tmp_path):
    """A recurrent PPO's rollout of 1024 (256 steps per env) holds sequences the config's batch_size cannot: the
    policy's own start check runs on each choice up front, as the config's rules do."""
    base = to_plain(compile_config('cue_memory_ppo_gru.py'))
    space = build_space(base, {'policy.collect.n_sample': ['categorical', [256, 1024]]}, use_default_space=False)
    with pytest.raises(ConfigError, match=r"key 'policy.collect.n_sample' \(value 1024\): policy.learn.batch_size=\d+ is "
                                          r"not a multiple of the sequence length"):
        check_space(base, space)


def test_a_choice_a_configured_hook_refuses_is_refused_before_the_study(tmp_path):
    """A hook's own rule for the config (``check_run_config``) runs on each choice up front too: a linear decay hook
    beside ``lr_decay_iters``, which adds another."""
    base = to_plain(compile_config('cartpole_a2c.py', ["policy.learn.learner.hooks=[{'type': 'linear_lr_decay', "
                                                       "'decay_iters': 100}]"]))
    space = build_space(base, {'policy.learn.lr_decay_iters': ['categorical', [0, 1000]]}, use_default_space=False)
    with pytest.raises(ConfigError, match=r"key 'policy.learn.lr_decay_iters' \(value 1000\): config key "
                                          r"'policy.learn.learner.hooks\[0\]' \(LinearLRDecayHook\): "
                                          r"policy.learn.lr_decay_iters=1000 adds a linear learning rate decay"):
        check_space(base, space)


def test_the_configs_hooks_are_built_once_for_the_checks_of_every_choice():
    """Each probed value of each key is checked with the config's hooks: they were built again for every one (a hook
    whose constructor opens a connection or a file opened it a dozen times before the study began)."""
    from acframe import HOOK_REGISTRY
    from acframe.worker import LearnerHook

    built = []

    @HOOK_REGISTRY.register('counted_tune_hook')
    class Counted(LearnerHook):
        def __init__(self):
            built.append(self)
    try:
        base = to_plain(compile_config('cartpole_a2c.py', ["policy.learn.learner.hooks=[{'type': 'counted_tune_hook'}]"]))
        space = build_space(base, {'policy.learn.learning_rate': ['log_uniform', 1e-4, 1e-2],
                                   'policy.collect.n_sample': ['categorical', [40, 80, 160]]}, use_default_space=False)
        check_space(base, space)
    finally:
        HOOK_REGISTRY._entries.pop('counted_tune_hook', None)
    assert len(built) == 1


@pytest.mark.parametrize('given, use_default, why', [
    ({}, False, 'use_default_space is False and it names no key'),
    ({key: None for key in DEFAULT_SPACES['a2c']} | {'policy.collect.n_sample': None}, True,
     'it sets every key of the default space to None')])
def test_a_space_left_with_no_key_says_why(given, use_default, why):
    base = to_plain(compile_config('cartpole_a2c.py'))
    with pytest.raises(ConfigError, match=rf"^the search space: no key to search \({why}\); pass --space FILE"):
        build_space(base, given, use_default)


def test_none_for_a_key_the_default_space_lacks_is_refused_naming_the_nearest():
    """None drops a key of the default space; a misspelled one dropped nothing, and the key meant was searched."""
    base = to_plain(compile_config('cartpole_a2c.py'))
    with pytest.raises(ConfigError, match=r"^the search space: key 'policy.learn.entropy_weigth' = None drops a key of "
                                          r"the default space, and it is not one; did you mean "
                                          r"'policy.learn.entropy_weight'\?"):
        build_space(base, {'policy.learn.entropy_weigth': None})
    assert 'policy.learn.entropy_weight' not in build_space(base, {'policy.learn.entropy_weight': None})


def test_resuming_a_study_with_no_more_trials_than_it_has_says_so(study, tmp_path, capsys):
    copy = tmp_path / 'study'
    shutil.copytree(study, copy)
    assert main(['-m', 'tune', '--resume', str(copy), '--trials', '2']) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == ("[tune] the study has 3 finished trials already (--trials 2): nothing to run; give --trials "
                        "above 3 for more") and lines[-1].startswith('[tune] best trial ')
    assert len(read_csv(copy / 'trials.csv')) == 3


def test_a_ctrl_c_while_a_finished_trial_is_recorded_waits_for_the_record(tmp_path, monkeypatch, capsys):
    """A real SIGINT between a trial's last run and its record (study.tell, trials.csv, best_config.py) left the trial
    RUNNING and the files unwritten: it now waits until they are, then stops the study with the resume hint."""
    import signal

    from acframe.signals import sigterm_as_interrupt
    from acframe.tune.study import Study

    original = Study.write_outputs
    sent = []

    def signalled_during_the_record(self):
        if not sent and self.finished() == 1:  # (trial 0 told, its outputs next)
            sent.append(os.kill(os.getpid(), signal.SIGINT))
        original(self)

    monkeypatch.setattr(Study, 'write_outputs', signalled_during_the_record)
    study_dir = tmp_path / 'study'
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        tune('cartpole_a2c.py', trials=2, budget=400, seeds=[1], study_dir=str(study_dir), overrides=QUICK,
             space=LR_ONLY, use_default_space=False)
    assert sent and "[tune] interrupted: trial 0 had finished and is recorded; continue with acframe -m tune " \
                     "--resume " in capsys.readouterr().out
    assert [row['state'] for row in read_csv(study_dir / 'trials.csv')] == ['COMPLETE']
    assert (study_dir / 'best_config.py').is_file()


def test_a_policy_of_ones_own_declares_its_default_space_or_searches_its_built_in_bases(tmp_path):
    """The default spaces were a dict of the four built-in names: a user's policy had none (not even a subclass of
    PPO registered under another name) and no class attribute could give it one."""
    from acframe import POLICY_REGISTRY
    from acframe.policy.ppo import PPOPolicy

    class OwnSpace(PPOPolicy):
        tune_space = {'policy.learn.clip_ratio': ['categorical', [0.1, 0.3]],
                      'policy.learn.learning_rate': ('log_uniform', 1e-4, 1e-3)}

    class Inherits(PPOPolicy):
        pass

    class BadSpace(PPOPolicy):
        tune_space = {'policy.learn.clip_ratio': ['normal', 0, 1]}

    class UnknownKey(PPOPolicy):
        tune_space = {'policy.learn.learnin_rate': ['log_uniform', 1e-4, 1e-3]}

    names = {'own_space_tune_test': OwnSpace, 'inherits_tune_test': Inherits, 'bad_space_tune_test': BadSpace,
             'unknown_key_tune_test': UnknownKey}
    for name, cls in names.items():
        POLICY_REGISTRY.register(name, cls)
    try:
        def config(name):
            return compile_config('cartpole_ppo.py', [f'policy.type={name}'])

        assert default_space(config('own_space_tune_test')) == {  # (with the config's own 0.2, as every space)
            'policy.learn.clip_ratio': ['categorical', [0.1, 0.2, 0.3]],
            'policy.learn.learning_rate': ['log_uniform', 1e-4, 1e-3]}
        assert default_space(config('inherits_tune_test')) == default_space(compile_config('cartpole_ppo.py'))
        with pytest.raises(ConfigError, match=r"^BadSpace.tune_space: key 'policy.learn.clip_ratio' = \['normal', 0, 1\]"):
            default_space(config('bad_space_tune_test'))
        # a key the config does not have: named as the class's too (no --space was given to look in)
        with pytest.raises(ConfigError, match=r"^UnknownKey.tune_space: key 'policy.learn.learnin_rate': .*did you mean "
                                              r"'policy.learn.learning_rate'"):
            tune('cartpole_ppo.py', trials=1, budget=600, overrides=['policy.type=unknown_key_tune_test'],
                 study_dir=str(tmp_path / 'study'))
        assert not (tmp_path / 'study').exists()
    finally:
        for name in names:
            POLICY_REGISTRY._entries.pop(name, None)
