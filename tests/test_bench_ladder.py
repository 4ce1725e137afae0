"""Specification of ``bench/ladder.py``'s bookkeeping: results accumulate per (row, framework, algo, seed, budget)
and only with ``--write``, the table counts seeds that reach the target and hold it in the hold-out, and each row gets its curve plot."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def ladder(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location('ladder', os.path.join(ROOT, 'bench', 'ladder.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, 'RESULTS', str(tmp_path / 'results' / 'ladder.json'))
    monkeypatch.setattr(module, 'IMG_DIR', str(tmp_path / 'img'))
    doc = tmp_path / 'benchmarks.md'
    doc.write_text('# Benchmarks\n\nearlier text\n')
    monkeypatch.setattr(module, 'DOC', str(doc))
    return module


def fake_run(seed, best, holdout, framework='acframe', algo='a2c'):
    return dict(row='acrobot', framework=framework, algo=algo, seed=seed, budget=1000, best=best, final=best - 10,
                curve=[(0, -500.0), (500, best), (800, best - 10)], holdout={'mean': holdout, 'std': 1.0, 'episodes': 50},
                wall_s=3.0, solved=True, stop_value=-100, env_steps=800, command=f'python bench/ladder.py --seeds {seed}')


def test_results_accumulate_and_a_rerun_replaces_its_entry(ladder):
    results = ladder.load_results()
    ladder.record(results, fake_run(0, -120.0, -130.0))
    ladder.record(results, fake_run(1, -90.0, -95.0))
    ladder.record(results, fake_run(0, -80.0, -85.0))  # seed 0 again
    stored = ladder.load_results()['runs']
    assert sorted((r['seed'], r['best']) for r in stored) == [(0, -80.0), (1, -90.0)]


def test_a_run_is_recorded_only_with_write_and_a_run_at_another_budget_keeps_the_first(ladder, tmp_path, monkeypatch,
                                                                                        capsys):
    runs = iter([fake_run(0, -80.0, -85.0), fake_run(0, -300.0, -310.0), fake_run(0, -70.0, -75.0)])
    keys = ('row', 'framework', 'algo', 'seed', 'budget')  # run_acframe returns what the ladder adds these to
    monkeypatch.setattr(ladder, 'run_acframe', lambda row, algo, seed, budget, overrides:
                        {k: v for k, v in next(runs).items() if k not in keys})
    doc = (tmp_path / 'benchmarks.md').read_text()
    assert ladder.main(['--rows', 'acrobot', '--algos', 'a2c', '--seeds', '0', '--budget', '1000']) == 0
    assert not os.path.exists(ladder.RESULTS) and (tmp_path / 'benchmarks.md').read_text() == doc  # a trial: nothing
    assert 'hold-out -85.0' in capsys.readouterr().out  # (its result printed)
    assert ladder.main(['--rows', 'acrobot', '--algos', 'a2c', '--seeds', '0', '--budget', '1000', '--write']) == 0
    assert ladder.main(['--rows', 'acrobot', '--algos', 'a2c', '--seeds', '0', '--budget', '500', '--write']) == 0
    stored = ladder.load_results()['runs']
    assert sorted((r['budget'], r['best']) for r in stored) == [(500, -70.0), (1000, -300.0)]
    assert ladder.START in (tmp_path / 'benchmarks.md').read_text()


def test_two_ladder_processes_side_by_side_keep_each_others_runs(ladder):
    """Each process holds the results it loaded at its start; recording re-reads the file, so none is lost."""
    first, second = ladder.load_results(), ladder.load_results()
    ladder.record(first, fake_run(0, -120.0, -130.0))
    ladder.record(second, fake_run(1, -90.0, -95.0, algo='impala'))
    stored = ladder.load_results()['runs']
    assert sorted((r['algo'], r['seed']) for r in stored) == [('a2c', 0), ('impala', 1)]
    assert sorted((r['algo'], r['seed']) for r in second['runs']) == [('a2c', 0), ('impala', 1)]


def test_the_table_counts_seeds_at_target_and_in_the_holdout_and_the_docs_get_plots(ladder, tmp_path):
    results = {'runs': [fake_run(0, -80.0, -85.0), fake_run(1, -120.0, -90.0), fake_run(2, -95.0, -130.0),
                        fake_run(0, -90.0, -88.0, framework='sb3')]}
    row = [line for line in ladder.table(results).splitlines() if '| acframe a2c |' in line][0]
    assert '| 3/3 at -100 (1k / 1k / 1k) | 2/3 |' in row  # solved (confirmed); best eval >= -100 on seeds 0 and 2
    assert '-85 / -90 / -130 (2/3 ≥ target)' in row
    sampled = {'runs': [dict(fake_run(0, -80.0, -85.0), eval_deterministic=False)]}
    assert '| acframe a2c, sampled eval |' in ladder.table(sampled)  # a row evaluated with sampled actions says so
    ladder.write_docs(results)
    text = (tmp_path / 'benchmarks.md').read_text()
    assert text.startswith('# Benchmarks\n\nearlier text') and text.count(ladder.START) == 1
    assert (tmp_path / 'img' / 'ladder_acrobot.png').stat().st_size > 1000
    ladder.write_docs(results)  # rewriting replaces the block
    assert (tmp_path / 'benchmarks.md').read_text().count(ladder.START) == 1


def test_linear_schedules_decay_to_zero(ladder):
    schedule = ladder._schedule('lin_0.001')
    assert schedule(1.0) == pytest.approx(0.001) and schedule(0.0) == 0.0
    assert ladder._schedule(3e-4) == 3e-4


def test_every_zoo_entry_is_a_row_and_resolves_to_sb3_arguments(ladder):
    import torch

    for row, algo in ladder.ZOO:
        assert row in ladder.ROWS and algo in ('a2c', 'ppo', 'ppo_lstm')
        n_envs, normalize, hp = ladder.zoo_kwargs(row, algo)
        assert n_envs >= 1 and 'n_envs' not in hp
        # True, or VecNormalize's keyword arguments (the Zoo's normalize_kwargs)
        assert isinstance(normalize, bool) or set(normalize) <= {'norm_obs', 'norm_reward'}
    assert ladder.zoo_kwargs('halfcheetah', 'a2c')[1] == {'norm_obs': True, 'norm_reward': False}
    n_envs, normalize, hp = ladder.zoo_kwargs('halfcheetah', 'ppo')  # RL Zoo's tuned HalfCheetah PPO
    assert (n_envs, normalize, hp['n_steps'], hp['n_epochs'], hp['gamma']) == (1, True, 512, 20, 0.98)
    assert hp['policy_kwargs']['activation_fn'] is torch.nn.ReLU
    assert ladder.ZOO[('halfcheetah', 'ppo')]['policy_kwargs']['activation_fn'] == 'relu'  # the table is untouched


def test_an_acframe_run_is_trained_read_back_and_its_best_checkpoint_held_out(ladder, monkeypatch):
    monkeypatch.setattr(ladder, 'HOLDOUT_EPISODES', 3)
    run = ladder.run_acframe('cartpole', 'ppo', 0, 512, ['policy.collect.n_sample=256', 'policy.learn.epoch_per_collect=1',
                                                         'policy.eval.evaluator.eval_freq=1'])
    assert run['env_steps'] == 512 and run['solved'] is False and run['stop_value'] == 475
    assert [step for step, _ in run['curve']] == [0, 256, 512]  # an evaluation every rollout (one minibatch of 256)
    assert run['best'] == max(value for _, value in run['curve'])
    assert run['holdout']['episodes'] == 3 and 8 <= run['holdout']['mean'] <= 500
