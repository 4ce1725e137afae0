"""Asynchronous training (``-m async``, ``acframe.entry.async_training``): A3C's Hogwild workers on a shared model.

* a worker's update, made in a forked process on the shared-memory policy, equals the same gradient steps in one
  process (same weights, same batch -> the same weights and the same optimizer statistics), for RMSprop, TF-style
  RMSprop and Adam;
* two workers both move the shared weights, and each parameter's shared step count is the sum of their steps;
* a run from the CLI completes (evaluation, checkpoint, summary) and ``--resume`` continues it; SIGTERM writes the
  final checkpoint and summary (exit 143), as Ctrl-C does (exit 130);
* a killed or failing worker ends the run with one line naming it; the shared counts take no lock, so a worker
  killed in the middle of adding to one cannot hang worker 0;
* bad input: one line naming the key, exit 2, nothing written.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from acframe.cli import main
from acframe.config import compile_config
from acframe.entry.async_training import AsyncWorkerError, SharedCounter, async_pipeline
from acframe.utils import cpu_cores
from acframe.envs import make_env_manager
from acframe.policy import create_policy
from acframe.worker import Learner, LearnerHook, SampleCollector

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = [('env.collector_env_num', 2), ('policy.collect.n_sample', 10)]


def _policy_and_samples(optim, seeds=(0,)):
    """A fresh A2C policy (weights from torch seed 0) and one collected rollout per env seed."""
    cfg = compile_config('cartpole_a2c.py', SMALL + [('policy.learn.optim', optim)])
    torch.manual_seed(0)
    env = make_env_manager(cfg, 'collector', 2, 0)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    env.close()
    samples = []
    for seed in seeds:
        env = make_env_manager(cfg, 'collector', 2, seed)
        collector = SampleCollector(env, policy.collect_mode, cfg.policy.collect.n_sample)
        samples.append(policy.collect_mode.get_train_sample(collector.collect(collector.steps_per_env)))
        env.close()
    torch.manual_seed(0)
    fresh = create_policy(cfg, env.observation_space, env.action_space)
    return cfg, fresh, samples


def _steps(policy, sample, n):
    learner = Learner(policy.learn_mode)
    for _ in range(n):
        learner.train_rollout(policy.learn_mode.prepare(sample))


def _in_children(*jobs):
    """Run each ``job()`` in its own forked process, at once; fail unless all exit 0."""
    def child(job):
        torch.set_num_threads(1)
        try:
            job()
        except BaseException:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            os._exit(1)
        os._exit(0)

    context = multiprocessing.get_context('fork')
    procs = [context.Process(target=child, args=(job,)) for job in jobs]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def _optimizer_state(policy):
    return [{k: v.clone() for k, v in policy._optimizer.state[p].items()} for p in policy._params]


@pytest.mark.parametrize('optim', ['rmsprop', 'rmsprop_tf', 'adam'])
def test_worker_update_on_shared_policy_equals_one_process(optim):
    _, shared, (sample,) = _policy_and_samples(optim)
    _, plain, _ = _policy_and_samples(optim)
    shared.share_memory()
    assert all(p.is_shared() for p in shared._model.parameters())
    _in_children(lambda: _steps(shared, sample, 2))  # two steps: the optimizer statistics count too
    _steps(plain, sample, 2)
    for (name, a), b in zip(shared._model.state_dict().items(), plain._model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)
    for a, b in zip(_optimizer_state(shared), _optimizer_state(plain)):
        assert a.keys() == b.keys()
        for key in a:
            torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6, msg=key)
    assert all(float(s['step']) == 2 for s in _optimizer_state(shared))


def test_two_workers_both_move_the_shared_weights():
    _, shared, (first, second) = _policy_and_samples('rmsprop', seeds=(0, 100))
    start = {k: v.clone() for k, v in shared._model.state_dict().items()}
    shared.share_memory()
    _in_children(lambda: _steps(shared, first, 5), lambda: _steps(shared, second, 5))
    assert all(float(s['step']) == 10 for s in _optimizer_state(shared))
    alone = []
    for sample in (first, second):  # each worker's steps without the other's
        _, plain, _ = _policy_and_samples('rmsprop')
        _steps(plain, sample, 5)
        alone.append(plain._model.state_dict())
    for name, value in shared._model.state_dict().items():
        if 'weight' not in name:
            continue
        assert not torch.equal(value, start[name])
        for other in alone:
            assert not torch.allclose(value, other[name], atol=1e-6), name


def _cli(*args, **kwargs):
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1')
    return subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-q', *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _summary(folder):
    with open(os.path.join(folder, 'summary.json')) as f:
        return json.load(f)


def test_cli_run_completes_and_resumes(tmp_path):
    folder = str(tmp_path / 'run')
    proc = _cli('-m', 'async', '-c', 'cartpole_a3c.py', '--exp-dir', folder, '--max-env-step', '2000',
                'env.stop_value=None', 'policy.eval.evaluator.eval_freq=40', 'policy.model.obs_norm=True',
                'policy.learn.reward_norm=True')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    first = _summary(folder)
    # worker 0's checkpoint holds the shared normalization statistics: both workers' steps (all but a last segment)
    learn = torch.load(os.path.join(folder, 'ckpt', 'ckpt_latest.pth'), weights_only=True)['policy']
    for count in (learn['model']['obs_normalizer.count'], learn['reward_normalizer']['count']):
        assert first['env_steps'] - 2 * 4 * 5 <= float(count) <= first['env_steps'] + 1, (count, first['env_steps'])
    assert first['async_worker_num'] == 2 and not first['interrupted']
    assert 2000 <= first['env_steps'] < 2000 + 2 * 4  # within one step per env of the two workers' 8
    assert first['last_eval_return'] is not None and first['train_iters'] >= 2000 // 20 - 2
    assert os.path.isfile(os.path.join(folder, 'ckpt', 'ckpt_latest.pth'))
    assert json.load(open(os.path.join(folder, 'config.json')))['mode'] == 'async'
    proc = _cli('--resume', folder, '--max-env-step', '3000')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    second = _summary(folder)
    assert 3000 <= second['env_steps'] < 3000 + 8 and second['train_iters'] > first['train_iters']
    assert second['wall_s'] > first['wall_s']


def test_a_config_written_for_async_runs_there_without_m_and_another_pipeline_warns(tmp_path, capsys):
    """cartpole_a3c.py run without -m trained serial A2C with 4 envs, without a word (its pipeline key now says
    'async'); an -m or a script's pipeline function that runs it otherwise is warned."""
    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
    from acframe.errors import ConfigWarning

    folder = str(tmp_path / 'run')
    proc = _cli('-c', 'cartpole_a3c.py', '--exp-dir', folder, '--max-env-step', '400', 'env.stop_value=None')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and 'written for' not in err, err
    assert json.load(open(os.path.join(folder, 'config.json')))['mode'] == 'async'
    assert _summary(folder)['async_worker_num'] == 2
    # the key names the pipeline a file is written for, not the run's: a run of the file before it had the key
    # resumes with the file as it is now (it was "the config given changes 1 key(s) of the run: pipeline")
    old = str(tmp_path / 'old')
    proc = _cli('-m', 'async', '-c', 'cartpole_a3c.py', '--exp-dir', old, '--max-env-step', '200', 'env.stop_value=None',
                'pipeline=None')
    assert proc.communicate(timeout=120)[1] is not None and proc.returncode == 0
    proc = _cli('--resume', old, '-c', 'cartpole_a3c.py', '--max-env-step', '400', 'env.stop_value=None')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and _summary(old)['env_steps'] >= 400, err
    ray = str(tmp_path / 'ray')  # the file's pipeline refuses what -m async refuses
    assert main(['-c', 'cartpole_a3c.py', '--backend', 'ray', '--exp-dir', ray]) == 2
    assert '-m async runs its workers on this machine only' in capsys.readouterr().err
    assert not os.path.exists(ray)
    with pytest.warns(ConfigWarning, match=r"^this config is written for -m async \(pipeline='async'\): this serial "
                                           r"run trains it otherwise; run acframe -c CONFIG without -m \(or -m "
                                           r"async\), or async_pipeline\(\) from a script$"):
        serial_pipeline_onpolicy('cartpole_a3c.py', max_env_step=100, exp_dir=str(tmp_path / 'serial'),
                                 overrides=['env.stop_value=None'], progress=False)
    assert json.load(open(tmp_path / 'serial' / 'config.json'))['mode'] == 'serial_onpolicy'


