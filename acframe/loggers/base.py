"""The logger seam: a run writes every scalar once, to ``RunLogger``, which hands it to each chosen backend.

A backend is a ``LoggerBackend`` subclass registered by name (``@LOGGER_REGISTRY.register('mine')``) and named in
``logger.backends``. The run base checks every named backend before the run folder exists (``check_loggers``: an
unknown name, a backend whose package is not installed, a destination that cannot be written is a ``ConfigError``
and nothing is written), opens them once the folder is locked (``open_loggers``), and keeps what a backend needs to
continue the same external run on ``--resume`` (its ``run_record``: ids, never secrets) in ``RUN/loggers.json``.

A backend that raises while the run logs is dropped with one warning line; the others and the run go on. A backend
that talks to a tracker (``LoggerBackend.threaded``: W&B, MLflow, a user's by default) is made and called in a thread
of its own (``BackendThread``), so a tracker that stops answering costs the run at most ``logger.timeout_s`` once:
its start, a call that runs longer, or its close is one warning line, and the run goes on without it.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import json
import os
import queue
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from ..errors import ConfigError
from ..registry import LOGGER_REGISTRY, closest
from ..utils import atomic_write_json

#: the run folder's file of external trackers' run ids, by backend name (data: read, never executed)
RECORD_FILE = 'loggers.json'


class LoggerRun(NamedTuple):
    """What a backend is opened with: the run folder, its ``log/`` folder, the compiled config, whether the run is
    being resumed, and the ``run_record`` this backend returned when the run was last opened (None: none)."""

    exp_dir: str
    log_dir: str
    cfg: Any
    resume: bool
    record: Optional[Dict[str, Any]]


class LoggerBackend:
    """One destination of a run's scalars. Subclass it, register it with ``@LOGGER_REGISTRY.register('name')`` and
    name it in ``logger.backends`` (its module in ``import_names``); read its options from
    ``run.cfg.logger.options.get('name', {})``.

    ``check`` refuses bad input before anything is written; ``__init__`` opens the destination; ``log_scalar`` is
    called for every scalar; ``close`` flushes. Whatever they raise after ``check`` drops only this backend.
    """

    #: the pip extra that installs what this backend imports (named by the error when it is missing)
    extra: Optional[str] = None
    #: the module the extra provides (checked without importing it)
    requires: Optional[str] = None
    #: config keys naming folders this backend writes, which must lie outside the run folder (checked at start)
    folder_keys: Tuple[str, ...] = ()
    #: whether the run makes and calls this backend in a thread of its own (``BackendThread``): a tracker that stops
    #: answering then costs the run at most ``logger.timeout_s``, not the run. False for backends that write local
    #: files only (a call is a few µs; handing it to a thread would cost more than the write).
    threaded: bool = True

    @classmethod
    def folders(cls, cfg: Any) -> List[Tuple[str, str]]:
        """``(what, path)`` of each folder this backend writes outside ``log/`` (default: ``folder_keys``' values):
        none may lie in the run folder."""
        from ..config.ding_compat import get_path

        named = [(key, get_path(cfg, key)) for key in cls.folder_keys]
        return [(f"{key} = {value!r}", value) for key, value in named if isinstance(value, str) and value]

    @classmethod
    def check(cls, cfg: Any) -> None:
        """Raise a ``ConfigError`` naming the key and the fix when this backend cannot log this run; imports nothing
        heavy (the default checks that ``requires`` is installed)."""
        if cls.requires and importlib.util.find_spec(cls.requires) is None:
            name = getattr(cls, 'registered_name', cls.__name__)
            how = f"pip install 'acframe[{cls.extra}]'" if cls.extra else \
                f"install the package that provides module {cls.requires}"
            raise ConfigError(f"logger.backends names '{name}' but {cls.requires} is not installed; "
                              f"{how} (or drop '{name}' from logger.backends)")

    @classmethod
    def pin_config(cls, cfg: Any) -> None:
        """A new run's start, before its config is saved: make what this backend's keys name relative to the working
        folder absolute in ``cfg`` (a ``--resume`` from another folder then reaches the same store). Default: nothing."""

    def __init__(self, run: LoggerRun) -> None:
        self.run = run

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        raise NotImplementedError

    def log_text(self, tag: str, text: str, step: int, wall_time: float) -> None:
        """A text value (e.g. a drawn env parameter that is not a number); ignored unless a backend overrides it."""

    def log_video(self, tag: str, path: str, step: int) -> None:
        """An evaluation video (an MP4 file at ``path``, recorded by ``-m eval --video``) for the run's tracker: a
        backend that stores media overrides this; the others ignore it (and are not opened for it)."""

    def run_record(self) -> Optional[Dict[str, Any]]:
        """Plain data kept in ``RUN/loggers.json`` to continue the same external run on ``--resume`` (ids only,
        never a secret); None when there is nothing to keep."""
        return None

    def close(self) -> None:
        """Flush and release."""


def warn(text: str) -> None:
    """One warning line on stderr (also with the progress line off)."""
    print(f"acframe: warning: {text}", file=sys.stderr, flush=True)


def _describe(exc: BaseException) -> str:
    """``Type: first line`` of what a backend raised, and where in the user's code (a backend of one's own)."""
    from ..errors import is_user_file, user_frame

    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''
    said = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    return f"{said}; at {user_frame(exc.__traceback__)}" if any(is_user_file(f.filename) for f in frames) else said


#: calls a threaded backend may have waiting; with more, the run waits for room (at most ``logger.timeout_s``)
MAX_PENDING = 10_000


class DirectBackend:
    """A backend called on the run's own thread (``LoggerBackend.threaded = False``: local files)."""

    def __init__(self, backend: LoggerBackend) -> None:
        self.backend = backend

    def call(self, method: str, *args: Any) -> Optional[str]:
        """``backend.<method>(*args)``: None, or what went wrong in words (the backend is then closed)."""
        try:
            getattr(self.backend, method)(*args)
            return None
        except Exception as exc:  # noqa: BLE001 - a tracker's failure never stops training
            with contextlib.suppress(Exception):  # it failed already: closing it is best effort
                self.backend.close()
            return f"failed ({_describe(exc)})"

    def close(self, deadline: float) -> Optional[str]:
        """Close it: None, or what went wrong in words."""
        try:
            self.backend.close()
            return None
        except Exception as exc:  # noqa: BLE001
            return f"did not close cleanly ({_describe(exc)}); what it was last given may be missing"

    def abandon(self) -> None:
        """Dropped after a failure: nothing more to do (``call`` closed it)."""


