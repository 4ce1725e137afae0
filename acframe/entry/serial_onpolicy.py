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
from .serial import SerialRun, _compile, run_serial


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
    accept_config_change: bool = False,
) -> Any:
    """Train an on-policy policy (collect → learn on that segment → repeat) until solved or out of budget.

    The arguments are ``serial_pipeline``'s.

    Each collection is followed by ``policy.learn.update_per_collect`` updates on it (1 when the policy
    has no such key, as A2C). Returns the trained policy; ``summary.json`` in the experiment folder says
    how it went.
    """
    cfg, exp_dir, changes = _compile(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                     'serial_onpolicy', accept_config_change)
    if not policy_class(cfg).on_policy:
        raise ConfigError(f"policy '{cfg.policy.type}' is off-policy: train it with serial_pipeline (CLI: -m serial)")
    check_no_replay(cfg)
    return run_serial(_on_policy_loop, cfg, exp_dir, resume is not None, progress, learner_hooks, model,
                      use_buffer=False, mode='serial_onpolicy', config_changes=changes)


def _on_policy_loop(run: SerialRun) -> None:
    """Evaluate when due; collect a segment; ``update_per_collect`` updates on it; drop it."""
    updates = int(run.cfg.policy.learn.get('update_per_collect', 1))
    get_train_sample = run.policy.collect_mode.get_train_sample
    while True:
        if run.maybe_evaluate():
            break
        if not run.budget_left():
            run.maybe_evaluate(force=run.evaluator.last_eval_iter != run.learner.train_iter)
            break
        if run.pending_updates == 0:
            run.pending_batch = get_train_sample(run.collect())
            run.pending_updates = updates
        while run.pending_updates and run.learner.train_iter < run.cfg.max_train_iter:
            run.learner.train(run.pending_batch)
            run.pending_updates -= 1
        if run.pending_updates == 0:
            run.pending_batch = None
        run.learner.end_round()
        run.show_progress()
