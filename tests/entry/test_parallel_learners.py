"""Data-parallel learners in the parallel pipeline (``-m parallel`` with ``parallel.learner_num=2``; local backend,
gloo on CPU): each rank learns from its own actors, all ranks end with the same weights, rank 0 alone writes,
``--resume`` continues; a killed rank ends the run in one line naming it; what cannot run is refused in one line.
(On the Ray backend: ``test_parallel_ray.py``.)
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from acframe.entry.parallel import parallel_pipeline
from acframe.errors import ConfigError
from acframe.worker import LearnerHook

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


# ---- the known limits of docs/ddp.md, fixed --------------------------------------------------------------------------
def _kill_an_actor_after_its_round_segment(monkeypatch, from_version=1):
    """Rank 0's backend SIGKILLs (a real ``kill -9``) the first actor whose segment of a round arrives while its other
    actor's has not yet: the backend restarts it before that round ends, it is granted the round's segment again and
    collects it twice (the duplicate the learner discards). Returns what it killed: [(actor_id, pid)]."""
    from acframe.entry.parallel.local import LocalBackend

    receive, killed, held, delivered = LocalBackend.receive, [], [], {}

    def killing_receive(self, timeout, max_segments=None):
        messages = held + receive(self, timeout, max_segments)
        held.clear()
        if not self.evaluates or killed or self.version < from_version:  # rank 0 alone, once
            return messages
        fresh = [m for m in messages if m.behaviour_version == self.version]
        if not fresh or delivered.get(self.version):
            delivered[self.version] = delivered.get(self.version, False) or bool(fresh)
            return messages
        victim = fresh[0]
        held.extend(m for m in messages if m is not victim and m.behaviour_version == self.version)  # next call
        process = self.actors[victim.actor_id].process
        os.kill(process.pid, signal.SIGKILL)
        process.join(10)  # dead before the round ends: the next receive restarts it
        killed.append((victim.actor_id, process.pid))
        delivered[self.version] = True
        return [m for m in messages if m not in held]

    monkeypatch.setattr(LocalBackend, 'receive', killing_receive)  # the forked rank 1 has it too (and kills nothing)
    return killed


@pytest.mark.parametrize('budget, kill_from', [(6 * 64, 1),  # 6 rounds of each rank's 32 transitions
                                               (6 * 64 + 32, 20)])  # the 7th shorter, the kill in the 6th (iter 20)
def test_sync_ranks_end_together_when_a_killed_actor_collected_its_segment_twice(tmp_path, monkeypatch, budget,
                                                                                 kill_from):
    """PPO in sync rounds, 2 ranks of 2 actors: an actor killed right after delivering its round's segment is restarted
    and collects that segment again. The duplicate is discarded and not charged to the rank's share, so every rank's
    rounds keep the same length (the same number of PPO minibatch all-reduces) and the run ends normally at its budget
    (it ended in a DataParallelError after parallel.collective_timeout_s when the duplicate shortened one rank's last
    round)."""
    monkeypatch.chdir(tmp_path)
    killed = _kill_an_actor_after_its_round_segment(monkeypatch, kill_from)
    seen = tmp_path / 'seen'
    seen.mkdir()
    # a rank's round: 2 actors x 16 transitions (2 envs x 8 steps); minibatches of 16 (32 over both ranks), 2 epochs
    overrides = [('parallel.learner_num', 2), ('parallel.actor_num', 4), ('parallel.collective_timeout_s', 20.0),
                 ('env.stop_value', None), ('env.collector_env_num', 2), ('policy.collect.n_sample', 16),
                 ('policy.learn.batch_size', 32), ('policy.learn.epoch_per_collect', 2),
                 ('env.evaluator_env_num', 2), ('env.n_evaluator_episode', 2)]
    policy = parallel_pipeline('cartpole_ppo.py', overrides=overrides, max_env_step=budget, progress=False,
                               exp_dir=str(tmp_path / 'run'), learner_hooks=[_RecordWeights(str(seen))])
    summary = policy.summary
    assert len(killed) == 1, killed
    assert summary['actor_restarts'] == 1
    assert f'actor {killed[0][0]} was killed by SIGKILL' in summary['worker_failures'][0]
    assert summary['discarded_segments'] >= 1 and summary['discarded_env_steps'] >= 16, summary
    # the budget is the trained-on data's: every rank made its rounds of 2 epochs x 2 minibatches (1 in a short round)
    assert summary['env_steps'] == budget and summary['train_iters'] == 6 * 4 + (budget % 64 and 2), summary
    _same_weights(_records(seen), summary['train_iters'])
    assert (tmp_path / 'run' / 'summary.json').exists()


def test_a_batch_held_for_the_other_ranks_is_saved_with_the_final_checkpoint_and_trained_after_resume(tmp_path,
                                                                                                      monkeypatch):
    """Rank 1 finds no batch (its sampler says so from iter 3 on), so rank 0 samples one and holds it
    (``agreed_batch``); once it does, rank 1 gets a real SIGTERM: every rank stops at that turn and writes the final
    checkpoint.
    Rank 0's held batch, which its once-only buffer (max_use=1) no longer has, is in the checkpoint, and the resumed
    run trains on it first."""
    from acframe.data import to_dict
    from acframe.entry.parallel.run import ParallelRun
    from acframe.signals import Terminated

    sample, holding, first = ParallelRun.sample, tmp_path / 'rank0_holds_a_batch', {}

    def sample_or_not(self, batch_size):
        if self.ddp.rank == 0 and self.held_batch is not None and not self.resuming:
            holding.touch()
        if self.ddp.rank == 1 and self.learner.train_iter >= 3 and not self.resuming:
            if holding.exists() and not first.get('sent'):  # (the forked rank's own copy of ``first``)
                first['sent'] = True
                os.kill(os.getpid(), signal.SIGTERM)
            return None
        batch = sample(self, batch_size)
        if self.ddp.rank == 0 and self.resuming and batch is not None and 'batch' not in first:
            first['batch'] = to_dict(batch)
        return batch

    monkeypatch.setattr(ParallelRun, 'sample', sample_or_not)
    monkeypatch.chdir(tmp_path)
    overrides = TWO + [('env.stop_value', None), ('policy.other.replay_buffer.max_use', 1),
                       ('policy.other.replay_buffer.save_in_checkpoint', True), ('parallel.env_steps_per_update', 0)]
    with pytest.raises(Terminated, match=r'^data-parallel rank 1 \(pid \d+\)$'):  # rank 0 ends as a SIGTERM'd run, once finished
        parallel_pipeline('cartpole_impala.py', overrides=overrides, max_env_step=100_000, progress=False,
                          exp_dir=str(tmp_path / 'run'))
    assert holding.exists()
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['interrupted'] and summary['train_iters'] == 3, summary
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    held = state['parallel']['held_batch']
    assert held is not None and state['data_parallel']['ranks'][0]['parallel']['held_batch'] is None
    assert held['obs'].shape[1] == 8  # rank 0's half of a batch of 16 unrolls (time-major)

    resumed = parallel_pipeline(resume=str(tmp_path / 'run'), max_train_iter=5, progress=False)
    assert resumed.summary['train_iters'] == 5
    for key in ('obs', 'action', 'reward'):
        assert torch.equal(first['batch'][key], held[key]), key


class _SlowFinalEvaluation(LearnerHook):
    """Rank 0's final evaluation lasts ``seconds`` longer (its result reaches the hooks inside it)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def after_eval(self, learner, result):
        if result['train_iter'] > 0:  # the only evaluations: the first (iter 0) and the final one
            time.sleep(self.seconds)


