"""The ``acframe`` command: train, resume, evaluate, plot, export or list.

    acframe -c cartpole_impala.py [-s SEED] [--exp-dir DIR] [--max-env-step N] [--max-train-iter N] [key.path=value ...]
    acframe --resume DIR [-c CONFIG --accept-config-change] [--import MODULE]
    acframe -c CONFIG --init-from RUN_DIR_OR_CKPT          (a new run from given weights)
    acframe -m async -c cartpole_a3c.py [parallel.async_worker_num=N]   (A3C: N Hogwild workers, docs/ddp.md)
    acframe -m async -c cartpole_async_acer.py                          (async ACER: each worker with its own replay)
    acframe -m eval [--load] RUN_DIR_OR_CKPT [--import MODULE] [--episodes N] [--video DIR] [-s SEED] [--domain-params nominal|drawn]
    acframe -m plot RUN_DIR [RUN_DIR ...] [--out FILE.png|FILE.svg|FILE.pdf] [--x env_steps|wall_s]
    acframe -m export [--load] RUN_DIR_OR_CKPT [--import MODULE] --out FILE.pt|FILE.onnx
    acframe -m tune -c CONFIG --trials N [--budget ENV_STEPS] [--space SPACE.py] [--study-dir DIR] [--seeds 0,1]
    acframe -m tune --resume STUDY_DIR [--trials N] [--import MODULE]
    acframe -m check-env ENV [--import MODULE] [-s SEED] [env.key=value ...]   (or -m check-env -c CONFIG)
    acframe --list [--import MODULE]

DI-engine's spellings of the flags are accepted too (``-m serial_onpolicy``, ``--env-step 1e5``, ``--train-iter``,
``--exp-name``, ``--load-path``, ``-e ENV -p POLICY``); see docs/from_di_engine.md.

Errors in the input (config typos, unknown names, missing checkpoints) print one line and exit 2;
``--debug`` shows the traceback. torch is imported only once the config is valid.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Dict, List, NoReturn, Optional, Sequence

from .tune.cli import add_tune_arguments, refuse_tune_flags

MODES = ('auto', 'serial', 'serial_onpolicy', 'parallel', 'async', 'eval', 'plot', 'export', 'tune', 'check-env')
#: the modes that work on finished runs (acframe/entry/tools.py)
TOOL_MODES = ('eval', 'plot', 'export')


def _count(text: str) -> int:
    """A budget: ``100000``, or DI-engine's ``1e5``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (give a whole number such as 100000 or 1e5)")
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (give a whole number such as 100000 or 1e5)")
    return int(value)


#: flags of Stable-Baselines3's RL Zoo (``python train.py --algo ppo --env ... -n 100000``), and learn()'s
#: total_timesteps written as one -> what acframe takes
FOREIGN_FLAGS = {
    '-n': '--max-env-step N', '--n-timesteps': '--max-env-step N', '--total-timesteps': '--max-env-step N',
    '--algo': '-c CONFIG (a config file names its algorithm: policy.type) or -e ENV -p POLICY',
    '--eval-freq': 'policy.eval.evaluator.eval_freq=N (gradient steps between evaluations)',
    '--eval-episodes': 'env.n_evaluator_episode=N', '--n-eval-envs': 'env.evaluator_env_num=N',
    '--hyperparams': 'key.path=value overrides', '-params': 'key.path=value overrides',
    '--tensorboard-log': "logger.backends (the run folder's log/ holds tensorboard files)",
    '-tb': "logger.backends (the run folder's log/ holds tensorboard files)",
    '-f': '--exp-dir DIR', '--log-folder': '--exp-dir DIR',
    '-i': '--init-from RUN', '--trained-agent': '--init-from RUN',
}


