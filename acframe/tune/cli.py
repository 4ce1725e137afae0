"""The ``-m tune`` flags of the ``acframe`` command and their run (no torch or Optuna imported to parse them)."""
from __future__ import annotations

import argparse
from typing import List

from ..errors import ConfigError

#: the flags only -m tune uses (dest, flag)
TUNE_FLAGS = (('trials', '--trials'), ('budget', '--budget'), ('space', '--space'), ('study_dir', '--study-dir'),
              ('seeds', '--seeds'), ('pruner', '--pruner'), ('startup_trials', '--startup-trials'))


def _seeds(text: str) -> List[int]:
    try:
        seeds = [int(part) for part in text.split(',')]  # (an empty item, '0,,1', is refused, not skipped)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seeds: {text!r} (give whole numbers separated by commas, e.g. 0,1,2)")
    if not seeds:
        raise argparse.ArgumentTypeError(f"invalid seeds: {text!r} (give whole numbers separated by commas, e.g. 0,1,2)")
    return seeds


def add_tune_arguments(parser: argparse.ArgumentParser, count: type) -> None:
    """The ``-m tune`` argument group (``count`` parses budgets such as 1e5)."""
    group = parser.add_argument_group('hyperparameter search (-m tune; extra: tune)')
    group.add_argument('--trials', type=count, default=None,
                       help='-m tune: the finished trials the study should have (with --resume: the missing ones run)')
    group.add_argument('--budget', type=count, default=None, metavar='ENV_STEPS',
                       help="-m tune: env steps per trial run (default: the config's max_env_step)")
    group.add_argument('--space', default=None, metavar='SPACE.py|SPACE.json',
                       help="-m tune: search space file (key path -> distribution), merged over the policy's default space")
    group.add_argument('--study-dir', default=None, metavar='DIR', help='-m tune: the study folder (default ./tune_<exp_name>)')
    group.add_argument('--seeds', type=_seeds, default=None, metavar='0,1',
                       help="-m tune: seeds each trial trains on; the objective is the mean best evaluation return "
                            "(default: the config's seed)")
    group.add_argument('--pruner', default=None, choices=('median', 'halving', 'none'),
                       help='-m tune: stop bad trials early by the median rule (default) or successive halving')
    group.add_argument('--startup-trials', type=int, default=None, metavar='N',
                       help='-m tune: complete trials before the median pruner prunes (default 5)')


def refuse_tune_flags(args: argparse.Namespace) -> None:
    """A one-line error for a -m tune flag given to another mode."""
    for dest, flag in TUNE_FLAGS:
        if getattr(args, dest, None) is not None:
            raise ConfigError(f"{flag} belongs to -m tune; add -m tune (or leave {flag} out)")


def run_tune(args: argparse.Namespace) -> str:
    """``acframe -m tune``: run or continue the study; returns the result line."""
    given = {'-s': args.seed, '--exp-dir': args.exp_dir, '--max-env-step': args.max_env_step,
             '--max-train-iter': args.max_train_iter, '--load': args.load, '--episodes': args.episodes,
             '--video': args.video, '--domain-params': args.domain_params, '--out': args.out,
             '--ray-address': args.ray_address, '--init-from': args.init_from}
    instead = {'-s': ' (use --seeds)', '--exp-dir': ' (use --study-dir)', '--max-env-step': ' (use --budget)'}
    for flag, value in given.items():
        if value is not None:
            raise ConfigError(f"{flag} does not apply to -m tune{instead.get(flag, '')}; leave it out")
    if args.accept_config_change:
        raise ConfigError("--accept-config-change does not apply to -m tune: a resumed study keeps its config")
    for flag, off in (('--backend', args.backend != 'local'), ('--x', args.x != 'env_steps')):
        if off:
            raise ConfigError(f"{flag} does not apply to -m tune; leave it out (trials run the serial pipeline)")
    from . import tune
    from .study import best_line

    record = tune(args.config, trials=args.trials, budget=args.budget, space=args.space, study_dir=args.study_dir,
                  seeds=args.seeds, resume=args.resume, overrides=list(args.overrides), pruner=args.pruner,
                  startup_trials=args.startup_trials, echo=None if args.quiet else _echo,
                  progress=None if args.quiet else _echo, imports=args.imports, flag_names=True)
    counts = record['trials']
    if record['best'] is None and counts['failed'] and not counts['complete'] and not counts['pruned']:
        from ..errors import AcframeError
        raise AcframeError(f"every trial of the study failed ({counts['failed']}; the '[tune] trial N failed' lines and "
                           f"{record['study_dir']}/trials.csv say why): fix the search space (--space) or the config "
                           f"and start a new study (--study-dir)")
    return best_line(record)


def _echo(line: str) -> None:
    print(line, flush=True)
