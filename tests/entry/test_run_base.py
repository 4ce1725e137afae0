"""Specification of the run base (``acframe.entry.run_base.RunBase``) that the serial and parallel pipelines share.

One class owns the folder, checkpoints, evaluation bookkeeping and summary, so a serial and a parallel run of
the same config write the same things: the same summary keys, the same confirmation of a solved evaluation,
a checkpoint from their first moments.
"""
import json
import os
import socket

import pytest
import torch

from acframe.entry import RunBase, SerialRun, serial_pipeline_onpolicy
from acframe.entry.parallel import ParallelRun, parallel_pipeline


def a2c_cartpole(**env):
    main = dict(
        exp_name='run_base_test',
        env={'env_id': 'CartPole-v0', 'collector_env_num': 4, 'evaluator_env_num': 2, 'n_evaluator_episode': 2,
             'stop_value': 10_000, **env},
        parallel=dict(actor_num=1),
        policy=dict(collect=dict(n_sample=20), eval=dict(evaluator=dict(eval_freq=5))),
    )
    return main, dict(env=dict(type='gym'), policy=dict(type='a2c'))


def read_summary(exp_dir) -> dict:
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


def test_both_pipelines_are_runs_of_the_one_base():
    assert issubclass(SerialRun, RunBase) and issubclass(ParallelRun, RunBase)


def test_a_parallel_summary_has_every_key_of_a_serial_one(tmp_path):
    serial_pipeline_onpolicy(a2c_cartpole(), exp_dir=str(tmp_path / 's'), max_env_step=200, progress=False)
    parallel_pipeline(a2c_cartpole(), exp_dir=str(tmp_path / 'p'), max_env_step=200, backend='inline', progress=False)
    serial, parallel = read_summary(tmp_path / 's'), read_summary(tmp_path / 'p')
    assert set(serial) <= set(parallel)
    for key in ('env_steps', 'train_iters', 'n_confirm_episode', 'eval_deterministic', 'policy', 'env_type', 'env_id',
                'seed'):
        assert serial[key] == parallel[key], key
    assert serial['env_type'] == 'gym' and serial['env_id'] == 'CartPole-v0'


def test_a_summary_names_no_env_id_an_env_type_ignores(tmp_path):
    """A registered env.type builds its env without env.env_id: the summary said 'CartPole-v1' (the default's)."""
    main, create = a2c_cartpole()
    main['env'].pop('env_id')
    create['env']['type'] = 'toy_cue_memory'
    serial_pipeline_onpolicy((main, create), exp_dir=str(tmp_path / 's'), max_env_step=40, progress=False)
    summary = read_summary(tmp_path / 's')
    assert summary['env_type'] == 'toy_cue_memory' and summary['env_id'] is None


