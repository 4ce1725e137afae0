"""SIGTERM, SIGHUP and SIGQUIT handled like Ctrl-C: ``docker stop``, Slurm pre-emption, systemd and ``timeout``
send SIGTERM; a closed terminal or a dropped ssh session sends SIGHUP; Ctrl-\\ sends SIGQUIT.

Inside ``sigterm_as_interrupt()`` each of them raises ``Terminated`` (a ``KeyboardInterrupt``) in the main
thread, so the code that already finishes a run on Ctrl-C — final checkpoint, ``summary.json``, workers
stopped — runs for them too. The CLI exits 128 + the signal's number (143 for SIGTERM, 129 for SIGHUP), 130 for
Ctrl-C.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Any, Iterator, Optional


#: the signals that end a run as SIGTERM does (the final checkpoint and summary are written)
TERMINATING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@contextlib.contextmanager
def held_while_a_child_starts(context: Any = None) -> Iterator[None]:
    """Hold back Ctrl-C and the terminating signals in this thread while a child process of the run starts: the
    child inherits the held mask (through fork, and through the exec of spawn) and takes them only once it has set
    its own handlers (``release_held_signals``); a Ctrl-C while actors were forking printed a child's
    KeyboardInterrupt traceback. The parent takes what came meanwhile when the block ends, so record the child
    inside the block. ``context``: the multiprocessing context the child starts from; for 'spawn' and 'forkserver'
    multiprocessing's resource tracker is started first, outside the hold (starting it at a first ``start()``
    unblocks the signals in this thread), and the fork server inside it (its children inherit its mask)."""
    if not hasattr(signal, 'pthread_sigmask'):
        yield
        return
    method = context.get_start_method() if context is not None else None
    if method in ('spawn', 'forkserver'):
        from multiprocessing import resource_tracker
        resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, *TERMINATING))
    try:
        if method == 'forkserver':  # (under the hold: the server's children inherit its mask, not this thread's)
            from multiprocessing import forkserver
            forkserver.ensure_running()
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def release_held_signals() -> None:
    """In a child started under ``held_while_a_child_starts``, once its handlers are set: take the signals again
    (one that came meanwhile is handled now, as those handlers say)."""
    if hasattr(signal, 'pthread_sigmask'):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, *TERMINATING))


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (or SIGHUP, SIGQUIT: ``signum``)."""

    def __init__(self, message: str = '', signum: int = signal.SIGTERM) -> None:
        super().__init__(message)
        self.signum = int(signum)

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def describe_interrupt(exc: BaseException) -> str:
    """``'terminated (SIGHUP)'`` for a ``Terminated``, ``'interrupted'`` for a Ctrl-C; ``'<who> was terminated
    (SIGTERM)'`` for another process's (``interrupt_for``)."""
    what = f"terminated ({exc.signal_name})" if isinstance(exc, Terminated) else 'interrupted'
    who = getattr(exc, 'who', None)
    return f"{who} was {what}" if who else what


class _Deferral:
    """Main-thread state of the handlers: how deep the ``interrupts_deferred`` blocks nest, the interrupt held back,
    and the last one raised (until the run's interrupt path has it: ``raise_swallowed_interrupt``)."""

    depth = 0
    unbreakable = 0  # how many of those blocks a second Ctrl-C may not cut short (``breakable=False``)
    pending: Optional[BaseException] = None
    raised: Optional[BaseException] = None
    handled_blocks = 0  # how deep the ``sigterm_as_interrupt`` blocks nest
    timer: Optional[threading.Timer] = None  # the end of a breakable block's hold (``BREAKABLE_HOLD_S``)
    cut = False  # a second interrupt (or the hold's end) came inside an unbreakable block: cut when it ends
    hold_fired_at = 0.0  # ``time.monotonic()`` when the hold's timer sent its Ctrl-C, not yet handled (0: none)


#: seconds a breakable block (a gradient step and its hooks) holds a Ctrl-C or SIGTERM at most: one that has not ended
#: by then (a hook stuck on the network, say) is cut where it is, as a second Ctrl-C cuts it (SIGTERM has no second)
BREAKABLE_HOLD_S = 30.0
#: how long after the hold's timer sent its Ctrl-C a Ctrl-C is taken for that one (a later one is the user's)
_HOLD_SIGNAL_S = 1.0


