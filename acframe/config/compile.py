"""Read config files, merge defaults ← file ← overrides, validate, and save the result.

A config file is plain Python defining ``main_config`` and ``create_config`` (DI-engine's shape).
``compile_config`` returns one ``EasyDict`` holding every key with its final value; the types chosen in
``create_config`` are copied in (``policy.type``, ``env.type``, ``env.manager``, ``import_names``), so the
compiled config is self-contained and ``save_config`` writes it as a loadable Python file.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
import copy
import logging
import os
import runpy
import threading
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from easydict import EasyDict

from ..errors import ConfigError, ConfigWarning, describe_raised
from ..registry import BUFFER_REGISTRY, POLICY_REGISTRY, closest, import_names
from . import defaults as D
from .ding_compat import MISSING, get_path, leaf_paths, translate_ding_config, translate_override, warn_renamed
from .foreign_names import foreign_name_message
from .introspect import loaded_class_config, source_available, static_class_config
from .rules import check_config
from .run_folder import check_exp_name, module_names, named_imports

ConfigInput = Union[str, os.PathLike, Tuple[dict, dict], List[dict], dict]

MANAGER_ALIASES = {'base': 'sync', 'subprocess': 'async'}


def load_config_file(path: Union[str, os.PathLike]) -> Tuple[dict, dict]:
    """Run a config file and return its ``(main_config, create_config)``.

    A name that is not an existing path is looked up in the installed ``dizoo_configs`` package
    (``cartpole_impala.py`` or ``cartpole_impala``).
    """
    path = resolve_config_path(str(path))
    check_python_file(path)
    try:
        namespace = runpy.run_path(path)
    except SyntaxError as exc:
        raise ConfigError(f"config file {path} line {exc.lineno}: syntax error ({exc.msg}); fix the Python syntax") from exc
    except ConfigError:
        raise
    except SystemExit as exc:
        raise ConfigError(f"config file {path} called sys.exit({exc.code!r}); a config file only defines main_config "
                          f"and create_config") from exc
    except RecursionError as exc:
        raise ConfigError(f"config file {path} recursed without end (RecursionError); fix the file") from exc
    except ModuleNotFoundError as exc:  # a module it imports is not found: not installed, or not on the path
        raise ConfigError(f"config file {path} raised {describe_raised(exc)}; install the module, or put the folder "
                          f"of a module of your own on PYTHONPATH (the config file's own folder is not searched)") from exc
    except Exception as exc:  # the file is user code: report what it raised, and where
        raise ConfigError(f"config file {path} raised {describe_raised(exc)}; fix the file") from exc
    if 'main_config' not in namespace:
        raise ConfigError(f"config file {path} defines no 'main_config'; define main_config = dict(...) and create_config = dict(...)")
    main, create = namespace['main_config'], namespace.get('create_config', {})
    for name, value in (('main_config', main), ('create_config', create)):
        if not isinstance(value, dict):
            raise ConfigError(f"config file {path}: '{name}' must be a dict, got {type(value).__name__}")
    return main, create


def check_python_file(path: str) -> None:
    """A config file is Python source: a ``.py`` file that is not an archive. Anything else is refused before it is
    run (Python would run a zip archive's ``__main__.py``, a checkpoint is one; a run's config.json is data)."""
    import zipfile

    hint = ''
    if path.endswith('.pth') or zipfile.is_zipfile(path):
        hint = ': a checkpoint (or another zip archive); -m eval / --init-from / --resume take checkpoints and run folders'
    elif path.endswith('.json'):
        hint = ": a JSON file; a run folder's config.json is read by --resume RUN (or -m eval --load RUN)"
    if hint or not path.endswith('.py'):
        raise ConfigError(f"-c {path}: not a config file (Python source, in a .py file){hint}")


def resolve_config_path(name: str) -> str:
    """An existing file path, or the file of that name in the installed ``dizoo_configs`` package."""
    if os.path.isfile(name):
        return name
    candidates = [name, name + '.py'] if not name.endswith('.py') else [name]
    if os.sep not in name:
        import importlib.util
        spec = importlib.util.find_spec('dizoo_configs')
        if spec is not None and spec.submodule_search_locations:
            folder = list(spec.submodule_search_locations)[0]
            for candidate in candidates:
                full = os.path.join(folder, candidate)
                if os.path.isfile(full):
                    return full
            known = sorted(f for f in os.listdir(folder) if f.endswith('.py') and not f.startswith('_'))
            hint = closest(candidates[-1], known, cutoff=0.6)
            extra = f" Did you mean '{hint}'?" if hint else ""
            raise ConfigError(f"config file '{name}' not found here nor in dizoo_configs.{extra} acframe --list "
                              f"lists every config")  # (the sixty names were all in the one line)
    raise ConfigError(f"config file '{name}' not found; give a path to a Python config file")


def policy_defaults(policy_type: str) -> Tuple[dict, Dict[str, str]]:
    """``POLICY_COMMON`` merged with the policy class's ``config`` (read statically when possible), and the comments
    (declarations, ``acframe.config.rules``) above its keys."""
    found = None if POLICY_REGISTRY.is_loaded(policy_type) else static_class_config(POLICY_REGISTRY.location(policy_type))
    if found is not None:
        own, comments = found
    else:
        cls = POLICY_REGISTRY.get(policy_type)
        own, comments = cls.default_config(), class_comments(cls)
    own = copy.deepcopy(own)
    own.pop('type', None)
    if found is None and getattr(cls, 'supports_rnn', False) and not isinstance(own.get('model', {}).get('rnn'), dict):
        from .introspect import module_dict_config  # (a user's recurrent policy: the core's keys, as the built-ins')

        rnn, rnn_comments = module_dict_config('acframe.config.defaults', 'RECURRENT_MODEL')
        own['model'] = {**own.get('model', {}), **copy.deepcopy(rnn)}
        comments = {**comments, **{f"model.{key}": text for key, text in rnn_comments.items()}}
    return deep_merge(copy.deepcopy(D.POLICY_COMMON), own, path='policy', strict=False), comments


def class_comments(cls: type) -> Dict[str, str]:
    """The comments above the ``config`` keys of a loaded policy class and of the classes it inherits ``config``
    from (the nearest wins), read from their sources: validation must not depend on what was imported."""
    comments: Dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if 'config' in vars(klass):
            found = (static_class_config(f"{klass.__module__}:{klass.__qualname__}", lenient=True)
                     or loaded_class_config(klass, lenient=True))  # (a default that is an expression keeps its rule)
            if found is None and not source_available(klass):
                warnings.warn(f"the rules in the comments above {klass.__module__}.{klass.__qualname__}'s config keys "
                              f"cannot be read (its source is not available: a class defined on stdin or in an "
                              f"interactive session), so the values of the keys it declares are checked by type only; "
                              f"define it in a file (a module or a script)", ConfigWarning, stacklevel=2)
            comments.update(found[1] if found is not None else {})
    return comments


BUFFER_PATH = 'policy.other.replay_buffer'


def buffer_defaults(buffer_type: Any) -> Tuple[dict, Dict[str, str]]:
    """The keys a registered replay buffer class declares in its own ``config`` (defaults, and the comments above
    them), so a buffer's options (a prioritized buffer's ``alpha``) are config keys under ``policy.other.replay_buffer``
    without an edit here. A built-in buffer is read from its source (nothing imported); a user's buffer, registered by
    an ``import_names`` module, from its class and the classes it inherits ``config`` from. ``({}, {})`` for a
    buffer without ``config`` and for a name that is not registered (building the buffer says so)."""
    if not isinstance(buffer_type, str) or buffer_type not in BUFFER_REGISTRY:
        return {}, {}
    if not BUFFER_REGISTRY.is_loaded(buffer_type):
        return static_class_config(BUFFER_REGISTRY.location(buffer_type)) or ({}, {})
    cls = BUFFER_REGISTRY.get(buffer_type)
    config: dict = {}
    for klass in reversed(getattr(cls, '__mro__', ())):  # a subclass adds its keys to those it inherits
        if isinstance(vars(klass).get('config'), dict):
            config.update(copy.deepcopy(vars(klass)['config']))
    return config, (class_comments(cls) if config else {})


def _buffer_type(policy: dict, main: dict, overrides: Optional[Sequence[Any]]) -> Any:
    """``policy.other.replay_buffer.type`` as the policy's default, the file and the overrides set it."""
    found = policy.get('other', {}).get('replay_buffer', {}).get('type')
    node: Any = main
    for part in BUFFER_PATH.split('.') + ['type']:
        node = node.get(part, _UNSET) if isinstance(node, dict) else _UNSET
    found = found if node is _UNSET else node
    return override_value(overrides, BUFFER_PATH + '.type', found)


