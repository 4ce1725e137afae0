"""acframe: a plugin-based actor-critic reinforcement-learning framework on PyTorch.

Importing ``acframe`` is cheap: the registries and config tools load without torch; the pipelines,
policies and workers are imported on first use (``acframe.serial_pipeline`` etc.).
"""
from .errors import (AcframeError, CheckpointError, ConfigError, EnvError, NonFiniteError, RegistryError,
                     StopTraining, UnsupportedSpaceError)
from .registry import (BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, HOOK_REGISTRY, LOGGER_REGISTRY, MODEL_REGISTRY,
                       POLICY_REGISTRY, Registry)

__version__ = '0.1.0'

_LAZY = {
    'compile_config': 'acframe.config',
    'save_config': 'acframe.config',
    'serial_pipeline': 'acframe.entry',
    'serial_pipeline_onpolicy': 'acframe.entry.serial_onpolicy',
    'parallel_pipeline': 'acframe.entry.parallel',
    'SerialRun': 'acframe.entry',
    'Policy': 'acframe.policy',
    'create_policy': 'acframe.policy',
    'EnvManager': 'acframe.envs',
    'make_env_manager': 'acframe.envs',
    'SampleCollector': 'acframe.worker',
    'Learner': 'acframe.worker',
    'Evaluator': 'acframe.worker',
    'ReplayBuffer': 'acframe.data',
    'build_buffer': 'acframe.entry.run_base',
    'config_hooks': 'acframe.worker',
    'load_policy': 'acframe.inference',
    'evaluate_run': 'acframe.entry.evaluate',
    'plot_runs': 'acframe.plot',
    'export_policy': 'acframe.export',
    'LoggerBackend': 'acframe.loggers',
    'LearnerHook': 'acframe.worker',
    'CollectorHook': 'acframe.worker',
    'EvaluatorHook': 'acframe.worker',
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'acframe' has no attribute '{name}'")


__all__ = ['AcframeError', 'CheckpointError', 'ConfigError', 'EnvError', 'NonFiniteError', 'RegistryError', 'StopTraining', 'UnsupportedSpaceError',
           'BUFFER_REGISTRY', 'ENV_MANAGER_REGISTRY', 'ENV_REGISTRY', 'HOOK_REGISTRY', 'LOGGER_REGISTRY', 'MODEL_REGISTRY', 'POLICY_REGISTRY', 'Registry',
           *_LAZY]
