"""Checks of an env before it trains: ``acframe -m check-env ENV`` and the cheap checks every run starts with.

``EnvChecker`` takes one env built the way the workers build it (the registered factory, the Atari chain,
``env.max_episode_steps``; looked at before a ``Dict`` observation is flattened) and checks, as SB3's
``check_env`` and TorchRL's ``check_env_specs`` do:

* **spaces**: gymnasium spaces that acframe's models take (vector, image or Dict-of-Box observations) and that
  a policy acts in (``Discrete``, ``Box``, ``MultiDiscrete``, starting at 0);
* **the reset/step API**: ``reset(seed=...)`` returns ``(obs, info)``; ``step`` returns ``(obs, reward,
  terminated, truncated, info)`` with one real reward, bool flags and dict infos;
* **observations**: in ``observation_space`` (keys, shape, dtype, bounds) and finite; **rewards** finite;
* **action masks** (a ``Dict`` observation's ``action_mask`` entry, or ``info['action_mask']``): for ``Discrete(n)``
  actions n entries, for ``MultiDiscrete(nvec)`` sum(nvec) (the sub-spaces' masks one after the other), 0/1
  values (bool or integers; 1 = legal) and at least one legal action (in each sub-space) except in an episode's
  last observation (terminated or truncated: no action is taken under it);
* **seeding**: ``reset(seed=s)`` twice, then the same actions: the same observations, rewards and ends;
* **a time limit**: a ``TimeLimit`` wrapper (``max_episode_steps`` of ``gymnasium.register``, or
  ``env.max_episode_steps``) or episodes the env truncates itself;
* **the step time** (reported) and ``close()``.

Every problem is a ``Finding``: one line that says what is wrong and the fix. ``check_env`` runs them all on
an env config; ``acframe -m check-env`` (``check_env_command``) runs them in a child process watched by a
timeout, so a step that hangs or kills its process is reported too. ``check_env_at_start`` is the cheap part
— one reset and a few steps, on an env instance of its own, before the run seeds anything, so a run's numbers
do not change — that every training run does before its folder exists; it refuses what would break training
(one line, exit 2) and warns when the env has no time limit.
"""
from __future__ import annotations

import copy
import math
import multiprocessing
import os
import signal
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from ..errors import AcframeError, ConfigError, EnvError, describe_raised
from .gym_env import OffSpaceError, env_name, type_env_id

#: the key of a Dict observation, or of the info dict, that holds the action mask (PettingZoo's convention)
MASK_KEY = 'action_mask'
#: steps of the random-action rollout of ``acframe -m check-env`` (fewer when ``ROLLOUT_S`` runs out first)
ROLLOUT_STEPS = 1000
ROLLOUT_S = 5.0
#: steps whose results are replayed after a second ``reset(seed=...)`` (the seeding check)
REPLAY_STEPS = 100
#: steps of the check a run makes at its start, and of its search for a truncation when there is no TimeLimit
START_STEPS = 3
START_PROBE_STEPS = 500
START_PROBE_S = 0.25
#: seconds ``acframe -m check-env`` waits for one call of the env (a reset, a step, close) when
#: ``env.step_timeout_s`` is None; building the env may take ``BUILD_TIMEOUT_S``
CALL_TIMEOUT_S = 60.0
BUILD_TIMEOUT_S = 120.0
#: the finding for an env whose step returns gym's old 4-tuple (seen directly, or as gymnasium's wrappers fail on it)
OLD_STEP_API = ("step returned 4 values (obs, reward, done, info: the old gym API); return 5: obs, reward, terminated, "
                "truncated, info (gymnasium >= 0.26; truncated=True where a time limit ends the episode)")


@dataclass
class Finding:
    """One problem of an env: ``check`` (what was checked), ``message`` (what is wrong and the fix, one line) and
    whether it ``breaks_training`` (a run refuses to start on it) or only spoils it (``acframe -m check-env``
    fails on it; a run starts)."""

    check: str
    message: str
    breaks_training: bool = True

    def line(self) -> str:
        return f"[{self.check}] {self.message}"



@dataclass
class CheckReport:
    """What ``check_env`` found: ``findings`` (problems) and ``facts`` (what it measured, for the summary)."""

    env: str
    findings: List[Finding] = field(default_factory=list)
    facts: Dict[str, str] = field(default_factory=dict)
    checks: List[str] = field(default_factory=list)
    #: a mask the env gives that a run will not read (in ``info`` only, or under another key), as a run's start warns
    #: of it: ``env 'NAME' <this>``; None: none
    unread_mask: Optional[str] = None
    #: the mask is under another name, so the check's random actions took none (a mask in ``info`` they take)
    mask_misnamed: bool = False
    #: the env's own code raised in ``step`` (on an action the check chose)
    step_raised: bool = False

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        """The lines of a passed check: the checks, then what was measured."""
        lines = [f"check-env {self.env}: all {len(self.checks)} checks passed ({', '.join(self.checks)})"]
        return '\n'.join(lines + [f"  {k}: {v}" for k, v in self.facts.items()])


class _Stop(Exception):
    """A check failed such that the later ones cannot run (the env raised, or broke the API)."""


