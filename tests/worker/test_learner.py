"""Specification of ``acframe.worker.Learner`` and its hooks: logging, atomic checkpoints, LR schedule."""
import os
import re
from typing import Dict

import numpy as np
import pytest
import torch
from tensorboardX import SummaryWriter

from acframe.errors import CheckpointError
from acframe.worker import CheckpointHook, Learner, LearnerHook, LinearLRDecayHook, LogHook, load_checkpoint


class CountingLearnMode:
    """A stand-in for ``policy.learn_mode``: one parameter, one optimizer, loss = the iteration number."""

    def __init__(self, lr: float = 0.1) -> None:
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.optimizer = torch.optim.SGD([self.weight], lr=lr)
        self.calls = 0

    def forward(self, batch) -> Dict[str, float]:
        self.calls += 1
        self.optimizer.zero_grad()
        (self.weight * batch).sum().backward()
        self.optimizer.step()
        return {'loss': float(self.calls), 'cur_lr': self.optimizer.param_groups[0]['lr']}

    def state_dict(self):
        return {'model': {'weight': self.weight.detach().clone()}, 'optimizer': self.optimizer.state_dict()}

    def load_state_dict(self, state):
        with torch.no_grad():
            self.weight.copy_(state['model']['weight'])
        self.optimizer.load_state_dict(state['optimizer'])

    def optimizers(self):
        return [self.optimizer]


def test_train_runs_the_learn_mode_and_counts_iterations():
    mode = CountingLearnMode()
    learner = Learner(mode)
    info = learner.train(torch.ones(1))
    assert info['loss'] == 1.0 and learner.train_iter == 1 and mode.calls == 1


def test_hooks_fire_after_every_iteration_and_every_round():
    calls = []

    class Recorder(LearnerHook):
        def after_iter(self, learner, info):
            calls.append(('iter', learner.train_iter, info['loss']))

        def after_round(self, learner):
            calls.append(('round', learner.train_iter))

    learner = Learner(CountingLearnMode(), hooks=[Recorder()])
    learner.train(torch.ones(1))
    learner.train(torch.ones(1))
    learner.end_round()
    assert calls == [('iter', 1, 1.0), ('iter', 2, 2.0), ('round', 2)]


def test_hooks_see_every_evaluation_the_pipeline_reports():
    seen = []

    class Recorder(LearnerHook):
        def after_eval(self, learner, result):
            seen.append(result)

    learner = Learner(CountingLearnMode(), hooks=[LogHook(10), Recorder()])  # a hook without after_eval is fine
    learner.after_eval(train_iter=3, env_step=120, return_mean=9.5, best_return=12.0, solved=False)
    learner.after_eval(train_iter=6, env_step=240, return_mean=13.0, best_return=12.5, solved=False, score=12.5)
    assert seen == [{'train_iter': 3, 'env_step': 120, 'return_mean': 9.5, 'best_return': 12.0, 'solved': False,
                     'score': 9.5},  # (an evaluation's score is its mean unless a confirmation run followed it)
                    {'train_iter': 6, 'env_step': 240, 'return_mean': 13.0, 'best_return': 12.5, 'solved': False,
                     'score': 12.5}]


def test_log_hook_writes_the_mean_every_n_iterations_to_tensorboard_and_console(tmp_path, tb_scalars):
    echoed = []
    writer = SummaryWriter(str(tmp_path / 'log'))
    hook = LogHook(freq=3, tb_logger=writer, echo=echoed.append)
    learner = Learner(CountingLearnMode(), hooks=[hook])
    for _ in range(7):
        learner.train(torch.ones(1))
    writer.close()
    losses = [(step, value) for tag, step, value in tb_scalars(str(tmp_path / 'log')) if tag == 'learner/loss']
    assert losses == [(3, 2.0), (6, 5.0)]  # means of iterations 1-3 and 4-6; iteration 7 waits for 9
    assert hook.last['loss'] == 5.0
    assert echoed == ['[learner] iter 3: loss=2 cur_lr=0.1', '[learner] iter 6: loss=5 cur_lr=0.1']


