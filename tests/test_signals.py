"""Specification of ``acframe.signals``: SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) inside the block."""
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