class EnvChecker:
    """Runs the checks on the env ``make()`` returns (see the module docstring).

    ``make`` returns ``(env, model_space)``: the env as the factory made it (before a Dict observation is
    flattened) and the observation space the model sees. ``policies`` maps each policy that may train on the env
    to a function raising ``AcframeError`` when it cannot act in the spaces (None: no policy check). ``watch(what)``
    is called before each call into the env (``acframe -m check-env``'s child reports where it is with it);
    ``report`` collects the findings, also as they come (``on_finding``).
    """

    def __init__(self, make: Callable[[], Tuple[gym.Env, gym.Space]], name: str, seed: int = 0,
                 policies: Optional[Dict[str, Callable[[gym.Space, gym.Space], None]]] = None,
                 watch: Callable[[str], None] = lambda what: None,
                 on_finding: Callable[[Finding], None] = lambda finding: None) -> None:
        self.make, self.seed, self.policies = make, int(seed), policies
        self.watch, self.on_finding = watch, on_finding
        #: told of a mask the env gives that a run would not read (``_unread_mask``)
        self.on_unread_mask: Callable[[str], None] = lambda said: None
        self.report = CheckReport(name)
        self.rng = np.random.default_rng(self.seed)
        self.env: Any = None
        #: what building the env raised (the start of a run raises it as it is: the run's own build would)
        self.build_error: Optional[BaseException] = None
        #: how long the start of a run waits for the env's close()
        self.close_timeout_s = CALL_TIMEOUT_S
        self._seen: set = set()

    # ---- bookkeeping -------------------------------------------------------------------------------
    def fail(self, check: str, message: str, breaks_training: bool = True, key: Optional[str] = None) -> None:
        """Record a finding (each ``key``, by default the check, once: a NaN at every step is one line)."""
        key = key or check
        if key in self._seen:
            return
        self._seen.add(key)
        finding = Finding(check, message, breaks_training)
        self.report.findings.append(finding)
        self.on_finding(finding)

    def _passed(self, check: str) -> None:
        if check not in self.report.checks:
            self.report.checks.append(check)

    def _call(self, what: str, check: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.watch(what)
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported, with where
            self._raised(what, check, exc)

    def _raised(self, what: str, check: str, exc: Exception) -> None:
        """Record that the env raised ``exc`` in ``what`` and stop the checks."""
        if isinstance(exc, AcframeError):
            text = str(exc).strip()
            self.fail(check, f"{what}: {text.splitlines()[0] if text else type(exc).__name__}")
        elif isinstance(exc, OffSpaceError):  # acframe's wrapper read the env's observation: no line of the env's to name
            self.fail(check, f"in {what} {exc}; fix the env (in training it stops the run)")
        elif what.startswith('step') and isinstance(exc, ValueError) and 'expected 5, got 4' in str(exc) \
                and _raised_in_gymnasium(exc):
            # gymnasium's own wrappers (gym.make's) unpack the old 4-tuple before acframe sees it
            self.fail('step', OLD_STEP_API)
        elif isinstance(exc, AssertionError) and _raised_in_gymnasium(exc, 'passive_env_checker.py') and str(exc).strip():
            # gymnasium's env checker (gym.make's PassiveEnvChecker) refused what the env returned: its words, no
            # line of gymnasium's to fix
            said = ' '.join(str(exc).split())
            self.fail(check, f"gymnasium's env checker (gym.make's) refused the env's {what.split(' ')[0]}: {said}; fix "
                             f"the env's {what.split(' ')[0]} (in training it stops the run)")
        else:  # the env's own code raised: where, and that the env must be fixed there
            self.report.step_raised = self.report.step_raised or check == 'step'
            self.fail(check, f"the env raised {describe_raised(exc, what)}; fix the env there (in training it stops "
                             f"the run)")
        raise _Stop from exc

    # ---- the checks --------------------------------------------------------------------------------
    def run(self, full: bool = True) -> CheckReport:
        """All checks (``full``: ``acframe -m check-env``), or the cheap ones of a run's start."""
        try:
            self._build()
            self._spaces()
            first = self._reset(self.seed)
            if full:
                trace = self._rollout(first, ROLLOUT_STEPS, ROLLOUT_S)
                self._seeding(trace)
                self._time_limit(trace)
                self._step_time(trace)
            else:
                trace = self._rollout(first, START_STEPS, None)
                if not trace.ended and self._wrapper_limit() is None:  # look further for a truncation of its own
                    trace = self._probe(trace)
                if trace is not None:
                    self._time_limit(trace)
        except _Stop:
            pass
        finally:
            self._close(full)
        return self.report

    def _build(self) -> None:
        self.watch('building the env')
        try:
            self.env, self.model_space = self.make()
        except AcframeError as exc:
            self.build_error = exc
            self.fail('build', str(exc).strip().splitlines()[0])
            raise _Stop from exc
        except Exception as exc:
            self.build_error = exc
            self.fail('build', f"building the env raised {describe_raised(exc)}; fix the env's constructor or "
                               f"env.env_kwargs")
            raise _Stop from exc
        self._passed('build')

    def _spaces(self) -> None:
        env = self.env
        for what, space in (('observation_space', env.observation_space), ('action_space', env.action_space)):
            if not isinstance(space, gym.spaces.Space):
                self.fail('spaces', f"env.{what} is {type(space).__name__}, not a gymnasium space; set self.{what} "
                                    f"to a gymnasium.spaces.* (e.g. Box, Discrete) in the env's __init__")
                raise _Stop
        action_space = env.action_space
        start = getattr(action_space, 'start', None)
        if start is not None and np.any(np.asarray(start) != 0):
            self.fail('spaces', f"action_space {action_space} starts at {start}: acframe's policies act 0..n-1; use "
                                f"start=0 and add the offset inside the env's step")
        if self.policies is not None:
            refusals, able = [], []
            for name, check in self.policies.items():
                try:
                    check(self.model_space, action_space)
                    able.append(name)
                except AcframeError as exc:
                    refusals.append(str(exc).strip().splitlines()[0])
            if not able:
                usual = (isinstance(action_space, (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete))
                         and isinstance(self.model_space, (gym.spaces.Box, gym.spaces.Dict)))
                # (spaces acframe takes, refused by the policies named: the refusal's own fix, policy.type, is it)
                fix = '' if usual else ("; use a vector (1-D Box), image (2-D/3-D Box) or Dict-of-Box "
                                        "observation_space and a Discrete, Box or MultiDiscrete action_space")
                self.fail('spaces', f"{refusals[0] if len(refusals) == 1 else 'no policy can train on it: ' + refusals[0]}"
                                    f"{fix}")
            else:
                self.report.facts['policies'] = ', '.join(able)
        self.report.facts['spaces'] = f"observation {_short(env.observation_space)}, action {_short(action_space)}"
        self.mask_source = ('observation' if isinstance(env.observation_space, gym.spaces.Dict)
                            and MASK_KEY in env.observation_space.spaces else None)
        self._passed('spaces')

    def _reset(self, seed: Optional[int]) -> Any:
        env = self.env
        self.watch('reset')
        try:
            result = env.reset(seed=seed)
        except TypeError as exc:
            if 'seed' in str(exc):
                self.fail('reset', f"reset does not take seed= ({str(exc).strip()[:120]}); define reset(self, *, "
                                   f"seed=None, options=None) and call super().reset(seed=seed) first")
                raise _Stop from exc
            self._raised('reset', 'reset', exc)
        except Exception as exc:  # noqa: BLE001 - reported, with where
            self._raised('reset', 'reset', exc)
        if not (isinstance(result, tuple) and len(result) == 2):
            self.fail('reset', f"reset returned {_describe(result)}, not (observation, info): the old gym API; return "
                               f"obs, {{}} (gymnasium >= 0.26)")
            raise _Stop
        obs, info = result
        if not isinstance(info, Mapping):
            self.fail('reset', f"reset's info is {_describe(info)}; return a dict as the second value ({{}} when "
                               f"there is nothing to say)")
            raise _Stop
        self._passed('reset')
        self._observation(obs, 'the observation of reset')
        return _Trace(first_obs=obs, first_info=info, mask=self._mask(obs, info, 'at reset'))

    def _observation(self, obs: Any, where: str) -> None:
        for message, breaks in observation_problems(obs, self.env.observation_space):
            self.fail('observation', f"{where} {message}", breaks, key='observation:' + message.split(' ')[0])
        self._passed('observation')

    def _unread_mask(self, said: str, misnamed: bool = False) -> None:
        """Record a mask the env gives that a run will not read (``CheckReport.unread_mask``), and pass it on when
        new (``on_unread_mask``: from check-env's child at once, so that an env that crashes it later loses it not)."""
        self.report.mask_misnamed = self.report.mask_misnamed or misnamed
        if self.report.unread_mask != said:
            self.report.unread_mask = said
            self.on_unread_mask(said)

    def _mask(self, obs: Any, info: Mapping, where: str, final: bool = False) -> Optional[np.ndarray]:
        """The action mask of this step (None without one), checked against the action space (``final``: the last
        observation of an episode, whose mask no action is taken under: it may allow none)."""
        mask, source = None, None
        if isinstance(obs, Mapping) and MASK_KEY not in obs:
            near = [str(key) for key in obs if any(word in str(key).lower() for word in ('mask', 'legal'))
                    and _could_be_a_mask(getattr(self.env.observation_space, 'spaces', {}).get(key),
                                         self.env.action_space)]
            if near:  # a mask under another name is an observation to the model: the policy is not masked
                said = (f"the observation's {near[0]!r} is not '{MASK_KEY}', so a run reads it as an observation, not "
                        f"a mask; name it '{MASK_KEY}' (docs/masks.md)")
                self._unread_mask(f"has no action mask: {said}", misnamed=True)
                self.report.facts['action mask'] = f"none: {said}"
        if isinstance(obs, Mapping) and MASK_KEY in obs:
            mask, source = obs[MASK_KEY], f"observation['{MASK_KEY}']"
        elif isinstance(info, Mapping) and MASK_KEY in info:
            mask, source = info[MASK_KEY], f"info['{MASK_KEY}']"
        if mask is None:
            return None
        self.report.facts['action mask'] = source
        if source.startswith('info'):  # checked, but a run reads masks from the observation alone
            wrap = "wrap the env in acframe.envs.masks.InfoActionMask in the factory you register (docs/masks.md)"
            self.report.facts['action mask'] = f"{source}, which a run does not read (it would train without it): {wrap}"
            self._unread_mask(f"gives its action mask in {source}, which a run does not read: it trains without the "
                              f"mask; {wrap}")
        problems = mask_problems(mask, self.env.action_space, final=final)
        for message in problems:
            self.fail('mask', f"{source} {where} {message}", key='mask:' + message.split(' ')[0])
        self._passed('mask')
        return None if problems else np.asarray(mask).astype(bool)

    def _action(self, mask: Optional[np.ndarray]) -> Any:
        """A random action (a legal one under ``mask``), drawn from the checker's own seeded generator."""
        space = self.env.action_space
        if isinstance(space, gym.spaces.Discrete):
            legal = np.flatnonzero(mask) if mask is not None else np.arange(int(space.n))
            return np.int64(int(space.start) + int(self.rng.choice(legal)))
        if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
            out, offset = [], 0
            for n in space.nvec:
                part = mask[offset:offset + int(n)] if mask is not None else np.ones(int(n), bool)
                out.append(int(self.rng.choice(np.flatnonzero(part))))
                offset += int(n)
            return np.asarray(out, dtype=space.dtype) + space.start
        if isinstance(space, gym.spaces.Box):
            low = np.where(np.isfinite(space.low), space.low, -1.0)
            high = np.where(np.isfinite(space.high), space.high, 1.0)
            return self.rng.uniform(low, high).astype(space.dtype)
        space.seed(int(self.rng.integers(2 ** 31)))
        return space.sample()

    def _rollout(self, trace: '_Trace', steps: int, seconds: Optional[float]) -> '_Trace':
        """Step random (legal) actions from where ``trace`` is: up to ``steps`` more steps or ``seconds``; a new
        episode (unseeded reset, as gymnasium's autoreset) when one ends. The first episode is recorded for the
        seeding check."""
        env = self.env
        mask = trace.mask
        deadline = time.perf_counter() + seconds if seconds is not None else None
        for _ in range(steps):
            if deadline is not None and time.perf_counter() > deadline:
                break
            action = self._action(mask)
            what = f"step {trace.steps + 1} (episode {trace.episodes + 1}, step {trace.episode_len + 1})"
            self.watch(what)
            start = time.perf_counter()
            try:
                result = env.step(action)
            except Exception as exc:  # noqa: BLE001 - reported, with where
                self._raised(what, 'step', exc)
            trace.step_times.append(time.perf_counter() - start)
            trace.steps += 1
            trace.episode_len += 1
            obs, reward, terminated, truncated, info = self._step_result(result, what)
            self._observation(obs, f"the observation of {what}")
            mask = self._mask(obs, info, f"after {what}", final=bool(terminated or truncated))
            if trace.episodes == 0:
                trace.actions.append(action)
                trace.record.append((obs, reward, bool(terminated), bool(truncated)))
            if terminated or truncated:
                trace.episodes += 1
                trace.lengths.append(trace.episode_len)
                trace.truncated += bool(truncated) and not terminated
                trace.episode_len = 0
                obs, info = self._reset_unseeded()
                mask = self._mask(obs, info, 'at reset')
            trace.mask = mask
        return trace

    def _probe(self, trace: '_Trace') -> Optional['_Trace']:
        """More random steps (``START_PROBE_STEPS``, ``START_PROBE_S``) looking for an episode's end; what goes wrong
        there is not the start check's to report (the run meets it and reports it naming its own env and seed):
        None then."""
        before = len(self.report.findings)
        try:
            return self._rollout(trace, START_PROBE_STEPS, START_PROBE_S)
        except _Stop:
            return None
        finally:
            del self.report.findings[before:]

    def _reset_unseeded(self) -> Tuple[Any, Mapping]:
        result = self._call('reset (a new episode)', 'reset', self.env.reset)
        if not (isinstance(result, tuple) and len(result) == 2):
            self.fail('reset', f"reset returned {_describe(result)}, not (observation, info); return obs, {{}}")
            raise _Stop
        self._observation(result[0], 'the observation of reset')
        return result

    def _step_result(self, result: Any, what: str) -> Tuple[Any, float, bool, bool, Mapping]:
        if not isinstance(result, tuple) or len(result) != 5:
            if isinstance(result, tuple) and len(result) == 4:
                self.fail('step', OLD_STEP_API)
            else:
                self.fail('step', f"step returned {_describe(result)}; return the 5-tuple obs, reward, terminated, "
                                  f"truncated, info")
            raise _Stop
        obs, reward, terminated, truncated, info = result
        if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.integer, np.floating)) \
                and not (isinstance(reward, np.ndarray) and reward.shape == () and reward.dtype.kind in 'iuf'):
            self.fail('reward', f"the reward of {what} is {_describe(reward)}; return one number (a float)")
            raise _Stop
        if not math.isfinite(float(reward)):
            self.fail('reward', f"the reward of {what} is {float(reward)}; NaN/inf rewards stop training: find where "
                                f"the env computes it (a division by zero, a diverged simulation) and keep it finite")
        for name, flag in (('terminated', terminated), ('truncated', truncated)):
            if not isinstance(flag, (bool, np.bool_)):
                breaks = not (isinstance(flag, (int, np.integer)) or (isinstance(flag, np.ndarray) and flag.size == 1))
                self.fail('step', f"{name} of {what} is {_describe(flag)}; return a bool (True or False)", breaks,
                          key='step:' + name)
                if breaks:
                    raise _Stop
        if not isinstance(info, Mapping):
            self.fail('step', f"the info of {what} is {_describe(info)}; return a dict as the fifth value ({{}} when "
                              f"there is nothing to say)")
            raise _Stop
        self._passed('step')
        self._passed('reward')
        return obs, float(reward), bool(terminated), bool(truncated), info

    def _seeding(self, trace: '_Trace') -> None:
        """``reset(seed=s)`` again on the same env, the same actions: the first episode must replay exactly."""
        obs, info = self._call(f'reset(seed={self.seed}) a second time', 'reset', self.env.reset, seed=self.seed)
        if self.report.findings:  # an env that already failed (e.g. a fault that stays on) says nothing more here
            return
        problem = _differs(trace.first_obs, obs, 'the first observation')
        for i, action in enumerate(trace.actions[:REPLAY_STEPS]):
            if problem:
                break
            result = self._call(f"step {i + 1} of the replay", 'step', self.env.step, action)
            first = trace.record[i]
            again = (result[0], float(result[1]), bool(result[2]), bool(result[3]))
            problem = (_differs(first[0], again[0], f"the observation of step {i + 1}")
                       or (f"the reward of step {i + 1} ({first[1]} then {again[1]})" if first[1] != again[1] else '')
                       or (f"the end of the episode at step {i + 1}" if first[2:] != again[2:] else ''))
        if problem:
            self.fail('seeding', f"reset(seed={self.seed}) twice, the same actions, yet {problem} differs: draw every "
                                 f"random number from self.np_random, call super().reset(seed=seed) in reset (never "
                                 f"np.random, random or a generator of its own) and start each episode afresh, so a "
                                 f"run's seed replays its episodes",
                      breaks_training=False)
            return
        self._passed('seeding')

    def _wrapper_limit(self) -> Optional[int]:
        from .gym_env import time_limit_of
        return time_limit_of(self.env)

    def _time_limit(self, trace: '_Trace') -> None:
        limit = self._wrapper_limit()
        if limit is not None:
            self.report.facts['time limit'] = f"{limit} steps (TimeLimit)"
        elif trace.truncated:
            self.report.facts['time limit'] = (f"the env truncates its episodes itself (after "
                                               f"{max(trace.lengths)} steps here)")
        elif _emulator_frame_limit(self.env):  # the ALE's v5 games end themselves, rarely within a random rollout
            self.report.facts['time limit'] = (f"the emulator truncates a game after {_emulator_frame_limit(self.env)} "
                                               f"frames (ALE's max_num_frames_per_episode)")
        elif len(trace.lengths) >= 5 and len(set(trace.lengths)) == 1:  # a fixed horizon, whatever the actions
            self.report.facts['time limit'] = (f"every episode ended after {trace.lengths[0]} steps "
                                               f"({len(trace.lengths)} episodes: a fixed horizon)")
        else:
            ended = (f"{trace.episodes} episode(s) ended, by termination only" if trace.episodes
                     else f"no episode ended in {trace.steps} random steps")
            self.fail('time limit', f"no time limit: no TimeLimit wrapper and no truncation ({ended}), so an episode "
                                    f"a good policy plays may never end and every evaluation episode runs "
                                    f"env.eval_episode_cap steps; set env.max_episode_steps=N, or register the env with "
                                    f"max_episode_steps=N (gymnasium.register), or return truncated=True after N steps",
                      breaks_training=False)
            return
        self._passed('time limit')

    def _step_time(self, trace: '_Trace') -> None:
        if trace.step_times:
            times = np.asarray(trace.step_times)
            self.report.facts['steps'] = (f"{trace.steps} random steps, {trace.episodes} episodes, "
                                          f"{_seconds(float(times.mean()))}/step (max {_seconds(float(times.max()))})")
            self._passed('step time')

    def _close(self, full: bool) -> None:
        if self.env is None:
            return
        self.watch('close')
        if not full:  # at the start of a run: a close that hangs is left behind (as the run's own envs' close is)
            self._close_in_thread()
            return
        try:
            self.env.close()
        except Exception as exc:  # noqa: BLE001
            self.fail('close', f"the env raised {describe_raised(exc, 'close')}; fix the env's close (training "
                               f"reports it at the end of a run)", breaks_training=False)
            return
        self._passed('close')

    def _close_in_thread(self) -> None:
        import threading

        def close() -> None:
            try:
                self.env.close()
            except Exception:  # noqa: BLE001 - the run's own envs' close reports it at its end
                pass
        closer = threading.Thread(target=close, name='acframe-check-env-close', daemon=True)
        closer.start()
        closer.join(self.close_timeout_s)
        if closer.is_alive():
            print(f"acframe: warning: env '{self.report.env}': close() did not return within {self.close_timeout_s:g} s "
                  f"(env.step_timeout_s) at the check of the start of the run; left behind", file=sys.stderr, flush=True)