def test_an_evaluation_that_reaches_the_stop_value_is_confirmed_in_both_pipelines(tmp_path, capsys):
    cfg = a2c_cartpole(stop_value=1, n_confirm_episode=3)  # every CartPole episode returns >= 1
    serial_pipeline_onpolicy(cfg, exp_dir=str(tmp_path / 's'), max_env_step=2000, progress=True)
    parallel_pipeline(cfg, exp_dir=str(tmp_path / 'p'), max_env_step=2000, backend='inline', progress=True)
    out = capsys.readouterr().out
    assert out.count('[eval] confirmation on 3 fresh episodes') == 2 and out.count('(min ') == 2
    for name in ('s', 'p'):
        summary = read_summary(tmp_path / name)
        assert summary['solved'], name  # the first evaluation (of the weights at iter 0), confirmed
        [confirmation] = summary['confirmations']
        assert confirmation['episodes'] == 3 and confirmation['solved'] and confirmation['train_iter'] == 0
        state = torch.load(tmp_path / name / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
        assert state['evaluator']['confirmations'] == summary['confirmations']  # resumable bookkeeping


def test_a_parallel_run_is_resumable_from_its_first_moments(tmp_path):
    from acframe.config import compile_config

    run = ParallelRun(compile_config(a2c_cartpole()), str(tmp_path / 'p'), False, False, 'inline')
    run.close()  # killed right after start-up: the checkpoint written at start is there
    assert os.path.isfile(tmp_path / 'p' / 'ckpt' / 'ckpt_latest.pth')
    parallel_pipeline(resume=str(tmp_path / 'p'), max_env_step=80, backend='inline', progress=False)
    assert read_summary(tmp_path / 'p')['env_steps'] == 80


def test_a_resume_inside_a_logging_window_logs_the_means_an_unbroken_run_logs(tmp_path):
    """The learner logs the mean of each value over ``log_freq`` iterations; the checkpoint carries the window being
    summed, so a run resumed at iteration 7 logs at 10 and 20 exactly what a run that never stopped logs."""
    from acframe.logs import read_scalars
    overrides = ['env.collector_env_num=2', 'policy.collect.n_sample=10', 'policy.learn.learner.log_freq=10',
                 'env.stop_value=None', 'policy.eval.evaluator.eval_freq=1000']

    def learner_scalars(folder):
        return sorted((s.tag, s.step, s.value) for s in read_scalars(str(folder / 'log')) if s.tag.startswith('learner/'))
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, exp_dir=str(tmp_path / 'whole'),
                             max_train_iter=20, progress=False)
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, exp_dir=str(tmp_path / 'part'),
                             max_train_iter=7, progress=False)
    serial_pipeline_onpolicy(None, resume=str(tmp_path / 'part'), max_train_iter=20, progress=False)
    whole = learner_scalars(tmp_path / 'whole')
    assert {step for _, step, _ in whole} == {10, 20} and len(whole) > 2
    assert learner_scalars(tmp_path / 'part') == whole


def test_a_run_stopped_by_its_budget_and_resumed_evaluates_where_an_unbroken_run_does(tmp_path):
    """The final weights are evaluated at the end of a budget (iteration 13 here), outside the schedule of every
    ``eval_freq`` = 5 iterations; that evaluation does not move the schedule, so the resumed run evaluates at 15 and
    20 as the unbroken run does (not at 18), and finds the same returns there."""
    from acframe.logs import read_scalars
    overrides = ['env.collector_env_num=2', 'policy.collect.n_sample=10', 'env.stop_value=None',
                 'policy.eval.evaluator.eval_freq=5', 'env.evaluator_env_num=2', 'env.n_evaluator_episode=2']

    def evaluations(folder):
        return sorted((s.step, s.value) for s in read_scalars(str(folder / 'log'))
                      if s.tag == 'evaluator/return_mean_by_iter')
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, exp_dir=str(tmp_path / 'whole'),
                             max_train_iter=22, progress=False)
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, exp_dir=str(tmp_path / 'part'),
                             max_train_iter=13, progress=False)
    assert [step for step, _ in evaluations(tmp_path / 'part')] == [0, 5, 10, 13]
    serial_pipeline_onpolicy(None, resume=str(tmp_path / 'part'), max_train_iter=22, progress=False)
    whole, part = evaluations(tmp_path / 'whole'), evaluations(tmp_path / 'part')
    assert [step for step, _ in whole] == [0, 5, 10, 15, 20, 22]
    assert [e for e in part if e[0] != 13] == whole


