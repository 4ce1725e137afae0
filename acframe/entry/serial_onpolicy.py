"""The on-policy serial pipeline (A2C): collect a segment with the current weights, learn from it, drop it.

No replay buffer: every update uses data of the weights being updated, which is what an on-policy
policy (``Policy.on_policy = True``) needs. The experiment folder, progress line, evaluation,
checkpoints, resume, domain randomization and ``summary.json`` are ``SerialRun``'s, shared with the
off-policy ``serial_pipeline``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from ..config.compile import ConfigInput
from ..errors import ConfigError
from ..policy import policy_class
from ..registry import BUFFER_REGISTRY
from ..worker import LearnerHook
from .serial import SerialRun, _compile


def check_no_replay(cfg: Any) -> None:
    """Refuse a replay buffer that reuses data (``reuses_data = True``) for an on-policy run."""
    buffer_type = cfg.policy.other.replay_buffer.get('type') or ''
    if not buffer_type:
        return
    if getattr(BUFFER_REGISTRY.get(buffer_type), 'reuses_data', True):
        raise ConfigError(
            f"policy '{cfg.policy.type}' is on-policy: it learns each segment once with the weights that collected it, "
            f"so the replay buffer '{buffer_type}' (which reuses data) cannot be used; "
            f"set policy.other.replay_buffer.type='' (no buffer)")


def serial_pipeline_onpolicy(
    input_cfg: Optional[ConfigInput] = None,
    seed: Optional[int] = None,
    overrides: Optional[Sequence[str]] = None,
    exp_dir: Optional[str] = None,
    max_env_step: Optional[int] = None,
    max_train_iter: Optional[int] = None,
    resume: Optional[str] = None,
    progress: bool = True,
    learner_hooks: Sequence[LearnerHook] = (),
    model: Optional[torch.nn.Module] = None,
) -> Any:
    """Train an on-policy policy (collect → learn on that segment → repeat) until solved or out of budget.

    Args:
        input_cfg: a config path / dizoo_configs name, or a ``(main_config, create_config)`` pair.
        seed: the run seed (default: the config's ``seed``).
        overrides: ``'key.path=value'`` strings applied after the file.
        exp_dir: the experiment folder (default ``./<exp_name>_seed<seed>``).
        max_env_step / max_train_iter: budgets (override the config's).
        resume: an experiment folder to continue from its latest checkpoint (its config.py unless
            ``input_cfg`` is given).
        progress: print the live progress line and eval results.
        learner_hooks: extra ``LearnerHook`` objects.
        model: a model instance to use instead of the policy's default model.

    Each collection is followed by ``policy.learn.update_per_collect`` updates on it (1 when the policy
    has no such key, as A2C). Returns the trained policy; ``summary.json`` in the experiment folder says
    how it went.
    """
    cfg, exp_dir = _compile(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir)
    if not policy_class(cfg).on_policy:
        raise ConfigError(f"policy '{cfg.policy.type}' is off-policy: train it with serial_pipeline (CLI: -m serial)")
    check_no_replay(cfg)
    run = SerialRun(cfg, exp_dir, resume is not None, progress, learner_hooks, model, use_buffer=False)
    try:
        _on_policy_loop(run)
    except BaseException:
        run.close()
        raise
    run.summary = run.finish()
    run.policy.summary = run.summary
    return run.policy


def _on_policy_loop(run: SerialRun) -> None:
    updates = int(run.cfg.policy.learn.get('update_per_collect', 1))
    get_train_sample = run.policy.collect_mode.get_train_sample
    while True:
        if run.maybe_evaluate():
            break
        if not run.budget_left():
            run.maybe_evaluate(force=run.evaluator.last_eval_iter != run.learner.train_iter)
            break
        batch = get_train_sample(run.collect())
        for _ in range(updates):
            run.learner.train(batch)
        run.learner.end_round()
        run.show_progress()
