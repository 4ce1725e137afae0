"""The seams for loggers and hooks: a user's backend and hook, in the user's own module, named in a config file and
run by the CLI — no core edit, no monkeypatching.

The module (written below into a temp folder on ``PYTHONPATH``, listed in ``import_names``) registers a CSV logger
backend with its own options (``logger.options``), a backend that fails mid-run (a tracker that became unreachable),
a backend whose package is missing, a learner hook with keyword arguments from the config, and collector and
evaluator event hooks (``policy.collect.hooks``, ``policy.eval.evaluator.hooks``) that record every event they get. Bad input — an
unknown backend, a missing extra (W&B itself, made unimportable), an MLflow store that cannot be written, an unknown
hook — is one line, exit 2, and no run folder.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from acframe.logs import read_scalars

USER_MODULE = '''
import json
import os

from acframe import HOOK_REGISTRY, LOGGER_REGISTRY
from acframe.loggers import LoggerBackend
from acframe.worker import CollectorHook, EvaluatorHook, LearnerHook


@LOGGER_REGISTRY.register('csv_seam')
class CsvLogger(LoggerBackend):
    """tag,step,value lines in a file of the run's log folder named by logger.options.csv_seam.file."""

    def __init__(self, run):
        super().__init__(run)
        self.file = open(os.path.join(run.log_dir, run.cfg.logger.options.csv_seam.file), 'a')

    def log_scalar(self, tag, value, step, wall_time):
        self.file.write(f"{tag},{step},{value!r}\\n")

    def close(self):
        self.file.close()


@LOGGER_REGISTRY.register('unreachable_seam')
class Unreachable(LoggerBackend):
    """A tracker that goes away after two scalars."""

    def __init__(self, run):
        super().__init__(run)
        self.sent = 0

    def log_scalar(self, tag, value, step, wall_time):
        if self.sent == 2:
            raise ConnectionError('tracker unreachable')
        self.sent += 1


@LOGGER_REGISTRY.register('silent_seam')
class Silent(LoggerBackend):
    """A tracker whose server stops answering at the third scalar: it sends the request and waits for the reply."""

    def __init__(self, run):
        super().__init__(run)
        self.port, self.sent = run.cfg.logger.options.silent_seam.port, 0

    def log_scalar(self, tag, value, step, wall_time):
        self.sent += 1
        if self.sent == 3:
            import socket
            conn = socket.create_connection(('127.0.0.1', self.port))
            conn.sendall(b'POST /log HTTP/1.1\\r\\n\\r\\n')
            conn.recv(1)


@LOGGER_REGISTRY.register('needs_extra_seam')
class NeedsExtra(LoggerBackend):
    requires = 'acframe_seam_missing_package'
    extra = 'seamextra'

    def log_scalar(self, tag, value, step, wall_time):
        pass


@HOOK_REGISTRY.register('eval_recorder_seam')
class EvalRecorder(LearnerHook):
    """Each evaluation, with the updates seen since the run (re)started, as a JSON line in the run folder."""

    def __init__(self, file):
        self.file, self.updates = file, 0

    def after_iter(self, learner, info):
        self.updates += 1

    def after_eval(self, learner, result):
        with open(os.path.join(learner.exp_dir, self.file), 'a') as f:
            f.write(json.dumps({**result, 'updates_seen': self.updates}) + '\\n')


@HOOK_REGISTRY.register('event_recorder_seam')
class EventRecorder(CollectorHook, EvaluatorHook):
    """Every collector and evaluator event it is given, as a JSON line in the file named in the config."""

    def __init__(self, file):
        self.file = file

    def _write(self, kind, result):
        with open(self.file, 'a') as f:
            f.write(json.dumps({'kind': kind, **result}) + '\\n')

    def after_collect(self, result):
        self._write('collect', result)

    def after_evaluate(self, result):
        self._write('eval', result)


@LOGGER_REGISTRY.register('old_signature_seam')
class OldSignature(LoggerBackend):
    def log_scalar(self, tag, value, step):  # (no wall_time: it failed at the first scalar, dropped)
        pass


@LOGGER_REGISTRY.register('no_run_seam')
class NoRun(LoggerBackend):
    def __init__(self):  # (no run: it failed to open, dropped)
        pass

    def log_scalar(self, tag, value, step, wall_time):
        pass


@LOGGER_REGISTRY.register('odd_but_fine_seam')
class OddButFine(LoggerBackend):
    """Methods of other forms that take what the run passes: refused by the first signature check."""

    def __init__(self, run, *extra, **options):
        super().__init__(run)

    def log_scalar(self, *args, **kwargs):
        pass

    @staticmethod
    def close():
        pass

    @classmethod
    def run_record(cls):
        return None


@HOOK_REGISTRY.register('stop_at_iter_seam')
class StopAtIter(LearnerHook):
    """An early stop of the user's: the run ends once `at` gradient steps are made."""

    def __init__(self, at):
        self.at = at

    def after_iter(self, learner, info):
        if learner.train_iter >= self.at:
            from acframe import StopTraining
            raise StopTraining(f'{self.at} steps are enough')


