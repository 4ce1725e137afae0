"""A run's tensorboardX logs: the writer a run logs through, and reading the scalars of its event files (or of its
``scalars.jsonl``) back.

An event file is a sequence of TFRecords (u64 length, u32 crc of the length, the ``Event`` protobuf, u32 crc
of the payload); tensorboardX ships the ``Event`` protobuf class, so this reader needs nothing else.
"""
from __future__ import annotations

import bisect
import json
import os
import struct
import sys
import threading
import time
from collections import defaultdict
from typing import Any, Dict, List, NamedTuple, Optional

from .errors import ConfigError
from .signals import interrupts_deferred


#: the ``jsonl`` logger backend's file, under the run's ``log/``
JSONL_FILE = 'scalars.jsonl'


class RunWriter:
    """A run's tensorboardX ``SummaryWriter`` that a Ctrl-C or SIGTERM cannot wedge, and whose close is bounded.

    Every call is made with interrupts deferred (the writer hands events to its logger thread through a
    ``multiprocessing.Queue``; an interrupt raised inside that hand-off can leave the logger thread waiting forever),
    and ``close`` waits at most ``close_timeout_s`` for the logger thread, then says what it gave up on.
    """

    def __init__(self, log_dir: str, close_timeout_s: float = 30.0) -> None:
        from tensorboardX import SummaryWriter

        with interrupts_deferred():  # the suffix: a run resumed within the second of its last start gets a new file
            self._writer = SummaryWriter(log_dir, filename_suffix=f'.{time.time_ns()}')
        self.log_dir = log_dir
        self.close_timeout_s = close_timeout_s

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._writer, name)
        if not callable(attr):
            return attr

        def deferred(*args: Any, **kwargs: Any) -> Any:
            with interrupts_deferred():
                return attr(*args, **kwargs)
        return deferred

    def close(self) -> None:
        """Flush and close; a logger thread that does not finish within ``close_timeout_s`` is left behind (a daemon).
        Events that cannot be written (a full disk) are dropped with one warning line."""
        failed: List[BaseException] = []
        closer = threading.Thread(target=self._close, args=(failed,), name='acframe-tensorboard-close', daemon=True)
        with interrupts_deferred():
            closer.start()
            closer.join(self.close_timeout_s)
        if closer.is_alive():
            print(f"acframe: warning: the tensorboard writer of {self.log_dir} did not close within "
                  f"{self.close_timeout_s:g} s; its last events may be missing", file=sys.stderr)
        elif failed:
            print(f"acframe: warning: the last tensorboard events of {self.log_dir} were not written: "
                  f"{getattr(failed[0], 'strerror', None) or failed[0]}", file=sys.stderr)

    def _close(self, failed: List[BaseException]) -> None:
        """Close the writer; when its files cannot be written (``OSError``: a full disk), stop its logger threads and
        mark them closed, so that neither tensorboardX's atexit hook nor its threads try again with a traceback."""
        writers = list((self._writer.all_writers or {}).values())
        try:
            self._writer.close()
        except OSError as exc:
            failed.append(exc)
            for file_writer in writers:
                events = file_writer.event_writer
                if getattr(events, '_closed', True):
                    continue
                for step in (lambda: events._worker.stop(), lambda: events._ev_writer.close(),
                             lambda: events._event_queue.close()):
                    try:
                        step()
                    except Exception:  # noqa: BLE001 - the disk is full: give up on these events, quietly
                        pass
                events._closed = True


class Scalar(NamedTuple):
    """One logged scalar: its tag, step (env steps or train iterations, by tag), value and wall-clock time."""

    tag: str
    step: int
    value: float
    wall_time: float


def read_event_file(path: str) -> List[Scalar]:
    """The scalars of one event file in write order; a record cut short (a run still writing) ends the file."""
    from tensorboardX.proto.event_pb2 import Event

    with open(path, 'rb') as f:
        data = f.read()
    scalars: List[Scalar] = []
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack('<Q', data[pos:pos + 8])
        end = pos + 12 + length
        if end + 4 > len(data):
            break
        event = Event.FromString(data[pos + 12:end])
        pos = end + 4
        for value in event.summary.value:
            if value.HasField('simple_value'):
                scalars.append(Scalar(value.tag, int(event.step), float(value.simple_value), float(event.wall_time)))
    return scalars


