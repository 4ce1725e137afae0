"""Data-parallel learners (``parallel.learner_num``, ``acframe.entry.data_parallel``) on CPU with gloo and 2 ranks.

* one step of 2 ranks, each on half of a batch, equals one step of one process on the whole batch (weights to 1e-6),
  for A2C, PPO, IMPALA and ACER — two steps, so the optimizer states are checked too; advantages normalised per batch
  (A2C, PPO, IMPALA with ``adv_norm``) use the whole batch's statistics, and ``loss_reduction='sum'`` sums the
  gradients instead of averaging them; with ``obs_norm`` and ``reward_norm`` (A2C, IMPALA; ACER ``obs_norm``) every
  update of the running statistics merges both ranks' batches, so the step is still the whole batch's; and with a
  recurrent core (A2C, PPO, IMPALA, ACER), each rank recomputing its columns from their stored start states;
* a short run: both ranks end with identical weights, rank 1 writes nothing, ``--resume`` continues it;
* a killed rank ends the run with one line naming it, well within ``parallel.collective_timeout_s``;
* bad input: one line naming the key, exit 2, nothing written.
"""
from __future__ import annotations

import copy
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from acframe.config import compile_config
from acframe.data.tree import leaves, make_tree, nest, tree_map
from acframe.entry.data_parallel import DataParallel, free_port
from acframe.entry.run_base import build_buffer
from acframe.entry.serial import serial_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.envs import make_env_manager
from acframe.errors import CheckpointError, ConfigError
from acframe.policy import create_policy
from acframe.worker import LearnerHook, SampleCollector

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TWO = [('parallel.learner_num', 2), ('parallel.collective_timeout_s', 30.0)]


def _case(name, overrides, split_dim, double=False):
    """(policy, batch of 4 env columns or 32 transitions, the dimension the ranks split it along); ``double``: the
    policy (built with float64 as torch's default dtype) and the batch's floats in float64."""
    torch.manual_seed(0)
    cfg = compile_config(name, [('env.collector_env_num', 4), ('policy.collect.n_sample', 32)] + overrides + TWO)
    env = make_env_manager(cfg, 'collector', 4, 0)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    collector = SampleCollector(env, policy.collect_mode, cfg.policy.collect.n_sample)
    sample = policy.collect_mode.get_train_sample(collector.collect(collector.steps_per_env))
    env.close()
    if name == 'cartpole_ppo.py':  # the first minibatch of the rollout: its 32 transitions (N,)
        batch = next(policy.learn_mode.minibatches(policy.learn_mode.prepare(sample)))
    elif name == 'cartpole_impala.py':  # 4 unrolls of 16 steps from the replay buffer, time-major (T, 4)
        buffer = build_buffer(cfg)
        buffer.push(sample)
        batch = buffer.sample(4)
    else:  # A2C and ACER (its on-policy update): the segment, (T, 4)
        batch = sample
    if double:  # the same weights, every parameter and buffer float64 (the optimizer's state is made at its first step)
        weights = policy.get_weights()
        torch.set_default_dtype(torch.float64)
        try:
            policy = create_policy(cfg, env.observation_space, env.action_space)
        finally:
            torch.set_default_dtype(torch.float32)
        policy.load_weights({key: value.double() if value.is_floating_point() else value for key, value in weights.items()})
        batch = tree_map(lambda x: x.double() if x.is_floating_point() else x, batch)
    return cfg, policy, batch, split_dim


