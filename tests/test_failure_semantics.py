"""Specification of how acframe fails: bad input and faults end in one clear line (exit 2), never run code
from a file a user was handed, never train on NaN/inf, never leave a half-made folder, never lose a run.

Each case is one of the failures listed in the safety and real-world-runs issues; a test here failed before
the fix and passes after it.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from acframe.cli import main
from acframe.config import compile_config
from acframe.config.run_folder import read_run_record, save_run_config
from acframe.entry.run_folder import RunLock
from acframe.loggers.files import FileWatch
from fixtures.reliability import faulty_config as write_faulty_config, stop_an_actor
from fixtures.tmpfs import tmpfs

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = ['-q', 'env.collector_env_num=2', 'policy.collect.n_sample=2', 'env.evaluator_env_num=1',
        'env.n_evaluator_episode=1', 'policy.learn.batch_size=4']


def cli(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def wait_until_training(run_dir, settle_s: float = 1.0):
    """Wait (at most 60 s) for a run started in a subprocess to open its log folder, then ``settle_s`` more."""
    deadline = time.time() + 60
    while not (run_dir / 'log').exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(settle_s)


def one_line_error(code, err):
    return code == 2 and err.startswith('acframe: error: ') and err.count('\n') == 1


def faulty_config(tmp_path, fault, at_step=50, policy='impala'):
    return tmp_path / write_faulty_config(str(tmp_path), fault, at_step, policy=policy)


@pytest.fixture
def run_dir(tmp_path_factory):
    """A finished tiny IMPALA run (its folder) to resume, evaluate or tamper with."""
    folder = tmp_path_factory.mktemp('run') / 'exp'
    assert main(['-c', 'cartpole_impala.py', '--exp-dir', str(folder), '--max-env-step', '64', *TINY]) == 0
    return folder


class Payload:
    """What an attacker plants: unpickling it runs ``touch MARKER``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f'touch {self.marker}',))


# ---- checkpoints and run folders are data ------------------------------------------------------------
@pytest.mark.parametrize('size', [100, 'half'])
def test_a_cut_latest_checkpoint_is_one_whole_line_pointing_at_the_best_one_that_reads(run_dir, capsys, size):
    """A real checkpoint cut short (``truncate``): --resume and -m eval say so in one line (not torch's advice cut
    mid-sentence) and point at the folder's ckpt_best.pth, which still reads; nothing is written."""
    latest, best = run_dir / 'ckpt' / 'ckpt_latest.pth', run_dir / 'ckpt' / 'ckpt_best.pth'
    assert best.is_file()
    os.truncate(latest, size if size != 'half' else latest.stat().st_size // 2)
    before = sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob('*') if p.name != '.acframe.lock')
    for args in (['--resume', str(run_dir), '-q'], ['-m', 'eval', '--load', str(latest), '--episodes', '1']):
        code, _, err = cli(args, capsys)
        assert one_line_error(code, err) and 'is corrupt, cut short or not a torch file' in err, err
        assert f"{best} reads: evaluate it (-m eval --load), or start a new run from its weights (--init-from)" in err
        assert 'If you are seeing this error' not in err
    assert sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob('*') if p.name != '.acframe.lock') == before


@pytest.mark.parametrize('where', ['policy', 'buffer', 'domain_randomization', 'rng'])
def test_a_planted_payload_in_any_part_of_a_checkpoint_never_runs(run_dir, tmp_path, capsys, where):
    marker = tmp_path / 'pwned'
    path = run_dir / 'ckpt' / 'ckpt_latest.pth'
    state = torch.load(path, weights_only=True)
    state[where] = {'x': Payload(marker)} if where != 'policy' else {'model': Payload(marker)}
    torch.save(state, path)  # the attacker's torch.save: real pickled code
    for args in (['--resume', run_dir], ['-m', 'eval', '-c', 'cartpole_impala.py', '--load', path]):
        code, _, err = cli(args, capsys)
        assert one_line_error(code, err) and 'not plain data' in err, err
        assert not marker.exists()


def test_resume_reads_config_json_and_never_executes_config_py(run_dir, tmp_path, capsys):
    marker = tmp_path / 'pwned'
    (run_dir / 'config.py').write_text(f"import os\nos.system('touch {marker}')\n")
    code, _, err = cli(['--resume', run_dir, '--max-env-step', '128'], capsys)
    assert code == 0, err
    assert not marker.exists()
    assert (run_dir / 'config.py').read_text().startswith('import os')  # never rewritten either


def test_config_json_round_trips_inf_and_numpy_scalars_exactly(tmp_path):
    import numpy as np
    cfg = compile_config('cartpole_impala.py', [('env.stop_value', float('inf')),
                                                 ('policy.learn.learning_rate', np.float32(2.0))])
    save_run_config(cfg, str(tmp_path), 'serial')
    back = read_run_record(str(tmp_path))['config']
    assert back['env']['stop_value'] == float('inf') and back['policy']['learn']['learning_rate'] == 2.0
    namespace = {}
    exec((tmp_path / 'config.py').read_text(), namespace)  # the human-readable copy is valid Python too
    assert namespace['main_config']['env']['stop_value'] == float('inf')


