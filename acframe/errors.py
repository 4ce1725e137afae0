"""The exceptions acframe raises for bad input.

Every one of them names the field (or file, or name) at fault and says how to fix it. The CLI prints
an ``AcframeError`` as one line and exits with status 2.
"""


import os
import traceback
from types import TracebackType
from typing import Any, Callable, Optional, Sequence, Tuple

_LIBRARY_DIRS = (os.path.dirname(os.path.abspath(os.__file__)) + os.sep,)  # the standard library


def is_user_file(path: str) -> bool:
    """Whether ``path`` is user code: not acframe's, not the standard library's, not an installed package's. A
    relative path that names no file is a compiled extension's source (treevalue's ``treevalue/tree/func/cfunc.pyx``):
    a library's, not a file of the working folder."""
    import acframe

    own = os.path.dirname(os.path.abspath(acframe.__file__)) + os.sep
    full = os.path.abspath(path)
    compiled = not os.path.isabs(path) and not os.path.isfile(path)
    return not (full.startswith(own) or full.startswith(_LIBRARY_DIRS) or 'site-packages' in full or path.startswith('<')
                or compiled)


def innermost_user_frame(frames: Sequence[Tuple[str, int, str]]) -> str:
    """``file:line in function`` of the innermost of ``(file, line, function)`` frames that is user code (the place
    to look when an env, a config file or an ``import_names`` module raised); the innermost frame when none is."""
    for path, line, name in reversed(frames):
        if is_user_file(path):
            return f"{path}:{line} in {name}"
    return f"{frames[-1][0]}:{frames[-1][1]} in {frames[-1][2]}" if frames else 'unknown location'


def user_frame(tb: Optional[TracebackType]) -> str:
    """``innermost_user_frame`` of a traceback object."""
    frames = traceback.extract_tb(tb) if tb is not None else []
    return innermost_user_frame([(f.filename, f.lineno, f.name) for f in frames])


def describe_raised(exc: BaseException, during: str = '') -> str:
    """``Type [in during]: first line of the message (at file:line in function; --debug shows the traceback)`` —
    how one line reports an exception raised by user code."""
    text = str(exc).strip()
    message = text.splitlines()[0] if text else ''
    return (f"{type(exc).__name__}{' in ' + during if during else ''}: {message} "
            f"(at {user_frame(exc.__traceback__)}; --debug shows the traceback)")


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


class EnvNonFiniteError(NonFiniteError, EnvError):
    """An env gave NaN or inf (an observation or a reward; names the env, its seed and the step): an env's fault
    (``EnvError``), so the run writes its final checkpoint before it ends, as for any other env failure."""


class EnvContractError(EnvError):
    """An env broke what acframe's envs promise (an observation to act on whose action mask leaves no legal action,
    an observation off its space): the same env breaks it again, so the parallel pipeline stops the run rather than
    restarting the worker, as the serial one does."""


class VideoError(AcframeError, OSError):
    """``-m eval --video``'s encoder could not write a video (a full disk, ffmpeg stopped): names the file and why."""


class PolicyError(AcframeError, RuntimeError):
    """A user's policy plugin (or model) raised while acframe ran it."""


class StopTraining(Exception):
    """Raised by a hook (a learner hook's ``after_iter`` / ``after_eval`` / ``after_round``, a collector's
    ``after_collect``, an evaluator's ``after_evaluate``) to end the run as a spent budget does: the final evaluation,
    checkpoint and ``summary.json`` (``stopped_by``: the hook and the message), exit 0; ``--resume`` with budget left
    continues it. ``raise StopTraining('return plateaued for 10 evaluations')``."""


def user_code_error(exc: BaseException, what: str) -> Optional['PolicyError']:
    """A one-line ``PolicyError`` for ``exc`` when user code raised it (a frame of its traceback is user code: a
    plugin's ``_forward_learn``, say), naming that file and line; None when only acframe and the libraries it uses
    are in the traceback (an acframe bug: its traceback is the report)."""
    if isinstance(exc, StopTraining):  # (a hook's is taken by ``Learner.call_hook`` before it gets here)
        return PolicyError(f"{what} raised acframe.StopTraining{f' ({exc})' if str(exc) else ''}; a run is ended early "
                           f"by a hook raising it (a learner, collector or evaluator hook: docs/logging.md)")
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if isinstance(exc, AcframeError) or not any(is_user_file(f.filename) for f in frames):
        return None
    return PolicyError(f"{what} raised {describe_raised(exc)}")


def call_user_code(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; what it raises from user code (a plugin's hook, say) is one line naming ``what`` and
    the user's file and line (``user_code_error``), anything else propagates as it is."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        error = user_code_error(exc, what)
        if error is None:
            raise
        raise error from exc


class EnvTimeoutError(EnvError):
    """An env's ``step`` or ``reset`` did not return within ``env.step_timeout_s`` (names the env index and seed)."""


class ConfigWarning(UserWarning):
    """A config that runs but probably not as meant (e.g. a stop value inherited from another env); the CLI
    prints it as one line ``acframe: warning: ...``."""
