"""``RunBase``: what every training run owns, whichever pipeline drives it.

The serial pipelines (``serial.SerialRun``: off-policy and on-policy loops) and the parallel one
(``parallel.run.ParallelRun``) differ only in how they collect and train. Everything else is here, once:

* the config of a pipeline call (``compile_run_config``: a fresh run, or ``--resume`` with the folder's config);
* start-up: build and check everything first (the logger backends too), then create and lock the experiment
  folder, record the config, open the loggers and write the first checkpoint (a failed start writes nothing);
* logging: ``self.logger`` (``acframe.loggers.RunLogger``) hands every scalar of the run to each backend of
  ``logger.backends``; the workers log through it;
* checkpoint state and restore (counters, evaluation history, replay buffer, RNG states, wall time);
* budgets (``max_env_step``, ``max_train_iter``);
* evaluation bookkeeping (``EvalHistory``: best and last return, confirmations; the best checkpoint; solved);
* the progress line, Ctrl-C/SIGTERM handling (``drive``) and ``summary.json``.

A subclass implements ``_build`` (its workers, ``self.policy``, ``self.learner``, ``self.log_hook``), the
``env_step`` counter, and the hooks ``_extra_state``/``_restore_extra``/``_extra_summary``/``_result_line``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import time
import traceback
from collections import deque
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..config import compile_config
from ..config.compile import (ConfigInput, model_given, override_list, warn_idle_parallel_keys, warn_other_pipeline,
                              warn_unwatched_step_timeout)
from ..config.run_folder import (given_config_differences, load_run_config, model_given_refusal, read_run_record,
                                 save_run_config)
from ..envs.check import check_env_at_start
from ..envs.gym_env import recorded_env_id
from ..errors import (AcframeError, CheckpointError, ConfigError, EnvError, PolicyError, call_user_code, is_user_file,
                      user_code_error)
from ..plot import write_run_curves
from ..runs import initial_weights
from ..policy import policy_class
from ..loggers import RunLogger, check_loggers, check_option_names, open_loggers
from ..signals import (as_raised, describe_interrupt, ignore_further_interrupts, interrupt_handled,
                       raise_swallowed_interrupt, sigterm_as_interrupt)
from ..utils import (atomic_write_json, buffer_checkpoint, capture_rng_states, check_rng_states, restore_buffer,
                     restore_rng_states, set_global_seed, set_torch_threads)
from ..worker import (CollectorHook, EvaluatorHook, check_hooks_run_config, config_hooks, eval_score,
                      load_checkpoint)
from .run_folder import NewRunFolder, RunLock, check_folder_is_data, plan_exp_dir, resume_command
from .budget import buffer_class

#: the CLI flag of each pipeline mode (named when a folder is resumed with the wrong one)
MODE_FLAGS = {'async': '-m async', 'parallel': '-m parallel', 'serial_onpolicy': '-m serial_onpolicy', 'serial': '-m serial'}


class Progress:
    """One live progress line (rewritten in place on a terminal, printed every few seconds otherwise).

    A console that went away (the terminal closed: writes fail with EIO or EPIPE) silences it; the run goes on to
    its final checkpoint and summary."""

    def __init__(self, enabled: bool = True, interval: float = 2.0) -> None:
        self.enabled = enabled
        self.tty = enabled and sys.stdout.isatty()
        self.interval = interval if not self.tty else 0.2
        self._last = 0.0
        self._width = 0
        self._gone = False

    def update(self, text: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self.tty:
            self._write('\r' + text.ljust(self._width))
            self._width = len(text)
        else:
            self._write(text + '\n')

    def message(self, text: str) -> None:
        if not self.enabled:
            return
        self.result(text)

    def result(self, text: str) -> None:
        """A line printed even when the progress line is off (``-q``): the final result."""
        if self.tty and self._width:
            self._write('\r' + ' ' * self._width + '\r')
            self._width = 0
        self._write(text + '\n')

    def close(self) -> None:
        if self.enabled and self.tty and self._width:
            self._write('\n')

    def _write(self, text: str) -> None:
        if self._gone:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except (OSError, ValueError):  # the console is gone (EIO, EPIPE; a closed stream is a ValueError)
            self._gone = True


def given_model_decides(pipeline: Callable[..., Any]) -> Callable[..., Any]:
    """``pipeline`` (a pipeline function taking ``model=``) run with the model instance a script gives deciding
    whether the run is recurrent (``config.compile.model_given``) in everything it compiles and checks: the idle
    ``policy.model.rnn`` keys, the policy's sequence checks, the data-parallel split of its sequences."""
    signature = inspect.signature(pipeline)

    @functools.wraps(pipeline)
    def run(*args: Any, **kwargs: Any) -> Any:
        with model_given(signature.bind_partial(*args, **kwargs).arguments.get('model')):
            return pipeline(*args, **kwargs)
    return run


