"""A tuning study in a folder: Optuna's SQLite storage, the study's settings, and what it found.

``STUDY_DIR`` holds:

* ``study.db`` — Optuna's SQLite storage (data: trials, params, intermediate values; nothing is unpickled);
* ``tune.json`` — the settings (compiled base config, search space, budget, seeds, pruner, trial target), written
  before the first trial and read back by ``--resume`` as data;
* ``trials/trial_<nnnn>_seed<s>/`` (the trial number zero-padded to four digits) — the run folder of every trained run (``acframe -m plot`` draws them);
* ``trials.csv`` — one row per trial: state, objective, per-seed values, params, env steps, error;
* ``best_config.py`` / ``best_config.json`` — the base config with the best trial's values, ready for
  ``acframe -c best_config.py`` (its budget is the config's own, not the tuning budget).

The three outputs are rewritten after every trial, so an interrupted study still shows what it has.

Trial count: ``trials`` is the study's target of finished trials (complete, pruned or failed); ``--resume`` runs
the trials still missing, numbering on. A trial stopped by Ctrl-C/SIGTERM (or a killed process) does not count:
its values are queued again and run first on resume.
"""
from __future__ import annotations

import csv
import io
import json
import os
import time
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from ..config.run_folder import create_config_of, decode, encode, py_literal
from ..entry.run_folder import NewRunFolder, RunLock, check_folder_is_data
from ..errors import AcframeError, ConfigError
from ..signals import describe_interrupt, interrupts_deferred, raise_swallowed_interrupt, sigterm_as_interrupt
from ..utils import atomic_write_text
from .space import Space, baseline_values, check_space, decode_params, fixed_params, normalize_spec, suggest
from .trial import Pruned, trial_config, train_runs

STUDY_DB = 'study.db'
SETTINGS_JSON = 'tune.json'
TRIALS_CSV = 'trials.csv'
#: what a study's start writes in its folder (taken back when the start fails: ``NewRunFolder``)
STUDY_START_NAMES = ('.acframe.lock', SETTINGS_JSON, STUDY_DB, STUDY_DB + '-journal', STUDY_DB + '-wal',
                     STUDY_DB + '-shm', TRIALS_CSV, 'trials')
BEST_PY = 'best_config.py'
BEST_JSON = 'best_config.json'
STUDY_NAME = 'acframe'
FORMAT = 1
PRUNERS = ('median', 'halving', 'none')
#: settings ``--resume`` takes from ``tune.json`` (a different value given with it is refused)
FIXED_SETTINGS = ('space', 'budget', 'seeds', 'pruner', 'startup_trials', 'warmup_reports', 'reports', 'sampler_seed')


def import_optuna() -> Any:
    try:
        import optuna
    except ImportError as exc:
        raise ConfigError("acframe -m tune needs Optuna: pip install 'acframe[tune]' (or pip install optuna)") from exc
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def make_pruner(optuna: Any, settings: Mapping[str, Any]) -> Any:
    """Median: prune a trial whose best intermediate value is below the median of the complete trials at the same step,
    once ``startup_trials`` trials are complete and past ``warmup_reports`` reports. Halving: successive halving
    (reduction factor 3) with its first rung at ``warmup_reports``."""
    kind = settings['pruner']
    if kind == 'median':
        return optuna.pruners.MedianPruner(n_startup_trials=settings['startup_trials'],
                                           n_warmup_steps=settings['warmup_reports'])
    if kind == 'halving':
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, settings['warmup_reports']), reduction_factor=3)
    return optuna.pruners.NopPruner()


def _counts(trial: Any, optuna: Any) -> bool:
    """Finished trials count toward the target; a FAIL without an ``error`` (interrupted, killed) does not."""
    state = trial.state
    TrialState = optuna.trial.TrialState
    return state in (TrialState.COMPLETE, TrialState.PRUNED) or (state == TrialState.FAIL and 'error' in trial.user_attrs)


