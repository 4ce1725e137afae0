"""The workers of a pipeline: collector, learner (with hooks) and evaluator."""
from .collector import CollectorHook, SampleCollector, steps_per_env
from .evaluator import EvalHistory, Evaluator, EvaluatorHook, eval_score
from .learner import (CheckpointHook, Learner, LearnerHook, LinearLRDecayHook, LogHook, hooks_from_config,
                      load_checkpoint)

__all__ = ['CollectorHook', 'EvaluatorHook', 'SampleCollector', 'steps_per_env', 'Evaluator', 'EvalHistory', 'eval_score', 'Learner', 'LearnerHook', 'LogHook', 'CheckpointHook',
           'LinearLRDecayHook', 'hooks_from_config', 'load_checkpoint']