class BackendThread:
    """A threaded backend (``LoggerBackend.threaded``): made, called in the order the run logs, and closed in a daemon
    thread of its own. The run waits only for its start, for its close, and for room when ``MAX_PENDING`` calls wait,
    each at most ``timeout_s``; a call still running after ``timeout_s`` has it dropped at the run's next call. Only
    the process that made it calls it (a forked child's copy ignores calls: its thread is not there)."""

    def __init__(self, name: str, make: Callable[[], LoggerBackend], timeout_s: float) -> None:
        self.name, self.timeout_s = name, float(timeout_s)
        self.backend: Optional[LoggerBackend] = None
        self.record: Any = None  # what run_record() returned, once started
        self.record_error: Optional[BaseException] = None
        self.error: Optional[BaseException] = None  # what it raised while starting or logging (it stops there)
        self.close_error: Optional[BaseException] = None
        self.busy: Optional[Tuple[str, float]] = None  # (method, time.monotonic() at its start) of the call running
        self.abandoned = False  # dropped while stuck: it closes and stops once the call it is in returns, if ever
        self.pid = os.getpid()
        self.started = threading.Event()  # made (or failed to be) and its run_record asked
        self.ended = threading.Event()  # closed, failed or abandoned: the thread is done
        self._calls: queue.Queue = queue.Queue(MAX_PENDING)  # (method, args); None: close
        self._close_asked = False
        self._thread = threading.Thread(target=self._serve, args=(make,), name=f'acframe-logger-{name}', daemon=True)
        self._thread.start()

    def _serve(self, make: Callable[[], LoggerBackend]) -> None:
        try:
            self.busy = ('__init__', time.monotonic())
            self.backend = make()
            self.busy = ('run_record', time.monotonic())
            try:
                self.record = self.backend.run_record()
            except Exception as exc:  # noqa: BLE001 - costs a resume its tracker run only (open_loggers says so)
                self.record_error = exc
            self.busy = None
            self.started.set()
            while not self.abandoned:
                call = self._calls.get()
                if call is None:
                    break
                self.busy = (call[0], time.monotonic())
                getattr(self.backend, call[0])(*call[1])
                self.busy = None
        except Exception as exc:  # noqa: BLE001 - a tracker's failure never stops training: the run drops it
            self.error = exc
        finally:
            self.busy = None
            self.started.set()
            if self.backend is not None:
                self.busy = ('close', time.monotonic())
                try:
                    self.backend.close()
                except Exception as exc:  # noqa: BLE001
                    self.close_error = exc
                self.busy = None
            self.ended.set()

    def wait_started(self, deadline: Optional[float] = None) -> Optional[str]:
        """Wait (until ``deadline``, a ``time.monotonic()``; default ``timeout_s`` from now) for the backend to be made:
        None, or why it did not open, in words."""
        deadline = time.monotonic() + self.timeout_s if deadline is None else deadline
        if not self.started.wait(max(0.0, deadline - time.monotonic())):
            self.abandon()
            return f"did not open within logger.timeout_s={self.timeout_s:g} s"
        return f"did not open ({_describe(self.error)})" if self.error is not None else None

    def call(self, method: str, *args: Any) -> Optional[str]:
        """Hand ``<method>(*args)`` to the thread: None, or why the backend must be dropped, in words."""
        if os.getpid() != self.pid:
            return None
        if self.ended.is_set():
            return f"failed ({_describe(self.error)})" if self.error is not None else 'stopped'
        busy = self.busy
        if busy is not None and time.monotonic() - busy[1] > self.timeout_s:
            return (f"has not returned from {busy[0]} for {time.monotonic() - busy[1]:.0f} s "
                    f"(logger.timeout_s={self.timeout_s:g})")
        try:
            self._calls.put((method, args), timeout=self.timeout_s)
        except queue.Full:
            return f"took no call for logger.timeout_s={self.timeout_s:g} s with {MAX_PENDING} waiting"
        return None

    def request_close(self) -> None:
        """Ask it to close once the calls waiting are made (never waits: a full queue is told by ``close``)."""
        if os.getpid() == self.pid and not self.ended.is_set() and not self._close_asked:
            try:
                self._calls.put_nowait(None)
                self._close_asked = True
            except queue.Full:
                pass

    def close(self, deadline: float) -> Optional[str]:
        """Let it make the calls waiting and close, until ``deadline`` (``time.monotonic()``): None, or what went
        wrong in words. (``RunLogger.close`` asks every backend first, then waits for each.)"""
        if os.getpid() != self.pid:
            return None
        if not self.ended.is_set() and not self._close_asked:
            with contextlib.suppress(queue.Full):
                self._calls.put(None, timeout=max(0.0, deadline - time.monotonic()))
                self._close_asked = True
        self.ended.wait(max(0.0, deadline - time.monotonic()))
        if not self.ended.is_set():
            self.abandoned = True
            busy = self.busy
            waiting = self._calls.qsize() - (1 if self._close_asked else 0)  # (the close request is not a call)
            what = f"still in {busy[0]}" if busy is not None else f"{waiting} calls still waiting"
            if busy is not None and busy[0] == 'close':
                return (f"did not finish within logger.timeout_s={self.timeout_s:g} s ({what}); what it had not "
                        f"flushed may be missing")
            lost = waiting + (1 if busy is not None else 0)  # (the call it is in, and those queued behind it)
            return (f"did not finish within logger.timeout_s={self.timeout_s:g} s ({what}); the last {lost} "
                    f"call{'s' if lost != 1 else ''} given to it (scalars, texts, videos) did not reach it")
        if self.error is not None:
            return f"failed ({_describe(self.error)}); what it was last given may be missing"
        if self.close_error is not None:
            return f"did not close cleanly ({_describe(self.close_error)}); what it was last given may be missing"
        return None

    def abandon(self) -> None:
        """Dropped: it stops (closing the backend) once the call it is in returns (an idle thread is woken for it)."""
        self.abandoned = True
        with contextlib.suppress(queue.Full):
            self._calls.put_nowait(None)


