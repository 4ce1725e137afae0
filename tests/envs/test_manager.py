"""Specification of ``acframe.envs.EnvManager``: sync/async stepping, SAME_STEP autoreset, seeds, clipping,
env errors and episode statistics."""
import faulthandler
import gc
import os
import time

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from acframe.envs import EnvManager, check_step_timeout, env_fns, make_env_manager
from acframe.errors import ConfigError, EnvContractError, EnvError, EnvTimeoutError
from acframe.registry import ENV_REGISTRY

MANAGERS = ['sync', 'async']


class ScriptedEnv(gym.Env):
    """A predictable env: episodes of ``episode_len`` steps, reward = the (clipped) action, optional failure.

    Observations are ``[t, seed]`` (the seed passed to the last ``reset``, -1 when none) so tests can see
    what the manager did.
    """

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, episode_len: int = 3, fail_at: int = 0, terminate: bool = True, hang_at: int = 0,
                 abort_at: int = 0) -> None:
        self.episode_len, self.fail_at, self.terminate = episode_len, fail_at, terminate
        self.hang_at, self.abort_at = hang_at, abort_at
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0, -1 if seed is None else seed], np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == self.fail_at:
            raise ValueError('scripted failure')  # FAIL_LINE
        if self.t == self.hang_at:
            time.sleep(3600)
        if self.t == self.abort_at:
            faulthandler.disable()  # pytest's stack dump of the dying subprocess is not what is tested
            os.abort()
        end = self.t == self.episode_len
        obs = np.array([self.t, 0], np.float32)
        return obs, float(action[0]), end and self.terminate, end and not self.terminate, {}


def make_scripted(env_cfg, **overrides):
    return ScriptedEnv(**{**env_cfg.get('env_kwargs', {}), **overrides})


@pytest.fixture(autouse=True, scope='module')
def scripted_env_registered():
    ENV_REGISTRY.register('scripted_test_env', make_scripted)
    yield
    ENV_REGISTRY._entries.pop('scripted_test_env', None)


def scripted_manager(manager, seeds, per_env=None, step_timeout_s=None, **env_kwargs):
    env_cfg = dict(type='scripted_test_env', env_kwargs=env_kwargs)
    return EnvManager(env_fns(env_cfg, seeds, 'collector', per_env), seeds, manager, role='collector',
                      step_timeout_s=step_timeout_s, watch_sync=True)


@pytest.mark.parametrize('manager', MANAGERS)
def test_step_returns_batched_results_and_resets_with_the_seeds(manager):
    with scripted_manager(manager, [5, 6]) as envs:
        assert envs.num_envs == 2
        obs = envs.reset()
        np.testing.assert_array_equal(obs, [[0, 5], [0, 6]])
        result = envs.step(np.zeros((2, 1), np.float32))
        assert result.obs.shape == (2, 2)
        assert result.reward.dtype == np.float32 and result.reward.shape == (2,)
        assert result.terminated.dtype == bool and result.truncated.dtype == bool
        assert len(result.done_index) == 0 and result.final_obs is None


@pytest.mark.parametrize('manager', MANAGERS)
def test_same_step_autoreset_returns_the_final_observation(manager):
    with scripted_manager(manager, [0, 1], [{'episode_len': 2}, {'episode_len': 3, 'terminate': False}]) as envs:
        envs.reset()
        envs.step(np.zeros((2, 1), np.float32))
        result = envs.step(np.zeros((2, 1), np.float32))
        # env 0 terminated at its 2nd step: the obs is already the next episode's first, final_obs the last one
        np.testing.assert_array_equal(result.done_index, [0])
        assert result.terminated.tolist() == [True, False] and result.truncated.tolist() == [False, False]
        np.testing.assert_array_equal(result.final_obs, [[2, 0]])
        np.testing.assert_array_equal(result.obs, [[0, -1], [2, 0]])
        result = envs.step(np.zeros((2, 1), np.float32))
        # env 1 hit its time limit: truncated, not terminated
        np.testing.assert_array_equal(result.done_index, [1])
        assert result.truncated.tolist() == [False, True] and result.terminated.tolist() == [False, False]
        np.testing.assert_array_equal(result.final_obs, [[3, 0]])
        np.testing.assert_array_equal(result.obs[1], [0, -1])