@dataclass
class _Trace:
    """What a rollout saw: the first episode (for the seeding check), episode ends and step times."""

    first_obs: Any
    first_info: Mapping
    steps: int = 0
    episodes: int = 0
    episode_len: int = 0
    truncated: int = 0
    lengths: List[int] = field(default_factory=list)
    actions: List[Any] = field(default_factory=list)
    record: List[Tuple[Any, float, bool, bool]] = field(default_factory=list)
    step_times: List[float] = field(default_factory=list)
    #: the action mask of the current observation (None without one)
    mask: Optional[np.ndarray] = None

    @property
    def ended(self) -> bool:
        return self.episodes > 0


# ---- what one observation or mask must be ------------------------------------------------------------
def observation_problems(obs: Any, space: gym.Space, path: str = '') -> List[Tuple[str, bool]]:
    """``(problem, breaks_training)`` for each way ``obs`` does not fit ``space`` (keys, shape, dtype, bounds,
    NaN/inf), each problem saying the fix."""
    at = f"entry {path} " if path else ''
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, Mapping):
            return [(f"{at}is {_describe(obs)}, but observation_space is a Dict; return a dict with the keys "
                     f"{sorted(space.spaces)}", True)]
        problems = []
        missing, extra = sorted(set(space.spaces) - set(obs)), sorted(set(obs) - set(space.spaces))
        if missing or extra:
            problems.append((f"{at}has keys {sorted(obs)}, observation_space has {sorted(space.spaces)}; return "
                             f"exactly the keys of observation_space", True))
        for key, sub in space.spaces.items():
            if key in obs:
                problems += observation_problems(obs[key], sub, f"{path}['{key}']")
        return problems
    if isinstance(space, gym.spaces.Box):
        arr = np.asarray(obs) if not isinstance(obs, Mapping) else np.asarray(None)
        if arr.dtype.kind not in 'biuf':
            return [(f"{at}is {_describe(obs)}, not a numeric array; return a numpy array of shape {space.shape} "
                     f"and dtype {space.dtype}", True)]
        if arr.shape != space.shape:
            return [(f"{at}has shape {arr.shape}, observation_space says {space.shape}; return arrays of shape "
                     f"{space.shape} (or declare the shape the env returns)", True)]
        if arr.dtype.kind == 'f' and not np.all(np.isfinite(arr)):
            index = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
            return [(f"{at}holds {arr[index]} (at index {index if len(index) > 1 else index[0]}); NaN/inf "
                     f"observations stop training: find where the env computes it and keep it finite", True)]
        problems = []
        if arr.dtype != space.dtype:
            scaled = space.dtype == np.uint8 and arr.dtype.kind == 'f' and arr.size and float(np.max(arr)) <= 1.0
            cast = f"(obs * 255).astype(np.uint8)" if scaled else f"obs.astype(np.{space.dtype})"
            # a float (or int64) image of a uint8 space cannot be stacked into the envs' uint8 batch: training stops
            breaks = not np.can_cast(arr.dtype, space.dtype, casting='same_kind')
            problems.append((f"{at}is {arr.dtype}, observation_space says {space.dtype}; return {cast} (or declare "
                             f"dtype=np.{arr.dtype} in the Box)", breaks))
        low, high = np.broadcast_to(space.low, space.shape), np.broadcast_to(space.high, space.shape)
        outside = (arr < low) | (arr > high)
        if np.any(outside):
            index = tuple(int(i) for i in np.argwhere(outside)[0])
            where = index if len(index) > 1 else index[0]
            problems.append((f"{at}is outside observation_space's bounds: {arr[index].item()!r} at index {where}, bounds "
                             f"[{low[index]}, {high[index]}]; widen low/high (np.inf where unbounded) or clip the "
                             f"observation", False))
        return problems
    try:
        inside = space.contains(obs)
    except Exception:  # noqa: BLE001 - a space that cannot even compare: not inside
        inside = False
    return [] if inside else [(f"{at}is {_describe(obs)}, not in observation_space {space}; return values of "
                               f"the space", True)]


