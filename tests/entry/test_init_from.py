"""``init_from`` (``--init-from``): a new run starts from the model weights of a checkpoint or a run folder, with a
fresh optimizer, counters and envs; a best checkpoint copied over ``ckpt_latest.pth`` is refused by ``--resume`` in
one line that names this option."""
import shutil

import torch

from acframe.cli import main
from acframe.config import compile_config
from acframe.policy import create_policy

TINY = ['-q', 'env.collector_env_num=2', 'policy.collect.n_sample=2', 'env.evaluator_env_num=1',
        'env.n_evaluator_episode=1', 'env.stop_value=1e9']


def _model(path):
    return torch.load(path, weights_only=True)['policy']['model']


def test_a_new_run_starts_from_the_weights_of_a_run_folder_with_a_fresh_optimizer(trained_run, tmp_path, capsys):
    new = tmp_path / 'new'
    # --max-train-iter 1: one update on top of the loaded weights, then the final checkpoint
    assert main(['-c', 'cartpole_a2c.py', '--init-from', str(trained_run), '--exp-dir', str(new),
                 '--max-env-step', '200', '--max-train-iter', '1', *TINY]) == 0
    source = _model(trained_run / 'ckpt' / 'ckpt_best.pth')
    start = torch.load(new / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert start['train_iter'] == 1
    moved = [k for k in source if not torch.equal(source[k], start['policy']['model'][k])]
    assert moved, 'one update on top of the loaded weights changes some of them'
    assert all(torch.allclose(source[k], start['policy']['model'][k], atol=0.05) for k in source)  # one small step away
    fresh = compile_config('cartpole_a2c.py')
    assert (fresh.init_from is None) and compile_config(str(new / 'config.py')).init_from == str(trained_run)


def test_a_relative_init_from_is_recorded_as_the_folder_it_named(trained_run, tmp_path, monkeypatch, capsys):
    """config.py repeats the run from any folder: ``--init-from`` given relative to where the run started is kept
    absolute in config.json and config.py."""
    monkeypatch.chdir(trained_run.parent)
    new, cfg = tmp_path / 'new', tmp_path / 'cfg.py'
    cfg.write_text("from dizoo_configs.cartpole_a2c import main_config, create_config\n"
                   f"main_config['init_from'] = {trained_run.name!r}\n")
    assert main(['-c', str(cfg), '--exp-dir', str(new), '--max-env-step', '200', '--max-train-iter', '1', *TINY]) == 0
    # resumed with the config it started from (its init_from still relative): the same run, not a changed key
    assert main(['--resume', str(new), '-c', str(cfg), '--max-env-step', '300', *TINY]) == 0, capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert compile_config(str(new / 'config.py')).init_from == str(trained_run)


def test_the_modes_derived_from_the_model_start_from_the_loaded_weights():
    """ACER's average policy network is a copy of the model made when the learn mode is set up: it must be a copy of
    the loaded weights, not of the random ones."""
    import gymnasium as gym

    cfg = compile_config('cartpole_acer.py', ['env.env_id=CartPole-v1', 'env.stop_value=None'])
    spaces = gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2)
    donor = create_policy(cfg, *spaces)
    weights = {k: v + 0.5 for k, v in donor.get_weights().items()}
    policy = create_policy(cfg, *spaces, init_weights=weights)
    for key, value in policy.get_weights().items():
        assert torch.equal(value, weights[key])
    for mine, average in zip(policy.model.parameters(), policy._average_model.parameters()):
        assert torch.equal(mine, average)


def test_a_best_checkpoint_copied_over_the_latest_is_refused_naming_init_from(trained_run, tmp_path, capsys):
    run = tmp_path / 'run'
    shutil.copytree(trained_run, run)
    shutil.copy(run / 'ckpt' / 'ckpt_best.pth', run / 'ckpt' / 'ckpt_latest.pth')
    before = sorted(p.name for p in run.rglob('*'))
    assert main(['--resume', str(run), '-q']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '--init-from' in err and 'best checkpoint' in err
    assert sorted(p.name for p in run.rglob('*')) == before


def test_init_from_weights_that_do_not_fit_or_with_resume_is_one_line_and_writes_nothing(trained_run, tmp_path, capsys):
    assert main(['-c', 'cartpole_a2c.py', '--init-from', str(trained_run), '--exp-dir', str(tmp_path / 'x'), '-q',
                 'policy.model.encoder_hidden_size_list=[32]']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and f'init_from {trained_run}' in err and 'does not fit' in err
    assert 'its run trained policy' not in err  # (the same policy, another model: the keys say it)
    assert main(['-c', 'cartpole_acer.py', '--init-from', str(trained_run), '--exp-dir', str(tmp_path / 'x'),
                 '-q']) == 2  # another policy's weights: the line says whose they are
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.rstrip().endswith("(its run trained policy 'a2c', this config trains 'acer': "
                                                           "init_from takes weights of the same policy and model)")
    assert main(['--resume', str(trained_run), '--init-from', str(trained_run), '-q']) == 2
    assert '--init-from starts a new run' in capsys.readouterr().err
    assert main(['-c', 'cartpole_a2c.py', '--init-from', str(tmp_path / 'nothing'), '-q']) == 2
    assert 'no such file' in capsys.readouterr().err
    assert not (tmp_path / 'x').exists()
