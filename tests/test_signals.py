"""Specification of ``acframe.signals``: SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) inside the block."""
import contextlib
import os
import signal
import time

import pytest

from acframe.logs import RunWriter, read_scalars
from acframe.signals import (Terminated, interrupt_handled, interrupts_deferred, raise_swallowed_interrupt,
                             sigterm_as_interrupt)


def test_sigterm_inside_the_block_raises_terminated_once_and_the_old_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as info:
        with sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted at once
    assert isinstance(info.value, KeyboardInterrupt) and 'SIGTERM' in str(info.value)
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_second_sigterm_does_not_interrupt_the_interrupt_path():
    finished = False
    with sigterm_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Terminated:
            os.kill(os.getpid(), signal.SIGTERM)  # e.g. a second `docker stop` while the checkpoint is written
            time.sleep(0.05)
            finished = True
    assert finished


def library_that_turns_interrupts_into_keyboard_interrupt():
    """What Ray's ``ray.get`` does with the exception a handler raises while it waits."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    except KeyboardInterrupt:
        raise KeyboardInterrupt() from None


def test_a_sigterm_a_library_reraised_as_a_plain_keyboard_interrupt_leaves_the_block_as_the_sigterm():
    with pytest.raises(Terminated) as info:
        with sigterm_as_interrupt():
            library_that_turns_interrupts_into_keyboard_interrupt()
    assert info.value.exit_code == 143  # the CLI's exit status for SIGTERM, not Ctrl-C's 130


def test_a_run_stopped_by_a_sigterm_a_library_reraised_is_finished_and_reraises_the_sigterm(tmp_path):
    from acframe.config.compile import compile_config
    from acframe.entry.serial import SerialRun

    def loop(run):
        library_that_turns_interrupts_into_keyboard_interrupt()

    run = SerialRun(compile_config('cartpole_impala.py'), exp_dir=str(tmp_path / 'run'), progress=False)
    with pytest.raises(Terminated):
        run.drive(loop)
    assert run.interrupted and (tmp_path / 'run' / 'summary.json').exists()


def test_after_a_sigterm_in_an_inner_block_later_ones_stay_ignored_until_the_outer_block_ends():
    """A run's start (the outer block) and its training (an inner block): the stop path after the inner block (e.g.
    waiting for Ray's rank actors) must not be cut short by a second SIGTERM."""
    before = signal.getsignal(signal.SIGTERM)
    stopped = False
    with sigterm_as_interrupt():
        try:
            with sigterm_as_interrupt():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
        except Terminated:
            os.kill(os.getpid(), signal.SIGTERM)  # a second `docker stop` while the run stops
            time.sleep(0.05)
            stopped = True
    assert stopped and signal.getsignal(signal.SIGTERM) is before


def test_an_interrupt_inside_a_deferred_block_is_raised_when_the_block_ends():
    steps = []
    with pytest.raises(Terminated):
        with sigterm_as_interrupt():
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # the handler has run: the interrupt is held
                steps.append('finished the hand-off')
            steps.append('after the block')  # never reached
    assert steps == ['finished the hand-off']


def test_ctrl_c_inside_a_deferred_block_is_held_too_and_the_default_handler_comes_back():
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a shell, even under nohup
    try:
        ctrl_c_inside_a_deferred_block()
    finally:
        signal.signal(signal.SIGINT, inherited)


def ctrl_c_inside_a_deferred_block():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with sigterm_as_interrupt():
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                steps.append('finished the hand-off')
    assert steps == ['finished the hand-off']
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize('outer', [False, True])
def test_a_second_ctrl_c_cuts_a_breakable_block_at_once_but_not_one_inside_a_hand_off(outer):
    """A gradient step (``breakable=True``, it runs user code) that never ends can still be stopped: the second
    Ctrl-C is raised where it lands. Inside a hand-off that must not be cut (an unbreakable block) it is held."""
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    steps = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with sigterm_as_interrupt():
                with interrupts_deferred() if outer else contextlib.nullcontext():
                    with interrupts_deferred(breakable=True):
                        os.kill(os.getpid(), signal.SIGINT)
                        time.sleep(0.05)
                        steps.append('held')
                        os.kill(os.getpid(), signal.SIGINT)
                        time.sleep(0.05)
                        steps.append('held again')
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert steps == (['held', 'held again'] if outer else ['held'])


