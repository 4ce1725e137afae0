"""A threaded logger backend (``LoggerBackend.threaded``: W&B, MLflow, a user's) is made, called and closed in a thread
of its own: it gets every call in order, and one that stops answering — here a real TCP peer that accepts and never
replies — costs the run at most ``logger.timeout_s`` at its start, mid-run or at its close, with one warning line."""
import socket
import re
import time

import pytest
from easydict import EasyDict

from acframe.loggers import LoggerBackend, LoggerRun, RunLogger
from acframe.loggers.base import BackendThread, start_backend

TIMEOUT = 0.5


@pytest.fixture
def silent_peer():
    """A TCP address that accepts connections (the kernel's backlog) and never answers."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(8)
    yield listener.getsockname()
    listener.close()


def wait_for_answer(address) -> None:
    """What a tracker client does: send a request, wait for the reply (forever, from a silent peer)."""
    with socket.create_connection(address) as conn:
        conn.sendall(b'POST /log\r\n\r\n')
        conn.recv(1)


class Tracker(LoggerBackend):
    """Records what it gets; stops answering at the given method (and call number, for ``log_scalar``)."""

    address = None
    hang_in = None  # '__init__', 'log_scalar' or 'close'
    hang_at = 0
    fail_at = -1

    def __init__(self, run):
        super().__init__(run)
        self.seen, self.closed = [], False
        if self.hang_in == '__init__':
            wait_for_answer(self.address)

    def log_scalar(self, tag, value, step, wall_time):
        if self.hang_in == 'log_scalar' and len(self.seen) == self.hang_at:
            wait_for_answer(self.address)
        if len(self.seen) == self.fail_at:
            raise ConnectionError('tracker unreachable')
        self.seen.append((tag, step, value))

    def close(self):
        if self.hang_in == 'close':
            wait_for_answer(self.address)
        self.closed = True


class Local(LoggerBackend):
    threaded = False

    def __init__(self, run=None):
        self.seen, self.closed = [], False

    def log_scalar(self, tag, value, step, wall_time):
        self.seen.append((tag, step, value))

    def close(self):
        self.closed = True


RUN = LoggerRun('/nonexistent', '/nonexistent/log', EasyDict(), False, None)


def tracker(**kwargs) -> type:
    return type('T', (Tracker,), kwargs)


def warnings_of(capsys):
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith('acframe: warning:')]


def test_a_threaded_backend_gets_every_call_in_order_and_is_closed():
    handle, problem = start_backend('tracker', tracker(), RUN, TIMEOUT)
    assert problem is None and isinstance(handle, BackendThread) and handle._thread.name == 'acframe-logger-tracker'
    local = Local()
    logger = RunLogger([('tracker', handle), ('local', local)], TIMEOUT)
    for i in range(2000):
        logger.add_scalar('learner/loss', i / 4, i)
    assert logger.close() == ['tracker', 'local']
    assert handle.backend.seen == local.seen == [('learner/loss', i, i / 4) for i in range(2000)]
    assert handle.backend.closed and local.closed


def test_a_local_file_backend_is_called_on_the_runs_own_thread():
    handle, problem = start_backend('local', Local, RUN, TIMEOUT)
    assert problem is None and not isinstance(handle, BackendThread)
    RunLogger([('local', handle)]).add_scalar('a', 1.0, 3)
    assert handle.backend.seen == [('a', 3, 1.0)]  # already there: no thread in between


def test_a_backend_that_stops_answering_mid_run_is_dropped_after_the_timeout_and_the_others_go_on(silent_peer, capsys):
    handle, _ = start_backend('tracker', tracker(address=silent_peer, hang_in='log_scalar', hang_at=3), RUN, TIMEOUT)
    local = Local()
    logger = RunLogger([('tracker', handle), ('local', local)], TIMEOUT)
    began = time.monotonic()
    for i in range(5):
        logger.add_scalar('learner/loss', float(i), i)  # the 4th leaves the tracker waiting for its peer
    assert time.monotonic() - began < TIMEOUT  # the run did not wait for it
    assert warnings_of(capsys) == [] and logger.names == ['tracker', 'local']
    time.sleep(TIMEOUT + 0.3)
    logger.add_scalar('learner/loss', 5.0, 5)
    lines = warnings_of(capsys)
    assert len(lines) == 1 and lines[0].startswith(
        "acframe: warning: logger backend 'tracker' has not returned from log_scalar for 1 s (logger.timeout_s=0.5); "
        "it is dropped for the rest of the run, training goes on (other backends: local)"), lines
    assert logger.names == ['local'] and handle.abandoned
    began = time.monotonic()
    assert logger.close() == ['local']
    assert time.monotonic() - began < TIMEOUT and warnings_of(capsys) == []  # nothing more to wait for
    assert handle.backend.seen == [('learner/loss', i, float(i)) for i in range(3)]
    assert [v for _, _, v in local.seen] == [float(i) for i in range(6)]


def test_a_backend_that_does_not_open_within_the_timeout_is_left_out(silent_peer):
    began = time.monotonic()
    handle, problem = start_backend('tracker', tracker(address=silent_peer, hang_in='__init__'), RUN, TIMEOUT)
    assert handle is None and problem == 'did not open within logger.timeout_s=0.5 s'
    assert TIMEOUT <= time.monotonic() - began < TIMEOUT + 2


def test_a_backend_that_raises_when_made_is_left_out_with_what_it_raised():
    class Broken(Tracker):
        def __init__(self, run):
            raise ValueError('no such project\nsecond line')
    handle, problem = start_backend('tracker', Broken, RUN, TIMEOUT)
    # what it raised, and where in the backend's own code (a user's backend: this file)
    assert handle is None and re.fullmatch(r"did not open \(ValueError: no such project; at .*test_backend_thread.py:"
                                           r"\d+ in __init__\)", problem), problem


def test_a_backend_that_hangs_in_close_costs_the_end_of_the_run_at_most_the_timeout(silent_peer, capsys):
    handle, _ = start_backend('tracker', tracker(address=silent_peer, hang_in='close'), RUN, TIMEOUT)
    logger = RunLogger([('tracker', handle)], TIMEOUT)
    logger.add_scalar('a', 1.0, 1)
    began = time.monotonic()
    assert logger.close() == []
    assert TIMEOUT <= time.monotonic() - began < TIMEOUT + 2
    assert handle.backend.seen == [('a', 1, 1.0)]
    assert warnings_of(capsys) == ["acframe: warning: logger backend 'tracker' did not finish within "
                                   "logger.timeout_s=0.5 s (still in close); what it had not flushed may be missing"]


def test_a_backend_stuck_at_the_close_says_how_many_calls_did_not_reach_it(silent_peer, capsys):
    """Stuck in its 4th of 6 scalars when the run closed: 3 never reached it (it said 'what it was last given may
    be missing', when 65% of a run's scalars had been lost)."""
    handle, _ = start_backend('tracker', tracker(address=silent_peer, hang_in='log_scalar', hang_at=3), RUN, TIMEOUT)
    logger = RunLogger([('tracker', handle)], TIMEOUT)
    for i in range(6):
        logger.add_scalar('a', float(i), i)
    assert logger.close() == []
    assert handle.backend.seen == [('a', i, float(i)) for i in range(3)]
    assert warnings_of(capsys) == ["acframe: warning: logger backend 'tracker' did not finish within logger.timeout_s=0.5 "
                                   "s (still in log_scalar); the last 3 calls given to it (scalars, texts, videos) did "
                                   "not reach it"]


def test_a_threaded_backend_that_raises_is_dropped_at_the_next_call_or_named_at_the_close(capsys):
    handle, _ = start_backend('tracker', tracker(fail_at=2), RUN, TIMEOUT)
    logger = RunLogger([('tracker', handle)], TIMEOUT)
    for i in range(3):
        logger.add_scalar('a', float(i), i)
    handle.ended.wait(5)
    logger.add_scalar('a', 3.0, 3)
    lines = warnings_of(capsys)
    assert len(lines) == 1 and re.match(r"acframe: warning: logger backend 'tracker' failed \(ConnectionError: tracker "
                                        r"unreachable; at .*test_backend_thread.py:\d+ in log_scalar\); it is dropped "
                                        r"for the rest of the run", lines[0]), lines
    assert handle.backend.closed and logger.names == [] and logger.close() == []

    handle, _ = start_backend('tracker', tracker(fail_at=0), RUN, TIMEOUT)
    logger = RunLogger([('tracker', handle)], TIMEOUT)
    logger.add_scalar('a', 0.0, 0)  # it fails in its thread; the run has no more scalars for it
    assert logger.close() == []
    (line,) = warnings_of(capsys)
    assert re.fullmatch(r"acframe: warning: logger backend 'tracker' failed \(ConnectionError: tracker unreachable; at "
                        r".*test_backend_thread.py:\d+ in log_scalar\); what it was last given may be missing", line)


def test_one_backend_slow_to_close_does_not_keep_the_others_from_closing(silent_peer, capsys):
    """They are all asked to close at once: the second one closed only after the first had finished (or timed out),
    and with a shared deadline it was reported as stuck with its close request as the 'call' waiting."""
    stuck, _ = start_backend('stuck', tracker(address=silent_peer, hang_in='close'), RUN, TIMEOUT)
    fine, _ = start_backend('fine', tracker(), RUN, TIMEOUT)
    logger = RunLogger([('stuck', stuck), ('fine', fine)], TIMEOUT)
    for i in range(3):
        logger.add_scalar('a', float(i), i)
    began = time.monotonic()
    assert logger.close() == ['fine']
    assert time.monotonic() - began < TIMEOUT + 2
    assert fine.backend.closed and fine.backend.seen == [('a', i, float(i)) for i in range(3)]
    assert warnings_of(capsys) == ["acframe: warning: logger backend 'stuck' did not finish within logger.timeout_s=0.5 "
                                   "s (still in close); what it had not flushed may be missing"]


def test_a_dropped_backend_that_answers_again_is_closed_by_its_thread():
    """Dropped while its thread waited for calls (its slow call had just returned), it was never closed."""
    handle, _ = start_backend('tracker', tracker(), RUN, TIMEOUT)
    handle.call('log_scalar', 'a', 1.0, 1, 0.0)
    deadline = time.monotonic() + 5
    while handle.busy is not None or handle._calls.qsize() and time.monotonic() < deadline:
        time.sleep(0.01)  # (idle: waiting for its next call)
    handle.abandon()
    assert handle.ended.wait(5) and handle.backend.closed


def test_several_trackers_that_do_not_open_cost_one_timeout_together(silent_peer):
    from acframe.loggers.base import start_backends

    hanging = tracker(address=silent_peer, hang_in='__init__')
    began = time.monotonic()
    results = start_backends([('a', hanging, RUN), ('b', hanging, RUN), ('c', tracker(), RUN)], TIMEOUT)
    assert TIMEOUT <= time.monotonic() - began < 2 * TIMEOUT
    assert [problem for _, problem in results] == ['did not open within logger.timeout_s=0.5 s'] * 2 + [None]
    assert isinstance(results[2][0], BackendThread)
    RunLogger([('c', results[2][0])], TIMEOUT).close()