def read_jsonl_scalars(path: str) -> List[Scalar]:
    """The scalars of a ``scalars.jsonl`` (the ``jsonl`` logger backend) in write order; a line that is not a whole
    record (a run still writing) ends the file."""
    scalars: List[Scalar] = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            try:
                record = json.loads(line)
                scalars.append(Scalar(str(record['tag']), int(record['step']), float(record['value']),
                                      float(record['wall_time'])))
            except (ValueError, KeyError, TypeError):
                break
    return scalars


def event_files(log_dir: str) -> List[str]:
    """The tensorboardX event files of ``log_dir`` in name order (a resumed run's sittings in time order; each
    sitting writes one)."""
    names = sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []
    return [os.path.join(log_dir, name) for name in names if name.startswith('events.out.tfevents.')]


def read_scalars(log_dir: str) -> List[Scalar]:
    """Every scalar of the event files in ``log_dir`` (``event_files``); a run logged without the tensorboard
    backend is read from its ``scalars.jsonl``. What a resume superseded is left out (``latest_timeline``)."""
    if not os.path.isdir(log_dir):
        raise ConfigError(f"{log_dir}: no such log folder; pass a run folder written by acframe (it holds log/)")
    names = sorted(os.listdir(log_dir))
    events = event_files(log_dir)
    if not events:  # scalars.jsonl, then the fresh files of a run whose scalars.jsonl was taken mid-run
        jsonl = ([JSONL_FILE] if JSONL_FILE in names else []) + \
            [name for name in names if name.startswith('scalars-') and name.endswith('.jsonl')]
        return latest_timeline([scalar for name in jsonl for scalar in read_jsonl_scalars(os.path.join(log_dir, name))])
    scalars: List[Scalar] = []
    sittings: List[int] = []
    for path in events:
        sittings.append(len(scalars))
        scalars += read_event_file(path)
    return latest_timeline(scalars, sittings)


def latest_timeline(scalars: List[Scalar], sittings: Optional[List[int]] = None) -> List[Scalar]:
    """``scalars`` (in write order) without the values a resume superseded: a run killed past its last checkpoint
    (SIGKILL, a lost machine) logged steps its resume trains again, from the checkpoint's step (plots drew the lost
    timeline and the resumed one as one line that ran back). ``sittings``: where each sitting's values start in
    ``scalars`` (an event file each); a tag's first value in a sitting drops the earlier sittings' values of that
    tag at its step and beyond. Without them (``scalars.jsonl``, appended by every sitting), a value at a step below
    one logged before it starts that tag's timeline again (within one sitting a tag's steps never go back). A tag
    the resume logs first beyond a lost value (one evaluated rarely) keeps that value."""
    starts = set(sittings or ())
    kept: Dict[str, List[Scalar]] = defaultdict(list)
    seen_in_sitting: set = set()
    for index, scalar in enumerate(scalars):
        if index in starts:
            seen_in_sitting = set()
        series = kept[scalar.tag]
        first_here = sittings is not None and scalar.tag not in seen_in_sitting
        seen_in_sitting.add(scalar.tag)
        if series and (scalar.step < series[-1].step or first_here and scalar.step <= series[-1].step):
            cut = bisect.bisect_left([s.step for s in series], scalar.step)
            del series[cut:]
        series.append(scalar)
    survivors = {id(s) for series in kept.values() for s in series}
    return [s for s in scalars if id(s) in survivors]


def scalars_by_tag(scalars: List[Scalar]) -> Dict[str, List[Scalar]]:
    """The scalars grouped by tag, each list in write order."""
    grouped: Dict[str, List[Scalar]] = defaultdict(list)
    for scalar in scalars:
        grouped[scalar.tag].append(scalar)
    return dict(grouped)