class _Parser(argparse.ArgumentParser):
    """argparse with acframe's one-line errors: a bad flag or value is one line naming it (exit 2), not the usage."""

    def error(self, message: str) -> 'NoReturn':  # type: ignore[override]
        hint = ''
        if message.startswith('unrecognized arguments: '):
            given = [word.split('=', 1)[0] for word in message[len('unrecognized arguments: '):].split()]
            known = [(flag, FOREIGN_FLAGS[flag]) for flag in given if flag in FOREIGN_FLAGS]
            if known:
                hint = f"; {known[0][0]} is a Stable-Baselines3 / RL Zoo flag: acframe's is {known[0][1]}"
        self.exit(2, f"{self.prog}: error: {message}{hint} ({self.prog} -h lists the flags)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog='acframe',
        description='Train an acframe policy from a config file; evaluate, plot or export finished runs.',
        epilog='Config names that are not paths are looked up in the installed dizoo_configs package. '
               'Trailing key.path=value arguments override config keys, e.g. policy.learn.learning_rate=3e-4. '
               'After training: "-m eval --load RUN_DIR" evaluates a run folder (its best checkpoint, else its latest), '
               '"-m plot RUN_DIR ..." draws learning curves, "-m export --load RUN_DIR --out FILE.pt|.onnx" exports '
               'the deterministic policy. Before training on an env of your own: "-m check-env ENV --import MODULE" '
               'checks it (one line per problem with the fix, exit 2; exit 0 with a summary).',
    )
    parser.add_argument('-c', '--config', help='config file path or dizoo_configs name (e.g. cartpole_impala.py); '
                                               'DI-engine config files run unchanged')
    parser.add_argument('-m', '--mode', default='auto', choices=MODES,
                        help="pipeline: auto (the config's pipeline key, else on-policy or off-policy serial, from the policy), serial, serial_onpolicy, "
                             "parallel (actors + one learner), async (A3C: parallel.async_worker_num Hogwild workers on "
                             "one shared model, for a2c and acer; docs/ddp.md); or a finished run: eval (--load RUN_DIR_OR_CKPT), plot (RUN_DIR ...), "
                             "export (--load RUN_DIR_OR_CKPT --out FILE); or a hyperparameter search: tune (-c CONFIG --trials N); "
                             "or an env before training: check-env ENV [--import MODULE] (a gymnasium id, short name or "
                             "registered env type; or -c CONFIG): its spaces, reset/step API, seeding, finite values, "
                             "time limit, action masks and step time, one line per problem with the fix")
    parser.add_argument('-s', '--seed', type=int, action='append', default=None,
                        help='run seed (default: the config\'s seed); one per command')
    parser.add_argument('--exp-dir', default=None, help='experiment folder (default ./<exp_name>_seed<seed>)')
    parser.add_argument('--exp-name', default=None,
                        help="DI-engine's flag: sets exp_name and uses ./<exp-name> as the experiment folder (unless --exp-dir)")
    parser.add_argument('--max-env-step', '--env-step', dest='max_env_step', type=_count, default=None,
                        help='env-step budget (--env-step: DI-engine\'s spelling; 1e5 is accepted)')
    parser.add_argument('--max-train-iter', '--train-iter', dest='max_train_iter', type=_count, default=None,
                        help='learner-iteration budget (--train-iter: DI-engine\'s spelling)')
    parser.add_argument('--load', '--load-path', dest='load', default=None, metavar='RUN_DIR_OR_CKPT',
                        help='run folder (its best checkpoint, else its latest) or .pth checkpoint (-m eval, -m export; '
                             'also taken as their first argument without the flag; --load-path: DI-engine\'s spelling)')
    parser.add_argument('-e', '--env', default=None, help="DI-engine's flag: with -p and no -c, runs dizoo_configs' <env>_<policy>.py")
    parser.add_argument('-p', '--policy', default=None, help="DI-engine's flag: with -e and no -c, runs dizoo_configs' <env>_<policy>.py")
    parser.add_argument('--replay-path', default=None, help="DI-engine's eval video folder: not supported (an error says so)")
    parser.add_argument('--episodes', type=_count, default=None, help='episodes to evaluate (-m eval; default env.n_evaluator_episode)')
    parser.add_argument('--video', default=None, metavar='DIR', help='record the evaluated episodes as MP4 in DIR (-m eval; extra: video)')
    parser.add_argument('--domain-params', default=None, choices=('nominal', 'drawn'),
                        help='domain-randomized runs: evaluate with the nominal or drawn env parameters (-m eval; '
                             'default: as the run evaluated)')
    parser.add_argument('--out', default=None, metavar='FILE',
                        help='-m eval: the result JSON (default RUN_DIR/eval/<ckpt>_seed<seed>.json; _<N>ep and/or _<tag> '
                             'appended when the episodes or config values differ from the run\'s own); -m plot: the PNG '
                             '(default RUN_DIR/curves.png for one run, ./curves.png for several; FILE.svg: an SVG, FILE.pdf: a PDF); -m export: FILE.pt or FILE.onnx')
    parser.add_argument('--x', default='env_steps', choices=('env_steps', 'wall_s'), help='x axis of -m plot')
    parser.add_argument('--resume', default=None, metavar='DIR',
                        help="continue the run in DIR from its latest checkpoint, with the config in DIR/config.json "
                             "(read as data, never executed) and the run's recorded mode; with -m tune: continue the study "
                             "in the study folder DIR")
    parser.add_argument('--import', dest='imports', action='append', default=None, metavar='MODULE[,MODULE]',
                        help="modules to import (their @REGISTRY.register run), added to import_names; with --resume, "
                             "-m eval/export and -m tune --resume, the modules a run or study folder's import_names "
                             "lists must be named here (a folder never decides what code runs)")
    parser.add_argument('--init-from', default=None, metavar='CKPT_OR_RUN_DIR',
                        help="start a new run from the model weights of a checkpoint (.pth) or a run folder (its best "
                             "checkpoint, else its latest), with a fresh optimizer and counters (sets init_from)")
    parser.add_argument('--accept-config-change', action='store_true',
                        help='with --resume: continue with a -c config, -s seed or overrides that change keys of the run '
                             '(refused otherwise, naming the keys; budgets may always change)')
    parser.add_argument('--backend', default=None, choices=('local', 'ray', 'inline'), help='parallel backend (-m parallel; default local); '
                        'with a serial pipeline and parallel.learner_num > 1, ray runs ranks 1..N-1 as Ray actors')
    parser.add_argument('--ray-address', default=None, help='Ray cluster address HOST:PORT (--backend ray)')
    add_tune_arguments(parser, _count)
    parser.add_argument('--list', action='store_true', help='list registered policies, models, envs, buffers, loggers, hooks and dizoo '
                        'configs (with --import MODULE: those it registers too)')
    parser.add_argument('-q', '--quiet', action='store_true', help='no progress or evaluation lines: only warnings, errors and the final result line')
    parser.add_argument('--debug', action='store_true', help='show tracebacks of errors')
    parser.add_argument('-v', '--version', action='store_true', help='print the version and exit')
    parser.add_argument('overrides', nargs='*', help='key.path=value config overrides (-m plot: the RUN_DIRs)')
    return parser


