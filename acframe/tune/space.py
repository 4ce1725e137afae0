"""The search space of a tuning study: config key path -> distribution, as plain data.

A space is a dict such as::

    space = {
        'policy.learn.learning_rate': ['log_uniform', 1e-4, 1e-2],
        'policy.learn.entropy_weight': ['uniform', 0.0, 0.02],
        'policy.learn.epoch_per_collect': ['int', 3, 20],
        'policy.collect.n_sample': ['categorical', [64, 128, 256]],
        'policy.model.encoder_hidden_size_list': ['categorical', [[64, 64], [256, 256]]],
    }

Distributions: ``['uniform', low, high]``, ``['log_uniform', low, high]``, ``['int', low, high]`` (or
``['int', low, high, step]``), ``['log_int', low, high]``, ``['categorical', [choice, ...]]``. A space file
(``--space FILE``) is JSON (``{"space": {...}, "use_default_space": true}``) or Python holding the same two names
as literals (``space = {...}``, ``use_default_space = False``): it is parsed as data, never executed. Its keys
are merged over the policy's default space (``DEFAULT_SPACES``) unless ``use_default_space`` is False; a key
set to None drops that key from the default space.

``check_space`` compiles the config with each key's extreme values (and every categorical choice) before the
first trial, so a wrong key or an impossible value is one ``ConfigError`` naming it.
"""
from __future__ import annotations

import ast
import json
import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..config import compile_config
from ..config.run_folder import create_config_of
from ..errors import AcframeError, ConfigError

Spec = List[Any]
Space = Dict[str, Spec]

KINDS = ('uniform', 'log_uniform', 'int', 'log_int', 'categorical')
#: keys the tuner sets itself (seed per run, budget per trial, folder names)
RESERVED_KEYS = ('seed', 'max_env_step', 'exp_name')
#: the discount factors and GAE/V-trace lambdas that the RL Zoo's searches draw from
GAMMAS = [0.95, 0.98, 0.99, 0.995, 0.999]
LAMBDAS = [0.9, 0.95, 0.98, 1.0]

#: the default space of each policy type; ``n_sample`` is added per config as env.collector_env_num x N_SAMPLE_PER_ENV
DEFAULT_SPACES: Dict[str, Space] = {
    'a2c': {
        'policy.learn.learning_rate': ['log_uniform', 1e-4, 1e-2],
        'policy.learn.discount_factor': ['categorical', GAMMAS],
        'policy.learn.gae_lambda': ['categorical', LAMBDAS],
        'policy.learn.entropy_weight': ['uniform', 0.0, 0.02],
        'policy.learn.value_weight': ['uniform', 0.25, 1.0],
        'policy.learn.grad_clip_value': ['categorical', [0.5, 1.0, 5.0]],
        'policy.learn.adv_norm': ['categorical', [False, True]],
    },
    'ppo': {
        'policy.learn.learning_rate': ['log_uniform', 1e-5, 1e-3],
        'policy.learn.batch_size': ['categorical', [32, 64, 128, 256]],
        'policy.learn.epoch_per_collect': ['categorical', [3, 5, 10, 20]],
        'policy.learn.clip_ratio': ['categorical', [0.1, 0.2, 0.3]],
        'policy.learn.discount_factor': ['categorical', GAMMAS],
        'policy.learn.gae_lambda': ['categorical', LAMBDAS],
        'policy.learn.entropy_weight': ['uniform', 0.0, 0.01],
        'policy.learn.value_weight': ['uniform', 0.25, 1.0],
        'policy.learn.grad_clip_value': ['categorical', [0.5, 1.0, 5.0]],
    },
    'impala': {
        'policy.learn.learning_rate': ['log_uniform', 1e-4, 3e-3],
        'policy.unroll_len': ['categorical', [8, 16, 32]],
        'policy.learn.batch_size': ['categorical', [8, 16, 32, 64]],
        'policy.learn.update_per_collect': ['categorical', [1, 2, 4, 8]],
        'policy.learn.discount_factor': ['categorical', GAMMAS],
        'policy.learn.lambda_': ['categorical', [0.9, 0.95, 1.0]],
        'policy.learn.entropy_weight': ['uniform', 0.0, 0.02],
        'policy.learn.value_weight': ['uniform', 0.25, 1.0],
    },
    'acer': {
        'policy.learn.learning_rate': ['log_uniform', 1e-4, 3e-3],
        'policy.learn.batch_size': ['categorical', [8, 16, 32]],
        'policy.other.replay_buffer.replay_ratio': ['categorical', [1.0, 2.0, 4.0, 8.0]],
        'policy.learn.trust_region_delta': ['uniform', 0.1, 2.0],
        'policy.learn.c_clip_ratio': ['categorical', [5.0, 10.0]],
        'policy.learn.discount_factor': ['categorical', GAMMAS],
        'policy.learn.entropy_weight': ['uniform', 0.0, 0.02],
        'policy.learn.value_weight': ['uniform', 0.25, 1.0],
    },
}
#: ``collect.n_sample`` choices per collector env (n_sample counts samples across all collector envs)
N_SAMPLE_PER_ENV: Dict[str, List[int]] = {'a2c': [5, 8, 16, 32], 'impala': [1, 2, 4], 'acer': [1, 2]}
#: PPO's rollout sizes (``collect.n_sample``, rounded up to a multiple of the collector envs): whole rollouts, so that
#: each holds a minibatch of every ``batch_size`` choice, however few envs collect
PPO_ROLLOUTS = [256, 512, 1024, 2048, 4096]


