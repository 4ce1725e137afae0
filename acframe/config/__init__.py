"""Config files, compile_config and their errors."""
from ..errors import ConfigError
from .compile import compile_config, default_config, load_config_file, save_config, to_plain

__all__ = ['ConfigError', 'compile_config', 'default_config', 'load_config_file', 'save_config', 'to_plain']