# ---- resume traps ----------------------------------------------------------------------------------------
def test_resume_refuses_a_config_that_changes_the_run_naming_the_keys(run_dir, capsys):
    before = (run_dir / 'config.json').read_text()
    code, _, err = cli(['--resume', run_dir, '-s', '3', 'policy.learn.learning_rate=0.1'], capsys)
    assert one_line_error(code, err)
    assert 'seed' in err and 'policy.learn.learning_rate' in err and '--accept-config-change' in err
    assert (run_dir / 'config.json').read_text() == before  # a failed command never modifies the folder


def test_accepted_config_changes_are_recorded(run_dir, capsys):
    code, _, err = cli(['--resume', run_dir, '--accept-config-change', '--max-env-step', '128',
                        'policy.learn.learning_rate=0.001'], capsys)
    assert code == 0, err
    record = read_run_record(str(run_dir))
    assert record['config']['policy']['learn']['learning_rate'] == 0.001
    assert record['changes'][-1]['keys'] == ['policy.learn.learning_rate']


@pytest.fixture(scope='module')
def run_with_saved_buffer(tmp_path_factory):
    run = tmp_path_factory.mktemp('saved_buffer') / 'run'
    assert main(['-c', 'cartpole_impala.py', '--exp-dir', str(run), '--max-env-step', '1200', '-q', 'env.stop_value=None',
                 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                 'policy.other.replay_buffer.save_in_checkpoint=True']) == 0
    return run


@pytest.mark.parametrize('change, message', [
    (['policy.other.replay_buffer.replay_buffer_size=5000'],  # (the ring's indices ran past the saved slots mid-run)
     r"its replay buffer was saved with room for 1000 samples, this run's has 5000 \(policy.other.replay_buffer."
     r"replay_buffer_size changed\): a saved buffer resumes at the size it was saved with; resume with the run's own "
     r"replay_buffer_size, or with policy.other.replay_buffer.save_in_checkpoint=False to start from an empty buffer"),
    (['policy.unroll_len=8'],  # (the first push of the new length failed mid-run)
     r"config key 'policy.unroll_len' changed, but the checkpoint's replay buffer holds \d+ unrolls of the former "
     r"layout; resume with policy.other.replay_buffer.save_in_checkpoint=False"),
    (['policy.learn.reward_norm=True'],  # (a norm_return leaf the saved unrolls lack)
     r"config key 'policy.learn.reward_norm' changed, but the checkpoint's replay buffer holds \d+ unrolls"),
    (['policy.learn.batch_size=5000'],  # (the run trained on with 0 gradient steps)
     r"policy.learn.batch_size = 5000 samples > policy.other.replay_buffer.replay_buffer_size = 1000"),
])
def test_a_resume_whose_config_change_a_saved_buffer_cannot_take_is_refused_at_start(run_with_saved_buffer, tmp_path,
                                                                                      capsys, change, message):
    import shutil
    run = tmp_path / 'run'
    shutil.copytree(run_with_saved_buffer, run)
    before = {p.name: p.read_bytes() for p in run.rglob('*') if p.is_file()}
    code, _, err = cli(['--resume', run, '--accept-config-change', '--max-env-step', '2400', *change], capsys)
    assert one_line_error(code, err) and re.search(message, err), err
    assert {p.name: p.read_bytes() for p in run.rglob('*') if p.is_file()} == before  # nothing written
    # turning the saved buffer off drops it: the change is then taken
    if 'batch_size' not in change[0]:
        code, _, err = cli(['--resume', run, '--accept-config-change', '--max-env-step', '2400', *change,
                            'policy.other.replay_buffer.save_in_checkpoint=False', '-q'], capsys)
        assert code == 0, err


def test_a_resume_names_what_it_cannot_do(run_dir, tmp_path, capsys):
    """Another algorithm (even with --accept-config-change), another folder, a checkpoint file: one line each with the
    way that works; nothing written."""
    before = (run_dir / 'config.json').read_text()
    cases = [(['-c', 'cartpole_acer.py', '--accept-config-change'],
              f"the config given is of policy 'acer', the run's of 'impala': a resume continues the run's algorithm; "
              f"to start 'acer' from its weights where its model fits, run -c CONFIG --init-from {run_dir} (a new run)"),
             (['--exp-dir', str(tmp_path / 'elsewhere')], 'continues the run in its own folder, not in --exp-dir'),
             ]
    for args, message in cases:
        code, _, err = cli(['--resume', run_dir, *args], capsys)
        assert one_line_error(code, err) and message in err, err
    for inside in (run_dir / 'ckpt' / 'ckpt_latest.pth', run_dir / 'config.json'):
        code, _, err = cli(['--resume', inside], capsys)
        assert one_line_error(code, err) and f"a file; --resume takes the run's folder (--resume {run_dir})" in err, err
    (tmp_path / 'loose.pth').write_bytes(b'')
    code, _, err = cli(['--resume', tmp_path / 'loose.pth'], capsys)
    assert one_line_error(code, err) and err.rstrip().endswith("a file; --resume takes the run's folder"), err
    assert (run_dir / 'config.json').read_text() == before and not (tmp_path / 'elsewhere').exists()


def test_the_mode_is_read_from_the_folder(run_dir, capsys):
    code, _, err = cli(['--resume', run_dir, '-m', 'parallel'], capsys)
    assert one_line_error(code, err) and 'holds a serial run' in err
    record = json.loads((run_dir / 'config.json').read_text())
    assert record['mode'] == 'serial'