def test_an_error_leaving_a_deferred_block_is_raised_as_it_is_and_the_held_interrupt_at_the_next_check():
    """A policy's bug inside a gradient step with a SIGTERM held came out as the SIGTERM (exit 143, the final
    checkpoint written, the bug kept only as the context)."""
    with sigterm_as_interrupt():
        with pytest.raises(ValueError, match='a bug in the step'):
            with interrupts_deferred(breakable=True):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                raise ValueError('a bug in the step')
        with pytest.raises(Terminated):
            raise_swallowed_interrupt()


def test_a_breakable_block_holding_a_sigterm_longer_than_its_hold_is_cut_as_the_sigterm(monkeypatch):
    """A step that never ends (a hook stuck on the network) no longer keeps SIGTERM out, which has no second signal
    to cut it (the first sets them ignored): after the hold it is raised where the step is; a hand-off inside it
    (an unbreakable block) is never cut."""
    import acframe.signals as signals

    monkeypatch.setattr(signals, 'BREAKABLE_HOLD_S', 0.2)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        started = time.monotonic()
        with pytest.raises(Terminated):
            with sigterm_as_interrupt():
                with interrupts_deferred(breakable=True):
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)  # stuck
        assert time.monotonic() - started < 2
        steps = []
        with pytest.raises(Terminated):
            with sigterm_as_interrupt():
                with interrupts_deferred():
                    with interrupts_deferred(breakable=True):
                        os.kill(os.getpid(), signal.SIGTERM)
                        time.sleep(0.5)  # past the hold: not cut inside the hand-off
                        steps.append('finished')
        assert steps == ['finished']
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_interrupt_held_by_a_hand_off_inside_a_step_is_held_by_the_step_once_the_hand_off_ends(monkeypatch):
    """A SIGTERM that came inside a hand-off (an unbreakable block: the run writer's put, inside a step's hook) had no
    hold armed, and a step stuck after it was never cut (SIGTERM has no second); a second Ctrl-C, or the hold's end,
    inside the hand-off was dropped. Now the step holds it as its own once the hand-off ends, and cuts it there when
    it was asked to meanwhile."""
    import acframe.signals as signals

    monkeypatch.setattr(signals, 'BREAKABLE_HOLD_S', 0.2)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    steps = []
    try:
        started = time.monotonic()
        with pytest.raises(Terminated):
            with sigterm_as_interrupt():
                with interrupts_deferred(breakable=True):
                    with interrupts_deferred():
                        os.kill(os.getpid(), signal.SIGTERM)
                        time.sleep(0.05)
                    steps.append('after the hand-off')
                    time.sleep(5)  # stuck: cut by the hold
        assert steps == ['after the hand-off'] and time.monotonic() - started < 2
        for second in ('a second Ctrl-C', "the hold's end"):
            steps = []
            with pytest.raises(Terminated):
                with sigterm_as_interrupt():
                    with interrupts_deferred(breakable=True):
                        if second == "the hold's end":
                            os.kill(os.getpid(), signal.SIGTERM)
                            time.sleep(0.05)
                        with interrupts_deferred():
                            if second == 'a second Ctrl-C':
                                os.kill(os.getpid(), signal.SIGTERM)
                                time.sleep(0.05)
                                os.kill(os.getpid(), signal.SIGINT)
                            time.sleep(0.5)  # (past the hold)
                            steps.append('hand-off finished')
                        steps.append('after the hand-off')  # cut before this
            assert steps == ['hand-off finished'], second
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_the_holds_ctrl_c_arriving_after_its_step_ended_interrupts_nothing(monkeypatch):
    """The hold's timer sent its Ctrl-C just as the step ended with the SIGTERM it held (here: the signal blocked until
    then): it met no interrupt to cut, and was raised as a new Ctrl-C in the interrupt path."""
    import acframe.signals as signals

    monkeypatch.setattr(signals, 'BREAKABLE_HOLD_S', 0.1)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    steps = []
    try:
        with sigterm_as_interrupt():
            try:
                with pytest.raises(Terminated):
                    with interrupts_deferred(breakable=True):
                        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                        os.kill(os.getpid(), signal.SIGTERM)
                        time.sleep(0.4)  # the hold ends; its Ctrl-C waits, blocked
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            time.sleep(0.05)
            steps.append('the interrupt path goes on')
            with pytest.raises(KeyboardInterrupt):  # and the user's next Ctrl-C is not taken for the hold's
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert steps == ['the interrupt path goes on']


