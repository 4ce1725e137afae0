"""Hyperparameter search with Optuna (extra ``tune``): ``acframe -m tune -c CONFIG --trials N`` or ``tune(...)``.

Each trial trains the config with values drawn from a search space (``acframe.tune.space``) on one or more seeds,
reports its evaluations to Optuna so a pruner stops bad trials early, and scores the mean best evaluation
return over its seeds. The study lives in a folder (``acframe.tune.study``): SQLite storage, settings, run
folders, ``trials.csv`` and the best config as a ready-to-run config file. See docs/tuning.md.
"""
from __future__ import annotations

import errno
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import ConfigError

__all__ = ['tune', 'DEFAULTS']

#: the tuner's settings when neither the call nor a resumed study gives them
DEFAULTS = dict(pruner='median', startup_trials=5, warmup_reports=3, reports=10, sampler_seed=0)
_UNSET = object()


def tune(config: Any = None, trials: Optional[int] = None, budget: Optional[int] = None,
         space: Union[None, str, Mapping[str, Any]] = None, study_dir: Optional[str] = None,
         seeds: Optional[Sequence[int]] = None, resume: Optional[str] = None, overrides: Sequence[Any] = (),
         use_default_space: Optional[bool] = None, pruner: Optional[str] = None, startup_trials: Optional[int] = None,
         warmup_reports: Optional[int] = None, reports: Optional[int] = None, sampler_seed: Optional[int] = None,
         first_values: Sequence[Mapping[str, Any]] = (), echo: Optional[Callable[[str], None]] = print,
         progress: Optional[Callable[[str], None]] = None, imports: Sequence[str] = (),
         flag_names: bool = False) -> Dict[str, Any]:
    """Run (or continue) a study; returns ``{'study_dir', 'trials': {complete, pruned, failed}, 'best'}``.

    Args:
        config: a config path / dizoo_configs name or ``(main_config, create_config)``; with ``resume``, optional
            (the study's own config is used; a different one is refused).
        trials: the number of finished trials the study should have (``resume`` runs the missing ones).
        budget: env steps per run (default: the config's ``max_env_step``).
        space: a dict ``{key path: [kind, ...]}`` or a ``.json``/``.py`` space file; merged over the policy's
            default space unless ``use_default_space`` is False (a file may say so itself).
        study_dir: the study folder (default ``./tune_<exp_name>``).
        seeds: the seeds every trial trains on (default: the config's seed); the objective is the mean over them
            of each run's best evaluation return.
        resume: a study folder to continue.
        overrides: ``'key.path=value'`` applied to the config of every trial.
        pruner: 'median' (default), 'halving' or 'none'; ``startup_trials`` complete trials before the median pruner
            prunes, never within a trial's first ``warmup_reports`` of ``reports`` reports per run.
        sampler_seed: the TPE sampler's seed.
        first_values: ``{key path: value}`` sets a new study tries right after trial 0 (the config's own values).
        echo: where the one line per trial goes (None: silent).
        progress: where one line per evaluation of the running trial goes (None: not shown).
        imports: with ``resume``, the modules named for the study's ``import_names`` (``--import``): a study
            folder never decides what is imported.
        flag_names: errors name ``acframe -m tune``'s flags (``--study-dir``) rather than these arguments
            (``study_dir=``); the CLI sets it.
    """
    try:
        return _tune(config, trials, budget, space, study_dir, seeds, resume, overrides, use_default_space, pruner,
                     startup_trials, warmup_reports, reports, sampler_seed, first_values, echo, progress, imports)
    except ConfigError as exc:
        if not flag_names:  # the same error (its class too), in the caller's words
            exc.args = (argument_names(str(exc)),) + exc.args[1:]
        raise


#: acframe -m tune's flags, as tune()'s keyword arguments (a Python caller's errors name these)
FLAG_ARGUMENTS = {'--study-dir': 'study_dir', '--resume': 'resume', '--trials': 'trials', '--budget': 'budget',
                  '--seeds': 'seeds', '--pruner': 'pruner', '--startup-trials': 'startup_trials', '--space': 'space',
                  '--import': 'imports'}
#: whole phrases of the CLI's, as a Python caller writes them
CLI_PHRASES = {'-c CONFIG (e.g. acframe -m tune -c cartpole_a2c.py --trials 20)':
               "config (e.g. tune('cartpole_a2c.py', trials=20))"}


def argument_names(message: str) -> str:
    """``message`` with ``acframe -m tune``'s flags written as ``tune()``'s keyword arguments: ``--resume DIR`` as
    ``resume=DIR``, a flag named alone (``another --study-dir``) as the argument's name."""
    import re

    for phrase, words in CLI_PHRASES.items():
        message = message.replace(phrase, words)
    flags = '|'.join(re.escape(flag) for flag in sorted(FLAG_ARGUMENTS, key=len, reverse=True))
    words = 'is|are|names|of|to|and|or|the|must|with|repeats|as|in|for|it'  # what follows a flag that names
    pattern = re.compile(rf'(?<![\w-])({flags})(?![\w-])( (?=[^\s;,.)])(?!(?:{words})\b))?')  # no value
    return pattern.sub(lambda m: FLAG_ARGUMENTS[m.group(1)] + ('=' if m.group(2) else ''), message)