def test_a_mode_edited_in_config_json_is_refused_by_the_checkpoint(run_dir, capsys):
    """config.json is data someone may have edited: its "mode" changed from serial to parallel would resume a serial
    checkpoint with parallel actors; the checkpoint records the mode that wrote it, so the resume is one line."""
    record = json.loads((run_dir / 'config.json').read_text())
    record['mode'] = 'parallel'
    (run_dir / 'config.json').write_text(json.dumps(record))
    before = sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob('*') if p.name != '.acframe.lock')
    code, _, err = cli(['--resume', run_dir, '--max-env-step', '128'], capsys)
    assert one_line_error(code, err) and 'was written by a -m serial run' in err and 'says -m parallel' in err, err
    assert sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob('*') if p.name != '.acframe.lock') == before


def test_a_second_process_in_the_same_folder_is_refused_naming_the_holder(run_dir, capsys):
    lock = RunLock(str(run_dir))
    try:
        code, _, err = cli(['--resume', run_dir, '--max-env-step', '128'], capsys)
        assert one_line_error(code, err) and f'pid {os.getpid()}' in err
    finally:
        lock.release()
    assert cli(['--resume', run_dir, '--max-env-step', '128'], capsys)[0] == 0  # free again once released


# ---- failed starts write nothing -------------------------------------------------------------------------
@pytest.mark.parametrize('args, fragment', [
    (['env.env_id=LunarLanderContinuous-v2'], 'LunarLanderContinuous-v2'),
    (['env.env_kwargs.gravity=-50.0'], 'gravity'),
    (['exp_name=../outside'], 'exp_name'),
    (['seed=-1'], 'seed'),
    (['seed=99999999999'], 'seed'),
    (['policy.learn.torch_threads=100000'], 'torch_threads'),
    (['policy.other.replay_buffer.replay_buffer_size=1000000000000'], 'replay_buffer_size'),
    (['policy.learn.learning_rate=1e999'], 'learning_rate'),
    (['policy.learn.batch_size=100', 'policy.other.replay_buffer.replay_buffer_size=10'], '0 gradient steps'),
    (['policy.model.action_shape=5'], 'action'),
])
def test_a_failed_start_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, args, fragment):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', 'cartpole_impala.py', *TINY, *args], capsys)
    assert one_line_error(code, err) and fragment in err, err
    assert os.listdir(tmp_path) == []


def test_exp_dir_that_is_a_file_or_too_long_is_one_line(tmp_path, capsys):
    afile = tmp_path / 'afile'
    afile.write_text('')
    for target in (afile, tmp_path / ('x' * 300)):
        code, _, err = cli(['-c', 'cartpole_impala.py', '--exp-dir', target, *TINY], capsys)
        assert one_line_error(code, err), err
    assert sorted(os.listdir(tmp_path)) == ['afile']


def test_a_checkpoint_that_does_not_fit_says_why_in_one_line(run_dir, capsys):
    code, _, err = cli(['-m', 'eval', '-c', 'cartpole_impala.py', '--load', run_dir / 'ckpt' / 'ckpt_latest.pth',
                        'policy.model.encoder_hidden_size_list=[32]'], capsys)
    assert one_line_error(code, err) and 'weights differ in shape (e.g. actor_encoder.0.weight: [64, 4] in the checkpoint, [32, 4] here)' in err, err
    assert err.rstrip().endswith('use the config the checkpoint was trained with')


def test_a_checkpoint_whose_model_is_not_a_dict_is_one_line(run_dir, capsys):
    path = run_dir / 'ckpt' / 'ckpt_best.pth'
    state = torch.load(path, weights_only=True)
    state['policy']['model'] = 5
    torch.save(state, path)
    code, _, err = cli(['-m', 'eval', '-c', 'cartpole_impala.py', '--load', path], capsys)
    assert one_line_error(code, err)


@pytest.mark.parametrize('body, fragment', [
    ("import sys\nsys.exit(0)\n", 'sys.exit'),
    ("def f():\n    return f()\nf()\n", 'recursed'),
    ("x = []\nx.append(x)\nmain_config = dict(env=dict(env_kwargs=dict(a=x)))\n"
     "create_config = dict(policy=dict(type='impala'))\n", 'itself'),
    ("main_config = dict(env=dict(env_kwargs=dict(f=lambda: 0)))\ncreate_config = dict(policy=dict(type='impala'))\n",
     'plain data'),
])
def test_a_config_file_that_exits_recurses_or_holds_objects_is_one_line(tmp_path, monkeypatch, capsys, body, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'bad.py').write_text(body)
    code, _, err = cli(['-c', 'bad.py'], capsys)
    assert one_line_error(code, err) and fragment in err, err
    assert os.listdir(tmp_path) == ['bad.py']


# ---- user-code errors ----------------------------------------------------------------------------------
def test_an_env_error_names_the_env_the_seed_and_the_user_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', faulty_config(tmp_path, 'raise', at_step=5), '--max-env-step', '400'], capsys)
    assert one_line_error(code, err)
    assert re.search(r'(collector|evaluator) env 0 \(seed \d+\)', err) and 'the simulator diverged' in err
    assert 'faulty_envs.py:' in err and 'in step' in err and '--debug' in err