@pytest.mark.parametrize('whose', ['the hold', 'the user'])
def test_a_ctrl_c_handled_as_a_block_ends_leaves_it_with_the_interrupt_it_held(monkeypatch, whose):
    """A Ctrl-C handled between the block's depth reaching 0 and its taking the held SIGTERM (the hold's, or the
    user's second) was raised as a new plain Ctrl-C (exit 130, not 143), and the SIGTERM stayed held: the next block
    of the process ended by raising it."""
    import acframe.signals as signals

    take, sent = signals._take_pending, []

    def taken_as_a_ctrl_c_comes():
        if not sent:
            sent.append(whose)
            if whose == 'the hold':
                signals._Deferral.hold_fired_at = time.monotonic()  # (as its timer marks it)
            os.kill(os.getpid(), signal.SIGINT)  # handled at the next check: here, inside the block's end
        return take()
    monkeypatch.setattr(signals, '_take_pending', taken_as_a_ctrl_c_comes)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with sigterm_as_interrupt():
            with pytest.raises(Terminated):
                with interrupts_deferred(breakable=True):
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.05)
            assert sent and signals._Deferral.pending is None and signals._Deferral.timer is None
            with interrupts_deferred():  # the next block holds nothing
                pass
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_a_hold_that_ended_in_a_hand_off_that_failed_is_started_again(monkeypatch):
    """The hold's end came inside a hand-off that then raised, and the step caught the error and went on: its hold
    was spent, and a SIGTERM (which has no second) no longer stopped a step stuck after it."""
    import acframe.signals as signals

    monkeypatch.setattr(signals, 'BREAKABLE_HOLD_S', 0.2)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    steps = []
    try:
        started = time.monotonic()
        with pytest.raises(Terminated):
            with sigterm_as_interrupt():
                with interrupts_deferred(breakable=True):
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.05)
                    try:
                        with interrupts_deferred():
                            time.sleep(0.4)  # the hold ends here
                            raise OSError('the hand-off failed')
                    except OSError:
                        steps.append('caught')
                    time.sleep(5)  # stuck: cut by the new hold
        assert steps == ['caught'] and time.monotonic() - started < 2
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_the_run_writer_logs_scalars_and_a_wedged_writer_cannot_hang_close(tmp_path, capsys):
    writer = RunWriter(str(tmp_path / 'log'), close_timeout_s=0.5)
    writer.add_scalar('learner/loss', 1.5, 3)
    writer.close()
    assert [(s.tag, s.step, s.value) for s in read_scalars(str(tmp_path / 'log'))] == [('learner/loss', 3, 1.5)]

    wedged = RunWriter(str(tmp_path / 'log2'), close_timeout_s=0.5)
    real_close, wedged._writer.close = wedged._writer.close, lambda: time.sleep(60)  # a logger thread that never ends
    started = time.monotonic()
    wedged.close()
    assert time.monotonic() - started < 5
    assert 'did not close within 0.5 s' in capsys.readouterr().err
    real_close()


