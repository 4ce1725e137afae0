"""Serial pipelines: collect, (store,) learn and evaluate in turn, in one process.

``serial_pipeline`` is the off-policy loop (collector → replay buffer → learner), the one IMPALA and ACER
use. ``SerialRun`` holds the workers of one process (collector and evaluator envs, policy, buffer, learner);
the experiment folder, progress line, checkpoints, resume, evaluation bookkeeping and summary are its base's,
``run_base.RunBase``, shared with the parallel pipeline; other loops (the on-policy one, scripts) reuse it.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch

from ..config.compile import ConfigInput
from ..data import make_tree, to_dict
from ..data.tree import to_device
from ..envs import make_env_manager
from ..envs.randomization import DomainRandomizer
from ..errors import ConfigError
from ..policy import create_policy, policy_class
from ..signals import interrupts_deferred, sigterm_as_interrupt
from ..worker import (CheckpointHook, Evaluator, Learner, LearnerHook, LinearLRDecayHook, LogHook, SampleCollector)

from .evaluate import EVAL_SEED_OFFSET
from .budget import check_start
from .run_base import RunBase, build_buffer, check_ding_arguments, compile_run_config, given_model_decides

class SerialRun(RunBase):
    """A run in one process: collector and evaluator envs, policy, buffer and learner (the rest: ``RunBase``)."""

    def __init__(self, cfg: Any, exp_dir: Optional[str] = None, resume: bool = False, progress: bool = True,
                 learner_hooks: Sequence[LearnerHook] = (), model: Optional[torch.nn.Module] = None,
                 use_buffer: bool = True, log_to_console: bool = False, mode: str = 'serial',
                 config_changes: Sequence[str] = (), data_parallel: Any = None) -> None:
        """Build everything, check everything, and only then create (or lock) the experiment folder.

        A start that fails — a bad path, an env that does not build, a model that does not fit the env's
        spaces, a checkpoint that does not fit the model, a folder another process trains in — raises
        before anything is written.
        """
        super().__init__(cfg, progress, mode)
        #: this process's rank of the data-parallel learners (``parallel.learner_num > 1``; ``entry.data_parallel``)
        self.ddp = data_parallel
        self.writes = data_parallel is None or data_parallel.rank == 0
        self.randomizer = DomainRandomizer.from_config(cfg)  # None unless env.domain_randomization.enable
        self.collector_env = self.evaluator_env = None
        self._learner_hooks, self._model, self._use_buffer = learner_hooks, model, use_buffer
        self._log_to_console = log_to_console
        self._start(exp_dir, resume, config_changes)

    def _given_model(self) -> Any:
        return self._model

    def _build(self) -> None:
        # data-parallel learners: this rank's share of the envs and batches (``cfg`` stays the run's global config)
        cfg = self.local_cfg = self.ddp.local_config(self.cfg) if self.ddp is not None else self.cfg
        if self.randomizer is None:
            # rank r steps envs seed + r·E/N, ...: over the ranks, the envs of one process with all of them
            rank_seed = cfg.seed + (self.ddp.rank * cfg.env.collector_env_num if self.ddp is not None else 0)
            self.collector_env = make_env_manager(cfg, 'collector', cfg.env.collector_env_num, rank_seed)
            if self.writes:  # ranks > 0 never evaluate
                self.evaluator_env = make_env_manager(cfg, 'evaluator', cfg.env.evaluator_env_num,
                                                      cfg.seed + EVAL_SEED_OFFSET)
        else:  # every collector env with its own drawn parameters
            self.collector_env = self.randomizer.make_collector_env()
            self.evaluator_env = self.randomizer.make_evaluator_env(cfg.env.evaluator_env_num, cfg.seed + EVAL_SEED_OFFSET)
        self.policy = create_policy(cfg, self.collector_env.observation_space, self.collector_env.action_space,
                                    model=self._model, init_weights=self.init_weights)
        # policy.learn.learner_thread: the collector acts with its own copy of the weights (sync_actor), on the CPU
        # (as the parallel actors: a GPU's one stream would serialize its steps behind the learner's kernels)
        self.actor_policy = self.policy
        if cfg.policy.learn.get('learner_thread'):
            actor_cfg = copy.deepcopy(cfg)
            actor_cfg.policy.cuda = False
            self.actor_policy = create_policy(actor_cfg, self.collector_env.observation_space,
                                              self.collector_env.action_space, enable_field=('collect',),
                                              model=copy.deepcopy(self._model).cpu() if self._model is not None else None,
                                              init_weights=self.init_weights)
        #: the learner iteration the collector logs against: None, the learner's own; while a learner thread
        #: trains, the iteration at the round's start (so the logs do not depend on the threads' timing)
        self.collect_iter: Optional[int] = None
        self.collector = SampleCollector(self.collector_env, self.actor_policy.collect_mode, cfg.policy.collect.n_sample)
        self.evaluator = Evaluator(self.evaluator_env, self.policy.eval_mode, cfg.env.n_evaluator_episode,
                                   cfg.env.stop_value, cfg.policy.eval.evaluator.eval_freq, None,
                                   n_confirm_episode=cfg.env.n_confirm_episode)
        self.evals = self.evaluator.history
        check_start(self.cfg, self.budget_pipeline, self.collector_env.observation_space, self.collector_env.action_space,
                    resume=self.resuming)
        if self._use_buffer:
            self.buffer = build_buffer(cfg)
        echo = self.progress.message if self._log_to_console else None
        self.log_hook = LogHook(cfg.policy.learn.learner.log_freq, None, echo)
        hooks: List[LearnerHook] = [self.log_hook, CheckpointHook(
            cfg.policy.learn.learner.save_ckpt_freq, cfg.policy.learn.learner.save_ckpt_every_s,
            self.ddp.agree_any if self.ddp is not None else None)]
        decay = cfg.policy.learn.get('lr_decay_iters', 0)
        if decay:
            hooks.append(LinearLRDecayHook(decay))
        hooks += list(self._learner_hooks)
        if self.ddp is None:
            self.learner = Learner(self.policy.learn_mode, None, hooks, self.state_provider, buffer=self.buffer)
        else:  # gradients all-reduced; checkpoints hold every rank's envs and RNGs, written by rank 0
            self.learner = self.ddp.learner(self.policy, hooks, self.state_provider, buffer=self.buffer)
        # updates still owed to the current round (a budget may end a run mid-round; resume finishes it)
        self.pending_updates = 0
        #: the collector's copy of the weights came from the checkpoint (a learner thread's round that a budget cut:
        #: the copy is a round behind the learner's weights, as in an unbroken run)
        self.actor_weights_restored = False
        self.pending_batch = None  # the on-policy loop's prepared rollout while its gradient steps are pending
        self.rollout_step = 0  # the index of the next gradient step on pending_batch
        self._collecting = False
        self.last_segment_cut = False
        self._unlogged_returns: List[float] = []
        self._returns_logged_at: Optional[int] = None  # the train iter of the last point (None: none yet)

    def _opened(self) -> None:
        if self.randomizer is not None:
            self.randomizer.attach(self.exp_dir, self.logger, self.progress.message)

    # ---- state -------------------------------------------------------------------------------------
    @property
    def budget_pipeline(self) -> str:
        """The pipeline whose budget arithmetic this run's start-up checks (``entry.budget``)."""
        return self.mode

    @property
    def collecting_processes(self) -> int:
        """Processes collecting as this one does (data-parallel ranks; async workers): the budget's last segment
        is cut for all of them."""
        return self.ddp.world if self.ddp is not None else 1

    @property
    def env_step(self) -> int:
        """Env steps collected; with data-parallel learners, by all ranks (each collects the same number)."""
        return self.collector.env_step * (self.ddp.world if self.ddp is not None else 1)

    def mid_round(self) -> bool:
        """A round of gradient steps is under way: an on-policy rollout's (``pending_batch``) or an off-policy
        round's updates (``pending_updates``)."""
        return self.pending_batch is not None or self.pending_updates > 0

    def update_made(self) -> None:
        """One of the round's ``pending_updates`` is made (``Learner.train``'s ``on_step``: counted with the step, so
        an interrupt right after it checkpoints the round's count as it is)."""
        self.pending_updates -= 1

    def set_rollout_step(self, step: int) -> None:
        """The index of the next gradient step on ``pending_batch``, as each step is made (``train_rollout``'s
        ``on_step``): an interrupt between two steps checkpoints the rollout where it is."""
        self.rollout_step = step

    def _extra_state(self) -> Dict[str, Any]:
        return {
            # interrupted mid-collection, the envs are ahead of the collector: resume resets them instead
            'collector': self.collector.state_dict() if not self._collecting else
            {'env_step': self.collector.env_step, 'obs': None,
             'env': {'envs': None, 'why': 'the checkpoint was written mid-collection'}},
            'domain_randomization': self.randomizer.state_dict() if self.randomizer is not None else None,
            'pending_updates': self.pending_updates,
            'actor_weights': self.actor_policy.get_weights()
            if self.actor_policy is not self.policy and self.pending_updates else None,
            'pending_batch': to_dict(self.pending_batch) if self.pending_batch is not None else None,
            'rollout_step': self.rollout_step,
            # the collector's logging window (episode returns not yet logged): a resumed run logs what an unbroken one does
            'collector_log': {'returns': [float(r) for r in self._unlogged_returns], 'logged_at': self._returns_logged_at},
        }

    def _restore_extra(self, state: Dict[str, Any]) -> None:
        if self.randomizer is not None and state.get('domain_randomization'):
            self.collector_env = self.randomizer.load_state_dict(state['domain_randomization'], self.collector)
        if not self.collector.load_state_dict(state['collector']):
            why = getattr(self.collector.env, 'unrestored_why', '') or 'its env manager keeps none'
            self.resume_notes.append(f"[acframe] the collector envs continue from a reset: their state could not be "
                                     f"restored ({why})")
        self.pending_updates = int(state.get('pending_updates', 0))
        if state.get('actor_weights') is not None and self.actor_policy is not self.policy:
            self.actor_policy.load_weights(state['actor_weights'])
            self.actor_weights_restored = True
        if state.get('pending_batch') is not None:
            # checkpoints hold CPU tensors: a rollout's plan goes back to the learner's device (policy.cuda)
            self.pending_batch = to_device(make_tree(state['pending_batch']), self.policy.device)
        self.rollout_step = int(state.get('rollout_step', 0))
        window = state.get('collector_log') or {}
        self._unlogged_returns = [float(r) for r in window.get('returns', [])]
        logged_at = window.get('logged_at', 0)  # (0 in checkpoints from before the first point was logged at once)
        self._returns_logged_at = None if logged_at is None else int(logged_at)

    # ---- loop pieces -------------------------------------------------------------------------------
    def _segment_steps(self) -> int:
        """Steps per env of the next segment: the collector's, or the budget's last (ceil: within one step per env)."""
        num_envs = self.collector.env.num_envs * self.collecting_processes
        steps_left = -(-(self.cfg.max_env_step - self.env_step) // num_envs)
        return min(self.collector.steps_per_env, max(1, steps_left))

    def _count_collection(self, before: int) -> int:
        """The env steps of the collection that just ended (``env_step`` was ``before``), once ``env_step`` counts
        them (here it is the collector's own count, all ranks' with data-parallel learners)."""
        return self.env_step - before

    def collect(self):
        """One segment; the last one of the budget is cut so the run stops within one step per env of
        ``max_env_step`` (check ``self.last_segment_cut``)."""
        self._collecting = True
        steps = self._segment_steps()
        self.last_segment_cut = steps < self.collector.steps_per_env
        before = self.env_step
        segment = self.collector.collect(steps)
        self._collecting = False
        made = self._count_collection(before)
        stats = self.collector.pop_episode_stats()
        self.collected(made, stats['returns'], stats['lengths'])
        self.recent_returns.extend(stats['returns'])
        self._unlogged_returns += stats['returns']
        # one tensorboard point per log period (a point per episode costs more than the episode)
        train_iter = self.learner.train_iter if self.collect_iter is None else self.collect_iter
        # the first episodes as soon as they end (a run shorter than log_freq iterations gets a point too), then
        # a point per log period
        if self._unlogged_returns and (self._returns_logged_at is None or train_iter - self._returns_logged_at
                                       >= self.cfg.policy.learn.learner.log_freq):
            self._log_returns(train_iter)
        if self.randomizer is not None:  # re-draws the env parameters when due
            self.collector_env = self.randomizer.after_collect(self.collector, self.env_step)
        return segment

    def _log_returns(self, train_iter: int) -> None:
        """One point of the training episodes' mean return (and their count) for the window since the last."""
        self.logger.add_scalar('collector/episode_return_mean', float(np.mean(self._unlogged_returns)), self.env_step)
        self.logger.add_scalar('collector/episodes', len(self._unlogged_returns), self.env_step)
        self._unlogged_returns, self._returns_logged_at = [], train_iter

    def sync_actor(self) -> None:
        """Give the collector's copy of the weights the learner's (``policy.learn.learner_thread``; else one model)."""
        if self.actor_policy is not self.policy:
            self.actor_policy.load_weights(self.policy.get_weights())

    def maybe_evaluate(self, force: bool = False) -> bool:
        """Evaluate when due; True when the stop value is reached."""
        if not force and not self.evaluator.should_eval(self.learner.train_iter):
            return False
        train_iter, env_step = self.learner.train_iter, self.env_step
        result = self.evaluator.evaluate(
            train_iter, env_step, lambda value: self.save_best(value, self.policy.get_weights(), train_iter, env_step))
        self.announce_eval(train_iter, env_step, result['mean'], result['std'], result['confirm'], result['solved'],
                           result['returns'], result['lengths'])
        return result['solved']

    def done(self) -> bool:
        """Evaluate when due; True when the run stops: solved, or out of budget (the final weights evaluated
        unless they just were). Data-parallel learners: rank 0 decides (it evaluates), and every rank learns it."""
        if self.ddp is None:
            return self._done()
        own = self._done() if self.writes else not self.budget_left()
        stop = self.ddp.end_turn(self, own)
        if stop and not own and self.writes and self.learner.stop_requested is not None and not self.interrupted:
            # another rank's hook ended the run: rank 0 evaluates the final weights, as at the end of its budget
            self.maybe_evaluate(force=self.evals.last_eval_iter != self.learner.train_iter)
        return stop

    def all_ranks(self, flag: bool) -> bool:
        """``flag`` held on every data-parallel rank (``flag`` itself with one learner)."""
        return flag if self.ddp is None else self.ddp.agree_all(flag)

    def _done(self) -> bool:
        # (inside a round that a budget or an interrupt cut, resumed: the evaluation waits for the round's end, where
        # the unbroken run evaluates)
        if not self.mid_round() and self.maybe_evaluate():
            return True
        if not self.budget_left():
            self.maybe_evaluate(force=self.evals.last_eval_iter != self.learner.train_iter)
            return True
        return False

    def show_progress(self) -> None:
        wall = self.wall_s()
        speed = self.env_step / wall if wall > 0 else 0.0
        self.progress.update(f"env_step {self.env_step} | {speed:,.0f} steps/s | iter {self.learner.train_iter} | "
                             f"{self.progress_tail()}")

    def _close_workers(self) -> None:
        for env in (self.collector_env, self.evaluator_env):
            if env is not None:
                env.close()


def run_serial(loop: Callable[[SerialRun], None], cfg: Any, exp_dir: Optional[str], resume: bool, progress: bool,
               learner_hooks: Sequence[LearnerHook], model: Optional[torch.nn.Module], use_buffer: bool,
               mode: str = 'serial', config_changes: Sequence[str] = (), backend: str = 'local',
               ray_address: Optional[str] = None) -> Any:
    """Build a ``SerialRun``, drive it with ``loop`` and finish it: final checkpoint and ``summary.json``
    (``parallel.learner_num`` > 1: data-parallel ranks, on this machine or on Ray with ``backend='ray'``).

    Ctrl-C and SIGTERM also finish the run (so ``--resume`` can continue it), then re-raise
    ``KeyboardInterrupt`` (``Terminated`` for SIGTERM).
    """
    if int(cfg.parallel.get('learner_num', 1)) > 1:  # data-parallel learners: this process is rank 0 of N
        from .data_parallel import run_data_parallel
        return run_data_parallel(loop, cfg, exp_dir, resume, progress, learner_hooks, model, use_buffer, mode,
                                 config_changes, backend, ray_address)
    if backend != 'local' or ray_address is not None:  # Ray with one learner, 'inline': refused in one line
        from .data_parallel import check_serial_backend
        check_serial_backend(cfg, backend, ray_address, resume=bool(resume))
    with sigterm_as_interrupt():  # a SIGTERM during start-up stops it as cleanly as one during training
        run = SerialRun(cfg, exp_dir, resume, progress, learner_hooks, model, use_buffer=use_buffer, mode=mode,
                        config_changes=config_changes)
        run.policy.summary = run.drive(loop)
    return run.policy


@given_model_decides
def serial_pipeline(
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
    """Train an off-policy policy (collector → replay buffer → learner) until solved or out of budget.

    Args:
        input_cfg: a config path / dizoo_configs name, or a ``(main_config, create_config)`` pair.
        seed: the run seed (default: the config's ``seed``).
        overrides: ``'key.path=value'`` strings applied after the file.
        exp_dir: the experiment folder (default ``./<exp_name>_seed<seed>``).
        max_env_step / max_train_iter: budgets (override the config's).
        resume: an experiment folder to continue from its latest checkpoint, with the config in its
            ``config.json``; an ``input_cfg``/``overrides``/``seed`` that change that config are refused unless
            ``accept_config_change`` (budgets may always change).
        progress: print the live progress line and eval results.
        learner_hooks: extra ``LearnerHook`` objects.
        model: a model instance to use instead of the policy's default model.
        accept_config_change: with ``resume``, continue with a config that differs from the run's.
        backend: where data-parallel ranks 1..N-1 run (``parallel.learner_num`` = N > 1): ``'local'`` (processes
            of this machine) or ``'ray'`` (Ray actors; docs/ddp.md).
        ray_address: ``HOST:PORT`` of a running Ray cluster (``backend='ray'``; None starts a local Ray).
        env_setting / dynamic_seed: DI-engine's arguments, so its scripts run unchanged: ``env_setting=None`` and
            ``dynamic_seed=True`` are what acframe does (envs from the env factory, seeded once: every episode
            differs); anything else is a ``ConfigError`` saying why.

    Returns the trained policy; ``summary.json`` in the experiment folder says how it went.
    """
    check_ding_arguments(env_setting, dynamic_seed)
    cfg, exp_dir, changes = compile_run_config(input_cfg, seed, overrides, max_env_step, max_train_iter, resume, exp_dir,
                                     'serial', accept_config_change)
    cls = policy_class(cfg)
    if cls.on_policy:
        raise ConfigError(f"policy '{cfg.policy.type}' is on-policy: it cannot learn from replayed data; "
                          f"use serial_pipeline_onpolicy (CLI: -m serial_onpolicy)")
    threaded = bool(cfg.policy.learn.get('learner_thread'))
    if threaded and cls.learn_draws_random:
        own = '' if cls.__module__.startswith('acframe.') else (
            f" (a policy whose updates draw none says so with learn_draws_random = False on {cls.__name__})")
        raise ConfigError(f"policy.learn.learner_thread: policy '{cfg.policy.type}' draws random numbers in its updates, "
                          f"which a second thread would interleave with the collector's{own}; set "
                          f"policy.learn.learner_thread=False")
    return run_serial(_threaded_off_policy_loop if threaded else _off_policy_loop, cfg, exp_dir, resume is not None,
                      progress, learner_hooks, model, use_buffer=True, mode='serial', config_changes=changes,
                      backend=backend, ray_address=ray_address)


def _off_policy_loop(run: SerialRun) -> None:
    """Evaluate when due; collect a segment into the buffer; ``update_per_collect`` updates from the buffer."""
    cfg = run.local_cfg  # with data-parallel learners, this rank's share of the batch
    update_per_collect, batch_size = cfg.policy.learn.update_per_collect, cfg.policy.learn.batch_size
    while True:
        if run.done():
            break
        if run.pending_updates == 0:
            segment = run.collect()
            if run.last_segment_cut:  # the budget's last steps: shorter than the buffer's segments, not stored
                continue
            run.buffer.push(run.policy.collect_mode.get_train_sample(segment))
            run.pending_updates = update_per_collect
        while run.pending_updates and run.learner.train_iter < cfg.max_train_iter:
            if not run.learner.claim_step(cfg.max_train_iter):  # (async workers: another took the budget's last;
                break  # claimed before the draw, which moves the buffer's schedule and RNG)
            batch = run.buffer.sample(batch_size)
            if not run.all_ranks(batch is not None):  # the buffer ends the round (too few samples, or its replay
                # schedule is done; on any data-parallel rank: every rank makes the same number of steps)
                run.learner.release_step()
                run.pending_updates = 0
                break
            run.learner.train(batch, on_step=run.update_made)
        run.learner.end_round()
        run.show_progress()


#: seconds one round's updates may take in the learner thread before the run fails naming it
LEARNER_THREAD_TIMEOUT_S = 900.0


class _LearnerThread(threading.Thread):
    """One round's updates on batches drawn before it started, beside the collector (``learner_thread``)."""

    def __init__(self, learner: Learner, batches: List[Any]) -> None:
        super().__init__(name='acframe-learner', daemon=True)
        self.learner, self.batches, self.error = learner, batches, None

    def run(self) -> None:
        try:
            for batch in self.batches:
                self.learner.train(batch)
        except BaseException as exc:  # raised again in the main thread by finish()
            self.error = exc

    def finish(self) -> None:
        """Wait for the round's updates (a Ctrl-C or SIGTERM meanwhile is raised once they are done, so the run's
        final checkpoint holds a learner at rest), then raise the thread's error, if any."""
        if self.ident is None:  # never started
            return
        with interrupts_deferred():
            self.join(LEARNER_THREAD_TIMEOUT_S)
            if self.is_alive():
                raise RuntimeError(f"the learner thread did not finish {len(self.batches)} updates within "
                                   f"{LEARNER_THREAD_TIMEOUT_S:.0f} s (policy.learn.learner_thread)")
        if self.error is not None:
            raise self.error


def _threaded_off_policy_loop(run: SerialRun) -> None:
    """``policy.learn.learner_thread``: a round's ``update_per_collect`` updates run in a second thread on batches
    drawn before its segment is collected, while the collector — its own copy of the weights — collects that
    segment; the collector gets the new weights when both are done. Torch's kernels and the envs' C code release
    the GIL, so on two cores learning and collection overlap. The data lags one round more than in
    ``_off_policy_loop`` (a segment is first trained on in the round after it was collected); the run is as
    deterministic, since the update draws no random numbers (``Policy.learn_draws_random``). A round that
    ``max_train_iter`` cuts makes its last updates without collecting and owes the rest (``pending_updates``, with
    the collector's copy of the weights, a round behind, in the checkpoint): a resumed run finishes that round with
    its segment, as an unbroken run would."""
    cfg = run.cfg
    update_per_collect, batch_size = cfg.policy.learn.update_per_collect, cfg.policy.learn.batch_size
    if not run.actor_weights_restored:
        run.sync_actor()
    while True:
        if run.done():
            break
        updates = run.pending_updates or update_per_collect
        room = cfg.max_train_iter - run.learner.train_iter
        batches: List[Any] = []
        while len(batches) < min(updates, room):
            batch = run.buffer.sample(batch_size)
            if batch is None:  # too few samples, or the buffer's replay schedule is done
                break
            batches.append(batch)
        if room < updates and len(batches) == room:
            # max_train_iter ends the run inside this round: its last updates now, without a segment, and the rest
            # owed (pending_updates, in the checkpoint): a resumed run finishes the round as an unbroken one would
            run.pending_updates = updates
            for batch in batches:
                run.learner.train(batch, on_step=run.update_made)
            run.learner.end_round()
            run.show_progress()
            continue
        learner = _LearnerThread(run.learner, batches)
        # the collector logs against the round's first iteration (not the thread's moving counter; a resumed
        # round that began before the checkpoint keeps the iteration it began at)
        run.collect_iter = run.learner.train_iter - (update_per_collect - updates)
        run.pending_updates = 0  # the round's updates are drawn: the thread trains them all, even on a Ctrl-C
        try:
            learner.start()
            segment = run.collect()
        finally:  # Ctrl-C or an env error: the round's updates end before the run writes its checkpoint
            learner.finish()
            run.collect_iter = None
        if not run.last_segment_cut:  # the budget's last steps: shorter than the buffer's segments, not stored
            run.buffer.push(run.actor_policy.collect_mode.get_train_sample(segment))
        run.sync_actor()
        run.learner.end_round()
        run.show_progress()
