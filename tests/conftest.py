"""Shared test fixtures."""
from typing import Callable, List, Tuple

import pytest


def read_scalars(log_dir: str) -> List[Tuple[str, int, float]]:
    """``(tag, step, value)`` of every scalar in the tensorboardX event files of ``log_dir``, in write order."""
    from acframe.logs import read_scalars as read

    return [(s.tag, s.step, s.value) for s in read(log_dir)]


@pytest.fixture
def tb_scalars() -> Callable[[str], List[Tuple[str, int, float]]]:
    """A reader of tensorboard scalars (tensorboard itself is not a dependency)."""
    return read_scalars