def test_a_final_evaluation_longer_than_the_collective_timeout_ends_the_run_normally(tmp_path, monkeypatch):
    """The other ranks hand rank 0 their share of the final checkpoint before its final evaluation, so they need not
    wait for it (they timed out after parallel.collective_timeout_s and the run failed)."""
    monkeypatch.chdir(tmp_path)
    overrides = [('parallel.learner_num', 2), ('parallel.actor_num', 2), ('parallel.collective_timeout_s', 4.0),
                 ('env.stop_value', None), ('policy.eval.evaluator.eval_freq', 10_000)]
    policy = parallel_pipeline('cartpole_a2c.py', overrides=overrides, max_env_step=400, progress=False,
                               exp_dir=str(tmp_path / 'run'), learner_hooks=[_SlowFinalEvaluation(6.0)])
    summary = policy.summary
    assert summary['train_iters'] == 5 and summary['last_eval_return'] is not None, summary
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['evaluator']['last_eval_iter'] == 5 and len(state['data_parallel']['ranks']) == 1  # after the eval
    assert state['data_parallel']['ranks'][0]['parallel']['own_env_step'] == 200


def test_every_rank_stops_when_one_has_collected_its_share_and_its_queue_gives_no_batch(tmp_path, monkeypatch, capsys):
    """IMPALA's queue (max_use=1), actors that run free: rank 1's actor is stopped (a real SIGSTOP) until rank 0's actor
    has collected rank 0's whole share, most of it overwritten in rank 0's small queue. Once
    rank 0's queue gives no batch it can never train again, and the ranks train only together: every rank stops then,
    with a note (before, training stopped for good while rank 1 went on collecting the rest of its share)."""
    from acframe.entry.parallel.local import LocalBackend

    start, receive, collected = LocalBackend.start, LocalBackend.receive, tmp_path / 'rank0_collected_its_share'

    def start_stalled(self, version):
        start(self, version)
        if not self.evaluates:  # rank 1
            pids = [child.process.pid for child in self.actors]
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)

            def resume_them():
                deadline = time.monotonic() + 30
                while not collected.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                for pid in pids:
                    os.kill(pid, signal.SIGCONT)
            threading.Thread(target=resume_them, daemon=True).start()

    def receive_noting(self, timeout, max_segments=None):
        messages = receive(self, timeout, max_segments)
        if self.evaluates and self.budget.left <= 0 and not any(self.budget.outstanding.values()):  # rank 0
            collected.touch()
        return messages

    monkeypatch.setattr(LocalBackend, 'start', start_stalled)  # the forked rank 1 has them too
    monkeypatch.setattr(LocalBackend, 'receive', receive_noting)
    monkeypatch.chdir(tmp_path)
    seen = tmp_path / 'seen'
    seen.mkdir()
    overrides = TWO + [('env.stop_value', None), ('policy.other.replay_buffer.max_use', 1),
                       ('policy.other.replay_buffer.replay_buffer_size', 32), ('parallel.env_steps_per_update', 0)]
    budget = 4096  # 2 x 16 segments of 128 env steps (8 envs x 16 steps)
    policy = parallel_pipeline('cartpole_impala.py', overrides=overrides, max_env_step=budget, progress=True,
                               exp_dir=str(tmp_path / 'run'), learner_hooks=[_RecordWeights(str(seen))])
    summary = policy.summary
    out = capsys.readouterr()
    assert 'a data-parallel rank can train no more' in out.out + out.err, out
    assert budget // 2 <= summary['env_steps'] < budget - 512, summary  # rank 0's share, a part of rank 1's
    assert not summary['interrupted'] and summary['train_iters'] > 0 and collected.exists()
    _same_weights(_records(seen), summary['train_iters'])


