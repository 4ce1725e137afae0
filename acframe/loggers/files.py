"""The built-in backends that write into the run folder: TensorBoard event files and JSON lines.

A log file moved, deleted or replaced while the run writes it (logrotate, a user tidying up) is noticed within
``FileWatch.every_s``: one warning line, and the backend goes on in a fresh file of its own — never on in the moved
file (it is someone else's now) nor into a file that took its name.
"""
from __future__ import annotations

import json
import os
import time
from typing import IO, List, Optional, Tuple

from ..logs import JSONL_FILE, RunWriter
from .base import LoggerBackend, LoggerRun, warn


def _identity(path: str) -> Optional[Tuple[int, int]]:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


class FileWatch:
    """Whether the file at ``path`` is still the one a backend opened there (checked at most every ``every_s``)."""

    every_s = 1.0

    def __init__(self, path: str) -> None:
        self.path = path
        self.folder = os.path.dirname(path)
        self._identity = _identity(path)
        self._folder_identity = _identity(self.folder)
        self._checked = time.monotonic()

    def lost(self) -> Optional[str]:
        """None while the file is ours; else what happened to it, in words. Raises ``OSError`` when its folder went
        away (the run folder moved or deleted): a fresh file there would make a stub of the old path, never done."""
        now = time.monotonic()
        if self._identity is None or now - self._checked < self.every_s:
            return None
        self._checked = now
        identity = _identity(self.path)
        if identity == self._identity:
            return None
        if _identity(self.folder) != self._folder_identity:
            raise OSError(f"the log folder {self.folder} was moved, deleted or replaced while the run wrote it")
        return 'was moved or deleted' if identity is None else 'was replaced by another file'


def _moved_warning(path: str, what: str, fresh: str) -> None:
    warn(f"the log file {path} {what} while the run wrote it; the run goes on, logging into a fresh file {fresh} "
         f"(nothing more is written to the old one)")


class TensorBoardLogger(LoggerBackend):
    """``RUN/log/events.out.tfevents.*`` through ``RunWriter`` (what ``-m plot`` and TensorBoard read)."""

    threaded = False  # local files (tensorboardX writes them from a thread of its own)

    def __init__(self, run: LoggerRun) -> None:
        super().__init__(run)
        self.writer = RunWriter(run.log_dir)
        self.watch = self._watch()

    def _watch(self) -> Optional[FileWatch]:
        try:  # tensorboardX's event file (private attributes: nothing is watched where they differ)
            return FileWatch(self.writer.file_writer.event_writer._ev_writer._file_name)
        except AttributeError:
            return None

    def _check_file(self) -> None:
        what = self.watch.lost() if self.watch is not None else None
        if what is None:
            return
        old = self.watch.path
        self.writer.close()  # events handed over before the move was noticed end in the old file
        self.writer = RunWriter(self.run.log_dir)
        self.watch = self._watch()
        _moved_warning(old, what, self.watch.path if self.watch is not None else self.run.log_dir)

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        self._check_file()
        self.writer.add_scalar(tag, value, step, walltime=wall_time)

    def log_text(self, tag: str, text: str, step: int, wall_time: float) -> None:
        self._check_file()
        self.writer.add_text(tag, text, step, walltime=wall_time)

    def close(self) -> None:
        self.writer.close()


class JsonlLogger(LoggerBackend):
    """``RUN/log/scalars.jsonl``: one JSON object per scalar, ``{"tag", "step", "value", "wall_time"}``, appended
    (a resumed run continues the file; a line a killed run left half-written is cut off first). Written through a
    buffer flushed every ``logger.jsonl.flush_every_s`` seconds and at the end."""

    threaded = False  # a local file: a line is a few µs

    def __init__(self, run: LoggerRun) -> None:
        super().__init__(run)
        os.makedirs(run.log_dir, exist_ok=True)
        self.path = os.path.join(run.log_dir, JSONL_FILE)
        self.flush_every_s = float(run.cfg.logger.jsonl.flush_every_s)
        _cut_torn_line(self.path)
        self._file: Optional[IO[str]] = open(self.path, 'a', encoding='utf-8')
        self.watch = FileWatch(self.path)
        self._pending: List[str] = []  # lines not written yet: a moved file never gets lines logged after its move
        self._flushed = time.monotonic()

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        self._pending.append(json.dumps({'tag': tag, 'step': step, 'value': value, 'wall_time': round(wall_time, 3)}) + '\n')
        now = time.monotonic()
        if now - self._flushed >= self.flush_every_s:
            self._flush()
            self._flushed = now

    def _flush(self) -> None:
        what = self.watch.lost()
        if what is not None:
            self._reopen(what)
        self._file.write(''.join(self._pending))
        self._pending = []
        self._file.flush()

    def _reopen(self, what: str) -> None:
        """A fresh file: ``scalars.jsonl`` again where that name is free, else ``scalars-<time>.jsonl`` (read after it)."""
        old = self.path
        self._file.close()
        for name in (JSONL_FILE, f"{JSONL_FILE[:-len('.jsonl')]}-{time.time_ns()}.jsonl"):
            try:
                self._file = open(os.path.join(self.run.log_dir, name), 'x', encoding='utf-8')
                break
            except FileExistsError:
                continue
        self.path = self._file.name
        self.watch = FileWatch(self.path)
        _moved_warning(old, what, self.path)

    def close(self) -> None:
        if self._file is not None:
            try:
                self._flush()
            finally:
                file, self._file = self._file, None
                file.close()


def _cut_torn_line(path: str) -> None:
    """Truncate ``path`` after its last newline (a run killed mid-write leaves a partial last line)."""
    if not os.path.isfile(path):
        return
    with open(path, 'rb+') as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        back = min(size, 1 << 16)
        f.seek(size - back)
        tail = f.read(back)
        if tail.endswith(b'\n'):
            return
        cut = tail.rfind(b'\n')
        f.truncate(size - back + cut + 1 if cut >= 0 else (0 if back == size else size))