def test_checkpoint_hook_writes_the_latest_checkpoint_after_the_first_round_then_every_n_iterations(tmp_path):
    learner = Learner(CountingLearnMode(), str(tmp_path), hooks=[CheckpointHook(freq=4)],
                      state_provider=lambda: {'env_step': 123})
    path = tmp_path / 'ckpt' / 'ckpt_latest.pth'
    saved_at = []
    for _ in range(10):
        learner.train(torch.ones(1))
        learner.end_round()
        if path.exists():
            saved_at.append(load_checkpoint(str(path))['train_iter'])
    assert sorted(set(saved_at)) == [1, 4, 8]  # the first round that trained: what cannot be saved shows at once
    state = load_checkpoint(str(path))
    assert state['env_step'] == 123 and 'model' in state['policy']


def test_checkpoint_writes_are_atomic(tmp_path):
    """A save that fails half-way leaves the previous checkpoint intact and no partial file behind."""
    extra = {'env_step': 1}
    learner = Learner(CountingLearnMode(), str(tmp_path), state_provider=lambda: dict(extra))
    learner.train(torch.ones(1))
    path = learner.save_checkpoint('ckpt_latest.pth')
    extra['unpicklable'] = lambda: None  # torch.save fails part-way through writing
    learner.train(torch.ones(1))
    with pytest.raises(Exception):
        learner.save_checkpoint('ckpt_latest.pth')
    assert os.listdir(tmp_path / 'ckpt') == ['ckpt_latest.pth']
    assert load_checkpoint(path)['train_iter'] == 1


@pytest.mark.parametrize('ckpt_folder_made', [True, False])
def test_a_run_folder_moved_while_a_checkpoint_is_being_written_is_named_and_not_recreated(tmp_path, ckpt_folder_made):
    """The folder is renamed after the learner's first look and before the file is written (the race that CI hit):
    still the one 'is gone' error, and neither RUN nor RUN/ckpt comes back as a stub."""
    run = tmp_path / 'run'
    (run / 'ckpt').mkdir(parents=True) if ckpt_folder_made else run.mkdir()

    def move_then_give_state() -> dict:
        run.rename(tmp_path / 'moved')
        return {}
    learner = Learner(CountingLearnMode(), str(run), state_provider=move_then_give_state)
    with pytest.raises(CheckpointError, match='is gone: it was moved or deleted'):
        learner.save_checkpoint('ckpt_latest.pth')
    assert not run.exists()


def test_checkpoint_roundtrip_restores_the_policy_and_the_iteration(tmp_path):
    learner = Learner(CountingLearnMode(), str(tmp_path))
    for _ in range(3):
        learner.train(torch.ones(1))
    path = learner.save_checkpoint('ckpt_latest.pth')
    fresh = Learner(CountingLearnMode(), str(tmp_path))
    fresh.load_checkpoint_state(load_checkpoint(path))
    assert fresh.train_iter == 3
    assert torch.equal(fresh.policy.weight, learner.policy.weight)


def test_linear_lr_decay_hook_reaches_zero_at_decay_iters():
    mode = CountingLearnMode(lr=0.1)
    learner = Learner(mode, hooks=[LinearLRDecayHook(decay_iters=10)])
    lrs = []
    for _ in range(12):
        learner.train(torch.ones(1))
        lrs.append(mode.optimizer.param_groups[0]['lr'])
    assert lrs[4] == pytest.approx(0.05)   # after 5 of 10 iterations: half
    assert lrs[9] == 0.0 and lrs[11] == 0.0


def test_load_checkpoint_errors_name_the_file(tmp_path):
    with pytest.raises(CheckpointError, match='does not exist'):
        load_checkpoint(str(tmp_path / 'missing.pth'))
    corrupt = tmp_path / 'corrupt.pth'
    corrupt.write_bytes(b'\x00garbage')
    with pytest.raises(CheckpointError, match='is corrupt'):
        load_checkpoint(str(corrupt))
    foreign = tmp_path / 'foreign.pth'
    torch.save({'weights': 1}, foreign)
    with pytest.raises(CheckpointError, match='not written by acframe'):
        load_checkpoint(str(foreign))


def test_saving_without_an_experiment_folder_is_an_error():
    with pytest.raises(CheckpointError, match='no experiment folder'):
        Learner(CountingLearnMode()).save_checkpoint('ckpt_latest.pth')