Handle = Union[DirectBackend, BackendThread]


class RunLogger:
    """Every scalar of a run, handed to each open backend with the same tag, step and wall time.

    It has tensorboardX's ``add_scalar``/``add_text`` signature, so workers log through it as they logged to a
    ``SummaryWriter``. A backend that raises, or a threaded one that stops answering (``BackendThread``), is closed
    (or left), dropped and named in one warning line. ``backends`` pairs each name with a ``LoggerBackend`` (called
    on the caller's thread) or a started ``BackendThread``.
    """

    def __init__(self, backends: Sequence[Tuple[str, Union[LoggerBackend, Handle]]], timeout_s: float = 120.0) -> None:
        self.backends: List[Tuple[str, Handle]] = [
            (name, b if isinstance(b, (DirectBackend, BackendThread)) else DirectBackend(b)) for name, b in backends]
        self.timeout_s = float(timeout_s)

    @property
    def names(self) -> List[str]:
        return [name for name, _ in self.backends]

    def add_scalar(self, tag: str, value: Any, step: int, walltime: Optional[float] = None) -> None:
        wall = time.time() if walltime is None else float(walltime)
        self._each('log_scalar', tag, float(value), int(step), wall)

    def add_text(self, tag: str, text: str, step: int, walltime: Optional[float] = None) -> None:
        wall = time.time() if walltime is None else float(walltime)
        self._each('log_text', tag, str(text), int(step), wall)

    def add_video(self, tag: str, path: str, step: int) -> None:
        self._each('log_video', tag, path, int(step))

    def _each(self, method: str, *args: Any) -> None:
        for name, handle in list(self.backends):
            problem = handle.call(method, *args)
            if problem is not None:
                self._drop(name, handle, problem)

    def _drop(self, name: str, handle: Handle, problem: str) -> None:
        self.backends = [(n, h) for n, h in self.backends if h is not handle]
        handle.abandon()
        others = ', '.join(self.names) or 'none'
        warn(f"logger backend '{name}' {problem}; it is dropped for the rest of the run, training goes on "
             f"(other backends: {others})")

    def close(self) -> List[str]:
        """Close every backend (the threaded ones given ``timeout_s`` in all to make their waiting calls and close);
        one that fails, or does not finish in time, is one warning line. Returns the names that closed cleanly."""
        backends, self.backends = self.backends, []
        deadline = time.monotonic() + self.timeout_s
        for _, handle in backends:  # every threaded backend closes at once; the wait below is shared
            if isinstance(handle, BackendThread):
                handle.request_close()
        clean = []
        for name, handle in backends:
            problem = handle.close(deadline)
            if problem is None:
                clean.append(name)
            else:
                warn(f"logger backend '{name}' {problem}")
        return clean


