"""Specification of the parallel pipeline (``acframe.entry.parallel``): local and inline backends.

Learning runs use CartPole-v0 (stop value 195), a fixed seed and a fixed env-step budget. The Ray backend
has its own file (test_parallel_ray.py).
"""
import json
import multiprocessing
import multiprocessing.resource_tracker
import os
import signal
import subprocess
import sys
import re
import textwrap
import time
from typing import List

import gymnasium as gym
import pytest
import torch

from acframe import ConfigError, ENV_REGISTRY, POLICY_REGISTRY
from acframe.errors import EnvError, EnvTimeoutError
from acframe.cli import main as cli_main
from acframe.entry.parallel import parallel_pipeline
from acframe.entry.parallel.messages import VERSION_KEY
from acframe.entry.parallel.roles import BoundedLagCollectMode
from acframe.entry.parallel.shared_weights import SharedWeights
from acframe.envs.gym_env import make_gym_env
from acframe.policy.impala import IMPALAPolicy
from acframe.worker import LearnerHook
from acframe.data.tree import leaves as tree_leaves

#: the env seed that makes ``flaky_cartpole`` raise: the first env of actor 0's first incarnation (seed 0)
FLAKY_SEED = 0


class FlakyCartPole(gym.Wrapper):
    """CartPole whose env seeded ``FLAKY_SEED`` fails on its 20th step, in the second segment (a restarted actor
    gets other seeds): it raises, or with ``hang`` blocks (sleeps for an hour)."""

    def __init__(self, env: gym.Env, hang: bool = False) -> None:
        super().__init__(env)
        self.steps, self.flaky, self.hang = 0, False, hang

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.flaky = seed == FLAKY_SEED
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.flaky and self.steps == 20:
            if self.hang:
                time.sleep(3600)
            raise RuntimeError('the simulator crashed')
        return self.env.step(action)


@ENV_REGISTRY.register('flaky_cartpole')
def make_flaky_cartpole(env_cfg, **overrides):
    return FlakyCartPole(make_gym_env(env_cfg, **overrides))


@ENV_REGISTRY.register('hanging_cartpole')
def make_hanging_cartpole(env_cfg, **overrides):
    return FlakyCartPole(make_gym_env(env_cfg, **overrides), hang=True)


#: seconds every worker process but actor 0 takes to build its envs in ``slow_start_cartpole``
SLOW_START_S = 1.5
_slow_started: List[int] = []


@ENV_REGISTRY.register('slow_start_cartpole')
def make_slow_start_cartpole(env_cfg, **overrides):
    """CartPole that takes ``SLOW_START_S`` to build, except in actor 0 (which starts collecting meanwhile)."""
    if multiprocessing.current_process().name != 'acframe-actor-0' and os.getpid() not in _slow_started:
        _slow_started.append(os.getpid())  # once per process
        time.sleep(SLOW_START_S)
    return make_gym_env(env_cfg, **overrides)


def cartpole(**parallel):
    """IMPALA on CartPole-v0 (200-step episodes, solved at 195)."""
    main = dict(
        exp_name='parallel_test',
        env=dict(env_id='CartPole-v0', collector_env_num=8, evaluator_env_num=4, n_evaluator_episode=8, stop_value=195),
        parallel={'actor_num': 2, **parallel},
        policy=dict(
            unroll_len=16,
            model=dict(encoder_hidden_size_list=[64, 64]),
            learn=dict(update_per_collect=4, batch_size=16, learning_rate=0.003, entropy_weight=0.001),
            collect=dict(n_sample=8),  # unrolls across the 8 envs: 16 steps per env
            eval=dict(evaluator=dict(eval_freq=100)),
            other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
        ),
        seed=0,
    )
    return main, dict(env=dict(type='gym'), policy=dict(type='impala'))


def a2c_cartpole(**parallel):
    main = dict(
        exp_name='parallel_a2c_test',
        env=dict(env_id='CartPole-v0', collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, stop_value=195),
        parallel={'actor_num': 2, **parallel},
        policy=dict(collect=dict(n_sample=20), eval=dict(evaluator=dict(eval_freq=10))),
    )
    return main, dict(env=dict(type='gym'), policy=dict(type='a2c'))


def read_summary(exp_dir) -> dict:
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


# ---- processes -------------------------------------------------------------------------------------
def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        with open(f'/proc/{pid}/environ', 'rb') as f:
            return marker in f.read()
    except OSError:  # gone, or not ours
        return False


def processes_with(marker: str) -> List[int]:
    """Every live process (but this one) whose environment holds ``marker``: the run's descendants, orphans included."""
    needle = marker.encode() + b'\0'
    pids = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]
    return [pid for pid in pids if _environ_has(pid, needle) and not _is_zombie(pid)]