def test_a_time_based_checkpoint_is_written_when_its_seconds_have_passed(tmp_path, monkeypatch):
    from acframe.worker import learner as learner_module
    from acframe.worker.learner import CheckpointHook
    clock = [100.0]
    monkeypatch.setattr(learner_module.time, 'monotonic', lambda: clock[0])
    saved = []

    class FakeLearner:
        train_iter = 1

        def save_checkpoint(self, name):
            saved.append((name, clock[0]))

    hook = CheckpointHook(freq=0, every_s=60.0)
    hook.after_round(FakeLearner())
    assert saved == [('ckpt_latest.pth', 100.0)]  # the first round that trained
    hook.after_round(FakeLearner())
    clock[0] += 59.0
    hook.after_round(FakeLearner())
    assert len(saved) == 1
    clock[0] += 2.0
    hook.after_round(FakeLearner())
    assert saved[1:] == [('ckpt_latest.pth', 161.0)]
    hook.after_round(FakeLearner())
    assert len(saved) == 2


class FailingHook(LearnerHook):
    """A user's hook whose after_eval writes to a folder that does not exist."""

    def after_eval(self, learner, result):
        with open('/nonexistent-folder/hook.log', 'a') as f:
            f.write(str(result))


def test_a_users_hook_that_raises_is_one_line_naming_the_hook_and_its_file():
    from acframe.errors import PolicyError
    learner = Learner(CountingLearnMode(), hooks=[FailingHook()])
    learner.train(torch.ones(1))  # after_iter: the base class's, nothing to do
    with pytest.raises(PolicyError) as info:
        learner.after_eval(1, 8, 1.0, 1.0, False)
    message = str(info.value)
    assert message.startswith("the hook FailingHook.after_eval raised FileNotFoundError") and '\n' not in message
    assert 'test_learner.py:' in message  # the user's file and line


def test_log_hook_logs_each_time_train_iter_passes_a_multiple_of_its_frequency():
    """-m async's workers share train_iter, so the one that logs sees it jump (3, 7, 12, ...): a point whenever a
    multiple of freq was reached or passed (with `%` it logged 4 points in 1,000 iterations); stepping one at a time,
    the multiples exactly."""
    echoed = []
    hook = LogHook(freq=5, echo=echoed.append)
    learner = Learner(CountingLearnMode(), hooks=[hook])
    for it in (3, 7, 8, 12, 14, 21, 22):
        learner.train_iter = it
        hook.after_iter(learner, {'loss': float(it)})
    assert [line.split(':')[0] for line in echoed] == ['[learner] iter 7', '[learner] iter 12', '[learner] iter 21']
    assert echoed[-1] == '[learner] iter 21: loss=17.5'  # the mean of 14 and 21, the window since iteration 12
    stepped = []
    hook = LogHook(freq=5, echo=stepped.append)
    for it in range(1, 12):
        learner.train_iter = it
        hook.after_iter(learner, {'loss': 1.0})
    assert [line.split(':')[0] for line in stepped] == ['[learner] iter 5', '[learner] iter 10']


def test_a_hooks_after_load_gets_the_run_folder_on_resume(tmp_path):
    """Every hook method gets ``learner.exp_dir`` (docs/logging.md): after_load, which a resume calls while it
    restores the checkpoint, got None (the folder was set just after)."""
    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy

    seen = []

    class LoadRecorder(LearnerHook):
        def after_load(self, learner):
            seen.append(learner.exp_dir)

    run = str(tmp_path / 'run')
    serial_pipeline_onpolicy('cartpole_a2c.py', exp_dir=run, max_env_step=400, progress=False)
    serial_pipeline_onpolicy(None, resume=run, max_env_step=800, progress=False, learner_hooks=[LoadRecorder()])
    assert seen == [run]