def test_an_env_failing_before_the_first_update_says_the_new_runs_folder_was_removed(tmp_path, monkeypatch, capsys):
    """The run had started (its first evaluation shown) and trained nothing: its folder goes, as a failed start's
    does, and the line now says so (the folder vanished without a word)."""
    monkeypatch.chdir(tmp_path)
    exp = tmp_path / 'exp'
    code, _, err = cli(['-c', faulty_config(tmp_path, 'raise', at_step=5), '--max-env-step', '400', '--exp-dir', exp],
                       capsys)
    assert one_line_error(code, err) and 'the simulator diverged' in err
    assert err.rstrip().endswith(f"(the run had trained nothing, so its new folder {exp} was removed: the same "
                                 f"command starts it again)"), err
    assert not exp.exists()


# ---- non-finite numbers ---------------------------------------------------------------------------------
@pytest.mark.parametrize('fault, what', [('nan_obs', 'observation'), ('inf_reward', 'reward')])
def test_nan_or_inf_from_an_env_stops_the_run_naming_env_and_seed(tmp_path, monkeypatch, capsys, fault, what):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', faulty_config(tmp_path, fault, at_step=30), '--max-env-step', '400',
                        '--exp-dir', tmp_path / 'exp'], capsys)
    assert one_line_error(code, err) and f'NaN/inf {what}' in err and '(seed' in err, err
    state = torch.load(tmp_path / 'exp' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert all(torch.isfinite(t).all() for t in state['policy']['model'].values())


@pytest.mark.parametrize('fault, policy, args', [
    ('raise', 'impala', []), ('raise', 'acer', ['env.manager=async']), ('nan_obs', 'a2c', []),
    ('inf_reward', 'ppo', ['policy.learn.batch_size=2']), ('raise', 'impala', ['-m', 'parallel', 'parallel.max_restarts=0'])])
def test_an_env_failing_mid_run_writes_the_final_checkpoint_first_and_resume_continues(tmp_path, monkeypatch, capsys,
                                                                                       fault, policy, args):
    """A real collector env raising (or giving NaN/inf) at its 150th step, no periodic checkpoints: the one-line error
    says the final checkpoint was written, the checkpoint holds the steps up to the failure (it held only the start:
    the learner is sound, only the env failed), and --resume continues from there with fresh envs (a checkpoint
    taken mid-collection resets them). Evaluations only at the start: the evaluator's env must not fail first."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', faulty_config(tmp_path, fault, at_step=150, policy=policy), '--exp-dir', 'exp',
                        '--max-env-step', '100000', 'policy.learn.learner.save_ckpt_freq=0',
                        'policy.eval.evaluator.eval_freq=1000000', *args], capsys)
    assert one_line_error(code, err) and 'the final checkpoint was written first' in err, err
    assert err.rstrip().endswith('continues from there once the cause is fixed'), err  # not as if it could not recur
    assert err.startswith('acframe: error: collector env ') or re.match(r'acframe: error: actor \d failed', err), err
    state = torch.load(tmp_path / 'exp' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['env_step'] >= 200 and state['train_iter'] > 0, (state['env_step'], state['train_iter'])
    assert f"env step {state['env_step']}," in err
    # the command to run, as it is: the modules its config lists named (a resume without them is refused)
    assert '--resume exp --import fixtures.faulty_envs continues from there' in err, err
    assert all(torch.isfinite(t).all() for t in state['policy']['model'].values())
    # the run's record so far, as an interrupted run writes it, with what stopped it
    summary = json.loads((tmp_path / 'exp' / 'summary.json').read_text())
    assert summary['env_steps'] == state['env_step'] and summary['train_iters'] == state['train_iter']
    assert summary['stopped_by'] == err[len('acframe: error: '):].split('; the final checkpoint')[0], summary
    if 'parallel.max_restarts=0' in args:  # it gave up: no restart was made (it said 1, the failure)
        assert summary['actor_restarts'] == 0 and 'giving up after 0 restarts' in err, summary
    code, _, err = cli(['--resume', 'exp', '--import', 'fixtures.faulty_envs', '-q',
                        '--max-env-step', str(state['env_step'] + 40)], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / 'exp' / 'summary.json').read_text())['env_steps'] >= state['env_step'] + 40


@pytest.mark.parametrize('args', [[], ['-m', 'parallel']])
def test_an_env_whose_mask_leaves_no_legal_action_stops_the_run_in_every_pipeline(tmp_path, monkeypatch, capsys, args):
    """docs/masks.md: such a step stops the run. A parallel actor was restarted instead (the restarted env breaks the
    same rule again), and a run whose budget ended before parallel.max_restarts was spent finished with exit 0."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', faulty_config(tmp_path, 'obs_no_legal_action', at_step=150), '--exp-dir', 'exp',
                        '--max-env-step', '100000', 'policy.eval.evaluator.eval_freq=1000000', *args], capsys)
    assert one_line_error(code, err) and 'has no legal action at step ' in err, err
    assert 'the final checkpoint was written first' in err and 'restart' not in err, err
    summary = json.loads((tmp_path / 'exp' / 'summary.json').read_text())
    assert summary.get('actor_restarts', 0) == 0 and 'has no legal action' in summary['stopped_by'], summary


def test_an_inf_eval_return_never_marks_a_run_solved(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', faulty_config(tmp_path, 'inf_reward', at_step=1), '--max-env-step', '400',
                        '--exp-dir', tmp_path / 'exp'], capsys)
    assert code == 2
    assert not (tmp_path / 'exp' / 'summary.json').exists() or not json.loads((tmp_path / 'exp' / 'summary.json').read_text())['solved']