@HOOK_REGISTRY.register('stop_on_rank1_seam')
class StopOnRank1(LearnerHook):
    """A data-parallel rank > 0 (its learner writes no folder) asks to stop: each rank's hooks see its own numbers."""

    def after_iter(self, learner, info):
        if learner.exp_dir is None and learner.train_iter >= 10:
            from acframe import StopTraining
            raise StopTraining('rank 1 has seen enough')


@HOOK_REGISTRY.register('stop_at_the_end_seam')
class StopAtTheEnd(EvaluatorHook):
    """Raises at every evaluation from env step 1000 on: with a budget of 1000, only at the final one."""

    def after_evaluate(self, result):
        if result['env_step'] >= 1000:
            from acframe import StopTraining
            raise StopTraining('too late')


@HOOK_REGISTRY.register('stop_after_collect_seam')
class StopAfterCollect(CollectorHook):
    def after_collect(self, result):
        from acframe import StopTraining
        if result['env_step'] >= 600:
            raise StopTraining()


@HOOK_REGISTRY.register('lr_cap_seam')
class LrCap(LearnerHook):
    """A rule of the user's for the config, declared by the hook: no learning rate above its cap."""

    def __init__(self, cap):
        self.cap = cap

    def check_run_config(self, cfg):
        from acframe.errors import ConfigError
        if cfg.policy.learn.learning_rate > self.cap:
            raise ConfigError(f"policy.learn.learning_rate={cfg.policy.learn.learning_rate} is above the cap "
                              f"{self.cap}; lower it")


@HOOK_REGISTRY.register('broken_check_seam')
class BrokenCheck(CollectorHook):
    def check_run_config(self, cfg):
        return cfg.policy.no_such_block.value


@HOOK_REGISTRY.register('folder_recorder_seam')
class FolderRecorder(EvaluatorHook):
    """Each evaluation's return as a line of a file in the run folder, which before_run tells it (an evaluator hook is
    given no learner to read it from)."""

    def __init__(self, file='returns.txt', every=1):
        self.file, self.every, self.path, self.seen = file, every, None, 0

    def before_run(self, exp_dir):
        self.path = os.path.join(exp_dir, self.file)

    def after_evaluate(self, result):
        self.seen += 1
        if self.seen % self.every == 0:
            with open(self.path, 'a') as f:
                f.write(f"{result['env_step']} {result['return_mean']}\\n")


@HOOK_REGISTRY.register('before_run_seam')
class BeforeRun(CollectorHook):
    """What before_run was told, a line per process, in the file named in the config (an absolute path)."""

    def __init__(self, file):
        self.file = file

    def before_run(self, exp_dir):
        with open(self.file, 'a') as f:
            f.write(json.dumps(exp_dir) + '\\n')


@HOOK_REGISTRY.register('exit_seam')
class Exit(LearnerHook):
    def after_iter(self, learner, info):
        import sys
        sys.exit(0)


@HOOK_REGISTRY.register('boom_at_iter_seam')
class BoomAtIter(LearnerHook):
    """A user's hook with a bug that shows at gradient step `at`."""

    def __init__(self, at):
        self.at = at

    def after_iter(self, learner, info):
        if learner.train_iter >= self.at:
            raise ValueError(f'boom at {learner.train_iter}')
'''

CONFIG = '''
from dizoo_configs.cartpole_a2c import main_config, create_config

main_config['exp_name'] = 'logger_seam'
main_config['env'].update(collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, n_confirm_episode=0,
                          stop_value=10000)
main_config['policy'].setdefault('eval', {})['evaluator'] = dict(
    eval_freq=10, hooks=[dict(type='event_recorder_seam', file=EVENTS)])
main_config['policy'].setdefault('learn', {})['learner'] = dict(
    log_freq=5, hooks=[dict(type='eval_recorder_seam', file='evals.jsonl'), dict(type='lr_cap_seam', cap=0.1)])