def test_a_resume_whose_budget_is_spent_says_so_names_the_flag_and_leaves_the_folder_as_it_was(tmp_path, capsys):
    """It trains nothing, so it writes nothing: every file of the folder is as the last sitting left it (it rewrote
    the checkpoint, summary.json with a longer wall time, config.json and the curves, and added a log file)."""
    from acframe.cli import main

    run = str(tmp_path / 'run')
    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', run, '--max-env-step', '400', '-q']) == 0
    capsys.readouterr()

    def files():
        found = {}
        for folder, _, names in os.walk(run):
            for name in names:
                if name == '.acframe.lock':  # (its holder line: the lock is taken, so a run elsewhere refuses it)
                    continue
                path = os.path.join(folder, name)
                with open(path, 'rb') as f:
                    found[path] = (f.read(), os.stat(path).st_mtime_ns)
        return found
    before = files()
    assert main(['--resume', run, '--max-env-step', '300', '-q']) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['[acframe] the budget is spent already (env step 400 >= max_env_step 300): nothing to train; give it '
                   'a larger max_env_step to go on (--max-env-step N)'], err
    assert json.loads(open(os.path.join(run, 'summary.json')).read())['env_steps'] == 400
    assert files() == before
    from acframe.entry.run_folder import RunLock

    held = RunLock(run)  # another process training in the folder: refused, as a resume that would train is
    try:
        assert main(['--resume', run, '--max-env-step', '300', '-q']) == 2
        assert 'is in use by another acframe process' in capsys.readouterr().err
    finally:
        held.release()
    assert main(['--resume', run, '--max-env-step', '600', '-q']) == 0  # a larger budget: no such line, it trains
    assert capsys.readouterr().err == ''


def test_a_spent_resume_says_nothing_of_envs_that_would_continue_from_a_reset(tmp_path, capsys):
    """The async manager's envs cannot be restored: a resume that trains says they continue from a reset; one whose
    budget is spent trains nothing, and said it all the same, before its one line; so did one refused because another
    process holds the folder."""
    from acframe.cli import main

    run = str(tmp_path / 'run')
    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', run, '--max-env-step', '200', '-q', 'env.manager=async']) == 0
    capsys.readouterr()
    assert main(['--resume', run, '--max-env-step', '200']) == 0
    said = capsys.readouterr()
    assert (said.out + said.err).splitlines() == [
        '[acframe] the budget is spent already (env step 200 >= max_env_step 200): nothing to train; give it a larger '
        'max_env_step to go on (--max-env-step N)']
    from acframe.entry.run_folder import RunLock

    held = RunLock(run)  # another process trains in the folder: the resume is refused, and says only that
    try:
        assert main(['--resume', run, '--max-env-step', '300']) == 2
        said = capsys.readouterr()
        assert 'continue from a reset' not in said.out + said.err, said
        assert 'is in use by another acframe process' in said.err
    finally:
        held.release()
    assert main(['--resume', run, '--max-env-step', '300']) == 0
    said = capsys.readouterr()
    assert '[acframe] the collector envs continue from a reset: their state could not be restored' in said.out + said.err


def test_a_read_only_run_folder_resumes_with_a_spent_budget_and_refuses_one_that_trains_in_one_line(tmp_path, capsys):
    """A finished run on a read-only mount (a shared archive): the spent resume writes nothing, so it runs there too
    (its lock taken through a read-only descriptor: it was 'cannot open the lock file ...; remove it'); one that
    would train says the folder must be writable, with what to do (it said to remove the lock file)."""
    import shutil
    import subprocess

    from acframe.cli import main
    from fixtures.tmpfs import tmpfs

    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', str(tmp_path / 'run'), '--max-env-step', '300', '-q']) == 0
    mount = tmp_path / 'ro'
    mount.mkdir()
    with tmpfs(mount, '8m') as refused:
        if refused:
            pytest.skip(refused)
        shutil.copytree(tmp_path / 'run', mount / 'run')
        subprocess.run(['mount', '-o', 'remount,ro', str(mount)], check=True)
        run = str(mount / 'run')
        capsys.readouterr()
        assert main(['--resume', run, '--max-env-step', '300', '-q']) == 0
        assert 'the budget is spent already' in capsys.readouterr().err
        assert main(['--resume', run, '--max-env-step', '600', '-q']) == 2
        assert capsys.readouterr().err == (f"acframe: error: cannot open the lock file {run}/.acframe.lock: Read-only "
                                           f"file system; a run writes in its folder: make {run} writable, or copy it "
                                           f"to a folder you can write and resume the copy\n")