def _interrupt(exc: BaseException) -> None:
    if type(exc) is KeyboardInterrupt and _Deferral.hold_fired_at:  # the hold's own Ctrl-C, not the user's?
        hold = time.monotonic() - _Deferral.hold_fired_at < _HOLD_SIGNAL_S
        _Deferral.hold_fired_at = 0.0
        if hold:
            if _Deferral.pending is None or not _Deferral.depth:
                return  # its block ended (or is ending): the interrupt it would cut is raised there
            _Deferral.timer = None  # (spent: a hand-off that ends with an error arms a new one, _breakable_again)
    if _Deferral.depth:
        if _Deferral.pending is None:  # the first: held until the block ends (or its hold ends)
            _Deferral.pending = exc
            if not _Deferral.unbreakable:
                _start_hold()
            return
        if _Deferral.unbreakable:  # a second Ctrl-C or the hold's end inside a hand-off: once the hand-off ends
            _Deferral.cut = True
            return
        exc = _take_pending()  # a second Ctrl-C: now, not at the block's end (raised as the first: SIGTERM's status)
    elif _Deferral.pending is not None:  # a block at its end, its depth 0 and its interrupt not yet taken: that one
        exc = _take_pending()
    _Deferral.raised = exc
    raise exc


def _take_pending() -> BaseException:
    """The held interrupt, no longer held (its hold ended)."""
    exc, _Deferral.pending, _Deferral.cut = _Deferral.pending, None, False
    _end_hold()
    return exc


def _breakable_again(cut_now: bool) -> None:
    """An unbreakable block inside breakable ones has ended with an interrupt held: the breakable blocks hold it as
    one of their own (its hold armed where it had not been: a SIGTERM there had no way out of a step that never ends),
    and one that a second Ctrl-C or the hold's end asked to cut meanwhile is raised now (``cut_now``; an error that
    leaves the block is raised as it is instead, the interrupt at the next check)."""
    if not _Deferral.depth or _Deferral.unbreakable or _Deferral.pending is None:
        return
    if _Deferral.cut and cut_now:
        exc = _take_pending()
        _Deferral.raised = exc
        raise exc
    if _Deferral.timer is None:
        _start_hold()


def _start_hold() -> None:
    """Cut a breakable block that holds an interrupt for ``BREAKABLE_HOLD_S``: a Ctrl-C to the main thread then,
    through this module's own handler (with another handler, or Ctrl-C ignored, the block is not cut)."""
    if signal.getsignal(signal.SIGINT) is not _raise_keyboard_interrupt:
        return
    timer = threading.Timer(BREAKABLE_HOLD_S, lambda: _hold_ends(timer))
    timer.daemon = True
    _Deferral.timer = timer
    timer.start()


def _hold_ends(timer: threading.Timer) -> None:
    """(The timer's thread) a Ctrl-C to the main thread, unless the hold ended meanwhile: a real signal, which also
    ends a blocking call there (a simulated one waits for it). One that comes just after its block ended finds
    nothing held, and is dropped (``_interrupt``)."""
    if _Deferral.timer is timer:
        _Deferral.hold_fired_at = time.monotonic()
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def _end_hold() -> None:
    timer, _Deferral.timer = _Deferral.timer, None
    if timer is not None:
        timer.cancel()


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


def interrupt_pending() -> bool:
    """True when a Ctrl-C or SIGTERM is held back by ``interrupts_deferred`` (it is raised when the block ends)."""
    return _Deferral.pending is not None


def pending_signum() -> int:
    """The signal of the interrupt held back by ``interrupts_deferred`` (SIGINT for a Ctrl-C), 0 for none."""
    held = _Deferral.pending
    if held is None:
        return 0
    return held.signum if isinstance(held, Terminated) else int(signal.SIGINT)


def interrupt_for(signum: int, who: str) -> KeyboardInterrupt:
    """The interrupt to end this process with when ``who`` (another process of the run) got signal ``signum``:
    the same exit status as its own would give (``Terminated`` for SIGTERM/SIGHUP/SIGQUIT, else Ctrl-C's), and
    ``describe_interrupt`` names ``who``."""
    exc: KeyboardInterrupt = Terminated(who, signum) if signum and signum != signal.SIGINT else KeyboardInterrupt(who)
    exc.who = who  # type: ignore[attr-defined]
    return exc


def as_raised(exc: KeyboardInterrupt) -> KeyboardInterrupt:
    """The interrupt a handler raised, where code between it and ``exc``'s catcher turned it into a plain
    ``KeyboardInterrupt`` (Ray's ``ray.get`` does: a SIGTERM there would read as Ctrl-C, exit 130); else ``exc``."""
    raised = _Deferral.raised
    return raised if isinstance(raised, Terminated) and not isinstance(exc, Terminated) else exc


def interrupt_handled() -> None:
    """The run's interrupt path has the interrupt: nothing is left to raise again."""
    _Deferral.raised = None


class _Continues:
    """How many times this process was continued (SIGCONT) since ``watch_continues`` was first called."""

    count = 0
    installed = False
    previous: object = None


def _on_continue(signum: int, frame: object) -> None:
    _Continues.count += 1
    if callable(_Continues.previous):
        _Continues.previous(signum, frame)


def watch_continues() -> None:
    """Count SIGCONTs (from the main thread; once per process), so a watchdog can tell a slow env from a process
    that was stopped (SIGSTOP, Ctrl-Z, a suspended laptop or VM) and continued: time spent stopped is not the env's."""
    if _Continues.installed or threading.current_thread() is not threading.main_thread():
        return
    _Continues.previous = signal.signal(signal.SIGCONT, _on_continue)
    _Continues.installed = True


