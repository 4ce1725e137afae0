"""``EnvManager``: a batch of envs stepped together, over gymnasium's vector envs.

* ``sync`` steps the envs in this process (``SyncVectorEnv``), ``async`` in subprocesses (``AsyncVectorEnv``).
* ``SAME_STEP`` autoreset: the observation returned for a finished env is already the first observation of
  its next episode, and the last observation of the finished episode is returned as ``final_obs`` — what a
  time-limit truncation must be bootstrapped from.
* Box actions are clipped to the action space's bounds before they reach the envs (the learner keeps the
  unclipped sample).
* Episode returns and lengths are accumulated here, vectorized, so workers can report them.
* Watchdog (``env.step_timeout_s``): an async step or reset that does not return in time is an
  ``EnvTimeoutError`` naming the env index and seed (its subprocess is killed). In-process (sync) envs are
  watched with ``SIGALRM`` where the caller asks for it (the parallel pipeline's worker processes).
* Failures of async envs are one ``EnvError`` each: an exception raised in an env names the env index,
  seed, the exception and the file:line of the user code that raised it (the child's traceback follows on
  the next lines, for ``--debug``); a subprocess that dies is named by its env index and exit signal.
"""
from __future__ import annotations

import multiprocessing
import re
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.vector.async_vector_env import AsyncState

from ..errors import AcframeError, ConfigError, EnvContractError, EnvError, EnvTimeoutError, innermost_user_frame
from ..signals import continues, watch_continues
from . import snapshot
from .obs import ObsArray, stack_obs

#: what ``env.on_step_timeout`` may be
ON_STEP_TIMEOUT = ('error', 'restart')
#: how long closing envs may take when env.step_timeout_s is None (nothing waits forever)
CLOSE_TIMEOUT_S = 60.0


class StepResult(NamedTuple):
    obs: ObsArray            # (B, *obs_shape): next observations (reset observations where an episode ended); a dict per key for Dict observations
    reward: np.ndarray       # (B,) float32
    terminated: np.ndarray   # (B,) bool
    truncated: np.ndarray    # (B,) bool (and not terminated)
    done_index: np.ndarray   # (K,) indices of envs whose episode ended on this step
    final_obs: Optional[ObsArray]  # (K, *obs_shape) the last observations of those episodes, or None when K == 0