def _drop_switched_buffer_keys(main: dict, result: dict, overrides: Optional[Sequence[Any]]) -> Optional[str]:
    """An override that switches ``policy.other.replay_buffer.type`` (a resume with ``--accept-config-change``, a
    tuned type) drops the file's values of the keys only its former buffer declares (a prioritized buffer's
    ``alpha`` when switching to ``fifo``): they belong to a buffer the run no longer builds. Returns the warning to
    give once the config compiles (the keys set away from their defaults), or None."""
    section = main.get('policy', {}).get('other', {}).get('replay_buffer') if isinstance(main.get('policy'), dict) \
        else None
    if not isinstance(section, dict):
        return None
    former = section.get('type')
    switched = override_value(overrides, BUFFER_PATH + '.type', former)
    if former == switched or not isinstance(former, str):
        return None
    kept = set(result['policy'].get('other', {}).get('replay_buffer', {}))  # the policy's and the new buffer's keys
    defaults = buffer_defaults(former)[0]
    dropped = {key: section.pop(key) for key in sorted(set(defaults) - kept) if key in section}
    dropped = {key: value for key, value in dropped.items() if value != defaults[key]}
    if not dropped:
        return None
    shown = ', '.join(f"{key}={value!r}" for key, value in dropped.items())  # (set away from their defaults: said,
    many = len(dropped) > 1  # so a switch does not silently lose a setting)
    return (f"{BUFFER_PATH}.type={switched!r} replaces the file's {former!r}: its key{'s' * many} {shown} "
            f"{'are' if many else 'is'} dropped ({switched!r} does not take {'them' if many else 'it'})")


def _unregistered_buffer_keys(main: dict, reference: dict, buffer_type: Any, builds_buffer: bool) -> None:
    """Keys the config ``main`` sets under ``policy.other.replay_buffer`` that neither the policy nor a registered
    buffer declares (``reference``), beside a buffer type no module registers: the type is the fault (its module was
    not imported), said as such (a ``ConfigError`` naming the key, the registry's fix), not as unknown keys; dropped
    when nothing builds the buffer."""
    policy = main.get('policy')
    section = policy.get('other', {}).get('replay_buffer') if isinstance(policy, dict) and \
        isinstance(policy.get('other'), dict) else None
    if not isinstance(section, dict) or not isinstance(buffer_type, str) or buffer_type in BUFFER_REGISTRY:
        return
    declared = reference['policy'].get('other', {}).get('replay_buffer', {})
    unknown = [key for key in section if key not in declared]
    if not declared or not unknown:  # (a policy without a replay buffer: the merge names the keys)
        return
    if builds_buffer:
        BUFFER_REGISTRY.get_for(buffer_type, BUFFER_PATH + '.type', load=False)
    for key in unknown:
        section.pop(key)