def start_backend(name: str, cls: type, run: LoggerRun, timeout_s: float) -> Tuple[Optional[Handle], Optional[str]]:
    """Make backend ``cls`` for ``run``: on this thread, or in a thread of its own when ``cls.threaded`` (waiting
    at most ``timeout_s`` for it). ``(handle, None)``, or ``(None, why it did not open, in words)``."""
    return start_backends([(name, cls, run)], timeout_s)[0]


def start_backends(backends: Sequence[Tuple[str, type, LoggerRun]], timeout_s: float
                   ) -> List[Tuple[Optional[Handle], Optional[str]]]:
    """``start_backend`` of each ``(name, cls, run)``: the threaded ones all start at once and are waited for
    against one deadline (``timeout_s`` in all), so several trackers that do not answer cost one ``timeout_s``."""
    made: List[Any] = []
    for name, cls, run in backends:
        if getattr(cls, 'threaded', True):
            made.append(BackendThread(name, functools.partial(cls, run), timeout_s))
            continue
        try:
            made.append(DirectBackend(cls(run)))
        except Exception as exc:  # noqa: BLE001 - a tracker that cannot start never stops training
            made.append(f"did not open ({_describe(exc)})")
    deadline = time.monotonic() + timeout_s
    results: List[Tuple[Optional[Handle], Optional[str]]] = []
    for handle in made:
        if isinstance(handle, str):
            results.append((None, handle))
            continue
        problem = handle.wait_started(deadline) if isinstance(handle, BackendThread) else None
        results.append((None, problem) if problem is not None else (handle, None))
    return results