def default_space(cfg: Mapping[str, Any]) -> Space:
    """The default space of ``cfg``'s policy type (empty for a policy without one). Every categorical choice list
    holds the config's own value too (trial 0, the baseline, is then the config as given), and PPO's ``batch_size``
    choices fit in its smallest rollout (no trial is refused for a minibatch larger than its rollout)."""
    policy_type, space = _policy_space(cfg['policy']['type'])
    num_envs = int(cfg['env']['collector_env_num'])
    if policy_type in N_SAMPLE_PER_ENV:
        space['policy.collect.n_sample'] = ['categorical', [k * num_envs for k in N_SAMPLE_PER_ENV[policy_type]]]
    elif policy_type == 'ppo':
        space['policy.collect.n_sample'] = ['categorical', sorted({-(-t // num_envs) * num_envs for t in PPO_ROLLOUTS})]
    for key, spec in space.items():
        try:
            own = config_value(cfg, key)
        except (KeyError, TypeError):
            continue
        if spec[0] == 'categorical' and isinstance(own, (bool, int, float, str)) and own not in spec[1]:
            spec[1] = sorted(spec[1] + [own]) if not isinstance(own, (bool, str)) else spec[1] + [own]
    rollouts, batches = space.get('policy.collect.n_sample'), space.get('policy.learn.batch_size')
    if policy_type == 'ppo' and rollouts and batches and rollouts[0] == batches[0] == 'categorical':
        try:  # the config's own pair stays; no other pair has a minibatch larger than its rollout
            own = int(config_value(cfg, 'policy.learn.batch_size'))
        except (KeyError, TypeError, ValueError):
            own = None
        if own is not None:
            rollouts[1] = [n for n in rollouts[1] if n >= own]
        smallest = min(rollouts[1])
        batches[1] = [b for b in batches[1] if b <= smallest or b == own]
    if policy_type == 'ppo' and rollouts and batches:
        _fit_recurrent_sequences(cfg, space, num_envs)
    return space


def _fit_recurrent_sequences(cfg: Mapping[str, Any], space: Dict[str, Any], num_envs: int) -> None:
    """A recurrent PPO's minibatches are whole sequences: ``batch_size`` a multiple of the sequence length and each
    env's rollout a whole number of sequences. With ``rnn.seq_len`` L > 0 only the choices that keep both stay (the
    config's own pair among them); with L = 0 (a sequence is an env's whole rollout, so the rule ties ``batch_size``
    to ``n_sample``) both keys are left out of the space: every trial keeps the config's pair."""
    from ..config.compile import recurrent_model

    try:
        policy, rnn = config_value(cfg, 'policy'), config_value(cfg, 'policy.model.rnn')
    except (KeyError, TypeError):
        return
    if not isinstance(rnn, Mapping) or not recurrent_model(policy):  # (acframe's core, or a model of one's own)
        return
    length = int(rnn.get('seq_len') or 0)
    if length <= 0:
        space.pop('policy.collect.n_sample', None)
        space.pop('policy.learn.batch_size', None)
        return
    rollouts, batches = space['policy.collect.n_sample'], space['policy.learn.batch_size']
    rollouts[1] = [n for n in rollouts[1] if (n // num_envs) % length == 0] or rollouts[1]
    batches[1] = [b for b in batches[1] if b % length == 0] or batches[1]


# ---- reading -------------------------------------------------------------------------------------------
def read_space_file(path: str) -> Tuple[Dict[str, Any], bool]:
    """``(space, use_default_space)`` of a JSON or Python space file, read as data."""
    if not os.path.isfile(path):
        raise ConfigError(f"--space {path}: no such file; pass a .json or .py file defining the search space")
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--space {path}: cannot read it ({exc})") from exc
    if path.endswith('.json'):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--space {path}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get('space'), dict):
            raise ConfigError(f"--space {path}: expected a JSON object with a \"space\" object of key path -> distribution")
        unknown = set(data) - {'space', 'use_default_space'}
    else:
        data, unknown = _python_literals(path, text)
    if unknown:
        raise ConfigError(f"--space {path}: unknown name(s) {', '.join(sorted(unknown))}; a space file holds only "
                          f"'space' and 'use_default_space'")
    use_default = data.get('use_default_space', True)
    if not isinstance(use_default, bool):
        raise ConfigError(f"--space {path}: use_default_space = {use_default!r} must be True or False")
    return data['space'], use_default


def _python_literals(path: str, text: str) -> Tuple[Dict[str, Any], set]:
    """The literal assignments of a Python space file (no code runs: anything but literals is refused)."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise ConfigError(f"--space {path}: line {exc.lineno}: {exc.msg}") from exc
    data: Dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ConfigError(f"--space {path}: line {node.lineno}: a space file holds only assignments of literals "
                              f"(space = {{...}}); it is read as data, not run")
        try:
            data[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError as exc:
            what = _first_non_literal(node.value)
            raise ConfigError(f"--space {path}: line {getattr(what, 'lineno', node.lineno)}: {node.targets[0].id} "
                              f"holds {ast.unparse(what)[:80]!r}, which is not a literal; write numbers (1e-4, not "
                              f"1e-4 * 2), strings, lists and dicts only") from exc
    if not isinstance(data.get('space'), dict):
        raise ConfigError(f"--space {path}: define space = {{'policy.learn.learning_rate': ['log_uniform', 1e-4, 1e-2], ...}}")
    return data, set(data) - {'space', 'use_default_space'}


def _first_non_literal(node: ast.AST) -> ast.AST:
    """The first part of ``node`` that ``ast.literal_eval`` does not read (a name, a call, an arithmetic expression)."""
    for part in ast.walk(node):
        if isinstance(part, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Load)):
            continue
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, (ast.USub, ast.UAdd)) \
                and isinstance(part.operand, ast.Constant):
            continue
        if isinstance(part, (ast.USub, ast.UAdd)):
            continue
        return part
    return node


def _policy_space(name: str) -> Tuple[Optional[str], Dict[str, Any]]:
    """``(the built-in policy whose space rules apply, the space)`` of policy ``name``: a built-in's
    ``DEFAULT_SPACES``; a policy of one's own, its class's ``tune_space`` (checked like ``--space``'s), else the
    default space of the built-in policy it subclasses, else none."""
    from ..errors import RegistryError
    from ..registry import POLICY_REGISTRY

    if name in DEFAULT_SPACES:
        return name, {key: list(spec) for key, spec in DEFAULT_SPACES[name].items()}
    try:
        cls = POLICY_REGISTRY.get(name)
    except RegistryError:  # not a policy this process knows: no default space (the config says so)
        return None, {}
    own = getattr(cls, 'tune_space', None)
    if own is not None:
        owner = _tune_space_owner(cls)
        if not isinstance(own, Mapping):
            raise ConfigError(f"policy '{name}': {owner}.tune_space must be a dict of config key -> spec "
                              f"(docs/tuning.md), not {type(own).__name__}")
        source = f"{owner}.tune_space"
        return None, {key: list(normalize_spec(key, spec, source)) for key, spec in own.items()}
    built_in = {POLICY_REGISTRY.get(kind): kind for kind in DEFAULT_SPACES}
    base = next((built_in[c] for c in getattr(cls, '__mro__', ())[1:] if c in built_in), None)
    return _policy_space(base) if base else (None, {})


def default_space_source(cfg: Mapping[str, Any]) -> str:
    """How errors name the default space of ``cfg``'s policy: ``MyPPO.tune_space`` where the policy's class declares
    it (a user looks there, not for a --space file), else ``the search space``."""
    from ..errors import RegistryError
    from ..registry import POLICY_REGISTRY

    name = cfg['policy']['type']
    if name in DEFAULT_SPACES:
        return 'the search space'
    try:
        cls = POLICY_REGISTRY.get(name)
    except RegistryError:
        return 'the search space'
    return f"{_tune_space_owner(cls)}.tune_space" if getattr(cls, 'tune_space', None) is not None else 'the search space'


def _tune_space_owner(cls: type) -> str:
    """The name of the class of ``cls``'s MRO that declares the ``tune_space`` it has (a subclass inherits it)."""
    owner = next((c for c in getattr(cls, '__mro__', ()) if vars(c).get('tune_space') is not None), cls)
    return owner.__name__


def build_space(cfg: Mapping[str, Any], given: Optional[Mapping[str, Any]] = None, use_default_space: bool = True,
                source: str = 'the search space') -> Space:
    """The study's space: the policy's default (unless ``use_default_space`` is False) updated with ``given``
    (a key set to None is dropped), every spec checked for shape; keys are not checked against the config here."""
    space: Dict[str, Any] = default_space(cfg) if use_default_space else {}
    for key, spec in (given or {}).items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{source}: key {key!r} must be a config key path such as 'policy.learn.learning_rate'")
        if spec is None:
            if key not in space:  # (a misspelled key to drop left the key meant in the space without a word)
                from ..registry import closest

                near = closest(key, list(space))
                raise ConfigError(f"{source}: key '{key}' = None drops a key of the default space, and it is not one"
                                  + (f"; did you mean '{near}'?" if near else
                                     f" (its keys: {', '.join(sorted(space)) or 'none'})"))
            space.pop(key)
        else:
            space[key] = normalize_spec(key, spec, source)
    if not space:
        why = (f"policy '{cfg['policy']['type']}' has no default space (its class may declare one: tune_space)"
               if not default_space(cfg)
               else "use_default_space is False and it names no key" if not use_default_space
               else "it sets every key of the default space to None")
        raise ConfigError(f"{source}: no key to search ({why}); "
                          f"pass --space FILE with e.g. space = {{'policy.learn.learning_rate': ['log_uniform', 1e-4, 1e-2]}}")
    return {key: space[key] for key in sorted(space)}


def normalize_spec(key: str, spec: Any, source: str = 'the search space') -> Spec:
    """``spec`` as a list ``[kind, ...]`` with checked bounds; a ``ConfigError`` naming ``key`` otherwise."""
    where = f"{source}: key '{key}'"
    if not isinstance(spec, (list, tuple)) or not spec or spec[0] not in KINDS:
        raise ConfigError(f"{where} = {spec!r}: give [kind, ...] with kind one of {', '.join(KINDS)}, "
                          f"e.g. ['log_uniform', 1e-4, 1e-2] or ['categorical', [64, 128]]")
    kind, args = spec[0], list(spec[1:])
    if kind == 'categorical':
        if len(args) != 1 or not isinstance(args[0], (list, tuple)) or not args[0]:
            raise ConfigError(f"{where}: give ['categorical', [choice, ...]] with at least one choice")
        choices = [_plain_choice(where, c) for c in args[0]]
        if len({json.dumps(c) for c in choices}) != len(choices):
            raise ConfigError(f"{where}: the categorical choices {choices!r} repeat a value")
        return ['categorical', choices]
    is_int = kind in ('int', 'log_int')
    arity = (2, 3) if kind == 'int' else (2,)
    if len(args) not in arity or not all(_is_number(a, is_int) for a in args):
        shape = "['int', low, high] or ['int', low, high, step]" if kind == 'int' else f"['{kind}', low, high]"
        raise ConfigError(f"{where} = {list(spec)!r}: give {shape} with {'integer' if is_int else 'finite number'} bounds")
    low, high = args[0], args[1]
    if not low < high:
        raise ConfigError(f"{where}: low {low!r} must be below high {high!r}")
    if kind.startswith('log') and low <= 0:
        raise ConfigError(f"{where}: a {kind} distribution needs low > 0 (got {low!r})")
    if kind == 'int' and len(args) == 3 and args[2] < 1:
        raise ConfigError(f"{where}: the step {args[2]!r} must be >= 1")
    if is_int:
        return [kind] + [int(a) for a in args]
    return [kind, float(low), float(high)]


def _is_number(value: Any, integer: bool) -> bool:
    if isinstance(value, bool):
        return False
    if integer:
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


def _plain_choice(where: str, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain_choice(where, v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain_choice(where, v) for k, v in value.items()}
    raise ConfigError(f"{where}: the choice {value!r} is not plain data (numbers, strings, bools, None, lists, dicts)")


# ---- checking against the config --------------------------------------------------------------------------
def probe_values(spec: Spec) -> List[Any]:
    """The values of ``spec`` that ``check_space`` compiles: both bounds, or every categorical choice."""
    if spec[0] == 'categorical':
        return list(spec[1])
    return [spec[1], spec[2]]


def check_space(base: Mapping[str, Any], space: Space, source: str = 'the search space') -> None:
    """Compile ``base`` with each probe value of each key alone: an unknown key or a value the config (or the
    policy's ``check_run_config``, a hook's ``check_run_config``) refuses is one ``ConfigError`` naming the key (the message of ``compile_config``
    says what is wrong and the fix)."""
    import warnings

    from ..policy import policy_class
    from ..worker import check_hooks_run_config, config_hooks

    main = dict(base)
    create = create_config_of(main)
    built: Dict[str, Dict[str, List[Any]]] = {}  # the config's hooks, built once per hooks setting (not per probe)
    for key, spec in space.items():
        if key in RESERVED_KEYS:
            raise ConfigError(f"{source}: key '{key}' is set by the tuner (--seeds, --budget, the study folder); "
                              f"leave it out of the space")
        try:
            config_value(main, key)
            known = True
        except (KeyError, TypeError):
            known = False  # compile_config names the closest valid key
        for value in probe_values(spec):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    cfg = compile_config((main, create), [(key, value)])
                    policy_class(cfg).check_run_config(cfg)  # (what the policy refuses at a run's start: a recurrent
                    # PPO's sequences that do not tile the rollout; and what the config's hooks refuse)
                    hooks = json.dumps([cfg.policy.learn.learner.get('hooks', []), cfg.policy.collect.get('hooks', []),
                                        cfg.policy.eval.evaluator.get('hooks', [])], sort_keys=True, default=repr)
                    if hooks not in built:
                        built[hooks] = config_hooks(cfg)
                    check_hooks_run_config(cfg, built[hooks])
            except AcframeError as exc:  # (a policy of one's own may refuse with any of acframe's errors)
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ConfigError(f"{source}: key '{key}'{f' (value {value!r})' if known else ''}: {text}") from exc


# ---- sampling ---------------------------------------------------------------------------------------------
def _encoded_choices(choices: Sequence[Any]) -> Tuple[List[Any], bool]:
    """Optuna's categorical choices must be scalars: lists/dicts are offered as their JSON text."""
    structured = any(isinstance(c, (list, dict)) for c in choices)
    return ([json.dumps(c) for c in choices] if structured else list(choices)), structured


def suggest(trial: Any, space: Space) -> Dict[str, Any]:
    """Sample ``space`` through an Optuna trial: ``{key path: value}`` (the trial's params are the key paths)."""
    values: Dict[str, Any] = {}
    for key, spec in space.items():
        kind = spec[0]
        if kind == 'uniform':
            values[key] = trial.suggest_float(key, spec[1], spec[2])
        elif kind == 'log_uniform':
            values[key] = trial.suggest_float(key, spec[1], spec[2], log=True)
        elif kind == 'int':
            values[key] = trial.suggest_int(key, spec[1], spec[2], step=spec[3] if len(spec) > 3 else 1)
        elif kind == 'log_int':
            values[key] = trial.suggest_int(key, spec[1], spec[2], log=True)
        else:
            choices, structured = _encoded_choices(spec[1])
            picked = trial.suggest_categorical(key, choices)
            values[key] = json.loads(picked) if structured else picked
    return values


def decode_params(space: Space, params: Mapping[str, Any]) -> Dict[str, Any]:
    """A finished trial's Optuna params as config values (JSON-text choices decoded)."""
    values = {}
    for key, spec in space.items():
        if key not in params:
            continue
        value = params[key]
        if spec[0] == 'categorical' and _encoded_choices(spec[1])[1]:
            value = json.loads(value)
        values[key] = value
    return values


def config_value(cfg: Mapping[str, Any], key: str) -> Any:
    """The value at a key path of a (plain) config; KeyError when absent."""
    node: Any = cfg
    for part in key.split('.'):
        node = node[part]
    return node


def _in_spec(spec: Spec, value: Any) -> Tuple[bool, Any]:
    """Whether ``value`` lies in ``spec``'s distribution, and the Optuna param that stands for it."""
    kind = spec[0]
    if kind == 'categorical':
        choices, structured = _encoded_choices(spec[1])
        for choice, param in zip(spec[1], choices):
            if structured:
                if json.dumps(_listed(value)) == param:
                    return True, param
            elif value == choice and isinstance(value, bool) == isinstance(choice, bool):
                return True, param
        return False, None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, None
    if kind in ('int', 'log_int'):
        step = spec[3] if len(spec) > 3 else 1
        ok = float(value).is_integer() and spec[1] <= value <= spec[2] and (int(value) - spec[1]) % step == 0
        return ok, int(value) if ok else None
    ok = spec[1] <= value <= spec[2]
    return ok, float(value) if ok else None


def _listed(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_listed(v) for v in value]
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    return value


def fixed_params(space: Space, values: Mapping[str, Any]) -> Dict[str, Any]:
    """Optuna params for ``values`` (key path -> config value), keeping those inside the space's distributions
    (the others are sampled when the trial runs)."""
    params = {}
    for key, value in values.items():
        if key in space:
            ok, param = _in_spec(space[key], value)
            if ok:
                params[key] = param
    return params


def baseline_values(cfg: Mapping[str, Any], space: Space) -> Dict[str, Any]:
    """The config's own values of the space's keys (the study's first trial)."""
    values = {}
    for key in space:
        try:
            values[key] = config_value(cfg, key)
        except (KeyError, TypeError):
            continue
    return values