def override_list(overrides: Any) -> List[Any]:
    """``overrides`` as a list: ``'key.path=value'`` strings and ``(key, value)`` pairs as given, a dict
    ``{'key.path': value}`` as its pairs, one string as itself (not its characters); anything else is one line."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return list(overrides.items())
    if isinstance(overrides, str):
        return [overrides]
    if not isinstance(overrides, (list, tuple)):
        raise ConfigError(f"overrides must be a list of 'key.path=value' strings (or a dict of key path -> value), "
                          f"got {type(overrides).__name__}")
    return list(overrides)


def override_keys(overrides: Optional[Iterable[Any]]) -> List[Any]:
    """The dotted key of each override (``'key.path=value'`` or ``(key, value)``), in order."""
    return [(parse_override(item) if isinstance(item, str) else item)[0] for item in overrides or ()]


def override_value(overrides: Optional[Sequence[Any]], path: str, default: Any = None) -> Any:
    """The value the last of ``overrides`` gives ``path``, or ``default`` (a malformed override is skipped here:
    ``apply_overrides`` reports it)."""
    found = default
    for override in overrides or ():
        try:
            key, value = parse_override(override) if isinstance(override, str) else override
        except (ConfigError, TypeError, ValueError):
            continue
        if key == path:
            found = value
    return found


_UNSET = object()


def _merge_buffer_keys(result: dict, comments: Dict[str, str], buffer_type: Any) -> None:
    """Add the keys the buffer declares (``buffer_defaults``) under ``policy.other.replay_buffer``; the policy's own
    values and comments for the same keys win."""
    own, own_comments = buffer_defaults(buffer_type)
    if not own:
        return
    section = result['policy'].setdefault('other', {}).setdefault('replay_buffer', {})
    for key, value in own.items():
        section.setdefault(key, value)
    for key, comment in own_comments.items():
        comments.setdefault(f'{BUFFER_PATH}.{key}', comment)


def default_config(policy_type: str) -> dict:
    """Every default of a run with this policy, before the file and overrides are applied."""
    policy, _ = policy_defaults(policy_type)
    cfg = copy.deepcopy(D.TOP_LEVEL)
    cfg['env'] = copy.deepcopy(D.ENV)
    cfg['parallel'] = copy.deepcopy(D.PARALLEL)
    cfg['logger'] = copy.deepcopy(D.LOGGER)
    cfg['policy'] = policy
    cfg['import_names'] = []
    return cfg


#: Stable-Baselines3's policy classes (``PPO('MlpPolicy', env)``): given for acframe's ``policy`` section
SB3_POLICY_CLASSES = ('MlpPolicy', 'CnnPolicy', 'MultiInputPolicy', 'MlpLstmPolicy', 'CnnLstmPolicy',
                      'MultiInputLstmPolicy')


def section_key_meant(path: str, value: Any, section: Mapping[str, Any]) -> Optional[str]:
    """The key a string given for a whole section (``path``, whose declared keys are ``section``) most likely meant:
    its ``type`` (``rnn='lstm'``, ``policy='ppo'``), except for ``env``, whose ``type`` is the env factory: a name
    that no factory is registered under is an env id (``env='CartPole-v1'``: ``env.env_id``). None for other values."""
    if not isinstance(value, str) or 'type' not in section:
        return None
    if path == 'policy' and value in SB3_POLICY_CLASSES:  # (SB3's PPO('MlpPolicy', ...): a network, not an algorithm)
        return (f"policy.type='ppo' (or 'a2c', 'impala', 'acer': the algorithm); {value!r} is Stable-Baselines3's "
                f"network, which is acframe's policy.model (its encoder: 'mlp', 'nature_cnn'; a Dict observation "
                f"takes one per key)")
    if path == 'env' and 'env_id' in section:
        from ..registry import ENV_REGISTRY
        if value not in ENV_REGISTRY:
            return f"env.env_id={value!r}"
    return f"{path}.type={value!r}"


def deep_merge(base: dict, update: dict, path: str = '', strict: bool = True, root: Optional[dict] = None) -> dict:
    """Merge ``update`` into ``base`` (in place) and return it.

    With ``strict``, a key absent from ``base`` is a ``ConfigError`` naming its full path and the closest
    valid key — except under a default that is an empty dict, which marks a free-form mapping
    (``env.env_kwargs``, ``policy.model``).
    """
    if not isinstance(update, dict):
        meant = section_key_meant(path, update, base)
        raise ConfigError(f"config key '{path}' must be a dict, got {type(update).__name__} {update!r}"
                          + (f"; did you mean {meant}?" if meant else ''))
    free_form = strict and (len(base) == 0 or path in FREE_FORM_WITH_DECLARED_KEYS)
    root = base if root is None else root
    for key, value in update.items():
        full = f"{path}.{key}" if path else str(key)
        if key not in base:
            if strict and not free_form:
                raise ConfigError(unknown_key_message(full, key, base, path, root))
            base[key] = copy.deepcopy(value)
            continue
        if isinstance(base[key], dict) and base[key] is not None:
            if value is None:
                raise ConfigError(f"config key '{full}' must be a dict, got None")
            deep_merge(base[key], value, full, strict, root)
        else:
            base[key] = copy.deepcopy(value)
    return base


def unknown_key_message(full: str, key: str, siblings: dict, parent: str, root: Optional[dict] = None) -> str:
    """Name the unknown key and acframe's for it: the key of another framework's name (``FOREIGN_NAMES``), the
    closest sibling, else the same name elsewhere in ``root``; and the policies that declare it, when other
    policies do."""
    foreign = foreign_name_message(full, key)
    if foreign:
        return f"unknown config key '{full}': {foreign}"
    declared = policies_declaring(full)
    if declared:
        current = (root or {}).get('policy', {}).get('type') if isinstance((root or {}).get('policy'), dict) else None
        own = (isinstance(current, str) and current in POLICY_REGISTRY
               and not POLICY_REGISTRY.location(current).startswith('acframe.'))
        fix = (f"or declare it in the config of policy '{current}' (a default with its rule above it, docs/custom_policy.md)"
               if own else f"or use policy.type={declared[0]}")
        return f"unknown config key '{full}': a key of policy {', '.join(declared)}, not of this one; remove it, {fix}"
    moved = _paths_named(str(key), root) if root is not None else []
    if len(moved) == 1:  # the one key of that very name, in another section: misplaced, not misspelled
        return f"unknown config key '{full}'; did you mean '{moved[0]}'?"
    hint = closest(key, siblings, cutoff=0.6)
    prefix = f"{parent}." if parent else ""
    if hint:
        return f"unknown config key '{full}'; did you mean '{prefix}{hint}'?"
    elsewhere = _closest_path(str(key), root) if root is not None else None
    if elsewhere:
        return f"unknown config key '{full}'; did you mean '{elsewhere}'?"
    if not siblings:
        return f"unknown config key '{full}': no keys are declared under '{parent or '(top level)'}'; remove it"
    valid = ', '.join(sorted(map(str, siblings)))
    return f"unknown config key '{full}'; valid keys under '{parent or '(top level)'}' are: {valid}"


def policies_declaring(full: str) -> List[str]:
    """The registered policies whose defaults declare the dotted key ``full`` (a ``policy.`` key), sorted."""
    if not full.startswith('policy.'):
        return []
    names = []
    for name in POLICY_REGISTRY.names():
        try:
            defaults = {'policy': policy_defaults(name)[0]}
        except Exception:  # (a user's policy that cannot be read: not a hint worth an error of its own)
            continue
        if get_path(defaults, full) is not MISSING:
            names.append(name)
    return sorted(names)


def _key_paths(root: dict) -> List[str]:
    """Every dotted key path of ``root``, depth first."""
    paths: List[str] = []

    def walk(node: dict, prefix: str) -> None:
        for name, value in node.items():
            paths.append(prefix + str(name))
            if isinstance(value, dict):
                walk(value, prefix + str(name) + '.')

    walk(root, '')
    return paths


def _paths_named(key: str, root: dict) -> List[str]:
    """The full paths in ``root`` whose last name is ``key``."""
    return [path for path in _key_paths(root) if path.rsplit('.', 1)[-1] == key]


def _closest_path(key: str, root: dict) -> Optional[str]:
    """The full path of the key in ``root`` whose last name is closest to ``key`` (a misplaced key)."""
    paths = _key_paths(root)
    by_last = {}
    for path in paths:
        by_last.setdefault(path.rsplit('.', 1)[-1], path)
    hint = closest(key, by_last, cutoff=0.8)
    return by_last[hint] if hint else None


def parse_override(text: str) -> Tuple[str, Any]:
    """``'policy.learn.learning_rate=3e-4'`` -> ``('policy.learn.learning_rate', 0.0003)``."""
    if '=' not in text:
        raise ConfigError(f"override '{text}' is not of the form key.path=value (e.g. policy.learn.learning_rate=3e-4)")
    key, raw = text.split('=', 1)
    key = key.strip()
    raw = raw.strip()
    if raw in ('None', 'null', 'none'):
        return key, None
    if raw in ('true', 'True'):
        return key, True
    if raw in ('false', 'False'):
        return key, False
    if raw.lower() in ('inf', '+inf', '-inf', 'infinity', '+infinity', '-infinity'):  # (the reference's [-inf, inf])
        return key, float(raw)
    try:
        return key, ast.literal_eval(_dict_calls_as_literals(ast.parse(raw, mode='eval')))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return key, raw


def _dict_calls_as_literals(tree: ast.Expression) -> ast.Expression:
    """``dict(type='a', n=2)`` written as the config files write it -> the literal ``{'type': 'a', 'n': 2}``, so an
    override reads as the file would; nothing is called (``ast.literal_eval`` still refuses any other call)."""
    class DictCalls(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            names = [keyword.arg for keyword in node.keywords]
            if isinstance(node.func, ast.Name) and node.func.id == 'dict' and not node.args and \
                    None not in names and len(set(names)) == len(names):  # (a repeated key stays text, as in Python)
                return ast.Dict(keys=[ast.Constant(keyword.arg) for keyword in node.keywords],
                                values=[keyword.value for keyword in node.keywords])
            return node
    return ast.fix_missing_locations(DictCalls().visit(tree))


def apply_overrides(cfg: dict, overrides: Iterable[Union[str, Tuple[str, Any]]],
                    renamed: Optional[List[Tuple[str, str]]] = None, reference: Optional[dict] = None) -> None:
    """Set each ``key.path=value`` in ``cfg`` (a merged config); a renamed key sets its new name (``ding_compat``;
    ``renamed`` takes ``(old, new)`` for the caller to warn, None: warned here). ``reference``: the defaults the
    policy declares (which sections of ``_DECLARED_IN_FREE_FORM`` it declares; else ``cfg``'s keys tell)."""
    valid = leaf_paths(cfg)
    declared = leaf_paths(reference) if reference is not None else valid
    for item in overrides or ():
        key, value = parse_override(item) if isinstance(item, str) else item
        key = translate_override(key, value, cfg['policy']['type'], valid, renamed)
        if key is None:
            continue
        if key == 'env_manager.type':  # create_config's section, written without it
            raise ConfigError(f"override '{key}': env_manager is a config file's create_config section; on the "
                              f"command line it is env.manager={value}")
        if key.startswith('create_config.'):  # a file's create_config, written as an override
            named = {'create_config.env.type': 'env.type', 'create_config.env_manager.type': 'env.manager',
                     'create_config.policy.type': 'policy.type'}.get(key)
            raise ConfigError(f"override '{key}': create_config is a config file's; on the command line "
                              + (f"it is {named}={value}" if named else "its keys are env.type, env.manager and "
                                 "policy.type (create_config.import_names: --import MODULE)"))
        parts = key.split('.')
        node, path = cfg, ''
        for part in parts[:-1]:
            path = f"{path}.{part}" if path else part
            if isinstance(node, dict) and part not in node and (
                    path in _DECLARED_IN_FREE_FORM or path.startswith(tuple(f + '.' for f in _WHOLLY_FREE_FORM))):
                node[part] = {}  # a section some policies declare, on a model that has none (``check_recurrent`` says),
                #                  or a mapping inside a wholly free-form one (``logger.options.mine.file=...``)
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(unknown_key_message(path, part, node if isinstance(node, dict) else {}, path.rpartition('.')[0], cfg))
            node = node[part]
        last = parts[-1]
        if not isinstance(node, dict):
            raise ConfigError(f"override '{key}': '{path}' is not a dict")
        if last not in node and len(node) > 0 and not _is_free_form(path) and not (
                path in _DECLARED_IN_FREE_FORM and not any(p.startswith(path + '.') for p in declared)):
            # (a section the policy does not declare is as free as the model it is passed to, which checks it)
            raise ConfigError(unknown_key_message(key, last, node, path, cfg))
        if isinstance(node.get(last), dict) and node[last] and not _is_free_form(key):
            if not isinstance(value, dict):  # a section is changed key by key, never replaced by a scalar
                first = next(iter(node[last]))
                example = (section_key_meant(key, value, node[last])
                           or (f"{key}.{first}=None" if first == 'type' and value is None else f"{key}.{first}=..."))
                raise ConfigError(f"config key '{key}' must be a dict (a section of keys), got {type(value).__name__} "
                                  f"{value!r}; set one of its keys, e.g. {example}")
            deep_merge(node[last], value, key, root=cfg)
            continue
        node[last] = value


#: free-form mappings where a policy may declare some keys (``policy.model.rnn``): the declared keys are checked,
#: any other key is passed through (to the model)
FREE_FORM_WITH_DECLARED_KEYS = ('policy.model',)
#: declared sections inside a free-form mapping: strict again (a typo is an error)
_DECLARED_IN_FREE_FORM = ('policy.model.rnn',)
#: free-form mappings with no declared key, read by the user's code (an env's kwargs, a logger backend's options):
#: a dotted override may make a mapping inside them, as a config file may write one
_WHOLLY_FREE_FORM = ('env.env_kwargs', 'env.domain_randomization.params', 'logger.options')


def _is_free_form(path: str) -> bool:
    if path in _DECLARED_IN_FREE_FORM or path.startswith(tuple(f + '.' for f in _DECLARED_IN_FREE_FORM)):
        return False
    free = _WHOLLY_FREE_FORM + FREE_FORM_WITH_DECLARED_KEYS
    return path in free or path.startswith(tuple(f + '.' for f in free))


def compile_config(
    cfg: ConfigInput,
    overrides: Optional[Sequence[Union[str, Tuple[str, Any]]]] = None,
    seed: Optional[int] = None,
    refuse_imports_under: Sequence[str] = (),
    builds_buffer: bool = True,
) -> EasyDict:
    """Merge defaults ← config ← overrides into one validated ``EasyDict``.

    ``cfg`` is a config file path (or dizoo_configs name), a ``(main_config, create_config)`` pair (a tuple or,
    as DI-engine scripts pass it, a list), or an already-compiled config. DI-engine's spellings are translated
    first (``ding_compat.translate_ding_config``). ``overrides`` are ``'key.path=value'`` strings or ``(key, value)`` pairs.
    ``refuse_imports_under``: folders no ``import_names`` module may be imported from (a run or study folder read as data).
    ``builds_buffer=False`` (a run's config read to act: eval, export, ``load_policy``): a replay buffer type that no
    module imported here registers keeps its name and loses the keys only it declares (unchecked, and read by nothing).
    DI-engine's translation notes and the stop value's warnings are said once the config compiles: a refused
    config's output is its one-line error alone.
    """
    overrides = override_list(overrides)
    renamed: List[Tuple[str, str]] = []  # former key names read as their new ones, warned once the config compiles
    aliased: Dict[str, str] = {}  # acframe's keys that a DI-engine file set under its own names
    with log_notes_held_until_compiled(), errors_naming_the_files_keys(aliased):
        if isinstance(cfg, (str, os.PathLike)):
            main, create = load_config_file(cfg)
        elif isinstance(cfg, (tuple, list)) and len(cfg) == 2 and all(isinstance(c, dict) for c in cfg):
            main, create = cfg
        elif isinstance(cfg, dict):
            main, create = cfg, {}
        else:
            raise ConfigError(f"compile_config takes a config path or a (main_config, create_config) pair, got {type(cfg).__name__}")
        main = copy.deepcopy(dict(main))
        create = copy.deepcopy(dict(create or {}))
        if not isinstance(cfg, dict):  # a file or a pair may be DI-engine's; a compiled config is acframe's already
            # the file's own modules, then those named on the command line (--import, an import_names= override),
            # register their policies before the translation reads the named policy's keys (DI-engine's dizoo modules
            # are acframe's to replace, not to import)
            import_names(own_modules(main, create) + named_imports((), overrides), refuse_under=refuse_imports_under)
            main, create = translate_ding_config(main, create, default_config,
                                                 learner_num=override_value(overrides, 'parallel.learner_num'),
                                                 cuda=override_value(overrides, 'policy.cuda'), renamed=renamed,
                                                 aliased=aliased)

        create_full = copy.deepcopy(D.CREATE)
        create_full['import_names'] = []
        extra_imports = create.pop('import_names', None) or []
        create_full = deep_merge(create_full, create, 'create_config')
        main_policy = main.get('policy', {}) if isinstance(main.get('policy', {}), dict) else {}
        # a policy.type override picks the defaults the file's keys are merged into (as the file's own type would)
        policy_type = (override_value(overrides, 'policy.type') or create_full['policy']['type']
                       or main_policy.get('type', ''))
        if not isinstance(policy_type, str):
            raise ConfigError(f"config key 'policy.type' = {policy_type!r} must be a registered policy's name")
        if not policy_type:
            raise ConfigError("create_config.policy.type is not set; name a registered policy, e.g. create_config = dict(policy=dict(type='impala'))")
        # an import_names= override adds its modules (imported here, before the policy's name is looked up)
        import_list = (module_names(extra_imports, "config key 'create_config.import_names'")
                       + module_names(main.get('import_names'), "config key 'import_names'") + named_imports((), overrides))
        import_names(import_list, refuse_under=refuse_imports_under)
        POLICY_REGISTRY._lookup(policy_type)  # a clear error for an unknown name, before anything else

        result = default_config(policy_type)
        _, policy_comments = policy_defaults(policy_type)
        comments = _all_comments(policy_comments)
        buffer_type = _buffer_type(result['policy'], main, overrides)
        _merge_buffer_keys(result, comments, buffer_type)
        switch_note = _drop_switched_buffer_keys(main, result, overrides)
        reference = copy.deepcopy(result)
        _unregistered_buffer_keys(main, reference, buffer_type, builds_buffer)
        main.pop('import_names', None)
        deep_merge(result, main)
        result['policy']['type'] = policy_type
        # create_config names the components; values given there win over the same keys in main_config
        if 'type' in create.get('env', {}):
            result['env']['type'] = create_full['env']['type']
        if 'type' in create.get('env_manager', {}):
            result['env']['manager'] = create_full['env_manager']['type']
        manager = result['env']['manager']
        if not isinstance(manager, str):
            raise ConfigError(f"create_config.env_manager.type = {manager!r} must be a string: 'sync', 'async', 'envpool' "
                              f"or a registered env manager's name")
        result['env']['manager'] = MANAGER_ALIASES.get(manager, manager)
        result['import_names'] = list(dict.fromkeys(import_list))  # in the order given: a later module may re-register
        file_env = dict(result['env'])
        apply_overrides(result, overrides, renamed, reference)
        result['import_names'] = list(dict.fromkeys(import_list))
        if seed is not None:
            result['seed'] = int(seed)
        _check_plain_data(result, '')
        check_env_id_override(result['env'], overrides)
        as_given = {'env': dict(result['env'])}  # (the warnings below quote the values as written, before the rules)
        check_config(result, reference, comments)  # every key against the rule declared above its default
        check_exp_name(result['exp_name'])
        check_env_manager(result['env']['manager'])
        check_n_sample(result['policy']['collect']['n_sample'], result['env']['collector_env_num'],
                       (result.get('parallel') or {}).get('learner_num'))
        # the warnings of a config that compiles (a refused one says its error alone)
        for old, new in dict.fromkeys(renamed):
            warn_renamed(old, new, stacklevel=2)
        if switch_note:
            warnings.warn(switch_note, ConfigWarning, stacklevel=2)
        warn_inherited_stop_value(file_env, as_given, overrides)
        if not isinstance(cfg, dict):  # a file or a pair (a compiled config has every key; a stored run's was warned
            # about when it was written, not at each resume, evaluation or load)
            warn_idle_rnn_keys(result, reference, rnn_type_given(main, overrides))
            warn_default_stop_value(main, as_given, overrides, reference['env']['stop_value'])
        return EasyDict(result)


_HOLDING = threading.RLock()


def own_modules(main: dict, create: dict) -> List[str]:
    """The modules a config file names itself (``import_names``, ``create_config.import_names`` and DI-engine's
    ``create_config.{env,policy,env_manager}.import_names``) but DI-engine's ``dizoo.*``/``ding.*``, whose envs,
    policies and env managers acframe has itself."""
    from .ding_compat import _is_dizoo, _names, section_import_names

    named = _names(create.get('import_names')) + section_import_names(create) + _names(main.get('import_names'))
    return [name for name in named if not _is_dizoo(name)]


@contextlib.contextmanager
def errors_naming_the_files_keys(aliased: Dict[str, str]) -> Iterator[None]:
    """A ``ConfigError`` about a key a DI-engine file set under its own name (``aliased``: acframe key -> the file's
    key) also names the file's key, which the user wrote."""
    try:
        yield
    except ConfigError as exc:
        text = str(exc)
        named = [(key, ding_key) for key, ding_key in aliased.items() if key in text and ding_key not in text]
        if not named:
            raise
        said = '; '.join(f"{key} is the file's {ding_key}" for key, ding_key in named)
        raise ConfigError(f"{text} ({said})") from exc


@contextlib.contextmanager
def log_notes_held_until_compiled() -> Iterator[None]:
    """Hold the records of the ``acframe`` logger (DI-engine's translation notes) in place of its handlers; hand them
    on, in order, when the block ends normally, drop them when it raises. For the main thread's compile (the logger's
    handlers are the process's)."""
    log = logging.getLogger('acframe')
    held: List[logging.LogRecord] = []

    class Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    with _HOLDING:  # one compile at a time swaps the handlers (a nested one in the same thread hands on to the outer)
        handlers, propagate = log.handlers[:], log.propagate
        log.handlers, log.propagate = [Hold()], False
        try:
            yield
        finally:  # (with the handlers an import_names module added meanwhile)
            log.handlers = handlers + [h for h in log.handlers if not isinstance(h, Hold)]
            log.propagate = propagate
        for record in held:
            log.handle(record)




def check_env_manager(name: str) -> None:
    """``env.manager`` names a registered env manager (``ENV_MANAGER_REGISTRY``; a user's is registered by a module in
    ``import_names``)."""
    from ..registry import ENV_MANAGER_REGISTRY

    ENV_MANAGER_REGISTRY.get_for(name, 'env.manager', load=False)  # the manager's module is imported where it runs


@contextlib.contextmanager
def stop_value_unwarned() -> Iterator[None]:
    """Compile without the two stop-value warnings (``warn_inherited_stop_value``, ``warn_default_stop_value``):
    where nothing trains (-m eval, export, ``load_policy``, check-env) a stop value means nothing."""
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message=r'env\.(env_id was overridden|stop_value is not set)',
                                category=ConfigWarning)
        yield