def run_record_of(handle: Handle) -> Any:
    """The backend's ``run_record()`` (a threaded backend's, asked when it started); what it raised is raised."""
    if isinstance(handle, BackendThread):
        if handle.record_error is not None:
            raise handle.record_error
        return handle.record
    return handle.backend.run_record()


def backend_names(cfg: Any) -> List[str]:
    """``logger.backends``, checked: a list of registered names, each once."""
    names = cfg.logger.backends
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"config key 'logger.backends' = {names!r} must be a list of registered logger names, "
                          f"e.g. ['tensorboard', 'jsonl']")
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        raise ConfigError(f"config key 'logger.backends' names {', '.join(repeated)} more than once; name each backend once")
    return list(names)


def check_loggers(cfg: Any, exp_dir: Optional[str] = None) -> List[type]:
    """The backend classes ``logger.backends`` names, each checked (``LoggerBackend.check``; a user's ``check`` that
    raises is a one-line ``PolicyError`` naming it), with its ``folders`` outside the run folder ``exp_dir``; a
    ``ConfigError`` naming the key (an unknown name too) before anything is written."""
    from ..errors import call_user_code

    classes = []
    for name in backend_names(cfg):
        cls = LOGGER_REGISTRY.get_for(name, 'logger.backends')
        if not isinstance(cls, type) or not issubclass(cls, LoggerBackend):
            raise ConfigError(f"logger.backends: '{name}' is registered as {cls!r}, not a LoggerBackend subclass; "
                              f"subclass acframe.loggers.LoggerBackend (docs/logging.md)")
        if cls.log_scalar is LoggerBackend.log_scalar:
            raise ConfigError(f"logger.backends: '{name}' ({cls.__name__}) does not define log_scalar(tag, value, "
                              f"step, wall_time), which every backend does; add it (docs/logging.md)")
        _check_signatures(name, cls)
        call_user_code(f"logger backend '{name}' check", cls.check, cfg)
        if exp_dir is not None:
            _check_outside(exp_dir, cls.folders(cfg))
        classes.append(cls)
    return classes


#: how the run calls a backend's methods (a user's that take other arguments failed at the first call, dropped)
BACKEND_CALLS: Dict[str, Tuple[str, ...]] = {'__init__': ('run',), 'log_scalar': ('tag', 'value', 'step', 'wall_time'),
                 'log_text': ('tag', 'text', 'step', 'wall_time'), 'log_video': ('tag', 'path', 'step'),
                 'run_record': (), 'close': ()}


def _check_signatures(name: str, cls: type) -> None:
    """A ``ConfigError`` naming the method when a backend's method cannot take the arguments the run passes it."""
    for method, args in BACKEND_CALLS.items():
        function = getattr(cls, method, None)
        if function is None or getattr(LoggerBackend, method, None) is function:
            continue
        static = inspect.getattr_static(cls, method)
        if isinstance(static, (staticmethod, classmethod)):
            bound = args  # (called on the instance: no self, or the class already bound)
        elif inspect.isfunction(static):
            bound = (None,) + tuple(args)
        else:  # a callable object, a descriptor of one's own: not read here
            continue
        try:
            inspect.signature(function).bind(*bound)
        except TypeError:
            shown = f"{method}(self{''.join(', ' + a for a in args)})"
            raise ConfigError(f"logger.backends: '{name}' ({cls.__name__}.{method}{inspect.signature(function)}) cannot "
                              f"be called as {shown}, as the run calls it; give it that signature "
                              f"(docs/logging.md)") from None
        except ValueError:  # (no signature to read: a builtin's)
            continue