def _is_zombie(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return True


def child_named(name: str) -> int:
    """The pid of this process's child whose name (``/proc/PID/comm``) is ``name``."""
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/comm') as f:
                comm = f.read().strip()
        except OSError:
            continue
        if ppid == os.getpid() and comm == name:
            return int(entry)
    raise LookupError(f"no child process named {name}")


@pytest.fixture
def run_marker(monkeypatch):
    """An environment variable every process of the run inherits, to find them (and orphans) afterwards."""
    multiprocessing.resource_tracker.ensure_running()  # Python's own helper process, not one of the run's
    marker = f'ACFRAME_TEST_RUN={os.getpid()}_{time.monotonic_ns()}'
    key, value = marker.split('=')
    monkeypatch.setenv(key, value)
    return marker


class KillActorAt(LearnerHook):
    """At learner iteration ``at``, kill -9 the process of actor ``actor_id``."""

    def __init__(self, at: int, actor_id: int) -> None:
        self.at, self.actor_id, self.killed = at, actor_id, None

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            self.killed = child_named(f'acf-actor-{self.actor_id}')
            os.kill(self.killed, signal.SIGKILL)


class SignalActorAt(KillActorAt):
    """At learner iteration ``at``, send ``signum`` to the process of actor ``actor_id``."""

    def __init__(self, at: int, actor_id: int, signum: int) -> None:
        super().__init__(at, actor_id)
        self.signum = signum

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            self.killed = child_named(f'acf-actor-{self.actor_id}')
            os.kill(self.killed, self.signum)


class PauseAt(LearnerHook):
    """At learner iteration ``at``, sleep ``seconds`` (the actors go on meanwhile)."""

    def __init__(self, at: int, seconds: float) -> None:
        self.at, self.seconds = at, seconds

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            time.sleep(self.seconds)


class CtrlCAt(LearnerHook):
    def __init__(self, at: int) -> None:
        self.at = at

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            raise KeyboardInterrupt


# ---- the local backend -----------------------------------------------------------------------------
def test_local_backend_with_two_actors_solves_cartpole_within_budget(tmp_path, run_marker, tb_scalars):
    exp_dir = tmp_path / 'local'
    policy = parallel_pipeline(cartpole(max_policy_lag=2), exp_dir=str(exp_dir), max_env_step=150_000, progress=False)
    summary = read_summary(exp_dir)
    assert summary['solved'] and summary['best_eval_return'] >= 195
    assert summary['env_steps'] <= 150_000 + 2 * 8 * 16
    assert summary['backend'] == 'local' and summary['actor_num'] == 2 and summary['sync_mode'] == 'async'
    # both actors delivered, and every measurement made it to the summary
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor'])
    assert summary['learner_samples_per_s'] > 0 and 0 <= summary['learner_idle_fraction'] <= 1
    assert summary['policy_lag_mean'] is not None and summary['policy_lag_max'] >= summary['policy_lag_mean']
    # weight versions: no action was taken with weights more than max_policy_lag versions old
    assert summary['max_policy_lag'] == 2 and summary['max_acting_lag'] <= 2
    assert os.path.isfile(exp_dir / 'ckpt' / 'ckpt_latest.pth') and os.path.isfile(exp_dir / 'ckpt' / 'ckpt_best.pth')
    assert policy.summary == summary
    assert os.path.isfile(exp_dir / 'config.py')
    logged = {tag for tag, _, _ in tb_scalars(str(exp_dir / 'log'))}
    assert {'parallel/env_steps_per_s', 'parallel/actor0_env_steps_per_s', 'parallel/actor1_env_steps_per_s',
            'parallel/learner_samples_per_s', 'parallel/learner_idle_fraction', 'learner/policy_lag_mean',
            'learner/policy_lag_max', 'evaluator/return_mean'} <= logged
    assert processes_with(run_marker) == []


def test_every_actor_collects_from_the_start_even_when_one_starts_long_before_the_others(tmp_path, run_marker):
    """Actor 0 sends segments while the other workers still build their envs: start-up leaves them for the learner
    (also after a resume)."""
    main, create = cartpole(actor_num=4)
    create['env'] = dict(type='slow_start_cartpole')
    main['env']['stop_value'] = None
    exp_dir = tmp_path / 'four'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), max_train_iter=150, progress=False)
    summary = read_summary(exp_dir)
    assert summary['train_iters'] == 150 and summary['actor_restarts'] == 0
    assert len(summary['env_steps_per_s_per_actor']) == 4
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor']), summary['env_steps_per_s_per_actor']
    # and again after a resume (the actors start the same way)
    parallel_pipeline(None, resume=str(exp_dir), max_train_iter=250, progress=False)
    summary = read_summary(exp_dir)
    assert summary['train_iters'] == 250
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor']), summary['env_steps_per_s_per_actor']
    assert processes_with(run_marker) == []


def test_an_actor_sent_sigterm_alone_is_restarted_and_the_reason_says_so(tmp_path, run_marker):
    """It was reported as 'actor 0 exited with code 0' (its SIGTERM handler exited cleanly, with 0)."""
    signaller = SignalActorAt(at=20, actor_id=0, signum=signal.SIGTERM)
    exp_dir = tmp_path / 'term'
    parallel_pipeline(cartpole(), exp_dir=str(exp_dir), max_train_iter=80, progress=False, learner_hooks=[signaller])
    summary = read_summary(exp_dir)
    assert signaller.killed is not None and summary['actor_restarts'] == 1
    assert summary['worker_failures'] == ['actor 0 was terminated (SIGTERM)'], summary['worker_failures']
    assert summary['train_iters'] == 80 and not summary['interrupted']
    assert processes_with(run_marker) == []


def test_dead_actors_are_restarted_and_no_process_outlives_the_run(tmp_path, run_marker):
    """Actor 0 hits an env exception, actor 1 is killed with SIGKILL: both come back, the run completes."""
    main, create = cartpole()
    create['env'] = dict(type='flaky_cartpole')
    main['import_names'] = ['test_parallel']  # where flaky_cartpole is registered (spawned processes import it)
    killer = KillActorAt(at=30, actor_id=1)
    exp_dir = tmp_path / 'faults'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), max_train_iter=150, progress=False, learner_hooks=[killer])
    summary = read_summary(exp_dir)
    assert killer.killed is not None
    assert summary['actor_restarts'] == 2
    failures = summary['worker_failures']
    assert any(f.startswith('actor 0 failed (EnvError') and 'the simulator crashed' in f for f in failures), failures
    assert 'actor 1 was killed by SIGKILL' in failures, failures
    assert summary['train_iters'] == 150 and not summary['interrupted']
    assert summary['segments'] > 0 and all(rate > 0 for rate in summary['env_steps_per_s_per_actor'])
    assert processes_with(run_marker) == []


def test_ctrl_c_stops_every_process_and_writes_a_final_checkpoint(tmp_path, run_marker):
    exp_dir = tmp_path / 'interrupted'
    with pytest.raises(KeyboardInterrupt):
        parallel_pipeline(cartpole(actor_num=1, start_method='spawn'), exp_dir=str(exp_dir), progress=False,
                          learner_hooks=[CtrlCAt(20)])
    summary = read_summary(exp_dir)
    assert summary['interrupted'] and summary['train_iters'] == 20
    state = torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['train_iter'] == 20
    assert processes_with(run_marker) == []


def hanging(on_step_timeout: str, manager: str = 'sync'):
    main, create = cartpole(actor_num=2)
    main['env'].update(step_timeout_s=0.5, on_step_timeout=on_step_timeout, stop_value=None)
    create['env'] = dict(type='hanging_cartpole')
    create['env_manager'] = dict(type=manager)
    return main, create


