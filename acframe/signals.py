"""SIGTERM handled like Ctrl-C: ``docker stop``, Slurm pre-emption, systemd and ``timeout`` send SIGTERM.

Inside ``sigterm_as_interrupt()`` a SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) in the main
thread, so the code that already finishes a run on Ctrl-C — final checkpoint, ``summary.json``, workers
stopped — runs for SIGTERM too. The CLI exits 143 (128 + SIGTERM) for it, 130 for Ctrl-C.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator, Optional


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


class _Deferral:
    """Main-thread state of the handlers: how deep the ``interrupts_deferred`` blocks nest, the interrupt held back,
    and the last one raised (until the run's interrupt path has it: ``raise_swallowed_interrupt``)."""

    depth = 0
    pending: Optional[BaseException] = None
    raised: Optional[BaseException] = None


def _interrupt(exc: BaseException) -> None:
    if _Deferral.depth:
        _Deferral.pending = _Deferral.pending or exc
        return
    _Deferral.raised = exc
    raise exc


def raise_swallowed_interrupt() -> None:
    """Raise again an interrupt a handler raised that never reached the run's interrupt path.

    A handler runs wherever the main thread is, and Python swallows (prints as "Exception ignored") an exception
    raised inside a ``__del__``, a weakref callback or a generator the garbage collector closes: such a Ctrl-C or
    SIGTERM would be lost and the run would go on. The pipelines' loops call this once per turn
    (``RunBase.budget_left``); the interrupt path clears it (``interrupt_handled``).
    """
    exc = _Deferral.raised
    if exc is not None:
        _Deferral.raised = None
        raise exc


def interrupt_handled() -> None:
    """The run's interrupt path has the interrupt: nothing is left to raise again."""
    _Deferral.raised = None


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second SIGTERM must not cut the final checkpoint short
    _interrupt(Terminated(f"received signal {signum} (SIGTERM)"))


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    _interrupt(KeyboardInterrupt())


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Within the block a Ctrl-C or SIGTERM (inside ``sigterm_as_interrupt``) is held and raised when the block ends.

    For hand-offs that must not be cut in the middle: an exception raised by a signal handler inside
    ``multiprocessing.Queue.put`` can lose the wake-up of the queue's feeder thread, and the writer that owns the
    queue then waits forever when it is closed. Outside the main thread (where handlers never run) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Deferral.depth += 1
    try:
        yield
    finally:
        _Deferral.depth -= 1
        if _Deferral.depth == 0 and _Deferral.pending is not None:
            pending, _Deferral.pending = _Deferral.pending, None
            raise pending


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, the first SIGTERM raises ``Terminated`` (later ones are ignored until the block ends, so the
    interrupt path can write the final checkpoint); the previous handler is restored afterwards.

    Only the main thread can install handlers: elsewhere (a script's worker thread) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # Ctrl-C as before, but deferrable
        signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    try:
        yield
    finally:
        interrupt_handled()  # nothing is left to raise after the block
        signal.signal(signal.SIGTERM, previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)