@pytest.mark.parametrize('on_nonfinite', ['error', 'skip_update'])
def test_a_diverging_loss_never_reaches_the_weights_or_a_checkpoint(tmp_path, monkeypatch, capsys, on_nonfinite):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(['-c', 'cartpole_a2c.py', '--exp-dir', tmp_path / 'exp', '--max-env-step', '2000', *TINY[:1],
                        'policy.learn.learning_rate=1e30', f'policy.learn.on_nonfinite={on_nonfinite}'], capsys)
    state = torch.load(tmp_path / 'exp' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert all(torch.isfinite(t).all() for t in state['policy']['model'].values())
    if on_nonfinite == 'error':
        assert one_line_error(code, err) and 'NaN/inf' in err or 'the loss is' in err or 'gradient norm' in err, err
    else:  # the updates dropped are counted: a run of skipped updates no longer reads as trained
        summary = json.loads((tmp_path / 'exp' / 'summary.json').read_text())
        assert 0 < summary['skipped_updates'] <= summary['train_iters'], summary


# ---- budgets --------------------------------------------------------------------------------------------
@pytest.mark.parametrize('config', ['cartpole_impala.py', 'cartpole_a2c.py'])
def test_max_env_step_stops_within_one_step_per_env(tmp_path, config):
    from acframe import serial_pipeline, serial_pipeline_onpolicy
    pipeline = serial_pipeline if 'impala' in config else serial_pipeline_onpolicy
    # IMPALA: a whole segment (8 envs x 4 unrolls of 16 steps) is stored and trained on, then the last one is cut
    n_sample = 32 if 'impala' in config else 256
    cfg = compile_config(config, ['env.stop_value=1e9', 'env.collector_env_num=8', f'policy.collect.n_sample={n_sample}'])
    policy = pipeline(cfg, exp_dir=str(tmp_path / 'exp'), max_env_step=1000, progress=False)
    assert 1000 <= policy.summary['env_steps'] < 1000 + 8


# ---- signals ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize('sig, console_gone', [(signal.SIGTERM, False), (signal.SIGHUP, True), (signal.SIGQUIT, False)])
def test_sigterm_sighup_and_sigquit_write_the_final_checkpoint_and_summary(tmp_path, sig, console_gone):
    """SIGHUP comes when the terminal closes: the console is gone too (its pipes closed here), and the run still
    writes its final checkpoint and summary and exits 128 + the signal's number."""
    exp_dir = tmp_path / 'exp'
    proc = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_impala.py', '--exp-dir', str(exp_dir),
                             'env.stop_value=1e9', 'policy.learn.learner.save_ckpt_freq=0'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until_training(exp_dir)
    if console_gone:
        proc.stdout.close()
        proc.stderr.close()
    proc.send_signal(sig)
    if console_gone:
        proc.wait(timeout=60)
        err = ''
    else:
        _, err = proc.communicate(timeout=60)
        assert err.strip().splitlines()[-1] == f'acframe: terminated ({signal.Signals(sig).name})', err
    assert proc.returncode == 128 + sig, err
    summary = json.loads((exp_dir / 'summary.json').read_text())
    assert summary['interrupted'] and summary['env_steps'] > 0
    state = torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['env_step'] == summary['env_steps']


@pytest.mark.parametrize('manager', ['sync', 'async'])
def test_an_env_whose_close_hangs_does_not_keep_a_finished_run_alive(tmp_path, manager):
    config = faulty_config(tmp_path, 'hang_close' if manager == 'sync' else 'hang_close_in_subprocess', at_step=10 ** 9)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', str(config), '--exp-dir', str(tmp_path / 'run'),
                           '--max-env-step', '200', '-q', 'env.step_timeout_s=2', f'env.manager={manager}'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=HERE))
    assert done.returncode == 0, done.stderr
    assert time.perf_counter() - start < 60
    assert "close() did not return within 2 s" in done.stderr
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['env_steps'] >= 200


def test_a_run_is_resumable_from_its_first_moments(tmp_path):
    from acframe.entry.serial import SerialRun
    cfg = compile_config('cartpole_impala.py', TINY[1:])
    run = SerialRun(cfg, str(tmp_path / 'exp'), progress=False)
    run.close()  # killed right after start-up: the checkpoint written at start is there
    assert (tmp_path / 'exp' / 'ckpt' / 'ckpt_latest.pth').is_file()
    assert main(['--resume', str(tmp_path / 'exp'), '--max-env-step', '64', '-q']) == 0


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 220 KiB tmpfs (room for the run's first checkpoint, not for the first and a second side by side)."""
    mount = tmp_path / 'disk'
    mount.mkdir()
    with tmpfs(mount, '220k') as refused:
        if refused:
            pytest.skip(refused)
        yield mount


CHECKPOINTING_RUN = ['-c', 'cartpole_a2c.py', '--exp-dir', 'run', '--max-env-step', '2000', '-q', 'env.stop_value=1e9']


def _one_error_line_keeping_the_previous_checkpoint(done, run_dir):
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith('acframe: warning: ')]
    assert done.returncode == 2 and len(lines) == 1 and 'Traceback' not in done.stderr, done.stderr
    assert 'cannot write the checkpoint' in lines[0] and str(os.path.join('run', 'ckpt', 'ckpt_latest.pth')) in lines[0]
    torch.load(run_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)  # the previous checkpoint is whole
    return lines[0]


