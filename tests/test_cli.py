"""Specification of the ``acframe`` command: exit codes, one-line errors, outputs, and no torch for cheap answers."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from acframe.cli import main
from acframe.config import compile_config
from acframe.errors import ConfigError

# a run small enough for a test: 2 collector envs, one evaluation episode
TINY = ['--max-env-step', '256', '-q', 'env.collector_env_num=2', 'policy.collect.n_sample=2', 'env.evaluator_env_num=1',
        'env.n_evaluator_episode=1', 'policy.learn.batch_size=4']


def run_cli(args, capsys):
    """``main(args)``'s exit status with its stdout and stderr."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope='module')
def tiny_run(tmp_path_factory):
    """One tiny training run started from a foreign cwd (the config is found in dizoo_configs by name)."""
    work = tmp_path_factory.mktemp('cli')
    exp_dir = work / 'exp'
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_impala.py', '--exp-dir', str(exp_dir), *TINY],
                         cwd=work, capture_output=True, text=True, timeout=120)
    return out, exp_dir


def test_a_tiny_run_exits_0_and_fills_the_experiment_folder(tiny_run):
    out, exp_dir = tiny_run
    assert out.returncode == 0, out.stderr
    assert (exp_dir / 'config.py').is_file()
    assert (exp_dir / 'ckpt' / 'ckpt_latest.pth').is_file()
    assert (exp_dir / 'ckpt' / 'ckpt_best.pth').is_file()
    assert list((exp_dir / 'log').glob('events.out.tfevents.*'))
    summary = json.loads((exp_dir / 'summary.json').read_text())
    for key in ('solved', 'env_steps', 'train_iters', 'wall_s', 'best_eval_return', 'stop_value', 'seed'):
        assert key in summary
    assert summary['env_steps'] == 256 and summary['seed'] == 0
    assert summary['stop_value'] == compile_config('cartpole_impala.py').env.stop_value


def test_eval_mode_evaluates_a_checkpoint(tiny_run, capsys, tmp_path):
    _, exp_dir = tiny_run
    code, out, err = run_cli(['-m', 'eval', '-c', 'cartpole_impala.py', '--load', str(exp_dir / 'ckpt' / 'ckpt_best.pth'),
                              '--out', str(tmp_path / 'eval.json'), 'env.n_evaluator_episode=2'], capsys)
    assert code == 0, err
    assert out.strip().splitlines()[-1].startswith('[eval] return ')
    result = json.loads((tmp_path / 'eval.json').read_text())
    assert len(result['returns']) == 2 and result['mean'] == pytest.approx(sum(result['returns']) / 2)


def test_quiet_keeps_the_final_result_line(tiny_run):
    out, exp_dir = tiny_run
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('[acframe] ') and lines[0].endswith(f'-> {exp_dir}')


def test_list_shows_registered_names_and_configs(capsys):
    code, out, _ = run_cli(['--list'], capsys)
    assert code == 0
    assert 'impala' in out.split('policies:')[1].splitlines()[0]
    assert 'vac' in out.split('models:')[1].splitlines()[0]
    assert 'gym' in out.split('envs:')[1].splitlines()[0]
    assert 'cartpole_impala.py' in out.split('dizoo configs:')[1]
    assert 'prioritized' in out.split('buffers:')[1].splitlines()[0]
    assert 'jsonl' in out.split('loggers:')[1].splitlines()[0]
    assert 'linear_lr_decay' in out.split('hooks:')[1].splitlines()[0]
    assert 'cartpole_novel (CartPole-v1)' in out.split('partially observed envs (velocities removed):')[1].splitlines()[0]