def test_a_run_resumes_with_the_config_it_was_started_from_given_again(tmp_path, capsys):
    """``--resume RUN -c CONFIG`` with the run's own config is the same run: the shapes the run filled in from its env
    (policy.model.obs_shape, action_shape, action_space) are not a change (they were refused as 3 changed keys)."""
    from acframe.cli import main

    run = str(tmp_path / 'run')
    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', run, '--max-env-step', '400', '-q']) == 0
    assert main(['--resume', run, '-c', 'cartpole_a2c.py', '--max-env-step', '600', '-q']) == 0, capsys.readouterr().err
    assert main(['--resume', run, '-c', 'cartpole_a2c.py', '--max-env-step', '800', '-q',
                 'policy.model.obs_shape=5']) == 2  # a shape the config does give is compared
    assert 'policy.model.obs_shape' in capsys.readouterr().err


def test_a_run_given_a_model_in_python_says_so_and_is_loaded_and_resumed_with_one(tmp_path, capsys):
    """Its config.json describes the config's model, not the one it trained: -m eval, --resume and load_policy
    without a model said "the checkpoint does not fit ... use the config the checkpoint was trained with"."""
    import shutil

    import pytest

    from acframe import export_policy, load_policy
    from acframe.cli import main
    from acframe.errors import ConfigError
    from acframe.models.vac import VAC

    def small():
        return VAC(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16])

    run = str(tmp_path / 'run')
    serial_pipeline_onpolicy('cartpole_a2c.py', model=small(), exp_dir=run, max_env_step=160, progress=False)
    with open(os.path.join(run, 'config.json')) as f:
        assert json.load(f)['model_given'] == 'acframe.models.vac.VAC'
    with pytest.raises(ConfigError, match=r"^.*/run was trained with a model given in Python \(acframe.models.vac.VAC "
                                          r"instance, model=\), which its config does not describe; load it in Python "
                                          r"with that model: acframe.load_policy\(RUN, model=...\)$"):
        load_policy(run)
    with pytest.raises(ConfigError, match=r"which its config does not describe; the config given builds another "
                                          r"model; load it in Python with that model"):
        load_policy(run, config='cartpole_a2c.py')  # (a config that builds the config's model: the weights do not fit)
    loaded = load_policy(run, model=small())
    assert loaded.act(torch.zeros(4).numpy()) in (0, 1)
    cli_fix = ("load or export it in Python with that model: acframe.load_policy(RUN, model=...), "
               "acframe.export_policy(RUN, OUT, model=...) (the command line cannot build it)")
    assert main(['-m', 'eval', '--load', run, '-c', 'cartpole_a2c.py', '--episodes', '1']) == 2
    assert capsys.readouterr().err.strip().endswith("the config given builds another model; " + cli_fix)
    assert main(['-m', 'eval', '--load', run, '--episodes', '1']) == 2
    assert capsys.readouterr().err.strip().endswith(cli_fix)
    # export: the run's actor was written by no function (export_policy took no model=); now as load_policy
    out = str(tmp_path / 'actor.pt')
    assert main(['-m', 'export', '--load', run, '--out', out]) == 2
    assert capsys.readouterr().err.strip().endswith(cli_fix) and not os.path.exists(out)
    with pytest.raises(ConfigError, match=r"which its config does not describe; export it in Python with that model: "
                                          r"acframe.export_policy\(RUN, OUT, model=...\)$"):
        export_policy(run, out)
    with pytest.raises(ConfigError, match=r"name its config with config=CONFIG$"):  # (the Python arguments' names)
        export_policy(shutil.copy(os.path.join(run, 'ckpt', 'ckpt_latest.pth'), tmp_path), out)
    assert export_policy(run, out, model=small())['format'] == 'torchscript'  # (checked against load_policy inside)
    actor = torch.jit.load(out)
    obs = torch.randn(5, 4)
    assert torch.equal(actor(obs), torch.as_tensor(loaded.act(obs.numpy())))
    assert main(['--resume', run, '--max-env-step', '320', '-q']) == 2
    assert capsys.readouterr().err.strip().endswith("resume it in Python with the same model: serial_pipeline(CONFIG, "
                                                    "resume=RUN, model=...) (or serial_pipeline_onpolicy)")
    serial_pipeline_onpolicy('cartpole_a2c.py', model=small(), resume=run, max_env_step=320, progress=False)
    with open(os.path.join(run, 'summary.json')) as f:
        assert json.load(f)['env_steps'] == 320
    with open(os.path.join(run, 'config.json')) as f:
        assert json.load(f)['model_given'] == 'acframe.models.vac.VAC'  # (kept by the resume)


