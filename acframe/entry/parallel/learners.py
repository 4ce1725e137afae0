"""Data-parallel learners in the parallel pipeline: ``-m parallel`` with ``parallel.learner_num`` = N > 1.

The serial pipelines' data-parallel machinery (``entry/data_parallel.py``: the ranks, the process group, the gradient
all-reduce in ``Policy._optimizer_step``, the collective checkpoint, ``DataParallelError``) with a ``ParallelRun`` on
every rank instead of a ``SerialRun``: each rank is the learner side of a parallel run (``run.py``) over its own
share of the actors.

* ``parallel.actor_num`` (A) and the batch keys (``policy.learn.batch_size``, the replay buffer's sizes) are global
  and split evenly: rank r runs A/N actors of its own (seeded from ``seed + 1,000,003·r``; rank 0's are the actors
  of one learner) and trains on batches of batch_size/N from its own buffer; ``env.collector_env_num`` and
  ``policy.collect.n_sample`` stay per actor. ``parallel.env_steps_per_update`` (by default the serial loop's
  ratio) is divided by N too, so the run makes as many updates of the whole batch per env step as with one learner.
* Every turn of a rank's loop starts with one all-reduce (``ParallelRun.done``): whether a rank stops (rank 0
  solved; the budget, of which each rank's actors collect a share, ``max_env_step``/N; a Ctrl-C or SIGTERM) and the sum of
  the ranks' env steps (what rank 0 logs, evaluates at and saves). A rank trains only when every rank has a batch
  (``ParallelRun.agreed_batch``: a rank that has one holds it), so all make the same gradient steps together.
* Rank 0 alone has an evaluator; it logs and writes the run folder; a checkpoint holds every rank's own state
  (its actors' incarnations and env steps, its buffer when saved) and ``--resume`` gives it back.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Optional, Sequence

from ...errors import ConfigError
from ...signals import sigterm_as_interrupt
from ...worker import LearnerHook
from ..data_parallel import DataParallel, check_data_parallel, check_split, local_config, process_seed, run_ranks
from .run import ParallelRun, async_loop, resolve_actor_num, resolve_steps_per_update, sync_loop


def check_parallel_learners(cfg: Any, backend: str, ray: Any = None) -> None:
    """Refuse, in one line naming the key and the fix, what N learners of a parallel run cannot do (before any
    process starts or anything is written); resolves the default ``parallel.actor_num`` (a multiple of N).

    The cores: each rank's learner needs one (``parallel.learner_num`` <= the CPU cores this process may use, as in
    the serial pipelines) and at least one actor of its own (``parallel.actor_num`` a multiple of N); a rank's actors
    share the cores with the learners, as with one learner (a learner waits for its actors' segments, they for its
    grants). On Ray (``ray``: connected) the cluster's CPUs (and GPUs) count instead: ``ray_ranks.check_ray_ranks``."""
    num = int(cfg.parallel.learner_num)
    cfg.parallel.actor_num = resolve_actor_num(cfg, backend, ray)
    check_data_parallel(cfg, split_envs=False, local_devices=backend != 'ray')
    check_split('parallel.actor_num', int(cfg.parallel.actor_num), num,
                'each rank learns from actor_num / learner_num actors of its own')
    if cfg.parallel.get('inference', 'actor') != 'actor':
        raise ConfigError(f"parallel.inference='{cfg.parallel.inference}' does not run with data-parallel learners "
                          f"(parallel.learner_num={num}) yet: set parallel.inference='actor', or parallel.learner_num=1")
    if backend == 'ray':
        from .ray_ranks import check_ray_ranks
        check_ray_ranks(ray, cfg)


def rank_config(cfg: Any, num: int, rank: int) -> Any:
    """The config rank ``rank`` of ``num`` builds its run from (see the module docstring): its share of the actors,
    batch, replay buffer, ``env_steps_per_update`` and ``max_env_step``, and its own seed."""
    local = local_config(cfg, num, split_envs=False)
    local.parallel.actor_num = int(cfg.parallel.actor_num) // num
    local.parallel.env_steps_per_update = resolve_steps_per_update(cfg) / num
    local.max_env_step = -(-int(cfg.max_env_step) // num)
    local.seed = process_seed(cfg.seed, rank)
    return local


def _rank_run(cfg: Any, exp_dir: Optional[str], resume: bool, backend: str, learner_hooks: Sequence[LearnerHook],
              group: DataParallel, progress: bool, config_changes: Sequence[str]) -> ParallelRun:
    """One rank's ``ParallelRun`` (module level, so that a spawned rank can unpickle it)."""
    return ParallelRun(cfg, exp_dir, resume, progress, backend, None, learner_hooks, config_changes,
                       data_parallel=group)


def _loop(run: ParallelRun) -> None:
    (sync_loop if run.sync else async_loop)(run)


def parallel_learners(cfg: Any, exp_dir: Optional[str], resume: bool, progress: bool, backend: str,
                      learner_hooks: Sequence[LearnerHook], config_changes: Sequence[str],
                      ray_address: Optional[str] = None) -> Any:
    """Train with ``parallel.learner_num`` learner ranks, each fed by its own actors; this process is rank 0 (on Ray,
    ranks 1..N-1 are Ray actors: ``ray_ranks.RayRanks``). Returns the trained policy (``policy.summary``:
    ``summary.json``), as ``parallel_pipeline``."""
    if backend == 'ray':
        from .ray_ranks import connected_ranks
        connected = connected_ranks(ray_address)
    else:
        connected = contextlib.nullcontext((None, None))  # ranks 1..N-1: processes of this machine
    # on Ray, SIGTERM as Ctrl-C from before it starts (connect keeps the handlers): also while the rank actors start
    terminating = sigterm_as_interrupt() if backend == 'ray' else contextlib.nullcontext()
    with terminating, connected as (ray, ranks):
        check_parallel_learners(cfg, backend, ray)
        make_run = functools.partial(_rank_run, cfg, exp_dir, resume, backend, tuple(learner_hooks))
        run = run_ranks(_loop, cfg, exp_dir, progress, config_changes, make_run, ranks)
    policy = run.trained_policy()
    policy.summary = run.summary
    return policy
