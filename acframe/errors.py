"""The exceptions acframe raises for bad input.

Every one of them names the field (or file, or name) at fault and says how to fix it. The CLI prints
an ``AcframeError`` as one line and exits with status 2.
"""


import os
import traceback
from types import TracebackType
from typing import Optional

_LIBRARY_DIRS = (os.path.dirname(os.path.abspath(os.__file__)) + os.sep,)  # the standard library


def user_frame(tb: Optional[TracebackType]) -> str:
    """``file:line in function`` of the innermost frame of ``tb`` that is user code: not acframe's, not the
    standard library's, not an installed package's (the place to look when an env or a config file raised)."""
    import acframe

    own = os.path.dirname(os.path.abspath(acframe.__file__)) + os.sep
    frames = traceback.extract_tb(tb) if tb is not None else []
    for frame in reversed(frames):
        path = os.path.abspath(frame.filename)
        if path.startswith(own) or path.startswith(_LIBRARY_DIRS) or 'site-packages' in path or frame.filename.startswith('<'):
            continue
        return f"{frame.filename}:{frame.lineno} in {frame.name}"
    if frames:
        return f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}"
    return 'unknown location'


class AcframeError(Exception):
    """Base class of every user-facing acframe error."""


class ConfigError(AcframeError, ValueError):
    """A config file, key or value is wrong."""


class RegistryError(AcframeError, KeyError):
    """A name is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it verbatim
        return str(self.args[0]) if self.args else ""


class UnsupportedSpaceError(AcframeError, TypeError):
    """An env's observation or action space is not supported by the policy or model."""


class CheckpointError(AcframeError, OSError):
    """A checkpoint is missing, corrupt or does not fit the model."""


class EnvError(AcframeError, RuntimeError):
    """An exception raised inside an environment, with the env index, its seed and the original traceback."""


class NonFiniteError(AcframeError, ArithmeticError):
    """NaN or inf where numbers must be finite: env data, a loss, a gradient, the weights, a config value."""


class EnvTimeoutError(EnvError):
    """An env's ``step`` or ``reset`` did not return within ``env.step_timeout_s`` (names the env index and seed)."""


class ConfigWarning(UserWarning):
    """A config that runs but probably not as meant (e.g. a stop value inherited from another env); the CLI
    prints it as one line ``acframe: warning: ...``."""
