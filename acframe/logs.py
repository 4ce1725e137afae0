"""Reading a run's tensorboardX logs back: the scalars of its event files, without tensorboard.

An event file is a sequence of TFRecords (u64 length, u32 crc of the length, the ``Event`` protobuf, u32 crc
of the payload); tensorboardX ships the ``Event`` protobuf class, so this reader needs nothing else.
"""
from __future__ import annotations

import os
import struct
from collections import defaultdict
from typing import Dict, List, NamedTuple

from .errors import ConfigError


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


def read_scalars(log_dir: str) -> List[Scalar]:
    """Every scalar of the event files in ``log_dir`` (files in name order, i.e. a resumed run's in time order)."""
    if not os.path.isdir(log_dir):
        raise ConfigError(f"{log_dir}: no such log folder; pass a run folder written by acframe (it holds log/)")
    scalars: List[Scalar] = []
    for name in sorted(os.listdir(log_dir)):
        if name.startswith('events.out.tfevents.'):
            scalars += read_event_file(os.path.join(log_dir, name))
    return scalars


def scalars_by_tag(scalars: List[Scalar]) -> Dict[str, List[Scalar]]:
    """The scalars grouped by tag, each list in write order."""
    grouped: Dict[str, List[Scalar]] = defaultdict(list)
    for scalar in scalars:
        grouped[scalar.tag].append(scalar)
    return dict(grouped)