@pytest.mark.parametrize('flags, says', [
    (['-n', '100000'], "-n is a Stable-Baselines3 / RL Zoo flag: acframe's is --max-env-step N"),
    (['--total-timesteps=5'], "--total-timesteps is a Stable-Baselines3 / RL Zoo flag: acframe's is --max-env-step N"),
    (['--algo', 'ppo'], "--algo is a Stable-Baselines3 / RL Zoo flag: acframe's is -c CONFIG"),
])
def test_an_rl_zoo_flag_is_answered_with_acframes(flags, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:  # (argparse's exit, as the command's)
        main(['-c', 'cartpole_ppo.py', *flags])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count('\n') == 1 and says in err and os.listdir(tmp_path) == [], err


def test_python_dash_m_acframe_is_the_acframe_command(tmp_path):
    """``python -m acframe`` said 'No module named acframe.__main__'."""
    out = subprocess.run([sys.executable, '-m', 'acframe', '--list'], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.startswith('policies: '), out.stderr
    out = subprocess.run([sys.executable, '-m', 'acframe', '-c', 'no_such_config.py'], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith('acframe: error: ') and os.listdir(tmp_path) == []


def test_list_names_what_an_imported_module_registers(tmp_path, capsys, monkeypatch):
    (tmp_path / 'list_seam_user.py').write_text(
        "from acframe import HOOK_REGISTRY, LOGGER_REGISTRY\n"
        "from acframe.loggers import LoggerBackend\n"
        "from acframe.worker import CollectorHook\n"
        "LOGGER_REGISTRY.register('list_seam_logger')(type('L', (LoggerBackend,), {}))\n"
        "HOOK_REGISTRY.register('list_seam_hook')(type('H', (CollectorHook,), {}))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run_cli(['--list', '--import', 'list_seam_user'], capsys)
    assert code == 0
    assert 'list_seam_logger' in out.split('loggers:')[1].splitlines()[0]
    assert 'list_seam_hook' in out.split('hooks:')[1].splitlines()[0]


@pytest.fixture
def bad_policy_config(tmp_path):
    path = tmp_path / 'bad_policy.py'
    path.write_text("main_config = dict()\ncreate_config = dict(policy=dict(type='impalla'))\n")
    return str(path)


@pytest.mark.parametrize('args, message', [
    (['-c', 'cartpole_impala.py', 'policy.learn.learnin_rate=0.1'],
     "unknown config key 'policy.learn.learnin_rate'; did you mean 'policy.learn.learning_rate'?"),
    (['-c', 'BAD_POLICY'], "unknown policy 'impalla'. Did you mean 'impala'?"),
    (['-c', 'no_such_config.py'], "config file 'no_such_config.py' not found"),
    ([], 'no config given'),
    (['-m', 'eval', '-c', 'cartpole_impala.py'], '-m eval needs the run: acframe -m eval RUN_DIR_OR_CKPT (or --load RUN_DIR_OR_CKPT'),
    (['-m', 'eval', '-c', 'cartpole_impala.py', '--load', 'missing.pth'], '--load missing.pth: no such file or folder'),
    (['-m', 'export', '--load', 'missing_run', '--out', 'x.pt'], '--load missing_run: no such file or folder'),
    (['-c', 'cartpole_impala.py', '--load', 'x.pth'], '--load evaluates or exports a finished run with -m eval / -m export'),
    (['-c', 'cartpole_impala.py', 'policy.learn.learning_rate'], 'is not of the form key.path=value'),
    (['-c', 'cartpole_impala.py', 'policy.learn.learning_rate=fast'], "'policy.learn.learning_rate' must be float"),
    (['-c', 'cartpole_impala.py', 'policy.learn.discount_factor=2'], 'must lie in [0, 1]'),
    (['--resume', 'no_such_run'], '--resume no_such_run: no such folder'),
    (['-c', 'pendulum_acer.py', 'policy.model.type=vac'],
     "policy.model.type='vac' has no Q head, which policy 'acer' learns (Retrace targets); use 'acer_q'"),
    (['-c', 'cartpole_ppo.py', 'env.env_id=toy_cue_memory'],
     "env.env_id 'toy_cue_memory' names an env type (registered in ENV_REGISTRY), not a gymnasium env: set "
     "env.type=toy_cue_memory"),
])
def test_usage_and_config_errors_exit_2_with_one_line(args, message, bad_policy_config, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [bad_policy_config if a == 'BAD_POLICY' else a for a in args]
    code, out, err = run_cli(args, capsys)
    assert code == 2
    assert err.count('\n') == 1 and err.startswith('acframe: error: ')
    assert message in err
    assert 'Traceback' not in err + out


def test_a_corrupt_checkpoint_exits_2(tmp_path, capsys):
    corrupt = tmp_path / 'ckpt.pth'
    corrupt.write_bytes(b'not a torch file')
    code, _, err = run_cli(['-m', 'eval', '-c', 'cartpole_impala.py', '--load', str(corrupt)], capsys)
    assert code == 2
    assert f"checkpoint '{corrupt}' is corrupt" in err and err.count('\n') == 1


def test_resume_without_a_checkpoint_exits_2(tmp_path, capsys):
    from acframe.config.run_folder import save_run_config
    save_run_config(compile_config('cartpole_impala.py'), str(tmp_path), 'serial')
    code, _, err = run_cli(['--resume', str(tmp_path)], capsys)
    assert code == 2
    assert 'no ckpt/ckpt_latest.pth there' in err


def test_a_folder_with_only_a_config_py_is_not_executed_on_resume(tmp_path, capsys):
    marker = tmp_path / 'ran'
    (tmp_path / 'config.py').write_text(f"open({str(marker)!r}, 'w').close()\nmain_config = dict()\n")
    code, _, err = run_cli(['--resume', str(tmp_path)], capsys)
    assert code == 2 and 'no config.json there' in err and err.count('\n') == 1
    assert not marker.exists()


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(ConfigError):
        main(['-c', 'cartpole_impala.py', 'policy.lern.x=1', '--debug'])


def _modules_after(args, cwd):
    """Run the CLI in a fresh interpreter; return (exit code, stdout, stderr, whether torch got imported)."""
    probe = textwrap.dedent(f"""
        import sys
        from acframe.cli import main
        try:
            code = main({args!r})
        except SystemExit as exc:
            code = exc.code
        sys.stderr.write('TORCH_IMPORTED=%s\\n' % ('torch' in sys.modules))
        sys.exit(code)
    """)
    out = subprocess.run([sys.executable, '-c', probe], cwd=cwd, capture_output=True, text=True, timeout=60)
    err_lines = out.stderr.splitlines()
    assert err_lines and err_lines[-1].startswith('TORCH_IMPORTED='), out.stderr
    return out.returncode, out.stdout, '\n'.join(err_lines[:-1]), err_lines[-1] == 'TORCH_IMPORTED=True'


def test_help_list_and_config_errors_answer_without_importing_torch(tmp_path):
    code, out, _, torch_imported = _modules_after(['--help'], tmp_path)
    assert code == 0 and 'usage: acframe' in out and not torch_imported

    code, _, err, torch_imported = _modules_after(['-c', 'cartpole_impala.py', 'env.collector_env_nums=2'], tmp_path)
    assert code == 2 and "did you mean 'env.collector_env_num'?" in err
    assert not torch_imported

    code, out, _, torch_imported = _modules_after(['--list'], tmp_path)
    assert code == 0 and 'policies:' in out and not torch_imported


def test_help_imports_no_torch_per_importtime(tmp_path):
    out = subprocess.run([sys.executable, '-X', 'importtime', '-m', 'acframe.cli', '--help'], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    imported = [line.rsplit('|', 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith('import time:')]
    assert 'acframe' in imported and 'argparse' in imported  # the probe sees the imports
    assert not [name for name in imported if name == 'torch' or name.startswith('torch.')]


# ---- DI-engine's spellings of the flags (issue 11) ----------------------------------------------------------
def test_di_engine_budget_flags_are_aliases_and_take_its_1e5_notation(tmp_path, capsys):
    exp_dir = tmp_path / 'ding_flags'
    code, _, err = run_cli(['-c', 'cartpole_impala.py', '--env-step', '2.56e2', '--train-iter', '1e6', '--exp-dir', str(exp_dir),
                            *TINY[3:]], capsys)
    assert code == 0, err
    assert json.loads((exp_dir / 'summary.json').read_text())['env_steps'] == 256
    code, _, err = run_cli(['-c', 'cartpole_impala.py', '--train-iter', '3', '--exp-dir', str(tmp_path / 'iters'), *TINY[3:]], capsys)
    assert code == 0 and json.loads((tmp_path / 'iters' / 'summary.json').read_text())['train_iters'] == 3


def test_exp_name_names_the_folder_as_in_di_engine(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(['-c', 'cartpole_impala.py', '--exp-name', 'my_exp', '--train-iter', '2', *TINY[3:]], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / 'my_exp' / 'summary.json').read_text())
    assert summary['train_iters'] == 2
    from acframe.config.run_folder import load_run_config
    assert load_run_config(str(tmp_path / 'my_exp')).exp_name == 'my_exp'


def test_an_exp_name_whose_folder_holds_a_run_is_refused_naming_exp_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_cli(['-c', 'cartpole_impala.py', '--exp-name', 'my_exp', '--train-iter', '2', *TINY[3:]], capsys)[0] == 0
    code, _, err = run_cli(['-c', 'cartpole_impala.py', '--exp-name', 'my_exp', '-s', '1', '--train-iter', '2',
                            *TINY[3:]], capsys)
    assert code == 2 and err == ("acframe: error: --exp-name my_exp: the folder my_exp already holds a run; continue "
                                 "it with --resume my_exp, or choose another name\n")


def test_an_exp_name_ending_with_the_runs_seed_does_not_get_it_twice(tmp_path, monkeypatch):
    from easydict import EasyDict

    from acframe.entry.run_folder import plan_exp_dir
    monkeypatch.chdir(tmp_path)
    named = {(name, seed): plan_exp_dir(EasyDict(exp_name=name, seed=seed), None, False)
             for name, seed in (('cartpole_ppo_seed0', 0), ('cartpole_ppo_seed0', 3), ('cartpole_ppo', 1), ('_seed0', 2))}
    assert named == {('cartpole_ppo_seed0', 0): 'cartpole_ppo_seed0', ('cartpole_ppo_seed0', 3): 'cartpole_ppo_seed0_seed3',
                     ('cartpole_ppo', 1): 'cartpole_ppo_seed1', ('_seed0', 2): '_seed0_seed2'}


def test_load_path_is_the_checkpoint_of_eval_mode(tiny_run, capsys, tmp_path):
    _, exp_dir = tiny_run
    code, out, err = run_cli(['-m', 'eval', '-c', 'cartpole_impala.py', '--load-path', str(exp_dir / 'ckpt' / 'ckpt_best.pth'),
                              '--out', str(tmp_path / 'eval.json'), 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1'],
                             capsys)
    assert code == 0, err
    assert 'over 1 episode of ckpt_best.pth' in out.strip().splitlines()[-1]
    assert len(json.loads((tmp_path / 'eval.json').read_text())['returns']) == 1


def test_env_and_policy_flags_pick_the_dizoo_config(tmp_path, capsys):
    code, _, err = run_cli(['-e', 'cartpole', '-p', 'impala', '--train-iter', '1', '--exp-dir', str(tmp_path / 'ep'), *TINY[3:]], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / 'ep' / 'summary.json').read_text())['policy'] == 'impala'


@pytest.mark.parametrize('args, message', [
    (['-c', 'cartpole_impala.py', '-s', '0', '-s', '1'], '-s given 2 times (0, 1): acframe runs one seed per command'),
    (['-c', 'cartpole_impala.py', '--replay-path', 'videos'], "--replay-path (DI-engine's eval videos) is not supported"),
    (['-e', 'cartpole'], '-e ENV and -p POLICY go together'),
    (['-e', 'cartpole', '-p', 'impala', '-c', 'cartpole_a2c.py'], '-e/-p choose a dizoo_configs file when no -c is given'),
])
def test_di_engine_flags_acframe_cannot_honour_are_one_line_errors(args, message, capsys):
    code, _, err = run_cli(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0]


def test_version_flag(capsys):
    from acframe import __version__
    code, out, _ = run_cli(['-v'], capsys)
    assert code == 0 and out.strip() == f'acframe {__version__}'


def test_output_into_a_pipe_whose_reader_left_ends_quietly():
    """``acframe -m check-env ENV | head -0``: the report's print met a closed pipe and printed a traceback."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-m', 'check-env', 'CartPole-v1'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader leaves before the report is printed (the start takes a second or more)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1
    assert 'Traceback' not in err and 'BrokenPipeError' not in err, err


@pytest.mark.parametrize('args', [['-m', 'eval', '--load', 'RUN', '--backend', 'ray'],
                                  ['-m', 'export', '--load', 'RUN', '--out', 'x.pt', '--backend', 'inline'],
                                  ['-m', 'check-env', 'CartPole-v1', '--ray-address', '127.0.0.1:6379']])
def test_a_parallel_backend_flag_on_a_mode_that_runs_in_this_process_is_refused(args, capsys):
    """-m eval --backend ray was accepted and did nothing (the evaluation ran here)."""
    from acframe.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("acframe: error: --backend and --ray-address choose where -m parallel's workers run; -m ")
    assert err.count('\n') == 1


def test_a_parallel_key_of_another_pipeline_on_the_command_line_is_warned_about(tmp_path):
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'async', '-c', 'cartpole_a3c.py',
                          'parallel.actor_num=5', '--max-env-step', '100', '-q', '--exp-dir', str(tmp_path / 'run')],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert ("acframe: warning: parallel.actor_num is read by -m parallel only; this -m async run ignores it; its "
            "workers are parallel.async_worker_num") in out.stderr.splitlines(), out.stderr


def test_a_step_timeout_no_watchdog_reads_is_warned_about_once_from_the_command_line(tmp_path):
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_ppo.py', 'env.step_timeout_s=5',
                          '--max-env-step', '100', '-q', '--exp-dir', str(tmp_path / 'run')],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stderr.splitlines() if 'step_timeout_s' in line] == [
        "acframe: warning: env.step_timeout_s=5 watches envs that step in subprocesses (env.manager='async') or in -m "
        "parallel's workers; this serial run's env.manager='sync' steps them in this process, where a hung step is not "
        "stopped: set env.manager='async' too"], out.stderr


def test_a_step_timeout_a_config_file_sets_for_envs_no_watchdog_reads_is_warned_about_once(tmp_path):
    """(Only an override was warned about: a file's value left a hung step stalling the run without a word.) A user's
    manager that subclasses 'sync' steps its envs in this process too."""
    (tmp_path / 'cfg.py').write_text("from dizoo_configs.cartpole_a2c import main_config, create_config\n"
                                     "main_config['env']['step_timeout_s'] = 3\n")
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cfg.py', '--max-env-step', '100', '-q',
                          '--exp-dir', str(tmp_path / 'run')], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stderr.splitlines() if 'step_timeout_s' in line] == [
        "acframe: warning: env.step_timeout_s=3 watches envs that step in subprocesses (env.manager='async') or in -m "
        "parallel's workers; this serial run's env.manager='sync' steps them in this process, where a hung step is not "
        "stopped: set env.manager='async' too"], out.stderr
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', 'run', '--max-env-step', '200', '-q'],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and 'step_timeout_s' not in out.stderr, out.stderr  # (said when the run started)


def test_a_second_module_after_import_separated_by_a_space_is_told_the_comma_form(capsys):
    """``--import a b`` read b as an override and said only that it is not key.path=value."""
    assert main(['-c', 'cartpole_ppo.py', '--import', 'json', 'collections']) == 2
    assert capsys.readouterr().err.strip() == (
        "acframe: error: override 'collections' is not of the form key.path=value (e.g. "
        "policy.learn.learning_rate=3e-4); --import takes its modules comma-separated: --import json,collections")
