"""What every hook (``LearnerHook``, ``CollectorHook``, ``EvaluatorHook``) has: a check of the run's config, and the
run's folder before the first step."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..errors import AcframeError, ConfigError, describe_raised


class Hook:
    """The base of the learner's, the collector's and the evaluator's hooks."""

    def check_run_config(self, cfg: Any) -> None:
        """Refuse, with a one-line ``acframe.errors.ConfigError`` naming the key and the fix, a whole compiled
        ``cfg`` this hook cannot work with (a key it contradicts, a policy it cannot serve). Called once at a run's
        start, before anything is written, for every hook named in the config or given from Python; the run names
        the hook in front of the message. Default: every config is fine."""

    def before_run(self, exp_dir: Optional[str]) -> None:
        """Called once the run's folder ``exp_dir`` is ready (made, or locked again on a resume), before the first
        step: where a hook keeps files of its own (in a sub-folder of it, say). On a data-parallel rank > 0, whose
        hooks run too, ``exp_dir`` is None (rank 0 owns the folder; ``learner.exp_dir`` is None there alike): a hook
        that writes there writes from rank 0 alone. Not called for a resume whose budget is spent (it trains
        nothing). An exception raised here ends the start as any error in it does (a new run's folder is removed).
        Default: nothing."""


def check_hooks_run_config(cfg: Any, hooks: Mapping[str, Sequence[Any]]) -> None:
    """Each hook's ``check_run_config(cfg)``; ``hooks`` maps where they were named (a config key such as
    ``policy.learn.learner.hooks``, or a script's ``learner_hooks``) to their list. What a hook refuses is one
    ``ConfigError`` naming the entry and the hook's class in front of the hook's own message; anything else it
    raises names its file and line."""
    for key, entries in hooks.items():
        for i, hook in enumerate(entries):
            check = getattr(hook, 'check_run_config', None)
            if not callable(check):  # (a script's duck-typed hook)
                continue
            where = f"{key}[{i}]" if '.' not in key else f"config key '{key}[{i}]'"
            try:
                check(cfg)
            except AcframeError as exc:
                raise ConfigError(f"{where} ({type(hook).__name__}): {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - user code: say what it raised
                raise ConfigError(f"{where}: {type(hook).__name__}.check_run_config raised "
                                  f"{describe_raised(exc)}") from exc