def _tune(config: Any, trials: Optional[int], budget: Optional[int], space: Union[None, str, Mapping[str, Any]],
          study_dir: Optional[str], seeds: Optional[Sequence[int]], resume: Optional[str], overrides: Sequence[Any],
          use_default_space: Optional[bool], pruner: Optional[str], startup_trials: Optional[int],
          warmup_reports: Optional[int], reports: Optional[int], sampler_seed: Optional[int],
          first_values: Sequence[Mapping[str, Any]], echo: Optional[Callable[[str], None]],
          progress: Optional[Callable[[str], None]], imports: Sequence[str]) -> Dict[str, Any]:
    from ..config.compile import override_list

    overrides = override_list(overrides)  # (a dict, or one string: every use below reads a list)
    from .space import read_space_file
    from .study import STUDY_DB, Study, check_settings, check_trial_configs

    given = dict(pruner=pruner, startup_trials=startup_trials, warmup_reports=warmup_reports, reports=reports,
                 sampler_seed=sampler_seed, budget=_whole('--budget', budget),
                 seeds=None if seeds is None else _seed_list(seeds))
    space_given, space_use_default, source = None, True, 'the search space'
    if isinstance(space, (str, bytes)) or hasattr(space, '__fspath__'):
        source = f"--space {space}"
        space_given, space_use_default = read_space_file(str(space))
    elif space is not None:
        space_given = dict(space)
    if use_default_space is not None:
        space_use_default = use_default_space
    space_args = (space_given, space_use_default, source, space is not None or use_default_space is not None)
    if resume is not None:
        if study_dir is not None and str(study_dir) != str(resume):
            raise ConfigError(f"--study-dir {study_dir} and --resume {resume} name different folders; --resume names the study")
        if first_values:
            raise ConfigError("first_values are queued when a study starts; a resumed study keeps its queue")
        study_dir = str(resume)
        settings = _resumed_settings(study_dir, config, overrides, trials, given, space_args, imports)
    else:
        overrides = override_list(overrides) + ([('import_names', list(imports))] if imports else [])
        settings, study_dir, pinned = _new_settings(config, overrides, trials, given, space_args, study_dir)
        from ..config.ding_compat import get_path
        for key in pinned:  # (a key of the default space that an override sets)
            (echo or (lambda line: None))(f"[tune] not searched: {key}, set by an override to "
                                          f"{get_path(settings['base_config'], key)!r} in every trial")
    for values in first_values:
        unknown = sorted(set(values) - set(settings['space']))
        if unknown:
            raise ConfigError(f"first_values: {', '.join(unknown)} not in the search space; give values of its keys only")
    check_settings(settings)
    if space is None and resume is not None:
        source = f"the study's space ({os.path.join(study_dir, 'tune.json')})"
    elif space is None:  # the policy's default space: a policy of one's own declares it (tune_space)
        from .space import default_space_source
        source = default_space_source(settings['base_config'])
    check_trial_configs(settings, source)  # before the first trial: a bad key or value is one line
    from ..config.compile import warn_idle_parallel_keys, warn_other_pipeline
    warn_idle_parallel_keys(overrides, 'tune')
    warn_other_pipeline(settings['base_config'], 'tune')  # (once here: each trial's run is told it is serial)
    try:
        study = Study(study_dir, settings, resume is not None, echo or (lambda line: None), first_values, progress)
        return study.run()
    except Exception as exc:  # SQLite's own word for a full disk (the study's storage, study.db)
        if 'database or disk is full' not in str(exc):
            raise
        raise OSError(errno.ENOSPC, 'No space left on device', os.path.join(study_dir, STUDY_DB)) from exc


