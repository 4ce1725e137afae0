"""Evaluate a saved checkpoint with the eval mode (``acframe -m eval -c CONFIG --load CKPT``)."""
from __future__ import annotations

from typing import Any, Dict

from ..envs import make_env_manager
from ..policy import create_policy
from ..utils import set_global_seed, set_torch_threads
from ..worker import Evaluator, load_checkpoint
from ..errors import CheckpointError

EVAL_SEED_OFFSET = 100_000


def evaluate_checkpoint(cfg: Any, path: str, n_episode: int = None) -> Dict[str, Any]:
    """Mean/std return over ``n_episode`` (default ``env.n_evaluator_episode``) episodes of the checkpoint's model."""
    state = load_checkpoint(path)
    set_global_seed(cfg.seed)
    set_torch_threads(cfg.policy.learn.torch_threads)
    env = make_env_manager(cfg, 'evaluator', cfg.env.evaluator_env_num, cfg.seed + EVAL_SEED_OFFSET)
    try:
        policy = create_policy(cfg, env.observation_space, env.action_space, enable_field=('eval',))
        if not isinstance(state['policy'].get('model'), dict):
            raise CheckpointError(f"checkpoint '{path}' has no model weights (its 'policy.model' entry is not a dict)")
        try:
            policy.eval_mode.load_weights(state['policy']['model'])
        except CheckpointError as exc:
            raise CheckpointError(f"checkpoint '{path}': {exc}") from exc
        evaluator = Evaluator(env, policy.eval_mode, n_episode or cfg.env.n_evaluator_episode, cfg.env.stop_value, 0)
        return evaluator.evaluate()
    finally:
        env.close()
