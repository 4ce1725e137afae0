"""What a finished run left behind: finding its folder, compiled config and checkpoint from one path.

A run folder holds ``config.json`` (the compiled config, data only), ``ckpt/ckpt_best.pth`` (the weights of
the best evaluation), ``ckpt/ckpt_latest.pth``, ``log/`` (tensorboardX) and ``summary.json``. The commands
that work on a finished run (``-m eval``, ``-m export``, ``acframe.load_policy``) accept either the folder
(its best checkpoint, else its latest) or a ``.pth`` file; a checkpoint inside ``RUN_DIR/ckpt/`` finds its
run folder two levels up. A checkpoint elsewhere needs its config named (``-c CONFIG``).
"""
from __future__ import annotations

import os
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple, Union

from .errors import CheckpointError, ConfigError

CKPT_DIR = 'ckpt'
BEST = 'ckpt_best.pth'
LATEST = 'ckpt_latest.pth'
RUN_CONFIG = 'config.json'


class RunArtifacts(NamedTuple):
    """A run's folder (None for a loose checkpoint), the checkpoint to use and the compiled config."""

    run_dir: Optional[str]
    checkpoint: str
    cfg: Any
    #: the model instance to load the weights into, for a run trained with one given in Python (``model=``)
    model: Any = None
    #: the class of the model the run was trained with in Python when none is given now (``model_given``), else None
    model_given: Optional[str] = None
    #: who asked: the Python function (``'load_policy'``, ``'export_policy'``) or the command line's flag: how a
    #: refusal names the fix
    what: str = '--load'
    #: the config is the run folder's own (``config.json``): its model keys are those the weights were trained with
    own_config: bool = False


def is_run_dir(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, RUN_CONFIG))


def run_dir_of(path: str) -> Optional[str]:
    """The run folder of ``path``: the folder itself, or two levels up from a checkpoint in ``RUN_DIR/ckpt/``."""
    if os.path.isdir(path):
        return path if is_run_dir(path) else None
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.basename(parent) == CKPT_DIR and is_run_dir(os.path.dirname(parent)):
        return os.path.dirname(parent)
    return None


def read_summary(run_dir: str) -> Dict[str, Any]:
    """The run's ``summary.json`` as data (a run folder may come from anyone): ``{}`` when it is missing or is not a
    JSON object; its values are the caller's to check."""
    import json

    try:
        with open(os.path.join(run_dir, 'summary.json'), encoding='utf-8') as f:
            summary = json.load(f)
    except (OSError, ValueError):
        return {}
    return summary if isinstance(summary, dict) else {}


def pick_checkpoint(run_dir: str) -> str:
    """``ckpt/ckpt_best.pth`` when the run saved one, else ``ckpt/ckpt_latest.pth``."""
    for name in (BEST, LATEST):
        path = os.path.join(run_dir, CKPT_DIR, name)
        if os.path.isfile(path):
            return path
    what = ("a run that stopped before its first checkpoint" if os.path.isfile(os.path.join(run_dir, 'config.json'))
            else "not a run folder (no config.json either)")
    raise CheckpointError(f"{run_dir}: no {CKPT_DIR}/{BEST} or {CKPT_DIR}/{LATEST} there, {what}; pass a run folder "
                          f"with checkpoints or a .pth file")


def locate_run(target: Union[str, os.PathLike], config: Optional[Any] = None,
               overrides: Sequence[Any] = (), seed: Optional[int] = None, what: str = '--load',
               imports: Sequence[str] = (), model: Any = None, reads_logger: bool = False) -> RunArtifacts:
    """Resolve ``target`` (a run folder or a ``.pth`` file) into its folder, checkpoint and compiled config.

    The config is ``config`` when given (a path or dizoo_configs name, as ``-c``), else the run folder's
    ``config.json``; ``overrides`` (``'key.path=value'``) and ``seed`` are applied on top and validated. The
    folder's ``import_names`` are imported only when named in ``imports`` (``--import``) or imported already
    (``config.run_folder.check_stored_imports``); a folder holding a link or special file is refused. Overrides
    of what acting does not read are warned about (``logger`` keys too unless the caller ``reads_logger``).
    """
    from .config import compile_config
    from .config.compile import override_list, stop_value_unwarned, warn_training_only_keys
    from .entry.run_folder import check_folder_is_data

    target = os.fspath(target)
    if not os.path.exists(target):
        raise ConfigError(f"{what} {target}: no such file or folder; pass a run folder or a .pth checkpoint written by acframe")
    run_dir = run_dir_of(target)
    holder = os.path.dirname(os.path.abspath(target))  # (a file of a run folder, or its ckpt/ folder, given for it)
    if os.path.isdir(target) and os.path.basename(os.path.abspath(target)) == CKPT_DIR and is_run_dir(holder):
        raise ConfigError(f"{what} {target}: the run's checkpoint folder; pass the run folder ({holder}: its best "
                          f"checkpoint, else its latest) or one .pth file in it")
    if os.path.isfile(target) and run_dir is None and is_run_dir(holder) and not target.lower().endswith(('.pth', '.pt')):
        raise ConfigError(f"{what} {target}: a file of the run folder {holder}, not a checkpoint; pass the folder "
                          f"itself (its best checkpoint, else its latest) or a .pth file in its {CKPT_DIR}/")
    if os.path.isdir(target):
        if run_dir is None:
            old = os.path.isfile(os.path.join(target, 'config.py'))
            hint = "pass a run folder written by acframe"
            if old:
                hint = (f"it was written by an older acframe (config.py only): pass -c {os.path.join(target, 'config.py')} "
                        f"--load {os.path.join(target, CKPT_DIR, BEST)}, only if you trust that file (it is executed)")
            raise ConfigError(f"{what} {target}: not a run folder (no {RUN_CONFIG}); {hint}")
        checkpoint = pick_checkpoint(run_dir)
    else:
        checkpoint = target
    if run_dir is not None:
        check_folder_is_data(run_dir)
    python = what in PYTHON_CALLERS  # (the Python functions: their arguments, not the command line's flags)
    if config is None and run_dir is None:
        raise ConfigError(f"{what} {target}: this checkpoint is not in a run folder's {CKPT_DIR}/; "
                          f"name its config with {'config=CONFIG' if python else '-c CONFIG'}")
    from .config.run_folder import load_run_config, model_given_refusal, read_run_record

    # a run trained with a model given in Python: its checkpoint fits that model, not the one its config builds
    given = read_run_record(run_dir).get('model_given') if run_dir is not None and model is None else None
    overrides = override_list(overrides)
    with stop_value_unwarned():  # (a stop value means nothing to a run that is done)
        if config is not None:  # (a config of the user's may build that model: the weights' fit decides)
            cfg = compile_config(config, overrides, seed=seed, builds_buffer=False)  # (acting)
            if run_dir is not None:
                check_same_policy(run_dir, cfg, target, what, python)
        else:
            if given:
                raise model_given_refusal(run_dir, given, load_with_model_hint(what))
            cfg = load_run_config(run_dir, overrides, seed=seed, imports=imports,  # config.json: data, never run
                                  import_flag='imports' if python else '--import', builds_buffer=False)  # (acting)
    warn_training_only_keys(overrides, reads_logger)  # (once the config compiles: a refused one says its error alone)
    return RunArtifacts(run_dir, checkpoint, cfg, model, given, what, own_config=config is None)