class Study:
    """A study folder: its settings, its Optuna study, its lock, its outputs."""

    def __init__(self, study_dir: str, settings: Dict[str, Any], resume: bool,
                 echo: Callable[[str], None] = print, first_values: Sequence[Mapping[str, Any]] = (),
                 progress: Optional[Callable[[str], None]] = None) -> None:
        """Open (``resume``) or create the study; a new one queues the base config's own values as trial 0, then
        ``first_values`` (values outside the space's distributions are sampled instead)."""
        self.optuna = import_optuna()
        self.dir = study_dir
        self.settings = settings
        self.echo = echo
        self.resumed = bool(resume)
        self.progress = progress  # one line per evaluation of a running trial
        self.space: Space = settings['space']
        self.base: Dict[str, Any] = settings['base_config']
        made = None if resume else NewRunFolder(study_dir, None, STUDY_START_NAMES, 'study folder',
                                                'study_dir (--study-dir)')
        check_folder_is_data(study_dir, 'study folder')
        self.lock = RunLock(study_dir)
        try:
            if not resume:
                write_settings(study_dir, settings)
            storage = f"sqlite:///{os.path.abspath(os.path.join(study_dir, STUDY_DB))}"
            done = 0
            if resume:
                done = len(self._load_study(storage).trials)
            # seeded by the number of trials already asked: a resumed study does not repeat the first draws
            sampler = self.optuna.samplers.TPESampler(seed=settings['sampler_seed'] + done)
            self.study = self.optuna.create_study(study_name=STUDY_NAME, storage=storage, direction='maximize',
                                                  sampler=sampler, pruner=make_pruner(self.optuna, settings),
                                                  load_if_exists=resume)
            if resume:
                write_settings(study_dir, settings)  # the trial target may have changed
                self._requeue_abandoned()
            else:
                self.study.enqueue_trial(fixed_params(self.space, baseline_values(self.base, self.space)),
                                         user_attrs={'baseline': True})
                for values in first_values:
                    self.study.enqueue_trial(fixed_params(self.space, values))
        except BaseException:
            try:
                if made is not None:  # a new study that failed to start (a full disk, say) leaves nothing behind
                    made.remove()
            finally:
                self.lock.release()
            raise

    def _load_study(self, storage: str) -> Any:
        """The stored study; a ``study.db`` that is not an Optuna SQLite database is one line naming it."""
        path = os.path.join(self.dir, STUDY_DB)
        check_database(path)
        try:
            return self.optuna.load_study(study_name=STUDY_NAME, storage=storage)
        except Exception as exc:  # optuna/sqlalchemy raise many kinds for a damaged or foreign database
            raise ConfigError(f"{path} is not a readable acframe study ({type(exc).__name__}: "
                              f"{str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ''}); "
                              f"the study folder is damaged") from exc

    # ---- the loop -----------------------------------------------------------------------------------------
    def finished(self) -> int:
        return sum(_counts(t, self.optuna) for t in self.study.get_trials(deepcopy=False))

    def run(self) -> Dict[str, Any]:
        """Run trials until ``settings['trials']`` have finished; returns the study's record (``best_record``).

        Ctrl-C / SIGTERM: the running trial's run writes its final checkpoint, the trial is recorded as interrupted
        (queued again for ``--resume``), the outputs are written, and ``KeyboardInterrupt`` propagates.
        """
        try:
            if self.resumed and self.finished() >= self.settings['trials']:
                self.echo(f"[tune] the study has {self.finished()} finished trials already (--trials "
                          f"{self.settings['trials']}): nothing to run; give --trials above {self.finished()} for more")
            with sigterm_as_interrupt():
                while self.finished() < self.settings['trials']:
                    raise_swallowed_interrupt()  # a Ctrl-C Python swallowed as the last trial ended
                    self._one_trial()
            self.write_outputs()
            return self.best_record()
        finally:
            self.lock.release()

    def _one_trial(self) -> None:
        optuna = self.optuna
        TrialState = optuna.trial.TrialState
        trial = None
        start = time.perf_counter()
        try:
            trial = self.study.ask()
            values = suggest(trial, self.space)
            result = train_runs(trial, self.base, values, self.settings['seeds'], self.settings['budget'],
                                self.settings['reports'], self.dir, self.progress)
        except Pruned as exc:
            trial.set_user_attr('pruned_at', {'seed': exc.seed, 'env_step': exc.env_step})
            trial.set_user_attr('duration_s', round(time.perf_counter() - start, 1))
            self.study.tell(trial, state=TrialState.PRUNED)
            self._written(f"[tune] trial {trial.number} pruned at seed {exc.seed}, env step {exc.env_step} "
                          f"(value {exc.value:.2f}): {_shown(values)}")
            return
        except KeyboardInterrupt as exc:
            self._interrupted(trial, exc)
            raise
        except AcframeError as exc:  # a config the values make invalid, a diverged run (NaN): the trial fails
            if trial is None:
                raise
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            trial.set_user_attr('error', message)
            made = [d for d in trial.user_attrs.get('run_dirs') or [] if os.path.isdir(os.path.join(self.dir, d))]
            trial.set_user_attr('run_dirs', made)  # (a run refused before it started wrote no folder)
            self.study.tell(trial, state=TrialState.FAIL)
            self._written(f"[tune] trial {trial.number} failed: {message}")
            return
        except BaseException as exc:  # a bug: recorded, then raised
            if trial is not None:
                trial.set_user_attr('error', f"{type(exc).__name__}: {exc}"[:500])
                self.study.tell(trial, state=TrialState.FAIL)
                self.write_outputs()
            raise
        try:
            with interrupts_deferred():  # a Ctrl-C or SIGTERM now waits until the finished trial is recorded
                trial.set_user_attr('duration_s', round(time.perf_counter() - start, 1))
                self.study.tell(trial, result['value'])
                seeds = ', '.join(f"seed {s}: {v:.2f}" for s, v in result['seed_values'].items())
                best = self.study.best_trial
                self._written(f"[tune] trial {trial.number} complete: {result['value']:.2f} ({seeds}): "
                              f"{_shown(values)} | best trial {best.number}: {best.value:.2f}")
        except KeyboardInterrupt as exc:
            print(f"[tune] {describe_interrupt(exc)}: trial {trial.number} had finished and is recorded; continue "
                  f"with acframe -m tune --resume {self.dir}", flush=True)
            raise

    def _written(self, line: str) -> None:
        self.write_outputs()
        self.echo(f"{line} [{self.finished()}/{self.settings['trials']}]")

    def _interrupted(self, trial: Any, exc: BaseException) -> None:
        """Record the running trial as interrupted and queue its values again; a second signal waits for this."""
        import signal

        what = describe_interrupt(exc)
        from ..signals import TERMINATING

        # a further Ctrl-C or SIGTERM must not cut the bookkeeping short (a trial queued again but left RUNNING would
        # run twice on --resume)
        previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, *TERMINATING)}
        try:
            if trial is not None:
                trial.set_user_attr('interrupted', True)
                if trial.params:
                    self.study.enqueue_trial(trial.params, user_attrs={'retry_of': trial.number})
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
            self.write_outputs()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        number = f"trial {trial.number}" if trial is not None else 'the study'
        print(f"[tune] {what}: {number} recorded as interrupted (it runs again first); "
                  f"continue with acframe -m tune --resume {self.dir}", flush=True)

    def _requeue_abandoned(self) -> None:
        """Trials left RUNNING by a killed process are marked failed (not counted) and their values queued again."""
        for trial in self.study.get_trials(deepcopy=False, states=(self.optuna.trial.TrialState.RUNNING,)):
            if trial.params:
                self.study.enqueue_trial(trial.params, user_attrs={'retry_of': trial.number})
            self.study.tell(trial.number, state=self.optuna.trial.TrialState.FAIL)
            self.echo(f"[tune] trial {trial.number} was left running by a stopped process: queued again")

    # ---- outputs ------------------------------------------------------------------------------------------
    def best_record(self) -> Dict[str, Any]:
        trials = self.study.get_trials(deepcopy=False)
        TrialState = self.optuna.trial.TrialState
        counts = {name: sum(t.state == state for t in trials)
                  for name, state in (('complete', TrialState.COMPLETE), ('pruned', TrialState.PRUNED))}
        counts['failed'] = sum(t.state == TrialState.FAIL and 'error' in t.user_attrs for t in trials)
        record: Dict[str, Any] = {'study_dir': self.dir, 'trials': counts, 'best': None}
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        if complete:
            best = self.study.best_trial
            record['best'] = {'trial': best.number, 'value': best.value,
                              'values': decode_params(self.space, best.params)}
        return record

    def write_outputs(self) -> None:
        """``trials.csv`` always; ``best_config.py`` and ``best_config.json`` once a trial is complete."""
        trials = self.study.get_trials(deepcopy=False)
        atomic_write_text(os.path.join(self.dir, TRIALS_CSV), trials_csv(trials, self.space, self.settings['seeds']))
        complete = [t for t in trials if t.state == self.optuna.trial.TrialState.COMPLETE]
        if complete:
            write_best_config(self.dir, self.settings, self.study.best_trial)