def test_a_learn_mode_of_acframes_failing_on_a_user_buffers_batch_names_the_buffer_and_its_missing_sample_kind():
    """The failure is raised where no user code runs (here C code reading the batch, as ACER's indexing of a batch
    of the wrong length): the user's buffer gave the batch, so it is named, with the sample kind ACER's learn mode
    needs when the buffer declares none; an acframe buffer's batch leaves the traceback as it is (an acframe bug)."""
    import operator
    from types import SimpleNamespace

    from acframe.data.buffer import ReplayBuffer
    from acframe.errors import PolicyError

    class OwnBuffer:  # registered nowhere: named by its class
        pass

    mode = SimpleNamespace(forward=operator.itemgetter('obs'), policy_cfg={'type': 'acer'})
    with pytest.raises(PolicyError, match=r"^the policy's learn mode could not read a batch of replay buffer "
                                          r"'OwnBuffer' \(.*OwnBuffer\): KeyError: 'obs' .*; check that its "
                                          r"sample\(batch_size\) follows the contract, .* it declares no sample_kind "
                                          r"and policy 'acer' learns from whole trajectories: set sample_kind = "
                                          r"'segments' on it, or subclass acframe.data.episodic_buffer.\w+$"):
        Learner(mode, buffer=OwnBuffer()).train({})
    with pytest.raises(KeyError):
        Learner(mode, buffer=ReplayBuffer(16)).train({})
    # the device's trouble is not the batch's: it stays as raised
    learner = Learner(mode, buffer=OwnBuffer())
    assert learner._user_buffer_batch_error(torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2 GiB')) is None
    assert learner._user_buffer_batch_error(MemoryError()) is None


class DefaultsHook(LearnerHook):
    """A user's hook whose keyword arguments say their kinds only by their defaults."""

    def __init__(self, flag=False, limit=10, file='hook.txt'):
        self.flag, self.limit, self.file = flag, limit, file


def test_a_hooks_arguments_are_checked_against_the_kinds_of_their_defaults_as_it_is_built():
    """A value not of its default's kind failed at the hook's first call, minutes into the run; None, numpy's scalars
    and paths are values a user means."""
    import pathlib

    from acframe import HOOK_REGISTRY
    from acframe.errors import ConfigError
    from acframe.worker.learner import hooks_from_config

    HOOK_REGISTRY.register('defaults_hook_test', DefaultsHook, force=True)
    try:
        hook, = hooks_from_config([dict(type='defaults_hook_test', flag=np.bool_(True), limit=None,
                                        file=pathlib.Path('x.txt'))])
        assert hook.flag and hook.limit is None and hook.file == pathlib.Path('x.txt')
        assert hooks_from_config([dict(type='defaults_hook_test', limit=np.float32(2.5))])[0].limit == 2.5
        for given, message in ((dict(limit='ten'), "limit='ten' must be a number (like its default 10), got str"),
                               (dict(flag=1), "flag=1 must be a bool (like its default False), got int"),
                               (dict(limit=True), "limit=True must be a number (like its default 10), got bool"),
                               (dict(file=np.int64(3)), "file=np.int64(3) must be a string (like its default "
                                                        "'hook.txt'), got numpy.int64")):
            with pytest.raises(ConfigError, match=r"^config key 'policy.learn.learner.hooks\[0\]': hook "
                                                  r"'defaults_hook_test': " + re.escape(message) + '$'):
                hooks_from_config([dict(type='defaults_hook_test', **given)])
    finally:
        HOOK_REGISTRY._entries.pop('defaults_hook_test', None)


class PrioritizingLearnMode(CountingLearnMode):
    """Returns a priority per sequence, as IMPALA's learn mode does for a batch a prioritized buffer drew."""

    def forward(self, batch) -> Dict[str, float]:
        info = super().forward(batch['reward'].sum())
        return dict(info, priority=np.ones(batch['reward'].shape[1]))


def test_priorities_with_no_buffer_to_take_them_are_warned_about_once():
    """A loop composed by hand with Learner(mode) and a prioritized buffer: the priorities went nowhere, the buffer's
    draws stayed uniform, without a word."""
    said = []
    learner = Learner(PrioritizingLearnMode())
    learner.warn = said.append
    batch = {'reward': torch.ones(4, 3), 'is_weight': torch.ones(1, 3)}
    for _ in range(3):
        learner.train(batch)
    assert len(said) == 1 and "was given no buffer to hand them to" in said[0] and 'Learner(..., buffer=' in said[0]
    learner = Learner(PrioritizingLearnMode())  # a uniform buffer's batch (no is_weight): nothing to say
    learner.warn = said.append
    learner.train({'reward': torch.ones(4, 3)})
    assert len(said) == 1


def test_a_hook_of_ones_own_that_is_no_learner_hook_is_called_for_what_it_defines():
    """A duck-typed hook given in Python (learner_hooks=) without after_eval was an AttributeError at the first
    evaluation, minutes into the run (a missing before_run was already passed over)."""
    seen = []

    class OnlyIters:
        def after_iter(self, learner, info):
            seen.append(learner.train_iter)

    learner = Learner(CountingLearnMode(), hooks=[OnlyIters()])
    learner.train(torch.ones(1))
    learner.after_eval(1, 10, 1.0, 1.0, False)
    learner.end_round()
    assert seen == [1]