main_config['policy'].setdefault('collect', {})['hooks'] = [dict(type='event_recorder_seam', file=EVENTS)]
main_config['logger'] = dict(backends=BACKENDS, options=dict(csv_seam=dict(file='scalars.csv')))
main_config['import_names'] = ['user_trackers']
'''


@pytest.fixture
def user_module(tmp_path):
    folder = tmp_path / 'user_code'
    folder.mkdir()
    (folder / 'user_trackers.py').write_text(USER_MODULE)
    return folder


def write_config(tmp_path, backends, name='cfg.py', base='cartpole_a2c'):
    path = tmp_path / name
    path.write_text(CONFIG.replace('BACKENDS', repr(backends)).replace('EVENTS', repr(str(tmp_path / 'events.jsonl')))
                    .replace('cartpole_a2c', base))
    return path


def check_event_hooks(tmp_path, run, exact_returns):
    """The collector hook saw every env step and finished episode of the run, the evaluator hook every evaluation
    (as the evaluator's scalars record it); ``exact_returns``: the run logs each episode's return (parallel)."""
    with open(tmp_path / 'events.jsonl') as f:
        events = [json.loads(line) for line in f]
    collects = [e for e in events if e['kind'] == 'collect']
    evals = [e for e in events if e['kind'] == 'eval']
    with open(run / 'summary.json') as f:
        env_steps = json.load(f)['env_steps']
    assert sum(c['env_steps'] for c in collects) == env_steps
    assert [c['env_step'] for c in collects] == list(np.cumsum([c['env_steps'] for c in collects]))
    returns = [r for c in collects for r in c['episode_returns']]
    assert len(returns) == sum(len(c['episode_lengths']) for c in collects) > 0
    scalars = read_scalars(str(run / 'log'))
    if exact_returns:
        logged = [s.value for s in scalars if s.tag == 'collector/episode_return']
        assert sorted(np.float32(returns)) == sorted(np.float32(logged))
    else:  # logged once per log period: the episodes of the periods logged so far
        logged = sum(int(s.value) for s in scalars if s.tag == 'collector/episodes')
        assert 0 < logged <= len(returns)
    by_iter = [s for s in scalars if s.tag == 'evaluator/return_mean_by_iter']
    assert [e['train_iter'] for e in evals] == [s.step for s in by_iter] and len(evals) >= 2
    assert [e['return_mean'] for e in evals] == pytest.approx([s.value for s in by_iter], rel=1e-6)
    assert all(len(e['returns']) == 2 and np.mean(e['returns']) == pytest.approx(e['return_mean']) for e in evals)


def cli(user_module, *args, prelude=''):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(user_module), os.environ.get('PYTHONPATH', '')]))
    command = [sys.executable, '-c', f"{prelude}import sys; from acframe.cli import main; sys.exit(main(sys.argv[1:]))",
               *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize('mode', [[], ['-m', 'parallel', '--backend', 'inline', 'parallel.actor_num=2']],
                         ids=['serial_onpolicy', 'parallel'])
def test_a_user_backend_and_hook_from_the_cli_and_a_failing_backend_dropped(tmp_path, user_module, mode):
    cfg = write_config(tmp_path, ['tensorboard', 'unreachable_seam', 'csv_seam'])
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '1600', '-q', *mode)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith('acframe: warning:')]
    assert len(warnings) == 1 and "logger backend 'unreachable_seam' failed (ConnectionError" in warnings[0]
    # the user's backend got every scalar TensorBoard got, and training went on to its budget
    expected = sorted((s.tag, s.step, float(np.float32(s.value))) for s in read_scalars(str(run / 'log')))
    with open(run / 'log' / 'scalars.csv') as f:
        rows = [line.rsplit(',', 2) for line in f.read().splitlines()]
    assert sorted((tag, int(step), float(np.float32(float(value)))) for tag, step, value in rows) == expected
    assert len(expected) > 20
    with open(run / 'summary.json') as f:
        assert json.load(f)['env_steps'] == 1600
    # the user's hook ran at every evaluation, built with its keyword argument from the config
    with open(run / 'evals.jsonl') as f:
        evals = [json.loads(line) for line in f]
    by_iter = [s for s in read_scalars(str(run / 'log')) if s.tag == 'evaluator/return_mean_by_iter']
    assert [e['train_iter'] for e in evals] == [s.step for s in by_iter] and len(evals) >= 3
    assert [e['return_mean'] for e in evals] == pytest.approx([s.value for s in by_iter], rel=1e-6)
    assert evals[-1]['updates_seen'] == evals[-1]['train_iter']
    check_event_hooks(tmp_path, run, exact_returns=bool(mode))


def test_collector_and_evaluator_hooks_from_the_cli_in_the_serial_off_policy_pipeline(tmp_path, user_module):
    cfg = write_config(tmp_path, ['tensorboard'], base='cartpole_impala')
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '1200', '-q')
    assert out.returncode == 0, out.stderr
    check_event_hooks(tmp_path, run, exact_returns=False)


@pytest.mark.parametrize('backends, overrides, message', [
    (['tensorbord'], [], "config key 'logger.backends': unknown logger 'tensorbord'. Did you mean 'tensorboard'?"),
    # a near miss is not offered to be registered under its misspelled name
    (['tensorboard', 'csv_sem'], [], "unknown logger 'csv_sem'. Did you mean 'csv_seam'? Known loggers: csv_seam, "),
    (['tensorboard', 'csv_sem'], [], "; register your own with @LOGGER_REGISTRY.register(NAME) and list its module"),
    (['tensorboard', 'needs_extra_seam'], [], "pip install 'acframe[seamextra]'"),
    (['tensorboard'], ["policy.learn.learner.hooks=['no_such_hook']"],
     "config key 'policy.learn.learner.hooks[0]': unknown hook 'no_such_hook'"),
    (['tensorboard'], ["policy.collect.hooks=['eval_recorder_seam']"],
     "policy.collect.hooks[0]': hook 'eval_recorder_seam' is <class 'user_trackers.EvalRecorder'>, not a CollectorHook"),
    (['tensorboard', 'mlflow'], ['logger.mlflow.tracking_uri=sqlite:///{file}/sub/mlflow.db'], 'cannot be written'),
    # /proc passes os.access for root, yet nothing can be made in it: the check tries
    (['tensorboard', 'mlflow'], ['logger.mlflow.tracking_uri=sqlite:////proc/acframe-test/mlflow.db'], 'cannot be written'),
    (['tensorboard', 'mlflow'], ['logger.mlflow.tracking_uri=https://me:hunter2@mlflow.example.com'],
     'MLFLOW_TRACKING_PASSWORD'),
    # a backend's methods that cannot take what the run passes (they failed at their first call, the run went on)
    (['tensorboard', 'old_signature_seam'], [], "'old_signature_seam' (OldSignature.log_scalar(self, tag, value, step)) "
                                                "cannot be called as log_scalar(self, tag, value, step, wall_time)"),
    (['tensorboard', 'no_run_seam'], [], "'no_run_seam' (NoRun.__init__(self)) cannot be called as __init__(self, run)"),
    # a hook's misspelled keyword argument; two linear LR decays (the later one won without a word)
    (['tensorboard'], ["policy.learn.learner.hooks=[{'type': 'eval_recorder_seam', 'fil': 'e.jsonl'}]"],
     "hook 'eval_recorder_seam' does not take these arguments (EvalRecorder.__init__() got an unexpected keyword "
     "argument 'fil'); did you mean 'file' for 'fil'?"),
    (['tensorboard'], ['policy.learn.lr_decay_iters=1000',
                       "policy.learn.learner.hooks=[{'type': 'linear_lr_decay', 'decay_iters': 100}]"],
     "config key 'policy.learn.learner.hooks[0]' (LinearLRDecayHook): policy.learn.lr_decay_iters=1000 adds a linear "
     "learning rate decay of its own"),
    # a value not of the kind of the argument's default (it failed at the hook's first call, minutes in)
    (['tensorboard'], ["policy.eval.evaluator.hooks=[{'type': 'folder_recorder_seam', 'every': 'three'}]"],
     "config key 'policy.eval.evaluator.hooks[0]': hook 'folder_recorder_seam': every='three' must be a number (like "
     "its default 1), got str"),
    (['tensorboard'], ["policy.eval.evaluator.hooks=[{'type': 'folder_recorder_seam', 'file': 3}]"],
     "hook 'folder_recorder_seam': file=3 must be a string (like its default 'returns.txt'), got int"),
    # a rule a user's hook declares for the config (check_run_config), and one whose check itself fails
    (['tensorboard'], ["policy.learn.learner.hooks=[{'type': 'lr_cap_seam', 'cap': 1e-05}]"],
     "config key 'policy.learn.learner.hooks[0]' (LrCap): policy.learn.learning_rate=0.003 is above the cap 1e-05; "
     "lower it"),
    (['tensorboard'], ["policy.collect.hooks=['broken_check_seam']"],
     "config key 'policy.collect.hooks[0]': BrokenCheck.check_run_config raised AttributeError"),
    # options under a misspelled backend name (the backend ran on its defaults without a word)
    (['tensorboard', 'csv_seam'], ['logger.options.csv_sem.file=x.csv'],
     "logger.options.csv_sem names no logger backend; did you mean 'csv_seam'?"),
    # a backend's options given as one value (its check read them as a dict: an AttributeError of the user's code)
    (['tensorboard', 'csv_seam'], ['logger.options.csv_seam=s.csv'],
     "config key 'logger.options.csv_seam' = 's.csv' must be a dict of backend 'csv_seam's options, e.g. "
     "logger.options.csv_seam.KEY=..."),
    # options of a backend with a section of its own, under logger.options (read by nothing, without a word)
    (['tensorboard', 'jsonl'], ['logger.options.jsonl.flush_every=5'],
     "logger.options.jsonl: backend 'jsonl' reads its options from logger.jsonl, not logger.options; set them there, "
     "e.g. logger.jsonl."),
])
def test_bad_logger_input_is_one_line_exit_2_and_nothing_written(tmp_path, user_module, backends, overrides, message):
    if 'mlflow' in backends:
        pytest.importorskip('mlflow')
    a_file = tmp_path / 'a_file'
    a_file.write_text('')
    cfg = write_config(tmp_path, backends)
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '1600', '-q',
              *[o.replace('{file}', str(a_file)) for o in overrides])
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('acframe: error: ') and message in lines[0], out.stderr
    assert not run.exists()


@pytest.mark.parametrize('mode', [[], ['-m', 'parallel', '--backend', 'inline', 'parallel.actor_num=2'],
                                  ['-m', 'async', 'parallel.async_worker_num=2']], ids=['serial', 'parallel', 'async'])
def test_a_hook_is_told_the_run_folder_before_the_first_step_and_again_on_resume(tmp_path, user_module, mode):
    """``before_run(exp_dir)``: an evaluator or collector hook is given no learner, so it had no way to find the run
    folder (a user's hook wrote its file into the working folder)."""
    cfg = write_config(tmp_path, ['tensorboard'])
    run = tmp_path / 'run'
    hook = "policy.eval.evaluator.hooks=[{'type': 'folder_recorder_seam', 'file': 'returns.txt'}]"
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '800', '-q', *mode, hook)
    assert out.returncode == 0, out.stderr
    first = (run / 'returns.txt').read_text().splitlines()
    out = cli(user_module, '--resume', run, '--max-env-step', '1600', '-q', '--import', 'user_trackers')
    assert out.returncode == 0, out.stderr
    lines = (run / 'returns.txt').read_text().splitlines()
    steps = [int(line.split()[0]) for line in lines]
    assert lines[:len(first)] == first and len(lines) > len(first) and steps[-1] >= 1600, lines
    scalars = read_scalars(str(run / 'log'))
    assert sorted(set(steps)) == sorted({int(s.step) for s in scalars if s.tag == 'evaluator/return_mean'})


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason='a 2-rank run needs 2 cores')
def test_a_hook_on_a_data_parallel_rank_other_than_0_is_told_no_folder(tmp_path, user_module):
    """Ranks > 0 run their hooks too (their collector hooks see their own episodes) and own no folder: their
    before_run gets None, as their learner.exp_dir is None (a hook that set its path there only on rank 0 failed on
    rank 1 at its first call)."""
    cfg = write_config(tmp_path, ['tensorboard'])
    run, told = tmp_path / 'run', tmp_path / 'told.jsonl'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '400', '-q', 'parallel.learner_num=2',
              f"policy.collect.hooks=[{{'type': 'before_run_seam', 'file': '{told}'}}]",
              "policy.eval.evaluator.hooks=[{'type': 'folder_recorder_seam'}]")  # (rank 0 alone: as docs/logging.md's)
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(line) or '' for line in told.read_text().splitlines()) == ['', str(run)]
    assert (run / 'returns.txt').read_text().splitlines()


@pytest.mark.parametrize('mode', [['-m', 'parallel', '--backend', 'inline'], ['-m', 'async', 'parallel.async_worker_num=2']],
                         ids=['parallel', 'async'])
def test_a_rule_a_hook_declares_refuses_the_run_in_the_other_pipelines_too(tmp_path, user_module, mode):
    cfg = write_config(tmp_path, ['tensorboard'])
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '1600', '-q', *mode,
              "policy.learn.learner.hooks=[{'type': 'lr_cap_seam', 'cap': 1e-05}]")
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "acframe: error: config key 'policy.learn.learner.hooks[0]' (LrCap): policy.learn.learning_rate=0.003 is above "
        "the cap 1e-05; lower it"], out.stderr
    assert not run.exists()


def test_a_rule_of_a_hook_a_script_passes_refuses_the_run_naming_its_place(tmp_path, user_module):
    """``learner_hooks=[...]`` from Python: the same check, naming the list; a hook that declares no rule is fine."""
    script = tmp_path / 'script.py'
    script.write_text(textwrap.dedent(f'''
        import runpy
        from acframe.entry import serial_pipeline_onpolicy
        from acframe.errors import ConfigError
        import user_trackers

        cfg = runpy.run_path({str(write_config(tmp_path, ['tensorboard']))!r})
        try:
            serial_pipeline_onpolicy((cfg['main_config'], cfg['create_config']), max_env_step=400,
                                     exp_dir={str(tmp_path / 'run')!r},
                                     learner_hooks=[user_trackers.StopAtIter(10), user_trackers.LrCap(1e-05)])
        except ConfigError as exc:
            print(exc)
    '''))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(user_module), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert out.stdout.strip() == ("learner_hooks[1] (LrCap): policy.learn.learning_rate=0.003 is above the cap 1e-05; "
                                  "lower it"), out.stdout + out.stderr
    assert not (tmp_path / 'run').exists()


def test_wandb_not_installed_names_the_extra(tmp_path, user_module):
    cfg = write_config(tmp_path, ['tensorboard', 'wandb'])
    run = tmp_path / 'run'
    # sys.modules[name] = None is how Python marks a module that cannot be imported
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '1600', '-q',
              prelude="import sys; sys.modules['wandb'] = None; ")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "wandb is not installed; pip install 'acframe[wandb]'" in lines[0], out.stderr
    assert not run.exists()


def test_collector_hooks_in_async_training_see_each_collection_with_its_own_steps(tmp_path, user_module):
    """-m async: worker 0's collector hook got env_steps 0 for every collection (the shared count took the steps only
    after the hook ran), and its env_step did not hold the collection yet."""
    cfg = write_config(tmp_path, ['tensorboard'], base='cartpole_a3c')
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '-m', 'async', '--exp-dir', run, '--max-env-step', '2000', '-q')
    assert out.returncode == 0, out.stderr
    with open(tmp_path / 'events.jsonl') as f:
        collects = [e for e in map(json.loads, f) if e['kind'] == 'collect']
    with open(run / 'summary.json') as f:
        env_steps = json.load(f)['env_steps']
    sizes = {c['env_steps'] for c in collects}
    assert collects and min(sizes) > 0 and max(sizes) <= 4 * 5, sizes  # worker 0's 4 envs x at most 5 steps
    steps = [c['env_step'] for c in collects]
    assert steps == sorted(steps) and all(c['env_step'] >= c['env_steps'] for c in collects) and steps[-1] <= env_steps
    assert sum(c["env_steps"] for c in collects) < env_steps  # (the other workers' steps are theirs)


PINNING_MODULE = '''
import os

