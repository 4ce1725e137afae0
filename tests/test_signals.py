"""Specification of ``acframe.signals``: SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) inside the block."""
import os
import signal
import time

import pytest

from acframe.signals import Terminated, sigterm_as_interrupt


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