def continues() -> int:
    """The SIGCONTs counted so far (``watch_continues``)."""
    return _Continues.count


def _raise_terminated(signum: int, frame: object) -> None:
    for terminating in TERMINATING:  # once: a second signal must not cut the final checkpoint short
        signal.signal(terminating, signal.SIG_IGN)
    _interrupt(Terminated(f"received signal {signum} ({signal.Signals(signum).name})", signum))


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    _interrupt(KeyboardInterrupt())


def ignore_further_interrupts() -> None:
    """The run is stopping after an interrupt (stopping its workers, writing the final checkpoint): later Ctrl-Cs
    and SIGTERMs are ignored until ``sigterm_as_interrupt``'s block ends — a second Ctrl-C used to cut that short and
    lose every step since the last checkpoint. (SIGKILL still ends a process that will not stop.)"""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, *TERMINATING):
        signal.signal(signum, signal.SIG_IGN)


@contextlib.contextmanager
def interrupts_deferred(breakable: bool = False) -> Iterator[None]:
    """Within the block a Ctrl-C or SIGTERM (inside ``sigterm_as_interrupt``) is held and raised when the block ends.

    For hand-offs that must not be cut in the middle: an exception raised by a signal handler inside
    ``multiprocessing.Queue.put`` can lose the wake-up of the queue's feeder thread, and the writer that owns the
    queue then waits forever when it is closed. ``breakable=True`` (a gradient step and its hooks, which run user
    code): a second Ctrl-C while one is held, or ``BREAKABLE_HOLD_S`` seconds of holding it, raises the held one at
    once, so a step that never ends can still be stopped; inside a hand-off within it (an unbreakable block) the cut
    waits for the hand-off's end, and an interrupt that came during the hand-off is held by the step from then on,
    its hold started there. An error
    that leaves the block is raised as it is (the interrupt held is raised at the loop's next check,
    ``raise_swallowed_interrupt``). Outside the main thread (where handlers never run) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Deferral.depth += 1
    _Deferral.unbreakable += not breakable
    try:
        yield
    except BaseException:  # an error leaves the block: it is what is said; a held interrupt waits for the next check
        _Deferral.depth -= 1
        _Deferral.unbreakable -= not breakable
        if _Deferral.depth == 0 and _Deferral.pending is not None:
            _Deferral.raised = _take_pending()  # (``raise_swallowed_interrupt``'s)
        elif not breakable:
            _breakable_again(cut_now=False)
        raise
    _Deferral.depth -= 1
    _Deferral.unbreakable -= not breakable
    if _Deferral.depth == 0 and _Deferral.pending is not None:
        raise _take_pending()
    if not breakable:
        _breakable_again(cut_now=True)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, the first SIGTERM, SIGHUP or SIGQUIT raises ``Terminated`` (later ones are ignored until the
    block ends, so the interrupt path can write the final checkpoint); the previous handlers are restored afterwards.

    Only the main thread can install handlers: elsewhere (a script's worker thread) this does nothing. An interrupt
    Python swallowed inside a nested block that ended normally (a tuning trial's run, after its loop's last check)
    is left for the enclosing block's loop to raise (``raise_swallowed_interrupt``); the outermost block drops it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # SDL (pygame: gymnasium's classic-control renderers, for videos) replaces the SIGINT and SIGTERM handlers with
    # its own when it starts, which only queue a quit event nobody reads: a SIGTERM was ignored while -m eval
    # recorded videos. Told before it starts, it leaves them to us.
    os.environ.setdefault('SDL_NO_SIGNAL_HANDLERS', '1')
    previous = {terminating: signal.signal(terminating, _raise_terminated) for terminating in TERMINATING}
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # Ctrl-C as before, but deferrable
        signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    _Deferral.handled_blocks += 1
    ended = False
    try:
        yield
        ended = True
    except KeyboardInterrupt as exc:
        raised = as_raised(exc)
        if raised is not exc:
            raise raised from None
        raise
    finally:
        _Deferral.handled_blocks -= 1
        if not ended or _Deferral.handled_blocks == 0:
            interrupt_handled()  # nothing is left to raise after the block
        if _Deferral.handled_blocks == 0:
            _Deferral.hold_fired_at = 0.0  # (its Ctrl-C may have met the interrupt path's ignoring handler)
        for terminating, handler in previous.items():
            if handler is _raise_terminated and signal.getsignal(terminating) is signal.SIG_IGN:
                continue  # an outer block's, and the signal came: later ones stay ignored until that block ends
            signal.signal(terminating, handler)
        if previous_int is signal.default_int_handler or (previous_int is not None
                                                          and signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
            signal.signal(signal.SIGINT, previous_int)  # (ignored while the final checkpoint was written)