@pytest.mark.parametrize('backend,manager', [('local', 'sync'), ('local', 'async'), ('inline', 'sync')])
def test_an_env_step_that_hangs_fails_the_run_in_one_line_naming_the_actor_env_and_seed(tmp_path, run_marker, backend,
                                                                                       manager):
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError) as info:
        # the pause: actor 0 hangs in its second segment and its watchdog rings before the learner could finish
        parallel_pipeline(hanging('error', manager), exp_dir=str(tmp_path / 'hang'), backend=backend, max_train_iter=200,
                          progress=False, learner_hooks=[PauseAt(1, 2.0)])
    assert time.monotonic() - start < 15
    assert re.fullmatch(re.escape("actor 0: collector env 0 (seed 0) did not return from step within env.step_timeout_s=0.5 s"
                                  + (" (the env subprocesses were stopped)" if manager == 'async' else '') +
                                  ": fix the env or raise env.step_timeout_s (or set env.on_step_timeout='restart' to "
                                  "restart the actor); the final checkpoint was written first (env step ")
                        + r"\d+, train iter \d+\): --resume "
                        + re.escape(f"{tmp_path / 'hang'} continues from there once the cause is fixed"),
                        str(info.value)), str(info.value)
    assert processes_with(run_marker) == []


def test_with_on_step_timeout_restart_a_hanging_actor_is_restarted_with_a_warning(tmp_path, run_marker, capsys):
    exp_dir = tmp_path / 'hang_restart'
    parallel_pipeline(hanging('restart'), exp_dir=str(exp_dir), max_train_iter=60, progress=False,
                      learner_hooks=[PauseAt(1, 2.0)])  # actor 0 hangs and is restarted before the run could end
    summary = read_summary(exp_dir)
    assert summary['train_iters'] == 60 and summary['actor_restarts'] == 1
    assert summary['worker_failures'] == [
        'actor 0 failed (EnvTimeoutError: collector env 0 (seed 0) did not return from step within env.step_timeout_s=0.5 s: '
        'fix the env or raise env.step_timeout_s)']
    assert "acframe: warning: actor 0 failed (EnvTimeoutError" in capsys.readouterr().err
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor'])
    assert processes_with(run_marker) == []


def children_named(pid: int, prefix: str) -> List[int]:
    """Live children of ``pid`` whose ``/proc/PID/comm`` starts with ``prefix``."""
    found = []
    for entry in os.listdir('/proc'):
        try:
            with open(f'/proc/{entry}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/comm') as f:
                comm = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and comm.startswith(prefix):
            found.append(int(entry))
    return found