def test_a_real_full_disk_is_one_line_naming_the_checkpoint_and_the_run_resumes_once_there_is_room(small_tmpfs):
    """torch.save on a full filesystem raises RuntimeError ('unexpected pos'), not OSError; tensorboard's own
    flush then fails too: one error line (and one warning), no traceback, the previous checkpoint intact."""
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', *CHECKPOINTING_RUN], cwd=small_tmpfs,
                          capture_output=True, text=True, timeout=300)
    assert 'No space left on device' in _one_error_line_keeping_the_previous_checkpoint(done, small_tmpfs / 'run')
    subprocess.run(['mount', '-o', 'remount,size=8m', str(small_tmpfs)], check=True)
    again = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', 'run', '--max-env-step', '2400', '-q'],
                           cwd=small_tmpfs, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr


def test_a_new_runs_first_checkpoint_on_a_full_disk_asks_for_the_command_again_not_a_resume(tmp_path):
    """A real 40 KiB tmpfs: the config files fit, the start's checkpoint does not; the new folder goes, so there is
    nothing to resume (the line said 'the previous one is intact ... then --resume')."""
    mount = tmp_path / 'disk'
    mount.mkdir()
    with tmpfs(mount, '40k') as refused:
        if refused:
            pytest.skip(refused)
        done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', 'run',
                               '--max-env-step', '300', '-q'], cwd=mount, capture_output=True, text=True, timeout=300)
        lines = [line for line in done.stderr.strip().splitlines() if not line.startswith('acframe: warning: ')]
        assert done.returncode == 2 and lines == [
            "acframe: error: cannot write the checkpoint run/ckpt/ckpt_latest.pth: No space left on device; free disk "
            "space or fix the folder's permissions, then run the same command again"], done.stderr
        assert os.listdir(mount) == []


def _tree(folder):
    """Every file under ``folder`` with its size and modification time, and every folder (a run's lock file aside:
    its holder line)."""
    return {os.path.relpath(os.path.join(d, n), folder): os.stat(os.path.join(d, n))[6:9:2] if n else 'folder'
            for d, _, names in os.walk(folder) for n in names + [''] if n != '.acframe.lock'}


def test_every_command_on_a_full_disk_is_one_line_and_leaves_the_disk_as_it_was(small_tmpfs, monkeypatch, capsys):
    """A real full tmpfs holding a finished run: a new run (and one in new nested folders), --resume, -m eval,
    -m plot, -m export (TorchScript's zip writer used to abort the process: run in a subprocess) and -m tune each
    end in one line naming the file and exit 2, and leave no folder, temporary file or half a file behind."""
    subprocess.run(['mount', '-o', 'remount,size=8m', str(small_tmpfs)], check=True)
    monkeypatch.chdir(small_tmpfs)
    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', 'run', '--max-env-step', '300', '-q']) == 0
    with open('fill', 'wb', buffering=0) as f:  # every block of the disk taken
        with pytest.raises(OSError):
            while True:
                f.write(b'\0' * 4096)
    before = _tree(small_tmpfs)
    capsys.readouterr()
    commands = [['-c', 'cartpole_a2c.py', '--exp-dir', 'new', '-q'], ['-c', 'cartpole_a2c.py', '--exp-dir', 'a/b/new'],
                ['--resume', 'run', '--max-env-step', '600', '-q'], ['-m', 'eval', '--load', 'run', '--episodes', '1'],
                ['-m', 'plot', 'run'], ['-m', 'export', '--load', 'run', '--out', 'run.onnx'],
                ['-m', 'tune', '-c', 'cartpole_a2c.py', '--trials', '1', '--budget', '300', '--study-dir', 'study']]
    for args in commands:
        code = main(args)
        err = capsys.readouterr().err
        assert one_line_error(code, err) and 'cannot write ' in err and 'No space left on device' in err, (args, err)
        assert _tree(small_tmpfs) == before, args
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'export', '--load', 'run', '--out', 'run.pt'],
                          cwd=small_tmpfs, capture_output=True, text=True, timeout=300)
    assert one_line_error(done.returncode, done.stderr) and 'cannot write run.pt: No space left' in done.stderr, done.stderr
    assert _tree(small_tmpfs) == before


