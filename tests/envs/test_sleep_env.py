"""Specification of ``toy_sleep``: each step costs ``step_s`` of wall time and almost no CPU; the action naming the
target shown is rewarded."""
import time

import gymnasium as gym
import numpy as np
import pytest

from acframe.config.defaults import ENV
from acframe.envs import build_env
from acframe.errors import ConfigError


def sleep_env(max_episode_steps=None, **kwargs):
    return build_env(dict(ENV, type='toy_sleep', env_id='toy_sleep', env_kwargs=kwargs,
                          max_episode_steps=max_episode_steps), 0, 0, 'collector')


def test_a_step_costs_its_wall_time_but_little_cpu():
    env = sleep_env(step_s=0.01)
    env.reset(seed=0)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(20):
        env.step(0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert wall >= 20 * 0.01
    assert cpu < wall / 4, (cpu, wall)


def test_the_action_naming_the_target_shown_is_rewarded_and_episodes_are_truncated():
    env = sleep_env(n=3, step_s=0.0, max_episode_steps=7)
    assert env.observation_space.shape == (3,) and env.action_space == gym.spaces.Discrete(3)
    obs, _ = env.reset(seed=1)
    targets = set()
    for t in range(7):
        assert obs.sum() == 1.0
        target = int(np.argmax(obs))
        targets.add(target)
        action = target if t % 2 == 0 else (target + 1) % 3
        obs, reward, terminated, truncated, _ = env.step(action)
        assert reward == float(t % 2 == 0) and not terminated and truncated == (t == 6)
    assert len(targets) > 1


def test_bad_sleep_settings_are_config_errors():
    with pytest.raises(ConfigError, match='step_s'):
        sleep_env(step_s=-0.001)
    with pytest.raises(ConfigError, match='n = 1'):
        sleep_env(n=1)