def signalled_run(exp_dir, signals, settle=0.5, extra=()):
    """A parallel CartPole run of 2 actors sent ``signals`` once it trains: ``(signum, then)``, ``then`` the seconds
    to wait after it, or a text to wait for in its output (up to 30 s); returns its exit code and its output
    (stdout and stderr, in order)."""
    import threading

    process = subprocess.Popen(
        [sys.executable, '-m', 'acframe.cli', '-m', 'parallel', '-c', 'cartpole_impala.py', '--exp-dir', str(exp_dir),
         'parallel.actor_num=2', 'env.stop_value=None', *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    err: List[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: process.stdout.read(1), '')), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while len(children_named(process.pid, 'acf-actor-')) < 2:  # the workers start inside the SIGTERM handler
            assert process.poll() is None and time.monotonic() < deadline, ''.join(err)
            time.sleep(0.05)
        time.sleep(settle)  # let it train a little
        for signum, then in signals:
            process.send_signal(signum)
            if isinstance(then, str):
                deadline = time.monotonic() + 30
                while then not in ''.join(err) and time.monotonic() < deadline:
                    time.sleep(0.005)
            else:
                time.sleep(then)
        process.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, ''.join(err)


def test_sigterm_stops_the_run_like_ctrl_c_with_exit_status_143(tmp_path, run_marker):
    """``kill -TERM`` of the learner: actors stopped, final checkpoint and summary written, no process left."""
    exp_dir = tmp_path / 'terminated'
    code, err = signalled_run(exp_dir, [(signal.SIGTERM, 0)])
    assert code == 143, err
    assert err.strip().splitlines()[-1] == 'acframe: terminated (SIGTERM)'
    summary = read_summary(exp_dir)
    assert summary['interrupted'] and summary['train_iters'] > 0
    assert torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['train_iter'] == summary['train_iters']
    assert processes_with(run_marker) == []


def test_a_second_ctrl_c_while_the_run_stops_does_not_cut_the_final_checkpoint_short(tmp_path, run_marker):
    """Two real SIGINTs (an impatient user), the second as soon as the run says it is stopping, so it lands while
    the workers stop: it is ignored, and the final checkpoint and summary are written (the second used to end the
    process with only the start's checkpoint: every step lost)."""
    exp_dir = tmp_path / 'twice'
    code, err = signalled_run(exp_dir, [(signal.SIGINT, '(a further Ctrl-C or SIGTERM is ignored'), (signal.SIGINT, 0)],
                              settle=1.0, extra=['policy.learn.learner.save_ckpt_freq=0'])
    assert code == 130, err
    summary = read_summary(exp_dir)
    assert summary['interrupted'] and summary['train_iters'] > 0 and summary['env_steps'] > 0
    assert torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['train_iter'] == summary['train_iters']
    assert processes_with(run_marker) == []


def test_workers_that_fail_to_start_leave_no_run_folder(tmp_path):
    """A failed start writes nothing, also when it is the workers' start that fails (parallel.start_timeout; the
    Ray backend's resource check alike): the new folder is taken back, and its name is free for the next run."""
    main, create = cartpole()
    with pytest.raises(EnvError, match=r"did not start within parallel.start_timeout=0.001 s") as info:
        parallel_pipeline((main, create), exp_dir=str(tmp_path / 'run'), progress=False,
                          overrides=['parallel.start_timeout=0.001'])
    assert 'final checkpoint' not in str(info.value)
    assert os.listdir(tmp_path) == []


def test_a_failed_start_in_a_given_folder_takes_back_only_what_the_start_wrote(tmp_path, monkeypatch):
    """--exp-dir an existing folder holding the user's files, and another program writing there while the workers
    start (really timing out): only acframe's own start files go; the user's file, the other program's file and
    folder stay."""
    from acframe.entry.parallel.local import LocalBackend

    folder = tmp_path / 'shared'
    folder.mkdir()
    (folder / 'notes.txt').write_text('mine')
    start = LocalBackend.start

    def start_while_another_program_writes(self, *args, **kwargs):
        (folder / 'draft.md').write_text('theirs')
        (folder / 'other_job').mkdir()
        (folder / 'other_job' / 'table.csv').write_text('1,2')
        return start(self, *args, **kwargs)

    monkeypatch.setattr(LocalBackend, 'start', start_while_another_program_writes)
    with pytest.raises(EnvError, match=r"did not start within parallel.start_timeout"):
        parallel_pipeline(cartpole(), exp_dir=str(folder), progress=False, overrides=['parallel.start_timeout=0.001'])
    assert sorted(os.listdir(folder)) == ['draft.md', 'notes.txt', 'other_job']
    assert (folder / 'other_job' / 'table.csv').read_text() == '1,2'


def test_a_parallel_run_resumed_on_another_backend_without_backend_says_so(tmp_path, capsys):
    """The backend is where the workers run, not a setting of the run: a resume without --backend runs on the
    default (local) one, and now says so when the run trained elsewhere; --backend given: no note."""
    from acframe.cli import main

    run = str(tmp_path / 'run')
    assert main(['-m', 'parallel', '-c', 'cartpole_impala.py', '--exp-dir', run, '-q', '--backend', 'inline',
                 '--max-env-step', '600']) == 0
    capsys.readouterr()
    assert main(['--resume', run, '--max-env-step', '1200', '-q']) == 0  # (said with -q too: no flag asked for it)
    assert (f"[acframe] note: {run} trained on the inline backend and resumes on local (pass --backend inline to "
            f"continue there)") in capsys.readouterr().err
    assert main(['--resume', run, '-q', '--max-env-step', '1800', '--backend', 'local']) == 0
    assert 'note' not in capsys.readouterr().err


def test_more_actor_processes_than_cores_is_warned_of_and_the_default_is_one_per_core(tmp_path):
    """A config written for a bigger machine (parallel.actor_num above the cores this process may use) ran its
    actors taking turns on the cores without a word; the inline backend (no processes) and the default say nothing."""
    import warnings

    from acframe.errors import ConfigWarning
    from acframe.utils import cpu_cores

    cores = cpu_cores()
    with pytest.warns(ConfigWarning, match=rf"^parallel.actor_num={cores + 1} actor processes share the {cores} CPU "
                                           rf"cores this process may use with the learner: .* set parallel.actor_num "
                                           rf"<= {cores} \(or leave it unset: one per core\)"):
        assert cli_main(['-m', 'parallel', '-c', 'cartpole_impala.py', '--exp-dir', str(tmp_path / 'many'), '-q',
                         '--max-env-step', '600', f'parallel.actor_num={cores + 1}']) == 0
    for name, args in (('default', []), ('inline', ['--backend', 'inline', f'parallel.actor_num={cores + 1}'])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            assert cli_main(['-m', 'parallel', '-c', 'cartpole_impala.py', '--exp-dir', str(tmp_path / name), '-q',
                             '--max-env-step', '600'] + args) == 0
        assert not [w for w in caught if 'actor_num' in str(w.message)], name
    with open(tmp_path / 'default' / 'summary.json') as f:
        assert json.load(f)['actor_num'] == cores


def test_a_script_without_the_main_guard_is_told_so_and_its_spawned_children_start_no_runs(tmp_path):
    """With spawned workers each child imports the user's script again: a script without
    ``if __name__ == '__main__':`` used to start a run in every child (3 run folders) and end in 187 lines blaming
    the env. Now each child refuses at once, the parent's one error names the guard, and no folder is left."""
    (tmp_path / 'train.py').write_text(
        "from acframe import parallel_pipeline\n"
        "parallel_pipeline('cartpole_impala.py', max_env_step=2000, progress=False,\n"
        "                  overrides=['parallel.start_method=spawn'])\n")
    done = subprocess.run([sys.executable, 'train.py'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith('acframe.errors.EnvError: ') and "if __name__ == '__main__':" in last, done.stderr
    assert os.listdir(tmp_path) == ['train.py']


def test_a_resume_whose_budget_is_spent_starts_no_worker_and_keeps_the_measured_rates(tmp_path, capsys):
    """Nothing to collect: no worker starts, nothing is evaluated again, and summary.json keeps the rates the run
    measured (they were overwritten with this sitting's 0 env steps/s)."""
    from acframe.cli import main

    run = str(tmp_path / 'run')
    assert main(['-m', 'parallel', '-c', 'cartpole_impala.py', '--exp-dir', run, '-q', '--max-env-step', '600']) == 0
    before = read_summary(tmp_path / 'run')
    assert before['env_steps_per_s'] > 0
    capsys.readouterr()
    assert main(['--resume', run, '--max-env-step', '300']) == 0
    out = capsys.readouterr()
    assert 'the budget is spent already' in out.out + out.err and '0 steps/s' not in out.out and '[eval]' not in out.out
    after = read_summary(tmp_path / 'run')
    for key in ('env_steps_per_s', 'env_steps_per_s_per_actor', 'learner_samples_per_s', 'startup_s', 'env_steps',
                'train_iters'):
        assert after[key] == before[key], key


# ---- budgets -----------------------------------------------------------------------------------------
@pytest.mark.parametrize('backend', ['local', 'inline'])
def test_the_env_step_budget_stops_collection_within_one_step_per_env(tmp_path, backend):
    """The last segments are cut to the steps left (8 envs per actor: at most 7 steps over), not a round added,
    and not rounded up to IMPALA's 16-step unrolls (a cut segment gives the buffer its whole unrolls)."""
    main, create = cartpole()
    main['env']['stop_value'] = None
    exp_dir = tmp_path / 'budget'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend=backend, max_env_step=1003, progress=False)
    summary = read_summary(exp_dir)
    assert 1003 <= summary['env_steps'] <= 1003 + 7, summary['env_steps']


@pytest.mark.parametrize('backend', ['local', 'inline'])
def test_the_last_synchronous_round_shares_the_steps_left_between_the_actors(tmp_path, backend):
    """A2C, 2 actors x 4 envs: the last round is cut to the steps left (at most 7 over), and is trained on."""
    exp_dir = tmp_path / 'a2c_budget'
    parallel_pipeline(a2c_cartpole(), exp_dir=str(exp_dir), backend=backend, max_env_step=1003, progress=False)
    summary = read_summary(exp_dir)
    assert 1003 <= summary['env_steps'] <= 1003 + 7, summary['env_steps']
    assert summary['train_iters'] == 26  # 25 full rounds of 40 steps, then one of 2 actors x 4 envs x 1 step
    assert summary['discarded_segments'] == 0


# ---- the inline backend ----------------------------------------------------------------------------
def test_inline_backend_runs_the_same_roles_in_one_process(tmp_path, run_marker, tb_scalars):
    exp_dir = tmp_path / 'inline'
    main, create = cartpole()
    main['env']['stop_value'] = None  # run all 300 iterations
    policy = parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='inline', max_train_iter=300, progress=False)
    summary = read_summary(exp_dir)
    assert summary['backend'] == 'inline' and summary['train_iters'] == 300
    evaluations = [value for tag, _, value in tb_scalars(str(exp_dir / 'log')) if tag == 'evaluator/return_mean_by_iter']
    assert len(evaluations) == 4 and max(evaluations[1:]) > 2 * evaluations[0]  # iterations 0, 100, 200, 300: it learns
    assert summary['max_acting_lag'] == 0  # the learner does not move while an actor acts
    assert summary['startup_s'] < 5
    assert processes_with(run_marker) == []  # no process was started
    obs = torch.zeros(3, 4)
    assert policy.eval_mode.forward(obs)['action'].shape == (3,)


def test_inline_backend_rebuilds_an_actor_whose_env_raised(tmp_path):
    main, create = cartpole()
    create['env'] = dict(type='flaky_cartpole')
    exp_dir = tmp_path / 'inline_flaky'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='inline', max_train_iter=80, progress=False)
    summary = read_summary(exp_dir)
    assert summary['actor_restarts'] == 1 and summary['train_iters'] == 80


def test_resume_continues_the_learner_and_gives_the_actors_fresh_seeds(tmp_path):
    exp_dir = str(tmp_path / 'resume')
    parallel_pipeline(cartpole(), exp_dir=exp_dir, backend='inline', max_train_iter=20, progress=False)
    first = torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert first['parallel']['actor_incarnations'] == [1, 1]
    parallel_pipeline(None, resume=exp_dir, backend='inline', max_train_iter=40, progress=False)
    second = torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert second['train_iter'] == 40 and second['env_step'] > first['env_step']
    assert second['parallel']['actor_incarnations'] == [2, 2]


def test_on_policy_policies_run_in_synchronous_rounds(tmp_path):
    """A2C: every actor delivers one segment collected with the current weights, then one update."""
    exp_dir = tmp_path / 'a2c'
    parallel_pipeline(a2c_cartpole(), exp_dir=str(exp_dir), backend='inline', max_train_iter=15, progress=False)
    summary = read_summary(exp_dir)
    assert summary['sync_mode'] == 'sync'
    assert summary['segments'] == 2 * summary['train_iters'] and summary['discarded_segments'] == 0
    assert summary['policy_lag_max'] == 0 and summary['max_acting_lag'] == 0
    assert summary['env_steps'] == summary['train_iters'] * 2 * 4 * 5


def test_ppo_in_synchronous_rounds_counts_the_gradient_steps_on_each_rollout_as_its_lag(tmp_path):
    """PPO's minibatches carry no stamp of their own: a round's k-th gradient step trains on the rollout that the
    learner's version before the round collected, so its lag is k (0 .. epochs x minibatches - 1)."""
    main, create = a2c_cartpole()
    create['policy']['type'] = 'ppo'
    main['policy']['learn'] = dict(epoch_per_collect=2, batch_size=10)  # a round: 2 actors x 20 = 40: 4 steps an epoch
    exp_dir = tmp_path / 'ppo'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='inline', max_train_iter=24, progress=False)
    summary = read_summary(exp_dir)
    assert summary['sync_mode'] == 'sync' and summary['train_iters'] == 24 and summary['max_acting_lag'] == 0
    assert summary['policy_lag_max'] == 7 and summary['policy_lag_mean'] == pytest.approx(3.5)  # 3 rounds of 0..7


