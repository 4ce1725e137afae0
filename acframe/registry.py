"""Registries: find policies, models, envs, env managers, buffers, logger backends and learner hooks by name.

A ``Registry`` maps a name to a class (or factory).  Built-in entries are registered *lazily* as
``"module:attribute"`` strings, so looking a name up (or listing the names) does not import torch;
the module is imported the first time the entry itself is needed.  User code registers with the
decorator::

    @POLICY_REGISTRY.register('my_pg')
    class MyPG(Policy):
        ...
"""
from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from .errors import ConfigError, RegistryError


#: the modules ``import_names`` imported in this process, in order (for the commands that hints print)
_IMPORTED: List[str] = []


#: what each module ``import_names`` imported registered (``'kind:name'``: ``'logger:csv'``, ``'gym:MyEnv-v0'`` for a
#: gymnasium id), where this process saw it happen (the module was not imported before)
_REGISTERED_BY: Dict[str, List[str]] = {}


def imported_names() -> List[str]:
    """The modules ``import_names`` imported in this process (``--import``, a config's ``import_names``)."""
    return list(_IMPORTED)


def registrations_of(module: str) -> Optional[List[str]]:
    """What importing ``module`` registered, as ``'kind:name'`` (the registry's kind, or ``gym`` for a gymnasium id);
    None where this process did not see it (the module was imported before ``import_names`` named it)."""
    found = _REGISTERED_BY.get(module)
    return None if found is None else list(found)


def script_registered(names: Iterable[str]) -> List[str]:
    """``'kind:name'`` of the entries registered by the running script itself (``__main__``: no ``--import`` can bring
    them back in another process) among ``names`` (the strings a run's config holds)."""
    wanted = set(names)
    return sorted(f"{r.kind}:{name}" for r in REGISTRIES for name, entry in r._entries.items()
                  if name in wanted and not isinstance(entry, str) and getattr(entry, '__module__', None) == '__main__')


def _registered_now() -> Dict[str, Any]:
    """Every registry's entries (``'kind:name'`` -> the lazy path, or the object) and gymnasium's ids."""
    import gymnasium

    now: Dict[str, Any] = {f"{r.kind}:{name}": entry for r in REGISTRIES for name, entry in r._entries.items()}
    now.update({f"gym:{env_id}": spec for env_id, spec in gymnasium.registry.items()})
    return now


def _registered_since(before: Dict[str, Any]) -> List[str]:
    """The entries registered, or registered again with another object, since ``before`` (``_registered_now``); a
    built-in's lazy path made into its class (importing acframe's own modules) is not one."""
    added = []
    for key, entry in _registered_now().items():
        old = before.get(key, _MISSING)
        if old is entry:
            continue
        if not isinstance(old, str) or getattr(entry, '__module__', None) != old.split(':')[0]:  # (new, or replaced)
            added.append(key)
    return sorted(added)


def import_names(names: Iterable[str], refuse_under: Iterable[str] = ()) -> None:
    """Import the modules named in ``create_config.*.import_names`` so their decorators register.

    ``refuse_under``: folders (a run or study folder being read) no module may come from, whatever ``sys.path``
    holds; each module's location is found without running any code (``module_locations``) before it is imported.
    """
    roots = [os.path.realpath(root) for root in refuse_under]
    for name in names or ():
        if roots:
            for place in module_locations(name):
                real = os.path.realpath(place)
                inside = next((root for root in roots if os.path.commonpath([real, root]) == root), None)
                if inside is not None:
                    raise RegistryError(f"import_names: module '{name}' would be imported from {place}, inside the "
                                        f"folder {inside} being read; acframe never imports code from a run or study "
                                        f"folder: install the module or put it on PYTHONPATH outside that folder")
        try:
            before = None if name in sys.modules else _registered_now()
            importlib.import_module(name)
            if before is not None:
                _REGISTERED_BY[name] = _registered_since(before)
            if name not in _IMPORTED:
                _IMPORTED.append(name)
        except ImportError as exc:
            missing = getattr(exc, 'name', None)
            if isinstance(exc, ModuleNotFoundError) and missing and (name == missing or name.startswith(missing + '.')):
                near = _nearest_module(name)
                raise RegistryError(f"import_names: cannot import module '{name}' ({exc}); "
                                    + (f"did you mean '{near}'? " if near else '')
                                    + "fix the module name (in the config's import_names or --import) or put its "
                                    "folder on PYTHONPATH") from exc
            from .errors import describe_raised  # found, but what it imports is not: not a wrong name
            raise RegistryError(f"import_names: importing '{name}' raised {describe_raised(exc)}; install what it "
                                f"imports or fix that import") from exc
        except (Exception, SystemExit) as exc:  # the module is user code: say what it raised, and where
            from .errors import describe_raised
            raise RegistryError(f"import_names: importing '{name}' raised {describe_raised(exc)}") from exc