def compile_run_config(input_cfg: Optional[ConfigInput], seed: Optional[int], overrides: Optional[Sequence[str]],
                       max_env_step: Optional[int], max_train_iter: Optional[int], resume: Optional[str],
                       exp_dir: Optional[str], mode: str = 'serial',
                       accept_config_change: bool = False) -> Tuple[Any, Optional[str], List[str]]:
    """The compiled config, experiment folder and accepted config changes of a pipeline call.

    With ``resume`` the folder's ``config.json`` is the config (read as data, never executed). A config or
    overrides that change its keys (budgets and ``exp_name`` aside) are refused, naming the keys, unless
    ``accept_config_change``; a folder of another pipeline (``mode``) is refused too.
    """
    refuse_a_spawned_reimport()

    extra: List[Any] = override_list(overrides)
    if max_env_step is not None:
        extra.append(('max_env_step', int(max_env_step)))
    if max_train_iter is not None:
        extra.append(('max_train_iter', int(max_train_iter)))
    if resume is None:
        if input_cfg is None:
            raise ConfigError("no config given; pass a config path or a (main_config, create_config) pair")
        cfg = compile_config(input_cfg, extra, seed=seed)
        warn_idle_parallel_keys(extra, mode)  # (after the compile: a mistyped key is its error alone)
        # (a file's or a pair's own value too; a compiled config, the CLI's, was said when it was compiled)
        warn_unwatched_step_timeout(extra, cfg, mode, new_run=not isinstance(input_cfg, dict))
        warn_other_pipeline(cfg, mode)
        return cfg, exp_dir, []
    resume = os.fspath(resume)
    if exp_dir is not None and os.path.realpath(os.fspath(exp_dir)) != os.path.realpath(resume):
        raise ConfigError(f"--resume {resume} continues the run in its own folder, not in --exp-dir {exp_dir}; drop "
                          f"--exp-dir (to continue elsewhere, copy the run folder there and resume the copy)")
    if os.path.isfile(resume):
        raise ConfigError(f"--resume {resume}: a file; --resume takes the run's folder{run_folder_hint(resume)}")
    if not os.path.isfile(os.path.join(resume, 'ckpt', 'ckpt_latest.pth')):
        raise ConfigError(f"--resume {resume}: no ckpt/ckpt_latest.pth there; pass the experiment folder of an earlier run")
    record = read_run_record(resume)
    if record['mode'] != mode:
        flag = MODE_FLAGS.get(record['mode'], record['mode'])
        article = 'an' if str(record['mode'])[:1] in 'aeiou' else 'a'
        raise ConfigError(f"--resume {resume}: that folder holds {article} {record['mode']} run; resume it with {flag} "
                          f"(or without -m: acframe reads the mode from the folder)")
    # the folder's import_names are imported only where the user named them (here: the given config's own
    # import_names, an import_names= override, or modules the calling script imported already)
    cfg = load_run_config(resume, extra, seed) if input_cfg is None else compile_config(input_cfg, extra, seed=seed)
    stored = load_run_config(resume, imports=cfg.import_names)
    changed = given_config_differences(stored, cfg)  # (the shapes the run filled in from its env are not a change)
    if cfg.policy.type != stored.policy.type:  # (not a change --accept-config-change can make)
        raise ConfigError(f"--resume {resume}: the config given is of policy '{cfg.policy.type}', the run's of "
                          f"'{stored.policy.type}': a resume continues the run's algorithm; to start "
                          f"'{cfg.policy.type}' from its weights where its model fits, run -c CONFIG --init-from "
                          f"{resume} (a new run)")
    if changed and not accept_config_change:
        shown = ', '.join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else '')
        raise ConfigError(f"--resume {resume}: the config given changes {len(changed)} key(s) of the run: {shown}; "
                          f"resume with the run's own config (drop -c, -s and those overrides) or pass "
                          f"--accept-config-change to continue with the new values")
    warn_idle_parallel_keys(extra, mode)
    warn_unwatched_step_timeout(extra, cfg, mode)
    return cfg, resume, changed


def run_folder_hint(path: str) -> str:
    """`` (--resume RUN)`` for the nearest folder above the file ``path`` that holds a run's
    ``ckpt/ckpt_latest.pth``; ``''`` where none does."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.isfile(os.path.join(folder, 'ckpt', 'ckpt_latest.pth')):
            return f" (--resume {folder})"
        parent = os.path.dirname(folder)
        if parent == folder:
            return ''
        folder = parent


#: the hint for a script whose pipeline call a spawned child process ran again
MAIN_GUARD = ("a script that trains with spawned worker processes needs its pipeline call under "
              "if __name__ == '__main__': (each child imports the script again)")


#: the exit status of a spawned child that refused to run the user's script's pipeline call (the parent names the guard)
REIMPORT_EXIT = 78


def refuse_a_spawned_reimport() -> None:
    """A pipeline called while a spawned child process imports the user's script (no ``__main__`` guard): one line,
    and the child ends with ``REIMPORT_EXIT`` before a config is read or a folder made (each child used to start a
    run of its own); the parent's start-up error then names the guard."""
    import multiprocessing

    if getattr(multiprocessing.current_process(), '_inheriting', False):
        print(f"acframe: error: a pipeline was called while a worker process was starting: {MAIN_GUARD}",
              file=sys.stderr, flush=True)
        os._exit(REIMPORT_EXIT)


def check_ray_address(ray_address: Optional[str], backend: str) -> None:
    """A Ray address given with another backend than Ray's: one line naming the argument and the flag."""
    if ray_address is not None and backend != 'ray':
        raise ConfigError(f"ray_address (--ray-address) is only used by backend 'ray' (--backend ray); the backend is "
                          f"'{backend}'")


def check_ding_arguments(env_setting: Any, dynamic_seed: Any) -> None:
    """DI-engine's ``serial_pipeline`` arguments that acframe's pipelines accept as DI-engine's defaults only."""
    if env_setting is not None:
        raise ConfigError("env_setting (DI-engine's env functions and configs) is not taken: acframe builds the envs "
                          "with its env factory (create_config.env.type; docs/custom_env.md); drop env_setting")
    if dynamic_seed is not True:
        raise ConfigError(f"dynamic_seed={dynamic_seed!r} (every episode of an env from the same seed) is not taken: "
                          f"acframe seeds each env once and its episodes differ, as dynamic_seed=True; drop dynamic_seed")


def check_no_replay(cfg: Any) -> None:
    """Refuse a replay buffer that reuses data (``reuses_data = True``) for an on-policy run."""
    buffer_type = cfg.policy.other.replay_buffer.get('type') or ''
    if not buffer_type:
        return
    if getattr(buffer_class(cfg), 'reuses_data', True):
        raise ConfigError(
            f"policy '{cfg.policy.type}' is on-policy: it learns each segment once with the weights that collected it, "
            f"so the replay buffer '{buffer_type}' (which reuses data) cannot be used; "
            f"set policy.other.replay_buffer.type='' (no buffer)")


def return_text(value: Optional[float]) -> str:
    """An evaluation return as the result line shows it: two decimals (summary.json keeps every digit); '-' for none."""
    return '-' if value is None else f"{value:.2f}"


def build_buffer(cfg: Any, seed: Optional[int] = None) -> Any:
    """The replay buffer ``policy.other.replay_buffer`` describes (seeded with ``seed``, default the run seed); its
    class is checked first (``budget.buffer_class``)."""
    buffer_cfg = dict(cfg.policy.other.replay_buffer)
    name = buffer_cfg.pop('type')
    cls = buffer_class(cfg)
    kwargs = dict(seed=cfg.seed if seed is None else seed, **buffer_cfg)
    taken = _keyword_names(cls)
    missing = [key for key in kwargs if taken is not None and key not in taken]
    if missing:
        raise ConfigError(f"policy.other.replay_buffer.type='{name}': {cls.__name__}() does not take "
                          f"{', '.join(missing)}; a buffer is built with seed= and every key of "
                          f"policy.other.replay_buffer (its own, the policy's and the common ones: "
                          f"{', '.join(sorted(buffer_cfg))}): take **kwargs for those it ignores (docs/replay.md)")
    return call_user_code(f"the replay buffer '{name}' ({cls.__name__}) while it was built", cls, **kwargs)