class _InterruptedWhileFinalized:
    """An object whose finalizer is running when the signal's handler runs: Python swallows what ``__del__`` raises."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        time.sleep(0.05)  # the handler runs here, and its exception is printed as "Exception ignored"


@pytest.mark.filterwarnings('ignore::pytest.PytestUnraisableExceptionWarning')  # the swallowed interrupt, printed
@pytest.mark.parametrize('signum, raised', [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_an_interrupt_python_swallowed_is_raised_again_at_the_next_check(signum, raised):
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(raised):
            with sigterm_as_interrupt():
                _InterruptedWhileFinalized(signum)  # finalized at once: the interrupt does not reach this block
                raise_swallowed_interrupt()  # a pipeline's loop checks once per turn
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_nothing_is_raised_again_once_the_interrupt_path_has_it():
    with sigterm_as_interrupt():
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        interrupt_handled()  # what RunBase.drive does with the interrupt it catches
        raise_swallowed_interrupt()  # nothing
    with sigterm_as_interrupt():  # nor in a later block of the same process
        raise_swallowed_interrupt()


@pytest.mark.filterwarnings('ignore::pytest.PytestUnraisableExceptionWarning')  # the swallowed interrupt, printed
def test_an_interrupt_swallowed_during_a_runs_start_up_is_raised_inside_its_training_block():
    """The pipelines enter the block for start-up and again for training (``RunBase.drive``): entering the inner
    block keeps what start-up swallowed."""
    with pytest.raises(Terminated):
        with sigterm_as_interrupt():  # start-up
            _InterruptedWhileFinalized(signal.SIGTERM)
            with sigterm_as_interrupt():  # training
                raise_swallowed_interrupt()


@pytest.mark.filterwarnings('ignore::pytest.PytestUnraisableExceptionWarning')  # the swallowed interrupt, printed
def test_an_interrupt_swallowed_in_a_nested_block_that_ended_is_left_for_the_enclosing_loop():
    """A tuning study's loop (the outer block) runs trials whose runs (inner blocks) may end normally after Python
    swallowed a Ctrl-C: the study's next turn raises it; the outermost block's end drops what nobody raised."""
    with pytest.raises(Terminated):
        with sigterm_as_interrupt():  # the study
            with sigterm_as_interrupt():  # a trial's run, past its last check
                _InterruptedWhileFinalized(signal.SIGTERM)
            raise_swallowed_interrupt()  # the study's next turn
    with sigterm_as_interrupt():
        _InterruptedWhileFinalized(signal.SIGTERM)
    with sigterm_as_interrupt():  # a later block of the same process starts clean
        raise_swallowed_interrupt()


SIGTERM_POLICY = '''
import os
import signal

from acframe import POLICY_REGISTRY
from acframe.policy.impala import IMPALAPolicy
from acframe.policy.ppo import PPOPolicy

CALLS = [0]


def learn_and_maybe_sigterm(policy_class, policy, batch):
    """The policy's gradient step, then a real SIGTERM to this process inside the SIGTERM_AT-th one."""
    info = policy_class._forward_learn(policy, batch)
    CALLS[0] += 1
    if CALLS[0] == int(os.environ.get('SIGTERM_AT', 0)):
        os.kill(os.getpid(), signal.SIGTERM)
    return info


@POLICY_REGISTRY.register('ppo_sigterm_test')
class PPOSigterm(PPOPolicy):
    def _forward_learn(self, batch):
        return learn_and_maybe_sigterm(PPOPolicy, self, batch)


@POLICY_REGISTRY.register('impala_sigterm_test')
class IMPALASigterm(IMPALAPolicy):
    def _forward_learn(self, batch):
        return learn_and_maybe_sigterm(IMPALAPolicy, self, batch)
