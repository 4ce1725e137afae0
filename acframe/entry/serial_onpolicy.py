"""The on-policy serial pipeline (A2C, PPO): collect a rollout with the current weights, learn from it, drop it.

The policy's learn mode decides the gradient steps a rollout gets: ``prepare(rollout)`` once, then one
``forward`` per batch of ``minibatches(plan)`` (A2C: one; PPO: ``epoch_per_collect`` × minibatches), each one
``Learner.train_iter``.

No replay buffer: every update uses data of the weights being updated, which is what an on-policy
policy (``Policy.on_policy = True``) needs. The experiment folder, progress line, evaluation,
checkpoints, resume, domain randomization and ``summary.json`` are ``SerialRun``'s (and its base ``RunBase``'s),
shared with the off-policy ``serial_pipeline`` and the parallel pipeline.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from ..config.compile import ConfigInput
from ..errors import ConfigError
from ..policy import policy_class
from ..worker import LearnerHook
from .run_base import check_ding_arguments, check_no_replay, compile_run_config, given_model_decides
from .serial import SerialRun, run_serial


@given_model_decides
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
    backend: str = 'local',
    ray_address: Optional[str] = None,
    env_setting: Any = None,
    dynamic_seed: bool = True,
) -> Any:
    """Train an on-policy policy (collect → learn on that segment → repeat) until solved or out of budget.

    The arguments are ``serial_pipeline``'s (``backend='ray'``: data-parallel ranks 1..N-1 as Ray actors).

    Each collection is followed by the gradient steps the policy's learn mode makes on it (``Learner.train_rollout``).
    Returns the trained policy; ``summary.json`` in the experiment folder says how it went.
    """
    check_ding_arguments(env_setting, dynamic_seed)
    cfg, exp_dir, changes = compile_run_config(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                     'serial_onpolicy', accept_config_change)
    if not policy_class(cfg).on_policy:
        raise ConfigError(f"policy '{cfg.policy.type}' is off-policy: train it with serial_pipeline (CLI: -m serial)")
    check_no_replay(cfg)
    if cfg.policy.learn.get('learner_thread'):
        raise ConfigError("policy.learn.learner_thread: an on-policy policy learns each rollout with the weights that "
                          "collected it, so it cannot learn beside the collector; set policy.learn.learner_thread=False")
    return run_serial(_on_policy_loop, cfg, exp_dir, resume is not None, progress, learner_hooks, model,
                      use_buffer=False, mode='serial_onpolicy', config_changes=changes, backend=backend,
                      ray_address=ray_address)


def _on_policy_loop(run: SerialRun) -> None:
    """Evaluate when due; collect a rollout and prepare it; its gradient steps; drop it.

    A budget may stop the run inside a rollout: its plan and the index of its next step (``run.pending_batch``,
    ``run.rollout_step``) are checkpointed, and a resumed run finishes it first.
    """
    get_train_sample = run.policy.collect_mode.get_train_sample
    prepare = run.policy.learn_mode.prepare
    while True:
        if run.done():
            break
        if run.pending_batch is None:
            run.pending_batch = prepare(get_train_sample(run.collect()))
            run.rollout_step = 0
        next_step = run.learner.train_rollout(run.pending_batch, run.rollout_step, run.cfg.max_train_iter,
                                              on_step=run.set_rollout_step)
        if next_step is None:
            run.pending_batch, run.rollout_step = None, 0
        else:
            run.rollout_step = next_step
        run.learner.end_round()
        run.show_progress()