def warn_inherited_stop_value(file_env: dict, cfg: dict, overrides: Optional[Iterable[Any]]) -> None:
    """Warn when an override changed ``env.env_id`` but not ``env.stop_value``: the stop value belongs to the other env
    (``file_env``: the config's env section before the overrides, named as messages name envs)."""
    keys = set(override_keys(overrides))
    env_id = cfg['env']['env_id']
    if ('env.env_id' in keys and 'env.stop_value' not in keys and env_id != file_env['env_id']
            and cfg['env']['stop_value'] is not None):
        if not _env_id_resolves(cfg['env']):
            return  # an id that names no env: its one-line error comes when the env is built, without this warning
        from ..envs.gym_env import env_name  # (here: a config that compiles without this warning imports no env)
        warnings.warn(f"env.env_id was overridden to '{env_id}' but env.stop_value={cfg['env']['stop_value']} is the config's "
                      f"value for '{env_name(file_env)}'; set env.stop_value for '{env_id}' (or env.stop_value=None to never stop early)",
                      ConfigWarning, stacklevel=3)


def check_env_id_override(env: dict, overrides: Optional[Iterable[Any]]) -> None:
    """Refuse an ``env.env_id`` override naming a registered env type while ``env.type`` stays another type: that
    type's factory builds its own env, whatever the id (``env.env_id=toy_tictactoe_nomask`` on a ``toy_tictactoe`` run
    was the masked game again). A gymnasium ``env.type`` says so itself, when the env is built."""
    from ..registry import ENV_REGISTRY

    keys = set(override_keys(overrides))
    kind, env_id = env.get('type', 'gym'), env.get('env_id')
    if ('env.env_id' in keys and 'env.type' not in keys and kind != 'gym' and isinstance(env_id, str)
            and env_id != kind and env_id in ENV_REGISTRY):
        raise ConfigError(f"env.env_id={env_id} names an env type, but env.type '{kind}' builds the env (its factory "
                          f"does not build another type by its env_id): override env.type={env_id} instead")