def _whole(flag: str, value: Any) -> Optional[int]:
    """``value`` (a Python caller's argument) as an int: a whole number (1e5 too), or a ``ConfigError`` naming it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ConfigError(f"{flag} {value!r} must be a whole number, e.g. {flag} 20000")
    return int(value)


def _seed_list(seeds: Any) -> List[int]:
    """``seeds`` (a Python caller's argument) as a list of ints, or a ``ConfigError`` naming it."""
    if (isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence)
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
        raise ConfigError(f"--seeds {seeds!r} must be a list of whole numbers, e.g. --seeds 0,1")
    return [int(seed) for seed in seeds]


def _new_settings(config: Any, overrides: Sequence[Any], trials: Optional[int], given: Dict[str, Any],
                  space_args: tuple, study_dir: Optional[str]) -> Tuple[Dict[str, Any], str]:
    """The settings of a new study (the tuner's defaults where not given) and its folder."""
    from ..config import compile_config
    from ..config.compile import override_list, override_value, to_plain
    from .space import build_space
    from .study import holds_study

    if config is None:
        raise ConfigError("no config given; pass -c CONFIG (e.g. acframe -m tune -c cartpole_a2c.py --trials 20)")
    if trials is None:
        raise ConfigError("--trials N is missing: how many trials the study should run")
    base = to_plain(compile_config(config, override_list(overrides)))
    settings = {key: (given[key] if given.get(key) is not None else DEFAULTS[key]) for key in DEFAULTS}
    space = build_space(base, *space_args[:3])
    pinned = [key for key in space if override_value(overrides, key, _UNSET) is not _UNSET]
    named = [key for key in pinned if (space_args[0] or {}).get(key) is not None]
    if named:  # both searched (the space the user gave) and set (an override): which one is meant?
        raise ConfigError(f"{named[0]} is both in {space_args[2]} and set by an override; drop one of them (an "
                          f"override keeps the key at its value in every trial)")
    for key in pinned:  # set by an override: every trial keeps that value (not searched)
        space.pop(key)
    if not space:
        raise ConfigError(f"every key of the search space is set by an override ({', '.join(pinned)}): nothing is "
                          f"left to search; drop an override or add keys with --space FILE")
    settings.update(trials=trials, budget=int(given['budget'] if given['budget'] is not None else base['max_env_step']),
                    seeds=given['seeds'] if given['seeds'] is not None else [int(base['seed'])],
                    space=space, base_config=base)
    study_dir = str(study_dir) if study_dir is not None else f"tune_{base['exp_name']}"
    if holds_study(study_dir):
        raise ConfigError(f"--study-dir {study_dir} already holds a study; continue it with --resume {study_dir} "
                          f"or pass another --study-dir")
    from ..runs import is_run_dir
    if os.path.isdir(study_dir) and is_run_dir(study_dir):  # a study's files would mix with the run's
        raise ConfigError(f"--study-dir {study_dir} is a training run's folder; pass a folder of the study's own")
    return settings, study_dir, pinned


def _resumed_settings(study_dir: str, config: Any, overrides: Sequence[Any], trials: Optional[int],
                      given: Dict[str, Any], space_args: tuple, imports: Sequence[str] = ()) -> Dict[str, Any]:
    """The settings of the study in ``study_dir``; a config, space or setting given that differs is refused.
    The study's ``import_names`` are imported only when named (``imports``, or an ``import_names=`` override),
    never from inside the study folder."""

    from ..config import compile_config
    from ..config.compile import override_list, to_plain
    from ..config.run_folder import check_stored_imports, config_differences, named_imports
    from ..registry import import_names
    from .space import build_space
    from .study import FIXED_SETTINGS, SETTINGS_JSON, read_settings

    settings = read_settings(study_dir)
    named = named_imports(imports, overrides)
    base_imports = check_stored_imports(settings['base_config'].get('import_names') or [], named,
                                        os.path.join(study_dir, SETTINGS_JSON))
    import_names(base_imports, refuse_under=(study_dir,))
    if config is not None or overrides:
        new = to_plain(compile_config(config if config is not None else _stored_input(settings['base_config']),
                                      override_list(overrides)))
        changed = config_differences(settings['base_config'], new)
        if 'policy.type' in changed:  # (another algorithm: its keys differ too, which would hide the cause)
            changed = ['policy.type']
            said = (f"the config given is of policy '{new['policy']['type']}', the study's of "
                    f"'{settings['base_config']['policy']['type']}'")
        else:
            said = f"the config given changes {', '.join(changed[:6])} of the study's"
        if changed:
            raise ConfigError(f"--resume {study_dir}: {said}; resume without -c and overrides (the study keeps its "
                              f"config) or start a new --study-dir")
    if space_args[3]:
        given = dict(given, space=build_space(settings['base_config'], *space_args[:3]))
    for key in FIXED_SETTINGS:
        if given.get(key) is not None and given[key] != settings[key]:
            was, now = (settings[key], given[key]) if key != 'space' else _space_difference(settings[key], given[key])
            raise ConfigError(f"--resume {study_dir}: the study's {key} is {was!r}, not {now!r}; "
                              f"a study keeps its settings (start a new --study-dir to change it)")
    if trials is not None:
        settings['trials'] = trials
    return settings


def _space_difference(was: Mapping[str, Any], now: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The keys where two spaces differ, each side's (``None``: not in it): what a refusal quotes, not both whole."""
    keys = [key for key in sorted(set(was) | set(now)) if was.get(key) != now.get(key)]
    return {key: was.get(key) for key in keys}, {key: now.get(key) for key in keys}


def _stored_input(base: Mapping[str, Any]) -> Any:
    from ..config.run_folder import create_config_of

    return dict(base), create_config_of(base)
