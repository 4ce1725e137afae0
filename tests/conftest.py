"""Shared test fixtures."""
import os
import struct
from typing import Callable, List, Tuple

import pytest


def read_scalars(log_dir: str) -> List[Tuple[str, int, float]]:
    """``(tag, step, value)`` of every scalar in the tensorboardX event files of ``log_dir``, in write order."""
    from tensorboardX.proto.event_pb2 import Event

    scalars = []
    for name in sorted(os.listdir(log_dir)):
        with open(os.path.join(log_dir, name), 'rb') as f:
            data = f.read()
        pos = 0
        while pos < len(data):  # TFRecord framing: u64 length, u32 crc, payload, u32 crc
            (length,) = struct.unpack('<Q', data[pos:pos + 8])
            event = Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                scalars.append((value.tag, event.step, value.simple_value))
    return scalars


@pytest.fixture
def tb_scalars() -> Callable[[str], List[Tuple[str, int, float]]]:
    """A reader of tensorboard scalars (tensorboard itself is not a dependency)."""
    return read_scalars