def _env_id_resolves(env: dict) -> bool:
    """Whether a gym env's ``env_id`` names an env (another env type's id is its own business: True)."""
    if env.get('type', 'gym') != 'gym':
        return True
    from ..envs.gym_env import resolve_env_id

    try:
        resolve_env_id(str(env['env_id']))
    except ConfigError:
        return False
    return True


def warn_default_stop_value(main: dict, cfg: dict, overrides: Optional[Iterable[Any]], default: Any) -> None:
    """Warn when a config of another env than CartPole leaves ``env.stop_value`` to the default (CartPole's 195): a
    run of that env would stop as solved at a return of 195 without the user having said so."""
    given = isinstance(main.get('env'), dict) and 'stop_value' in main['env']
    keys = set(override_keys(overrides))
    env = cfg['env']
    cartpole = env.get('type', 'gym') == 'gym' and str(env['env_id']).lower().startswith('cartpole')
    if given or {'env.stop_value', 'env.env_id'} & keys or cartpole or env['stop_value'] != default:
        return  # (an env_id override is warn_inherited_stop_value's)
    name = env['env_id'] if env.get('type', 'gym') == 'gym' else f"env type '{env['type']}'"
    warnings.warn(f"env.stop_value is not set, so the default {default} (CartPole's) stops a run of {name} as solved "
                  f"when its evaluation return reaches it; set env.stop_value for this env (or None: never stop early)",
                  ConfigWarning, stacklevel=3)


