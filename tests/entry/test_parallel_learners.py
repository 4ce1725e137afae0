"""Data-parallel learners in the parallel pipeline (``-m parallel`` with ``parallel.learner_num=2``; local backend,
gloo on CPU): each rank learns from its own actors, all ranks end with the same weights, rank 0 alone writes,
``--resume`` continues; a killed rank ends the run in one line naming it; what cannot run is refused in one line.
(On the Ray backend: ``test_parallel_ray.py``.)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from acframe.entry.parallel import parallel_pipeline
from acframe.errors import ConfigError

from test_data_parallel import _RecordWeights  # the serial ranks' tests' helper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TWO = [('parallel.learner_num', 2), ('parallel.actor_num', 2), ('parallel.collective_timeout_s', 30.0)]


def _records(folder):
    records = [torch.load(os.path.join(folder, f), weights_only=True) for f in sorted(os.listdir(folder))]
    assert len(records) == 2 and records[0]['pid'] != records[1]['pid']
    return records


def _same_weights(records, train_iters):
    assert records[0]['train_iter'] == records[1]['train_iter'] == train_iters
    for name, value in records[0]['weights'].items():
        assert torch.equal(value, records[1]['weights'][name]), name


@pytest.mark.parametrize('config, budget, more', [('cartpole_impala.py', 3000, 4500),  # async: replay buffers
                                                  ('cartpole_a2c.py', 1600, 2400)])  # sync rounds, on-policy
def test_two_learner_ranks_fed_by_their_own_actors_end_identical_and_resume(tmp_path, monkeypatch, config, budget, more):
    monkeypatch.chdir(tmp_path)
    seen = tmp_path / 'seen'
    seen.mkdir()
    overrides = TWO + [('env.stop_value', None), ('policy.learn.learner.save_ckpt_freq', 20)]
    policy = parallel_pipeline(config, overrides=overrides, max_env_step=budget, progress=False,
                               exp_dir=str(tmp_path / 'run'), learner_hooks=[_RecordWeights(str(seen))])
    summary = policy.summary
    # the budget counts both ranks' actors: each collects its half, within one step per env of it
    envs = 2 * 8  # both configs' actors step 8 envs
    assert budget <= summary['env_steps'] <= budget + envs, summary['env_steps']
    assert summary['learner_num'] == 2 and summary['actor_num'] == 2 and summary['train_iters'] > 0
    _same_weights(_records(seen), summary['train_iters'])
    assert sorted(os.listdir(tmp_path)) == ['run', 'seen']  # rank 1 wrote nothing, anywhere
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['data_parallel']['learner_num'] == 2 and len(state['data_parallel']['ranks']) == 1
    own = [state['parallel']['own_env_step'], state['data_parallel']['ranks'][0]['parallel']['own_env_step']]
    assert sum(own) == state['env_step'] == summary['env_steps'] and min(own) > 0  # both ranks' actors collected
    for name, value in state['policy']['model'].items():  # rank 0 saved the weights every rank holds
        assert torch.equal(value, _records(seen)[0]['weights'][name]), name

    again = tmp_path / 'again'
    again.mkdir()
    resumed = parallel_pipeline(resume=str(tmp_path / 'run'), max_env_step=more, progress=False,
                                learner_hooks=[_RecordWeights(str(again))])
    assert more <= resumed.summary['env_steps'] <= more + envs
    assert resumed.summary['train_iters'] > summary['train_iters']
    _same_weights(_records(again), resumed.summary['train_iters'])


def _rank_processes(pid):
    """The learner ranks the CLI process (rank 0) started: its children that are not its actors or evaluator."""
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            children = [int(p) for p in f.read().split()]
    except OSError:
        return []
    ranks = []
    for child in children:
        try:
            with open(f'/proc/{child}/comm') as f:
                if not f.read().startswith('acf-'):  # actors and the evaluator name themselves acf-...
                    ranks.append(child)
        except OSError:
            pass
    return ranks


@pytest.mark.skipif(not os.path.exists('/proc/self/task'), reason='finds the rank process through /proc')
def test_a_killed_learner_rank_ends_the_run_in_one_line_naming_it(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    process = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-m', 'parallel', '-c', 'cartpole_impala.py', '-q',
                                'env.stop_value=None', 'parallel.learner_num=2', 'parallel.actor_num=2',
                                'parallel.collective_timeout_s=60'],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (tmp_path / 'cartpole_impala_seed0' / 'log').exists():
            time.sleep(0.1)
        time.sleep(1.5)  # training
        ranks = _rank_processes(process.pid)
        assert len(ranks) == 1, ranks
        os.kill(ranks[0], signal.SIGKILL)
        sent_at = time.monotonic()
        _, err = process.communicate(timeout=60)
        took = time.monotonic() - sent_at
    finally:
        if process.poll() is None:
            process.kill()
    lines = [line for line in err.splitlines() if line.strip()]
    assert process.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f'acframe: error: data-parallel rank 1 (pid {ranks[0]}) was killed by SIGKILL'), lines
    assert '--resume cartpole_impala_seed0' in lines[0], lines[0]
    assert took < 15, took  # at once, not after the collective timeout


@pytest.mark.parametrize('overrides, line', [
    ([('parallel.actor_num', 3)], 'parallel.actor_num=3 does not split evenly over parallel.learner_num=2 ranks'),
    ([('parallel.actor_num', 1)], 'parallel.actor_num=1 does not split evenly over parallel.learner_num=2 ranks'),
    ([('parallel.actor_num', 2), ('policy.learn.batch_size', 15)],
     'policy.learn.batch_size=15 does not split evenly over parallel.learner_num=2'),
    ([('parallel.learner_num', 256), ('parallel.actor_num', 256)],
     'parallel.learner_num=256 data-parallel learners need a CPU core each'),
    ([('parallel.actor_num', 2), ('parallel.inference', 'server')],
     "parallel.inference='server' does not run with data-parallel learners"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, overrides, line):
    if ('parallel.learner_num', 256) in overrides and len(os.sched_getaffinity(0)) >= 256:
        pytest.skip('a machine with 256 cores')
    with pytest.raises(ConfigError, match=line.replace('(', r'\(').replace('.', r'\.')):
        parallel_pipeline('cartpole_impala.py', overrides=[('parallel.learner_num', 2)] + overrides,
                          exp_dir=str(tmp_path / 'run'), progress=False)
    assert os.listdir(tmp_path) == []