CASES = {
    'a2c': ('cartpole_a2c.py', [('policy.learn.adv_norm', True)], 1),
    # summed losses: the gradients are summed, not averaged (RMSprop with a large eps and no clip sees the scale)
    'a2c_sum': ('cartpole_a2c.py', [('policy.learn.loss_reduction', 'sum'), ('policy.learn.rms_eps', 1.0),
                                    ('policy.learn.grad_clip_type', 'none')], 1),
    # running statistics: every update merges both ranks' batches (the obs and return statistics of the whole batch)
    'a2c_norm': ('cartpole_a2c.py', [('policy.model.obs_norm', True), ('policy.learn.reward_norm', True)], 1),
    'ppo': ('cartpole_ppo.py', [], 0),  # adv_norm=True: per minibatch
    'impala': ('cartpole_impala.py', [('policy.learn.adv_norm', True)], 1),
    'impala_norm': ('cartpole_impala.py', [('policy.model.obs_norm', True), ('policy.learn.reward_norm', True)], 1),
    'acer_norm': ('cartpole_acer.py', [('policy.model.obs_norm', True)], 1),
    'acer': ('cartpole_acer.py', [], 1),
}
#: a recurrent core: each rank recomputes its env columns from their stored states (``rnn_state``: A2C's one per
#: step, (T, B, R, H); PPO's minibatch, 4 sequences of 8 steps, one per sequence, (4, R, H)). In float64: in float32
#: the unrolls' rounding reaches the weights up to 7e-6 (ACER's GRU) through Adam's first steps, lr g / (|g| + eps),
#: where a gradient entry sums to almost nothing; in float64 both sides agree to 1e-14 (the other cases too)
MEMORY = [('env.env_id', 'cartpole_novel'), ('policy.model.share_encoder', True), ('policy.model.rnn.hidden_size', 16)]
CASES.update({
    'a2c_lstm': ('cartpole_a2c.py', MEMORY + [('policy.model.rnn.type', 'lstm')], 1, True),
    'ppo_gru': ('cartpole_ppo.py', MEMORY + [('policy.model.rnn.type', 'gru'), ('policy.model.rnn.seq_len', 8),
                                             ('policy.learn.batch_size', 32)], 1, True),
    'impala_lstm': ('cartpole_impala.py', MEMORY + [('policy.model.rnn.type', 'lstm')], 1, True),
    'acer_gru': ('cartpole_acer.py', MEMORY + [('policy.model.rnn.type', 'gru')], 1, True),
})
STEPS = 2


def _half(batch, dim, rank):
    size = (batch.reward if hasattr(batch, 'reward') else batch.advantage).shape[dim] // 2
    # along dim, but a start state per column or sequence (B, R, H) along its first (not one per step, (T, B, R, H))
    flat = {key: value.narrow(0 if key == 'rnn_state' and value.dim() == 3 else dim, rank * size, size).contiguous()
            for key, value in leaves(batch)}
    return make_tree(nest(flat))


def _rank(rank, port, cases, out):
    torch.set_num_threads(1)  # a forked child of a process whose intra-op pool ran hangs at its first threaded op
    group = DataParallel(cases['a2c'][0], rank, port)
    group.join()
    try:
        for key, (cfg, policy, batch, dim) in cases.items():
            policy.use_data_parallel(group)
            for _ in range(STEPS):
                policy.learn_mode.forward(_half(batch, dim, rank))
            # numpy arrays, pickled by value: a tensor would travel as a shared-memory handle, which fails when the
            # rank has exited before the test reads it
            out.put((rank, key, {k: v.detach().numpy().copy() for k, v in policy.get_weights().items()}))
    finally:
        group.leave()


def test_two_ranks_on_halves_step_as_one_process_on_the_whole_batch():
    torch.set_num_threads(1)
    cases = {key: _case(*spec) for key, spec in CASES.items()}
    context = multiprocessing.get_context('fork')
    out = context.SimpleQueue()
    port = free_port()
    ranks = [context.Process(target=_rank, args=(rank, port, cases, out)) for rank in range(2)]
    for process in ranks:
        process.start()
    found = {}
    deadline = time.monotonic() + 60
    while len(found) < 2 * len(cases) and time.monotonic() < deadline:
        if not out.empty():
            rank, key, weights = out.get()
            found[rank, key] = {name: torch.from_numpy(value) for name, value in weights.items()}
        else:
            time.sleep(0.01)
    for process in ranks:
        process.join(10)
        assert process.exitcode == 0
    for key, (cfg, policy, batch, dim) in cases.items():
        whole = copy.deepcopy(policy)  # this process never stepped: the weights the ranks started from
        for _ in range(STEPS):
            whole.learn_mode.forward(batch)
        start = policy.get_weights()
        for name, expected in whole.get_weights().items():
            for rank in range(2):
                got = found[rank, key][name]
                tolerance = 1e-12 if expected.dtype == torch.float64 else 1e-6
                assert torch.allclose(got, expected, atol=tolerance, rtol=0), (key, name, rank, (got - expected).abs().max())
            if expected.is_floating_point() and 'weight' in name:
                assert not torch.equal(expected, start[name]), (key, name)  # the step moved them


