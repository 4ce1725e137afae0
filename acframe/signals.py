"""SIGTERM handled like Ctrl-C: ``docker stop``, Slurm pre-emption, systemd and ``timeout`` send SIGTERM.

Inside ``sigterm_as_interrupt()`` a SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) in the main
thread, so the code that already finishes a run on Ctrl-C — final checkpoint, ``summary.json``, workers
stopped — runs for SIGTERM too. The CLI exits 143 (128 + SIGTERM) for it, 130 for Ctrl-C.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second SIGTERM must not cut the final checkpoint short
    raise Terminated(f"received signal {signum} (SIGTERM)")


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
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
