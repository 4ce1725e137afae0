"""The parallel pipeline: actors collect continuously, a learner trains continuously, an evaluator watches.

IMPALA's actor-learner architecture. The roles (``roles.py``: ``ActorWorker`` with the collect mode only,
``EvalWorker`` with the eval mode only; the learner in ``run.py`` with the learn mode only) are the same on
every backend:

* ``local`` (default) — processes of this machine, weights in shared memory (``local.py``);
* ``ray``    — Ray actors on a cluster, weights and segments through the object store (``ray_backend.py``);
* ``inline`` — everything in this process, interleaved, for a debugger (``inline.py``).

See docs/parallel.md.
"""
from __future__ import annotations

import contextlib
from typing import Any, Optional, Sequence

from ...config.compile import ConfigInput
from ...errors import ConfigError
from ...signals import sigterm_as_interrupt
from ...worker import LearnerHook
from ..run_base import check_ray_address, compile_run_config
from .run import BACKENDS, ParallelRun, async_loop, sync_loop


def parallel_pipeline(
    input_cfg: Optional[ConfigInput] = None,
    seed: Optional[int] = None,
    overrides: Optional[Sequence[str]] = None,
    exp_dir: Optional[str] = None,
    backend: str = 'local',
    ray_address: Optional[str] = None,
    progress: bool = True,
    resume: Optional[str] = None,
    max_env_step: Optional[int] = None,
    max_train_iter: Optional[int] = None,
    learner_hooks: Sequence[LearnerHook] = (),
    accept_config_change: bool = False,
) -> Any:
    """Train with ``parallel.actor_num`` actors and one learner until solved or out of budget (``parallel.learner_num``
    = N > 1: N learner ranks, each fed by its own share of the actors, gradients all-reduced; docs/ddp.md).

    Args:
        input_cfg: a config path / dizoo_configs name, a ``(main_config, create_config)`` pair, or a compiled config.
        seed: the run seed (default: the config's ``seed``).
        overrides: ``'key.path=value'`` strings applied after the file.
        exp_dir: the experiment folder (default ``./<exp_name>_seed<seed>``).
        backend: ``'local'`` (processes of this machine), ``'ray'`` (a Ray cluster) or ``'inline'`` (one process).
        ray_address: ``HOST:PORT`` of a running Ray cluster (``backend='ray'``; None starts a local Ray).
        progress: print the live progress line and eval results.
        resume: an experiment folder to continue from its latest checkpoint.
        max_env_step / max_train_iter: budgets (override the config's).
        learner_hooks: extra ``LearnerHook`` objects, run by the learner.
        accept_config_change: with ``resume``, continue with a config that differs from the run's.

    Off-policy policies run asynchronously; on-policy ones (``Policy.on_policy``) in rounds where every actor
    collects one segment with the current weights (``parallel.sync_mode``). Ctrl-C stops every worker, writes
    ``ckpt/ckpt_latest.pth`` and ``summary.json``, then raises ``KeyboardInterrupt``; SIGTERM does the same and
    raises ``acframe.signals.Terminated`` (a ``KeyboardInterrupt``; the CLI exits with status 143).

    Returns the trained policy (all its modes; ``policy.summary`` is what ``summary.json`` holds). Scripts that
    use the local backend need the ``if __name__ == '__main__':`` guard (its processes are spawned when
    ``parallel.start_method`` or CUDA asks for it; forked otherwise).
    """
    cfg, exp_dir, changes = compile_run_config(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                               'parallel', accept_config_change)
    if int(cfg.parallel.get('learner_num', 1)) > 1:  # N learner ranks, each fed by its own actors; this process is rank 0
        check_ray_address(ray_address, backend)
        from .learners import parallel_learners
        return parallel_learners(cfg, exp_dir, resume is not None, progress, backend, learner_hooks, changes,
                                 ray_address)
    # on Ray, SIGTERM as Ctrl-C from before it starts (connect keeps the handlers): also while its workers start
    with sigterm_as_interrupt() if backend == 'ray' else contextlib.nullcontext():
        run = ParallelRun(cfg, exp_dir, resume is not None, progress, backend, ray_address, learner_hooks, changes)
        summary = run.drive(sync_loop if run.sync else async_loop)  # Ctrl-C/SIGTERM: finished, then re-raised
    policy = run.trained_policy()
    policy.summary = summary
    return policy


__all__ = ['parallel_pipeline', 'ParallelRun', 'BACKENDS']