def test_same_step_final_obs_matches_a_plain_gymnasium_env():
    cfg = EasyDict(env=dict(type='gym', env_id='CartPole-v1', max_episode_steps=4, env_kwargs={}, obs_keys=None,
                            manager='sync'))
    with make_env_manager(cfg, 'collector', 1, seed=3) as envs:
        reference = gym.make('CartPole-v1', max_episode_steps=4)
        np.testing.assert_allclose(envs.reset(), [reference.reset(seed=3)[0]])
        for _ in range(4):
            result = envs.step(np.array([0]))
            expected = reference.step(0)
        assert result.truncated[0] and not result.terminated[0]
        np.testing.assert_allclose(result.final_obs[0], expected[0])
        np.testing.assert_allclose(result.obs[0], reference.reset()[0])


def test_in_process_steps_equal_gymnasium_sync_vector_env_bit_for_bit():
    # the sync manager steps Box-observation envs one by one itself (_step_in_process): every result must be
    # SyncVectorEnv.step's (SAME_STEP), episode ends included (CartPole with 20-step episodes: truncations and
    # terminations)
    cfg = EasyDict(env=dict(type='gym', env_id='CartPole-v1', max_episode_steps=20, env_kwargs={}, obs_keys=None,
                            manager='sync'))
    with make_env_manager(cfg, 'collector', 4, seed=7) as envs:
        assert envs._direct
        reference = gym.vector.SyncVectorEnv([lambda: gym.make('CartPole-v1', max_episode_steps=20)] * 4,
                                             autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        np.testing.assert_array_equal(envs.reset(), reference.reset(seed=[7, 8, 9, 10])[0])
        actions = np.random.default_rng(0).integers(0, 2, size=(60, 4))
        ends = 0
        for action in actions:
            result = envs.step(action)
            obs, reward, terminated, truncated, info = reference.step(action)
            np.testing.assert_array_equal(result.obs, obs)
            assert result.obs.dtype == obs.dtype
            np.testing.assert_array_equal(result.reward, reward.astype(np.float32))
            np.testing.assert_array_equal(result.terminated, terminated)
            np.testing.assert_array_equal(result.truncated, truncated & ~terminated)
            np.testing.assert_array_equal(result.done_index, np.flatnonzero(terminated | truncated))
            if len(result.done_index):
                ends += len(result.done_index)
                np.testing.assert_array_equal(result.final_obs, np.stack([info['final_obs'][i] for i in result.done_index]))
        assert ends >= 8
        reference.close()


def test_per_env_seeds_derive_from_the_run_seed():
    cfg = EasyDict(env=dict(type='gym', env_id='cartpole', env_kwargs={}, obs_keys=None, max_episode_steps=None,
                            manager='sync'))
    with make_env_manager(cfg, 'collector', 3, seed=10) as envs:
        assert envs.seeds == [10, 11, 12]
        obs = envs.reset()
    expected = [gym.make('CartPole-v1').reset(seed=s)[0] for s in (10, 11, 12)]
    np.testing.assert_allclose(obs, expected)
    assert not np.allclose(obs[0], obs[1])


@pytest.mark.parametrize('manager', MANAGERS)
def test_box_actions_are_clipped_to_the_action_space(manager):
    with scripted_manager(manager, [0, 1]) as envs:
        envs.reset()
        result = envs.step(np.array([[5.0], [-0.25]], np.float32))
    np.testing.assert_allclose(result.reward, [1.0, -0.25])  # the env saw 1.0, the clip of 5.0


@pytest.mark.parametrize('manager', MANAGERS)
def test_an_exception_inside_an_env_names_the_env_its_seed_and_the_traceback(manager):
    envs = scripted_manager(manager, [7, 8], [{}, {'fail_at': 2}])
    try:
        envs.reset()
        envs.step(np.zeros((2, 1), np.float32))
        with pytest.raises(EnvError) as info:
            envs.step(np.zeros((2, 1), np.float32))
    finally:
        envs.close()
    message = str(info.value)
    assert message.startswith('collector env 1 (seed 8) raised ValueError in step: scripted failure')
    assert 'original traceback:' in message
    assert "raise ValueError('scripted failure')" in message  # the env's own line


@pytest.mark.parametrize('manager', MANAGERS)
def test_episode_statistics(manager):
    with scripted_manager(manager, [0, 1], [{'episode_len': 2}, {'episode_len': 3}]) as envs:
        envs.reset()
        for _ in range(6):
            envs.step(np.full((2, 1), 0.5, np.float32))
        returns, lengths, env_index = envs.pop_finished()
        assert sorted(zip(env_index, lengths, returns)) == [(0, 2, 1.0), (0, 2, 1.0), (0, 2, 1.0), (1, 3, 1.5), (1, 3, 1.5)]
        assert envs.pop_finished() == ([], [], [])


def test_manager_state_dict_restores_sync_envs_exactly():
    cfg = EasyDict(env=dict(type='gym', env_id='CartPole-v1', env_kwargs={}, obs_keys=None, max_episode_steps=None,
                            manager='sync'))
    with make_env_manager(cfg, 'collector', 2, seed=0) as envs, make_env_manager(cfg, 'collector', 2, seed=99) as other:
        envs.reset()
        envs.step(np.array([0, 1]))
        assert other.load_state_dict(envs.state_dict())
        np.testing.assert_allclose(envs.step(np.array([1, 1])).obs, other.step(np.array([1, 1])).obs)


def test_envs_whose_state_cannot_be_kept_say_why_they_reset():
    """What a resume reads when the envs must reset: the layer and attribute that is not plain data, the manager
    whose envs live in subprocesses, or another env count."""
    cfg = EasyDict(env=dict(type='gym', env_id='CartPole-v1', env_kwargs={}, obs_keys=None, max_episode_steps=None,
                            manager='sync'))
    with make_env_manager(cfg, 'collector', 2, seed=0) as envs, make_env_manager(cfg, 'collector', 3, seed=0) as three:
        envs.reset()
        envs._venv.envs[1].unwrapped.visited = {1, 2}  # a set: not plain data
        state = envs.state_dict()
        assert state['envs'] is None and not three.load_state_dict(state)
        assert three.unrestored_why == "env 1's CartPoleEnv.visited (a set) is not plain data"
        del envs._venv.envs[1].unwrapped.visited
        assert not three.load_state_dict(envs.state_dict())
        assert three.unrestored_why == "it holds the state of 2 envs and the run now has 3 (env.collector_env_num)"
    with scripted_manager('async', [1, 2]) as envs:
        envs.reset()
        with scripted_manager('sync', [1, 2]) as other:
            assert not other.load_state_dict(envs.state_dict())
            assert other.unrestored_why == "env.manager='async': its envs live in subprocesses"


# ---- failures of async envs, and the watchdog ------------------------------------------------------------
def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line and 'raise' in line)


