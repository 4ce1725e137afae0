"""The exceptions acframe raises for bad input.

Every one of them names the field (or file, or name) at fault and says how to fix it. The CLI prints
an ``AcframeError`` as one line and exits with status 2.
"""


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


class EnvTimeoutError(EnvError):
    """An env's ``step`` or ``reset`` did not return within ``env.step_timeout_s`` (names the env index and seed)."""