class EnvManager:
    """Steps ``len(env_fns)`` envs together and tracks their episode statistics.

    The env factory (``acframe.envs.make_env_manager``) builds every manager through ``from_config``; a subclass
    registered in ``ENV_MANAGER_REGISTRY`` is picked by ``env.manager`` (``docs/custom_env.md``).
    """

    #: the gymnasium vector env stepped here: 'sync' (in this process) or 'async' (subprocesses); set by subclasses
    kind: str = 'sync'
    #: whether a process that built this manager's kind of envs may be forked (EnvPool's C++ threads may not)
    fork_safe: bool = True
    #: the registered manager that builds this manager's envs one by one in this process (``-m eval --video`` records
    #: them, ``load_policy`` reads their spaces); None: none can (a vectorized env)
    in_process_manager: Optional[str] = 'sync'
    #: whether this manager's envs are the env factory's own (``env.type``/``env_id``), so that a run's start checks one
    #: of them (``envs.check.check_env_at_start``); None: when ``from_config`` is this class's (a subclass with a
    #: ``from_config`` of its own, which may build them its own way, sets True where it builds on ``super()``'s)
    factory_envs: Optional[bool] = None
    #: whether ``in_process_manager``'s envs play the same episodes as this manager's (same env, same seeds); False
    #: where they differ (EnvPool's), so that an evaluation recorded with them is named as another setting
    in_process_plays_alike: bool = True

    @classmethod
    def from_config(cls, env_cfg: Dict[str, Any], role: str, seeds: Sequence[int],
                    params: Optional[Sequence[Dict[str, Any]]] = None, wrap: Optional[Callable[[gym.Env, int], gym.Env]] = None,
                    watch_sync: bool = False) -> 'EnvManager':
        """The factory's call: ``len(seeds)`` envs of ``env_cfg`` for ``role``, env ``i`` seeded ``seeds[i]``, with its
        own parameters ``params[i]`` (None: the nominal env; ``gym_env.env_fns`` says how they reach it) and wrapped
        by ``wrap(env, i)``; watched by ``env.step_timeout_s`` (in-process envs when ``watch_sync``)."""
        from .gym_env import env_fns

        return cls(env_fns(env_cfg, seeds, role, params=params, wrap=wrap), seeds, cls.kind, role=role,
                   step_timeout_s=env_cfg.get('step_timeout_s'), watch_sync=watch_sync)

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], seeds: Sequence[int], manager: str = 'sync',
                 role: str = '', step_timeout_s: Optional[float] = None, watch_sync: bool = False) -> None:
        """``step_timeout_s``: the watchdog of the async manager (None: wait forever); ``watch_sync``: also watch
        in-process envs with ``SIGALRM`` (only from the main thread of a process whose alarm signal is free)."""
        if manager not in ('sync', 'async'):
            raise ConfigError(f"env.manager '{manager}' is not 'sync' or 'async'")
        if len(env_fns) == 0:
            raise ConfigError("the env manager needs at least one env (env.collector_env_num / env.evaluator_env_num > 0)")
        self._prepare(seeds, manager, role, step_timeout_s)
        self.unrestored_why = ''  # why the last load_state_dict could not restore the envs ('' when it did)
        if manager == 'sync':
            venv = SyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP)
        else:
            try:
                venv = _QuietAsyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP, daemon=True)
            except _WorkerRaised as failure:
                raise self._raised_error('construction', failure) from None
            except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
                raise EnvError(f"an env subprocess ({role or 'env manager'}) died while its env was built ({type(exc).__name__}); "
                               f"build one env of this config in a plain Python session to see why") from None
        self._attach(venv, len(env_fns), watch_sync and manager != 'async')
        # in-process envs with array observations are stepped one by one here (``_step_in_process``), not through
        # SyncVectorEnv.step: the same calls on each env, without its generic per-step bookkeeping (~30 % of a
        # CartPole step)
        self._direct = manager == 'sync' and isinstance(venv.single_observation_space, gym.spaces.Box)

    def _prepare(self, seeds: Sequence[int], manager: str, role: str, step_timeout_s: Optional[float]) -> None:
        """The attributes every manager sets before its envs are built."""
        check_step_timeout(step_timeout_s)
        self.seeds = list(seeds)
        self.manager = manager
        self.role = role
        self.step_timeout_s = None if step_timeout_s is None else float(step_timeout_s)
        self._closed = True  # until built: nothing to close
        self._direct = False  # in-process Box-observation envs stepped by ``_step_in_process`` (set by __init__)
        if self.step_timeout_s is not None:
            watch_continues()  # the watchdog does not count the time the process was stopped
        self._alarm: Optional[_SyncAlarm] = None

    def _attach(self, venv: Any, num_envs: int, watch_in_process: bool) -> None:
        """Step ``venv`` (a gymnasium vector env with SAME_STEP autoreset) from now on; ``watch_in_process``: watch
        its steps with ``SIGALRM`` (where available)."""
        self._venv = venv
        self.num_envs = num_envs
        self._init_bookkeeping(venv.single_observation_space, venv.single_action_space)
        if watch_in_process and self.step_timeout_s is not None and _SyncAlarm.available():
            self._alarm = _SyncAlarm(self.step_timeout_s, self.role, self.seeds)
            self._alarm.install()

    def reset(self, seeds: Optional[Sequence[int]] = None) -> np.ndarray:
        """Reset every env (with ``seeds``, default the manager's seeds) and return the observations."""
        seeds = list(seeds) if seeds is not None else self.seeds
        if self.manager == 'async':
            obs, _ = self._async_call('reset', lambda: self._venv.reset_async(seed=seeds), self._venv.reset_wait)
        else:
            try:
                with self._watch():
                    obs, _ = self._venv.reset(seed=seeds)
            except AcframeError:  # (an env's, named already; a wrapper of acframe's: a video's encoder)
                raise
            except Exception as exc:
                raise _as_env_error(exc) from exc
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        return obs

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with ``actions`` (B, ...) and return a ``StepResult``."""
        if self._clip is not None:
            actions = np.clip(actions, self._clip[0], self._clip[1])
        if self.manager == 'async':
            obs, reward, terminated, truncated, info = self._async_call(
                'step', lambda: self._venv.step_async(actions), self._venv.step_wait)
        else:
            try:
                with self._watch():
                    if self._direct:
                        obs, reward, terminated, truncated, info = self._step_in_process(actions)
                    else:
                        obs, reward, terminated, truncated, info = self._venv.step(actions)
            except AcframeError:  # (an env's, named already; a wrapper of acframe's: a video's encoder)
                raise
            except Exception as exc:
                raise _as_env_error(exc) from exc
        self._episode_return += reward
        self._episode_length += 1
        done = terminated | truncated
        if not done.any():  # the common case: nothing else to do
            return StepResult(obs, reward.astype(np.float32, copy=False), terminated, truncated, _EMPTY_INDEX, None)
        done_index = np.flatnonzero(done)
        final_obs = stack_obs([info['final_obs'][i] for i in done_index])
        self._record_finished(done_index)
        return StepResult(obs, reward.astype(np.float32, copy=False), terminated, truncated & ~terminated,
                          done_index, final_obs)

    def _step_in_process(self, actions: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        """``SyncVectorEnv.step`` with SAME_STEP autoreset for Box observations, as gymnasium makes it: env ``i`` steps
        with ``actions[i]`` (the element gymnasium's ``iterate`` hands it) and, when its episode ended, is reset, its
        last observation kept in ``info['final_obs'][i]``; the observations are stacked into a new ``(B, ...)``
        array of the space's dtype as gymnasium's ``concatenate`` stacks them (same shape and casting checks)."""
        envs = self._venv.envs
        if len(actions) != len(envs):
            raise ValueError(f"{len(actions)} actions for {len(envs)} envs")
        space = self._venv.single_observation_space
        obs = np.empty((self.num_envs,) + tuple(space.shape), dtype=space.dtype)
        reward = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        final_obs: Dict[int, Any] = {}
        singles = []
        for i, env in enumerate(envs):
            single, reward[i], terminated[i], truncated[i], _ = env.step(actions[i])
            if terminated[i] or truncated[i]:
                final_obs[i] = single
                single, _ = env.reset()
            singles.append(single)
        try:
            np.stack(singles, axis=0, out=obs)  # gymnasium's concatenate: its shape and casting checks
        except ValueError:
            for i, single in enumerate(singles):
                if np.shape(single) != tuple(space.shape):
                    where = 'reset' if i in final_obs else 'step'  # (an ended episode's env was reset in this step)
                    raise EnvContractError(f"{self._env_name(i)} gave an observation of shape {np.shape(single)} in "
                                           f"{where}, but its observation space declares {tuple(space.shape)}") from None
            raise
        return obs, reward, terminated, truncated, {'final_obs': final_obs}

    # ---- bookkeeping shared with other managers (EnvPool) ------------------------------------------
    def _init_bookkeeping(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Spaces, the Box-action clip bounds and the vectorized episode accumulators; marks the manager open."""
        self.observation_space = observation_space
        self.action_space = action_space
        self._clip: Optional[Tuple[np.ndarray, np.ndarray]] = None
        if isinstance(action_space, gym.spaces.Box):
            self._clip = (action_space.low, action_space.high)
        self._episode_return = np.zeros(self.num_envs, dtype=np.float64)
        self._episode_length = np.zeros(self.num_envs, dtype=np.int64)
        self.finished_returns: List[float] = []
        self.finished_lengths: List[int] = []
        self.finished_env: List[int] = []
        self._closed = False

    def _record_finished(self, done_index: np.ndarray) -> None:
        """Move the returns and lengths of the episodes that just ended into ``finished_*`` and zero them."""
        for i in done_index:
            self.finished_returns.append(float(self._episode_return[i]))
            self.finished_lengths.append(int(self._episode_length[i]))
            self.finished_env.append(int(i))
        self._episode_return[done_index] = 0.0
        self._episode_length[done_index] = 0

    def pop_finished(self) -> Tuple[List[float], List[int], List[int]]:
        """Returns, lengths and env indices of the episodes finished since the last call."""
        out = (self.finished_returns, self.finished_lengths, self.finished_env)
        self.finished_returns, self.finished_lengths, self.finished_env = [], [], []
        return out

    # ---- resume ------------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """Episode accumulators and, for in-process envs whose state is plain data, that state (see ``snapshot``).

        Nothing here is ever pickled: an env whose state is not plain data (Box2D, MuJoCo, subprocess envs)
        is saved as ``None`` and resumes from a reset.
        """
        state: Dict[str, Any] = {'episode_return': self._episode_return.copy(), 'episode_length': self._episode_length.copy(),
                                 'envs': None, 'why': self._keeps_no_state()}
        if self.manager == 'sync':
            captured = [snapshot.capture_or_why(env) for env in self._venv.envs]
            why = next((f"env {i}'s {why} is not plain data" for i, (_, why) in enumerate(captured) if why), '')
            state['envs'], state['why'] = (None, why) if why else ([saved for saved, _ in captured], '')
        return state

    def _keeps_no_state(self) -> str:
        """Why a manager other than ``sync`` keeps no env state (``unrestored_why``'s words)."""
        if self.manager == 'async':
            return "env.manager='async': its envs live in subprocesses"
        return f"env manager '{self.manager}' keeps no env state"

    def load_state_dict(self, state: Dict[str, Any]) -> bool:
        """Restore what ``state_dict`` saved; True when the envs' exact state was restored (else they must reset,
        and ``unrestored_why`` says why)."""
        envs = state.get('envs')
        why = ''
        if envs is None:  # (a checkpoint's text, shown in a message: printable characters only)
            why = ''.join(c for c in str(state.get('why') or 'the checkpoint holds none')[:300] if c.isprintable())
        elif self.manager != 'sync':
            why = f"{self._keeps_no_state()} (the run's manager now)"
        elif len(envs) != self.num_envs:
            why = f"it holds the state of {len(envs)} envs and the run now has {self.num_envs} (env.collector_env_num)"
        elif not all(snapshot.restore(env, saved) for env, saved in zip(self._venv.envs, envs)):
            why = "the envs are now built of other layers (wrappers) than the saved ones"
        self.unrestored_why = why
        if why:
            return False
        self._episode_return[:] = state['episode_return']
        self._episode_length[:] = state['episode_length']
        return True

    # ---- the async path and the watchdogs ----------------------------------------------------------
    def _watch(self) -> Any:
        return self._alarm if self._alarm is not None else _NO_ALARM

    def _async_call(self, what: str, send: Callable[[], None], wait: Callable[[Optional[float]], Any]) -> Any:
        """Send a step/reset to the env subprocesses and wait for every answer (at most ``step_timeout_s``).

        Any failure leaves the manager closed (its subprocesses killed) and raises one ``EnvError``.
        """
        try:
            send()
            pending = self._venv._state
            while True:
                continued = continues()
                try:
                    return wait(self.step_timeout_s)
                except multiprocessing.TimeoutError:
                    if continues() == continued:
                        raise
                    self._venv._state = pending  # the process was stopped meanwhile: that time was not the env's
        except _WorkerRaised as failure:
            error: EnvError = self._raised_error(what, failure)
        except multiprocessing.TimeoutError:
            late = [i for i, pipe in enumerate(self._venv.parent_pipes) if pipe is not None and not pipe.poll(0)]
            error = self._timeout_error(what, late)
        except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
            error = self._died_error(what, exc)
        except EnvError:
            self._kill()
            raise
        except Exception as exc:
            error = _as_env_error(exc)
        self._kill()
        raise error

    def _env_name(self, index: int) -> str:
        return f"{self.role} env {index} (seed {self.seeds[index]})".lstrip()

    def _raised_error(self, what: str, failure: '_WorkerRaised') -> EnvError:
        value = failure.value
        first = str(value).strip().splitlines()[0] if str(value).strip() else ''
        if isinstance(value, EnvError):  # GuardedEnv's: names the env, the exception and the user's line already
            try:
                return type(value)(f"{first}\nenv subprocess traceback:\n{failure.trace}")
            except Exception:
                return EnvError(f"{first}\nenv subprocess traceback:\n{failure.trace}")
        return EnvError(f"{self._env_name(failure.index)} raised {failure.exc_type.__name__} in {what}: {first} "
                        f"(at {user_location(failure.trace)}; --debug shows the traceback)\n"
                        f"env subprocess traceback:\n{failure.trace}")

    def _timeout_error(self, what: str, late: List[int]) -> EnvTimeoutError:
        late = late or list(range(self.num_envs))
        others = f" (and {len(late) - 1} more env{'s' if len(late) > 2 else ''})" if len(late) > 1 else ''
        return EnvTimeoutError(f"{self._env_name(late[0])}{others} did not return from {what} within env.step_timeout_s="
                               f"{self.step_timeout_s:g} s (the env subprocesses were stopped): fix the env or raise env.step_timeout_s")

    def _died_error(self, what: str, exc: BaseException) -> EnvError:
        deadline = time.monotonic() + 1.0
        dead: List[int] = []
        while not dead and time.monotonic() < deadline:
            dead = [i for i, process in enumerate(self._venv.processes) if process.exitcode is not None]
            if not dead:
                time.sleep(0.01)
        if not dead:
            return EnvError(f"an env subprocess ({self.role or 'env manager'}) closed its pipe during {what} ({type(exc).__name__})")
        code = self._venv.processes[dead[0]].exitcode
        try:
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        except ValueError:
            how = f"was killed by signal {-code}"
        return EnvError(f"{self._env_name(dead[0])}: its subprocess {how} during {what}")

    def _kill(self) -> None:
        """Close an async manager whose subprocesses may hang or be dead: kill them, then release the pipes."""
        if self._closed:
            return
        self._closed = True
        venv = self._venv
        for process in venv.processes:
            if process.is_alive():
                process.kill()
        for process in venv.processes:
            process.join(1.0)
        venv._state = AsyncState.DEFAULT  # nothing to wait for any more
        try:
            venv.close(terminate=True)
        except Exception:
            pass

    def close(self) -> None:
        """Close the envs; an env whose ``close()`` does not return within ``env.step_timeout_s`` (60 s when None) is
        left behind with one warning (in-process envs: in a daemon thread; subprocesses: killed), so a finished run
        never waits on it."""
        if not self._closed:
            self._closed = True
            if self._alarm is not None:
                self._alarm.release()
            timeout = self.step_timeout_s if self.step_timeout_s is not None else CLOSE_TIMEOUT_S
            try:
                if self.manager == 'async':
                    self._close_subprocesses(timeout)
                else:
                    self._close_in_thread(timeout)
            except Exception:  # closing after a crashed subprocess must not hide the original error
                self._closed = False
                self._kill()

    def _close_subprocesses(self, timeout: float) -> None:
        """gymnasium's ``AsyncVectorEnv.close`` waits for every env's ``close()`` answer without a limit: ask them
        all, wait ``timeout`` in total, and kill the subprocesses of a close that hangs (one warning)."""
        venv = self._venv
        if venv._state != AsyncState.DEFAULT:  # a call still pending: gymnasium's own close times it out
            venv.close(timeout=timeout)
            return
        pipes = [pipe for pipe in venv.parent_pipes if pipe is not None and not pipe.closed]
        for pipe in pipes:
            pipe.send(('close', None))
        deadline = time.monotonic() + timeout
        hung = False
        for pipe in pipes:  # a worker answers, then closes its env and exits
            hung = hung or not pipe.poll(max(0.0, deadline - time.monotonic()))
            if not hung:
                pipe.recv()
        for process in venv.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            hung = hung or process.is_alive()
        if hung:
            print(f"acframe: warning: the {self.role or 'env manager'} envs' close() did not return within {timeout:g} s "
                  f"(env.step_timeout_s); their subprocesses were killed", file=sys.stderr, flush=True)
            self._closed = False
            self._kill()
            return
        for pipe in pipes:
            pipe.close()
        venv.closed = True

    def _close_in_thread(self, timeout: float) -> None:
        if sys.is_finalizing():  # an unclosed manager collected at interpreter exit: no thread can start any more
            return  # (Thread.start would wait forever); the process is ending and its envs go with it
        failed: List[BaseException] = []

        def close() -> None:
            try:
                self._venv.close()
            except Exception as exc:  # noqa: BLE001 - reported below, like the original close did not
                failed.append(exc)
        closer = threading.Thread(target=close, name='acframe-env-close', daemon=True)
        closer.start()
        closer.join(timeout)
        if closer.is_alive():
            print(f"acframe: warning: the {self.role or 'env manager'} envs' close() did not return within {timeout:g} s "
                  f"(env.step_timeout_s); left behind", file=sys.stderr, flush=True)
        elif failed:
            raise failed[0]

    def __enter__(self) -> 'EnvManager':
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class SyncEnvManager(EnvManager):
    """``env.manager='sync'``: the envs stepped one after another in this process (gymnasium's ``SyncVectorEnv``)."""

    kind = 'sync'


class AsyncEnvManager(EnvManager):
    """``env.manager='async'`` (DI-engine's 'subprocess'): each env in its own subprocess (``AsyncVectorEnv``)."""

    kind = 'async'


_EMPTY_INDEX = np.zeros(0, dtype=np.int64)


def _as_env_error(exc: BaseException) -> EnvError:
    return EnvError(f"an env raised {type(exc).__name__}: {exc}")


def check_step_timeout(step_timeout_s: Any, on_step_timeout: str = 'error') -> None:
    """A ``ConfigError`` for a bad ``env.step_timeout_s`` / ``env.on_step_timeout``."""
    if step_timeout_s is not None and (isinstance(step_timeout_s, bool) or not isinstance(step_timeout_s, (int, float))
                                       or not step_timeout_s > 0 or step_timeout_s == float('inf')):
        raise ConfigError(f"config key 'env.step_timeout_s' = {step_timeout_s!r} must be a finite number of seconds > 0 "
                          f"(or None: never time out)")
    if on_step_timeout not in ON_STEP_TIMEOUT:
        raise ConfigError(f"config key 'env.on_step_timeout' = {on_step_timeout!r} must be one of "
                          f"{', '.join(repr(c) for c in ON_STEP_TIMEOUT)}")


# ---- async envs: errors without gymnasium's logging ------------------------------------------------------
class _WorkerRaised(Exception):
    """An env subprocess reported an exception (what gymnasium's worker put on its error queue)."""

    def __init__(self, index: int, exc_type: type, value: BaseException, trace: str) -> None:
        super().__init__(f"env {index} raised {exc_type.__name__}")
        self.index, self.exc_type, self.value, self.trace = index, exc_type, value, trace


class _QuietAsyncVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` that hands the first failed env's error to the manager instead of logging every trace."""

    def _raise_if_errors(self, successes: Iterable[bool]) -> None:
        failed = [i for i, ok in enumerate(successes) if not ok]
        if not failed:
            return
        reports = [self.error_queue.get(timeout=5.0) for _ in failed]
        for index, _, _, _ in reports:
            if self.parent_pipes[index] is not None:
                self.parent_pipes[index].close()
                self.parent_pipes[index] = None
        self._state = AsyncState.DEFAULT
        index, exc_type, value, trace = min(reports, key=lambda report: report[0])
        raise _WorkerRaised(index, exc_type, value, trace)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def user_location(trace: str) -> str:
    """``innermost_user_frame`` of a traceback formatted in an env subprocess (text, not frames)."""
    return innermost_user_frame([(path, int(line), name) for path, line, name in _FRAME.findall(trace)])


# ---- sync envs: SIGALRM ------------------------------------------------------------------------------
#: how long after its alarm the watchdog looks again for a SIGCONT before it blames the env
CONFIRM_S = 0.05


class _SyncAlarm:
    """Interrupts an in-process env step/reset that takes longer than ``seconds`` with ``EnvTimeoutError``.

    The error names the env whose ``GuardedEnv`` is on the stack when the alarm rings (its index and seed).
    Used from the main thread of the parallel pipeline's worker processes, which own their alarm signal.
    """

    def __init__(self, seconds: float, role: str, seeds: Sequence[int]) -> None:
        self.seconds, self.role, self.seeds = seconds, role, list(seeds)
        self._continued, self._confirming = 0, False
        self._previous: Any = None
        self._installed = False

    @staticmethod
    def available() -> bool:
        return hasattr(signal, 'setitimer') and threading.current_thread() is threading.main_thread()

    def install(self) -> None:
        self._previous = signal.signal(signal.SIGALRM, self._ring)
        self._installed = True

    def release(self) -> None:
        if self._installed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous if self._previous is not None else signal.SIG_DFL)
            self._installed = False

    def __enter__(self) -> None:
        self._continued, self._confirming = continues(), False
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _ring(self, signum: int, frame: Any) -> None:
        from .gym_env import GuardedEnv

        if continues() != self._continued:  # the process was stopped and continued meanwhile: wait again
            self._continued, self._confirming = continues(), False
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            return
        if not self._confirming:  # an alarm that came due while the process was stopped rings first, before the
            self._confirming = True  # SIGCONT handler has counted (handlers run in signal-number order): look again
            signal.setitimer(signal.ITIMER_REAL, CONFIRM_S)  # a moment later
            return
        self._confirming = False

        what, env = 'step', None
        while frame is not None:
            owner = frame.f_locals.get('self')
            if isinstance(owner, GuardedEnv):
                env, what = owner, frame.f_code.co_name
                break
            frame = frame.f_back
        who = f"{env.role} env {env.index} (seed {env.seed})" if env is not None else f"an env ({self.role or 'env manager'})"
        raise EnvTimeoutError(f"{who} did not return from {what} within env.step_timeout_s={self.seconds:g} s: "
                              f"fix the env or raise env.step_timeout_s")


class _NoAlarm:
    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


_NO_ALARM = _NoAlarm()