from acframe import LOGGER_REGISTRY
from acframe.loggers import LoggerBackend


@LOGGER_REGISTRY.register('store_seam')
class StoreLogger(LoggerBackend):
    """tag,step,value lines in a store file named by logger.options.store_seam.file, relative to where a run starts."""

    @classmethod
    def pin_config(cls, cfg):
        options = cfg.logger.options.store_seam
        options.file = os.path.abspath(options.file)

    def __init__(self, run):
        super().__init__(run)
        self.out = open(run.cfg.logger.options.store_seam.file, 'a')

    def log_scalar(self, tag, value, step, wall_time):
        self.out.write(f"{tag},{step},{value}\\n")

    def close(self):
        self.out.close()
'''


def test_a_user_backend_pins_its_relative_store_and_a_resume_from_elsewhere_writes_there(tmp_path, user_module):
    """``LoggerBackend.pin_config`` (the seam MLflow's relative store uses): a user's backend makes its option absolute
    at the run's start, the saved config keeps it, and a ``--resume`` from another folder appends to the same store."""
    (user_module / 'store_trackers.py').write_text(PINNING_MODULE)
    first, other = tmp_path / 'a', tmp_path / 'b'
    first.mkdir()
    other.mkdir()
    cfg = first / 'cfg.py'
    cfg.write_text("from dizoo_configs.cartpole_a2c import main_config, create_config\n"
                   "main_config['logger'] = dict(backends=['store_seam'], options=dict(store_seam=dict(file='store.csv')))\n"
                   "main_config['import_names'] = ['store_trackers']\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(user_module), os.environ.get('PYTHONPATH', '')]))
    run = [sys.executable, '-m', 'acframe.cli']
    done = subprocess.run(run + ['-c', 'cfg.py', '--exp-dir', 'run', '-q', '--max-env-step', '400'], cwd=first,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    with open(first / 'run' / 'config.json') as f:
        assert json.load(f)['config']['logger']['options']['store_seam']['file'] == str(first / 'store.csv')
    lines = (first / 'store.csv').read_text().count('\n')
    resumed = subprocess.run(run + ['--resume', str(first / 'run'), '--import', 'store_trackers', '-q',
                                    '--max-env-step', '800'], cwd=other, capture_output=True, text=True, timeout=300,
                             env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert (first / 'store.csv').read_text().count('\n') > lines and not (other / 'store.csv').exists()
    # acting on the run needs no logger: its module, recorded as registering only one, is not asked for (it was
    # "lists import_names store_trackers that you did not name")
    with open(first / 'run' / 'config.json') as f:
        assert json.load(f)['import_registers'] == {'store_trackers': ['logger:store_seam']}
    plain = dict(os.environ, PYTHONPATH=os.environ.get('PYTHONPATH', ''))  # (the module is not even importable)
    for args in (['-m', 'eval', '--load', str(first / 'run'), '--episodes', '1'],
                 ['-m', 'export', '--load', str(first / 'run'), '--out', str(other / 'policy.pt')]):
        acted = subprocess.run(run + args, cwd=other, capture_output=True, text=True, timeout=300, env=plain)
        assert acted.returncode == 0 and 'import_names' not in acted.stderr, acted.stderr
    refused = subprocess.run(run + ['--resume', str(first / 'run'), '-q', '--max-env-step', '1200'], cwd=other,
                             capture_output=True, text=True, timeout=300, env=plain)
    assert refused.returncode == 2 and 'lists import_names store_trackers' in refused.stderr, refused.stderr


@pytest.fixture
def silent_peer():
    """A local TCP port that accepts connections (the kernel's backlog) and never answers: a tracker gone quiet."""
    import socket

    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(8)
    yield listener.getsockname()[1]
    listener.close()


def test_a_tracker_that_stops_answering_costs_the_run_one_timeout_and_one_warning(tmp_path, user_module, silent_peer):
    cfg = write_config(tmp_path, ['tensorboard', 'silent_seam'])
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '10000', '-q', 'logger.timeout_s=0.5',
              f'logger.options.silent_seam.port={silent_peer}')
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith('acframe: warning:')]
    assert len(warnings) == 1 and warnings[0].startswith(
        "acframe: warning: logger backend 'silent_seam' has not returned from log_scalar for "), warnings
    assert "(logger.timeout_s=0.5); it is dropped for the rest of the run, training goes on (other backends: " \
           "tensorboard)" in warnings[0]
    with open(run / 'summary.json') as f:
        assert json.load(f)['env_steps'] == 10000  # trained to its budget
    assert max(s.step for s in read_scalars(str(run / 'log')) if s.tag == 'collector/episodes') > 9000


def test_an_mlflow_server_that_never_answers_is_left_out_after_the_timeout(tmp_path, user_module, silent_peer):
    pytest.importorskip('mlflow')
    cfg = write_config(tmp_path, ['tensorboard', 'mlflow'])
    run = tmp_path / 'run'
    out = cli(user_module, '-c', cfg, '--exp-dir', run, '--max-env-step', '800', '-q', 'logger.timeout_s=1',
              f'logger.mlflow.tracking_uri=http://127.0.0.1:{silent_peer}')
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith('acframe: warning:')]
    assert warnings == ["acframe: warning: logger backend 'mlflow' did not open within logger.timeout_s=1 s; the run "
                        "goes on without it"]
    with open(run / 'summary.json') as f:
        assert json.load(f)['env_steps'] == 800
    assert not os.path.exists(run / 'loggers.json')  # no tracker run to continue


@pytest.mark.parametrize('config, mode', [('cartpole_impala.py', []), ('cartpole_ppo.py', []),
                                          ('cartpole_impala.py', ['-m', 'parallel', '--backend', 'inline']),
                                          ('cartpole_a3c.py', ['-m', 'async'])],
                         ids=['serial', 'serial_onpolicy', 'parallel', 'async'])
def test_a_hook_ends_the_run_early_by_raising_stop_training_as_a_spent_budget_does(tmp_path, user_module, config, mode):
    """The final evaluation, checkpoint and summary are written (stopped_by: the hook and its message), exit 0, at
    the end of the round in which the hook asked (rounds are whole: data-parallel ranks make the same steps)."""
    run = tmp_path / 'run'
    out = cli(user_module, '-c', config, '--exp-dir', run, '--max-env-step', '100000', '-q', *mode,
              "import_names=['user_trackers']", "policy.learn.learner.hooks=[{'type': 'stop_at_iter_seam', 'at': 20}]")
    assert out.returncode == 0, out.stderr
    assert "stopped by the hook StopAtIter.after_iter: 20 steps are enough: " in out.stdout
    with open(run / 'summary.json') as f:
        summary = json.load(f)
    assert summary['stopped_by'] == 'the hook StopAtIter.after_iter: 20 steps are enough'
    # (-m async: the other worker trains on while worker 0 stops; under load it makes many more steps)
    most = 60 if config != 'cartpole_a3c.py' else 5000
    assert 20 <= summary['train_iters'] < most and summary['env_steps'] < 50000 and not summary['interrupted']
    assert torch.load(run / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['train_iter'] == summary['train_iters']
    evals = [s for s in read_scalars(str(run / 'log')) if s.tag == 'evaluator/return_mean_by_iter']
    # the final evaluation, of the final weights (-m async: the other workers' last steps land while worker 0
    # evaluates, as at a spent budget)
    assert evals[-1].step == summary['train_iters'] if config != 'cartpole_a3c.py' else evals[-1].step >= 20


def test_a_collector_hook_stops_the_run_too_and_sys_exit_in_a_hook_is_one_line(tmp_path, user_module):
    run = tmp_path / 'run'
    out = cli(user_module, '-c', 'cartpole_ppo.py', '--exp-dir', run, '--max-env-step', '100000', '-q',
              "import_names=['user_trackers']", "policy.collect.hooks=['stop_after_collect_seam']")
    assert out.returncode == 0 and 'stopped by the hook StopAfterCollect.after_collect: ' in out.stdout, out.stderr
    with open(run / 'summary.json') as f:
        assert 600 <= json.load(f)['env_steps'] < 2000
    out = cli(user_module, '-c', 'cartpole_ppo.py', '--exp-dir', tmp_path / 'exit', '--max-env-step', '100000', '-q',
              "import_names=['user_trackers']", "policy.learn.learner.hooks=['exit_seam']")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("acframe: error: the hook Exit.after_iter called sys.exit(0); a hook ends the run by "
                               "raising acframe.StopTraining(reason)")



@pytest.mark.parametrize('config, mode', [('cartpole_impala.py', []), ('cartpole_ppo.py', []),
                                          ('cartpole_impala.py', ['-m', 'parallel', '--backend', 'inline'])],
                         ids=['serial', 'serial_onpolicy', 'parallel'])
def test_a_hook_that_raises_mid_run_has_the_final_checkpoint_and_summary_written_first(tmp_path, user_module, config,
                                                                                      mode):
    """A hook runs between the learner's steps, so the learner is sound when one raises: the checkpoint held the
    start's state only (minutes of training lost to a hook's bug; an env that fails wrote it first)."""
    run = tmp_path / 'run'
    out = cli(user_module, '-c', config, '--exp-dir', run, '--max-env-step', '100000', '-q',
              'policy.learn.learner.save_ckpt_freq=0', *mode, "import_names=['user_trackers']",
              "policy.learn.learner.hooks=[{'type': 'boom_at_iter_seam', 'at': 30}]")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("acframe: error: the hook BoomAtIter.after_iter raised ValueError: boom at 30 (at ")
    state = torch.load(run / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['train_iter'] == 30 and f"the final checkpoint was written first (env step {state['env_step']}, " \
        f"train iter 30): --resume {run} --import user_trackers continues from there" in lines[0]
    with open(run / 'summary.json') as f:
        summary = json.load(f)
    assert summary['train_iters'] == 30 and summary['stopped_by'].startswith('the hook BoomAtIter.after_iter raised')


def test_backend_methods_of_other_forms_that_take_the_runs_arguments_are_accepted(tmp_path, user_module):
    """*args/**kwargs, a staticmethod close(), a classmethod run_record(): each takes what the run passes."""
    cfg = write_config(tmp_path, ['tensorboard', 'odd_but_fine_seam'])
    out = cli(user_module, '-c', cfg, '--exp-dir', tmp_path / 'run', '--max-env-step', '400', '-q')
    assert out.returncode == 0 and 'odd_but_fine_seam' not in out.stderr, out.stderr


@pytest.mark.parametrize('config, mode', [('cartpole_ppo.py', []),
                                          ('cartpole_impala.py', ['-m', 'parallel', 'parallel.actor_num=2'])],
                         ids=['serial', 'parallel'])
def test_a_hook_on_a_data_parallel_rank_other_than_0_ends_the_run_as_its_own_would(tmp_path, user_module, config, mode):
    """Every rank stopped, but rank 0 knew nothing of why: no final evaluation (serial), no stopped_by, and -m parallel
    said a rank 'can train no more' as its share was collected."""
    run = tmp_path / 'run'
    out = cli(user_module, '-c', config, '--exp-dir', run, '--max-env-step', '100000', '-q', *mode,
              'parallel.learner_num=2', "import_names=['user_trackers']",
              "policy.learn.learner.hooks=['stop_on_rank1_seam']")
    assert out.returncode == 0, out.stderr
    assert 'stopped by a hook on another data-parallel rank: ' in out.stdout and 'can train no more' not in out.stderr
    with open(run / 'summary.json') as f:
        summary = json.load(f)
    assert summary['stopped_by'] == 'a hook on another data-parallel rank' and summary['env_steps'] < 100000
    evals = [s for s in read_scalars(str(run / 'log')) if s.tag == 'evaluator/return_mean_by_iter']
    assert evals[-1].step == summary['train_iters']  # the final weights evaluated


def test_a_hook_asking_to_stop_at_the_final_evaluation_of_a_spent_budget_is_not_what_ended_the_run(tmp_path, user_module):
    run = tmp_path / 'run'
    out = cli(user_module, '-c', 'cartpole_ppo.py', '--exp-dir', run, '--max-env-step', '1000', '-q',
              "import_names=['user_trackers']", "policy.eval.evaluator.hooks=['stop_at_the_end_seam']")
    assert out.returncode == 0 and '[acframe] stopped: 1000 env steps' in out.stdout, out.stdout + out.stderr
    with open(run / 'summary.json') as f:
        assert 'stopped_by' not in json.load(f)


SCRIPT_LOGGER = '''
from acframe import LOGGER_REGISTRY
from acframe.entry import serial_pipeline_onpolicy
from acframe.loggers import LoggerBackend