def test_an_async_env_exception_is_one_error_naming_the_env_seed_and_the_user_line(capfd):
    envs = scripted_manager('async', [7, 8], [{}, {'fail_at': 2}])
    envs.reset()
    envs.step(np.zeros((2, 1), np.float32))
    with pytest.raises(EnvError) as info:
        envs.step(np.zeros((2, 1), np.float32))
    envs.close()
    first = str(info.value).splitlines()[0]
    assert first == (f"collector env 1 (seed 8) raised ValueError in step: scripted failure "
                     f"(at {__file__}:{_line_of('FAIL_LINE')} in step; --debug shows the traceback)")
    assert "raise ValueError('scripted failure')" in str(info.value)  # the traceback follows, for --debug
    del envs
    gc.collect()
    assert capfd.readouterr().err == ''  # nothing logged besides the error itself


def test_a_dead_async_env_subprocess_is_named_by_its_env_index_and_leaves_no_traceback(capfd):
    envs = scripted_manager('async', [7, 8], [{}, {'abort_at': 2}])
    envs.reset()
    envs.step(np.zeros((2, 1), np.float32))
    with pytest.raises(EnvError) as info:
        envs.step(np.zeros((2, 1), np.float32))
    assert str(info.value) == "collector env 1 (seed 8): its subprocess was killed by SIGABRT during step"
    envs.close()
    del envs
    gc.collect()
    assert 'Traceback' not in capfd.readouterr().err  # no __del__ traceback


@pytest.mark.parametrize('manager', MANAGERS)
@pytest.mark.parametrize('when', ['step', 'reset'])
def test_a_step_or_reset_that_hangs_is_an_error_naming_the_env_and_its_seed(manager, when):
    hang = {'hang_at': 2} if when == 'step' else {'hang_at': 1}  # t == 1 after the first reset: hang in step 1
    envs = scripted_manager(manager, [7, 8], [{}, hang], step_timeout_s=0.3)
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError) as info:
        envs.reset()
        envs.step(np.zeros((2, 1), np.float32))
        envs.step(np.zeros((2, 1), np.float32))
    envs.close()
    assert time.monotonic() - start < 5
    assert str(info.value).startswith("collector env 1 (seed 8) did not return from step within env.step_timeout_s=0.3 s")


@pytest.mark.parametrize('bad', [0, -1.0, float('inf'), 'soon', True])
def test_bad_step_timeouts_are_config_errors(bad):
    with pytest.raises(ConfigError, match=r"config key 'env.step_timeout_s' = .* must be a finite number of seconds > 0"):
        check_step_timeout(bad)
    with pytest.raises(ConfigError, match=r"config key 'env.on_step_timeout' = 'retry' must be one of 'error', 'restart'"):
        check_step_timeout(1.0, 'retry')