@pytest.mark.parametrize('signum, code', [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_write_the_final_checkpoint(tmp_path, signum, code):
    folder = str(tmp_path / 'run')
    # its own process group, as a terminal's job: Ctrl-C reaches every process of it
    proc = _cli('-m', 'async', '-c', 'cartpole_a3c.py', '--exp-dir', folder, '--max-env-step', '10000000',
                'env.stop_value=None', start_new_session=True)
    deadline = time.monotonic() + 60
    log = os.path.join(folder, 'ckpt', 'ckpt_latest.pth')
    while not os.path.isfile(log) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    summary = _summary(folder)
    assert summary['interrupted'] and summary['env_steps'] > 0


class _KillWorker(LearnerHook):
    def __init__(self, signum=signal.SIGKILL):
        self.done, self.signum = False, signum

    def after_iter(self, learner, info):
        if not self.done and learner.train_iter >= 20:
            for child in multiprocessing.active_children():
                if child.name == 'acframe-async1':
                    os.kill(child.pid, self.signum)
                    self.done = True


class _SlowEvaluations(LearnerHook):
    """Worker 0 takes 0.5 s over each evaluation: worker 1 spends the budget meanwhile (a loaded machine's timing)."""

    def after_eval(self, learner, result):
        time.sleep(0.5)


def test_the_summary_and_final_checkpoint_count_every_worker_s_steps_when_the_budget_ends_during_an_evaluation(tmp_path):
    """Worker 0 evaluates while worker 1 goes on to the end of the budget: the run's train iter must still be every
    worker's steps (one per 20-transition rollout), in the summary and in the final checkpoint (which --resume
    continues from). It was the count worker 0 took before its evaluation: 80 of 102 under load."""
    folder = tmp_path / 'run'
    async_pipeline('cartpole_a3c.py', overrides=['env.stop_value=None', 'policy.eval.evaluator.eval_freq=10'],
                   exp_dir=str(folder), max_env_step=2000, progress=False, learner_hooks=[_SlowEvaluations()])
    summary = _summary(str(folder))
    assert summary['train_iters'] >= 2000 // 20, summary
    state = torch.load(folder / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['train_iter'] == summary['train_iters']


def test_killed_worker_is_one_line(tmp_path):
    start = time.monotonic()
    with pytest.raises(AsyncWorkerError) as info:
        async_pipeline('cartpole_a3c.py', overrides=['env.stop_value=None'], exp_dir=str(tmp_path / 'run'),
                       max_env_step=10_000_000, progress=False, learner_hooks=[_KillWorker()])
    message = str(info.value)
    assert '\n' not in message and message.startswith('async worker 1 (pid ')
    assert 'was killed by SIGKILL' in message and '; the run stopped; the final checkpoint was written first (env step ' in message
    assert time.monotonic() - start < 60
    assert not [c for c in multiprocessing.active_children() if c.name.startswith('acframe-async')]
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['train_iter'] >= 20  # the shared model's steps until the death, not the start's checkpoint


def test_a_sigterm_to_one_worker_alone_interrupts_the_run_as_it_does_a_data_parallel_rank(tmp_path):
    """The worker ends its turn; worker 0 writes the final checkpoint and summary and ends as interrupted (exit 143
    from the CLI), naming the worker."""
    from acframe.signals import Terminated

    with pytest.raises(Terminated) as info:
        async_pipeline('cartpole_a3c.py', overrides=['env.stop_value=None'], exp_dir=str(tmp_path / 'run'),
                       max_env_step=10_000_000, progress=False, learner_hooks=[_KillWorker(signal.SIGTERM)])
    assert str(info.value).startswith('async worker 1 (pid ') and info.value.signum == signal.SIGTERM
    summary = _summary(str(tmp_path / 'run'))
    assert summary['interrupted'] and summary['train_iters'] >= 20
    assert not [c for c in multiprocessing.active_children() if c.name.startswith('acframe-async')]


def test_a_worker_killed_while_adding_to_a_shared_count_leaves_it_readable():
    """The real fault behind a hang once seen in test_killed_worker_is_one_line: worker 1 SIGKILLed in the middle of
    adding to the run's shared count. A count behind a lock shared by the workers then stays locked for ever; the
    per-worker slots take none, so worker 0 reads every worker's steps at once after the kill."""
    context = multiprocessing.get_context('fork')
    counter = SharedCounter(context, 2)
    counter.set(7)

    def add_forever():
        while True:
            counter.add(1, 1)

    child = context.Process(target=add_forever, name='acframe-async-test')
    child.start()
    deadline = time.monotonic() + 30
    while counter.value < 10_007 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    read = []
    reader = threading.Thread(target=lambda: read.append((counter.value, counter.add(0, 3))), daemon=True)
    reader.start()
    reader.join(5)
    assert read, 'reading the shared count hung after its writer was killed'
    added = counter.slots[1]
    assert added >= 10_000 and read[0] == (7 + added, 10 + added)


def test_failing_worker_is_one_line(tmp_path, monkeypatch):
    from acframe.entry import async_training

    def fail(run, worker):
        raise ValueError(f'worker {worker} broke\nsecond line')

    monkeypatch.setattr(async_training, 'worker_loop', fail)  # the forked worker calls the module's worker_loop
    with pytest.raises(AsyncWorkerError) as info:
        async_pipeline('cartpole_a3c.py', overrides=['env.stop_value=None'], exp_dir=str(tmp_path / 'run'),
                       max_env_step=10_000_000, progress=False)
    message = str(info.value)
    assert '\n' not in message and message.startswith('async worker 1 failed: worker 1 broke (at train iter ')


@pytest.mark.parametrize('args, key', [
    (['-c', 'cartpole_ppo.py'], "policy 'ppo' does not train asynchronously"),
    (['-c', 'cartpole_impala.py'], "policy 'impala' does not train asynchronously"),
    # data-parallel learners already asked for: where they run, not 'or parallel.learner_num=N'
    (['-c', 'cartpole_ppo.py', 'parallel.learner_num=2'],
     "train 'ppo' with -m serial_onpolicy or -m parallel (where parallel.learner_num=2 runs as data-parallel learners)"),
    (['-c', 'cartpole_acer.py', 'policy.learn.learner_thread=True'], 'policy.learn.learner_thread'),
    # async ACER: each of the 2 workers fills its own buffer with ~1,000 of the 2,000 env steps, never the 1,500 it needs
    (['-c', 'cartpole_acer.py', '--max-env-step', '2000', 'policy.other.replay_buffer.replay_start_size=1500'],
     'policy.other.replay_buffer.replay_start_size=1500'),
    (['-c', 'cartpole_a3c.py', f'parallel.async_worker_num={cpu_cores() + 1}'], 'parallel.async_worker_num='),
    (['-c', 'cartpole_a3c.py', "policy.learn.compile='default'"], 'policy.learn.compile'),
    (['-c', 'cartpole_a3c.py', 'parallel.learner_num=2'], 'parallel.learner_num'),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, key):
    folder = str(tmp_path / 'run')
    assert main(['-m', 'async', '--exp-dir', folder, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith('acframe: error: ') and key in err, err
    assert not os.path.exists(folder)


def _stuck_cartpole(**kwargs):
    """CartPole whose env seeded 4 (worker 1's first env: seed + 1 x 4 envs) sleeps in its 100th step."""
    import gymnasium as gym

    class Stuck(gym.Wrapper):
        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self.first_seed, self.steps = seed, 0
            return self.env.reset(seed=seed, options=options)

        def step(self, action):
            self.steps += 1
            if getattr(self, 'first_seed', None) == 4 and self.steps == 100:
                time.sleep(600)
            return self.env.step(action)
    return Stuck(gym.make('CartPole-v1'))


def _claim_until_refused(claims, max_train_iter, granted):
    """A forked process: claim steps until refused; how many it got goes to ``granted``."""
    got = 0
    while claims.claim(max_train_iter):
        got += 1
        time.sleep(0.0005)  # (the others get their turns in between)
    granted.put(got)


def test_workers_claiming_steps_together_get_exactly_the_budget_between_them():
    """docs/reliability.md: max_train_iter stops every pipeline at exactly that many gradient steps. Two async workers
    each checking the shared count took the budget's last step together (7 gave 8, 50 gave 51): each claims its step
    first. Four processes racing for 200 steps from 10 already made get 190 between them; a step given back is
    claimed again."""
    from acframe.entry.async_training import StepClaims

    context = multiprocessing.get_context('fork')
    claims, granted = StepClaims(context, 10), context.SimpleQueue()
    children = [context.Process(target=_claim_until_refused, args=(claims, 200, granted)) for _ in range(4)]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    counts = [granted.get() for _ in children]
    assert sum(counts) == 190 and claims.spent(200) and not claims.claim(200)
    claims.release()
    assert not claims.spent(200) and claims.claim(200) and not claims.claim(200)


def test_a_learner_whose_claim_is_refused_stops_its_rollout_where_it_is():
    class Refusing:
        def __init__(self, grants):
            self.grants, self.released = grants, 0

        def claim(self, max_train_iter):
            self.grants -= 1
            return self.grants >= 0

        def release(self):
            self.released += 1

    class CountingPolicy:
        trained = 0

        def minibatches(self, plan, start):
            return iter(range(start, 10))

        def forward(self, batch):
            CountingPolicy.trained += 1
            return {'loss': 1.0}

    learner = Learner(CountingPolicy())
    learner.step_claims = Refusing(3)
    assert learner.train_rollout(None, 0, max_train_iter=100) == 3  # three steps made; the rollout's next is step 3
    assert CountingPolicy.trained == 3 and learner.train_iter == 3
    learner.step_claims = None
    assert learner.train_rollout(None, 3, max_train_iter=100) is None and CountingPolicy.trained == 10


@pytest.mark.parametrize('config', ['cartpole_a3c.py', 'cartpole_async_acer.py'])
def test_an_async_run_stops_at_exactly_its_max_train_iter(tmp_path, config):
    folder = tmp_path / 'run'
    async_pipeline(config, overrides=['env.stop_value=None'], exp_dir=str(folder), max_train_iter=7, progress=False)
    assert _summary(str(folder))['train_iters'] == 7
    assert torch.load(folder / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['train_iter'] == 7


def test_a_worker_whose_env_is_stuck_ends_the_run_in_one_line_not_a_wait_for_ever(tmp_path, capfd):
    """Worker 0 waits at the budget's end for the others' segments in flight: at most a segment's steps of all its
    envs (stepped one after another) and one more, times env.step_timeout_s, then one line naming the worker, after
    the final checkpoint."""
    import gymnasium as gym

    gym.register('AsyncStuckCartPole-v0', entry_point=_stuck_cartpole)
    start = time.monotonic()
    with pytest.raises(AsyncWorkerError) as info:
        async_pipeline('cartpole_a3c.py', overrides=['env.env_id=AsyncStuckCartPole-v0', 'env.stop_value=None',
                                                     'env.step_timeout_s=0.5'],
                       exp_dir=str(tmp_path / 'run'), max_env_step=3000, progress=False)
    message = str(info.value)
    assert message.startswith('async worker 1 did not finish its segment within 10.5 s (5 steps of 4 envs, '
                              'env.step_timeout_s=0.5 each)'), message
    assert '; the final checkpoint was written first (env step ' in message
    assert time.monotonic() - start < 120
    said = [line for line in capfd.readouterr().err.splitlines() if 'waiting for it' in line]
    assert said == ["[acframe] note: the budget is spent but for async worker 1's segment in flight: waiting for it, "
                    "at most 10.5 s in all (5 steps of 4 envs, env.step_timeout_s=0.5 each)"], said  # (not silent)
    assert not [c for c in multiprocessing.active_children() if c.name.startswith('acframe-async')]