@LOGGER_REGISTRY.register('in_script_seam')
class InScript(LoggerBackend):
    def log_scalar(self, tag, value, step, wall_time):
        pass


serial_pipeline_onpolicy('cartpole_a2c.py', exp_dir='run', max_env_step=400, progress=False,
                         overrides=["logger.backends=['tensorboard', 'in_script_seam']"])
'''


def test_a_run_whose_logger_its_script_registered_in_itself_is_resumed_from_the_script_and_evaluated_anywhere(tmp_path):
    """Resumed from the command line it said to list the logger's module in import_names: a script's own __main__,
    which no --import can bring back. Evaluating it needs no logger."""
    (tmp_path / 'train.py').write_text(SCRIPT_LOGGER)
    trained = subprocess.run([sys.executable, 'train.py'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr
    with open(tmp_path / 'run' / 'config.json') as f:
        assert json.load(f)['script_registered'] == ['logger:in_script_seam']
    out = cli(tmp_path / 'nowhere', '--resume', tmp_path / 'run', '--max-env-step', '800', '-q')
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"acframe: error: {tmp_path / 'run'} was trained by a script that registered logger 'in_script_seam' in itself "
        f"(__main__), which acframe cannot import: resume it from that script (serial_pipeline_onpolicy(None, "
        f"resume=RUN) after the class is registered), or move that class into a module and name it with --import "
        f"MODULE (in a script: the override \"import_names=['MODULE']\")"], out.stderr
    out = cli(tmp_path / 'nowhere', '-m', 'eval', '--load', tmp_path / 'run', '--episodes', '1')
    assert out.returncode == 0, out.stderr