def _list(imports: Sequence[str] = ()) -> str:
    from .registry import (BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, HOOK_REGISTRY, LOGGER_REGISTRY,
                           MODEL_REGISTRY, POLICY_REGISTRY, import_names)
    from .envs.gym_env import NO_VELOCITY, SHORT_NAMES
    import importlib.util

    import_names(imports)  # --import: the user's registrations are listed too
    lines = []
    for registry in (POLICY_REGISTRY, MODEL_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY, BUFFER_REGISTRY,
                     LOGGER_REGISTRY, HOOK_REGISTRY):
        lines.append(f"{registry.plural.replace('_', ' ')}: {', '.join(registry.names())}")
    lines.append(f"env short names: {', '.join(f'{k} ({v})' for k, v in SHORT_NAMES.items())}")
    lines.append(f"partially observed envs (velocities removed): "
                 f"{', '.join(f'{k} ({v[0]})' for k, v in NO_VELOCITY.items())}")
    spec = importlib.util.find_spec('dizoo_configs')
    if spec is not None and spec.submodule_search_locations:
        folder = list(spec.submodule_search_locations)[0]
        configs = sorted(f for f in os.listdir(folder) if f.endswith('.py') and not f.startswith('_'))
        lines.append(f"dizoo configs: {', '.join(configs)}")
    return '\n'.join(lines)