def check_same_policy(run_dir: str, cfg: Any, target: str, what: str, python: bool) -> None:
    """A ``ConfigError`` when a config given for a run folder builds another policy than the run trained: its weights
    then acted (and were written up in the run's eval/) as an algorithm they never learned with, without a word
    (``--resume`` refuses the same change)."""
    from .config.run_folder import read_run_record

    stored = read_run_record(run_dir)['config'].get('policy', {})
    theirs, ours = stored.get('type') if isinstance(stored, dict) else None, cfg.policy.get('type')
    if isinstance(theirs, str) and theirs != ours:
        flag = 'config=' if python else '-c'
        raise ConfigError(f"{what} {target}: the run trained policy '{theirs}', and the config given ({flag}) builds "
                          f"'{ours}'; drop {flag} (the run folder's own config is used), or give a config of policy "
                          f"'{theirs}'")


#: the Python functions that locate a run (their refusals name their arguments, not the command line's flags)
PYTHON_CALLERS = ('load_policy', 'export_policy')


def load_with_model_hint(what: str) -> str:
    """What to do with a run trained with a model given in Python (``model_given``) when none is given now, asked by
    ``what`` (``locate_run``'s)."""
    if what == 'load_policy':
        return "load it in Python with that model: acframe.load_policy(RUN, model=...)"
    if what == 'export_policy':
        return "export it in Python with that model: acframe.export_policy(RUN, OUT, model=...)"
    return ("load or export it in Python with that model: acframe.load_policy(RUN, model=...), "
            "acframe.export_policy(RUN, OUT, model=...) (the command line cannot build it)")


def load_model_weights(policy: Any, state: Dict[str, Any], path: str) -> None:
    """Load the model weights of checkpoint ``state`` (read from ``path``) into ``policy``; a clear error on mismatch."""
    weights = model_weights_of(state, path)
    try:
        policy.load_weights(weights)  # a one-line CheckpointError saying what does not fit
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint '{path}': {exc}") from exc


def initial_weights(target: str) -> Tuple[str, Dict[str, Any]]:
    """``(checkpoint path, model weights)`` a new run starts from (``init_from``): a ``.pth`` file, or a run folder's
    best checkpoint (else its latest); read as data and checked like any checkpoint."""
    from .entry.run_folder import check_folder_is_data
    from .worker import load_checkpoint

    target = os.fspath(target)
    if not os.path.exists(target):
        raise ConfigError(f"init_from {target}: no such file or folder; pass a .pth checkpoint or a run folder")
    if os.path.isdir(target):
        check_folder_is_data(target)
        target = pick_checkpoint(target)
    return target, model_weights_of(load_checkpoint(target), target)


def model_weights_of(state: Dict[str, Any], path: str) -> Dict[str, Any]:
    """The model weights of checkpoint ``state`` (read from ``path``): a dict of finite tensors, or a one-line
    ``CheckpointError``."""
    weights = state['policy'].get('model') if isinstance(state.get('policy'), dict) else None
    if not isinstance(weights, dict):
        raise CheckpointError(f"checkpoint '{path}' has no model weights (its 'policy.model' entry is not a dict)")
    from .utils import nonfinite_tensor_names

    bad = nonfinite_tensor_names(weights)
    if bad:  # as training refuses them: a policy of NaN weights acts, evaluates and exports as garbage
        raise CheckpointError(f"checkpoint '{path}': the weights {', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''} "
                              f"hold NaN/inf; use an earlier checkpoint of the run")
    return weights