def mask_problems(mask: Any, action_space: gym.Space, final: bool = False) -> List[str]:
    """How an action mask does not fit ``action_space`` (each saying the fix); [] when it fits. ``final``: the mask
    of an episode's last observation (terminated or truncated), which no action is taken under: it may allow no
    action (a full board), its shape and values must still fit."""
    if not isinstance(action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return [f"comes with {_short(action_space)} actions; masks apply to Discrete and MultiDiscrete actions: "
                f"drop the mask or use a discrete action_space"]
    sizes = [int(action_space.n)] if isinstance(action_space, gym.spaces.Discrete) else \
        [int(n) for n in np.asarray(action_space.nvec).ravel()]
    arr = np.asarray(mask)
    need = (sum(sizes),)
    per = 'one entry per action' if len(sizes) == 1 else f"the masks of the {len(sizes)} sub-spaces one after the other"
    if arr.shape != need:
        return [f"has shape {arr.shape}; {_short(action_space)} needs shape {need} ({per}, 1 = legal)"]
    if arr.dtype.kind not in 'biuf' or not np.all((arr == 0) | (arr == 1)):
        return [f"holds {_describe(mask)} values other than 0 and 1; give a bool or int8 array with 1 for each legal "
                f"action"]
    offset, problems = 0, []
    for i, n in enumerate(sizes if not final else ()):
        if not np.any(arr[offset:offset + n]):
            where = '' if len(sizes) == 1 else f" in sub-space {i}"
            problems.append(f"allows no action{where} (all zeros); every state the env hands the policy needs at least "
                            f"one legal action: end the episode (terminated=True) instead")
            break
        offset += n
    return problems


# ---- building the env to check -----------------------------------------------------------------------
def env_maker(env_cfg: Mapping[str, Any], seed: int, role: str = 'check') -> Callable[[], Tuple[gym.Env, gym.Space]]:
    """A function building the env of ``env_cfg`` as the workers do (``build_env``: factory, Atari chain, time
    limit, ``obs_keys``), returning it before its Dict observation is flattened, and the space the model sees."""
    def make() -> Tuple[gym.Env, gym.Space]:
        from .gym_env import FlattenDictObservation, GuardedEnv, build_env

        env = build_env(dict(env_cfg), 0, seed, role)
        model_space = env.observation_space
        while isinstance(env, (GuardedEnv, FlattenDictObservation)):  # acframe's own layers: the user's env inside
            env = env.env
        return env, model_space
    return make


def policy_checks(cfg: Any, types: Optional[Sequence[str]] = None) -> Dict[str, Callable[[gym.Space, gym.Space], None]]:
    """For each policy type (``types``; None: every registered one), a function raising ``AcframeError`` when it
    cannot train on an env of those spaces (the check a run makes when it builds its policy)."""
    from ..policy.base import fill_model_spaces
    from ..registry import POLICY_REGISTRY

    def check_for(name: str) -> Callable[[gym.Space, gym.Space], None]:
        def check(obs_space: gym.Space, action_space: gym.Space) -> None:
            trial = copy.deepcopy(cfg)
            trial.policy.type = name
            fill_model_spaces(trial, obs_space, action_space, POLICY_REGISTRY.get(name))
            if types is not None:  # (-c CONFIG: its policy's model, as the run builds it: an image key without
                from ..policy import create_policy  # policy.model.encoder passed here, and the run was refused)

                trial.policy.cuda = False
                create_policy(trial, obs_space, action_space, enable_field=('eval',))
        return check
    return {name: check_for(name) for name in (types or POLICY_REGISTRY.names())}


def check_env(cfg: Any, seed: int = 0, full: bool = True, policies: Optional[Sequence[str]] = None,
              watch: Callable[[str], None] = lambda what: None,
              on_finding: Callable[[Finding], None] = lambda finding: None,
              on_unread_mask: Callable[[str], None] = lambda said: None) -> CheckReport:
    """Every check (``full``) or the cheap ones, in this process, on one env of ``cfg.env`` seeded ``seed``;
    ``policies``: the policy types the env must suit (None: any registered one will do); ``watch``, ``on_finding``
    and ``on_unread_mask`` hear of each call into the env, each finding and a mask a run would not read."""
    with warnings.catch_warnings():
        if full:  # gymnasium's own env checker says the same things as warnings: the findings say them once
            warnings.simplefilter('ignore')
        checker = EnvChecker(env_maker(cfg.env, seed), env_name(cfg.env), seed, policy_checks(cfg, policies),
                             watch, on_finding)
        checker.on_unread_mask = on_unread_mask
        return checker.run(full)


# ---- at the start of every run -----------------------------------------------------------------------
def check_env_at_start(cfg: Any, warn: Callable[[str], None]) -> None:
    """The cheap checks, on an env instance of its own (the run's envs and RNGs are untouched: call it before the
    run seeds anything): a problem that would break training raises ``EnvError`` (one line, naming
    ``acframe -m check-env`` for every check); one that only spoils it (float64 observations of a float32 space,
    observations outside the bounds) and an env without a time limit are warnings."""
    from . import manager_class

    manager = manager_class(cfg.env.get('manager', 'sync'))
    if not builds_factory_envs(manager):
        return  # a manager that builds its envs its own way (EnvPool's, a vectorized env, a user's): not ours to build
    if getattr(manager, 'kind', None) == 'async':
        return  # its envs live in subprocesses, so that one that crashes its process (native code, os.abort) is an
        # env error the run reports in one line: stepping one here would crash this process instead
    # built as the collector's first env, so a failure reads as the run's own would
    checker = EnvChecker(env_maker(cfg.env, cfg.seed, 'collector'), env_name(cfg.env), cfg.seed, None)
    checker.close_timeout_s = float(cfg.env.get('step_timeout_s') or CALL_TIMEOUT_S)
    report = _run_watched(checker, cfg.env.get('step_timeout_s'))
    if checker.build_error is not None:  # as the run's own envs would fail to build
        raise checker.build_error
    fatal = [f for f in report.findings if f.breaks_training]
    if fatal:
        more = f" (and {len(fatal) - 1} more problem(s))" if len(fatal) > 1 else ''
        # (an env that raises on an illegal action: the check's random actions took the misnamed mask for an
        # observation, so the mask is perhaps why; a mask in info they take, and other findings have other causes)
        unread = (f" (note: it {report.unread_mask}: the check's random actions took no mask)"
                  if report.mask_misnamed and report.step_raised and fatal[0].check == 'step' else '')
        raise EnvError(f"env '{report.env}' {fatal[0].line()}{more}{unread}; acframe -m check-env {_command_env(cfg)} "
                       f"runs every check")
    if report.unread_mask is not None:
        warn(f"acframe: warning: env '{report.env}' {report.unread_mask}")
    for finding in report.findings:
        if finding.check != 'time limit':  # (e.g. float64 observations of a float32 space: cast, they train; said)
            warn(f"acframe: warning: env '{report.env}' {finding.line()} (training casts or goes on; acframe -m "
                 f"check-env {_command_env(cfg)} fails on it)")
        else:
            warn(f"acframe: warning: env '{report.env}' has no time limit: its evaluation episodes run up to "
                 f"env.eval_episode_cap={cfg.env.get('eval_episode_cap')} steps each; set env.max_episode_steps=N "
                 f"(or register the env with max_episode_steps=N)")


def builds_factory_envs(manager: type) -> bool:
    """Whether ``manager``'s envs are the env factory's own (``EnvManager.factory_envs``; where unset, whether its
    ``from_config`` is ``EnvManager``'s): the envs check-env and a run's start check build one by one."""
    from .manager import EnvManager

    factory = getattr(manager, 'factory_envs', None)
    if factory is None:
        from_config = getattr(manager, 'from_config', None)
        factory = getattr(from_config, '__func__', None) is EnvManager.from_config.__func__
    return bool(factory)


def _could_be_a_mask(space: Any, action_space: gym.Space) -> bool:
    """Whether ``space`` has an action mask's form for ``action_space``: 0/1 entries, one per action (choice)."""
    from .masks import mask_size

    size = mask_size(action_space)
    if size is None:
        return False
    if isinstance(space, gym.spaces.MultiBinary):
        return tuple(np.atleast_1d(space.n)) == (size,)
    return (isinstance(space, gym.spaces.Box) and space.shape == (size,) and bool(np.all(space.low >= 0))
            and bool(np.all(space.high <= 1)))


def _raised_in_gymnasium(exc: BaseException, file: str = '') -> bool:
    """Whether the innermost frame of ``exc``'s traceback is gymnasium's own code (not the user's env), in its
    ``file`` where one is named (``passive_env_checker.py``: what gym.make's env checker asserts)."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    return (bool(frames) and f"{os.sep}gymnasium{os.sep}" in frames[-1].filename
            and frames[-1].filename.endswith(os.sep + file if file else ''))


def _emulator_frame_limit(env: gym.Env) -> int:
    """The frames after which an ALE env truncates a game itself (``max_num_frames_per_episode`` of its gymnasium
    registration, 108,000 for the ``ALE/*-v5`` ids: 27,000 steps of 4 frames); 0 for any other env."""
    spec = getattr(env.unwrapped, 'spec', None)
    return int((getattr(spec, 'kwargs', None) or {}).get('max_num_frames_per_episode') or 0)


def _run_watched(checker: EnvChecker, timeout: Optional[float]) -> CheckReport:
    """``checker.run(full=False)``, with each reset and step after the build watched by ``timeout``
    (``env.step_timeout_s``): one that does not return within it is a finding (``EnvTimeoutError``'s line).

    The watchdog is ``SIGALRM`` in the main thread (anywhere else the check runs unwatched, as in-process envs
    train): a handler or timer already installed is put aside for the check and restored after it, the timer with
    the time the check took subtracted, so the check is bounded whatever the process set up before it."""
    import threading

    from ..errors import EnvTimeoutError

    if not (timeout and hasattr(signal, 'setitimer') and threading.current_thread() is threading.main_thread()):
        return checker.run(full=False)
    doing = ['building the env']

    def watch(what: str) -> None:
        doing[0] = what
        signal.setitimer(signal.ITIMER_REAL, float(timeout) if what not in ('building the env', 'close') else 0.0)

    def ring(signum: int, frame: Any) -> None:
        raise EnvTimeoutError(f"did not return within env.step_timeout_s={float(timeout):g} s: fix the env or raise "
                              f"env.step_timeout_s")
    checker.watch = watch
    previous_timer = signal.setitimer(signal.ITIMER_REAL, 0.0)  # (seconds left, interval) of a timer already set
    previous = signal.signal(signal.SIGALRM, ring)
    started = time.monotonic()
    try:
        return checker.run(full=False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if previous_timer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, max(previous_timer[0] - (time.monotonic() - started), 1e-3),
                             previous_timer[1])


def _command_env(cfg: Any) -> str:
    """The arguments of ``acframe -m check-env`` for the env of ``cfg`` (its simple ``env_kwargs`` included)."""
    return check_env_arguments(cfg.env, cfg.get('import_names') or [])


def env_imports(env_cfg: Any) -> List[str]:
    """The modules ``acframe -m check-env`` must ``--import`` to build the env of ``env_cfg``, as well as the process
    can tell: of the modules ``import_names`` imported (``imported_names``: every run's of the process), those seen
    registering the env's type or id (``registrations_of``); else those the env's factory (or a gymnasium id's entry
    point) lives in or under; else all of them (one may register it elsewhere); with none imported, the factory's own
    module (a script that imported it itself), unless it is the script (``__main__``) or acframe's or gymnasium's."""
    from ..registry import ENV_REGISTRY, imported_names, registrations_of

    imported = imported_names()
    env_type = env_cfg.get('type', 'gym')
    module: Optional[str] = None
    entry_key = f"env:{env_type}"
    if env_type != 'gym':
        if env_type in ENV_REGISTRY:
            module = getattr(ENV_REGISTRY.get(env_type), '__module__', None)
    else:
        try:
            from .gym_env import resolve_env_id
            env_id = resolve_env_id(str(env_cfg.get('env_id')))
            entry_key = f"gym:{env_id}"
            entry = gym.spec(env_id).entry_point
            module = entry.partition(':')[0] if isinstance(entry, str) else getattr(entry, '__module__', None)
        except Exception:  # noqa: BLE001 - an id gymnasium does not know: nothing to tell from it
            module = None
    # the modules seen registering it (an id of gymnasium's class under a name of the user's: its entry point is
    # gymnasium's, its registration the user's)
    registering = [name for name in imported if entry_key in (registrations_of(name) or [])]
    if registering:
        return registering
    if not module:
        return imported
    if module.split('.')[0] in ('acframe', 'gymnasium'):
        return []
    related = [name for name in imported if module == name or module.startswith(name + '.')]
    if related:
        return related
    return imported if imported or module == '__main__' else [module]


def check_env_arguments(env_cfg: Any, imports: Sequence[str]) -> str:
    """The arguments of ``acframe -m check-env`` for the env of ``env_cfg`` with the modules ``imports``."""
    env_type = env_cfg.get('type', 'gym')
    words = [env_cfg.get('env_id') if env_type == 'gym' else env_type]
    if env_type != 'gym' and type_env_id(env_cfg) is not None:  # a factory that picks its game by env.env_id
        words.append(f"env.env_id={type_env_id(env_cfg)}")
    words += [f"--import {name}" for name in imports]
    words += [f"env.env_kwargs.{k}={v if isinstance(v, str) else repr(v)}"
              for k, v in (env_cfg.get('env_kwargs') or {}).items()
              if isinstance(v, (bool, int, float)) or isinstance(v, str) and v.isidentifier() and len(v) <= 40]
    return ' '.join(words)


# ---- acframe -m check-env ----------------------------------------------------------------------------
def check_env_config(env: Optional[str], config: Optional[str], overrides: Sequence[Any], imports: Sequence[str],
                     seed: Optional[int] = None) -> Tuple[Any, Optional[List[str]]]:
    """The compiled config ``acframe -m check-env`` checks, and the policy types to check against (None: any).

    ``env`` is what a config's env can be: a gymnasium id, an acframe short name, or a registered env type
    (``ENV_REGISTRY``, e.g. one a module named with ``--import`` registers); ``config`` a config file whose env
    (and policy) is checked instead. ``overrides`` are ``key.path=value`` as in training (``env.env_kwargs.x=1``)."""
    from ..config import compile_config
    from ..config.compile import override_list, stop_value_unwarned
    from ..registry import ENV_REGISTRY, closest, import_names

    extra: List[Any] = override_list(overrides) + ([('import_names', list(imports))] if imports else [])
    if config is not None:
        if env is not None:
            raise ConfigError(f"check-env takes an env ('{env}') or -c CONFIG, not both; drop one")
        with stop_value_unwarned():  # (nothing is trained here)
            cfg = compile_config(config, extra, seed=seed)
        return _not_vectorized(cfg), [cfg.policy.type]
    if env is None:
        raise ConfigError("check-env needs an env: acframe -m check-env ENV [--import MODULE] (a gymnasium id, a "
                          "short name or a registered env type), or -c CONFIG")
    import_names(imports)  # their registrations decide what ENV names
    if env in ENV_REGISTRY and env != 'gym':  # (stop_value=None: nothing is trained here, so no warning about it)
        pair = (dict(env=dict(env_id=env, stop_value=None)), dict(env=dict(type=env), policy=dict(type='ppo')))
    else:
        from .gym_env import resolve_env_id
        try:
            resolve_env_id(env)
        except ConfigError as exc:
            if ':' in env:
                raise
            hint = closest(env, ENV_REGISTRY.names())
            if hint is None:
                raise
            raise ConfigError(f"'{env}' is neither a gymnasium id, a short name nor a registered env type. Did you "
                              f"mean the env type '{hint}'? (env types: {', '.join(ENV_REGISTRY.names())})") from exc
        pair = (dict(env=dict(env_id=env, stop_value=None)), dict(env=dict(type='gym'), policy=dict(type='ppo')))
    return _not_vectorized(compile_config(pair, extra, seed=seed)), None


def _not_vectorized(cfg: Any) -> Any:
    """``cfg``, unless its ``env.manager`` is a vectorized env (a ``VectorEnv``): check-env builds gymnasium envs one
    by one, so it would check another env (the config's ``env_id``) than the run steps."""
    from . import manager_class

    vector = manager_class(cfg.env.get('manager', 'sync'))
    if issubclass(vector, gym.vector.VectorEnv):
        raise ConfigError(f"env.manager '{cfg.env.manager}' is a vectorized env ({vector.__name__}): check-env "
                          f"checks gymnasium envs one by one; acframe checks a vectorized env's spaces, autoreset "
                          f"mode and action masks when a run builds and steps it: train it briefly instead "
                          f"(acframe -c CONFIG --max-env-step 1000)")
    return cfg


def check_in_child(cfg: Any, seed: int, policies: Optional[Sequence[str]]) -> CheckReport:
    """``check_env`` in a child process (forked where the platform can), watched: a call into the env that takes
    longer than ``env.step_timeout_s`` (default ``CALL_TIMEOUT_S``) or a child that dies is a finding too."""
    if 'fork' not in multiprocessing.get_all_start_methods():
        return check_env(cfg, seed, True, policies)
    context = multiprocessing.get_context('fork')
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(send, cfg, seed, policies), daemon=True)
    child.start()
    send.close()
    timeout = float(cfg.env.get('step_timeout_s') or CALL_TIMEOUT_S)
    report = CheckReport(env_name(cfg.env))
    doing = 'building the env'
    try:
        while True:
            if not receive.poll(BUILD_TIMEOUT_S if doing == 'building the env' else timeout):
                limit = BUILD_TIMEOUT_S if doing == 'building the env' else timeout
                report.findings.append(Finding(
                    'hang', f"{doing} did not return within {limit:g} s: the env hangs there; fix it (in training "
                            f"it stalls a serial run with env.manager='sync', whose envs step in its own process; "
                            f"env.manager='async' and -m parallel's workers stop it after env.step_timeout_s; "
                            f"check-env waits env.step_timeout_s)"))
                break
            try:
                kind, value = receive.recv()
            except (EOFError, OSError):
                child.join(5)
                code = child.exitcode
                died = (f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0
                        else f"exited with status {code}")
                report.findings.append(Finding(
                    'crash', f"the env's process {died} during {doing}: the env crashed it (e.g. in native code); fix "
                             f"the crash (in training it ends the run; with env.manager='async' it is reported as an "
                             f"env error)"))
                break
            if kind == 'at':
                doing = value
            elif kind == 'finding':
                report.findings.append(value)
            elif kind == 'unread_mask':
                report.unread_mask = value
            elif kind == 'done':
                report.facts, report.checks, report.unread_mask = value.facts, value.checks, value.unread_mask
                report.mask_misnamed, report.step_raised = value.mask_misnamed, value.step_raised
                break
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()
    return report


def _child_main(send: Any, cfg: Any, seed: int, policies: Optional[Sequence[str]]) -> None:
    import faulthandler

    faulthandler.disable()  # an env that kills this process is reported by the parent, in one line
    try:
        sys.stdin.close()
    except Exception:  # noqa: BLE001
        pass
    report = check_env(cfg, seed, True, policies, watch=lambda what: send.send(('at', what)),
                       on_finding=lambda finding: send.send(('finding', finding)),
                       on_unread_mask=lambda said: send.send(('unread_mask', said)))
    report.findings = []
    send.send(('done', report))
    send.close()
    os._exit(0)  # nothing of the parent's (atexit handlers, buffered output) runs twice


def check_env_command(args: Any) -> int:
    """``acframe -m check-env ENV [--import MODULE] [-s SEED] [key=value ...]`` (or ``-c CONFIG``): one line per
    problem (``acframe: error: ...``, with its fix) on stderr and exit 2, or a summary and exit 0."""
    positional = [a for a in args.overrides if not (isinstance(a, str) and '=' in a)]
    overrides = [a for a in args.overrides if a not in positional]
    if len(positional) > 1:
        raise ConfigError(f"check-env checks one env; got {', '.join(map(str, positional))} (key=value overrides "
                          f"need an '=')")
    seed = args.seed if args.seed is not None else 0
    cfg, policies = check_env_config(positional[0] if positional else None, args.config, overrides,
                                     args.imports or [], seed)
    report = check_in_child(cfg, seed, policies)
    from . import manager_class
    manager = manager_class(cfg.env.get('manager', 'sync'))
    if not builds_factory_envs(manager):  # (EnvPool's, a user's with a from_config of its own)
        print(f"acframe: warning: check-env {report.env}: env.manager '{cfg.env.manager}' ({manager.__name__}) builds "
              f"its envs its own way: this checked the env the factory builds for env.type/env.env_id one by one; "
              f"the manager's own envs are checked when a run builds and steps them (a manager building on "
              f"super().from_config sets factory_envs = True)", file=sys.stderr, flush=True)
    if report.ok:
        print(report.summary())
        return 0
    print(f"check-env {report.env}: {len(report.findings)} problem(s), each on a line of its own with the fix "
          f"(stderr)", flush=True)
    for finding in report.findings:
        print(f"acframe: error: check-env {report.env}: {finding.line()}", file=sys.stderr, flush=True)
    if report.unread_mask is not None:  # (the check's random actions took no mask: perhaps why a step failed)
        print(f"acframe: warning: check-env {report.env}: the env {report.unread_mask}", file=sys.stderr, flush=True)
    return 2


# ---- small words -------------------------------------------------------------------------------------
def _short(space: Any) -> str:
    """A space in a few words: ``Box(4,) float32``, ``Dict(a: Box(3,) float32, ...)``, ``Discrete(2)``."""
    if isinstance(space, gym.spaces.Box):
        return f"Box{space.shape} {space.dtype}"
    if isinstance(space, gym.spaces.Dict):
        return 'Dict(' + ', '.join(f"{k}: {_short(v)}" for k, v in space.spaces.items()) + ')'
    return str(space).replace('\n', ' ')[:160]


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    return f"{type(value).__name__} {value!r}"[:120] if value is None or np.isscalar(value) else f"a {type(value).__name__}"


def _differs(a: Any, b: Any, what: str) -> str:
    """``what`` when the two observations differ (entry by entry), else ''."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return next((f"{what} (entry '{k}')" for k in a if k not in b or _differs(a[k], b[k], what)), '')
    try:
        same = np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    except (TypeError, ValueError):
        same = np.array_equal(np.asarray(a), np.asarray(b))
    return '' if same else what


def _seconds(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"