#: whether the model instance a script gives its pipeline (``model=``) is recurrent, while its run is set up
_GIVEN_MODEL_RECURRENT: contextvars.ContextVar = contextvars.ContextVar('acframe_given_model_recurrent', default=None)


@contextlib.contextmanager
def model_given(model: Any) -> Iterator[None]:
    """While the config of a run a script gives a model instance (``model=``) is compiled and checked, that model
    decides ``recurrent_model`` (its ``recurrent`` attribute), whatever the config names."""
    token = _GIVEN_MODEL_RECURRENT.set(None if model is None else bool(getattr(model, 'recurrent', False)))
    try:
        yield
    finally:
        _GIVEN_MODEL_RECURRENT.reset(token)


def recurrent_model(policy: Any) -> bool:
    """Whether the model ``policy`` (a config's ``policy`` section) builds is recurrent: acframe's core is asked for
    (``policy.model.rnn.type``), or ``policy.model.type`` names a registered model class of one's own that says so as
    a class attribute (``recurrent = True``: docs/custom_policy.md, "A recurrent form"), or the model instance a
    script gives (``model=``, ``model_given``) is recurrent. Either way the learn modes cut its sequences by
    ``policy.model.rnn.seq_len`` and ``burn_in``, so their checks apply to all three. (acframe's own models,
    registered lazily, say it per instance: they are not imported here.)"""
    given = _GIVEN_MODEL_RECURRENT.get()
    if given is not None:
        return given
    model = policy.get('model') if isinstance(policy, Mapping) else None
    if not isinstance(model, Mapping):
        return False
    rnn, name = model.get('rnn'), model.get('type')
    if isinstance(rnn, Mapping) and rnn.get('type'):
        return True
    from ..registry import MODEL_REGISTRY

    if not isinstance(name, str) or name not in MODEL_REGISTRY or not MODEL_REGISTRY.is_loaded(name):
        return False
    return getattr(MODEL_REGISTRY.get(name), 'recurrent', None) is True