def test_only_a_users_buffer_raising_in_its_own_method_is_named_as_the_buffer(tmp_path, monkeypatch):
    """A policy kept in the buffer's file, raising in its own method, was reported as the buffer."""
    import importlib
    import sys
    from types import SimpleNamespace

    (tmp_path / 'plugins_same_file.py').write_text(
        "class Buffer:\n"
        "    def sample(self, n):\n"
        "        raise ValueError('buffer bug')\n"
        "\n"
        "class Policy:\n"
        "    def _forward_collect(self, obs):\n"
        "        raise ValueError('policy bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module('plugins_same_file')
    run = SimpleNamespace(buffer=module.Buffer(), cfg=SimpleNamespace(
        policy=SimpleNamespace(other=SimpleNamespace(replay_buffer=SimpleNamespace(type='mine')))),
        _saves_buffer=lambda: False)

    def raised(fn):
        try:
            fn()
        except ValueError as exc:
            return exc

    named = RunBase._plugin_error(run, raised(lambda: run.buffer.sample(2)))
    assert str(named).startswith("replay buffer 'mine' raised ValueError: buffer bug (at ")
    assert named.learner_sound  # (a buffer the checkpoint does not hold: the final checkpoint is written first)
    assert RunBase._plugin_error(run, raised(lambda: module.Policy()._forward_collect(None))) is None
    sys.modules.pop('plugins_same_file', None)


def test_the_progress_line_counts_down_the_budget_nearer_its_end():
    """With --max-train-iter 40 the line said 'budget left 9999488 steps' (the default env-step budget)."""
    from types import SimpleNamespace

    def left(env_step, train_iter, max_env_step, max_train_iter):
        run = SimpleNamespace(cfg=SimpleNamespace(max_env_step=max_env_step, max_train_iter=max_train_iter),
                              env_step=env_step, learner=SimpleNamespace(train_iter=train_iter))
        return RunBase.budget_left_text(run)

    assert left(512, 4, 10_000_000, 40) == '36 iters'
    assert left(512, 4, 1000, 10_000_000) == '488 steps'
    assert left(0, 0, 1000, 40) == '1000 steps'


def test_a_folder_locked_by_a_reader_is_refused_without_naming_the_ended_process_of_its_stale_holder_line(tmp_path):
    """A spent resume reading a folder it cannot write locks it shared and writes no holder line: the line left is the
    last trainer's, whose process has ended. A trainer refused there named that ended process as the holder."""
    import fcntl
    import subprocess

    from acframe.entry.run_folder import LOCK_NAME, RunLock
    from acframe.errors import ConfigError

    run = tmp_path / 'run'
    run.mkdir()
    ended = subprocess.Popen(['true'])
    ended.wait()
    (run / LOCK_NAME).write_text(json.dumps({'pid': ended.pid, 'host': socket.gethostname(),
                                             'since': '2026-12-01 10:00:00'}))
    reader = os.open(run / LOCK_NAME, os.O_RDONLY)  # the reader's shared lock (flock: one per open file)
    try:
        fcntl.flock(reader, fcntl.LOCK_SH)
        with pytest.raises(ConfigError) as refused:
            RunLock(str(run))
        said = str(refused.value)
        assert 'is in use by another acframe process' in said
        assert f"line, pid {ended.pid} since 2026-12-01 10:00:00, is of a process that has ended" in said, said
        assert f'(pid {ended.pid} on' not in said
        (run / LOCK_NAME).write_text(json.dumps({'pid': os.getpid(), 'host': socket.gethostname(), 'since': 'now'}))
        with pytest.raises(ConfigError, match=rf'\(pid {os.getpid()} on {socket.gethostname()} since now\)'):
            RunLock(str(run))  # a live holder is named as before
    finally:
        os.close(reader)


def test_a_decay_schedule_spent_with_budget_left_is_said_once_with_the_value_spanning_the_budget(tmp_path, capsys):
    """The schedules count gradient steps: a budget three times the one a config's schedule was sized for (or a
    resume past it) trained on at a learning rate and clip ratio of 0 without a word."""
    common = ['env.stop_value=None', 'policy.eval.evaluator.eval_freq=100000', 'env.n_evaluator_episode=1',
              'env.evaluator_env_num=1']
    serial_pipeline_onpolicy('cartpole_ppo.py', overrides=common + ['policy.learn.lr_decay_iters=40',
                                                                    'policy.learn.clip_ratio_decay_iters=40'],
                             exp_dir=str(tmp_path / 'short'), max_env_step=2048, progress=False)
    said = [line for line in capsys.readouterr().err.splitlines() if 'to 0 by train iter' in line]
    assert said == ["acframe: warning: policy.learn.lr_decay_iters=40 and policy.learn.clip_ratio_decay_iters=40 took "
                    "the learning rate and the clip ratio to 0 by train iter 40 (env step 512), with 1,536 env steps "
                    "of the budget left: the rest of the run learns nothing; set the schedule to the gradient steps "
                    "of the whole budget (about 160 for max_env_step=2,048 at this run's 0.0781 gradient steps per "
                    "env step) (a --resume takes it with --accept-config-change)"]
    serial_pipeline_onpolicy('cartpole_ppo.py', overrides=common + ['policy.learn.lr_decay_iters=160',
                                                                    'policy.learn.clip_ratio_decay_iters=160'],
                             exp_dir=str(tmp_path / 'sized'), max_env_step=2048, progress=False)
    assert 'to 0 by train iter' not in capsys.readouterr().err  # (sized to the budget: 0 at its end)
    serial_pipeline_onpolicy(resume=str(tmp_path / 'sized'), max_env_step=4096, progress=False)
    assert 'policy.learn.lr_decay_iters=160 and policy.learn.clip_ratio_decay_iters=160 took the learning rate and ' \
           'the clip ratio to 0 by train iter 160 (env step 2,048), with 2,048 env steps' in capsys.readouterr().err


@pytest.mark.parametrize('max_env_step, max_train_iter, says', [
    # a safety cap on train iters far beyond what the env-step budget gives: the env steps are the budget
    (100_000, 1_000_000, "with 80,000 env steps of the budget left: the rest of the run learns nothing; set the "
                         "schedule to the gradient steps of the whole budget (about 5,000 for max_env_step=100,000"),
    (10_000_000, 4_000, "with 3,000 train iters of the budget left: the rest of the run learns nothing; set the "
                        "schedule to the gradient steps of the whole budget (max_train_iter=4,000)"),
    (100_000, 1_050, None),  # (the iters end the run within a tenth of their budget: nothing to say)
])
def test_the_spent_schedule_warning_reads_the_budget_that_ends_the_run(max_env_step, max_train_iter, says):
    """Both budgets set: the line named max_train_iter (999,000 iters left) where max_env_step ends the run first."""
    from types import SimpleNamespace

    said = []
    cfg = SimpleNamespace(max_env_step=max_env_step, max_train_iter=max_train_iter,
                          policy=SimpleNamespace(learn={'lr_decay_iters': 1000}))
    run = SimpleNamespace(cfg=cfg, env_step=20_000, learner=SimpleNamespace(train_iter=1000), writes=True,
                          warn=said.append, SCHEDULES=RunBase.SCHEDULES, _schedules_warned=False)
    RunBase._warn_spent_schedules(run)
    assert (said == [] if says is None else len(said) == 1 and says in said[0]), said