def test_a_file_size_limit_is_one_line_naming_the_checkpoint(tmp_path):
    import resource

    def limit():  # ulimit -f: room for the first checkpoint, not for one with the optimizer's state
        resource.setrlimit(resource.RLIMIT_FSIZE, (90 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', *CHECKPOINTING_RUN], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, preexec_fn=limit)
    assert 'File too large' in _one_error_line_keeping_the_previous_checkpoint(done, tmp_path / 'run')




def _run_user_code(tmp_path, module: str, config: str):
    (tmp_path / 'user_code').mkdir()
    (tmp_path / 'user_code' / 'my_plugin.py').write_text(module)
    (tmp_path / 'cfg.py').write_text(config)
    return subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cfg.py', '-q', '--exp-dir', 'run'], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path / 'user_code')))


def test_a_user_policy_whose_learn_raises_is_one_line_naming_its_file_and_line(tmp_path):
    done = _run_user_code(tmp_path, (
        "from acframe import POLICY_REGISTRY\n"
        "from acframe.policy.a2c import A2CPolicy\n\n\n"
        "@POLICY_REGISTRY.register('broken_a2c')\n"
        "class BrokenA2C(A2CPolicy):\n"
        "    def _forward_learn(self, batch):\n"
        "        raise ValueError('my loss is broken')\n"),
        "main_config = dict(max_env_step=400, env=dict(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1))\n"
        "create_config = dict(policy=dict(type='broken_a2c'), import_names=['my_plugin'])\n")
    assert done.returncode == 2 and done.stderr.count('\n') == 1 and 'Traceback' not in done.stderr, done.stderr
    assert "learn mode raised ValueError: my loss is broken" in done.stderr
    assert f"{tmp_path / 'user_code' / 'my_plugin.py'}:8 in _forward_learn" in done.stderr


def test_an_env_whose_box_has_low_above_high_is_one_line_naming_its_file_and_line(tmp_path):
    done = _run_user_code(tmp_path, (
        "import gymnasium as gym\nimport numpy as np\n\n\n"
        "class BadBox(gym.Env):\n"
        "    def __init__(self):\n"
        "        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)\n"
        "        self.action_space = gym.spaces.Box(np.ones(1, np.float32), -np.ones(1, np.float32))\n\n\n"
        "gym.register('BadBox-v0', entry_point=BadBox, max_episode_steps=10)\n"),
        "main_config = dict(env=dict(env_id='BadBox-v0', stop_value=None), max_env_step=200)\n"
        "create_config = dict(policy=dict(type='ppo'), import_names=['my_plugin'])\n")
    assert done.returncode == 2 and done.stderr.count('\n') == 1 and 'Traceback' not in done.stderr, done.stderr
    assert 'collector env 0 (seed 0) raised ValueError in construction: Box all low values' in done.stderr
    assert f"{tmp_path / 'user_code' / 'my_plugin.py'}:8 in __init__" in done.stderr
    assert not (tmp_path / 'run').exists()


@pytest.mark.parametrize('override, fragment', [
    ('policy.other.replay_buffer.replay_buffer_size=20000000', 'lower replay_buffer_size'),
    ('policy.model.encoder_hidden_size_list=[20000,20000]', "make policy.model's layers smaller")])
def test_a_memory_limit_is_checked_before_the_buffer_or_model_is_allocated(tmp_path, override, fragment):
    """Under ``ulimit -v`` (RLIMIT_AS) the memory available is the room left under the limit: a buffer or model
    that would not fit is one line before anything is allocated or written (it was an allocator traceback)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2 ** 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_impala.py', '--exp-dir', 'run', '-q',
                           override], cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert one_line_error(done.returncode, done.stderr) and fragment in done.stderr, done.stderr
    assert not (tmp_path / 'run').exists()


@pytest.mark.parametrize('save_ckpt_freq', [20, 400])
def test_a_run_folder_moved_mid_run_is_one_line_and_no_stub_is_left(tmp_path, save_ckpt_freq):
    """Renaming the folder of a running run: the next checkpoint is one line naming it; nothing recreates the old
    path as a stub (a checkpoint and a summary without config.json; with checkpoints seconds apart, the log backends
    notice first: they must not recreate RUN/log either), and the moved folder resumes."""
    proc = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_impala.py', '--exp-dir', 'run',
                             'env.stop_value=1e9', f'policy.learn.learner.save_ckpt_freq={save_ckpt_freq}', '-q',
                             "logger.backends=['tensorboard', 'jsonl']"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until_training(tmp_path / 'run')
    (tmp_path / 'run').rename(tmp_path / 'moved')
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.strip().splitlines() if not line.startswith('acframe: warning: ')]
    assert proc.returncode == 2 and len(lines) == 1 and 'is gone' in lines[0], err
    assert not (tmp_path / 'run').exists()
    again = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', 'moved', '--max-env-step', '3000', '-q'],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize('pipeline', ['serial, async envs', 'parallel, sync envs'])
def test_a_run_stopped_and_continued_is_not_killed_by_the_step_watchdog(tmp_path, pipeline):
    """SIGSTOP to the whole run (Ctrl-Z, a suspended laptop or VM) for longer than env.step_timeout_s, then SIGCONT:
    the time stopped is not an env's, so the run goes on (it was killed, blaming a healthy env). The env is slow
    (0.1 s a step), so the run is waiting on a step when it is stopped: the async manager's wait in the serial
    pipeline, the SIGALRM watchdog of a parallel actor's in-process envs."""
    config = faulty_config(tmp_path, 'slow', at_step=0)
    args = ['-c', str(config), '--exp-dir', str(tmp_path / 'run'), '-q', '--max-env-step', '80',
            'env.step_timeout_s=1']
    args += ['env.manager=async'] if pipeline.startswith('serial') else ['-m', 'parallel', 'parallel.actor_num=1']
    proc = subprocess.Popen([sys.executable, '-m', 'acframe.cli', *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=HERE))
    wait_until_training(tmp_path / 'run')
    os.killpg(proc.pid, signal.SIGSTOP)
    time.sleep(2.5)
    os.killpg(proc.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['env_steps'] >= 80


@pytest.mark.parametrize('max_restarts', [1, 0])
def test_a_parallel_actor_stopped_with_sigstop_is_restarted_or_named(tmp_path, max_restarts):
    """A real SIGSTOP to one actor process of a sync parallel run (the learner waits for every actor's segment: it
    waited forever): its heartbeat stops, and within parallel.heartbeat_timeout_s it is killed and restarted (the
    run finishes), or, with no restarts left, the run ends in one line naming the actor."""
    started = time.time()
    proc, actor, err = stop_an_actor(tmp_path, [f'parallel.max_restarts={max_restarts}'])
    assert time.time() - started < 60
    assert 'Traceback' not in err, err
    named = f'actor 1 (pid {actor}) was stopped (SIGSTOP'
    if max_restarts:
        assert proc.returncode == 0, err
        assert named in err and 'restarting it (restart 1 of at most 1)' in err, err
        assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['env_steps'] >= 3000
    else:
        lines = [line for line in err.strip().splitlines() if not line.startswith('acframe: warning: ')]
        assert proc.returncode == 2 and len(lines) == 1 and named in lines[0], err
        assert 'parallel.max_restarts' in lines[0]


def _with_fixtures():
    """The environment of a subprocess that imports tests/fixtures, and acframe from where this process does."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [HERE, os.environ.get('PYTHONPATH')])))


def test_the_step_watchdog_writes_the_final_checkpoint_before_it_ends_a_stuck_run(tmp_path):
    """An env whose step really never returns (async manager, env.step_timeout_s=1), no periodic checkpoints: the
    watchdog ends the run in one line, and the checkpoint holds the progress up to the stuck step (it held only the
    start), so --resume continues from there."""
    config = faulty_config(tmp_path, 'hang', at_step=150)
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', str(config), '--exp-dir', 'run', '-q',
                           '--max-env-step', '100000', 'env.manager=async', 'env.step_timeout_s=1',
                           'policy.learn.learner.save_ckpt_freq=0'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_with_fixtures())
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith('acframe: warning: ')]
    assert done.returncode == 2 and len(lines) == 1 and 'env.step_timeout_s=1' in lines[0], done.stderr
    assert 'the final checkpoint was written first' in lines[0]
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['env_step'] >= 200 and state['train_iter'] > 0, (state['env_step'], state['train_iter'])
    assert f"env step {state['env_step']}," in lines[0]
    again = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', 'run', '-q', '--import', 'fixtures.faulty_envs',
                            '--max-env-step', str(state['env_step'] + 20)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_with_fixtures())
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['env_steps'] >= state['env_step'] + 20


def test_log_files_moved_deleted_or_replaced_mid_run_are_reopened_fresh_with_one_warning_each(tmp_path):
    """Really under a running run: log/scalars.jsonl rotated (renamed to scalars.jsonl.1, and someone else's file put
    at its name) and the TensorBoard event file deleted. The run goes on, warns once per file, and logs into fresh
    files: nothing into the file that took the name, nothing into the rotated one after the move was noticed."""
    proc = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_impala.py', '--exp-dir', 'run', '-q',
                             'env.stop_value=1e9', "logger.backends=['tensorboard', 'jsonl']",
                             'logger.jsonl.flush_every_s=0'],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / 'run' / 'log'
    wait_until_training(tmp_path / 'run', settle_s=1.5)
    events = [p for p in log.iterdir() if p.name.startswith('events.out.tfevents.')]
    assert len(events) == 1 and (log / 'scalars.jsonl').stat().st_size > 0
    (log / 'scalars.jsonl').rename(log / 'scalars.jsonl.1')
    (log / 'scalars.jsonl').write_text('theirs\n')
    events[0].unlink()
    moved_at = time.time()
    time.sleep(3.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and 'Traceback' not in err, err
    warnings = [line for line in err.splitlines() if line.startswith('acframe: warning: the log file')]
    assert len(warnings) == 2, err
    assert any('scalars.jsonl was replaced by another file' in w for w in warnings), err
    assert any(f'{events[0].name} was moved or deleted' in w for w in warnings), err
    assert (log / 'scalars.jsonl').read_text() == 'theirs\n'
    from acframe.logs import read_event_file, read_jsonl_scalars, read_scalars
    rotated = read_jsonl_scalars(log / 'scalars.jsonl.1')
    fresh_jsonl = [read_jsonl_scalars(p) for p in log.glob('scalars-*.jsonl')]
    assert len(fresh_jsonl) == 1 and fresh_jsonl[0], list(log.iterdir())
    assert max(s.wall_time for s in rotated) < moved_at + FileWatch.every_s + 0.5  # noticed within a second
    assert max(s.wall_time for s in rotated) <= min(s.wall_time for s in fresh_jsonl[0])
    fresh_events = [p for p in log.iterdir() if p.name.startswith('events.out.tfevents.')]
    assert len(fresh_events) == 1 and fresh_events[0] != events[0] and read_event_file(fresh_events[0])
    assert read_scalars(str(log))


def test_an_episodic_buffer_saved_in_the_checkpoint_takes_another_replay_window_on_resume(tmp_path, capsys):
    """ACER's episodic buffer stores transitions: a resume may change its unroll_len (its replay window)."""
    run = tmp_path / 'acer'
    assert main(['-c', 'cartpole_acer.py', '--exp-dir', str(run), '--max-env-step', '400', '-q', 'env.stop_value=None',
                 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                 'policy.other.replay_buffer.save_in_checkpoint=True']) == 0
    code, _, err = cli(['--resume', run, '--accept-config-change', '--max-env-step', '800', '-q',
                        'policy.other.replay_buffer.unroll_len=10'], capsys)
    assert code == 0, err