def _two_ranks_until_terminated(tmp_path, monkeypatch) -> float:
    """``cartpole_impala.py`` with 2 learner ranks and 2 actors, no stop value, in ``tmp_path / 'run'``, until the
    SIGTERM the test arranged ends it (``Terminated``): the seconds it took."""
    from acframe.signals import Terminated

    monkeypatch.chdir(tmp_path)
    overrides = [('parallel.learner_num', 2), ('parallel.actor_num', 2), ('parallel.collective_timeout_s', 12.0),
                 ('env.stop_value', None)]
    began = time.monotonic()
    with pytest.raises(Terminated):
        parallel_pipeline('cartpole_impala.py', overrides=overrides, max_env_step=100_000, progress=False,
                          exp_dir=str(tmp_path / 'run'))
    return time.monotonic() - began


def test_a_sigterm_to_rank_0_while_its_actors_start_stops_every_rank_at_once_with_the_final_checkpoint(tmp_path,
                                                                                                      monkeypatch):
    """A real SIGTERM reaches rank 0 while its backend starts (the actors, the evaluator: seconds on Ray), before its
    loop, while rank 1 is already in its loop: it is held until rank 0's first turn, where every rank stops together
    and writes its share of the final checkpoint (before, rank 0 went straight to the final checkpoint's gather while
    rank 1 waited in its turn's all-reduce: both waited parallel.collective_timeout_s and the run failed)."""
    from acframe.entry.parallel.local import LocalBackend

    start = LocalBackend.start

    def start_then_sigterm(self, version):
        start(self, version)
        if self.evaluates:  # rank 0
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)

    monkeypatch.setattr(LocalBackend, 'start', start_then_sigterm)  # the forked rank 1 has it too
    assert _two_ranks_until_terminated(tmp_path, monkeypatch) < 12.0  # not after the collective timeout
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert len(state['data_parallel']['ranks']) == 1 and state['train_iter'] == 0
    summary = __import__('json').loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['interrupted'], summary


def test_a_sigterm_to_rank_0_before_its_run_is_built_stops_the_other_ranks_at_once(tmp_path, monkeypatch):
    """A real SIGTERM reaches rank 0 while it builds its run (after the weights' broadcast), while rank 1 is already in
    its loop: nothing was driven, so rank 1 is stopped at once (before, rank 0 waited for rank 1 to end on its own,
    which it did only when its turn's all-reduce gave up after parallel.collective_timeout_s)."""
    from acframe.entry.parallel.run import ParallelRun

    make_backend = ParallelRun._make_backend

    def make_backend_then_sigterm(self, incarnations):
        backend = make_backend(self, incarnations)
        if self.writes:  # rank 0
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        return backend

    monkeypatch.setattr(ParallelRun, '_make_backend', make_backend_then_sigterm)
    assert _two_ranks_until_terminated(tmp_path, monkeypatch) < 8.0  # not after the collective timeout