def _shown(values: Mapping[str, Any]) -> str:
    return ' '.join(f"{key.rsplit('.', 1)[-1]}={_fmt(v)}" for key, v in values.items())


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def trials_csv(trials: Sequence[Any], space: Space, seeds: Sequence[int]) -> str:
    """One row per trial: number, state, value, per-seed values, the sampled values, env steps, time, error, runs."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(['trial', 'state', 'value'] + [f"value_seed{s}" for s in seeds] + list(space)
                    + ['env_steps', 'duration_s', 'pruned_at_env_step', 'error', 'run_dirs'])
    for t in trials:
        attrs = t.user_attrs
        seed_values = attrs.get('seed_values', {})
        # a queued (WAITING) trial has no params yet: the values it will run with are optuna's fixed_params
        values = decode_params(space, t.params or t.system_attrs.get('fixed_params', {}))
        state = 'INTERRUPTED' if t.state.name == 'FAIL' and 'error' not in attrs else t.state.name
        writer.writerow([t.number, state, '' if t.value is None else t.value]
                        + [seed_values.get(str(s), '') for s in seeds]
                        + [_fmt(values[k]) if k in values else '' for k in space]
                        + [attrs.get('env_steps', ''), attrs.get('duration_s', ''),
                           (attrs.get('pruned_at') or {}).get('env_step', ''), attrs.get('error', ''),
                           ';'.join(attrs.get('run_dirs', []))])
    return out.getvalue()


def best_config(settings: Mapping[str, Any], values: Mapping[str, Any]) -> Dict[str, Any]:
    """The base config with ``values``, its own budget and seed, ``exp_name`` suffixed ``_tuned`` (a plain dict)."""
    from ..config.compile import to_plain

    base = settings['base_config']
    cfg = to_plain(trial_config(base, values, base['max_env_step'], base['seed']))
    cfg['exp_name'] = f"{base['exp_name']}_tuned"
    return cfg


def write_best_config(study_dir: str, settings: Mapping[str, Any], trial: Any) -> None:
    space = settings['space']
    values = decode_params(space, trial.params)
    cfg = best_config(settings, values)
    seeds = settings['seeds']
    seed_values = trial.user_attrs.get('seed_values', {})
    tuned = '\n'.join(f"#   {key} = {values[key]!r}" for key in values)
    header = (f"# Found by acframe -m tune (study {os.path.abspath(study_dir)}): trial {trial.number}, mean best evaluation\n"
              f"# return {trial.value:.2f} over seed(s) {', '.join(map(str, seeds))} at {settings['budget']} env steps per run "
              f"(the tuning budget;\n# max_env_step below is the base config's own). The tuned keys:\n{tuned}\n"
              f"# Run it with: acframe -c best_config.py\n")
    text = (f"{header}main_config = {py_literal(cfg)}\n\ncreate_config = {py_literal(create_config_of(cfg))}\n")
    atomic_write_text(os.path.join(study_dir, BEST_PY), text)
    record = {'trial': trial.number, 'value': trial.value, 'seed_values': seed_values, 'values': values,
              'budget': settings['budget'], 'seeds': list(seeds), 'config': encode(cfg)}
    atomic_write_text(os.path.join(study_dir, BEST_JSON), json.dumps(record, indent=1, allow_nan=False) + '\n')


# ---- settings ---------------------------------------------------------------------------------------------
def write_settings(study_dir: str, settings: Mapping[str, Any]) -> None:
    data = dict(settings)
    data['base_config'] = encode(settings['base_config'])
    atomic_write_text(os.path.join(study_dir, SETTINGS_JSON),
                      json.dumps({'format': FORMAT, **data}, indent=1, allow_nan=False) + '\n')


#: the type of each setting in ``tune.json`` (checked on --resume: the file is data someone may have edited)
SETTING_TYPES = {'budget': int, 'seeds': list, 'pruner': str, 'startup_trials': int, 'warmup_reports': int,
                 'reports': int, 'sampler_seed': int, 'trials': int}


def read_settings(study_dir: str) -> Dict[str, Any]:
    """``tune.json`` of a study folder, decoded (data, never executed) and its settings' types checked."""
    from ..config.run_folder import read_data_json

    path = os.path.join(study_dir, SETTINGS_JSON)
    if not os.path.lexists(path) or not os.path.lexists(os.path.join(study_dir, STUDY_DB)):
        raise ConfigError(f"--resume {study_dir}: no {SETTINGS_JSON} and {STUDY_DB} there; pass the --study-dir of an "
                          f"earlier acframe -m tune")
    data = read_data_json(path, 'the study folder is damaged')
    check_database(os.path.join(study_dir, STUDY_DB))
    if not isinstance(data, dict) or data.get('format') != FORMAT or not isinstance(data.get('base_config'), dict):
        raise ConfigError(f"{path} is not an acframe tuning record (format {FORMAT}); the study folder is damaged")
    data.pop('format')
    missing = [key for key in FIXED_SETTINGS + ('trials',) if key not in data]
    if missing or not isinstance(data['space'], dict):
        raise ConfigError(f"{path} lacks {', '.join(missing) or 'a space object'}; the study folder is damaged")
    for key, kind in SETTING_TYPES.items():
        value = data[key]
        if not isinstance(value, kind) or isinstance(value, bool) or \
                (key == 'seeds' and not all(isinstance(s, int) and not isinstance(s, bool) for s in value)):
            raise ConfigError(f"{path}: '{key}' = {str(value)[:60]} is not {'a list of whole numbers' if kind is list else 'a ' + kind.__name__}; "
                              f"the study folder is damaged")
    data['base_config'] = decode(data['base_config'])
    data['space'] = {key: normalize_spec(key, spec, path) for key, spec in data['space'].items()}
    return data