def run(args: argparse.Namespace) -> int:
    from .config import compile_config
    from .errors import ConfigError

    backend_given, args.backend = args.backend is not None, args.backend or 'local'

    if args.version:
        from . import __version__
        print(f"acframe {__version__}")
        return 0
    if args.list:
        print(_list(_module_names(args.imports)))
        return 0
    refuse_a_launcher()  # (torchrun's copies would each train, or evaluate, a run of their own)
    _resolve_ding_flags(args)
    args.imports = _module_names(args.imports)
    if args.mode == 'tune':
        from .tune.cli import run_tune

        print(run_tune(args))
        return 0
    refuse_tune_flags(args)
    if (args.mode in TOOL_MODES or args.mode == 'check-env') and (backend_given or args.ray_address):
        raise ConfigError(f"--backend and --ray-address choose where -m parallel's workers run; -m {args.mode} runs in "
                          f"this process: drop them")
    if args.mode == 'check-env':
        from .envs.check import check_env_command

        return check_env_command(args)
    if args.mode in TOOL_MODES:
        from .entry.tools import run_tool
        from .signals import sigterm_as_interrupt

        with sigterm_as_interrupt():  # (SIGTERM as Ctrl-C: an evaluation's partial videos are taken back)
            line = run_tool(args)
        print(line)
        return 0
    for flag, value in (('--episodes', args.episodes), ('--video', args.video), ('--domain-params', args.domain_params),
                        ('--out', args.out)):
        if value is not None:
            raise ConfigError(f"{flag} belongs to -m eval/plot/export, not to training; add -m eval (or plot, export)")
    if args.exp_name is not None and args.exp_dir == args.exp_name and args.resume is None:
        from .entry.run_folder import holds_run

        if holds_run(args.exp_dir):  # (the folder --exp-name names; said with the flag the user gave)
            raise ConfigError(f"--exp-name {args.exp_name}: the folder {args.exp_dir} already holds a run; continue it "
                              f"with --resume {args.exp_dir}, or choose another name")
    recorded_mode = None
    if args.resume is not None:
        from .config.run_folder import read_run_record

        if os.path.isfile(args.resume):
            from .entry.run_base import run_folder_hint

            raise ConfigError(f"--resume {args.resume}: a file; --resume takes the run's folder"
                              f"{run_folder_hint(args.resume)}")
        if not os.path.isdir(args.resume):
            raise ConfigError(f"--resume {args.resume}: no such folder; pass the experiment folder of an earlier run")
        record = read_run_record(args.resume)  # config.json: data, never executed
        recorded_mode = record['mode']
        if args.mode != 'auto' and args.mode != recorded_mode:
            article = 'an' if str(recorded_mode)[:1] in 'aeiou' else 'a'
            raise ConfigError(f"--resume {args.resume}: that folder holds {article} {recorded_mode} run, not {args.mode}; "
                              f"drop -m (the mode is read from the folder) or pass -m {recorded_mode}")
        config_path = args.config  # None: the run's own config.json
    elif args.config is None:
        raise ConfigError("no config given; pass -c CONFIG (e.g. acframe -c cartpole_impala.py) or --list to see the configs")
    else:
        config_path = args.config
    _check_backend(recorded_mode or args.mode, args, backend_given)
    if args.load is not None:
        raise ConfigError("--load evaluates or exports a finished run with -m eval / -m export; to continue training use --resume DIR")
    if args.init_from is not None and args.resume is not None:
        raise ConfigError("--init-from starts a new run from given weights; --resume continues a run from its own "
                          "checkpoint: use one of them")
    extra: List = list(args.overrides)
    if args.max_env_step is not None:
        extra.append(('max_env_step', args.max_env_step))
    if args.max_train_iter is not None:
        extra.append(('max_train_iter', args.max_train_iter))
    if args.init_from is not None:
        extra.append(('init_from', args.init_from))
    # validate before anything heavy is imported: typos answer fast
    if config_path is None:
        from .config.run_folder import load_run_config

        cfg = load_run_config(args.resume, extra, seed=args.seed, imports=args.imports)
    else:
        cfg = compile_config(config_path, extra + [('import_names', args.imports)] if args.imports else extra,
                             seed=args.seed)
    progress = not args.quiet
    mode = recorded_mode or args.mode
    if mode == 'auto' and cfg.get('pipeline'):  # the pipeline the config file is written for (an A3C file's async)
        mode = cfg.pipeline
        _check_backend(mode, args, backend_given)
    from .config.compile import warn_idle_parallel_keys, warn_unwatched_step_timeout
    warn_idle_parallel_keys(args.overrides, mode if mode in ('parallel', 'async') else 'serial')
    warn_unwatched_step_timeout(args.overrides, cfg, mode if mode in ('parallel', 'async') else 'serial',
                                new_run=args.resume is None)
    common = dict(exp_dir=args.exp_dir, resume=args.resume, progress=progress,
                  accept_config_change=args.accept_config_change)
    if mode == 'parallel':
        from .entry.parallel import parallel_pipeline

        if args.resume is not None and not backend_given:  # (with -q too: a change no flag asked for)
            _say_backend_change(args.resume, args.backend)

        parallel_pipeline(cfg, backend=args.backend, ray_address=args.ray_address, **common)
        return 0
    if mode == 'async':
        from .entry.async_training import async_pipeline

        async_pipeline(cfg, **common)
        return 0
    from .policy import policy_class

    if mode == 'auto':
        mode = 'serial_onpolicy' if policy_class(cfg).on_policy else 'serial'
    if mode == 'serial_onpolicy':
        from .entry.serial_onpolicy import serial_pipeline_onpolicy as pipeline
    else:
        from .entry.serial import serial_pipeline as pipeline
    # --backend ray: the data-parallel ranks on Ray (parallel.learner_num > 1; otherwise refused in one line)
    pipeline(cfg, backend=args.backend, ray_address=args.ray_address, **common)
    return 0