def test_every_evaluation_reaches_the_learner_hooks(tmp_path, tb_scalars):
    from acframe.worker import LearnerHook

    class Recorder(LearnerHook):
        results = []

        def after_eval(self, learner, result):
            self.results.append(result)

    exp_dir = tmp_path / 'hooks'
    parallel_pipeline(a2c_cartpole(), exp_dir=str(exp_dir), backend='inline', max_train_iter=15, progress=False,
                      learner_hooks=[Recorder()])
    logged = [(step, value) for tag, step, value in tb_scalars(str(exp_dir / 'log')) if tag == 'evaluator/return_mean_by_iter']
    assert [(r['train_iter'], r['return_mean']) for r in Recorder.results] == [(s, pytest.approx(v)) for s, v in logged]
    assert len(Recorder.results) >= 2 and Recorder.results[-1]['train_iter'] == 15


def test_on_policy_policies_are_refused_in_async_mode(tmp_path):
    with pytest.raises(ConfigError, match=r"on-policy.*parallel.sync_mode"):
        parallel_pipeline(a2c_cartpole(sync_mode='async'), exp_dir=str(tmp_path / 'x'), backend='inline', progress=False)


# ---- start-up errors -------------------------------------------------------------------------------
class LearnOnlyPolicy(IMPALAPolicy):
    modes = ('learn', 'eval')


POLICY_REGISTRY.register('impala_without_collect', LearnOnlyPolicy)


