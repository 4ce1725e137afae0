"""The CLI's modes for finished runs: ``-m eval``, ``-m plot`` and ``-m export`` (each returns its result line)."""
from __future__ import annotations

import argparse
import os

from ..errors import ConfigError


def _refuse(args: argparse.Namespace, allowed: set) -> None:
    """A one-line error for a flag that the chosen mode does not use."""
    given = {'--episodes': args.episodes, '--video': args.video, '--domain-params': args.domain_params,
             '--resume': args.resume, '--exp-dir': args.exp_dir, '--max-env-step': args.max_env_step,
             '--max-train-iter': args.max_train_iter, '--load': args.load, '-c': args.config, '-s': args.seed,
             '--exp-name': getattr(args, 'exp_name', None), '--import': args.imports or None,
             '--init-from': args.init_from}
    for flag, value in given.items():
        if value is not None and flag not in allowed:
            raise ConfigError(f"{flag} does not apply to -m {args.mode}; leave it out")
    if args.accept_config_change:
        raise ConfigError(f"--accept-config-change belongs to --resume; it does not apply to -m {args.mode}")
    if args.x != 'env_steps' and args.mode != 'plot':
        raise ConfigError(f"--x chooses the x axis of -m plot; it does not apply to -m {args.mode}")


def run_tool(args: argparse.Namespace) -> str:
    """Run ``args.mode`` (eval, plot or export) and return the one result line to print."""
    if args.mode == 'plot':
        from ..plot import default_plot_path, plot_runs, result_line

        _refuse(args, set())
        if not args.overrides:
            raise ConfigError("-m plot needs RUN_DIR arguments (experiment folders of training runs), "
                              "e.g. acframe -m plot cartpole_a2c_seed0 cartpole_a2c_seed1")
        if args.out is not None:
            return result_line(plot_runs(args.overrides, args.out, args.x))
        out = default_plot_path(args.overrides)
        return result_line(plot_runs(args.overrides, out, args.x,
                                     said=f"the plot's default file {out} (--out FILE writes it elsewhere)"))
    if args.load is None and args.overrides:  # -m eval RUN (as -m plot RUN): a path, or what is no override
        first = str(args.overrides[0])
        if os.path.exists(first):
            args.load, args.overrides = first, args.overrides[1:]
        elif '=' not in first or os.sep in first.split('=', 1)[0]:  # (no override, or a path: runs/lr=0.1)
            raise ConfigError(f"-m {args.mode} {first}: no run folder or checkpoint of that name; name a run folder "
                              f"or a .pth file in its ckpt/ (an override is key.path=value)")
    if args.load is None:
        raise ConfigError(f"-m {args.mode} needs the run: acframe -m {args.mode} RUN_DIR_OR_CKPT (or --load "
                          f"RUN_DIR_OR_CKPT; a run folder, or a .pth file in its ckpt/)")
    if args.mode == 'export':
        from ..export import export_policy, result_line

        _refuse(args, {'--load', '-c', '--import'})
        if args.out is None:
            raise ConfigError("-m export needs --out FILE.pt (TorchScript) or --out FILE.onnx (ONNX)")
        return result_line(export_policy(args.load, args.out, args.config, args.overrides, imports=args.imports,
                                               what='--load'))
    from .evaluate import evaluate_run, result_line

    _refuse(args, {'--load', '-c', '-s', '--episodes', '--video', '--domain-params', '--import'})
    report = evaluate_run(args.load, args.config, args.overrides, args.seed, args.episodes, args.video,
                          args.domain_params, args.out, imports=args.imports, progress=not args.quiet)
    return result_line(report)