def rnn_type_given(main: dict, overrides: Optional[Iterable[Any]]) -> bool:
    """Whether the config (``main``) or an override names ``policy.model.rnn.type``, even as None: a core turned off
    on purpose (a stored run's config, a recurrent file's feed-forward baseline) is not a slip to warn about."""
    model = main.get('policy', {}).get('model') if isinstance(main.get('policy'), dict) else None
    rnn = model.get('rnn') if isinstance(model, dict) else None
    if isinstance(rnn, dict) and 'type' in rnn:
        return True
    for item in overrides or ():
        key, value = parse_override(item) if isinstance(item, str) else item
        if key == 'policy.model.rnn.type' or key == 'policy.model.rnn' and isinstance(value, dict) and 'type' in value:
            return True
    return False


def warn_idle_rnn_keys(cfg: dict, reference: dict, type_given: bool) -> None:
    """Warn when ``policy.model.rnn`` sets keys away from their defaults and nobody named a core (``type`` left
    None): they configure nothing, and a user who set ``seq_len`` or ``hidden_size`` may have expected a recurrent run."""
    model, declared_model = cfg['policy'].get('model'), reference['policy'].get('model')
    rnn = model.get('rnn') if isinstance(model, dict) else None
    declared = declared_model.get('rnn') if isinstance(declared_model, dict) else None
    from .introspect import module_dict_config

    core = module_dict_config('acframe.config.defaults', 'RECURRENT_MODEL')[0]['rnn']  # (the core's own keys)
    if not isinstance(declared, dict):  # a policy of one's own without a recurrent form
        declared = core
    if type_given or not isinstance(rnn, dict) or rnn.get('type'):
        return
    own = recurrent_model(cfg['policy'])  # a model of one's own that is recurrent: seq_len and burn_in cut its sequences
    idle = [f"{key}={value!r}" for key, value in rnn.items() if key != 'type' and key in declared
            and value != declared[key] and (not own or key in core)]
    if idle:
        verb = 'configures' if len(idle) == 1 else 'configure'
        if own:
            named = f"model '{model['type']}'" if model.get('type') else 'the model given'
            warnings.warn(f"policy.model.rnn: {', '.join(idle)} {verb} acframe's recurrent core, and {named} "
                          f"is recurrent of its own (policy.model.rnn.type=None): "
                          f"{'it configures' if len(idle) == 1 else 'they configure'} nothing (policy.model.rnn's "
                          f"seq_len and burn_in do cut its sequences)", ConfigWarning, stacklevel=3)
            return
        warnings.warn(f"policy.model.rnn: {', '.join(idle)} {verb} a recurrent core and there is none "
                      f"(policy.model.rnn.type=None): the run is feed-forward; set policy.model.rnn.type=lstm or gru "
                      f"for a core", ConfigWarning, stacklevel=3)


#: the ``parallel`` keys each pipeline reads (the others configure another pipeline)
_DATA_PARALLEL_KEYS = ('learner_num', 'learner_num_cpus', 'learner_backend', 'collective_timeout_s', 'start_method',
                       'start_timeout')  # (the last two: how a serial run's ranks 1..N-1 start)
PARALLEL_KEYS_READ = {'serial': _DATA_PARALLEL_KEYS, 'serial_onpolicy': _DATA_PARALLEL_KEYS,
                      'tune': _DATA_PARALLEL_KEYS,  # (its trials run the serial pipelines)
                      'async': ('async_worker_num', 'learner_num')}  # (learner_num: -m async refuses it)


def warn_idle_parallel_keys(overrides: Optional[Iterable[Any]], mode: str) -> None:
    """Warn for each ``parallel.*`` override that pipeline ``mode`` does not read ('parallel' reads all but
    ``async_worker_num``): ``parallel.actor_num=4`` on an A3C run does not give it 4 workers."""
    read = PARALLEL_KEYS_READ.get(mode)
    keys = override_keys(overrides)
    for key in dict.fromkeys(k for k in keys if isinstance(k, str) and k.startswith('parallel.')):
        name = key.split('.')[1]
        idle = name == 'async_worker_num' if read is None else name not in read
        if not idle:
            continue
        owner = '-m async' if name == 'async_worker_num' else (
            '-m parallel and the serial pipelines' if name in _DATA_PARALLEL_KEYS else '-m parallel')
        instead = {'async': '; its workers are parallel.async_worker_num'}.get(mode, '')
        warnings.warn(f"{key} is read by {owner} only; this {MODE_NAMES.get(mode, mode)} run ignores it{instead}",
                      ConfigWarning, stacklevel=3)


#: the config sections only training reads: acting on a trained run (-m eval, -m export, load_policy) builds no
#: learner ranks, workers or replay buffer (``logger`` is read by ``-m eval --video``'s uploads)
TRAINING_ONLY_SECTIONS = ('parallel', 'policy.other.replay_buffer')


def in_sections(key: str, sections: Sequence[str]) -> bool:
    """Whether dotted ``key`` is one of ``sections`` or lies under one."""
    return any(key == section or key.startswith(section + '.') for section in sections)


def is_training_only(key: str) -> bool:
    """Whether dotted ``key`` is read by training alone (``TRAINING_ONLY_SECTIONS``)."""
    return in_sections(key, TRAINING_ONLY_SECTIONS)


def warn_training_only_keys(overrides: Optional[Iterable[Any]], reads_logger: bool = True) -> None:
    """Warn for each override that acting on a trained run does not read (``parallel.learner_num=3`` given to
    ``-m eval`` was taken without a word, and named its result file apart); ``reads_logger=False`` (an export,
    ``load_policy``): ``logger`` keys too (only ``-m eval`` reads them, for its ``--video`` uploads)."""
    keys = list(dict.fromkeys(k for k in override_keys(overrides) if isinstance(k, str)))
    idle = [key for key in keys if is_training_only(key)]
    if idle:
        verb = 'configures' if len(idle) == 1 else 'configure'
        warnings.warn(f"{', '.join(idle)} {verb} training only; acting on a trained run (an evaluation, an export, "
                      f"load_policy) ignores {'it' if len(idle) == 1 else 'them'}", ConfigWarning, stacklevel=3)
    unread = [] if reads_logger else [key for key in keys if in_sections(key, ('logger',))]
    if unread:
        warnings.warn(f"{', '.join(unread)}: logger keys are read by training and by -m eval (its --video uploads); "
                      f"an export or load_policy ignores {'it' if len(unread) == 1 else 'them'}", ConfigWarning,
                      stacklevel=3)


