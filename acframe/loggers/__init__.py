"""Logger backends: where a run's scalars go (``logger.backends``; see docs/logging.md)."""
from .base import (RECORD_FILE, LoggerBackend, LoggerRun, RunLogger, check_loggers, check_option_names, flat_config,
                   open_loggers, read_records, upload_videos)

__all__ = ['RECORD_FILE', 'LoggerBackend', 'LoggerRun', 'RunLogger', 'check_loggers', 'check_option_names', 'flat_config',
           'open_loggers', 'read_records', 'upload_videos']