def test_a_policy_without_the_collect_mode_is_refused_at_start_up(tmp_path):
    main, create = cartpole()
    create['policy'] = dict(type='impala_without_collect')
    with pytest.raises(ConfigError, match=r"no collect mode, which the actors"):
        parallel_pipeline((main, create), exp_dir=str(tmp_path / 'x'), progress=False)
    assert not os.path.exists(tmp_path / 'x' / 'ckpt')


def test_no_actors_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"parallel.actor_num' = 0 must lie in \[1, 4096\] \(or None\)"):
        parallel_pipeline(cartpole(actor_num=0), exp_dir=str(tmp_path / 'x'), progress=False)


class CollectRefusingPolicy(IMPALAPolicy):
    """Only an actor builds the collect mode: this one refuses to start there."""

    def _init_collect(self) -> None:
        raise ConfigError("impala_refusing_collect: this collect mode cannot start")


POLICY_REGISTRY.register('impala_refusing_collect', CollectRefusingPolicy)


def test_an_actor_that_cannot_start_fails_the_run_at_start_up_with_its_error(tmp_path, run_marker):
    main, create = cartpole(actor_num=1)
    create['policy'] = dict(type='impala_refusing_collect')
    with pytest.raises(ConfigError, match=r"impala_refusing_collect: this collect mode cannot start"):
        parallel_pipeline((main, create), exp_dir=str(tmp_path / 'x'), progress=False)
    assert processes_with(run_marker) == []