def warn_unwatched_step_timeout(overrides: Optional[Iterable[Any]], cfg: Any, mode: str, new_run: bool = False) -> None:
    """Warn when an override (or, for a ``new_run``, its config file: a value other than the default) sets
    ``env.step_timeout_s`` for a serial run whose envs step in this process (a manager of ``kind`` 'sync', a user's
    subclass of it too): no watchdog runs there (a user's script may own SIGALRM), so a hung step
    stalls the run whatever the value; the subprocess manager ('async') and -m parallel's workers watch it."""
    if mode not in ('serial', 'serial_onpolicy', 'tune'):
        return
    keys = override_keys(overrides)
    value = cfg.env.get('step_timeout_s')
    if value is None or ('env.step_timeout_s' not in keys and not (new_run and value != D.ENV['step_timeout_s'])):
        return
    from ..envs import manager_class

    cls = manager_class(cfg.env.manager)
    if getattr(cls, 'kind', None) == 'sync':  # (its envs step in this process: 'sync', or a user's subclass of it)
        warnings.warn(f"env.step_timeout_s={cfg.env.step_timeout_s:g} watches envs that step in subprocesses "
                      f"(env.manager='async') or in -m parallel's workers; this serial run's env.manager="
                      f"'{cfg.env.manager}' steps them in this process, where a hung step is not stopped: set "
                      f"env.manager='async' too", ConfigWarning, stacklevel=3)


#: how messages name a pipeline
MODE_NAMES = {'serial': 'serial', 'serial_onpolicy': 'serial', 'parallel': '-m parallel', 'async': '-m async',
              'tune': '-m tune (serial trials)'}
#: the pipeline function of each mode, as a script calls it
PIPELINE_FUNCTIONS = {'serial': 'serial_pipeline', 'serial_onpolicy': 'serial_pipeline_onpolicy',
                      'parallel': 'parallel_pipeline', 'async': 'async_pipeline'}


def warn_other_pipeline(cfg: Any, mode: str) -> None:
    """Warn when a config written for one pipeline (its ``pipeline`` key: an A3C file's 'async') is run by another
    (``mode``: an -m given, or a script's pipeline function): without a word, the A3C file trained as serial A2C."""
    written = cfg.get('pipeline')
    family = lambda name: 'serial' if name in ('serial', 'serial_onpolicy', 'tune') else name  # noqa: E731
    if not written or family(written) == family(mode):
        return
    said = f"this config is written for {MODE_NAMES.get(written, written)} (pipeline={written!r})"
    if mode == 'tune':  # (its trials are serial runs: what they find is for one)
        warnings.warn(f"{said}: -m tune's trials train it serially, so the values they find are a serial run's",
                      ConfigWarning, stacklevel=3)
        return
    flag = f"-m {written}" if written in ('parallel', 'async') else '-m auto'
    warnings.warn(f"{said}: this {MODE_NAMES.get(mode, mode)} run trains it otherwise; run acframe -c CONFIG without "
                  f"-m (or {flag}), or {PIPELINE_FUNCTIONS[written]}() from a script", ConfigWarning, stacklevel=3)


def _check_plain_data(value: Any, path: str, seen: Optional[set] = None) -> None:
    """Config values are data (what config.json can hold exactly): no objects, functions or cycles."""
    seen = set() if seen is None else seen
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if type(value).__module__ == 'numpy' and not hasattr(value, 'shape') or getattr(value, 'shape', None) == ():
        return  # a numpy scalar (numpy itself is not imported here: config errors stay fast)
    if isinstance(value, (dict, list, tuple)):
        if id(value) in seen:
            raise ConfigError(f"config key '{path or '(top level)'}' contains itself (a self-referencing "
                              f"{type(value).__name__}); config values must be plain data")
        seen.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(value, dict) and not isinstance(key, str):
                raise ConfigError(f"config key '{path}' has a non-string key {key!r}; config keys are strings")
            _check_plain_data(item, f"{path}.{key}" if isinstance(value, dict) and path else
                              (str(key) if isinstance(value, dict) else f"{path}[{key}]"), seen)
        seen.discard(id(value))
        return
    raise ConfigError(f"config key '{path}' holds a {type(value).__name__} ({str(value)[:40]!r}); config values must be "
                      f"plain data: numbers, strings, bools, None, lists, tuples, dicts")


def check_n_sample(n_sample: Any, num_envs: Any, learner_num: Any = None) -> None:
    """``collect.n_sample`` counts train samples across all collector envs (DI-engine's meaning), so it must be a
    positive multiple of the env count: every env then contributes ``n_sample / num_envs`` samples. With
    data-parallel learners (``learner_num``) whose share of the envs is uneven, the suggestion says so too: the
    values it gave were refused next, for the env count."""
    if isinstance(n_sample, bool) or not isinstance(n_sample, int) or not isinstance(num_envs, int) or num_envs < 1:
        return  # _check_types/_check_values name those
    if n_sample < 1 or n_sample % num_envs:
        lower = max(num_envs, n_sample // num_envs * num_envs)
        ranks = learner_num if isinstance(learner_num, int) and not isinstance(learner_num, bool) else 1
        split = ''
        if ranks > 1 and num_envs % ranks:
            envs = max(ranks, round(num_envs / ranks) * ranks)
            split = (f" (with parallel.learner_num={ranks}, the serial pipelines also split env.collector_env_num "
                     f"over the ranks: a multiple of {ranks}, e.g. {envs}, with n_sample a multiple of that)")
        raise ConfigError(
            f"policy.collect.n_sample ({n_sample}) must be a multiple of env.collector_env_num ({num_envs}): it counts "
            f"samples across all collector envs, as in DI-engine; set it to e.g. {lower} or {lower + num_envs}{split}")


def _all_comments(policy_comments: Dict[str, str]) -> Dict[str, str]:
    from .introspect import module_dict_config
    comments: Dict[str, str] = {}
    for name, prefix in (('TOP_LEVEL', ''), ('ENV', 'env.'), ('POLICY_COMMON', 'policy.'), ('PARALLEL', 'parallel.'),
                         ('LOGGER', 'logger.')):
        _, found = module_dict_config('acframe.config.defaults', name)
        comments.update({prefix + k: v for k, v in found.items()})
    comments.update({'policy.' + k: v for k, v in policy_comments.items()})
    return comments


def config_comments(cfg: Dict[str, Any]) -> Dict[str, str]:
    """The declaration and comment of every key a compiled config of ``cfg['policy']['type']`` has a default for,
    by dotted path (``{'policy.learn.learning_rate': '(float > 0) ...'}``)."""
    _, policy_comments = policy_defaults(cfg['policy']['type'])
    comments = _all_comments(policy_comments)
    _, own_comments = buffer_defaults(cfg['policy'].get('other', {}).get('replay_buffer', {}).get('type'))
    for key, comment in own_comments.items():
        comments.setdefault(f'{BUFFER_PATH}.{key}', comment)
    return comments


def to_plain(obj: Any) -> Any:
    """EasyDict/tuples -> plain dicts/lists, for printing and saving."""
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj


def save_config(cfg: dict, path: Union[str, os.PathLike]) -> None:
    """Write ``cfg`` as a loadable config file (``main_config`` + ``create_config``), atomically, each key under
    its declaration and one-line comment."""
    from ..utils import atomic_write_text
    from .run_folder import config_py_text
    atomic_write_text(path, config_py_text(cfg, note='Compiled by acframe: every key with its final value and its '
                                                     'declaration.\nRe-run with: acframe -c <this file>'))
