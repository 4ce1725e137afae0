"""A run folder is data: its configuration is ``config.json``, read back without executing anything.

``config.json`` holds ``{"format": 1, "mode": ..., "config": {...}, "changes": [...]}``. Values that JSON
cannot hold exactly are tagged: ``{"__float__": "inf" | "-inf" | "nan"}`` and ``{"__tuple__": [...]}``;
numpy scalars are stored as the Python numbers they equal. ``config.py`` beside it is the human-readable
copy, a config file ``acframe -c`` can run; it is written once, when the run starts, and never read back.

Resuming (``--resume DIR``) and evaluating a folder (``-m eval --load DIR``) read ``config.json`` only.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence

from easydict import EasyDict

from ..errors import ConfigError, RegistryError
from ..utils import atomic_write_text

CONFIG_JSON = 'config.json'
CONFIG_PY = 'config.py'
FORMAT = 1
#: keys a resumed run may change without ``--accept-config-change``: budgets, where the run lives, and what is
#: imported (modules that register names; the run's own numbers do not depend on them), the weights a run
#: started from (a resume ignores init_from) and the pipeline a config is written for (a resume runs the run's own)
RESUME_FREE_KEYS = ('max_env_step', 'max_train_iter', 'exp_name', 'import_names', 'init_from', 'pipeline')


#: the longest file name most filesystems take (bytes)
NAME_MAX = 255


def check_exp_name(name: Any) -> None:
    """``exp_name`` is a folder name, never a path (``--exp-dir`` is where a user picks any path)."""
    if not isinstance(name, str) or not name or name in ('.', '..') or '/' in name or '\\' in name or '\0' in name:
        raise ConfigError(f"config key 'exp_name' = {name[:80]!r} must be a plain folder name (no '/', not '.' or '..'); "
                          f"to put the run elsewhere pass --exp-dir PATH")
    if len(name.encode()) > NAME_MAX - 20:
        raise ConfigError(f"config key 'exp_name' is {len(name)} characters long; keep it under {NAME_MAX - 20}")


# ---- exact JSON --------------------------------------------------------------------------------------
def encode(value: Any, path: str = 'config') -> Any:
    """``value`` as JSON data, exactly (inf/NaN and tuples tagged); a ``ConfigError`` naming a non-data value."""
    import numbers

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isfinite(value):
            return value
        return {'__float__': 'nan' if math.isnan(value) else ('inf' if value > 0 else '-inf')}
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise ConfigError(f"config key '{path}' has a non-string key {key!r}; config keys are strings")
        return {key: encode(v, f"{path}.{key}") for key, v in value.items()}
    if isinstance(value, tuple):
        return {'__tuple__': [encode(v, f"{path}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise ConfigError(f"config key '{path}' holds a {type(value).__name__}; config values must be plain data "
                      f"(numbers, strings, bools, None, lists, tuples, dicts)")


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {'__float__'}:
            return float(value['__float__'])
        if set(value) == {'__tuple__'}:
            return tuple(decode(v) for v in value['__tuple__'])
        return {key: decode(v) for key, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


# ---- a Python literal that round-trips (config.py) ----------------------------------------------------
def py_literal(value: Any, indent: int = 0, comments: Optional[Dict[str, str]] = None, path: str = '') -> str:
    """``value`` as Python source that evaluates back to it (``float('inf')``, tuples, nested dicts).

    ``comments`` maps a dotted key path (``policy.learn.learning_rate``) to a one-line comment written above
    that key; ``path`` is the path of ``value`` itself."""
    pad = ' ' * (indent + 4)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "-float('inf')"
        return repr(value)
    if isinstance(value, dict):
        if not value:
            return 'dict()' if indent else '{}'
        items = []
        for key, item in value.items():
            full = f'{path}.{key}' if path else str(key)
            comment = (comments or {}).get(full)
            if comment:
                items.append(f"{pad}# {' '.join(comment.split())}")
            items.append(f"{pad}{key!r}: {py_literal(item, indent + 4, comments, full)},")
        return '{\n' + '\n'.join(items) + '\n' + ' ' * indent + '}'
    if isinstance(value, (list, tuple)):
        inner = ', '.join(py_literal(v, indent + 4) for v in value)
        if isinstance(value, tuple):
            return f"({inner}{',' if len(value) == 1 else ''})"
        return f"[{inner}]"
    return repr(value)


# ---- the run folder's config --------------------------------------------------------------------------
def _plain(cfg: Any) -> Any:
    if isinstance(cfg, dict):
        return {k: _plain(v) for k, v in cfg.items()}
    if isinstance(cfg, list):
        return [_plain(v) for v in cfg]
    return cfg


def create_config_of(main: Dict[str, Any]) -> Dict[str, Any]:
    """The ``create_config`` that names a compiled config's components."""
    return dict(env=dict(type=main['env']['type']), env_manager=dict(type=main['env'].get('manager', 'sync')),
                policy=dict(type=main['policy']['type']), import_names=list(main.get('import_names', [])))


