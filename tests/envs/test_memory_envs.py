"""Specification of the partially observed envs that need memory: ``toy_cue_memory``, ``cartpole_novel`` and
``pendulum_novel`` and the two ``lunarlander*_novel``."""
import gymnasium as gym
import numpy as np
import pytest

from acframe.config.defaults import ENV
from acframe.envs import build_env
from acframe.errors import ConfigError


def cue_env(**kwargs):
    return build_env(dict(ENV, type='toy_cue_memory', env_id='toy_cue_memory', env_kwargs=kwargs), 0, 0, 'collector')


@pytest.mark.parametrize('n_cues, delay', [(2, 4), (3, 1), (4, 8)])
def test_the_cue_is_shown_only_first_and_only_it_pays_at_the_go_step(n_cues, delay):
    env = cue_env(n_cues=n_cues, delay=delay)
    assert env.observation_space.shape == (n_cues + 1,) and env.action_space == gym.spaces.Discrete(n_cues)
    cues = set()
    for episode in range(30):
        obs, _ = env.reset(seed=episode)
        cue = int(np.argmax(obs[:n_cues]))
        cues.add(cue)
        assert obs.sum() == 1.0 and obs[-1] == 0.0  # the cue alone
        answer = (cue + episode % 2) % n_cues  # right on even episodes, wrong on odd ones
        for step in range(delay):
            obs, reward, terminated, truncated, _ = env.step(np.random.randint(n_cues))  # free, unrewarded actions
            assert reward == 0.0 and not terminated and not truncated
            go = step == delay - 1
            assert obs[:n_cues].sum() == 0.0 and obs[-1] == float(go)  # no cue; the go flag at the last only
        obs, reward, terminated, truncated, _ = env.step(answer)
        assert terminated and not truncated and reward == float(answer == cue)
    assert cues == set(range(n_cues))  # every cue is drawn


def test_the_last_observation_is_the_same_for_every_cue():
    """What makes the task need memory: a policy that sees only the current observation cannot beat chance."""
    env = cue_env(n_cues=2, delay=3)
    last = set()
    for seed in range(10):
        env.reset(seed=seed)
        for _ in range(3):
            obs = env.step(0)[0]
        last.add(tuple(obs))
    assert len(last) == 1


def test_bad_cue_settings_are_config_errors():
    with pytest.raises(ConfigError, match='n_cues'):
        cue_env(n_cues=1)
    with pytest.raises(ConfigError, match='delay'):
        cue_env(delay=-1)


def test_cartpole_novel_is_cartpole_without_its_velocities():
    novel = build_env(dict(ENV, env_id='cartpole_novel'), 0, 0, 'collector')
    full = build_env(dict(ENV, env_id='CartPole-v1'), 0, 0, 'collector')
    assert novel.observation_space.shape == (2,)
    obs_novel, _ = novel.reset(seed=5)
    obs_full, _ = full.reset(seed=5)
    for _ in range(20):
        assert np.array_equal(obs_novel, obs_full[[0, 2]])  # cart position and pole angle
        obs_novel, r1, term1, trunc1, _ = novel.step(1)
        obs_full, r2, term2, trunc2, _ = full.step(1)
        assert (r1, term1, trunc1) == (r2, term2, trunc2)
        if term1:
            break
    capped = build_env(dict(ENV, env_id='cartpole_novel', max_episode_steps=3), 0, 0, 'collector')
    capped.reset(seed=0)
    assert [capped.step(i % 2)[3] for i in range(3)] == [False, False, True]  # the time limit applies


def test_pendulum_novel_is_pendulum_without_its_angular_velocity():
    novel = build_env(dict(ENV, env_id='pendulum_novel'), 0, 0, 'collector')
    full = build_env(dict(ENV, env_id='Pendulum-v1'), 0, 0, 'collector')
    assert novel.observation_space.shape == (2,) and novel.action_space == full.action_space
    obs_novel, _ = novel.reset(seed=5)
    obs_full, _ = full.reset(seed=5)
    for step in range(200):
        assert np.array_equal(obs_novel, obs_full[[0, 1]])  # cos and sin of the angle
        action = np.array([np.sin(step / 7.0) * 2.0], dtype=np.float32)
        obs_novel, r1, term1, trunc1, _ = novel.step(action)
        obs_full, r2, term2, trunc2, _ = full.step(action)
        assert (r1, term1, trunc1) == (r2, term2, trunc2)
    assert trunc1  # Pendulum's 200-step time limit applies


@pytest.mark.parametrize('name, full_id', [('lunarlander_novel', 'LunarLander-v3'),
                                           ('lunarlander_continuous_novel', 'LunarLanderContinuous-v3')])
def test_lunarlander_novel_is_lunarlander_without_its_velocities(name, full_id):
    pytest.importorskip('Box2D')
    novel = build_env(dict(ENV, env_id=name), 0, 0, 'collector')
    full = build_env(dict(ENV, env_id=full_id), 0, 0, 'collector')
    assert novel.observation_space.shape == (5,) and novel.action_space == full.action_space
    keep = [0, 1, 4, 6, 7]  # x, y, angle, left and right leg contact; vx, vy and the angular velocity removed
    assert np.array_equal(novel.observation_space.low, full.observation_space.low[keep])
    obs_novel, _ = novel.reset(seed=3)
    obs_full, _ = full.reset(seed=3)
    for step in range(1000):
        assert np.array_equal(obs_novel, obs_full[keep])
        action = step % 4 if full_id == 'LunarLander-v3' else np.array([np.sin(step / 5.0), np.cos(step / 3.0)],
                                                                          dtype=np.float32)
        obs_novel, r1, term1, trunc1, _ = novel.step(action)
        obs_full, r2, term2, trunc2, _ = full.step(action)
        assert (r1, term1, trunc1) == (r2, term2, trunc2)
        if term1 or trunc1:
            break
    assert term1 or trunc1  # played to the end of an episode