def check_database(path: str) -> None:
    """``ConfigError`` unless ``path`` is a plain file that starts as an SQLite database does."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror or exc}); the study folder is damaged") from exc
    with os.fdopen(fd, 'rb') as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode) or f.read(16) != b'SQLite format 3\x00':
            raise ConfigError(f"{path} is not an SQLite database; the study folder is damaged")


def holds_study(study_dir: str) -> bool:
    return any(os.path.exists(os.path.join(study_dir, name)) for name in (STUDY_DB, SETTINGS_JSON))


def check_settings(settings: Mapping[str, Any]) -> None:
    """Values of the tuner's own settings (the config and space are checked by ``compile_config``/``check_space``)."""
    if not isinstance(settings['trials'], int) or settings['trials'] < 1:
        raise ConfigError(f"--trials {settings['trials']} must be a whole number >= 1")
    if settings['budget'] < 1:
        raise ConfigError(f"--budget {settings['budget']} must be >= 1 env step per run")
    if not settings['seeds']:
        raise ConfigError("--seeds is empty; give one or more seeds, e.g. --seeds 0,1")
    if len(set(settings['seeds'])) != len(settings['seeds']):
        raise ConfigError(f"--seeds {','.join(map(str, settings['seeds']))} repeats a seed; give each seed once")
    if settings['pruner'] not in PRUNERS:
        raise ConfigError(f"--pruner {settings['pruner']!r}: choose one of {', '.join(PRUNERS)}")
    if settings['reports'] < 1:
        raise ConfigError(f"reports {settings['reports']} must be >= 1 per run")
    if settings['startup_trials'] < 0:
        raise ConfigError(f"--startup-trials {settings['startup_trials']} must be >= 0")
    if settings['warmup_reports'] < 0:
        raise ConfigError(f"warmup_reports {settings['warmup_reports']} must be >= 0")
    if settings['budget'] < settings['reports']:
        raise ConfigError(f"--budget {settings['budget']} is below the {settings['reports']} reports per run; "
                          f"give at least {settings['reports']} env steps")