def check_option_names(cfg: Any) -> None:
    """A ``ConfigError`` for ``logger.options`` keyed by a near miss of a backend's name (a misspelling, which left the
    backend on its defaults without a word); the options of a backend this run does not use (its module perhaps not
    imported) may stay in the config."""
    options = cfg.logger.get('options') or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"config key 'logger.options' = {options!r} must be a dict of backend name -> its options")
    used = backend_names(cfg)
    for key in options:
        own = cfg.logger.get(key) if key != 'options' else None
        if isinstance(own, Mapping) and own:  # (acframe's backends with a section of their own read nothing here)
            first = next(iter(own))
            raise ConfigError(f"logger.options.{key}: backend '{key}' reads its options from logger.{key}, not "
                              f"logger.options; set them there, e.g. logger.{key}.{first}=... (docs/logging.md)")
        if key in used and not isinstance(options[key], Mapping):  # (a backend reads its own keys from a dict)
            raise ConfigError(f"config key 'logger.options.{key}' = {str(repr(options[key]))[:80]} must be a dict of "
                              f"backend '{key}'s options, e.g. logger.options.{key}.KEY=...")
        if key in used or key in LOGGER_REGISTRY:
            continue
        near = closest(str(key), used + LOGGER_REGISTRY.names())
        if near:  # (a backend whose module this run does not import may keep its options: only a near miss is refused)
            raise ConfigError(f"logger.options.{key} names no logger backend; did you mean '{near}'?")


def _check_outside(exp_dir: str, folders: Sequence[Tuple[str, str]]) -> None:
    """A ``ConfigError`` for a backend's folder that is the run folder or inside it (a run folder is data that holds
    no symbolic link, and a tracker's files there would be read back as the run's)."""
    run = os.path.realpath(exp_dir)
    for what, folder in folders:
        if os.path.commonpath([run, os.path.realpath(folder)]) == run:
            raise ConfigError(f"{what} is inside the run folder {exp_dir}, which holds the run's own files only (no "
                              f"symbolic link: the tracker writes some); name a folder outside it")