def refuse_a_launcher(environ: Optional[Dict[str, str]] = None) -> None:
    """Refuse, in one line, a process that is one of several a distributed launcher started (torchrun,
    ``torch.distributed.launch``: ``WORLD_SIZE`` > 1 in its environment): acframe starts its data-parallel learners
    itself (``parallel.learner_num``), and each launched copy would train a run of its own."""
    from .errors import ConfigError

    environ = os.environ if environ is None else environ
    try:
        world = int(environ.get('WORLD_SIZE', '1'))
    except ValueError:
        return
    if world > 1:
        launcher = 'torchrun' if 'TORCHELASTIC_RUN_ID' in environ else 'a distributed launcher'
        raise ConfigError(f"this process is one of WORLD_SIZE={world} that {launcher} started: acframe starts its own "
                          f"data-parallel learners; run the command once, without the launcher, with "
                          f"parallel.learner_num={world}")


def _check_backend(mode: str, args: argparse.Namespace, backend_given: bool) -> None:
    """``--backend`` / ``--ray-address`` for the pipeline ``mode`` runs: ``--ray-address`` alone puts a parallel
    run's workers on that cluster; -m async refuses both (its workers share this machine's memory)."""
    from .errors import ConfigError

    if not backend_given and args.ray_address and mode == 'parallel':
        args.backend = 'ray'  # --ray-address alone: a parallel run's workers on that Ray cluster
    if mode == 'async' and (args.backend != 'local' or args.ray_address):
        raise ConfigError("-m async runs its workers on this machine only (they share one model in its shared memory, "
                          "docs/ddp.md); drop --backend/--ray-address, or train on a Ray cluster with -m parallel "
                          "--backend ray (parallel.learner_num for several learners)")


def _module_names(given: Optional[List[str]]) -> List[str]:
    """``--import a,b --import c`` as ``['a', 'b', 'c']``; a name that is not a dotted module name is refused."""
    import re

    from .errors import ConfigError

    names = [part.strip() for item in given or () for part in item.split(',') if part.strip()]
    for name in names:
        if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*', name) or len(name) > 200:
            raise ConfigError(f"--import {name[:80]!r} is not a module name; give dotted Python module names, "
                              f"e.g. --import my_package.my_envs")
    return names


def _resolve_ding_flags(args: argparse.Namespace) -> None:
    """DI-engine's flags in acframe's terms: one seed, --exp-name as the folder, -e/-p as a dizoo_configs name."""
    from .errors import ConfigError

    seeds = args.seed or []
    if len(seeds) > 1:
        raise ConfigError(f"-s given {len(seeds)} times ({', '.join(map(str, seeds))}): acframe runs one seed per command; "
                          f"run the command once per seed (each gets its own ./<exp_name>_seed<seed> folder)")
    args.seed = seeds[0] if seeds else None
    if args.replay_path is not None:
        raise ConfigError("--replay-path (DI-engine's eval videos) is not supported; -m eval --load CKPT --video DIR "
                          "records the evaluated episodes as MP4")
    if args.exp_name is not None:
        args.overrides = list(args.overrides) + [('exp_name', args.exp_name)]
        if args.exp_dir is None and args.resume is None:  # (a resumed run stays in its folder; its name may change)
            args.exp_dir = args.exp_name
    if args.env is not None or args.policy is not None:
        if args.config is not None:
            raise ConfigError("-e/-p choose a dizoo_configs file when no -c is given; drop them or -c")
        if args.env is None or args.policy is None:
            raise ConfigError("-e ENV and -p POLICY go together (they name dizoo_configs' <env>_<policy>.py), e.g. -e cartpole -p impala")
        args.config = f"{args.env}_{args.policy}.py"


