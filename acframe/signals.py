"""SIGTERM as an interrupt: ``docker stop``, Slurm pre-emption, systemd and ``timeout`` stop a run as Ctrl-C does.

A pipeline wraps its run in ``handle_sigterm_as_interrupt()``; a SIGTERM then raises ``Terminated`` (a
``KeyboardInterrupt``) in the main thread, so the pipeline's existing Ctrl-C path writes the final checkpoint
and the summary and stops its workers. The CLI exits with status 143 (128 + SIGTERM) for ``Terminated`` and
130 for Ctrl-C.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

#: the exit status of a run stopped by SIGTERM (128 + 15), as a shell reports it
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM; handled wherever Ctrl-C is."""


def _raise_terminated(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second SIGTERM must not cut the final checkpoint short
    raise Terminated(f"received {signal.Signals(signum).name}")


@contextlib.contextmanager
def handle_sigterm_as_interrupt() -> Iterator[None]:
    """While inside, the first SIGTERM raises ``Terminated`` in the main thread (later ones are ignored until the
    block ends, so the interrupt path can finish); the previous handler is restored on exit.

    Off the main thread (where Python cannot set signal handlers) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
