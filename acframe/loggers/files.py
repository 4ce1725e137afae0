"""The built-in backends that write into the run folder: TensorBoard event files and JSON lines."""
from __future__ import annotations

import json
import os
import time
from typing import IO, Optional

from ..logs import JSONL_FILE, RunWriter
from .base import LoggerBackend, LoggerRun


class TensorBoardLogger(LoggerBackend):
    """``RUN/log/events.out.tfevents.*`` through ``RunWriter`` (what ``-m plot`` and TensorBoard read)."""

    def __init__(self, run: LoggerRun) -> None:
        super().__init__(run)
        self.writer = RunWriter(run.log_dir)

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        self.writer.add_scalar(tag, value, step, walltime=wall_time)

    def log_text(self, tag: str, text: str, step: int, wall_time: float) -> None:
        self.writer.add_text(tag, text, step, walltime=wall_time)

    def close(self) -> None:
        self.writer.close()


class JsonlLogger(LoggerBackend):
    """``RUN/log/scalars.jsonl``: one JSON object per scalar, ``{"tag", "step", "value", "wall_time"}``, appended
    (a resumed run continues the file; a line a killed run left half-written is cut off first). Written through a
    buffer flushed every ``logger.jsonl.flush_every_s`` seconds and at the end."""

    def __init__(self, run: LoggerRun) -> None:
        super().__init__(run)
        os.makedirs(run.log_dir, exist_ok=True)
        self.path = os.path.join(run.log_dir, JSONL_FILE)
        self.flush_every_s = float(run.cfg.logger.jsonl.flush_every_s)
        _cut_torn_line(self.path)
        self._file: Optional[IO[str]] = open(self.path, 'a', encoding='utf-8')
        self._flushed = time.monotonic()

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        self._file.write(json.dumps({'tag': tag, 'step': step, 'value': value, 'wall_time': round(wall_time, 3)}) + '\n')
        now = time.monotonic()
        if now - self._flushed >= self.flush_every_s:
            self._file.flush()
            self._flushed = now

    def close(self) -> None:
        if self._file is not None:
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