def _mean_rank(rank, port, policy, out):
    torch.set_num_threads(1)
    group = DataParallel(policy._cfg_for_test, rank, port)
    group.join()
    try:
        policy.use_data_parallel(group)
        tensor = policy._mean_over_learners(torch.tensor([1.0, 2.0]) * (rank + 1))  # (a statistic of its share)
        number = policy._mean_over_learners(0.1 if rank == 0 else 0.2)
        out.put((rank, tensor.numpy().copy(), str(tensor.dtype), number))
    finally:
        group.leave()


def test_a_policys_own_statistic_of_its_share_is_averaged_over_the_learners():
    """``Policy._mean_over_learners``: what a policy derives from its batch and keeps (a KL-adaptive coefficient)
    drifted apart between the ranks (each measured its own share); it is the whole batch's mean on every rank, the
    same bits, and the value itself with one learner."""
    torch.set_num_threads(1)
    cfg, policy, _, _ = _case('cartpole_ppo.py', [], 0)
    assert policy._mean_over_learners(0.3) == 0.3 and torch.equal(policy._mean_over_learners(torch.ones(2)), torch.ones(2))
    policy._cfg_for_test = cfg
    context = multiprocessing.get_context('fork')
    out, port = context.SimpleQueue(), free_port()
    ranks = [context.Process(target=_mean_rank, args=(rank, port, policy, out)) for rank in range(2)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(60)
        assert process.exitcode == 0
    got = sorted(out.get() for _ in range(2))
    for rank, tensor, dtype, number in got:
        assert tensor.tolist() == [1.5, 3.0] and dtype == 'torch.float32' and number == pytest.approx(0.15, abs=1e-15)
    assert got[0][3] == got[1][3]


def _nan_rank(rank, port, cfg, policy, out):
    torch.set_num_threads(1)
    group = DataParallel(cfg, rank, port)
    group.join()
    try:
        policy.use_data_parallel(group)
        params = list(policy._model.parameters())
        loss = sum(p.pow(2).sum() for p in params) + (torch.tensor(float('nan')) if rank == 1 else 0.0)
        policy._optimizer_step(policy._optimizer, loss, params)  # (a NaN term without a gradient, on rank 1 alone)
        out.put((rank, {k: v.detach().numpy().copy() for k, v in policy.get_weights().items()},
                 getattr(policy, 'skipped_updates', 0)))
    finally:
        group.leave()


def test_a_loss_that_is_nan_on_one_rank_alone_is_skipped_by_every_rank():
    """With on_nonfinite='skip_update', a rank whose loss was NaN with a finite gradient skipped the update while the
    others stepped: their weights drifted apart without a word. The ranks' losses ride in the gradient all-reduce,
    so every rank takes the same decision."""
    torch.set_num_threads(1)
    cfg, policy, _, _ = _case('cartpole_ppo.py', [('policy.learn.on_nonfinite', 'skip_update')], 0)
    start = {k: v.clone() for k, v in policy.get_weights().items()}
    context = multiprocessing.get_context('fork')
    out, port = context.SimpleQueue(), free_port()
    ranks = [context.Process(target=_nan_rank, args=(rank, port, cfg, policy, out)) for rank in range(2)]
    for process in ranks:
        process.start()
    got = [out.get() for _ in range(2)]  # (read before the join: the weights fill the pipe, put waits for a reader)
    for process in ranks:
        process.join(60)
        assert process.exitcode == 0
    for rank, weights, skipped in got:
        assert skipped == 1, rank
        for name, value in weights.items():
            assert torch.equal(torch.from_numpy(value), start[name]), (rank, name)


class _RecordWeights(LearnerHook):
    """Every rank writes its final weights (and its pid) to ``folder``: the test compares them."""

    def __init__(self, folder):
        self.folder = folder

    def after_round(self, learner):
        torch.save({'pid': os.getpid(), 'train_iter': learner.train_iter, 'weights': learner.policy.get_weights()},
                   os.path.join(self.folder, f'rank_{os.getpid()}.pt'))


def test_two_ranks_end_with_identical_weights_rank_1_writes_nothing_and_resume_continues(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = tmp_path / 'seen'
    seen.mkdir()
    overrides = TWO + [('policy.eval.evaluator.eval_freq', 20), ('policy.learn.learner.save_ckpt_freq', 10),
                       ('policy.model.obs_norm', True), ('policy.learn.reward_norm', True)]  # statistics agree too
    policy = serial_pipeline_onpolicy('cartpole_ppo.py', overrides=overrides, max_env_step=1024, progress=False,
                                      exp_dir=str(tmp_path / 'run'), learner_hooks=[_RecordWeights(str(seen))])
    assert policy.summary['env_steps'] == 1024 and policy.summary['train_iters'] == 80  # 4 rollouts x 20 epochs
    assert policy.summary['learner_num'] == 2
    records = [torch.load(seen / f, weights_only=True) for f in sorted(os.listdir(seen))]
    assert len(records) == 2 and records[0]['pid'] != records[1]['pid']
    assert records[0]['train_iter'] == records[1]['train_iter'] == 80
    for name, value in records[0]['weights'].items():
        assert torch.equal(value, records[1]['weights'][name]), name
    assert float(records[0]['weights']['obs_normalizer.count']) == pytest.approx(1024, abs=1e-3)  # both ranks' steps
    assert sorted(os.listdir(tmp_path)) == ['run', 'seen']  # rank 1 wrote nothing, anywhere
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['data_parallel']['learner_num'] == 2 and len(state['data_parallel']['ranks']) == 1
    run_files = {name: (tmp_path / 'run' / name).read_bytes() for name in ('config.json', 'ckpt/ckpt_latest.pth')}
    with pytest.raises(CheckpointError) as refused:  # one process cannot take over two ranks' envs, RNGs, rollouts
        serial_pipeline_onpolicy(resume=str(tmp_path / 'run'), overrides=[('parallel.learner_num', 1)],
                                 accept_config_change=True, max_env_step=1536, progress=False)
    assert str(refused.value).endswith("it was written by 2 data-parallel learner(s) and this run has "
                                       "parallel.learner_num=1; resume with parallel.learner_num=2"), str(refused.value)
    assert {name: (tmp_path / 'run' / name).read_bytes() for name in run_files} == run_files  # nothing written
    resumed = serial_pipeline_onpolicy(resume=str(tmp_path / 'run'), max_env_step=1536, progress=False)
    assert resumed.summary['env_steps'] == 1536 and resumed.summary['train_iters'] == 120
    # a resume with the budget spent: its summary is the folder's (it was None here), and nothing is written
    files = {name: (tmp_path / 'run' / name).read_bytes() for name in ('config.json', 'summary.json',
                                                                       'ckpt/ckpt_latest.pth')}
    spent = serial_pipeline_onpolicy(resume=str(tmp_path / 'run'), max_env_step=1536, progress=False)
    assert spent.summary == json.loads(files['summary.json']) and spent.summary['env_steps'] == 1536
    assert {name: (tmp_path / 'run' / name).read_bytes() for name in files} == files


def test_off_policy_ranks_end_with_identical_weights(tmp_path, monkeypatch):
    """IMPALA through the off-policy loop: each rank replays from its own buffer, all agree on every update."""
    monkeypatch.chdir(tmp_path)
    seen = tmp_path / 'seen'
    seen.mkdir()
    policy = serial_pipeline('cartpole_impala.py', overrides=TWO, max_env_step=3000, progress=False,
                             exp_dir=str(tmp_path / 'run'), learner_hooks=[_RecordWeights(str(seen))])
    assert policy.summary['env_steps'] == 3000 and policy.summary['train_iters'] > 0
    records = [torch.load(seen / f, weights_only=True) for f in sorted(os.listdir(seen))]
    assert len(records) == 2 and records[0]['train_iter'] == records[1]['train_iter'] == policy.summary['train_iters']
    for name, value in records[0]['weights'].items():
        assert torch.equal(value, records[1]['weights'][name]), name


def _cli(*args, cwd, timeout=60):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    return subprocess.run([sys.executable, '-m', 'acframe.cli', *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


DING_DDP_FILE = """
main_config = dict(
    exp_name='cartpole_ppo_seed0',
    env=dict(collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, stop_value=195),
    policy=dict(multi_gpu=True, cuda=True, action_space='discrete',
                model=dict(obs_shape=4, action_shape=2, action_space='discrete'),
                learn=dict(epoch_per_collect=2, batch_size=32, learning_rate=0.001),
                collect=dict(n_sample=64, unroll_len=1, discount_factor=0.9, gae_lambda=0.95),
                eval=dict(evaluator=dict(eval_freq=100))),
)
create_config = dict(env=dict(type='cartpole', import_names=['dizoo.classic_control.cartpole.envs.cartpole_env']),
                     env_manager=dict(type='base'), policy=dict(type='ppo'))
"""


def test_a_di_engine_ddp_file_runs_on_the_ranks_its_launcher_would_start(tmp_path):
    """DI-engine's ``*_ppo_ddp_config.py`` (``multi_gpu=True``; its per-rank batch keys), given the number of ranks
    as ``parallel.learner_num`` as DI-engine's launcher takes ``--nproc_per_node``: 2 ranks, each with the file's
    4 envs, 64-transition rollouts and minibatches of 32."""
    (tmp_path / 'cartpole_ppo_ddp_config.py').write_text(DING_DDP_FILE)
    out = _cli('-c', 'cartpole_ppo_ddp_config.py', 'parallel.learner_num=2', '--max-env-step', '512', '-q',
               '--exp-dir', 'run', cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert 'collector_env_num 4 -> 8, n_sample 64 -> 128, batch_size 32 -> 64' in out.stderr
    assert ' env steps, 16 iters, 2 data-parallel learners, ' in out.stdout  # (the result line says how many)
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['data_parallel']['learner_num'] == 2
    assert state['env_step'] == 512 and state['train_iter'] == 4 * 2 * 2  # 4 rollouts of 128 x 2 epochs x 2 minibatches
    refused = _cli('-c', 'cartpole_ppo_ddp_config.py', '--max-env-step', '512', '-q', '--exp-dir', 'run2',
                   cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / 'run2').exists()
    errors = [line for line in refused.stderr.strip().splitlines() if not line.startswith('acframe: note: ')]
    assert len(errors) == 1 and 'give it as parallel.learner_num=N' in errors[0], refused.stderr


def test_a_librarys_warning_as_the_ranks_build_their_envs_is_shown_once(tmp_path):
    """Every rank builds the same envs, so gymnasium's warning about CartPole-v0 came once per rank; rank 0's is
    shown, the others' are not."""
    out = _cli('-c', 'cartpole_ppo.py', 'env.env_id=CartPole-v0', 'env.stop_value=195', 'parallel.learner_num=2',
               '--max-env-step', '256', '-q', '--exp-dir', 'run', cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.count('The environment CartPole-v0 is out of date') == 1, out.stderr


def _children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _signal_rank_1(tmp_path, signum, timeout_s):
    """Start a long 2-rank run from the CLI, send rank 1 ``signum`` once it trains; (exit code, stderr lines, seconds
    from the signal to the exit, rank 1's pid)."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    process = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '-q', 'env.stop_value=None',
                                'parallel.learner_num=2', f'parallel.collective_timeout_s={timeout_s}'],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rank_1 = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (tmp_path / 'cartpole_a2c_seed0' / 'log').exists():
            time.sleep(0.1)
        time.sleep(1.0)  # training
        ranks = _children(process.pid)  # rank 1, forked by the CLI's process (rank 0)
        assert len(ranks) == 1, ranks
        rank_1 = ranks[0]
        os.kill(rank_1, signum)
        sent_at = time.monotonic()
        _, err = process.communicate(timeout=60)
        took = time.monotonic() - sent_at
    finally:
        if process.poll() is None:
            process.kill()
    assert rank_1 not in _children(process.pid)
    return process.returncode, [line for line in err.splitlines() if line.strip()], took, rank_1


@pytest.mark.skipif(not os.path.exists('/proc/self/task'), reason='finds the rank process through /proc')
def test_a_sigterm_to_one_rank_ends_the_run_as_a_sigterm_does_with_its_final_checkpoint(tmp_path):
    """A scheduler that stops one rank: every rank leaves the loop at the same turn, the run writes its final
    checkpoint and summary, and the command exits as a terminated run (143, naming the rank), not as a finished one."""
    code, lines, took, rank_1 = _signal_rank_1(tmp_path, signal.SIGTERM, 60)
    assert code == 143 and lines == [f'acframe: data-parallel rank 1 (pid {rank_1}) was terminated (SIGTERM)'], lines
    summary = json.loads((tmp_path / 'cartpole_a2c_seed0' / 'summary.json').read_text())
    assert summary['interrupted'] is True and summary['env_steps'] > 0
    resumed = _cli('--resume', 'cartpole_a2c_seed0', '-q', f"--max-env-step={summary['env_steps'] + 200}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((tmp_path / 'cartpole_a2c_seed0' / 'summary.json').read_text())['interrupted'] is False


@pytest.mark.skipif(not os.path.exists('/proc/self/task'), reason='finds the rank process through /proc')
def test_a_killed_rank_ends_the_run_at_once_in_one_line_naming_it(tmp_path):
    code, lines, took, _ = _signal_rank_1(tmp_path, signal.SIGKILL, 60)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith('acframe: error: data-parallel rank 1 (pid '), lines
    assert 'was killed by SIGKILL' in lines[0] and '--resume cartpole_a2c_seed0' in lines[0], lines[0]
    assert took < 15, took  # at once, not after the collective timeout
    latest = torch.load(tmp_path / 'cartpole_a2c_seed0' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert lines[0].endswith(f"continues it from its last checkpoint (train iter {latest['train_iter']}, env step "
                             f"{latest['env_step']})"), lines[0]  # how far back a resume goes


@pytest.mark.skipif(not os.path.exists('/proc/self/task'), reason='finds the rank process through /proc')
def test_a_stuck_rank_ends_the_run_after_the_collective_timeout(tmp_path):
    code, lines, took, _ = _signal_rank_1(tmp_path, signal.SIGSTOP, 2)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith('acframe: error: data-parallel rank 1 did not answer within '
                               'parallel.collective_timeout_s=2 s'), lines
    assert 2 <= took < 15, took


@pytest.mark.parametrize('overrides, key', [
    (['parallel.learner_num=256'], 'parallel.learner_num=256 data-parallel learners need a CPU core each'),
    (['parallel.learner_num=2', 'env.collector_env_num=3', 'policy.collect.n_sample=6'],
     'env.collector_env_num=3 does not split evenly over parallel.learner_num=2'),
    (['parallel.learner_num=2', 'policy.learn.batch_size=255'],
     'policy.learn.batch_size=255 does not split evenly over parallel.learner_num=2'),
    (['parallel.learner_num=2', "parallel.learner_backend='nccl'"], "parallel.learner_backend='nccl' runs the"),
    # one env for two ranks: the fix names one value, not the same one twice
    (['parallel.learner_num=2', 'env.collector_env_num=1', 'policy.collect.n_sample=64'],
     'env.collector_env_num=1 does not split evenly over parallel.learner_num=2 ranks (each rank steps '
     'collector_env_num / learner_num envs); set it to a multiple of 2, e.g. 2'),
    # a recurrent PPO's ranks take whole sequences: the global batch_size and the multiple it needs, not a rank's
    (['parallel.learner_num=2', "policy.model.rnn=dict(type='lstm', hidden_size=16, seq_len=16)",
      'policy.learn.batch_size=48'],
     'policy.learn.batch_size=48 does not split evenly over parallel.learner_num=2 ranks (each rank learns on '
     'batch_size / learner_num of every batch, in whole sequences of 16 steps); set it to a multiple of 32, e.g. 32 or 64'),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, overrides, key):
    if key.startswith('parallel.learner_num=256') and len(os.sched_getaffinity(0)) >= 256:
        pytest.skip('a machine with 256 cores')
    with pytest.raises(ConfigError) as info:
        serial_pipeline_onpolicy('cartpole_ppo.py', overrides=overrides, exp_dir=str(tmp_path / 'run'), progress=False)
    assert str(info.value).startswith(key), str(info.value)
    if key.endswith(('e.g. 2', '32 or 64')):
        assert str(info.value) == key
    assert not (tmp_path / 'run').exists()


def test_a_process_a_distributed_launcher_started_is_refused_naming_parallel_learner_num(tmp_path, monkeypatch):
    """torchrun (or torch.distributed.launch) starting acframe N times: one line saying acframe starts its own ranks,
    nothing written (each copy trained a run of its own, or, with parallel.learner_num, waited on torchrun's store)."""
    monkeypatch.setenv('WORLD_SIZE', '2')
    monkeypatch.setenv('TORCHELASTIC_RUN_ID', 'none')
    done = _cli('-c', 'cartpole_ppo.py', '--max-env-step', '256', cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        'acframe: error: this process is one of WORLD_SIZE=2 that torchrun started: acframe starts its own '
        'data-parallel learners; run the command once, without the launcher, with parallel.learner_num=2\n'), done.stderr
    assert os.listdir(tmp_path) == []


def test_ranks_started_under_torchruns_agent_store_variable_meet_at_their_own_store(tmp_path, monkeypatch):
    """A one-process torchrun sets TORCHELASTIC_USE_AGENT_STORE, which turned rank 0's own rendezvous store into a
    client of the launcher's: both ranks waited (up to collective_timeout_s, SIGTERM unheard) for a server that never
    started."""
    monkeypatch.setenv('TORCHELASTIC_USE_AGENT_STORE', 'True')
    done = _cli('-c', 'cartpole_ppo.py', 'parallel.learner_num=2', 'parallel.collective_timeout_s=60', '--max-env-step',
                '256', '-q', '--exp-dir', 'run', cwd=tmp_path, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['env_step'] == 256


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason='a 2-rank run needs 2 cores')
def test_a_resume_with_fewer_cores_than_its_ranks_says_to_resume_it_where_there_are_enough(tmp_path):
    """Fewer ranks cannot take a data-parallel checkpoint, so the core count's refusal of a resume does not say to
    lower parallel.learner_num (the next refusal said to raise it back)."""
    assert _cli('-c', 'cartpole_ppo.py', 'parallel.learner_num=2', '--max-env-step', '256', '-q', '--exp-dir', 'run',
                cwd=tmp_path, timeout=90).returncode == 0
    before = {p: os.path.getmtime(p) for p in (tmp_path / 'run').rglob('*')}
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    one_core = min(os.sched_getaffinity(0))
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', 'run', '--max-env-step', '512'], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: os.sched_setaffinity(0, {one_core}))
    assert done.returncode == 2 and done.stderr == (
        "acframe: error: parallel.learner_num=2 data-parallel learners need a CPU core each and this process may use "
        "1; the run trained with 2 and resumes only with as many (each rank's envs and random state are its own): "
        "resume it where this process may use 2 cores\n"), done.stderr
    assert {p: os.path.getmtime(p) for p in (tmp_path / 'run').rglob('*')} == before


def test_bad_input_from_the_cli_and_the_parallel_pipeline(tmp_path):
    done = _cli('-c', 'cartpole_ppo.py', 'parallel.learner_num=2', 'policy.learn.batch_size=255', cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count('\n') == 1, done.stderr
    assert done.stderr.startswith('acframe: error: policy.learn.batch_size=255 does not split evenly'), done.stderr
    done = _cli('-c', 'cartpole_impala.py', '-m', 'parallel', 'parallel.learner_num=2', 'parallel.actor_num=3', cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count('\n') == 1, done.stderr
    assert done.stderr.startswith('acframe: error: parallel.actor_num=3 does not split evenly over parallel.learner_num=2'), \
        done.stderr
    assert os.listdir(tmp_path) == []


def test_a_rank_s_failure_line_reaches_the_user_with_one_resume_hint(tmp_path):
    """Rank 1's own line (a collective that failed on it) leaves the ``--resume`` hint to rank 0, which names the
    rank and adds the hint once."""
    import queue

    cfg = compile_config('cartpole_ppo.py', seed=0, overrides=['parallel.learner_num=3'])
    rank_1 = DataParallel(cfg, 1, 0, parent_pid=os.getppid())
    rank_1.exp_dir = str(tmp_path / 'run')
    line = rank_1.describe_failure('the gradients', RuntimeError('Connection closed by peer'))
    assert line.startswith('data-parallel rank 1: the gradients failed at train iter 0 (Connection closed by peer)')
    assert '--resume' not in line, line

    class Exited:  # rank 1's process as rank 0 sees it once it has ended with its line
        exitcode, pid = 1, 4242

    errors = queue.SimpleQueue()
    errors.put((1, line))
    rank_0 = DataParallel(cfg, 0, 0, children=[Exited(), type('Running', (), {'exitcode': None, 'pid': 4243})()],
                          errors=errors)
    rank_0.exp_dir = str(tmp_path / 'run')
    told = rank_0.describe_failure('the gradients', RuntimeError('Connection closed by peer'))
    assert told.startswith('data-parallel rank 1 failed: data-parallel rank 1: the gradients failed'), told
    assert told.count('--resume') == 1 and told.endswith(f'--resume {tmp_path / "run"} continues it from its last '
                                                         f'checkpoint'), told


SPAWNED_ENV_MODULE = '''
import gymnasium as gym

gym.register('SpawnedRankCartPole-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv', max_episode_steps=200)
'''


@pytest.mark.parametrize('start_method, iters', [('spawn', 4), ('forkserver', 300)])
def test_a_spawned_rank_imports_the_users_modules_as_rank_0_did(tmp_path, start_method, iters):
    """A rank started fresh (spawn: the default with policy.cuda) has none of rank 0's imports: the config's
    import_names register the user's env there too. A forkserver's rank (whose parent is the forkserver, not rank
    0) keeps running past its first second (its watch of rank 0 took the forkserver for a dead rank 0)."""
    folder = tmp_path / 'my_code'
    folder.mkdir()
    (folder / 'spawned_rank_envs.py').write_text(SPAWNED_ENV_MODULE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), os.environ.get('PYTHONPATH', '')]),
               OMP_NUM_THREADS='1')
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', 'run', '-q',
                          '--import', 'spawned_rank_envs', '--max-train-iter', str(iters), 'env.env_id=SpawnedRankCartPole-v0',
                          'env.stop_value=None', 'parallel.learner_num=2', f'parallel.start_method={start_method}'],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['train_iters'] == iters and (start_method == 'spawn' or summary['wall_s'] > 2.0)


def test_a_data_parallel_run_in_a_script_gives_back_the_scripts_excepthook(tmp_path):
    """torch's process group puts its own sys.excepthook in place (every later traceback '[rank0]: '-prefixed)."""
    before = sys.excepthook
    serial_pipeline_onpolicy('cartpole_a2c.py', overrides=['parallel.learner_num=2', 'env.stop_value=None'],
                             exp_dir=str(tmp_path / 'run'), max_train_iter=3, progress=False)
    assert sys.excepthook is before


def test_inline_backend_on_a_serial_run_names_the_fix_that_works_new_or_resumed(tmp_path):
    """--backend inline is the parallel pipeline's: a new serial run is told to add -m parallel; a resumed one (whose
    folder -m parallel would refuse) to drop --backend inline."""
    from acframe import ConfigError, serial_pipeline_onpolicy

    with pytest.raises(ConfigError, match=r"runs the parallel pipeline; add -m parallel, or give"):
        serial_pipeline_onpolicy('cartpole_ppo.py', exp_dir=str(tmp_path / 'new'), backend='inline', progress=False)
    run = str(tmp_path / 'run')
    serial_pipeline_onpolicy('cartpole_ppo.py', exp_dir=run, max_env_step=64, progress=False)
    with pytest.raises(ConfigError, match=r"^backend 'inline' \(--backend inline\) runs the parallel pipeline and this "
                                          r"run is a serial one; drop --backend inline"):
        serial_pipeline_onpolicy(None, resume=run, max_env_step=128, backend='inline', progress=False)


def test_a_rendezvous_port_taken_before_the_ranks_bind_it_is_said_as_such(tmp_path, monkeypatch, capsys):
    """A real listening socket on the port acframe chose (another process took it between the choice and the bind):
    the line said a rank 'did not answer within parallel.collective_timeout_s=600 s or went away'."""
    import socket

    import acframe.entry.data_parallel as data_parallel
    from acframe.cli import main

    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(data_parallel, 'free_port', lambda host='127.0.0.1': port)
        started = time.monotonic()
        code = main(['-c', 'cartpole_ppo.py', 'parallel.learner_num=2', '--exp-dir', str(tmp_path / 'run'),
                     '--max-env-step', '2048', '-q'])
    err = capsys.readouterr().err
    assert code == 2 and err.count('\n') == 1 and time.monotonic() - started < 120, err
    assert (f"joining the process group failed at train iter 0: port {port} on 127.0.0.1, free when acframe chose it, "
            f"was taken by another process before the ranks bound it; run the command again") in err, err
    assert not (tmp_path / 'run').exists()