def test_the_cli_runs_the_parallel_pipeline_and_reports_bad_backends_in_one_line(tmp_path, capsys):
    exp_dir = tmp_path / 'cli'
    code = cli_main(['-m', 'parallel', '--backend', 'inline', '-c', 'cartpole_impala.py', '--exp-dir', str(exp_dir),
                     '--max-train-iter', '5', '-q', 'parallel.actor_num=1'])
    assert code == 0 and read_summary(exp_dir)['train_iters'] == 5
    code = cli_main(['-m', 'parallel', '--backend', 'local', '--ray-address', '127.0.0.1:1', '-c', 'cartpole_impala.py',
                     '--exp-dir', str(tmp_path / 'y'), '-q'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["acframe: error: ray_address (--ray-address) is only used by backend 'ray' (--backend ray); the backend is 'local'"]


# ---- the pieces ------------------------------------------------------------------------------------
class AdvancingSource:
    """A weights source whose newest version moves ahead by ``step`` every time it is read."""

    def __init__(self, step: int) -> None:
        self.step, self.newest, self.loads = step, 0, []

    def latest_version(self) -> int:
        self.newest += self.step
        return self.newest

    def load_latest(self, load_weights) -> int:
        load_weights({'w': torch.full((1,), float(self.newest))})
        self.loads.append(self.newest)
        return self.newest


class RecordingCollectMode:
    def __init__(self) -> None:
        self.weights = None
        self.policy_cfg = None

    def forward(self, obs):
        return {'action': torch.zeros(obs.shape[0], dtype=torch.int64)}

    def load_weights(self, weights):
        self.weights = weights

    def get_train_sample(self, segment):
        return segment

    def reset(self):
        pass


@pytest.mark.parametrize('bound', [0, 3, 10])
def test_actors_refresh_their_weights_before_acting_with_weights_older_than_the_bound(bound):
    source = AdvancingSource(step=2)
    mode = BoundedLagCollectMode(RecordingCollectMode(), source, max_policy_lag=bound)
    mode.start_segment()
    acting = []
    for _ in range(20):
        newest_before = source.newest + source.step  # what forward() will read
        out = mode.forward(torch.zeros(3, 4))
        assert out[VERSION_KEY].tolist() == [mode.version] * 3
        acting.append(newest_before - mode.version)
    assert max(acting) <= bound
    assert mode.max_acting_lag == max(acting)
    assert len(source.loads) > 1  # the weights were refreshed in the middle of the segment


def test_shared_weights_hand_actors_the_newest_version():
    model = torch.nn.Linear(3, 2)
    shared = SharedWeights(model.state_dict())
    assert shared.latest_version() == -1
    for version in (0, 1, 2):
        with torch.no_grad():
            model.weight.fill_(float(version))
        shared.publish(model.state_dict(), version)
    reader = torch.nn.Linear(3, 2)
    assert shared.load_latest(reader.load_state_dict) == 2 and shared.latest_version() == 2
    assert torch.equal(reader.weight, torch.full((2, 3), 2.0))
    assert not shared.stopped()
    shared.request_stop()
    assert shared.stopped()


# ---- pixels ----------------------------------------------------------------------------------------
from acframe.models import VAC  # noqa: E402
from acframe.registry import MODEL_REGISTRY  # noqa: E402


@MODEL_REGISTRY.register('uint8_only_vac')
class Uint8OnlyVAC(VAC):
    """VAC that refuses observations that are not uint8 (in every process: the actors fork with the registry)."""

    @staticmethod
    def _check(obs):
        if obs.dtype != torch.uint8:
            raise TypeError(f'observations reached the model as {obs.dtype}, not uint8')
        return obs

    def compute_actor(self, obs):
        return super().compute_actor(self._check(obs))

    def compute_critic(self, obs):
        return super().compute_critic(self._check(obs))

    def compute_actor_critic(self, obs):
        return super().compute_actor_critic(self._check(obs))


def pixel_dot(**parallel):
    """IMPALA on the moving-dot pixel env (uint8 (2, 16, 16) frames): random play scores 4, the stop value is 12."""
    main = dict(
        exp_name='parallel_pixel_test',
        env=dict(env_id='toy_pixel_dot', collector_env_num=8, evaluator_env_num=4, n_evaluator_episode=4, stop_value=12),
        parallel={'actor_num': 2, **parallel},
        policy=dict(
            unroll_len=8,
            model=dict(type='uint8_only_vac', encoder='impala_resnet', encoder_channels=[16],
                       encoder_hidden_size_list=[64], activation='relu'),
            learn=dict(update_per_collect=2, batch_size=16, learning_rate=0.002, entropy_weight=0.003, discount_factor=0.5),
            collect=dict(n_sample=8),  # one unroll of 8 steps from each of the 8 envs
            eval=dict(evaluator=dict(eval_freq=20)),
        ),
        seed=0,
    )
    return main, dict(env=dict(type='toy_pixel_dot'), policy=dict(type='impala'))


@pytest.mark.parametrize('backend', ['local', 'inline'])
def test_pixel_observations_cross_the_backends_as_uint8_and_are_learned_from(tmp_path, backend):
    """Seeds 1 and 2 reached 12 after 4.2k / 5.0k env steps (local) and 4.0k / 6.0k (inline); the budget is 40k."""
    policy = parallel_pipeline(pixel_dot(), exp_dir=str(tmp_path / backend), backend=backend, progress=False,
                               max_env_step=40_000)
    summary = read_summary(tmp_path / backend)
    assert summary['solved'], summary
    assert isinstance(policy.model, Uint8OnlyVAC)


def test_segment_messages_keep_uint8_images_across_a_pickle():
    """What the local pipes and Ray's object store move: numpy arrays, uint8 images as uint8."""
    import pickle

    from acframe.data import make_tree
    from acframe.entry.parallel.messages import numpy_to_tree, tree_to_numpy

    images = torch.randint(0, 256, (5, 3, 4, 84, 84), dtype=torch.uint8)
    tree = make_tree({'obs': images, 'reward': torch.zeros(4, 3), 'stats': {'logit': torch.zeros(4, 3, 6)}})
    packed = pickle.dumps(tree_to_numpy(tree), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(packed) < images.numel() * 1.1  # one byte per pixel on the wire
    back = numpy_to_tree(pickle.loads(packed))
    assert back.obs.dtype == torch.uint8 and torch.equal(back.obs, images)


def test_final_observations_travel_as_the_rows_where_an_episode_ended_and_come_back_bit_exact():
    """``final_obs`` (N, T, ...) is zero but where an episode ended: only those rows cross (half an Atari segment's
    bytes otherwise); every other leaf, and every bit of the kept rows (-0.0 too), is as it was."""
    import pickle

    from acframe.data import make_tree
    from acframe.entry.parallel.messages import numpy_to_tree, tree_to_numpy

    frames = torch.randint(0, 256, (8, 21, 4, 84, 84), dtype=torch.uint8)
    final = torch.zeros(8, 20, 4, 84, 84, dtype=torch.uint8)
    final[3, 7] = frames[3, 7]  # one episode ended in this segment
    vector_final = torch.zeros(8, 20, 3)
    vector_final[5, 19] = torch.tensor([-0.0, 0.0, 2.5])
    tree = make_tree({'obs': frames, 'final_obs': final, 'reward': torch.zeros(8, 20),
                      'truncated': torch.zeros(8, 20, dtype=torch.bool), 'dict': {'final_obs': {'vector': vector_final}}})
    packed = pickle.dumps(tree_to_numpy(tree), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(packed) < frames.numel() + 2 * final[3, 7].numel()  # the frames and the one final frame
    back = numpy_to_tree(pickle.loads(packed))
    for (key, want), (_, got) in zip(sorted(tree_leaves(tree)), sorted(tree_leaves(back))):
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want), key
    assert torch.signbit(back.dict.final_obs.vector[5, 19, 0])  # bit-exact: the sign of zero survives


@MODEL_REGISTRY.register('dict_dtype_vac')
class DictDtypeVAC(Uint8OnlyVAC):
    """VAC that refuses a Dict observation whose image is not uint8 or whose vector is not float32 (every process)."""

    @staticmethod
    def _check(obs):
        if obs['image'].dtype != torch.uint8 or obs['target'].dtype != torch.float32:
            raise TypeError(f"observations reached the model as {obs['image'].dtype} / {obs['target'].dtype}")
        return obs


@pytest.mark.parametrize('backend', ['local', 'inline'])
def test_dict_observations_cross_the_backends_with_their_image_as_uint8(tmp_path, backend):
    """The image + vector env (toy_pixel_goal): segments cross process boundaries per key; a short run."""
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1),
                parallel=dict(actor_num=2),
                policy=dict(unroll_len=4, collect=dict(n_sample=4), learn=dict(batch_size=4),
                            model=dict(type='dict_dtype_vac', encoder='impala_resnet', encoder_channels=[4],
                                       encoder_hidden_size_list=[16], vector_hidden_size_list=[8], obs_norm=True),
                            eval=dict(evaluator=dict(eval_freq=5))))
    create = dict(env=dict(type='toy_pixel_goal'), policy=dict(type='impala'))
    policy = parallel_pipeline((main, create), exp_dir=str(tmp_path / backend), backend=backend, progress=False,
                               max_env_step=800, seed=0)
    summary = read_summary(tmp_path / backend)
    assert summary['env_steps'] >= 800 and summary['train_iters'] > 0, summary
    assert isinstance(policy.model, DictDtypeVAC) and policy.model.obs_normalizer.count > 100  # vector statistics learned


def test_segment_messages_keep_a_dict_observations_keys_and_dtypes_across_a_pickle():
    """What the local pipes and Ray's object store move for a Dict observation: one array per key."""
    import pickle

    from acframe.data import make_tree
    from acframe.entry.parallel.messages import numpy_to_tree, tree_to_numpy

    images = torch.randint(0, 256, (5, 3, 1, 84, 84), dtype=torch.uint8)
    tree = make_tree({'obs': {'image': images, 'target': torch.rand(5, 3, 2)}, 'reward': torch.zeros(4, 3)})
    packed = pickle.dumps(tree_to_numpy(tree), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(packed) < images.numel() * 1.1  # one byte per pixel on the wire
    back = numpy_to_tree(pickle.loads(packed))
    assert back.obs.image.dtype == torch.uint8 and torch.equal(back.obs.image, images)
    assert back.obs.target.dtype == torch.float32 and torch.equal(back.obs.target, tree.obs.target)


MULTI_THREADED_SCRIPT = '''
import torch
from acframe.entry.parallel import parallel_pipeline


def main():
    torch.set_num_threads(2)
    matrix = torch.randn(512, 512)
    (matrix @ matrix).sum()  # this process's intra-op thread pool has run (as after a serial run with 2 threads)
    cfg = dict(env=dict(env_id='CartPole-v1', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                        stop_value=None),
               parallel=dict(actor_num=1, start_timeout=60.0),
               policy=dict(collect=dict(n_sample=4), unroll_len=8, learn=dict(torch_threads=2)))
    policy = parallel_pipeline((cfg, dict(policy=dict(type='impala'))), exp_dir='run', progress=False,
                               max_env_step=640)
    print('env_steps', policy.summary['env_steps'])


if __name__ == '__main__':
    main()
'''


def test_workers_of_a_learner_with_several_torch_threads_are_spawned_and_start(tmp_path):
    """A child forked from a process whose torch thread pool had run hung at its first op (it never started):
    with policy.learn.torch_threads > 1, 'auto' spawns the actors and the evaluator."""
    from acframe.config import compile_config
    from acframe.entry.parallel.local import start_method

    def method(threads):
        return start_method(compile_config(cartpole(), overrides=[f'policy.learn.torch_threads={threads}']))
    assert method(0) == method(1) == 'fork' and method(2) == 'spawn'
    (tmp_path / 'two_threads.py').write_text(MULTI_THREADED_SCRIPT)
    done = subprocess.run([sys.executable, 'two_threads.py'], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'env_steps 640' in done.stdout


class SlowLearner(LearnerHook):
    """Makes every update take ``seconds`` longer: a learner slower than its actors."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def after_iter(self, learner, info):
        time.sleep(self.seconds)


def test_a_learner_slower_than_its_actors_trains_on_everything_they_collect(tmp_path):
    """IMPALA's FIFO setting (each unroll trained on once, a buffer of one batch): the actors wait for the learner
    (one segment taken per update once it is behind) instead of the buffer overwriting unrolls never trained on.
    Before this, a learner on a GPU machine with 15 actors took in every waiting segment whenever its buffer ran
    dry and trained on 13% of what they collected."""
    main, create = cartpole()
    main['env']['stop_value'] = None
    main['policy']['learn'] = dict(update_per_collect=1, batch_size=8)
    main['policy']['other'] = dict(replay_buffer=dict(replay_buffer_size=8, max_use=1))
    exp_dir = tmp_path / 'slow'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='local', max_env_step=4000, progress=False,
                      learner_hooks=[SlowLearner(0.03)])
    summary = read_summary(exp_dir)
    assert summary['samples_evicted_unused'] == 0, summary
    segment_steps = 8 * 16  # n_sample unrolls of 16 steps; samples_trained counts env steps (T·B per update)
    assert summary['samples_trained'] >= summary['env_steps'] - 2 * segment_steps, summary  # all but the last


def test_the_receive_limit_applies_to_a_once_only_buffer_of_actors_that_wait_and_to_nothing_else():
    """``ParallelRun.receive_limit``: segments that fit unused in a ``max_use=1`` buffer; none for a replay buffer
    (``max_use`` > 1: ``env_steps_per_update`` alone sets its ratio) or for actors that run free (0)."""
    from types import SimpleNamespace

    from acframe.data import make_tree
    from acframe.data.buffer import ReplayBuffer
    from acframe.entry.parallel.run import ParallelRun

    def limit(max_use, steps_per_update=640.0, segment_samples=32, at_least_one=False, pushed=0):
        buffer = ReplayBuffer(replay_buffer_size=64, max_use=max_use)
        if pushed:
            buffer.push(make_tree({'reward': torch.zeros(pushed, 20)}))
        run = SimpleNamespace(buffer=buffer, steps_per_update=steps_per_update, segment_samples=segment_samples)
        return ParallelRun.receive_limit(run, at_least_one)

    assert limit(1) == 2 and limit(1, pushed=32) == 1 and limit(1, pushed=64) == 0
    assert limit(1, pushed=64, at_least_one=True) == 1  # no batch to train on: one more, whatever it costs
    assert limit(1, segment_samples=0) == 1  # before the first segment: one, to learn a segment's size
    assert limit(16, pushed=64) is None and limit(1, steps_per_update=0.0, pushed=64) is None


@pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'), reason='needs a CPU affinity mask (Linux)')
def test_the_default_actor_count_is_one_per_core_this_process_may_use():
    """A process pinned to one core (taskset, a container's CPU set) starts one actor, not one per core of the machine;
    data-parallel learners still get at least one actor each."""
    code = textwrap.dedent('''
        import os
        from acframe.config import compile_config
        from acframe.entry.parallel.run import resolve_actor_num
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        cfg = compile_config('cartpole_impala.py')
        two = compile_config('cartpole_impala.py', overrides=['parallel.learner_num=2'])
        print(resolve_actor_num(cfg, 'local'), resolve_actor_num(two, 'local'))
    ''')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ['1', '2']


MAIN_REGISTERED = '''
import gymnasium as gym
from acframe import parallel_pipeline

if __name__ == '__main__':
    gym.register('MainCart-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv', max_episode_steps=200)
    parallel_pipeline('cartpole_impala.py', overrides=['env.env_id=MainCart-v0', 'env.stop_value=None',
                                                       'parallel.start_method=spawn', 'parallel.actor_num=1'],
                      exp_dir='run', max_env_step=500, progress=False)
'''


def test_an_env_a_script_registered_in_itself_is_named_as_missing_in_a_spawned_worker(tmp_path):
    """The start checks (in the script's process) found the env; the spawned actor did not, and said only 'needs
    that module imported' of an env the user had registered two lines above."""
    import subprocess
    import sys

    (tmp_path / 'main_env.py').write_text(MAIN_REGISTERED)
    done = subprocess.run([sys.executable, 'main_env.py'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "env.env_id 'MainCart-v0' is neither a gymnasium id" in done.stderr, done.stderr
    assert re.search(r"\(said by (actor 0|the evaluator), a process of its own started with parallel.start_method="
                     r"'spawn': it has what import_names imports, not what a script registered in itself under if "
                     r"__name__ == '__main__'", done.stderr), done.stderr  # (whichever of the two answers first)
    assert sorted(os.listdir(tmp_path)) == ['main_env.py']