def read_records(exp_dir: str) -> Dict[str, Any]:
    """``RUN/loggers.json`` (empty when absent; unreadable: one warning, and the trackers start new runs)."""
    path = os.path.join(exp_dir, RECORD_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as f:
            records = json.load(f)
        if not isinstance(records, dict):
            raise ValueError('not a JSON object')
        return records
    except (OSError, ValueError) as exc:
        warn(f"{path} is not readable ({_describe(exc)}); external trackers start new runs")
        return {}


def open_loggers(cfg: Any, exp_dir: str, resume: bool) -> RunLogger:
    """Open every backend of ``logger.backends`` for the run folder ``exp_dir`` (created and locked) and keep their
    run records in ``RUN/loggers.json``. A backend that fails to open, or does not open within ``logger.timeout_s``,
    is one warning line and left out."""
    log_dir = os.path.join(exp_dir, 'log')
    os.makedirs(log_dir, exist_ok=True)  # there for every backend, whichever are chosen
    records = read_records(exp_dir) if resume else {}
    timeout_s = float(cfg.logger.timeout_s)
    opened: List[Tuple[str, Handle]] = []
    names = backend_names(cfg)
    runs = [LoggerRun(exp_dir, log_dir, cfg, resume, records.get(name) if isinstance(records.get(name), dict) else None)
            for name in names]
    started = start_backends(list(zip(names, check_loggers(cfg), runs)), timeout_s)
    for name, (handle, problem) in zip(names, started):
        if handle is None:
            warn(f"logger backend '{name}' {problem}; the run goes on without it")
        else:
            opened.append((name, handle))
    logger = RunLogger(opened, timeout_s)
    kept = dict(records)
    for name, handle in opened:
        try:
            record = run_record_of(handle)
            if record is not None and not isinstance(record, dict):
                raise TypeError(f"a {type(record).__name__}, not a dict")
            json.dumps(record, sort_keys=True)  # as atomic_write_json writes it
        except Exception as exc:  # noqa: BLE001 - a record that cannot be kept costs the resume its tracker run only
            warn(f"logger backend '{name}': run_record() gave no JSON record ({_describe(exc)}); a --resume starts a "
                 f"new tracker run")
            kept.pop(name, None)
            continue
        if record is not None:
            kept[name] = record
    if kept != records:
        atomic_write_json(os.path.join(exp_dir, RECORD_FILE), kept)
    return logger


def stores_media(cls: type) -> bool:
    """Whether a backend class overrides ``log_video`` (the others are not opened to upload videos)."""
    return getattr(cls, 'log_video', None) is not LoggerBackend.log_video


def upload_videos(cfg: Any, exp_dir: str, videos: List[str], step: int) -> List[str]:
    """Hand the evaluation videos ``videos`` (MP4 paths) of the finished run in ``exp_dir`` to each backend of its
    ``logger.backends`` that stores media (W&B, MLflow, a user's), continuing the tracker runs kept in
    ``RUN/loggers.json`` (as ``--resume`` does); each video's tag is ``eval/video/<file name without .mp4>`` at
    ``step``. Returns the names of the backends that took every video.

    Never an error: a backend that cannot be checked or opened, one that fails on a video, or a run folder in use by
    a training process (its tracker runs are open there) is one warning line, and the videos stay where they are."""
    from ..errors import RegistryError

    classes = []
    for name in backend_names(cfg):
        try:
            cls = LOGGER_REGISTRY.get(name)
        except RegistryError as exc:
            warn(f"the videos are not uploaded to '{name}': {exc}")
            continue
        if not stores_media(cls):
            continue
        try:
            cls.check(cfg)
        except ConfigError as exc:
            warn(f"the videos are not uploaded to '{name}': {exc}")
            continue
        classes.append((name, cls))
    if not classes or not videos:
        return []
    from ..entry.run_folder import RunLock

    try:
        lock = RunLock(exp_dir)  # the training process (if still running) owns the tracker runs
    except ConfigError as exc:
        warn(f"the videos are not uploaded ({exc})")
        return []
    try:
        records = read_records(exp_dir)
        timeout_s = float(cfg.logger.timeout_s)
        opened: List[Tuple[str, Handle]] = []
        runs = [(name, cls, LoggerRun(exp_dir, os.path.join(exp_dir, 'log'), cfg, True,
                                      records.get(name) if isinstance(records.get(name), dict) else None))
                for name, cls in classes]
        for (name, _, _), (handle, problem) in zip(runs, start_backends(runs, timeout_s)):
            if handle is None:  # an upload that cannot start leaves the videos on disk
                warn(f"logger backend '{name}' {problem}; the videos are not uploaded to it")
            else:
                opened.append((name, handle))
        logger = RunLogger(opened, timeout_s)
        for path in sorted(videos):
            logger.add_video(f"eval/video/{os.path.splitext(os.path.basename(path))[0]}", path, step)
        return logger.close()  # (the backends that took every video: a threaded one's failure shows at its close)
    finally:
        lock.release()


def can_write(path: str, folder: bool = True) -> bool:
    """``path`` (a folder, or a file when ``folder`` is False) can be written, or created: its nearest existing
    ancestor is a folder this process may write in. Permission bits alone do not say so for root (``/proc``, a
    pseudo file system, passes ``os.access``), so a folder is also tried: an empty folder is made in it and removed."""
    path = os.path.abspath(path)
    if os.path.exists(path):
        if folder:
            return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK) and _can_make_in(path)
        parent = os.path.dirname(path)
        return os.path.isfile(path) and os.access(path, os.W_OK) and os.access(parent, os.W_OK) and _can_make_in(parent)
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        if os.path.dirname(parent) == parent:
            return False
        parent = os.path.dirname(parent)
    return os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK) and _can_make_in(parent)


def _can_make_in(folder: str) -> bool:
    """An empty folder can be made in ``folder`` (it is removed at once: nothing is left behind)."""
    try:
        probe = tempfile.mkdtemp(prefix='.acframe-write-check-', dir=folder)
    except OSError:
        return False
    os.rmdir(probe)
    return True


def flat_config(cfg: Any, prefix: str = '') -> Dict[str, Any]:
    """The config as ``{'policy.learn.learning_rate': 0.001, ...}`` (lists as their JSON text): hyperparameters
    for trackers whose parameters are flat."""
    flat: Dict[str, Any] = {}
    for key, value in cfg.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flat_config(value, path + '.'))
        elif isinstance(value, (list, tuple, dict)):
            flat[path] = json.dumps(value, default=str)
        else:
            flat[path] = value
    return flat