def _keyword_names(cls: type) -> Optional[List[str]]:
    """The keyword names ``cls(...)`` takes; None when it takes ``**kwargs`` (or its signature cannot be read)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def _other_policy(checkpoint: str, cfg: Any) -> str:
    """`` (the run of that checkpoint trained policy 'impala', this config 'acer')`` where the weights ``init_from``
    names come from a run folder of another policy (weights keep their names within one policy's models); ''
    otherwise, or where that cannot be read."""
    from ..config.run_folder import read_run_record
    from ..runs import run_dir_of

    run_dir = run_dir_of(checkpoint)
    try:
        trained = read_run_record(run_dir)['config']['policy']['type'] if run_dir is not None else None
    except (AcframeError, KeyError, TypeError):
        return ''
    if not isinstance(trained, str) or trained == cfg.policy.type:
        return ''
    return (f" (its run trained policy '{trained[:60]}', this config trains '{cfg.policy.type}': init_from takes "
            f"weights of the same policy and model)")


def _raised_in_own_method(exc: BaseException, cls: type) -> bool:
    """Whether the innermost user frame of ``exc``'s traceback is a method of ``cls`` (a user's class, not acframe's),
    in the file that defines it."""
    source = getattr(sys.modules.get(cls.__module__), '__file__', None)
    user = [frame for frame in traceback.extract_tb(exc.__traceback__) if is_user_file(frame.filename)]
    if source is None or not user or cls.__module__.startswith('acframe.'):
        return False
    innermost = user[-1]  # (its own method's, not a policy's in the same file)
    return os.path.abspath(innermost.filename) == os.path.abspath(source) and callable(getattr(cls, innermost.name, None))


class RunBase:
    """The experiment folder, loggers, progress line, checkpoints, budgets, evaluations and summary of a run.

    A subclass calls ``_start`` from its ``__init__`` once its own attributes are set, and drives its loop with
    ``drive``. ``self.evals`` is the run's ``EvalHistory``; ``self.buffer`` its replay buffer (None without).
    """

    def __init__(self, cfg: Any, progress: bool, mode: str) -> None:
        self.start = time.perf_counter()
        self.cfg = cfg
        self.mode = mode
        self.progress = Progress(progress)
        #: every scalar of the run goes through it (None until the folder is open, and after close)
        self.logger: Optional[RunLogger] = None
        self.lock: Optional[RunLock] = None
        #: a new run's folder as its start made it (None when resuming); taken back if its workers fail to start
        self.new_folder: Optional[NewRunFolder] = None
        #: False while a pipeline's worker processes start (the parallel pipeline's): a failure then is a failed start
        self.workers_started = True
        self.buffer: Any = None
        self.recent_returns: deque = deque(maxlen=20)
        #: the hooks of policy.collect.hooks and policy.eval.evaluator.hooks (built by _start)
        self.collector_hooks: List[CollectorHook] = []
        self.evaluator_hooks: List[EvaluatorHook] = []
        self.solved = False
        self.interrupted = False
        self.spent_on_resume = False  # (set by _start: a resume whose budget is spent already)
        self._schedules_warned = False  # (a decay schedule that reached 0 with budget left is said once)
        #: what a resume's restore has to say (envs that continue from a reset): said once it is known to train on
        self.resume_notes: List[str] = []
        #: the interrupt this process ends with, once finished, when another process of the run (a data-parallel
        #: rank) got the Ctrl-C or SIGTERM (``DataParallel.end_turn``)
        self.other_interrupt: Optional[KeyboardInterrupt] = None
        self.wall_before = 0.0
        self.summary: Optional[Dict[str, Any]] = None
        #: False on the ranks > 0 of data-parallel learners: they write nothing (no folder, lock, logs or summary)
        self.writes = True

    # ---- what a subclass provides ------------------------------------------------------------------
    @property
    def env_step(self) -> int:
        raise NotImplementedError

    def _build(self) -> None:
        """Build the workers: ``self.policy``, ``self.learner`` (its ``state_provider`` is ``self.state_provider``),
        ``self.log_hook`` and ``self.evals``; nothing is written yet."""
        raise NotImplementedError

    def _given_model(self) -> Any:
        """The model instance the run was given in Python (``model=``), None when its config builds the model."""
        return None

    def _model_given_name(self) -> Optional[str]:
        model = self._given_model()
        return None if model is None else f"{type(model).__module__}.{type(model).__qualname__}"

    def _extra_state(self) -> Dict[str, Any]:
        """The pipeline's own entries of the checkpoint state."""
        return {}

    def _restore_extra(self, state: Dict[str, Any]) -> None:
        """Restore the pipeline's own entries (before the RNG states are restored)."""

    def _extra_summary(self, wall: float) -> Dict[str, Any]:
        """The pipeline's own entries of ``summary.json``."""
        return {}

    def _ending(self) -> str:
        """How the run ended, as its result line starts: solved, interrupted (Ctrl-C, SIGTERM), stopped by a hook
        (``StopTraining``) or stopped (a budget)."""
        return ('solved' if self.solved else 'interrupted' if self.interrupted else
                f"stopped by {self.learner.stop_requested}" if self.learner.stop_requested else 'stopped')

    def _skipped_updates(self) -> int:
        """The updates the policy dropped for a non-finite loss or gradient (``on_nonfinite='skip_update'``)."""
        return int(getattr(getattr(self, 'policy', None), 'skipped_updates', 0) or 0)

    def _iters_text(self, summary: Dict[str, Any]) -> str:
        """``N iters`` for the result line, with the updates skipped among them."""
        skipped = summary.get('skipped_updates', 0)
        return f"{summary['train_iters']} iters" + (f" ({skipped} skipped: non-finite)" if skipped else '')

    @staticmethod
    def _learners_text(summary: Dict[str, Any]) -> str:
        """``', N data-parallel learners'`` for the result line of a run of more than one (else nothing)."""
        num = int(summary.get('learner_num') or 1)
        return f", {num} data-parallel learners" if num > 1 else ''

    def _result_line(self, summary: Dict[str, Any]) -> str:
        return (f"[acframe] {self._ending()}: {summary['env_steps']} env steps, "
                f"{self._iters_text(summary)}{self._learners_text(summary)}, {summary['wall_s']:.1f} s, best eval return "
                f"{return_text(summary['best_eval_return'])} -> {self.exp_dir}")

    def _final_report(self) -> None:
        """Last measurements, written before the loggers close."""

    def _stop_workers(self) -> None:
        """Stop whatever runs beside this process (the parallel pipeline's actors and evaluator)."""

    def _close_workers(self) -> None:
        """Release what ``_build`` opened (envs)."""

    # ---- start-up ----------------------------------------------------------------------------------
    def _start(self, exp_dir: Optional[str], resume: bool, config_changes: Sequence[str] = ()) -> None:
        """Build everything, check everything, and only then create (or lock) the experiment folder.

        A start that fails — a bad path, an env that does not build, a model that does not fit the env's
        spaces, a checkpoint that does not fit the model, a folder another process trains in — raises
        before anything is written.
        """
        cfg = self.cfg
        self.exp_dir = plan_exp_dir(cfg, exp_dir, resume) if self.writes else exp_dir
        if self.writes and os.path.isdir(self.exp_dir):  # a folder being resumed (or reused): no planted link or FIFO in it
            check_folder_is_data(self.exp_dir)
        self.resuming = resume  # _build's start-up checks (entry/budget.py) spare a resumed run its spent budget
        if resume and self.writes and self._model_given_name() is None:
            given = read_run_record(self.exp_dir).get('model_given')
            if given:  # (its checkpoint fits that model, not the one its config builds)
                raise model_given_refusal(self.exp_dir, given, "resume it in Python with the same model: "
                                          "serial_pipeline(CONFIG, resume=RUN, model=...) (or serial_pipeline_onpolicy)")
        check_option_names(cfg)  # (options under a misspelled backend's name, or not a dict: before a backend reads them)
        # an unknown backend, a missing extra, a destination that cannot be written or lies inside the run folder
        for backend in check_loggers(cfg, self.exp_dir if self.writes else None):
            if not resume:  # (a resume keeps what its first sitting pinned)
                backend.pin_config(cfg)
        if self.writes and not resume and not {'tensorboard', 'jsonl'} & set(cfg.logger.backends):
            self.warn(f"acframe: warning: logger.backends={list(cfg.logger.backends)} has neither 'tensorboard' nor "
                      f"'jsonl', the logs -m plot reads: the run draws no curves.svg and -m plot cannot draw it")
        named = config_hooks(cfg)
        self.collector_hooks = named['policy.collect.hooks']
        self.evaluator_hooks = named['policy.eval.evaluator.hooks']
        check_hooks_run_config(cfg, {**named, 'learner_hooks': list(getattr(self, '_learner_hooks', ()))})  # (a script's)
        with model_given(self._given_model()):  # (a recurrent model given in Python: checked as a recurrent config)
            policy_class(cfg).check_run_config(cfg)  # (what the policy refuses needs no env: said before one is built)
        check_env_at_start(cfg, self.warn)  # an env instance of its own, before anything is seeded
        set_global_seed(cfg.seed)
        set_torch_threads(cfg.policy.learn.torch_threads)
        #: model weights a new run starts from (``init_from``); None when resuming (the checkpoint decides)
        self.init_weights: Optional[Dict[str, Any]] = None
        init_from = None
        if cfg.get('init_from') and not resume:
            init_from, self.init_weights = initial_weights(cfg.init_from)
            # the run's config.py/config.json name those weights wherever they are run from (not from here only)
            cfg.init_from = os.path.abspath(os.fspath(cfg.init_from))
        made: Optional[NewRunFolder] = None
        try:
            try:
                self._build()
            except CheckpointError as exc:  # the weights to start from do not fit this config's model
                if init_from is None:
                    raise
                raise CheckpointError(f"init_from {init_from}: {exc}{_other_policy(init_from, cfg)}") from exc
            self.learner.hooks += named['policy.learn.learner.hooks']  # after the pipeline's own
            # its warnings go where the run's go (above the progress line); a data-parallel rank > 0 draws the same
            # kind of batches as rank 0, which says it once
            self.learner.warn = self.warn if self.writes else (lambda text: None)
            if resume:
                if self.writes:  # (the hooks' after_load gets the run's folder, as every hook method does)
                    self.learner.exp_dir = self.exp_dir
                self.restore(os.path.join(self.exp_dir, 'ckpt', 'ckpt_latest.pth'))
                self._check_restored_buffer(config_changes)
            self.policy.check_finite('the start of the run' if not resume else 'the checkpoint to resume')
            #: a resume whose budget is spent already: it trains nothing and writes nothing (``drive`` returns)
            self.spent_on_resume = bool(resume) and self._budget_spent()
            if self.spent_on_resume:
                if self.writes:  # (a folder another process trains in is refused, as a resume that trains is)
                    self.lock = RunLock(self.exp_dir, reads_only=True)  # (the folder may be read-only)
                    self._say_if_spent()
                return
            if not self.writes:  # a data-parallel rank > 0: rank 0 owns the folder; the first checkpoint is collective
                self.logger = RunLogger([])
                self.evals.tb_logger = self.log_hook.tb_logger = self.logger
                self._hooks_before_run(None)  # (as learner.exp_dir is None here; its evaluator hooks never run)
                if not resume:
                    self.learner.save_checkpoint('ckpt_latest.pth')
                return
            if not resume:
                made = NewRunFolder(self.exp_dir)
            self.lock = RunLock(self.exp_dir)
            for note in self.resume_notes:  # (once the folder is its: a resume refused there says only why)
                self.progress.message(note)
            self.learner.exp_dir = self.exp_dir
            changes = read_run_record(self.exp_dir)['changes'] if resume else []
            if config_changes:
                changes.append({'train_iter': int(self.learner.train_iter), 'env_step': int(self.env_step),
                                'keys': list(config_changes)})
            save_run_config(cfg, self.exp_dir, self.mode, changes, self._model_given_name())
            self.logger = open_loggers(cfg, self.exp_dir, resume)
            self.evals.tb_logger = self.log_hook.tb_logger = self.logger
            self._opened()
            self._hooks_before_run(self.exp_dir)
            if resume:
                self.progress.message(f"[acframe] resumed {self.exp_dir} at env step {self.env_step}, "
                                      f"train iter {self.learner.train_iter}")
            else:  # resumable from its first moments
                if init_from is not None:
                    self.progress.message(f"[acframe] starting from the model weights of {init_from} "
                                          f"(optimizer, counters and envs fresh)")
                self.learner.save_checkpoint('ckpt_latest.pth')
        except BaseException:
            self._close_taking_back(made)  # a new run that failed to start leaves nothing behind
            raise
        self.new_folder = made

    def _hooks_before_run(self, exp_dir: Optional[str]) -> None:
        """Every hook's ``before_run`` with the run's folder; on a data-parallel rank > 0 (``exp_dir`` None: it owns
        none) its learner and collector hooks', which run there (its evaluator hooks run on rank 0 alone)."""
        evaluators = self.evaluator_hooks if exp_dir is not None else []
        for hook in [*self.learner.hooks, *self.collector_hooks, *evaluators]:
            if callable(getattr(hook, 'before_run', None)):  # (a script's duck-typed hook may have none)
                self.learner.call_hook(hook, 'before_run', exp_dir)

    def _close_taking_back(self, made: Optional[NewRunFolder]) -> None:
        """``close()``, and remove what a new run's start wrote (``made``; None: nothing) while its lock is held.
        Called while an error propagates: what these raise (a logger's flush on a full disk) must not replace it."""
        lock, self.lock = self.lock, None
        try:
            with contextlib.suppress(Exception):
                self.close()
            if made is not None and lock is not None:
                with contextlib.suppress(OSError):
                    made.remove()
        finally:
            if lock is not None:
                lock.release()

    def _budget_spent(self) -> bool:
        """``max_env_step`` or ``max_train_iter`` is reached."""
        return self.env_step >= self.cfg.max_env_step or self.learner.train_iter >= self.cfg.max_train_iter

    def _say_if_spent(self) -> None:
        """A resumed run whose budget is spent already trains on nothing: say which flag gives it more."""
        cfg = self.cfg
        if self.env_step >= cfg.max_env_step:
            self.warn(f"[acframe] the budget is spent already (env step {self.env_step} >= max_env_step "
                      f"{cfg.max_env_step}): nothing to train; give it a larger max_env_step to go on (--max-env-step N)")
        elif self.learner.train_iter >= cfg.max_train_iter:
            self.warn(f"[acframe] the budget is spent already (train iter {self.learner.train_iter} >= max_train_iter "
                      f"{cfg.max_train_iter}): nothing to train; give it a larger max_train_iter to go on (--max-train-iter N)")

    def _opened(self) -> None:
        """Called once the folder is locked and the loggers open."""

    def warn(self, text: str) -> None:
        """A warning on the console, also with the progress line off."""
        if self.progress.enabled:
            self.progress.message(text)
        else:
            print(text, file=sys.stderr, flush=True)

    # ---- checkpoint state --------------------------------------------------------------------------
    def state_provider(self) -> Dict[str, Any]:
        """Everything a checkpoint holds besides the learner's own state (plain data only)."""
        save_buffer = self.buffer is not None and self._saves_buffer()
        return {
            'mode': self.mode,  # the pipeline that wrote it (a resume is checked against it, whatever config.json says)
            'env_step': int(self.env_step),
            'evaluator': self.evals.state_dict(),
            **buffer_checkpoint(self.buffer, save_buffer),
            'rng': capture_rng_states(),
            'wall_s': self.wall_s(),
            'recent_returns': list(self.recent_returns),
            'log_window': self.log_hook.state_dict(),  # the logged means of a window cut by a resume stay the same
            'skipped_updates': self._skipped_updates(),  # (summed over the run's sittings)
            **self._extra_state(),
        }

    #: keys that change the layout of the unrolls a fixed-length buffer (``fifo`` and its prioritized kin) holds: their
    #: length, IMPALA's ``norm_return`` leaf. (An episodic buffer stores transitions: its window may change.)
    SAMPLE_LAYOUT_KEYS = ('policy.unroll_len', 'policy.learn.reward_norm')

    def _check_restored_buffer(self, config_changes: Sequence[str]) -> None:
        """A resume that changed the layout of a saved fixed-length buffer's samples keeps no saved buffer of the
        old one (its first push would fail mid-run): refused at start, naming the way to drop it."""
        changed = [key for key in config_changes if key in self.SAMPLE_LAYOUT_KEYS]
        buffer = self.buffer
        if changed and buffer is not None and getattr(buffer, 'sample_kind', None) == 'unrolls' and len(buffer):
            raise ConfigError(f"config key '{changed[0]}' changed, but the checkpoint's replay buffer holds "
                              f"{len(buffer)} unrolls of the former layout; resume with "
                              f"policy.other.replay_buffer.save_in_checkpoint=False to start from an empty buffer "
                              f"(its samples are dropped), or keep '{changed[0]}'")

    def _saves_buffer(self) -> bool:
        return bool(self.cfg.policy.other.replay_buffer.get('save_in_checkpoint', False))

    def restore(self, path: str) -> None:
        """Continue from the checkpoint at ``path``; a ``CheckpointError`` naming it when it does not fit."""
        from .data_parallel import DataParallelLearner  # data-parallel: rank 0 reads it, each rank gets its share

        learner = self.learner
        state = learner.group.share_checkpoint(path) if isinstance(learner, DataParallelLearner) else load_checkpoint(path)
        if 'rng' not in state and 'eval_return' in state:  # ckpt_best.pth copied over ckpt_latest.pth
            raise CheckpointError(f"checkpoint '{path}' holds only a policy's weights (a best checkpoint), not a run "
                                  f"to continue; start a new run from those weights with -c CONFIG --init-from "
                                  f"{path} (the config key init_from)")
        if state.get('mode', self.mode) != self.mode:  # the folder's config.json was edited (a run folder is data)
            raise CheckpointError(f"checkpoint '{path}' was written by a -m {state['mode']!s:.40} run, but the run "
                                  f"folder's config.json says -m {self.mode}; a run resumes in the mode it was "
                                  f"started in: restore config.json's \"mode\" to {state['mode']!s:.40}")
        try:
            check_rng_states(state.get('rng'))  # before anything is set
            self.learner.load_checkpoint_state(state)
            self._restore_extra(state)
            if state.get('evaluator'):
                self.evals.load_state_dict(state['evaluator'])
            restore_buffer(self.buffer, state, self._saves_buffer())
            restore_rng_states(state['rng'])
            self.wall_before = float(state.get('wall_s', 0.0))
            self.recent_returns.extend(float(r) for r in state.get('recent_returns', []))
            self.log_hook.load_state_dict(state.get('log_window') or {})
            if int(state.get('skipped_updates', 0) or 0) and getattr(self, 'policy', None) is not None:
                self.policy.skipped_updates = int(state['skipped_updates'])
        except CheckpointError as exc:
            raise CheckpointError(f"checkpoint '{path}': {exc}") from exc
        except PolicyError:  # a user's hook (after_load) raised: it names itself, the checkpoint is not to blame
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as exc:
            # a checkpoint is data someone may have edited: whatever does not fit is one line naming the file
            what = f"its entry {exc.args[0]!r} is missing" if isinstance(exc, KeyError) else \
                f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
            raise CheckpointError(f"checkpoint '{path}' does not fit this run ({what}); resume from a checkpoint "
                                  f"this run wrote") from exc

    # ---- budgets and evaluations -------------------------------------------------------------------
    def budget_left(self) -> bool:
        """True while the budget lasts and no hook asked the run to end (``learner.stop_requested``); every pipeline's
        loop asks once per turn, so it also raises a Ctrl-C or SIGTERM that Python swallowed on its way
        (``acframe.signals.raise_swallowed_interrupt``)."""
        raise_swallowed_interrupt()
        if self._budget_spent():
            self.learner.stops_closed = True  # (the budget ends it: a hook at its final evaluation does not)
            return False
        if not self._schedules_warned:
            self._warn_spent_schedules()
        return self.learner.stop_requested is None

    #: the decay schedules of ``policy.learn`` (gradient steps to 0) and what reaching 0 stops
    SCHEDULES = (('lr_decay_iters', 'the learning rate'), ('clip_ratio_decay_iters', 'the clip ratio'))

    def _warn_spent_schedules(self) -> None:
        """Once: a schedule of ``SCHEDULES`` that has reached 0 with a tenth of the budget or more left (the rest of
        the run learns nothing; a resumed run continues at 0), with the value that would span the whole budget at
        this run's gradient steps per env step. The budget is whichever of ``max_env_step`` and ``max_train_iter``
        ends the run first at that rate. Schedules count gradient steps, not the budget (the RL Zoo's ``lin_``
        schedules scale with it)."""
        learn, cfg, step = self.cfg.policy.learn, self.cfg, self.learner.train_iter
        spent = [(key, int(learn[key]), what) for key, what in self.SCHEDULES
                 if isinstance(learn.get(key), int) and 0 < learn[key] <= step]
        if not spent or not self.env_step:
            return
        per_env_step = step / self.env_step
        env_left, iter_left = cfg.max_env_step - self.env_step, cfg.max_train_iter - step
        by_iters = iter_left < per_env_step * env_left  # (max_train_iter ends the run first at this rate)
        if (iter_left < 0.1 * cfg.max_train_iter) if by_iters else (env_left < 0.1 * cfg.max_env_step):
            return
        self._schedules_warned = True
        if not self.writes:  # (a data-parallel rank > 0: rank 0 says it)
            return
        keys = ' and '.join(f"policy.learn.{key}={n}" for key, n, _ in spent)
        whats = ' and '.join(what for _, _, what in spent)
        whole = (f" (max_train_iter={cfg.max_train_iter:,})" if by_iters else
                 f" (about {round(per_env_step * cfg.max_env_step):,} for max_env_step={cfg.max_env_step:,} at this "
                 f"run's {per_env_step:.3g} gradient steps per env step)")
        left = f"{iter_left:,} train iters" if by_iters else f"{env_left:,} env steps"
        self.warn(f"acframe: warning: {keys} took {whats} to 0 by train iter {step:,} (env step {self.env_step:,}), "
                  f"with {left} of the budget left: the rest of the run learns nothing; set the schedule to the "
                  f"gradient steps of the whole budget{whole} (a --resume takes it with --accept-config-change)")

    def save_best(self, value: float, weights: Dict[str, torch.Tensor], train_iter: int, env_step: int) -> None:
        """``ckpt_best.pth``: the weights that scored ``value``, the best evaluation so far."""
        self.learner.save_checkpoint('ckpt_best.pth', {'policy': {'model': weights}, 'train_iter': int(train_iter),
                                                       'env_step': int(env_step), 'eval_return': value})

    def collected(self, env_steps: int, returns: Sequence[float], lengths: Sequence[int]) -> None:
        """A collection (``env_steps`` steps over its envs, the finished episodes' returns and lengths) for the
        collector hooks; called once ``env_step`` counts it."""
        if not self.collector_hooks:
            return
        result = {'env_step': int(self.env_step), 'env_steps': int(env_steps), 'train_iter': int(self.learner.train_iter),
                  'episode_returns': [float(r) for r in returns], 'episode_lengths': [int(n) for n in lengths]}
        for hook in self.collector_hooks:
            self.learner.call_hook(hook, 'after_collect', result)

    def announce_eval(self, train_iter: int, env_step: int, mean: float, std: float,
                      confirm: Optional[Dict[str, Any]], solved: bool, returns: Sequence[float] = (),
                      lengths: Sequence[int] = ()) -> None:
        """Print an evaluation (and its confirmation run) and hand it to the learner and evaluator hooks (with its
        episodes' ``returns`` and ``lengths``); ``solved`` ends the run."""
        self.progress.message(
            f"[eval] env_step {env_step} iter {train_iter}: return {mean:.2f} ± {std:.2f} "
            f"(best {self.evals.best_return:.2f}, stop {self.cfg.env.stop_value})")
        if confirm is not None:
            verdict = 'solved' if confirm['solved'] else 'not confirmed, training on'
            self.progress.message(f"[eval] confirmation on {confirm['episodes']} fresh episodes: return {confirm['mean']:.2f} "
                                  f"± {confirm['std']:.2f} (min {confirm['min']:.2f}, max {confirm['max']:.2f}) -> {verdict}")
        if solved:
            self.solved = True
            self.learner.stops_closed = True  # (solved ends it: a hook's request now is not what did)
        score = eval_score(mean, len(returns), confirm) if len(returns) else mean
        self.learner.after_eval(train_iter, env_step, mean, self.evals.best_return, solved, score)
        if self.evaluator_hooks:
            result = {'train_iter': int(train_iter), 'env_step': int(env_step), 'return_mean': float(mean),
                      'return_std': float(std), 'returns': [float(r) for r in returns], 'lengths': [int(n) for n in lengths],
                      'best_return': float(self.evals.best_return), 'solved': bool(solved)}
            for hook in self.evaluator_hooks:
                self.learner.call_hook(hook, 'after_evaluate', result)

    # ---- progress ----------------------------------------------------------------------------------
    def wall_s(self) -> float:
        """Seconds this run has trained, over every resume."""
        return self.wall_before + time.perf_counter() - self.start

    def progress_tail(self) -> str:
        """The end of the progress line every pipeline shows: returns and the budget left."""
        recent = f"{np.mean(self.recent_returns):.1f}" if self.recent_returns else '-'
        last_eval = f"{self.evals.last_return:.1f}" if self.evals.last_return is not None else '-'
        return f"train return {recent} | eval return {last_eval} | budget left {self.budget_left_text()}"

    def budget_left_text(self) -> str:
        """What is left of the budget that is nearer its end: env steps (``max_env_step``) or gradient steps
        (``max_train_iter``, e.g. ``--max-train-iter 40``), in words."""
        cfg, iters = self.cfg, int(self.learner.train_iter)
        steps_left, iters_left = max(0, cfg.max_env_step - self.env_step), max(0, cfg.max_train_iter - iters)
        if iters * cfg.max_env_step > self.env_step * cfg.max_train_iter:  # (a larger share of max_train_iter used)
            return f"{iters_left} iters"
        return f"{steps_left} steps"

    # ---- the end -----------------------------------------------------------------------------------
    def drive(self, loop: Callable[[Any], None]) -> Dict[str, Any]:
        """Run ``loop(self)``, then finish: final checkpoint and ``summary.json``; returns the summary.

        Ctrl-C and SIGTERM also finish the run (so ``--resume`` can continue it), then re-raise
        ``KeyboardInterrupt`` (``acframe.signals.Terminated`` for SIGTERM). Any other error stops the workers,
        closes the run and propagates.
        """
        if self.spent_on_resume:  # nothing to train: the folder stays as its last sitting left it
            try:
                self._stop_workers()  # (what was built: a parallel run's backend, its Ray connection)
            finally:
                self.close()
            self.summary = self._last_summary()  # (the data-parallel pipelines read it here)
            return self.summary
        interrupt: Optional[KeyboardInterrupt] = None
        with sigterm_as_interrupt():
            try:
                loop(self)
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (``Terminated``)
                exc = as_raised(exc)  # a SIGTERM inside Ray's ray.get reaches here as a plain KeyboardInterrupt
                ignore_further_interrupts()  # a second Ctrl-C must not cut the final checkpoint short
                interrupt_handled()
                interrupt = exc
                self.interrupted = True
                what = describe_interrupt(exc)
                self.progress.message(f'[acframe] {what}: {self._stopping_note()}writing the final checkpoint and summary '
                                      f'(a further Ctrl-C or SIGTERM is ignored until they are written; kill -KILL '
                                      f'{os.getpid()} ends the process at once, without them)')
            except BaseException as exc:
                error: BaseException = self._plugin_error(exc) or exc
                # (a plugin that breaks its contract before the first gradient step, no checkpoint written after the
                # start's: its folder holds nothing to resume; the same command runs again once it is fixed)
                learner = getattr(self, 'learner', None)
                untouched = self._untouched() or (isinstance(error, PolicyError) and self.new_folder is not None
                                                  and learner is not None and learner.train_iter == 0
                                                  and learner.saves.get('ckpt_latest.pth', 0) <= 1)
                try:
                    self._stop_workers()
                    if not untouched:
                        error = self._checkpoint_before_env_failure(error)
                finally:  # workers that failed to start, or a new run that failed before it took a step (a user's
                    # policy that breaks its contract at its first eval or collection): it writes nothing
                    self._close_taking_back(self.new_folder if not self.workers_started or untouched else None)
                if untouched and self.workers_started and (isinstance(error, EnvError)
                                                           or getattr(error, 'learner_sound', False)):
                    error = self._said_removed(error)  # (an env, or an async worker, that failed before any update)
                if error is exc:
                    raise
                raise error from exc
            try:
                self._stop_workers()
            except BaseException:
                self.close()
                raise
            self.summary = self.finish()
        if interrupt is None and self.writes:  # another process of the run (a data-parallel rank) was interrupted
            interrupt = self.other_interrupt
        if interrupt is not None:
            raise interrupt
        return self.summary

    def _said_removed(self, error: BaseException) -> BaseException:
        """``error`` (one of acframe's) saying that the new run's folder was removed: the run had started (its first
        evaluation shown) and trained nothing, so it left nothing a resume could use."""
        first, _, rest = str(error).partition('\n')
        note = (f"{getattr(error, 'plain', first)} (the run had trained nothing, so its new folder {self.exp_dir} was "
                f"removed: the same command starts it again)")
        try:
            said = type(error)(note + (f"\n{rest}" if rest else ''))
        except Exception:  # noqa: BLE001 - an error class that cannot be built from a message: said as it was
            return error
        said.plain = note  # (its own resume hint is gone: there is nothing to resume)
        return said

    def _plugin_error(self, exc: BaseException) -> Optional[PolicyError]:
        """What a user's replay buffer raised in one of its own methods in the run's loop (``sample``, ``push``), a
        user's model in its own (``forward`` in a collection or an evaluation: a layer that does not fit the
        observation, say), or a user's policy in its own (``_forward_collect``, ``_forward_eval``), as one line
        naming it and its file and line (``errors.user_code_error``; the learn mode and the hooks are named where
        they are called); None for anything else (an acframe error, or another's: its traceback is the report)."""
        if isinstance(exc, AcframeError) or not isinstance(exc, Exception):
            return None
        buffer = getattr(self, 'buffer', None)
        if buffer is not None and _raised_in_own_method(exc, type(buffer)):
            error = user_code_error(exc, f"replay buffer '{self.cfg.policy.other.replay_buffer.type}'")
            if error is not None and not self._saves_buffer():  # (the checkpoint holds nothing of a buffer that
                error.learner_sound = True  # broke halfway: the final one is written before this is said)
            return error
        policy = getattr(self, 'policy', None)
        model = getattr(policy, '_model', None)
        if model is not None and _raised_in_own_method(exc, type(model)):
            return user_code_error(exc, f"the model ({type(model).__module__}.{type(model).__qualname__})")
        if policy is not None and _raised_in_own_method(exc, type(policy)):  # (a collect or eval forward of one's own;
            error = user_code_error(exc, f"policy '{self.cfg.policy.type}'")  # its learn mode names itself)
            if error is not None and isinstance(exc, TypeError) and 'dict' in str(exc):  # (the model given a dict)
                error = PolicyError(f"{error}; a Dict observation (an env's action mask too) reaches a policy's "
                                    f"modes as a dict: self._compute_actor(obs) and self._evaluate(obs) take it (they "
                                    f"split the mask off and mask the logits), the model alone does not "
                                    f"(docs/custom_policy.md)")
            return error
        return None

    def _untouched(self) -> bool:
        """A new run that has neither trained nor collected a step: its folder holds nothing a resume could use."""
        learner = getattr(self, 'learner', None)
        return (self.new_folder is not None and learner is not None and learner.train_iter == 0
                and self.env_step == 0)

    def _checkpoint_before_env_failure(self, exc: BaseException) -> BaseException:
        """An env ended the run (it raised, gave NaN/inf, or the step watchdog ``env.step_timeout_s`` found it
        stuck; a parallel actor failed past its restarts; a user's hook raised between the learner's steps, or a
        user's buffer that the checkpoint does not hold): the learner is sound, so write the final checkpoint
        first (``--resume`` then loses nothing: a checkpoint taken mid-collection resets the envs) and say so in
        the error; ``exc`` itself when the error is another, or nothing can be written (a data-parallel rank > 0,
        a collective that could hang, a full disk: the previous checkpoint stays)."""
        sound = isinstance(exc, EnvError) or getattr(exc, 'learner_sound', False)  # (an async worker's death too)
        if not sound or not self.writes or self.logger is None or not self.workers_started:
            return exc
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return exc
        try:
            self.learner.save_checkpoint('ckpt_latest.pth')
        except Exception:
            return exc
        first, _, rest = str(exc).partition('\n')
        first = getattr(exc, 'plain', first)  # (an error's own resume hint gives way to the note's)
        try:  # the run's record so far, as an interrupted run has one (what fails here must not hide the error)
            atomic_write_json(os.path.join(self.exp_dir, 'summary.json'),
                              {**self._summary(self.wall_s()), 'stopped_by': first})
            write_run_curves(self.exp_dir, lambda text: None)
        except Exception:
            pass
        note = (f"{first}; the final checkpoint was written first (env step {self.env_step}, train iter "
                f"{self.learner.train_iter}): {resume_command(self.exp_dir, self.cfg)} continues from there once the cause "
                f"is fixed")
        return type(exc)(note + (f"\n{rest}" if rest else ''))

    def _stopping_note(self) -> str:
        return ''

    def _summary(self, wall: float) -> Dict[str, Any]:
        """summary.json's record of the run so far (``wall``: its training seconds)."""
        evals = self.evals
        return {
            'solved': bool(self.solved),
            'interrupted': bool(self.interrupted),
            'env_steps': int(self.env_step),
            'train_iters': int(self.learner.train_iter),
            'learner_num': int(self.learner.learner_num),  # data-parallel learners (parallel.learner_num)
            'wall_s': round(wall, 3),
            'best_eval_return': None if evals.best_return == -float('inf') else evals.best_return,
            'last_eval_return': evals.last_return,
            'stop_value': self.cfg.env.stop_value,
            'n_confirm_episode': int(self.cfg.env.n_confirm_episode),
            'confirmations': [dict(c) for c in evals.confirmations],
            'eval_deterministic': bool(self.cfg.policy.eval.deterministic),
            'seed': int(self.cfg.seed),
            'policy': self.cfg.policy.type,
            'env_type': self.cfg.env.get('type', 'gym'),  # the registered factory ('gym': gymnasium's, by env_id)
            'env_id': recorded_env_id(self.cfg.env),  # None: a registered factory other than 'gym', not given one
            'exp_dir': os.path.abspath(self.exp_dir),
            'env_steps_per_s': round(self.env_step / wall, 1) if wall > 0 else None,
            **({'stopped_by': self.learner.stop_requested} if self.learner.stop_requested else {}),
            # gradient steps dropped for a non-finite loss or gradient (policy.learn.on_nonfinite='skip_update'): they
            # count in train_iters (the learner's steps), not in what the model learned
            **({'skipped_updates': self._skipped_updates()} if self._skipped_updates() else {}),
            **self._extra_summary(wall),
        }

    def finish(self, interrupted: bool = False) -> Dict[str, Any]:
        """Final checkpoint, summary.json, close everything; returns the summary (``interrupted``: by the user)."""
        self.interrupted = self.interrupted or interrupted
        try:
            self.learner.save_checkpoint('ckpt_latest.pth')
        except BaseException:
            self.close()
            raise
        wall = self.wall_s()
        if not self.writes:  # a data-parallel rank > 0
            self.close()
            return {}
        summary = self._summary(wall)
        try:
            atomic_write_json(os.path.join(self.exp_dir, 'summary.json'), summary)
            self._final_report()
        finally:
            self.close()
        write_run_curves(self.exp_dir, self.progress.message)
        self.progress.result(self._result_line(summary))
        if summary['train_iters'] == 0 and summary['env_steps'] > 0 and not self.interrupted:
            self.warn(self._no_update_warning(summary['env_steps']))
        return summary

    def _last_summary(self) -> Dict[str, Any]:
        """The folder's ``summary.json`` (read as data), else the summary of the state restored (not written)."""
        from ..runs import read_summary

        return (read_summary(self.exp_dir) or self._summary(self.wall_s())) if self.writes else {}

    def _no_update_warning(self, env_steps: int) -> str:
        """What a run that ended by its budget without one gradient step says (it learned nothing)."""
        if self.buffer is not None:
            name = self.cfg.policy.other.replay_buffer.type
            why = (f"its replay buffer '{name}' (len() {len(self.buffer)}) gave no batch (sample() returned "
                   f"None every time); check the buffer's sample() or its sizes (policy.other.replay_buffer, "
                   f"docs/replay.md), or give the run a larger budget")
        else:
            why = "no rollout reached the learner; give the run a larger budget"
        return f"acframe: warning: the run made no gradient step in {env_steps} env steps, so it learned nothing: {why}"

    def close(self) -> None:
        """Close the progress line, the loggers and what ``_build`` opened; release the folder's lock."""
        self.progress.close()
        if self.logger is not None:
            self.logger.close()
            self.logger = None
        try:
            self._close_workers()
        finally:
            if self.lock is not None:
                self.lock.release()