def _strings(value: Any) -> List[str]:
    """Every string ``value`` (a config's plain data) holds, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    return []


def run_record(cfg: Any, mode: str, changes: Optional[List[Dict[str, Any]]] = None,
               model_given: Optional[str] = None, known_registers: Optional[Dict[str, List[str]]] = None) -> str:
    """The text of ``config.json`` for ``cfg`` run in ``mode`` (``model_given``: the class of a model instance the run
    was given in Python, which its config does not describe)."""
    from ..registry import registrations_of, script_registered

    record = {'format': FORMAT, 'mode': mode, 'config': encode(_plain(cfg)), 'changes': changes or []}
    if model_given:
        record['model_given'] = model_given
    # what each of its modules registered (where this process saw it): acting on the run needs none that registered
    # only loggers, replay buffers or hooks (``load_run_config``)
    known = known_registers or {}  # (what an earlier sitting saw, where this process did not see the import)
    registers = {}
    for name in cfg.get('import_names') or []:
        found = registrations_of(name) if isinstance(name, str) else None
        found = found if found is not None else known.get(name)
        if found is not None:
            registers[name] = found
    if registers:
        record['import_registers'] = registers
    in_script = script_registered(_strings(record['config']))  # (a script's own classes: said when they are missing)
    if in_script:
        record['script_registered'] = in_script
    return json.dumps(record, indent=1, sort_keys=False, allow_nan=False) + '\n'


RUN_CONFIG_NOTE = ("Compiled by acframe: every key with its final value and its declaration, a human-readable copy of "
                   "config.json.\nRe-run with: acframe -c <this file>   (acframe never reads this file back from a run "
                   "folder)")


def config_py_text(cfg: Any, note: str = RUN_CONFIG_NOTE) -> str:
    """``cfg`` as a config file ``acframe -c`` runs: ``main_config`` with the declaration and one-line comment of
    every key it has a default for above that key (``acframe.config.defaults`` and the policy's ``config``), then
    ``create_config``. ``note`` is the header, one ``#`` line per line."""
    from .compile import config_comments
    main = _plain(cfg)
    header = ''.join(f'# {line}\n' for line in note.splitlines())
    return (f"{header}main_config = {py_literal(main, comments=config_comments(main))}\n\n"
            f"create_config = {py_literal(create_config_of(main))}\n")


def save_run_config(cfg: Any, exp_dir: str, mode: str, changes: Optional[List[Dict[str, Any]]] = None,
                    model_given: Optional[str] = None) -> None:
    """Write ``config.json`` (always, atomically) and ``config.py`` (only when the folder has none). What the run's
    modules registered is kept from the record there where this process did not see their import."""
    known: Dict[str, List[str]] = {}
    if os.path.isfile(os.path.join(exp_dir, CONFIG_JSON)):
        try:
            known = read_run_record(exp_dir)['import_registers']
        except ConfigError:
            known = {}
    atomic_write_text(os.path.join(exp_dir, CONFIG_JSON), run_record(cfg, mode, changes, model_given, known))
    if not os.path.exists(os.path.join(exp_dir, CONFIG_PY)):
        atomic_write_text(os.path.join(exp_dir, CONFIG_PY), config_py_text(cfg))


#: limits on JSON read from a run or study folder (data someone may have crafted): bytes, nesting, string length
JSON_MAX_BYTES = 16 * 2 ** 20
JSON_MAX_DEPTH = 32
JSON_MAX_STRING = 4096


def read_data_json(path: str, damaged: str = 'the run folder is damaged') -> Any:
    """The JSON value in ``path``, read as untrusted data: a regular file (not a link, FIFO or device: nothing
    blocks), at most ``JSON_MAX_BYTES``, nested at most ``JSON_MAX_DEPTH`` levels, no string over
    ``JSON_MAX_STRING`` characters; anything else is a ``ConfigError`` naming the file and what is wrong."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror or exc}; a link or special file is refused); "
                          f"{damaged}") from exc
    with os.fdopen(fd, 'rb') as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path} is not a regular file; {damaged}")
        if info.st_size > JSON_MAX_BYTES:
            raise ConfigError(f"{path} is {info.st_size} bytes, over the {JSON_MAX_BYTES} bytes acframe reads; {damaged}")
        raw = f.read(JSON_MAX_BYTES + 1)
    try:
        value = json.loads(raw.decode('utf-8'))
    except RecursionError as exc:
        raise ConfigError(f"{path} is nested deeper than acframe reads (over {JSON_MAX_DEPTH} levels); {damaged}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not readable JSON ({str(exc)[:200]}); {damaged}") from exc
    problem = _json_shape_problem(value)
    if problem:
        raise ConfigError(f"{path}: {problem}; {damaged}")
    return value


def _json_shape_problem(value: Any) -> Optional[str]:
    """What breaks the limits in a decoded JSON value (checked without recursion), or None."""
    stack = [(value, 1, '')]
    while stack:
        node, depth, where = stack.pop()
        if depth > JSON_MAX_DEPTH:
            return f"nested deeper than {JSON_MAX_DEPTH} levels (at {where[:120] or 'the top'})"
        if isinstance(node, str) and len(node) > JSON_MAX_STRING:
            return f"a string of {len(node)} characters at {where[:120] or 'the top'} (at most {JSON_MAX_STRING})"
        if isinstance(node, dict):
            for key, item in node.items():
                if len(key) > JSON_MAX_STRING:
                    return f"a key of {len(key)} characters under {where[:120] or 'the top'} (at most {JSON_MAX_STRING})"
                stack.append((item, depth + 1, f"{where}.{key}" if where else key))
        elif isinstance(node, list):
            stack.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(node))
    return None


def read_run_record(run_dir: str) -> Dict[str, Any]:
    """``config.json`` of ``run_dir`` decoded: ``{'mode', 'config' (EasyDict), 'changes'}``."""
    path = os.path.join(run_dir, CONFIG_JSON)
    if not os.path.lexists(path):
        hint = (" (it has a config.py: a run of an older acframe; pass that file with -c only if you trust it)"
                if os.path.isfile(os.path.join(run_dir, CONFIG_PY)) else "")
        raise ConfigError(f"{run_dir}: no {CONFIG_JSON} there; pass the experiment folder of an acframe run{hint}")
    record = read_data_json(path)
    if not isinstance(record, dict) or record.get('format') != FORMAT or not isinstance(record.get('config'), dict):
        raise ConfigError(f"{path} is not an acframe run record (format {FORMAT}); pass the folder of an acframe run")
    config = decode(record['config'])
    for section in ('env', 'policy'):
        if not isinstance(config.get(section), dict) or 'type' not in config[section]:
            raise ConfigError(f"{path}: config.{section}.type is missing; the run folder is damaged")
    changes = record.get('changes') or []
    mode = record.get('mode', 'serial')
    model_given = record.get('model_given')
    if not isinstance(changes, list) or not isinstance(mode, str) or not isinstance(model_given, (str, type(None))):
        raise ConfigError(f"{path}: 'mode' and 'model_given' must be strings and 'changes' a list; the run folder is "
                          f"damaged")
    registers = record.get('import_registers') or {}
    if not (isinstance(registers, dict) and all(isinstance(k, str) and isinstance(v, list)
                                                and all(isinstance(e, str) for e in v) for k, v in registers.items())):
        registers = {}  # (not what acframe writes: every module counts as needed)
    in_script = record.get('script_registered') or []
    if not (isinstance(in_script, list) and all(isinstance(e, str) and ':' in e for e in in_script)):
        in_script = []
    return {'mode': mode, 'config': config, 'changes': list(changes), 'model_given': model_given,
            'import_registers': registers, 'script_registered': in_script}


def model_given_refusal(run_dir: str, model_given: str, how: str) -> ConfigError:
    """The one line for a run trained with a model instance given in Python (``model_given``, its class) that is
    used without one: its config does not describe that model. ``how``: what to do instead."""
    return ConfigError(f"{run_dir} was trained with a model given in Python ({model_given[:120]} instance, model=), "
                       f"which its config does not describe; {how}")


def module_names(value: Any, where: str) -> List[str]:
    """``value`` as a list of module names (None or empty: none); a ``ConfigError`` naming ``where`` (the key, or
    the override) when it is anything else."""
    if not value:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) and name for name in value):
        raise ConfigError(f"{where} = {str(repr(value))[:80]} must be a list of module names (strings), e.g. "
                          f"['my_package.my_envs']")
    return list(value)


def named_imports(imports: Sequence[str] = (), overrides: Any = None) -> List[str]:
    """The modules a user named: ``imports`` (``--import``; a string is one name, or names with commas, as the
    flag takes them) and an ``import_names=[...]`` override."""
    from .compile import parse_override

    if isinstance(imports, str):  # (iterated, 'my_envs' was the modules 'm', 'y', ...)
        imports = [part.strip() for part in imports.split(',') if part.strip()]
    named = list(imports or ())
    bad = [name for name in named if not isinstance(name, str) or not name]
    if bad:
        raise ConfigError(f"imports: {bad[0]!r} is not a module name; pass module names, e.g. imports=['my_envs']")
    for item in overrides or ():
        key, value = parse_override(item) if isinstance(item, str) else item
        if key == 'import_names':
            named += module_names(value, 'the override import_names')
    return named


def check_stored_imports(stored: Any, named: Sequence[str], path: str, flag: str = '--import') -> List[str]:
    """The modules to import for a config read from ``path`` (a run or study folder's file): those it lists must
    each be named by the user (``named``) or be imported already; otherwise a ``ConfigError`` naming them and
    ``flag``. A folder never decides what code runs."""
    import sys

    if not isinstance(stored, (list, tuple)) or not all(isinstance(n, str) for n in stored):
        raise ConfigError(f"{path}: import_names must be a list of module names; the folder is damaged")
    unnamed = [name for name in stored if name not in named and name not in sys.modules]
    if unnamed:
        shown = ','.join(name[:80] for name in unnamed[:5])
        extra = [name for name in named if name not in stored]
        also = f" ({flag} named {','.join(n[:80] for n in extra[:5])}, which it does not list)" if extra else ''
        add = f"imports={[name[:80] for name in unnamed[:5]]!r}" if flag == 'imports' else f"{flag} {shown}"
        where = 'in imports=' if flag == 'imports' else 'on the command line'
        raise ConfigError(f"{path} lists import_names {shown} that you did not name{also}; acframe imports only "
                          f"modules named {where}: add {add} if you trust them (never code inside the folder)")
    return list(dict.fromkeys(list(stored) + list(named)))  # the run's order (a later module may re-register a name)


#: the registries whose entries a run needs to train but not to act (evaluate, export, ``load_policy``): acting
#: builds no logger, replay buffer or hook
ACTING_NEEDS_NOT = ('logger', 'buffer', 'hook')


def _registers_only(registered: Optional[List[str]], kinds: Sequence[str]) -> bool:
    """Whether ``registered`` (a module's ``'kind:name'`` entries, None: not known) is known, not empty, and all of
    ``kinds``."""
    return bool(registered) and all(entry.split(':', 1)[0] in kinds for entry in registered)


def _refuse_missing_script_entries(run_dir: str, in_script: Sequence[str], acting: bool, python: bool,
                                   mode: str = 'serial') -> None:
    """A ``ConfigError`` when the run's config names a class its training script registered in itself (``__main__``)
    that this process does not have: no ``--import`` can bring it back (it said to list its module in import_names).
    Acting on the run needs no logger or buffer of the script's."""
    from ..registry import REGISTRIES
    from .compile import PIPELINE_FUNCTIONS

    registries = {r.kind: r for r in REGISTRIES}
    for entry in in_script:
        kind, _, name = entry.partition(':')
        registry = registries.get(kind)
        if registry is None or name in registry or (acting and kind in ACTING_NEEDS_NOT):
            continue
        again = (f"resume it from that script ({PIPELINE_FUNCTIONS.get(mode, 'serial_pipeline')}(None, resume=RUN) "
                 f"after the class is registered)" if not acting else "load or evaluate it from that script")
        name_it = ("imports=['MODULE']" if python else
                   "--import MODULE (in a script: the override \"import_names=['MODULE']\")")
        raise ConfigError(f"{run_dir} was trained by a script that registered {kind} '{name}' in itself (__main__), "
                          f"which acframe cannot import: {again}, or move that class into a module and name it "
                          f"with {name_it}")


def load_run_config(run_dir: str, overrides: Any = None, seed: Optional[int] = None,
                    imports: Sequence[str] = (), import_flag: str = '--import', builds_buffer: bool = True) -> EasyDict:
    """The compiled config of the run in ``run_dir`` (from ``config.json``; nothing is executed).

    The stored config is compiled again (defaults ← stored ← ``overrides``), so it is validated like any other.
    Its ``import_names`` are imported only when the user named them (``imports``, or an ``import_names=``
    override; see ``check_stored_imports``, whose refusal names ``import_flag``: ``'imports'`` for the Python
    argument), and never from inside ``run_dir``. ``builds_buffer=False``: read to act (``compile_config``'s); a
    module the run recorded as registering only loggers, replay buffers or hooks (``ACTING_NEEDS_NOT``) is then not
    needed.
    """
    from .compile import compile_config

    record = read_run_record(run_dir)
    main = record['config']
    named = named_imports(imports, overrides)
    stored = main.get('import_names') or []
    if not builds_buffer and isinstance(stored, list):  # acting: a module that registered only what acting builds not
        stored = [name for name in stored if name in named or not _registers_only(
            record['import_registers'].get(name), ACTING_NEEDS_NOT)]
    main['import_names'] = check_stored_imports(stored, named, os.path.join(run_dir, CONFIG_JSON), import_flag)
    from ..registry import import_names as do_import

    do_import(main['import_names'], refuse_under=(run_dir,))  # (imported below anyway: first, to see what is missing)
    _refuse_missing_script_entries(run_dir, record['script_registered'], acting=not builds_buffer,
                                   python=import_flag == 'imports', mode=record['mode'])
    # a compiled config (a dict, not a (main, create) pair): acframe's keys already, no DI-engine translation
    try:
        return compile_config(main, overrides, seed=seed, refuse_imports_under=(run_dir,), builds_buffer=builds_buffer)
    except RegistryError as exc:  # a name the run's own module registered (a script's, not in import_names)
        if not str(exc).startswith('unknown '):
            raise
        how = "imports=['MODULE']" if import_flag == 'imports' else f"{import_flag} MODULE"
        what, _, known = str(exc).split(';')[0].partition('. Known ')
        raise RegistryError(f"{run_dir}: its config.json names an {what}" + (f" (known {known})" if known else '')
                            + f"; import the module that registers it with {how}") from exc


#: keys a run fills in from its env's spaces when its config leaves them out (``fill_model_spaces``)
FILLED_FROM_ENV = ('policy.model.obs_shape', 'policy.model.action_shape', 'policy.model.action_space')


def given_config_differences(stored: Any, given: Any) -> List[str]:
    """``config_differences`` of a run's stored config and a config given for the same run, without the keys the
    run filled in from its env where ``given`` leaves them to the env (``FILLED_FROM_ENV``)."""
    from .ding_compat import MISSING, get_path

    return [key for key in config_differences(stored, given)
            if not (key in FILLED_FROM_ENV and get_path(given, key) in (None, MISSING))]


def config_differences(old: Any, new: Any, path: str = '') -> List[str]:
    """Dotted keys whose values differ between two compiled configs (budgets and exp_name excluded)."""
    keys: List[str] = []
    for key in sorted(set(old) | set(new), key=str):
        full = f"{path}.{key}" if path else str(key)
        if not path and key in RESUME_FREE_KEYS:
            continue
        a, b = old.get(key, '<absent>'), new.get(key, '<absent>')
        if isinstance(a, dict) and isinstance(b, dict):
            keys += config_differences(a, b, full)
        elif not _same(a, b):
            keys.append(full)
    return keys


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b