def _nearest_module(name: str) -> Optional[str]:
    """A top-level module on ``sys.path`` whose name is close to ``name`` (a typo of it), or the module of a file
    name (``my_envs`` for ``my_envs.py``), else None (nothing is imported to find it)."""
    import pkgutil

    if name.endswith('.py'):  # a file name given for its module ('my_envs.py' imports 'my_envs.py' as a package)
        return name[:-3].replace('/', '.').replace('\\', '.').strip('.') or None
    if '.' in name:
        return None
    return closest(name, [module.name for module in pkgutil.iter_modules()], cutoff=0.8)


def module_locations(name: str) -> List[str]:
    """The files and folders the module ``name`` (and each package above it) would be imported from, found with
    ``sys.path``'s finder without importing anything (no package's ``__init__`` runs); [] for what is imported
    already or found by another finder (built-in, frozen, an installed package's own finder)."""
    from importlib.machinery import PathFinder

    places: List[str] = []
    search: Optional[List[str]] = None  # None: sys.path
    parts = name.split('.')
    for i in range(len(parts)):
        full = '.'.join(parts[:i + 1])
        module = sys.modules.get(full)
        if module is not None:
            search = list(getattr(module, '__path__', None) or [])
            continue
        spec = PathFinder.find_spec(full, search)
        if spec is None:
            break
        if spec.origin and spec.has_location:
            places.append(spec.origin)
        search = list(spec.submodule_search_locations or [])
        places += search
        if not search:
            break
    return places


#: names longer than this are not fuzzy-matched (difflib is quadratic in their length: a 100,000-character name
#: from a crafted file would take minutes), and candidates longer than it are skipped
MATCH_MAX_LEN = 200


def closest(name: str, candidates: Iterable[str], cutoff: float = 0.5) -> Optional[str]:
    """The candidate most similar to ``name``, or None when nothing is close (or ``name`` is too long to compare)."""
    name = str(name)
    if len(name) > MATCH_MAX_LEN:
        return None
    names = [str(c) for c in candidates if len(str(c)) <= MATCH_MAX_LEN]
    same_but_case = [c for c in names if c.lower() == name.lower()]  # ('MY_MLP' for 'my_mlp': difflib rates it far)
    if same_but_case:
        return same_but_case[0]
    matches = difflib.get_close_matches(name, names, n=1, cutoff=cutoff)
    return matches[0] if matches else None