def check_trial_configs(settings: Mapping[str, Any], source: str = 'the search space') -> None:
    """The space against the base config, then the base config at the trial budget with every seed, and what a run
    of it builds before its first step (``check_base_builds``)."""
    check_space(settings['base_config'], settings['space'], source)
    for seed in settings['seeds']:
        cfg = trial_config(settings['base_config'], {}, settings['budget'], seed)
    check_base_builds(cfg)


def check_base_builds(cfg: Any) -> None:
    """Build one env of ``cfg`` and its policy, as a trial's run does first: a config no trial can start (an env id
    that does not exist, policy.cuda on a machine without CUDA) is its one-line error before the study folder is
    made (it was every trial's failure, the study folder left behind)."""
    from ..envs import make_env_manager
    from ..policy import create_policy

    with make_env_manager(cfg, 'collector', 1, int(cfg.seed)) as probe:
        spaces = (probe.observation_space, probe.action_space)
    create_policy(cfg, *spaces, enable_field=('learn', 'collect', 'eval'))


def best_line(record: Mapping[str, Any]) -> str:
    counts = record['trials']
    done = f"{counts['complete']} complete, {counts['pruned']} pruned, {counts['failed']} failed"
    if record['best'] is None:
        return f"[tune] no complete trial yet ({done}) -> {record['study_dir']}"
    best = record['best']
    return (f"[tune] best trial {best['trial']}: {best['value']:.2f} ({done}) -> "
            f"{os.path.join(record['study_dir'], BEST_PY)}")