'''


@pytest.mark.parametrize('algo, settings, count', [
    ('ppo', ['policy.collect.n_sample=64', 'policy.learn.batch_size=16', 'policy.learn.epoch_per_collect=2'],
     ('rollout_step', 3)),  # 8 steps a rollout: the signal in the third step of the second
    ('impala', ['policy.learn.update_per_collect=4', 'policy.other.replay_buffer.save_in_checkpoint=True'],
     ('pending_updates', 1))])  # 4 updates a round: the signal in the third of the third round
def test_a_sigterm_inside_a_gradient_step_resumes_to_the_unbroken_runs_weights(tmp_path, algo, settings, count):
    """The step the signal lands in is finished, counted and seen by the hooks (the learning rate decay's among
    them), and the checkpoint holds the round's count as it is: the resumed run continues the round, and evaluates
    where the unbroken run does. It did the whole
    on-policy round again from its first step, the weights already moved by the steps made (8 + 3 steps on that
    rollout, every later schedule shifted), or one off-policy update more, and at a learning rate one step behind."""
    import subprocess
    import sys

    import torch

    (tmp_path / 'sigterm_policy.py').write_text(SIGTERM_POLICY)
    args = ['-c', f'cartpole_{algo}.py', '--import', 'sigterm_policy', '-q', f'policy.type={algo}_sigterm_test',
            *settings, 'env.stop_value=None', 'policy.eval.evaluator.eval_freq=10', 'env.collector_env_num=4',
            'policy.learn.lr_decay_iters=100']

    def cli(*more, kill_at=0):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]),
                   SIGTERM_AT=str(kill_at))
        return subprocess.run([sys.executable, '-m', 'acframe.cli', *more], capture_output=True, text=True,
                              timeout=300, env=env, cwd=tmp_path)
    assert cli(*args, '--exp-dir', 'whole', '--max-train-iter', '24').returncode == 0
    cut = cli(*args, '--exp-dir', 'cut', '--max-train-iter', '24', kill_at=11)
    assert cut.returncode == 143, cut.stderr
    saved = torch.load(tmp_path / 'cut' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert saved['train_iter'] == 11 and saved[count[0]] == count[1]
    resumed = cli('--resume', 'cut', '--import', 'sigterm_policy', '-q', '--max-train-iter', '24')
    assert resumed.returncode == 0, resumed.stderr
    whole = torch.load(tmp_path / 'whole' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    after = torch.load(tmp_path / 'cut' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert after['train_iter'] == whole['train_iter'] == 24
    for name, weight in whole['policy']['model'].items():
        assert torch.equal(after['policy']['model'][name], weight), name
    from acframe.logs import read_scalars

    def evaluations(run):
        return [(s.step, s.value) for s in read_scalars(str(tmp_path / run / 'log'))
                if s.tag == 'evaluator/return_mean_by_iter']
    # the evaluation due inside the cut round waits for its end, where the unbroken run evaluates (at 11 it came
    # first, moving every later one)
    assert evaluations('cut') == evaluations('whole'), (evaluations('cut'), evaluations('whole'))


def _child_that_sets_its_handlers_late(out):
    """A child whose Ctrl-C handling is set only after 0.5 s of start-up (imports, building its worker)."""
    import time

    from acframe.signals import release_held_signals

    out.put('started')
    time.sleep(0.5)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    release_held_signals()
    out.put('set')


@pytest.mark.parametrize('held, method', [(True, 'fork'), (False, 'fork'), (True, 'spawn'), (True, 'forkserver')])
def test_a_ctrl_c_while_a_child_starts_waits_for_the_childs_own_handlers(held, method):
    """A real SIGINT to a child still starting: held, it reaches the child once it ignores it (a run's children
    ignore Ctrl-C, their parent stops them); not held, it was a KeyboardInterrupt traceback from the child. Spawn's
    first child was started with them open (multiprocessing's resource tracker, started by that first start,
    unblocks them in the parent); a fork server's children inherit its mask."""
    import multiprocessing

    from acframe.signals import held_while_a_child_starts

    context = multiprocessing.get_context(method)
    out = context.SimpleQueue()
    child = context.Process(target=_child_that_sets_its_handlers_late, args=(out,))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    if held:
        with held_while_a_child_starts(context):
            child.start()
    else:
        child.start()
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # (the parent's mask as it was)
    assert out.get() == 'started'  # (the child is in its start-up's sleep, its own handlers not set yet)
    os.kill(child.pid, signal.SIGINT)
    child.join(10)
    if held:
        assert child.exitcode == 0 and out.get() == 'set'
    else:  # (the KeyboardInterrupt ended it, with a traceback)
        assert child.exitcode == 1