class Registry:
    """A named table of classes or factories with a ``register`` decorator and helpful lookup errors."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: Dict[str, Union[str, Any]] = {}

    def register(self, name: str, obj: Any = None, *, force: bool = False) -> Callable:
        """Register ``obj`` under ``name``; used as ``@REGISTRY.register('name')`` when ``obj`` is omitted.

        Registering an existing name again is an error unless ``force=True`` (re-registering the very same
        object, e.g. when a module is re-imported, is allowed).
        """

        def _do(target: Any) -> Any:
            current = self._entries.get(name)
            if isinstance(current, str) and not force and getattr(target, '__module__', None) != current.split(':')[0]:
                raise RegistryError(  # a built-in not imported yet: its module registers it under this name
                    f"{self.kind} '{name}' is already registered by {current}; pick another name or pass force=True")
            if current is not None and not force and not isinstance(current, str) and current is not target:
                same_place = getattr(current, "__qualname__", None) == getattr(target, "__qualname__", None) and \
                    getattr(current, "__module__", None) == getattr(target, "__module__", None)
                if not same_place:
                    raise RegistryError(
                        f"{self.kind} '{name}' is already registered by {current!r}; pick another name or pass force=True"
                    )
            self._entries[name] = target
            try:
                target.registered_name = name
            except (AttributeError, TypeError):
                pass
            return target

        if obj is not None:
            return _do(obj)
        return _do

    def register_lazy(self, name: str, target: str) -> None:
        """Register ``"module:attribute"`` under ``name``; imported on first ``get``."""
        self._entries.setdefault(name, target)

    @property
    def plural(self) -> str:
        """``'policies'``, ``'models'``, ... for messages and listings."""
        return self.kind[:-1] + 'ies' if self.kind.endswith('y') else self.kind + 's'

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def names(self) -> List[str]:
        return sorted(self._entries)

    def location(self, name: str) -> str:
        """``"module:attribute"`` of an entry, without importing it."""
        entry = self._lookup(name)
        if isinstance(entry, str):
            return entry
        return f"{entry.__module__}:{entry.__qualname__}"

    def is_loaded(self, name: str) -> bool:
        return not isinstance(self._lookup(name), str)

    def _lookup(self, name: str) -> Union[str, Any]:
        if not isinstance(name, str) or name not in self._entries:
            hint = closest(str(name), self._entries)
            did_you_mean = f" Did you mean '{hint}'?" if hint else ""
            # (a near miss is a misspelling: its fix is the name meant, not registering the misspelled one)
            registered_as = "NAME" if hint else f"'{name}'"
            raise RegistryError(
                f"unknown {self.kind} '{name}'.{did_you_mean} Known {self.plural}: {', '.join(self.names()) or '(none)'}; "
                f"register your own with @{self.kind.upper()}_REGISTRY.register({registered_as}) and list its module in "
                f"import_names (--import MODULE on the command line)"
            )
        return self._entries[name]

    def get(self, name: str) -> Any:
        """The registered object, importing it if it was registered lazily."""
        entry = self._lookup(name)
        if isinstance(entry, str):
            module_name, attr = entry.split(":")
            module = importlib.import_module(module_name)
            # importing the module normally registers the real object under the same name
            loaded = self._entries.get(name)
            entry = loaded if not isinstance(loaded, str) else getattr(module, attr)
            self._entries[name] = entry
        return entry

    def get_for(self, name: str, key: str, load: bool = True) -> Any:
        """``get(name)`` for the config key ``key`` that named it: an unknown name is a ``ConfigError`` naming the key.
        ``load=False`` only checks the name (a lazily registered entry stays unimported; returns None)."""
        try:
            return self.get(name) if load else self._lookup(name) and None
        except RegistryError as exc:
            raise ConfigError(f"config key '{key}': {exc}") from None

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


POLICY_REGISTRY = Registry("policy")
MODEL_REGISTRY = Registry("model")
ENV_REGISTRY = Registry("env")
ENV_MANAGER_REGISTRY = Registry("env_manager")
BUFFER_REGISTRY = Registry("buffer")
LOGGER_REGISTRY = Registry("logger")
HOOK_REGISTRY = Registry("hook")
#: every registry of acframe's, for what crosses them (what a module registered)
REGISTRIES = (POLICY_REGISTRY, MODEL_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY, BUFFER_REGISTRY, LOGGER_REGISTRY, HOOK_REGISTRY)
_MISSING = object()

# built-in entries, imported on first use
POLICY_REGISTRY.register_lazy("impala", "acframe.policy.impala:IMPALAPolicy")
POLICY_REGISTRY.register_lazy("a2c", "acframe.policy.a2c:A2CPolicy")
POLICY_REGISTRY.register_lazy("ppo", "acframe.policy.ppo:PPOPolicy")
MODEL_REGISTRY.register_lazy("vac", "acframe.models.vac:VAC")
BUFFER_REGISTRY.register_lazy("fifo", "acframe.data.buffer:ReplayBuffer")
POLICY_REGISTRY.register_lazy("acer", "acframe.policy.acer:ACERPolicy")
MODEL_REGISTRY.register_lazy("acer_q", "acframe.models.acer:ACERDiscrete")
MODEL_REGISTRY.register_lazy("acer_sdn", "acframe.models.acer:ACERSDN")
BUFFER_REGISTRY.register_lazy("episodic", "acframe.data.episodic_buffer:EpisodicReplayBuffer")
BUFFER_REGISTRY.register_lazy("prioritized", "acframe.data.prioritized:PrioritizedReplayBuffer")
BUFFER_REGISTRY.register_lazy("episodic_prioritized", "acframe.data.prioritized:PrioritizedEpisodicReplayBuffer")
ENV_REGISTRY.register_lazy("gym", "acframe.envs.gym_env:make_gym_env")
ENV_REGISTRY.register_lazy("toy_multidiscrete", "acframe.envs.toy:make_toy_multidiscrete")
ENV_REGISTRY.register_lazy("toy_multidiscrete_masked", "acframe.envs.toy:make_toy_multidiscrete_masked")
ENV_REGISTRY.register_lazy("toy_dict", "acframe.envs.toy:make_toy_dict")
ENV_REGISTRY.register_lazy("toy_pixel_dot", "acframe.envs.toy:make_toy_pixel_dot")
ENV_REGISTRY.register_lazy("toy_pixel_goal", "acframe.envs.toy:make_toy_pixel_goal")
ENV_REGISTRY.register_lazy("toy_cue_memory", "acframe.envs.toy:make_toy_cue_memory")
ENV_REGISTRY.register_lazy("toy_sleep", "acframe.envs.toy:make_toy_sleep")
ENV_REGISTRY.register_lazy("toy_tictactoe", "acframe.envs.tictactoe:make_tictactoe")
ENV_REGISTRY.register_lazy("toy_tictactoe_nomask", "acframe.envs.tictactoe:make_tictactoe_nomask")
ENV_MANAGER_REGISTRY.register_lazy("sync", "acframe.envs.manager:SyncEnvManager")
ENV_MANAGER_REGISTRY.register_lazy("async", "acframe.envs.manager:AsyncEnvManager")
ENV_MANAGER_REGISTRY.register_lazy("envpool", "acframe.envs.envpool_manager:EnvPoolManager")
ENV_REGISTRY.register_lazy("pettingzoo_classic", "acframe.envs.pettingzoo_env:make_pettingzoo_classic")
LOGGER_REGISTRY.register_lazy("tensorboard", "acframe.loggers.files:TensorBoardLogger")
LOGGER_REGISTRY.register_lazy("jsonl", "acframe.loggers.files:JsonlLogger")
LOGGER_REGISTRY.register_lazy("wandb", "acframe.loggers.wandb_logger:WandbLogger")
LOGGER_REGISTRY.register_lazy("mlflow", "acframe.loggers.mlflow_logger:MLflowLogger")
HOOK_REGISTRY.register_lazy("linear_lr_decay", "acframe.worker.learner:LinearLRDecayHook")
