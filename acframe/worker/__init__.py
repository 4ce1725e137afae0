"""The workers of a pipeline: collector, learner (with hooks) and evaluator."""
from .collector import CollectorHook, SampleCollector, steps_per_env
from .hook import Hook, check_hooks_run_config
from .evaluator import EvalHistory, Evaluator, EvaluatorHook, eval_score
from .learner import (CheckpointHook, Learner, LearnerHook, LinearLRDecayHook, LogHook, config_hooks, hooks_from_config,
                      load_checkpoint)

__all__ = ['Hook', 'check_hooks_run_config', 'CollectorHook', 'EvaluatorHook', 'SampleCollector', 'steps_per_env', 'Evaluator', 'EvalHistory', 'eval_score', 'Learner', 'LearnerHook', 'LogHook', 'CheckpointHook',
           'LinearLRDecayHook', 'config_hooks', 'hooks_from_config', 'load_checkpoint']
