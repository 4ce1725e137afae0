"""The logger seam: a run writes every scalar once, to ``RunLogger``, which hands it to each chosen backend.

A backend is a ``LoggerBackend`` subclass registered by name (``@LOGGER_REGISTRY.register('mine')``) and named in
``logger.backends``. The run base checks every named backend before the run folder exists (``check_loggers``: an
unknown name, a backend whose package is not installed, a destination that cannot be written is a ``ConfigError``
and nothing is written), opens them once the folder is locked (``open_loggers``), and keeps what a backend needs to
continue the same external run on ``--resume`` (its ``run_record``: ids, never secrets) in ``RUN/loggers.json``.

A backend that raises while the run logs is dropped with one warning line; the others and the run go on.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import ConfigError
from ..registry import LOGGER_REGISTRY
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
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RunLogger:
    """Every scalar of a run, handed to each open backend with the same tag, step and wall time.

    It has tensorboardX's ``add_scalar``/``add_text`` signature, so workers log through it as they logged to a
    ``SummaryWriter``. A backend that raises is closed, dropped and named in one warning line.
    """

    def __init__(self, backends: List[Tuple[str, LoggerBackend]]) -> None:
        self.backends: List[Tuple[str, LoggerBackend]] = list(backends)

    @property
    def names(self) -> List[str]:
        return [name for name, _ in self.backends]

    def add_scalar(self, tag: str, value: Any, step: int, walltime: Optional[float] = None) -> None:
        wall = time.time() if walltime is None else float(walltime)
        value, step = float(value), int(step)
        for name, backend in list(self.backends):
            try:
                backend.log_scalar(tag, value, step, wall)
            except Exception as exc:  # noqa: BLE001 - a tracker's failure never stops training
                self._drop(name, backend, exc)

    def add_text(self, tag: str, text: str, step: int, walltime: Optional[float] = None) -> None:
        wall = time.time() if walltime is None else float(walltime)
        for name, backend in list(self.backends):
            try:
                backend.log_text(tag, str(text), int(step), wall)
            except Exception as exc:  # noqa: BLE001
                self._drop(name, backend, exc)

    def add_video(self, tag: str, path: str, step: int) -> None:
        for name, backend in list(self.backends):
            try:
                backend.log_video(tag, path, int(step))
            except Exception as exc:  # noqa: BLE001
                self._drop(name, backend, exc)

    def _drop(self, name: str, backend: LoggerBackend, exc: BaseException) -> None:
        self.backends = [(n, b) for n, b in self.backends if b is not backend]
        others = ', '.join(self.names) or 'none'
        warn(f"logger backend '{name}' failed ({_describe(exc)}); it is dropped for the rest of the run, "
             f"training goes on (other backends: {others})")
        try:
            backend.close()
        except Exception:  # noqa: BLE001 - it failed already: closing it is best effort
            pass

    def close(self) -> None:
        """Close every backend; one that fails to close is one warning line."""
        backends, self.backends = self.backends, []
        for name, backend in backends:
            try:
                backend.close()
            except Exception as exc:  # noqa: BLE001
                warn(f"logger backend '{name}' did not close cleanly ({_describe(exc)}); its last values may be missing")


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
        call_user_code(f"logger backend '{name}' check", cls.check, cfg)
        if exp_dir is not None:
            _check_outside(exp_dir, cls.folders(cfg))
        classes.append(cls)
    return classes


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
    run records in ``RUN/loggers.json``. A backend that fails to open is one warning line and left out."""
    log_dir = os.path.join(exp_dir, 'log')
    os.makedirs(log_dir, exist_ok=True)  # there for every backend, whichever are chosen
    records = read_records(exp_dir) if resume else {}
    opened: List[Tuple[str, LoggerBackend]] = []
    for name, cls in zip(backend_names(cfg), check_loggers(cfg)):
        record = records.get(name)
        try:
            opened.append((name, cls(LoggerRun(exp_dir, log_dir, cfg, resume, record if isinstance(record, dict) else None))))
        except Exception as exc:  # noqa: BLE001 - a tracker that cannot start never stops training
            warn(f"logger backend '{name}' did not open ({_describe(exc)}); the run goes on without it")
    logger = RunLogger(opened)
    kept = dict(records)
    for name, backend in opened:
        try:
            record = backend.run_record()
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
        opened: List[Tuple[str, LoggerBackend]] = []
        for name, cls in classes:
            record = records.get(name)
            try:
                opened.append((name, cls(LoggerRun(exp_dir, os.path.join(exp_dir, 'log'), cfg, True,
                                                   record if isinstance(record, dict) else None))))
            except Exception as exc:  # noqa: BLE001 - an upload that cannot start leaves the videos on disk
                warn(f"logger backend '{name}' did not open ({_describe(exc)}); the videos are not uploaded to it")
        logger = RunLogger(opened)
        for path in sorted(videos):
            logger.add_video(f"eval/video/{os.path.splitext(os.path.basename(path))[0]}", path, step)
        uploaded = logger.names
        logger.close()
        return uploaded
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