def test_the_user_line_is_found_in_a_subprocess_traceback_as_text():
    from acframe.envs.manager import user_location
    import acframe
    own = acframe.__file__.replace('__init__.py', 'envs/gym_env.py')
    trace = (f'Traceback (most recent call last):\n  File "{own}", line 98, in step\n    return self.env.step(action)\n'
             f'  File "/home/me/my_env.py", line 12, in step\n    raise ValueError("x")\n'
             f'  File "/usr/lib/python3/site-packages/numpy/core.py", line 5, in f\nValueError: x\n')
    assert user_location(trace) == '/home/me/my_env.py:12 in step'


@pytest.mark.parametrize('manager', ['sync', 'async'])
def test_a_script_that_never_closes_its_env_manager_still_exits(manager, tmp_path):
    """A manager still open when the interpreter exits is collected during finalization, when no thread can start
    any more: closing it must not wait for one (it did, forever)."""
    import subprocess
    import sys
    script = tmp_path / 'unclosed.py'
    script.write_text(
        "from easydict import EasyDict\n"
        "from acframe.envs import make_env_manager\n"
        f"cfg = EasyDict(env=dict(env_id='CartPole-v1', manager={manager!r}))\n"
        "manager = make_env_manager(cfg, 'evaluator', 2, 0)\n"
        "manager.reset()\n"
        "print('open')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == 'open', proc.stderr


@pytest.mark.parametrize('typed, hint', [('CartPol-v1', 'CartPole-v1'), ('Pendulm-v1', 'Pendulum-v1'), ('acrobat', 'acrobot'),
                                         ('Foo-v0', None)])
def test_an_unknown_env_id_names_a_close_one_and_no_unrelated_one(typed, hint):
    """Ids share '-v1' and the like: 'Foo-v0' was told 'Did you mean Acrobot-v1?'."""
    from acframe.envs.gym_env import resolve_env_id
    with pytest.raises(ConfigError) as raised:
        resolve_env_id(typed)
    assert (f"Did you mean '{hint}'?" in str(raised.value)) if hint else 'Did you mean' not in str(raised.value)


@pytest.mark.parametrize('env_type, env_id, typed, hint', [
    ('gym', 'CartPole-v1', 'sutton_barto_rewrd', 'Did you mean env.env_kwargs.sutton_barto_reward?'),
    ('gym', 'CartPole-v1', 'zzz', 'It takes: sutton_barto_reward, render_mode'),
    ('toy_tictactoe', 'toy_tictactoe', 'ilegal_reward', 'Did you mean env.env_kwargs.illegal_reward?'),
    ('toy_cue_memory', 'toy_cue_memory', 'dealy', 'Did you mean env.env_kwargs.delay?'),
])
def test_a_misspelled_env_kwarg_names_the_keyword_the_env_takes(env_type, env_id, typed, hint):
    """gym.make's TypeError named the keyword refused, not the one meant."""
    factory = ENV_REGISTRY.get(env_type)
    with pytest.raises(ConfigError) as raised:
        factory(EasyDict(env_id=env_id, env_kwargs={typed: 1}))
    message = str(raised.value)
    assert message.startswith('env.env_kwargs for ') and f"'{typed}'" in message and message.endswith(hint), message


class GrowingObservation(gym.Env):
    """Its observation breaks its Box space at step 2 (3 numbers where the space has 2)."""
    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(3 if self.t == 2 else 2, np.float32), 0.0, False, False, {}


def test_an_observation_of_another_shape_than_its_space_is_one_line_naming_the_env():
    """The sync manager's stacking said only 'Output array is the wrong shape', naming no env."""
    from acframe.config.defaults import ENV
    from acframe.envs import SyncEnvManager
    from acframe.registry import ENV_REGISTRY

    ENV_REGISTRY.register('growing_observation_test', lambda cfg, **kw: GrowingObservation())
    try:
        env = SyncEnvManager.from_config(dict(ENV, type='growing_observation_test', env_id='growing'), 'collector',
                                         [7, 8])
        env.reset()
        env.step(np.zeros(2, np.int64))
        with pytest.raises(EnvContractError, match=r"^collector env 0 \(seed 7\) gave an observation of shape \(3,\) in step, "
                                           r"but its observation space declares \(2,\)$"):
            env.step(np.zeros(2, np.int64))
        env.close()
    finally:
        ENV_REGISTRY._entries.pop('growing_observation_test', None)