def _one_line_config_warnings() -> None:
    """Print ``ConfigWarning``s as one line (``acframe: warning: ...``); other warnings keep Python's format."""
    import warnings

    from .errors import ConfigWarning

    default = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):
        if issubclass(category, ConfigWarning):
            return f"acframe: warning: {message}\n"
        if f"{os.sep}gymnasium{os.sep}" in str(filename):  # its env checker's: one line, without colour codes
            text = re.sub(r'\x1b\[[0-9;]*m', '', str(message)).strip()
            return f"gymnasium: warning: {text.removeprefix('WARN: ')}\n"
        return default(message, category, filename, lineno, line)

    warnings.formatwarning = formatwarning


def _second_import_hint(argv: Optional[List[str]], message: str) -> str:
    """``--import a b``: b was read as an override (``override 'b' is not of the form key.path=value``); the hint
    that --import takes its modules comma-separated, or ''."""
    found = re.match(r"override '([^']*)' is not of the form key\.path=value", message)
    tokens = list(sys.argv[1:] if argv is None else argv)
    for i in range(len(tokens) - 2):
        if found and tokens[i] == '--import' and tokens[i + 2] == found.group(1):
            return f"; --import takes its modules comma-separated: --import {tokens[i + 1]},{tokens[i + 2]}"
    return ''


def main(argv: Optional[List[str]] = None) -> int:
    _one_line_config_warnings()
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    from .errors import AcframeError

    try:
        return run(args)
    except AcframeError as exc:
        if args.debug:
            raise
        _say(f"acframe: error: {one_line(exc)}{_second_import_hint(argv, str(exc))}")
        return 2
    except (MemoryError, RuntimeError) as exc:
        if args.debug or not is_out_of_memory(exc):
            raise
        _say(f"acframe: error: out of memory ({one_line(exc)[:160]}); lower the replay buffer "
             f"(policy.other.replay_buffer.replay_buffer_size), the model or the envs, or raise the memory limit")
        return 2
    except BrokenPipeError:  # stdout's reader is gone (`acframe -m check-env ENV | head`): quietly, as a pipe ends
        if args.debug or not _stdout_gone():
            raise
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (the exit's own flush would raise again)
        except (OSError, ValueError):
            pass
        return 1
    except OSError as exc:  # a write refused anywhere (a full disk, ulimit -f, a read-only folder): one line
        from .utils import is_out_of_room

        if args.debug or not is_out_of_room(exc):
            raise
        where = f" {exc.filename}" if exc.filename else ''
        _say(f"acframe: error: cannot write{where}: {exc.strerror or exc}; free disk space (or raise the file-size "
             f"limit, or write elsewhere) and run the command again")
        return 2
    except KeyboardInterrupt as exc:
        from .signals import Terminated, describe_interrupt

        _say(f"acframe: {describe_interrupt(exc)}")
        return exc.exit_code if isinstance(exc, Terminated) else 130


def _say_backend_change(run_dir: str, backend: str) -> None:
    """A parallel run resumed without --backend on another backend than it trained on: say so (allowed: the
    backend is where the workers run, not a setting of the run)."""
    from .runs import read_summary

    before = read_summary(run_dir).get('backend')
    if before in ('local', 'ray', 'inline') and before != backend:
        print(f"[acframe] note: {run_dir} trained on the {before} backend and resumes on {backend} (pass "
              f"--backend {before} to continue there)", file=sys.stderr, flush=True)


def is_out_of_memory(exc: BaseException) -> bool:
    """A ``MemoryError``, or the ``RuntimeError`` torch's CPU allocator raises when an allocation is refused."""
    return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc) or 'CUDA out of memory' in str(exc)


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error on it)."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # (no poll on this platform, or no stdout)
        return False


def _say(line: str) -> None:
    """The closing line on stderr, if there still is one (a closed terminal: the exit status says it)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (the rest, e.g. an env's traceback, is for ``--debug``)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == '__main__':
    sys.exit(main())
