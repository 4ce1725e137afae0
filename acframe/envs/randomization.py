"""Domain randomization: every collector env is built with its own env parameters, drawn from the config.

The randomizer is a source of per-env parameters: the envs themselves are built by the one env factory,
``acframe.envs.make_env_manager(cfg, role, seeds, params=...)``, like every other env (so the step watchdog,
the Atari chain and any registered env manager apply to them), in the serial pipelines, ``-m eval`` and the
parallel pipeline's actors and evaluator on every backend.

``env.domain_randomization`` declares the parameters and their distributions::

    domain_randomization=dict(
        enable=True,
        params=dict(
            gravity=dict(dist='normal', mean=-10.0, std=1.0, low=-11.99, high=-0.01),  # clipped to [low, high]
            enable_wind=dict(dist='choice', values=[True, False]),                       # optional p=[...]
            wind_power=dict(dist='uniform', low=5.0, high=20.0),
        ),
        resample_every=0,          # re-draw every K collections (0: draw once)
        apply_to_evaluator=False,  # the evaluator keeps the nominal parameters (env.env_kwargs)
    )

A parameter is passed to the env factory as a keyword (``gymnasium.make(env_id, gravity=...)``), or, with
``via='attribute'``, set on ``env.unwrapped`` after construction (for envs whose constructor does not take
it, e.g. CartPole's ``gravity``).

Draw ``k`` of ``n`` envs comes from ``numpy.random.default_rng([seed, role, k])``: the same seed gives the
same parameters, every env its own set. Re-drawing closes the collector envs and builds new ones (seeds
``seed + k * n + i``). In the parallel pipeline, actor ``a``'s incarnation ``j`` has the env set
``k = j * actor_num + a`` (its seeds ``seed + k * n + i``): its envs get draw ``k``, and its ``r``-th re-draw
(every ``resample_every`` of its own collections) comes from ``default_rng([seed, role, k, r])``, same seeds; the
learner records each actor's draws as their segments arrive (``note_actor_segment``). Each draw is printed, written to tensorboard (``domain_randomization/<param>/env<i>``)
and saved, with every earlier draw, in ``<exp_dir>/domain_randomization.json`` (written atomically).
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

import gymnasium as gym
import numpy as np

from ..errors import ConfigError
from ..registry import closest
from .gym_env import build_param_env, env_fns
from .manager import EnvManager

#: required and optional keys of each distribution (besides 'dist' and 'via')
DISTRIBUTIONS: Dict[str, Dict[str, Sequence[str]]] = {
    'normal': {'required': ('mean', 'std'), 'optional': ('low', 'high')},
    'uniform': {'required': ('low', 'high'), 'optional': ()},
    'choice': {'required': ('values',), 'optional': ('p',)},
}
#: how a drawn value reaches the env
VIA = ('kwarg', 'attribute')
#: independent random streams per env role
ROLE_STREAMS = {'collector': 0, 'evaluator': 1}
JSON_NAME = 'domain_randomization.json'
CONFIG_PATH = 'env.domain_randomization.params'


class ParamSpec(NamedTuple):
    """One randomized parameter: its distribution and how it reaches the env."""

    name: str
    dist: str
    args: Dict[str, Any]
    via: str

    def sample(self, rng: np.random.Generator) -> Any:
        """One draw, as a plain Python value (clipped to [low, high] for a normal with bounds)."""
        args = self.args
        if self.dist == 'normal':
            value = float(rng.normal(args['mean'], args['std']))
            low = args.get('low', -math.inf)
            high = args.get('high', math.inf)
            return float(min(max(value, low), high))
        if self.dist == 'uniform':
            return float(rng.uniform(args['low'], args['high']))
        values = args['values']
        index = int(rng.choice(len(values), p=args.get('p')))
        value = values[index]
        return value.item() if isinstance(value, np.generic) else value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(f"config key '{where}' = {value!r} must be a number")
    return float(value)


def parse_params(params: Dict[str, Any]) -> List[ParamSpec]:
    """Validate ``env.domain_randomization.params`` and return one ``ParamSpec`` per parameter (sorted by name).

    Raises ``ConfigError`` naming the offending key and the fix.
    """
    if not isinstance(params, dict):
        raise ConfigError(f"config key '{CONFIG_PATH}' must be a dict of parameter -> distribution, got {params!r}")
    specs = []
    for name in sorted(params):
        spec = params[name]
        where = f"{CONFIG_PATH}.{name}"
        if not isinstance(spec, dict):
            raise ConfigError(f"config key '{where}' must be a dict such as dict(dist='uniform', low=0.0, high=1.0), got {spec!r}")
        dist = spec.get('dist')
        if dist not in DISTRIBUTIONS:
            raise ConfigError(f"config key '{where}.dist' = {dist!r} is not one of {', '.join(map(repr, DISTRIBUTIONS))}")
        via = spec.get('via', 'kwarg')
        if via not in VIA:
            raise ConfigError(f"config key '{where}.via' = {via!r} is not one of {', '.join(map(repr, VIA))}")
        keys = DISTRIBUTIONS[dist]
        allowed = set(keys['required']) | set(keys['optional']) | {'dist', 'via'}
        for key in spec:
            if key not in allowed:
                hint = closest(key, sorted(allowed), cutoff=0.6)
                extra = f"; did you mean '{where}.{hint}'?" if hint else f"; {dist} takes {', '.join(sorted(allowed))}"
                raise ConfigError(f"unknown config key '{where}.{key}'{extra}")
        for key in keys['required']:
            if key not in spec:
                raise ConfigError(f"config key '{where}' needs '{key}' for dist='{dist}' "
                                  f"(it takes {', '.join(keys['required'] + tuple(keys['optional']))})")
        args = {k: v for k, v in spec.items() if k not in ('dist', 'via') and v is not None}
        if dist in ('normal', 'uniform'):
            for key in ('mean', 'std', 'low', 'high'):
                if key in args:
                    args[key] = _number(args[key], f"{where}.{key}")
            if args.get('std', 0.0) < 0:
                raise ConfigError(f"config key '{where}.std' = {args['std']} must be >= 0")
            if 'low' in args and 'high' in args and args['low'] > args['high']:
                raise ConfigError(f"config key '{where}': low ({args['low']}) must not exceed high ({args['high']})")
        else:
            values = args['values']
            if not isinstance(values, (list, tuple)) or len(values) == 0:
                raise ConfigError(f"config key '{where}.values' must be a non-empty list, got {values!r}")
            args['values'] = list(values)
            if 'p' in args:
                p = args['p']
                if not isinstance(p, (list, tuple)) or len(p) != len(values):
                    raise ConfigError(f"config key '{where}.p' must list one probability per value ({len(values)}), got {p!r}")
                p = [_number(x, f"{where}.p") for x in p]
                if any(x < 0 for x in p) or abs(sum(p) - 1.0) > 1e-6:
                    raise ConfigError(f"config key '{where}.p' = {p} must be non-negative and sum to 1")
                args['p'] = p
        specs.append(ParamSpec(str(name), dist, args, via))
    return specs


def draw_params(specs: Sequence[ParamSpec], seed: int, draw_index: int, num_envs: int,
                role: str = 'collector', redraw: int = 0) -> List[Dict[str, Any]]:
    """The parameters of ``num_envs`` envs for draw ``draw_index``: a pure function of its arguments.

    ``redraw`` > 0: the ``redraw``-th re-draw of a parallel actor whose first draw is ``draw_index`` (a stream of
    its own: ``numpy.random.default_rng([seed, role, draw_index, redraw])``).
    """
    key = [int(seed) % (2 ** 63), ROLE_STREAMS[role], int(draw_index)] + ([int(redraw)] if redraw else [])
    rng = np.random.default_rng(key)
    return [{spec.name: spec.sample(rng) for spec in specs} for _ in range(num_envs)]


#: one env built with its drawn parameters (``gym_env.build_param_env``: the env factory's own constructor)
build_randomized_env = build_param_env


def randomized_env_fns(env_cfg: Dict[str, Any], specs: Sequence[ParamSpec], params: Sequence[Dict[str, Any]],
                       seeds: Sequence[int], role: str) -> List[Callable[[], gym.Env]]:
    """Picklable constructors of ``len(seeds)`` envs, env ``i`` with the drawn ``params[i]`` (``gym_env.env_fns``)."""
    return env_fns(env_cfg, seeds, role, params=params, routes={spec.name: spec.via for spec in specs})


class DomainRandomizer:
    """The source of each env's parameters: draws them, hands them to the env factory (``make_env_manager``) and
    re-draws them.

    A pipeline calls ``make_collector_env`` / ``make_evaluator_env`` once, ``after_collect`` after every
    collection (it rebuilds the collector envs when a re-draw is due and returns the current env manager),
    and saves ``state_dict`` in checkpoints. A parallel actor passes ``actor``, the index of its env set
    (``incarnation * parallel.actor_num + actor_id``, the one its seeds come from): its first draw is the serial
    pipeline's draw ``actor`` (same seeds, same parameters), its re-draws a stream of its own (same seeds).
    ``watch_sync``: the envs' in-process steps are watched by ``env.step_timeout_s`` too (worker processes).
    """

    def __init__(self, cfg: Any, actor: Optional[int] = None, watch_sync: bool = False) -> None:
        dr = cfg.env.domain_randomization
        self.specs = parse_params(dict(dr.params))
        if not self.specs:
            raise ConfigError("env.domain_randomization.enable is True but env.domain_randomization.params is empty; "
                              "declare e.g. params=dict(gravity=dict(dist='uniform', low=-11.0, high=-9.0))")
        self.resample_every = int(dr.resample_every)
        self.apply_to_evaluator = bool(dr.apply_to_evaluator)
        self.cfg = cfg
        self.seed = int(cfg.seed)
        self.env_cfg = dict(cfg.env)
        self.num_envs = int(cfg.env.collector_env_num)
        self.actor = actor
        self.watch_sync = watch_sync
        self._actor_segments: Dict[int, int] = {}  # segments received per parallel actor's env set (learner side)
        self.draw_index = 0
        self.collections = 0
        self.history: List[Dict[str, Any]] = []
        self.evaluator_record: Optional[Dict[str, Any]] = None
        self.exp_dir: Optional[str] = None
        self.tb: Any = None
        self.echo: Optional[Callable[[str], None]] = None

    @classmethod
    def from_config(cls, cfg: Any, actor: Optional[int] = None, watch_sync: bool = False) -> Optional['DomainRandomizer']:
        """A randomizer when ``env.domain_randomization.enable`` is True, else None."""
        dr = cfg.env.get('domain_randomization')
        if not dr or not dr.get('enable'):
            return None
        return cls(cfg, actor, watch_sync)

    def attach(self, exp_dir: Optional[str] = None, tb: Any = None, echo: Optional[Callable[[str], None]] = None) -> None:
        """Where draws are reported: ``exp_dir`` (JSON), a tensorboardX writer, a console printer.

        The envs are built before the experiment folder exists (a failed start writes nothing), so the draws
        made so far are reported here.
        """
        self.exp_dir, self.tb, self.echo = exp_dir, tb, echo
        if self.history:
            last = self.history[-1]
            self._report('collector', last['draw'], last['env_step'], last['params'])
        if self.evaluator_record is not None:
            self._report('evaluator', 0, 0, self.evaluator_record['params'])
        self._write_json()

    # ---- parameters, and the envs the factory builds with them ------------------------------------
    def collector_seeds(self, draw_index: int) -> List[int]:
        """The collector envs' seeds of draw ``draw_index`` (a parallel actor keeps its own seeds)."""
        first = draw_index if self.actor is None else self.actor
        return [self.seed + first * self.num_envs + i for i in range(self.num_envs)]

    def collector_params(self, draw_index: int) -> List[Dict[str, Any]]:
        if self.actor is None:
            return draw_params(self.specs, self.seed, draw_index, self.num_envs, 'collector')
        return draw_params(self.specs, self.seed, self.actor, self.num_envs, 'collector', redraw=draw_index)

    def evaluator_params(self, num_envs: int) -> List[Dict[str, Any]]:
        """The evaluator envs' own draw (``apply_to_evaluator``, ``-m eval --domain-params drawn``)."""
        return draw_params(self.specs, self.seed, 0, num_envs, 'evaluator')

    def _collector_manager(self, draw_index: int) -> EnvManager:
        from . import make_env_manager

        return make_env_manager(self.cfg, 'collector', self.collector_seeds(draw_index),
                                params=self.collector_params(draw_index), watch_sync=self.watch_sync)

    def make_collector_env(self, env_step: int = 0) -> EnvManager:
        """The collector envs of the current draw (recorded and reported)."""
        env = self._collector_manager(self.draw_index)
        self._record(self.draw_index, env_step)
        return env

    def make_evaluator_env(self, num_envs: int, seed: int) -> EnvManager:
        """Evaluator envs: nominal parameters, or their own draw when ``apply_to_evaluator``."""
        from . import make_env_manager

        seeds = [int(seed) + i for i in range(num_envs)]
        if not self.apply_to_evaluator:
            return make_env_manager(self.cfg, 'evaluator', seeds, watch_sync=self.watch_sync)
        params = self.evaluator_params(num_envs)
        self.evaluator_record = {'params': params}
        self._report('evaluator', 0, 0, params)
        self._write_json()
        return make_env_manager(self.cfg, 'evaluator', seeds, params=params, watch_sync=self.watch_sync)

    def note_actor_segment(self, actor_id: int, incarnation: int, actor_num: int, env_step: int) -> None:
        """The parallel learner's record of its actors' draws (the actors report none; draws are pure functions):
        the first segment of each draw of actor ``actor_id``'s ``incarnation`` (env set ``k``; its ``r``-th re-draw
        after ``r * resample_every`` segments) adds that draw to the history, reported and saved as the serial
        pipeline's draws are (role ``actor<id>``)."""
        k = int(incarnation) * int(actor_num) + int(actor_id)
        count = self._actor_segments.get(k, 0)
        self._actor_segments[k] = count + 1
        if count and not (self.resample_every and count % self.resample_every == 0):
            return
        redraw = count // self.resample_every if self.resample_every else 0
        params = draw_params(self.specs, self.seed, k, self.num_envs, 'collector', redraw=redraw)
        self.history.append({'actor': int(actor_id), 'incarnation': int(incarnation), 'draw': k, 'redraw': redraw,
                             'env_step': int(env_step), 'seeds': [self.seed + k * self.num_envs + i for i in range(self.num_envs)],
                             'params': params})
        self._report(f'actor{actor_id}', k, env_step, params, redraw)
        self._write_json()

    def after_collect(self, collector: Any, env_step: int) -> EnvManager:
        """Count a collection; every ``resample_every`` collections draw anew and rebuild the collector's envs."""
        self.collections += 1
        if self.resample_every and self.collections % self.resample_every == 0:
            self.draw_index += 1
            self._replace_env(collector, self.make_collector_env(env_step))
        return collector.env

    @staticmethod
    def _replace_env(collector: Any, env: EnvManager) -> None:
        old = collector.env
        collector.env = env
        old.close()
        collector.reset()

    # ---- resume ------------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        return {'draw_index': self.draw_index, 'collections': self.collections, 'history': list(self.history)}

    def load_state_dict(self, state: Dict[str, Any], collector: Any) -> EnvManager:
        """Restore the draw and the counters; rebuild the collector's envs when the draw differs. Returns them."""
        self.collections = int(state['collections'])
        self.history = list(state.get('history', self.history))
        if int(state['draw_index']) != self.draw_index:
            self.draw_index = int(state['draw_index'])
            self._replace_env(collector, self._collector_manager(self.draw_index))
        self._write_json()
        return collector.env

    # ---- reporting ---------------------------------------------------------------------------------
    def _record(self, draw_index: int, env_step: int) -> None:
        params = self.collector_params(draw_index)
        self.history = [h for h in self.history if h['draw'] != draw_index]
        self.history.append({'draw': draw_index, 'env_step': int(env_step), 'collections': self.collections,
                             'seeds': self.collector_seeds(draw_index), 'params': params})
        self._report('collector', draw_index, env_step, params)
        self._write_json()

    def _report(self, role: str, draw_index: int, env_step: int, params: List[Dict[str, Any]], redraw: int = 0) -> None:
        """The draw on the console (a parallel actor's ``redraw``-th re-draw of its env set says so) and in TensorBoard."""
        if self.echo is not None:
            again = f" (re-draw {redraw})" if redraw else ''
            self.echo(f"[domain randomization] {role} draw {draw_index}{again} at env step {env_step}:")
            for i, values in enumerate(params):
                self.echo(f"  {role} env {i}: " + ' '.join(f"{k}={_short(v)}" for k, v in values.items()))
        if self.tb is not None:
            for i, values in enumerate(params):
                for name, value in values.items():
                    tag = f"domain_randomization/{role}/{name}/env{i}"
                    if isinstance(value, (bool, int, float)):
                        self.tb.add_scalar(tag, float(value), env_step)
                    else:
                        self.tb.add_text(tag, repr(value), env_step)

    def _write_json(self) -> None:
        if self.exp_dir is None:
            return
        from ..utils import atomic_write_json
        atomic_write_json(os.path.join(self.exp_dir, JSON_NAME), {
            'nominal': dict(self.env_cfg.get('env_kwargs') or {}),
            'distributions': {s.name: dict(dist=s.dist, via=s.via, **s.args) for s in self.specs},
            'resample_every': self.resample_every,
            'collector': self.history,
            'evaluator': self.evaluator_record,
        })


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)
